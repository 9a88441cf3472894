"""The v1model pipeline: load a checked program once, then run packets through it.

:func:`load_pipeline` compiles the six blocks of the ``V1Switch`` package instance
``main`` (parser, verify checksum, ingress, egress, compute checksum, deparser) into
closures over one PHV layout, binding tables and externs to the ``RuntimeState``.
:class:`V1Pipeline` then offers the per-packet steps the switch (the v1model
architecture around the traffic manager) strings together.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from typing import Any

from p4.config.v1 import p4info_pb2

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.names import qualify
from p4switch.state import RuntimeState

from .blocks import BlockCompiler, BlockInstance, block_decl_of
from .calls import CallCompiler
from .emitter import STATUS_REJECT, EmitterCompiler, EngineForm, Unsupported
from .exprs import ExprCompiler, is_aggregate
from .externs import ExternCompiler
from .layout import (
    RESERVED,
    SLOT_CURSOR,
    SLOT_DATA,
    SLOT_OUT,
    SLOT_PKT,
    HeaderS,
    ScalarS,
    SlotAllocator,
    Storage,
    StructS,
    VarbitS,
    find_path,
    iter_headers,
)
from .packet import (
    PKT_INSTANCE_TYPE_EGRESS_CLONE,
    PKT_INSTANCE_TYPE_INGRESS_CLONE,
    PKT_INSTANCE_TYPE_RECIRC,
    PKT_INSTANCE_TYPE_RESUBMIT,
    CloneRequest,
    ExitSignal,
    Packet,
    ParserReject,
    PreserveRequest,
    ReturnSignal,
)
from .packetio import PacketIOCompiler
from .parser import MAX_PARSER_STEPS, ParserCompiler
from .scope import PacketArg, PipelineError, Scope, ValueSet, located
from .stmts import StmtCompiler
from .tables import CompiledTable, TableCompiler
from .templates import Fn

V1SWITCH_ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
log = logging.getLogger("p4switch.pipeline")
ORACLE_ENV = "HBH_P4_ORACLE"  # set to 1: every block runs on the closures (the differential oracle)
EGRESS_FIELDS = ("egress_port", "egress_global_timestamp", "enq_timestamp", "enq_qdepth", "deq_timedelta",
                 "deq_qdepth", "egress_rid")  # what egress gets from the TM, in run_egress's order
_MASK64 = (1 << 64) - 1
CLONE_KINDS = ("I2E", "E2E")  # the engine's CLONE kind codes (emitter.py)
CORE_ERRORS = ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument")


class PipelineRuntimeError(RuntimeError):
    """A packet made compiled code fail (a pipeline bug or an unsupported corner); the
    message names the block. The switch should count and drop the packet."""


def program_of(checked: Any) -> ast.Program:
    """The annotated AST of a CheckedProgram (or an ast.Program itself)."""
    if isinstance(checked, ast.Program):
        return checked
    for attr in ("program", "ast", "tree"):
        p = getattr(checked, attr, None)
        if isinstance(p, ast.Program):
            return p
    raise TypeError(f"load_pipeline: expected a CheckedProgram or ast.Program, got {type(checked).__name__}")


class _Compiler(ExprCompiler, StmtCompiler, CallCompiler, ExternCompiler, TableCompiler, PacketIOCompiler,
                ParserCompiler, BlockCompiler, EmitterCompiler):
    """All compiler mixins over one program, P4Info and RuntimeState."""

    def __init__(self, program: ast.Program, state: RuntimeState, rng: random.Random) -> None:
        self.program = program
        self.state = state
        self.rng = rng
        self.alloc = SlotAllocator()
        self.private_state: dict[str, Any] = {}
        self.value_sets: dict[str, ValueSet] = {}
        self.error_names = _error_names(program)
        self.error_codes = {n: i for i, n in enumerate(self.error_names)}
        self.root = Scope(None, None, resolver=self.resolve_global)
        self.std: StructS = StructS(T.VOID, 0, 0)
        self.stmt_fns: dict[tuple[int, int], Fn | None] = {}

    def digest_for_type(self, t: T.Type, call: ast.Node) -> Any:
        bufs = self.state.digests_by_name
        name = getattr(t, "name", None) or str(t)
        if name in bufs:
            return bufs[name]
        for cand, buf in bufs.items():
            if cand.rsplit(".", 1)[-1] == name:
                return buf
        if len(bufs) == 1:
            return next(iter(bufs.values()))
        if not bufs:
            return None
        raise PipelineError(call.loc, f"pipeline: no P4Info digest for type {name} (have: {', '.join(bufs)})")


def _error_names(program: ast.Program) -> list[str]:
    names = list(CORE_ERRORS)
    for d in program.declarations:
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                if m.name not in names:
                    names.append(m.name)
    return names


def _find_main(program: ast.Program) -> ast.InstantiationDecl:
    mains = [d for d in program.declarations if isinstance(d, ast.InstantiationDecl) and d.name == "main"]
    if not mains:
        raise PipelineError(None, "pipeline: the program has no package instance named 'main'")
    return mains[-1]


def _field_lists(meta: Storage, meta_type: T.Type, out: dict[int, list[Storage]] | None = None
                 ) -> dict[int, list[Storage]]:
    """``@field_list(N)`` annotated user-metadata fields, per N, in nested structs too (a BMv2
    JSON's metadata is ``meta.scalars``: p4switch.bmv2json writes p4c's fields there)."""
    out = {} if out is None else out
    decl = getattr(meta_type, "decl", None)
    if not isinstance(decl, ast.StructDecl) or not isinstance(meta, StructS):
        return out
    for f in decl.fields:
        st = meta.fields.get(f.name)
        for ann in f.annotations:
            if ann.name != "field_list":
                continue
            for ident in _annotation_ints(ann):
                if st is not None:
                    out.setdefault(ident, []).append(st)
        if st is not None:
            _field_lists(st, getattr(f.type_ref, "type", None), out)
    return out


def _annotation_ints(ann: ast.Annotation) -> list[int]:
    vals: list[int] = []
    if ann.args:
        for a in ann.args:
            v = a.const_value if isinstance(a.const_value, int) else getattr(a, "value", None)
            if isinstance(v, int) and not isinstance(v, bool):
                vals.append(v)
        if vals:
            return vals
    for tok in ann.tokens:
        try:
            vals.append(int(tok.replace("_", ""), 0))
        except ValueError:
            continue
    return vals


class V1Pipeline:
    """A loaded v1model program. See the package docstring for the API contract."""

    def __init__(self, program: ast.Program, p4info: p4info_pb2.P4Info, state: RuntimeState,
                 seed: int | None = None, checked: Any = None, oracle: bool | None = None) -> None:
        self.program = program
        self.checked = checked
        self.p4info = p4info
        self.state = state
        self.rng = random.Random(seed)
        cc = _Compiler(program, state, self.rng)
        self._cc = cc
        blocks = self._package_blocks(cc)
        parser_decl = blocks["parser"][0]
        if not isinstance(parser_decl, ast.ParserDecl) or len(parser_decl.params) != 4:
            raise PipelineError(parser_decl.loc, "pipeline: the v1model parser takes (packet_in, hdr, meta, standard_metadata)")
        _, hp, mp, sp = parser_decl.params
        self.root_names = (hp.name, mp.name, sp.name)
        with located(hp.loc, f"parameter '{hp.name}'"):
            self.hdr = cc.alloc.allocate(hp.type_ref.type, hp.name)
        with located(mp.loc, f"parameter '{mp.name}'"):
            self.meta = cc.alloc.allocate(mp.type_ref.type, mp.name)
        with located(sp.loc, f"parameter '{sp.name}'"):
            std = cc.alloc.allocate(sp.type_ref.type, sp.name)
        if not isinstance(std, StructS):
            raise PipelineError(sp.loc, "pipeline: standard_metadata must be a struct")
        self.std = cc.std = std
        self.field_lists = _field_lists(self.meta, mp.type_ref.type)
        self.instances: dict[str, BlockInstance] = {}
        for role in V1SWITCH_ROLES:
            decl, args = blocks[role]
            prefix = self._block_fqn(decl)
            self.instances[role] = cc.instantiate_block(decl, prefix, self._role_params(role, decl), args)
        self.value_sets: dict[str, ValueSet] = cc.value_sets
        self.error_names = cc.error_names
        self.enum_names = {d.name: [m.name for m in d.members] for d in program.declarations
                           if isinstance(d, ast.EnumDecl)}
        self.error_codes = cc.error_codes
        self.template: list = list(cc.alloc.initial)
        self.slot_names = cc.alloc.names
        self.std_slots = {n: s.start for n, s in std.fields.items()}
        self.std_masks = {n: ((1 << s.width) - 1 if isinstance(s, ScalarS) and s.width else -1)
                          for n, s in std.fields.items()}
        self._bodies = {role: inst.callee.body for role, inst in self.instances.items()}
        self._meta_range = (self.meta.start, self.meta.end)
        self._std_range = (std.start, std.end)
        s = self.std_slots
        self._s_ingress_port = s["ingress_port"]
        self._s_instance_type = s["instance_type"]
        self._s_packet_length = s["packet_length"]
        self._s_igts = s.get("ingress_global_timestamp")
        self._s_egts = s.get("egress_global_timestamp")
        self._s_parser_error = s.get("parser_error")
        self._set_egress_fields = _std_setter([(s.get(n), self.std_masks.get(n, 0)) for n in EGRESS_FIELDS])
        if oracle is None:
            oracle = os.environ.get(ORACLE_ENV, "") not in ("", "0")
        self.oracle = oracle
        self.engine: Any = None  # hbh_engine.P4Program, when a block runs in the engine
        self.engine_blocks: dict[str, int] = {}  # role -> block index in self.engine
        self.engine_refused: dict[str, str] = {}  # role -> the construct that keeps it on the closures
        self.engine_called: dict[str, list[str]] = {}  # role -> constructs run through their closures
        # Block indexes run as one engine call (run_seq): parser, verify, ingress; egress,
        # compute, deparser; None when a block of the half is not wholly in the engine.
        self.ingress_seq: list[int] | None = None
        self.egress_seq: list[int] | None = None
        self._walk_form: Any = None
        if not oracle:
            self._load_engine(cc)

    # ------------------------------------------------------------------ loading

    def _load_engine(self, cc: _Compiler) -> None:
        """Emit the engine form of every block the emitter translates; log the others."""
        nslots = cc.alloc.size
        form = EngineForm(nslots)
        for role in V1SWITCH_ROLES:
            inst = self.instances[role]
            try:
                code, called = cc.emit_block(form, inst.decl, inst.scope, role not in ("parser", "deparser"))
            except (Unsupported, PipelineError) as exc:
                self.engine_refused[role] = str(exc)
                log.info("engine: the %s block %s runs on the closures: unsupported %s", role, inst.decl.name, exc)
                continue
            if called:
                self.engine_called[role] = called
                log.info("engine: the %s block %s calls the closures for: %s", role, inst.decl.name,
                         "; ".join(dict.fromkeys(c for c in called)))
            form.roles[role] = len(form.blocks)
            form.blocks.append(code)
        if cc.alloc.size != nslots:  # emitting must not lay out anything new
            raise PipelineError(None, "pipeline: the engine emitter allocated PHV slots")
        if not form.blocks:
            return
        try:
            import hbh_engine
        except ImportError:
            log.warning("engine: hbh_engine is not built (make engine): every block runs on the closures")
            return
        self.engine = hbh_engine.P4Program(
            form.blocks, form.headers, form.lists, form.callbacks, nslots, form.ntemps, sorted(form.bool_slots),
            cc.error_code("PacketTooShort"), cc.error_code("ParserTimeout"), MAX_PARSER_STEPS, form.tables,
            form.cells, _hand_over_clone)
        for ts in form.table_states:  # the engine's copy of their state (p4switch/state/dataplane.py)
            ts.attach(self.engine)
            if ts.profile is not None:
                ts.profile.attach(self.engine)
        self.engine_blocks = dict(form.roles)
        self.ingress_seq = self._engine_seq(("parser", "verify_checksum", "ingress"))
        self.egress_seq = self._engine_seq(("egress", "compute_checksum", "deparser"))

    def _engine_seq(self, roles: tuple[str, ...]) -> list[int] | None:
        """The blocks of one half of the walk, when all of them run in the engine without a
        call into Python: then the PHV stays in the engine's registers from the first block
        to the last (one read and one write-back per slot, one call)."""
        blocks = [self.engine_blocks.get(r) for r in roles]
        if any(b is None or self.engine.calls_python(b) for b in blocks):
            return None
        return blocks  # type: ignore[return-value]

    def _run_seq(self, what: str, blocks: list[int], pkt: Packet, data: bytes | None) -> tuple[int, int, bytes]:
        """One engine call for ``blocks`` (see ``_engine_seq``); the requests go on the packet."""
        try:
            status, cursor, head, req = self.engine.run_seq(blocks, pkt.phv, data, self._s_parser_error)
        except Exception as exc:  # noqa: BLE001 - reported with the blocks' name
            raise PipelineRuntimeError(f"{what} (engine): {type(exc).__name__}: {exc}") from exc
        if req is not None:
            take_requests(pkt, req)
        return status, cursor, head or b""

    def walk_form(self) -> Any:
        """This pipeline as the engine's v1model walk runs it (``hbh_engine.WalkProgram``), or
        None when the walk must stay Python: a block not wholly in the engine, a PHV slot that
        is not an integer of at most 64 bits (wide fields, varbits), or no engine copy of the
        PRE to read."""
        pre = getattr(self.state.pre, "engine", None)
        if self._walk_form is None and self.ingress_seq is not None and self.egress_seq is not None \
                and pre is not None:
            import hbh_engine

            tail = self.template[RESERVED:]
            if all(type(v) in (int, bool) and 0 <= v < 1 << 64 for v in tail):
                s = self.std_slots
                std = [s.get(n, -1) for n in ("ingress_port", "instance_type", "packet_length", "egress_spec",
                                             "ingress_global_timestamp", "parser_error", "mcast_grp", "priority")]
                fields = [(s.get(n, -1), self.std_masks.get(n, 0) & _MASK64) for n in EGRESS_FIELDS]
                lists = [(i, [(st.start, st.end) for st in sts]) for i, sts in self.field_lists.items()]
                self._walk_form = hbh_engine.WalkProgram(
                    self, self.engine, self.ingress_seq, self.egress_seq,
                    [0] * RESERVED + [int(v) for v in tail], std, fields, pre,
                    [self._meta_range, self._std_range], lists)
        return self._walk_form

    def _package_blocks(self, cc: _Compiler) -> dict[str, tuple[Any, list[ast.Argument]]]:
        main = _find_main(cc.program)
        args = [a.value for a in main.args]
        if len(args) != 6:
            raise PipelineError(main.loc, f"pipeline: V1Switch takes 6 blocks, main has {len(args)}")
        out = {}
        for role, arg in zip(V1SWITCH_ROLES, args):
            decl, ctor_args = block_decl_of(arg, cc.root)
            if decl is None:
                decl = _by_name(cc.program, arg)
            if decl is None:
                raise PipelineError(arg.loc, f"pipeline: cannot find the {role} block of main")
            out[role] = (decl, ctor_args)
        return out

    def _block_fqn(self, decl: Any) -> str:
        """The P4Info name prefix of a block bound in main: the checker's when known."""
        for info in (getattr(self.checked, "main_args", None) or {}).values():
            if getattr(info, "decl", None) is decl and isinstance(getattr(info, "fqn", None), str):
                return info.fqn
        return qualify(None, decl)

    def _role_params(self, role: str, decl: Any) -> dict[ast.Param, Any]:
        data = {"parser": ("in", self.hdr, self.meta, self.std),
                "verify_checksum": (self.hdr, self.meta),
                "ingress": (self.hdr, self.meta, self.std),
                "egress": (self.hdr, self.meta, self.std),
                "compute_checksum": (self.hdr, self.meta),
                "deparser": ("out", self.hdr)}[role]
        if len(decl.params) != len(data):
            raise PipelineError(decl.loc, f"pipeline: the {role} block {decl.name} takes {len(data)} parameters")
        out: dict[ast.Param, Any] = {}
        for prm, d in zip(decl.params, data):
            out[prm] = PacketArg(d) if isinstance(d, str) else d
        return out

    # ------------------------------------------------------------------ packets

    def new_packet(self, data: bytes, ingress_port: int, now_us: int, instance_type: int = 0) -> Packet:
        """A packet received on ``ingress_port`` at ``now_us`` (µs)."""
        pkt = Packet(self, bytes(data), now_us)
        p = pkt.phv
        p[SLOT_DATA] = pkt.data
        p[self._s_ingress_port] = ingress_port & 0x1FF
        p[self._s_instance_type] = instance_type
        p[self._s_packet_length] = len(pkt.data)
        return pkt

    def parse(self, pkt: Packet) -> None:
        """Run the parser only (sets parser_error on a parser error, never raises for bad input)."""
        p = pkt.phv
        if self.engine_blocks.get("parser") is not None:
            self._parse_in_engine(pkt)
            return
        p[SLOT_CURSOR] = 0
        p[SLOT_PKT] = pkt
        try:
            self._bodies["parser"](p)
        except ParserReject as r:
            r.__traceback__ = None  # preallocated instances must not keep frames alive
            if r.code is not None and self._s_parser_error is not None:
                p[self._s_parser_error] = r.code
        except Exception as exc:  # noqa: BLE001 - reported with the block name
            raise PipelineRuntimeError(f"parser: {type(exc).__name__}: {exc}") from exc
        finally:
            p[SLOT_PKT] = None  # see _run_control
        pkt.payload_offset = min(len(pkt.data), (p[SLOT_CURSOR] + 7) >> 3)
        pkt.parsed = True

    def _parse_in_engine(self, pkt: Packet) -> None:
        p = pkt.phv
        try:
            status, cursor, _ = self.engine.run(self.engine_blocks["parser"], p, pkt.data, 0)
        except Exception as exc:  # noqa: BLE001 - reported with the block name
            raise PipelineRuntimeError(f"parser (engine): {type(exc).__name__}: {exc}") from exc
        if status >= 0 and self._s_parser_error is not None:
            p[self._s_parser_error] = status
        self._parsed(pkt, status, cursor)

    def _parsed(self, pkt: Packet, status: int, cursor: int) -> None:
        """After the engine's parser: the cursor and payload offset (parser_error is set)."""
        pkt.phv[SLOT_CURSOR] = cursor
        if status < STATUS_REJECT:
            raise PipelineRuntimeError(f"parser (engine): unknown status {status}")
        pkt.payload_offset = min(len(pkt.data), (cursor + 7) >> 3)
        pkt.parsed = True

    def run_ingress(self, pkt: Packet) -> None:
        """Parser, checksum verification and ingress; sets ingress_global_timestamp."""
        p = pkt.phv
        if self._s_igts is not None:
            p[self._s_igts] = pkt.now_us & 0xFFFFFFFFFFFF
        if self.ingress_seq is not None:
            status, cursor, _ = self._run_seq("ingress", self.ingress_seq, pkt, pkt.data)
            self._parsed(pkt, status, cursor)
            return
        self.parse(pkt)
        self._run_control("verify_checksum", pkt)
        self._run_control("ingress", pkt)

    def run_egress(self, pkt: Packet, egress_port: int, now_us: int, enq_timestamp: int = 0,
                   enq_qdepth: int = 0, deq_timedelta: int = 0, deq_qdepth: int = 0,
                   egress_rid: int = 0) -> None:
        """Egress and checksum computation for a packet leaving the queue of ``egress_port``.

        Clears a clone request left from ingress (the switch has consumed it), so
        ``pkt.clone_request`` afterwards is egress's (E2E) one.
        """
        pkt.now_us = now_us
        pkt.clone_request = None
        pkt.recirculate = None
        pkt.deparsed = None
        self._set_egress_fields(pkt.phv, egress_port, now_us, enq_timestamp, enq_qdepth, deq_timedelta, deq_qdepth,
                                egress_rid)
        if self.egress_seq is not None:  # the deparser too: deparse() takes its headers
            pkt.deparsed = self._run_seq("egress", self.egress_seq, pkt, None)[2]
            return
        self._run_control("egress", pkt)
        self._run_control("compute_checksum", pkt)

    def _run_control(self, role: str, pkt: Packet) -> None:
        block = self.engine_blocks.get(role)
        body = self._bodies[role] if block is None else None
        if block is None and body is None:
            return
        p = pkt.phv
        # The PHV points to its packet only while a block runs (externs record requests on
        # it): a lasting Packet <-> PHV cycle would leave every packet to the cyclic GC
        # instead of being freed by reference counting when the switch lets go of it.
        p[SLOT_PKT] = pkt
        try:
            if body is None:
                req = self.engine.run_control(block, p)
                if req is not None:
                    take_requests(pkt, req)
            else:
                body(p)
        except (ExitSignal, ReturnSignal) as sig:
            sig.__traceback__ = None  # preallocated instances must not keep frames alive
        except ParserReject as r:  # a stack .next/.last out of bounds outside the parser
            raise PipelineRuntimeError(f"{role}: header stack index out of bounds (error {r.code})") from r
        except Exception as exc:  # noqa: BLE001 - reported with the block name
            raise PipelineRuntimeError(f"{role}: {type(exc).__name__}: {exc}") from exc
        finally:
            p[SLOT_PKT] = None

    def deparse(self, pkt: Packet) -> bytes:
        """Valid headers as the deparser emits them, then the unparsed payload (no truncation)."""
        head = pkt.deparsed
        if head is not None:
            return head + pkt.payload if head else pkt.payload
        p = pkt.phv
        block = self.engine_blocks.get("deparser")
        if block is not None:
            try:
                _, _, head = self.engine.run(block, p)
            except Exception as exc:  # noqa: BLE001 - reported with the block name
                raise PipelineRuntimeError(f"deparser (engine): {type(exc).__name__}: {exc}") from exc
            return head + pkt.payload if head else pkt.payload
        out: list[bytes] = []
        p[SLOT_OUT] = out
        self._run_control("deparser", pkt)
        p[SLOT_OUT] = None
        out.append(pkt.payload)
        return b"".join(out)

    # ------------------------------------------------------------------ copies

    def copy_packet(self, pkt: Packet) -> Packet:
        """An independent copy (PHV, payload, records except digests): a multicast replica
        or a unicast copy; the switch sets ``egress_rid``/``instance_type`` as needed."""
        new = Packet(self, pkt.data, pkt.now_us)
        new.phv = list(pkt.phv)
        new.payload_offset = pkt.payload_offset
        new.parsed = pkt.parsed
        new.clone_request = pkt.clone_request
        new.resubmit = pkt.resubmit
        new.recirculate = pkt.recirculate
        new.truncate_len = pkt.truncate_len
        return new

    def copy_for_clone(self, pkt: Packet, kind: str = "I2E", field_list_id: int | None = None, *,
                       slots: tuple[int, ...] | None = None, now_us: int | None = None) -> Packet:
        """The clone BMv2 makes at the end of ingress (I2E) or egress (E2E).

        I2E: the ORIGINAL received bytes, re-parsed (with the original ingress_port, so the
        parser takes the same path), then all user and standard metadata reset to 0 except
        the field list's fields (their values at the end of ingress), instance_type = 1 and
        packet_length. E2E: the same from the packet as deparsed at the end of egress,
        instance_type = 2. The clone session's port is set by the switch (run_egress).
        """
        if kind == "I2E":
            data, itype = pkt.data, PKT_INSTANCE_TYPE_INGRESS_CLONE
        elif kind == "E2E":
            data, itype = self.deparse(pkt), PKT_INSTANCE_TYPE_EGRESS_CLONE
        else:
            raise ValueError(f"clone kind must be 'I2E' or 'E2E', not {kind!r}")
        new = self.new_packet(data, pkt.phv[self._s_ingress_port], pkt.now_us if now_us is None else now_us, itype)
        self.parse(new)
        perr = new.phv[self._s_parser_error] if self._s_parser_error is not None else 0
        self._reset_metadata(new)
        if self._s_parser_error is not None:
            new.phv[self._s_parser_error] = perr
        self._preserve(pkt, new, field_list_id, slots)
        new.phv[self._s_instance_type] = itype
        new.phv[self._s_packet_length] = len(data)
        return new

    def copy_for_request(self, pkt: Packet, req: CloneRequest, now_us: int | None = None) -> Packet:
        """:meth:`copy_for_clone` for a recorded ``pkt.clone_request``."""
        return self.copy_for_clone(pkt, req.kind, req.field_list, slots=req.slots, now_us=now_us)

    def copy_for_resubmit(self, pkt: Packet, now_us: int | None = None) -> Packet:
        """The resubmitted packet: the original bytes, same ingress_port, instance_type 6,
        metadata reset except the field list of ``pkt.resubmit``; run_ingress parses it."""
        req = pkt.resubmit or PreserveRequest()
        new = self.new_packet(pkt.data, pkt.phv[self._s_ingress_port], pkt.now_us if now_us is None else now_us,
                              PKT_INSTANCE_TYPE_RESUBMIT)
        self._preserve(pkt, new, req.field_list, req.slots)
        return new

    def copy_for_recirculate(self, pkt: Packet, now_us: int | None = None) -> Packet:
        """The recirculated packet: the frame as deparsed after egress, instance_type 4,
        the same ingress_port, metadata reset except the field list of ``pkt.recirculate``."""
        req = pkt.recirculate or PreserveRequest()
        new = self.new_packet(self.deparse(pkt), pkt.phv[self._s_ingress_port],
                              pkt.now_us if now_us is None else now_us, PKT_INSTANCE_TYPE_RECIRC)
        self._preserve(pkt, new, req.field_list, req.slots)
        return new

    def _reset_metadata(self, pkt: Packet) -> None:
        p = pkt.phv
        for a, b in (self._meta_range, self._std_range):
            p[a:b] = self.template[a:b]

    def _preserve(self, src: Packet, dst: Packet, field_list_id: int | None,
                  slots: tuple[int, ...] | None) -> None:
        if field_list_id is not None:
            # A list no field is annotated with is empty (BMv2): the copy keeps no metadata.
            for st in self.field_lists.get(field_list_id, ()):
                dst.phv[st.start:st.end] = src.phv[st.start:st.end]
        if slots:
            for s in slots:
                dst.phv[s] = src.phv[s]

    # ------------------------------------------------------------------ inspection

    def _root(self, path: str) -> tuple[Storage, str]:
        head, _, rest = path.partition(".")
        roots = {self.root_names[0]: self.hdr, self.root_names[1]: self.meta, self.root_names[2]: self.std,
                 "hdr": self.hdr, "meta": self.meta, "standard_metadata": self.std, "std": self.std}
        if head not in roots:
            raise KeyError(f"path must start with one of {', '.join(sorted(roots))}: {path!r}")
        return roots[head], rest

    def storage_at(self, path: str) -> Storage:
        root, rest = self._root(path)
        return find_path(root, rest)

    def read_path(self, pkt: Packet, path: str) -> Any:
        st = self.storage_at(path)
        p = pkt.phv
        if isinstance(st, ScalarS | VarbitS):
            return p[st.start]
        if isinstance(st, HeaderS):
            if not p[st.valid]:
                return None
            return {n: p[f.start] for n, f in st.fields.items()}
        return p[st.start:st.end]

    def write_path(self, pkt: Packet, path: str, value: int) -> None:
        st = self.storage_at(path)
        if not isinstance(st, ScalarS):
            raise KeyError(f"{path!r} is not a scalar field")
        pkt.phv[st.start] = value & ((1 << st.width) - 1) if st.width and not st.signed else value
        pkt.deparsed = None

    def header_valid(self, pkt: Packet, path: str) -> bool:
        st = self.storage_at(path)
        hs = list(iter_headers(st))
        if not isinstance(st, HeaderS):
            raise KeyError(f"{path!r} is not a header")
        return bool(pkt.phv[hs[0].valid])

    def table(self, name: str) -> CompiledTable:
        """A compiled table by P4Info name (for tests and tools)."""
        for inst in self.instances.values():
            for v in _scope_values(inst.scope):
                if isinstance(v, CompiledTable) and v.name == name:
                    return v
        raise KeyError(name)

    @property
    def controller_headers(self) -> dict[str, Storage]:
        """Headers annotated ``@controller_header("packet_in"|"packet_out")``, by that name."""
        out: dict[str, Storage] = {}
        if isinstance(self.hdr, StructS):
            for h in iter_headers(self.hdr):
                decl = getattr(h.type, "decl", None)
                ann = ast.find_annotation(getattr(decl, "annotations", []), "controller_header")
                if ann is not None and ann.string_arg():
                    out[ann.string_arg()] = h  # type: ignore[index]
        return out

    def error_name(self, code: int) -> str:
        return self.error_names[code] if 0 <= code < len(self.error_names) else f"error#{code}"


