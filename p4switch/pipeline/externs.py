"""v1model and core externs: what each call does to the packet, the PHV and the state.

Stateful externs (register, counter, meter, direct_counter, direct_meter) are bound at
load time to the ``RuntimeState`` objects of the same fully qualified name, so the control
plane sees what the data plane does. Requests to the architecture (``clone*``,
``resubmit*``, ``recirculate*``, ``truncate``) are *recorded* on the Packet
(``SLOT_PKT``); the switch acts on them after the block. ``digest`` messages go to the
state's digest buffer at the call (and are recorded in ``Packet.digests``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.state import (
    CounterArray,
    CounterUnit,
    MeterArray,
    MeterType,
    MeterUnit,
    RegisterArray,
)

from .algorithms import algorithm
from .calls import method_name, method_target
from .exprs import is_aggregate, mask_of
from .layout import (
    SLOT_CURSOR,
    SLOT_DATA,
    SLOT_PKT,
    ScalarS,
    Storage,
    StructS,
    VarbitS,
    iter_scalars,
    scalar_info,
)
from .packet import CloneRequest, ParserReject, PreserveRequest
from .scope import PipelineError, Scope
from .stmts import bind_arguments
from .templates import E, Fn, expr, stmt

log = logging.getLogger("p4switch.pipeline")


@dataclass(eq=False)
class ExternInst:
    """An extern object instance bound to its run-time state."""

    kind: str  # register, counter, meter, direct_counter, direct_meter, ...
    name: str  # fully qualified
    obj: Any
    type_args: tuple[T.Type, ...] = ()
    decl: ast.InstantiationDecl | None = None


class ExternCompiler:
    """Mixin of the pipeline compiler: extern objects, functions and methods."""

    state: Any
    rng: Any
    std: StructS
    private_state: dict[str, Any]
    digest_for_type: Callable[[T.Type, Any], Any]

    # ------------------------------------------------------------------ instances

    def instantiate_extern(self, decl: ast.InstantiationDecl, sc: Scope) -> ExternInst | None:
        t = decl.type_ref.type
        if not isinstance(t, T.ExternType):
            return None
        name = sc.fqn(decl)
        args = [a.value for a in decl.args]
        kind = t.name
        st = self.state
        if kind == "register":
            obj = st.registers_by_name.get(name)
            if obj is None:
                width, signed = scalar_info(t.type_args[0]) if t.type_args else (0, False)
                obj = self._private(name, lambda: RegisterArray(0, name, width, self._ctor_int(args, 0, decl), signed))
            return ExternInst(kind, name, obj, t.type_args, decl)
        if kind == "counter":
            obj = st.counters_by_name.get(name)
            if obj is None:
                unit = _counter_unit(self._ctor_symbol(args, 1))
                obj = self._private(name, lambda: CounterArray(0, name, unit, self._ctor_int(args, 0, decl)))
            return ExternInst(kind, name, obj, t.type_args, decl)
        if kind == "meter":
            obj = st.meters_by_name.get(name)
            if obj is None:
                unit = MeterUnit.BYTES if self._ctor_symbol(args, 1) == "bytes" else MeterUnit.PACKETS
                obj = self._private(name, lambda: MeterArray(0, name, unit, MeterType.TWO_RATE_THREE_COLOR,
                                                             self._ctor_int(args, 0, decl)))
            return ExternInst(kind, name, obj, t.type_args, decl)
        if kind in ("direct_counter", "direct_meter", "action_profile", "action_selector"):
            return ExternInst(kind, name, None, t.type_args, decl)
        return ExternInst(kind, name, None, t.type_args, decl)

    def _private(self, name: str, make: Callable[[], Any]) -> Any:
        """State for an extern the P4Info does not list (invisible to the control plane)."""
        obj = self.private_state.get(name)
        if obj is None:
            obj = self.private_state[name] = make()
        return obj

    def _ctor_int(self, args: list[ast.Expression], i: int, decl: ast.Node) -> int:
        if i >= len(args):
            raise PipelineError(decl.loc, "pipeline: missing constructor argument")
        v = args[i].const_value
        if not isinstance(v, int):
            raise PipelineError(args[i].loc, "pipeline: constructor argument must be a constant")
        return int(v)

    def _ctor_symbol(self, args: list[ast.Expression], i: int) -> str:
        if i >= len(args):
            return ""
        a = args[i]
        v = a.const_value
        member = getattr(v, "member", None)
        if member is not None:
            return member
        return getattr(a, "member", "")

    # ------------------------------------------------------------------ arguments

    def ext_args(self, call: ast.CallExpr, count: int | None = None) -> list[ast.Expression | None]:
        decl = getattr(call.method, "decl", None)
        params = getattr(decl, "params", None)
        if params and (count is None or len(params) == count) and len(call.args) <= len(params):
            try:
                return bind_arguments(params, call.args, call.loc)
            except PipelineError:
                pass
        return [a.value for a in call.args]

    def _out_store(self, arg: ast.Expression | None, value: E, sc: Scope) -> Fn | None:
        """Store ``value`` (already wrapped) into the out argument ``arg``."""
        if arg is None or isinstance(arg, ast.DontCareExpr):
            return None
        ref = self.ref_of(arg, sc)  # type: ignore[attr-defined]
        if ref is None:
            raise PipelineError(arg.loc, "pipeline: out argument must be an l-value")
        return self.store_scalar(ref, value, arg.loc)  # type: ignore[attr-defined]

    def fit(self, value: E, t: T.Type) -> E:
        """Cut an unbounded int to the representation of ``t``."""
        width, signed = scalar_info(t)
        if not width:
            return value
        if signed:
            return self.wrap_signed(value, width)  # type: ignore[attr-defined]
        if isinstance(T.underlying(t), T.BoolType):
            return expr("({a} & 1) == 1", a=value)
        return expr("{a} & {m}", a=value, m=mask_of(width))

    # ------------------------------------------------------------------ field lists

    def concat(self, e: ast.Expression, sc: Scope) -> tuple[E, int]:
        """The bit concatenation of a field list / struct / header (MSB first), and its width."""
        return self.concat_leaves(self.leaves(e, sc))

    def concat_leaves(self, leaves: list[tuple[E, Any, bool]]) -> tuple[E, Any]:
        """The bit concatenation of (value, width, signed) leaves, MSB first, and its width.

        A varbit leaf's width is a ``VarbitS`` (its length is known per packet only): then
        the value and the width are both closures.
        """
        if any(isinstance(w, VarbitS) for _, w, _ in leaves):
            return _dynamic_concat(leaves)
        total = sum(w for _, w, _ in leaves)
        if not leaves:
            return E.const(0), 0
        parts = []
        ops: dict[str, Any] = {}
        shift = total
        for i, (v, w, signed) in enumerate(leaves):
            shift -= w
            name = f"f{i}"
            ops[name] = v
            term = f"({{{name}}} & {mask_of(w)})" if signed else f"{{{name}}}"
            parts.append(f"({term} << {shift})" if shift else term)
        if len(parts) > 200:  # keep generated lines reasonable
            fns = [(v.fn(), w, s) for v, w, s in leaves]

            def big(p: list) -> int:
                acc = 0
                for f, w, s in fns:
                    acc = (acc << w) | (f(p) & mask_of(w) if s else f(p))
                return acc

            return E.func(big), total
        return expr(" | ".join(parts), **ops), total

    def leaves(self, e: ast.Expression, sc: Scope) -> list[tuple[E, int, bool]]:
        """Scalar leaves of a data argument: (value, width, signed)."""
        if isinstance(e, ast.ListExpr):
            out = []
            for x in e.elements:
                out += self.leaves(x, sc)
            return out
        if isinstance(e, ast.StructExpr):
            out = []
            for kv in e.fields:
                out += self.leaves(kv.value, sc)
            return out
        if is_aggregate(e.type):
            ref = self.ref_of(e, sc)  # type: ignore[attr-defined]
            if not isinstance(ref, Storage):
                raise PipelineError(e.loc, "pipeline: data must be fields, a list, a struct or a header")
            out = []
            for leaf in iter_scalars(ref):
                if isinstance(leaf, VarbitS):
                    out.append((E.slot(leaf.slot), leaf, False))
                elif not isinstance(leaf, ScalarS):
                    raise PipelineError(e.loc, "pipeline: this field cannot be part of a field list")
                else:
                    out.append((E.slot(leaf.slot), leaf.width, leaf.signed))
            return out
        ref = self.ref_of(e, sc) if isinstance(e, ast.MemberExpr) else None  # type: ignore[attr-defined]
        if isinstance(ref, VarbitS):
            return [(E.slot(ref.slot), ref, False)]
        width, signed = scalar_info(e.type)
        if not width:
            raise PipelineError(e.loc, f"pipeline: a value of type {e.type} has no bit width here")
        v = self.scalar(e, sc)  # type: ignore[attr-defined]
        if isinstance(T.underlying(e.type), T.BoolType):
            v = expr("1 if {a} else 0", a=v)
        return [(v, width, signed)]

    def algo_of(self, e: ast.Expression | None, sc: Scope) -> tuple[str, Callable[[int, int], int]]:
        if e is None:
            raise PipelineError(None, "pipeline: missing hash algorithm")
        name = self._ctor_symbol([e], 0)
        if not name and isinstance(e.const_value, int) and isinstance(e.type, T.EnumType):
            name = e.type.members[e.const_value]
        try:
            return name, algorithm(name, self.rng)
        except KeyError:
            raise PipelineError(e.loc, f"pipeline: unsupported hash algorithm '{name}'") from None

    # ------------------------------------------------------------------ functions

    def extern_function(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        name = method_name(call)
        handler = getattr(self, "_ef_" + name, None)
        if handler is None:
            raise PipelineError(call.loc, f"pipeline: extern function {name} has no implementation in p4switch "
                                          "(only the externs of core.p4 and v1model.p4 run)")
        return handler(call, sc)

    def extern_value(self, call: ast.CallExpr, sc: Scope) -> E:
        raise PipelineError(call.loc, f"pipeline: extern {method_name(call)} returns no value here")

    def _ef_static_assert(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        return None

    def _ef_verify(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        cond_e, err_e = self.ext_args(call)
        c = self.scalar(cond_e, sc)  # type: ignore[attr-defined]
        err = self.scalar(err_e, sc)  # type: ignore[attr-defined]
        if c.is_const and c.val:
            return None
        ef = err.fn()
        cf = c.fn()

        def verify(p: list) -> None:
            if not cf(p):
                raise ParserReject(ef(p))

        return verify

    def _ef_mark_to_drop(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        args = self.ext_args(call)
        std = self.storage(args[0], sc) if args else self.std  # type: ignore[attr-defined]
        if not isinstance(std, StructS) or "egress_spec" not in std.fields:
            raise PipelineError(call.loc, "pipeline: mark_to_drop needs standard_metadata")
        es = std.fields["egress_spec"].start
        mg = std.fields["mcast_grp"].start if "mcast_grp" in std.fields else None
        if mg is None:
            return stmt("p[{a}] = 511", a=es)
        return stmt("p[{a}] = 511\np[{b}] = 0", a=es, b=mg)

    def _ef_random(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        res, lo_e, hi_e = self.ext_args(call)
        lo, hi = self.scalar(lo_e, sc), self.scalar(hi_e, sc)  # type: ignore[attr-defined]
        randint = self.rng.randint
        v = expr("{r}({lo}, {hi}) if {lo} <= {hi} else {lo}", r=randint, lo=lo, hi=hi)
        return self._out_store(res, v, sc)

    def _ef_hash(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        res, algo_e, base_e, data_e, max_e = self.ext_args(call)
        _, algo = self.algo_of(algo_e, sc)
        data, nbits = self.concat(data_e, sc)
        base = self.scalar(base_e, sc)  # type: ignore[attr-defined]
        mx = self.scalar(max_e, sc)  # type: ignore[attr-defined]
        h = expr("{algo}({d}, {n})", algo=algo, d=data, n=nbits)
        if mx.is_const:
            v = expr("{b} + {h} % {m}", b=base, h=h, m=mx) if mx.val else base
        else:
            v = expr("({b} + {h} % {m}) if {m} else {b}", b=base, h=h, m=mx)
        return self._out_store(res, self.fit(v, res.type), sc)

    def _checksum_parts(self, call: ast.CallExpr, sc: Scope) -> tuple[E, E, int, Callable, ast.Expression]:
        cond_e, data_e, ck_e, algo_e = self.ext_args(call)
        cond = self.scalar(cond_e, sc)  # type: ignore[attr-defined]
        data, nbits = self.concat(data_e, sc)
        _, algo = self.algo_of(algo_e, sc)
        return cond, data, nbits, algo, ck_e

    def _ef_verify_checksum(self, call: ast.CallExpr, sc: Scope, payload: bool = False) -> Fn | None:
        cond, data, nbits, algo, ck_e = self._checksum_parts(call, sc)
        if cond.is_const and not cond.val:
            return None
        ck = self.scalar(ck_e, sc)  # type: ignore[attr-defined]
        width, _ = scalar_info(ck_e.type)
        m = mask_of(width)
        err = self.std.fields["checksum_error"].start
        if payload:
            computed = E.func(_payload_call(algo, data.fn(), nbits, _verify_payload_bytes))
        else:
            computed = expr("{algo}({d}, {n})", algo=algo, d=data, n=nbits)
        return stmt("if {c} and ({x} & {m}) != {k}:\n    p[{e}] = 1", c=cond, x=computed, m=m, k=ck, e=err)

    def _ef_verify_checksum_with_payload(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        return self._ef_verify_checksum(call, sc, payload=True)

    def _ef_update_checksum(self, call: ast.CallExpr, sc: Scope, payload: bool = False) -> Fn | None:
        cond, data, nbits, algo, ck_e = self._checksum_parts(call, sc)
        if cond.is_const and not cond.val:
            return None
        if payload:
            computed = E.func(_payload_call(algo, data.fn(), nbits, _update_payload_bytes))
        else:
            computed = expr("{algo}({d}, {n})", algo=algo, d=data, n=nbits)
        ref = self.ref_of(ck_e, sc)  # type: ignore[attr-defined]
        if ref is None:
            raise PipelineError(ck_e.loc, "pipeline: the checksum argument must be a field")
        store = self.store_scalar(ref, self.fit(computed, ck_e.type), ck_e.loc)  # type: ignore[attr-defined]
        if cond.is_const:
            return store
        return stmt("if {c}:\n    {s}", c=cond, s=E.func(store))

    def _ef_update_checksum_with_payload(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        return self._ef_update_checksum(call, sc, payload=True)

    def _ef_digest(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        recv_e, data_e = self.ext_args(call)
        t = data_e.type
        buf = self.digest_for_type(t, call)
        values = self.value_list(data_e, sc, t)  # type: ignore[attr-defined]
        pack = tuple_packer(t)
        buf_id = buf.id if buf is not None else 0

        def digest(p: list) -> None:
            msg = pack(values(p), 0)[0]
            pkt = p[SLOT_PKT]
            pkt.digests.append((buf_id, msg))
            if buf is not None:
                buf.add(msg, pkt.now_us * 1000)

        return digest

    def _clone_kind(self, e: ast.Expression, sc: Scope) -> str:
        name = self._ctor_symbol([e], 0)
        if not name:
            v = self.scalar(e, sc)  # type: ignore[attr-defined]
            if not v.is_const:
                raise PipelineError(e.loc, "pipeline: the clone type must be a constant")
            name = "I2E" if v.val == 0 else "E2E"
        if name not in ("I2E", "E2E"):
            raise PipelineError(e.loc, f"pipeline: unknown clone type {name}")
        return name

    def _ef_clone(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        args = self.ext_args(call)
        kind = self._clone_kind(args[0], sc)
        session = self.scalar(args[1], sc).fn()  # type: ignore[attr-defined]

        def clone(p: list) -> None:
            p[SLOT_PKT].clone_request = CloneRequest(kind, session(p))

        return clone

    def _ef_clone_preserving_field_list(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        args = self.ext_args(call)
        kind = self._clone_kind(args[0], sc)
        session = self.scalar(args[1], sc).fn()  # type: ignore[attr-defined]
        fl = self._int_const(args[2], sc)  # type: ignore[attr-defined]

        def clone(p: list) -> None:
            p[SLOT_PKT].clone_request = CloneRequest(kind, session(p), fl)

        return clone

    def _data_slots(self, e: ast.Expression, sc: Scope) -> tuple[int, ...]:
        """Slots named by a deprecated field-list argument (``clone3``/``resubmit`` data)."""
        out: list[int] = []
        items = e.elements if isinstance(e, ast.ListExpr) else [e]
        for x in items:
            ref = self.ref_of(x, sc)  # type: ignore[attr-defined]
            if not isinstance(ref, Storage):
                raise PipelineError(x.loc, "pipeline: preserved fields must be metadata fields")
            out += list(ref.slots())
        return tuple(out)

    def _ef_clone3(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        args = self.ext_args(call)
        kind = self._clone_kind(args[0], sc)
        session = self.scalar(args[1], sc).fn()  # type: ignore[attr-defined]
        slots = self._data_slots(args[2], sc)

        def clone(p: list) -> None:
            p[SLOT_PKT].clone_request = CloneRequest(kind, session(p), None, slots)

        return clone

    def _ef_resubmit_preserving_field_list(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        req = PreserveRequest(self._int_const(self.ext_args(call)[0], sc))  # type: ignore[attr-defined]
        return stmt("{pk}.resubmit = {r}", pk=E.slot(SLOT_PKT), r=req)

    def _ef_recirculate_preserving_field_list(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        req = PreserveRequest(self._int_const(self.ext_args(call)[0], sc))  # type: ignore[attr-defined]
        return stmt("{pk}.recirculate = {r}", pk=E.slot(SLOT_PKT), r=req)

    def _ef_resubmit(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        req = PreserveRequest(None, self._data_slots(self.ext_args(call)[0], sc))
        return stmt("{pk}.resubmit = {r}", pk=E.slot(SLOT_PKT), r=req)

    def _ef_recirculate(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        req = PreserveRequest(None, self._data_slots(self.ext_args(call)[0], sc))
        return stmt("{pk}.recirculate = {r}", pk=E.slot(SLOT_PKT), r=req)

    def _ef_truncate(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        n = self.scalar(self.ext_args(call)[0], sc).fn()  # type: ignore[attr-defined]

        def truncate(p: list) -> None:
            pkt = p[SLOT_PKT]
            v = n(p)
            if pkt.truncate_len is None or v < pkt.truncate_len:
                pkt.truncate_len = v

        return truncate

    def _ef_assert(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        c = self.scalar(self.ext_args(call)[0], sc)  # type: ignore[attr-defined]
        if c.is_const and c.val:
            return None
        cf = c.fn()
        where = str(call.loc)
        what = method_name(call)

        def check(p: list) -> None:
            if not cf(p):
                pkt = p[SLOT_PKT]
                pkt.assert_failures += 1
                log.error("%s: %s failed", where, what)

        return check

    _ef_assume = _ef_assert

    def _ef_log_msg(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        args = [a.value for a in call.args]
        msg = args[0].const_value if args[0].const_value is not None else getattr(args[0], "value", "")
        items: list[Fn] = []
        if len(args) > 1:
            d = args[1]
            elems = d.elements if isinstance(d, ast.ListExpr) else (
                [kv.value for kv in d.fields] if isinstance(d, ast.StructExpr) else [d])
            for x in elems:
                if is_aggregate(x.type):
                    items.append(self.agg(x, sc))  # type: ignore[attr-defined]
                else:
                    items.append(self.scalar(x, sc).fn())  # type: ignore[attr-defined]
        text = str(msg)

        def log_msg(p: list) -> None:
            out = text
            for f in items:
                out = out.replace("{}", str(f(p)), 1)
            p[SLOT_PKT].logs.append(out)
            log.info("%s", out)

        return log_msg

    # ------------------------------------------------------------------ methods

    def extern_method(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        target = method_target(call)
        inst = sc.lookup(getattr(target, "decl", None), target) if target is not None else None
        if not isinstance(inst, ExternInst):
            raise PipelineError(call.loc, f"pipeline: {method_name(call)}() on something that is not an extern")
        handler = getattr(self, f"_em_{inst.kind}_{method_name(call)}", None)
        if handler is None:
            raise PipelineError(call.loc, f"pipeline: unsupported extern method {inst.kind}.{method_name(call)}")
        return handler(call, sc, inst)

    def _em_register_read(self, call: ast.CallExpr, sc: Scope, inst: ExternInst) -> Fn | None:
        res, idx_e = self.ext_args(call)
        reg: RegisterArray = inst.obj
        idx = self.scalar(idx_e, sc)  # type: ignore[attr-defined]
        v = expr("{rd}({i})", rd=reg.read, i=idx)
        if reg.signed and reg.bitwidth:
            v = self.wrap_signed(v, reg.bitwidth)  # type: ignore[attr-defined]
        elif res is not None and isinstance(T.underlying(res.type), T.BoolType):
            v = expr("{a} == 1", a=v)
        return self._out_store(res, v, sc)

    def _em_register_write(self, call: ast.CallExpr, sc: Scope, inst: ExternInst) -> Fn | None:
        idx_e, val_e = self.ext_args(call)
        reg: RegisterArray = inst.obj
        idx = self.scalar(idx_e, sc)  # type: ignore[attr-defined]
        val = self.scalar(val_e, sc)  # type: ignore[attr-defined]
        return stmt("{wr}({i}, {v})", wr=reg.write, i=idx, v=val)

    def _em_counter_count(self, call: ast.CallExpr, sc: Scope, inst: ExternInst) -> Fn | None:
        (idx_e,) = self.ext_args(call)
        arr: CounterArray = inst.obj
        idx = self.scalar(idx_e, sc)  # type: ignore[attr-defined]
        length = E.slot(self.std.fields["packet_length"].start)
        return stmt("{c}({i}, {n})", c=arr.count, i=idx, n=length)

    def _em_direct_counter_count(self, call: ast.CallExpr, sc: Scope, inst: ExternInst) -> Fn | None:
        return None  # counted by the table on a hit

    def _em_meter_execute_meter(self, call: ast.CallExpr, sc: Scope, inst: ExternInst) -> Fn | None:
        idx_e, res = self.ext_args(call)
        arr: MeterArray = inst.obj
        idx = self.scalar(idx_e, sc)  # type: ignore[attr-defined]
        length = E.slot(self.std.fields["packet_length"].start)
        v = expr("{ex}({i}, {pk}.now_us * 1000, {n})", ex=arr.execute, i=idx, pk=E.slot(SLOT_PKT), n=length)
        return self._out_store(res, self.fit(v, res.type), sc)

    _em_meter_execute = _em_meter_execute_meter

    def _em_direct_meter_read(self, call: ast.CallExpr, sc: Scope, inst: ExternInst) -> Fn | None:
        (res,) = self.ext_args(call)
        slot = self.direct_meter_slot(inst)  # type: ignore[attr-defined]
        return self._out_store(res, self.fit(E.slot(slot), res.type), sc)


def _counter_unit(name: str) -> CounterUnit:
    return {"packets": CounterUnit.PACKETS, "bytes": CounterUnit.BYTES}.get(name, CounterUnit.BOTH)


def _verify_payload_bytes(p: list) -> bytes:
    return p[SLOT_DATA][p[SLOT_CURSOR] >> 3:]


def _update_payload_bytes(p: list) -> bytes:
    return p[SLOT_PKT].payload


def _payload_call(algo: Callable[[int, int], int], data: Fn, nbits: Any,
                  payload: Callable[[list], bytes]) -> Fn:
    if isinstance(nbits, E):  # varbit fields in the list: the width is known per packet
        width = nbits.fn()

        def compute_dyn(p: list) -> int:
            pl = payload(p)
            n = len(pl)
            return algo((data(p) << (8 * n)) | int.from_bytes(pl, "big"), width(p) + 8 * n)

        return compute_dyn

    def compute(p: list) -> int:
        pl = payload(p)
        n = len(pl)
        return algo((data(p) << (8 * n)) | int.from_bytes(pl, "big"), nbits + 8 * n)

    return compute


def tuple_packer(t: T.Type) -> Callable[[list, int], tuple[Any, int]]:
    """Flattened values of type ``t`` -> the P4Data-shaped Python value used by the state's
    digest buffers (struct/tuple: tuple of members; header: tuple of fields or None)."""
    u = t
    while isinstance(u, T.NewType):
        u = u.base
    if isinstance(u, T.HeaderType):
        n = sum(1 for _ in u.fields)
        subs = [tuple_packer(ft) for _, ft in u.fields]

        def header(vals: list, i: int) -> tuple[Any, int]:
            valid = vals[i]
            j = i + 1
            out = []
            for s in subs:
                v, j = s(vals, j)
                out.append(v)
            return (tuple(int(x) for x in out) if valid else None), i + 1 + n

        return header
    if isinstance(u, T.StructLikeType | T.TupleType):
        members = [ft for _, ft in u.fields] if isinstance(u, T.StructLikeType) else list(u.elements)
        subs = [tuple_packer(ft) for ft in members]

        def struct(vals: list, i: int) -> tuple[Any, int]:
            out = []
            for s in subs:
                v, i = s(vals, i)
                out.append(v)
            return tuple(out), i

        return struct
    if isinstance(u, T.BoolType):
        return lambda vals, i: (bool(vals[i]), i + 1)
    if isinstance(u, T.VarbitType):
        return lambda vals, i: (vals[i], i + 2)
    return lambda vals, i: (vals[i], i + 1)


__all__ = ["ExternCompiler", "ExternInst", "tuple_packer"]


def _dynamic_concat(leaves: list[tuple[E, Any, bool]]) -> tuple[E, E]:
    """Concatenation (and total width) of leaves some of which are varbit fields."""
    parts = [(v.fn(), w.len_slot if isinstance(w, VarbitS) else None, 0 if isinstance(w, VarbitS) else w, s)
             for v, w, s in leaves]
    fixed = sum(w for _, ls, w, _ in parts if ls is None)
    lens = tuple(ls for _, ls, _, _ in parts if ls is not None)

    def value(p: list) -> int:
        acc = 0
        for f, ls, w, _signed in parts:
            n = p[ls] if ls is not None else w
            acc = (acc << n) | (f(p) & mask_of(n))
        return acc

    def width(p: list) -> int:
        return fixed + sum(p[ls] for ls in lens)

    return E.func(value), E.func(width)