def take_requests(pkt: Packet, req: tuple) -> None:
    """The requests an engine run returns (emitter.py: CLONE, TRUNCATE, PRESERVE) recorded on
    the packet as the closures record them: the last clone, resubmit and recirculate request
    wins, truncate keeps the smallest length."""
    clone, trunc, resubmit, recirc = req
    if clone is not None:
        kind, session, field_list = clone
        pkt.clone_request = CloneRequest(CLONE_KINDS[kind], session, None if field_list < 0 else field_list)
    if trunc is not None and (pkt.truncate_len is None or trunc < pkt.truncate_len):
        pkt.truncate_len = trunc
    if resubmit is not None:
        pkt.resubmit = PreserveRequest(resubmit)
    if recirc is not None:
        pkt.recirculate = PreserveRequest(recirc)


def _hand_over_clone(p: list, kind: int, session: int, field_list: int) -> None:
    """A request the engine hands over before a closure runs (``CLONE``: kind 0 I2E / 1 E2E,
    field list or -1; ``PRESERVE``: kind 2 resubmit / 3 recirculate, its field list)."""
    if kind >= 2:
        req: tuple = (None, None, field_list, None) if kind == 2 else (None, None, None, field_list)
    else:
        req = ((kind, session, field_list), None, None, None)
    take_requests(p[SLOT_PKT], req)


def _std_setter(fields: list[tuple[int | None, int]]) -> Callable[..., None]:
    """``set(phv, v0, v1, ...)`` storing ``v_i & mask_i`` into slot ``i`` of ``fields``
    ((slot, mask) pairs; slot None: the program's standard_metadata lacks the field, the
    value is ignored). Generated once because it runs per packet: straight-line stores cost
    a third of a loop over the pairs."""
    params = [f"v{i}" for i in range(len(fields))]
    body = [f"    p[{slot}] = v{i} & {mask}" for i, (slot, mask) in enumerate(fields) if slot is not None]
    src = f"def set_fields(p, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    namespace: dict[str, Any] = {}
    exec(src, namespace)  # noqa: S102 - source built above from ints only
    return namespace["set_fields"]


def _scope_values(sc: Scope) -> list[Any]:
    return list(sc._map.values())


def _by_name(program: ast.Program, arg: ast.Expression) -> Any:
    name = None
    if isinstance(arg, ast.ConstructorCallExpr):
        name = getattr(arg.type_ref, "name", None) or getattr(getattr(arg.type_ref, "base", None), "name", None)
    elif isinstance(arg, ast.PathExpr):
        name = arg.name
    for d in program.declarations:
        if isinstance(d, ast.ParserDecl | ast.ControlDecl) and d.name == name:
            return d
        if isinstance(d, ast.InstantiationDecl) and d.name == name:
            return block_decl_of(d, None)[0]  # type: ignore[arg-type]
    return None


def load_pipeline(checked: Any, p4info: p4info_pb2.P4Info, state: RuntimeState, *,
                  seed: int | None = None, oracle: bool | None = None) -> V1Pipeline:
    """Compile a checked v1model program against ``state`` (built from ``p4info``).

    Installs the program's ``const entries`` (and default actions P4Info leaves unset)
    into ``state``. Raises :class:`~.scope.PipelineError` (a located P4Error) for
    constructs the pipeline cannot run or objects missing from the P4Info.

    ``oracle=True`` (default: the environment variable ``HBH_P4_ORACLE`` set to 1) runs every
    block on the closures, the differential oracle; otherwise the blocks the engine emitter
    translates run in ``hbh_engine`` and the others on the closures (one log line each).
    """
    program = program_of(checked)
    with located(None, "the program"):  # last resort; statements and declarations locate their own
        return V1Pipeline(program, p4info, state, seed, checked if checked is not program else None, oracle)
    raise AssertionError("not reached")  # located() re-raises


__all__ = ["V1Pipeline", "load_pipeline", "PipelineRuntimeError", "is_aggregate", "take_requests"]
