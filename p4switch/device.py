"""The P4Runtime device binding of p4switch: pipeline (re)loads and controller packets.

Why: the P4Runtime core (``p4switch.p4runtime``) never runs packets; it hands this device the
``ForwardingPipelineConfig`` a controller pushed and the packet-outs it received, and gets
packet-ins back. This module turns those into the v1model architecture's terms.

**Device config.** BMv2 takes its JSON as the ``p4_device_config``; so does p4switch
(``p4switch.bmv2json``: a config that is a JSON object), and, for users without p4c, the P4
program itself: the *preprocessed* P4_16 source as UTF-8 text, with the C preprocessor's
line markers (``# 42 "p4src/alinea.p4"``), so that the switch needs no include files and
errors still point at the lines the user wrote. :func:`device_config_for` makes it from a
``.p4`` file (``p4switch --device-config OUT FILE.p4`` writes it, conventionally
``build/alinea.p4switch.bin`` next to ``build/alinea.p4info.txtpb``). A config is accepted
only if the P4Info the front end builds from it names the same objects with the same ids as
the pushed P4Info (a P4Info from another program version would silently misaddress tables).

**Controller headers.** ``packet_out`` metadata become the ``@controller_header("packet_out")``
header, packed MSB first in P4Info field order, in front of the payload, and the frame enters
ingress on the CPU port (the program parses it, as on BMv2). A frame the pipeline sends to the
CPU port starts with the ``packet_in`` header, which is split off into metadata.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from p4.config.v1 import p4info_pb2

from p4switch.bmv2json import Bmv2JsonError, compile_json, is_bmv2_json
from p4switch.compiled import CompiledProgram, compile_file, device_config_for, front_end
from p4switch.p4runtime.device import PipelineLoadError
from p4switch.state.runtime import ControllerHeader, RuntimeState

log = logging.getLogger(__name__)

__all__ = ["CompiledProgram", "P4SwitchDevice", "PipelineHolder", "build_pipeline", "compile_device_config",
           "compile_file",
           "device_config_for", "p4info_mismatch", "pack_controller_header", "split_controller_header", "split_as_integer"]

DEVICE_CONFIG_NAME = "<device config>"
# P4Info object kinds whose names and ids must agree between pushed and built P4Info.
_KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters", "direct_meters",
          "controller_packet_metadata", "value_sets", "registers", "digests")


# ---------------------------------------------------------------------------------------------
# Compiling a program
# ---------------------------------------------------------------------------------------------


def compile_device_config(device_config: bytes, p4info: p4info_pb2.P4Info | None = None) -> CompiledProgram:
    """Run the front end on a device config; PipelineLoadError says what is wrong with it.

    A config that is a JSON object is p4c's BMv2 JSON, as BMv2 takes it (p4switch.bmv2json,
    with the pushed ``p4info`` for what the JSON does not say); anything else is the
    preprocessed P4 source."""
    from p4switch.frontend.errors import P4Error, format_error
    from p4switch.frontend.preprocess import no_preprocess

    if not device_config:
        raise PipelineLoadError("empty p4_device_config: p4switch needs p4c's BMv2 JSON or the preprocessed P4 "
                                "program (make it with `p4switch --device-config OUT FILE.p4`)")
    if is_bmv2_json(device_config):
        try:
            return compile_json(device_config, p4info)
        except Bmv2JsonError as exc:
            raise PipelineLoadError(f"p4_device_config (BMv2 JSON): {exc}") from None
    try:
        text = device_config.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineLoadError(f"p4_device_config is not UTF-8 text (byte {exc.start}): p4switch takes the "
                                "preprocessed P4 source, not a BMv2 JSON or binary") from None
    try:
        checked, p4info = front_end(no_preprocess(text, DEVICE_CONFIG_NAME))
    except P4Error as err:
        raise PipelineLoadError(f"the P4 program in p4_device_config has errors:\n{format_error(err)}") from None
    return CompiledProgram(checked, p4info, device_config)


#: Programs compiled in this process, by the digest ``P4RuntimeDevice._compiled`` keys them with:
#: every switch of a simulated network (one process, a device per switch) pushes the same program,
#: and each ran the front end again (0.16 s a switch: a 21-switch random topology spent 3.4 s on
#: it). A CompiledProgram is read, never changed, by the pipelines built from it (``install``
#: builds each device's state and pipeline afresh). The newest few are kept; errors never are.
_SHARED: dict[bytes, CompiledProgram] = {}
_SHARED_MAX = 8
_SHARED_LOCK = threading.Lock()


def _shared_compile(digest: bytes, device_config: bytes, p4info: p4info_pb2.P4Info | None) -> CompiledProgram:
    with _SHARED_LOCK:
        program = _SHARED.get(digest)
    if program is None:
        program = compile_device_config(device_config, p4info)
        with _SHARED_LOCK:
            _SHARED[digest] = program
            while len(_SHARED) > _SHARED_MAX:
                del _SHARED[next(iter(_SHARED))]
    return program


def build_pipeline(program: CompiledProgram, p4info: p4info_pb2.P4Info | None = None, *,
                   seed: int | None = None) -> tuple[Any, RuntimeState]:
    """A fresh state and the pipeline of ``program`` on it; PipelineLoadError says why not.

    Why a function of its own: the switch (on load) and ``p4switch --device-config`` (before
    writing a config) must accept and refuse exactly the same programs.
    """
    from p4switch.frontend.errors import P4Error, format_error
    from p4switch.pipeline import load_pipeline
    from p4switch.state.errors import StateError

    info = p4info if p4info is not None else program.p4info
    try:
        state = RuntimeState.from_p4info(info)
        return load_pipeline(program.checked, info, state, seed=seed), state
    except P4Error as err:
        raise PipelineLoadError(f"cannot build the pipeline:\n{format_error(err)}") from None
    except StateError as exc:
        raise PipelineLoadError(f"cannot build the pipeline: {exc.message}") from None
    except (ValueError, NotImplementedError) as exc:
        raise PipelineLoadError(f"cannot build the pipeline: {exc}") from None


def _objects(p4info: p4info_pb2.P4Info) -> dict[str, dict[str, int]]:
    return {kind: {o.preamble.name: o.preamble.id for o in getattr(p4info, kind)} for kind in _KINDS}


def p4info_mismatch(pushed: p4info_pb2.P4Info, built: p4info_pb2.P4Info, limit: int = 5) -> str | None:
    """None when both P4Infos describe the same objects, else what differs.

    Names and ids must agree, and so must what the runtime state is built from: match field
    widths and kinds, action parameter lists and widths, controller header fields, table and
    array sizes, counter/meter units, direct resources' tables, profiles' tables. Why: the
    state is built from the pushed P4Info while the pipeline runs the program; a P4Info that
    declares ``dstAddr`` bit<64> would make the table take 64-bit keys the program never
    produces. Annotations and documentation may differ (another compiler may word them so).
    """
    problems: list[str] = []
    a, b = _objects(pushed), _objects(built)
    for kind in _KINDS:
        for name in sorted(a[kind].keys() - b[kind].keys()):
            problems.append(f"{kind[:-1]} '{name}' is in the P4Info but not in the program")
        for name in sorted(b[kind].keys() - a[kind].keys()):
            problems.append(f"{kind[:-1]} '{name}' is in the program but not in the P4Info")
        for name in sorted(a[kind].keys() & b[kind].keys()):
            if a[kind][name] != b[kind][name]:
                problems.append(f"{kind[:-1]} '{name}' has id 0x{a[kind][name]:08x} in the P4Info but "
                                f"0x{b[kind][name]:08x} in the program")
    if not problems:
        problems = _shape_mismatches(pushed, built)
    if not problems:
        return None
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return ("the P4Info does not match the program in p4_device_config: " + "; ".join(problems[:limit]) + more)


def _fields(items: Iterable[Any], extra: Callable[[Any], Any] = lambda _f: None) -> dict[int, tuple]:
    """id -> (name, bitwidth, extra) of match fields, parameters or controller header fields."""
    return {f.id: (f.name, f.bitwidth, extra(f)) for f in items}


def _match_kind(f: Any) -> str:
    return f.other_match_type or p4info_pb2.MatchField.MatchType.Name(f.match_type)


def _compare_fields(owner: str, what: str, a: dict[int, tuple], b: dict[int, tuple], out: list[str]) -> None:
    for fid in sorted(a.keys() | b.keys()):
        x, y = a.get(fid), b.get(fid)
        if x is None or y is None:
            name = (x or y)[0]
            where = "P4Info" if x is not None else "program"
            out.append(f"{owner}: {what} '{name}' (id {fid}) is only in the {where}")
            continue
        if x[0] != y[0]:
            out.append(f"{owner}: {what} id {fid} is '{x[0]}' in the P4Info but '{y[0]}' in the program")
        if x[1] != y[1]:
            out.append(f"{owner}: {what} '{x[0]}' is bit<{x[1]}> in the P4Info but bit<{y[1]}> in the program")
        if x[2] != y[2]:
            out.append(f"{owner}: {what} '{x[0]}' has match kind {x[2]} in the P4Info but {y[2]} in the program")


def _same(owner: str, what: str, x: Any, y: Any, out: list[str]) -> None:
    if x != y:
        out.append(f"{owner}: {what} is {x} in the P4Info but {y} in the program")


def _shape_mismatches(pushed: p4info_pb2.P4Info, built: p4info_pb2.P4Info) -> list[str]:
    """Differences in what the runtime state is built from, for objects both name alike."""
    out: list[str] = []
    by_name = {kind: {o.preamble.name: o for o in getattr(built, kind)} for kind in _KINDS}
    for t in pushed.tables:
        u, own = by_name["tables"][t.preamble.name], f"table '{t.preamble.name}'"
        _compare_fields(own, "match field", _fields(t.match_fields, _match_kind),
                        _fields(u.match_fields, _match_kind), out)
        _same(own, "size", t.size, u.size, out)
        _same(own, "the action list", sorted(r.id for r in t.action_refs), sorted(r.id for r in u.action_refs), out)
        _same(own, "implementation id", t.implementation_id, u.implementation_id, out)
        _same(own, "direct resources", sorted(t.direct_resource_ids), sorted(u.direct_resource_ids), out)
    for x in pushed.actions:
        y, own = by_name["actions"][x.preamble.name], f"action '{x.preamble.name}'"
        _compare_fields(own, "parameter", _fields(x.params), _fields(y.params), out)
    for x in pushed.controller_packet_metadata:
        y, own = by_name["controller_packet_metadata"][x.preamble.name], f"controller header '{x.preamble.name}'"
        _compare_fields(own, "field", _fields(x.metadata), _fields(y.metadata), out)
    for kind in ("counters", "meters"):
        for x in getattr(pushed, kind):
            y, own = by_name[kind][x.preamble.name], f"{kind[:-1]} '{x.preamble.name}'"
            _same(own, "size", x.size, y.size, out)
            _same(own, "the unit", x.spec.unit, y.spec.unit, out)
    for kind in ("direct_counters", "direct_meters"):
        for x in getattr(pushed, kind):
            y, own = by_name[kind][x.preamble.name], f"{kind[:-1]} '{x.preamble.name}'"
            _same(own, "the table id", x.direct_table_id, y.direct_table_id, out)
            _same(own, "the unit", x.spec.unit, y.spec.unit, out)
    for x in pushed.registers:
        y, own = by_name["registers"][x.preamble.name], f"register '{x.preamble.name}'"
        _same(own, "size", x.size, y.size, out)
        _same(own, "the cell width", x.type_spec.bitstring.bit.bitwidth, y.type_spec.bitstring.bit.bitwidth, out)
    for x in pushed.action_profiles:
        y, own = by_name["action_profiles"][x.preamble.name], f"action profile '{x.preamble.name}'"
        _same(own, "size", x.size, y.size, out)
        _same(own, "the table list", sorted(x.table_ids), sorted(y.table_ids), out)
        _same(own, "with_selector", x.with_selector, y.with_selector, out)
    for x in pushed.value_sets:
        y, own = by_name["value_sets"][x.preamble.name], f"value set '{x.preamble.name}'"
        _same(own, "size", x.size, y.size, out)
        _compare_fields(own, "match field", _fields(x.match, _match_kind), _fields(y.match, _match_kind), out)
    return out


# ---------------------------------------------------------------------------------------------
# Controller headers
# ---------------------------------------------------------------------------------------------


def pack_controller_header(header: ControllerHeader | None, values: dict[str, int]) -> bytes:
    """The header's bytes: fields in P4Info order, MSB first (missing fields are 0)."""
    if header is None:
        return b""
    acc, bits = 0, 0
    for f in header.fields:
        v = values.get(f.name, 0)
        if v < 0 or v >> f.bitwidth:
            raise ValueError(f"{header.name} metadata '{f.name}': {v} does not fit bit<{f.bitwidth}>")
        acc, bits = (acc << f.bitwidth) | v, bits + f.bitwidth
    if bits % 8:
        raise ValueError(f"controller header '{header.name}' is {bits} bits, not a whole number of bytes")
    return acc.to_bytes(bits // 8, "big")


def split_controller_header(header: ControllerHeader | None, frame: bytes) -> tuple[dict[str, int], bytes] | None:
    """(metadata, payload) of a frame starting with ``header``; None if the frame is shorter."""
    if header is None:
        return {}, frame
    splitter = header.splitter
    if splitter is not None and type(frame) is bytes:
        return splitter.split(frame)  # type: ignore[no-any-return]
    return split_as_integer(header, frame)


def split_as_integer(header: ControllerHeader, frame: bytes) -> tuple[dict[str, int], bytes] | None:
    """The header read as one integer, field by field: the arithmetic the engine's split keeps,
    used where it has none (and the oracle its test compares it with)."""
    bits, layout = header.layout
    nbytes = (bits + 7) // 8
    if len(frame) < nbytes:
        return None
    acc = int.from_bytes(frame[:nbytes], "big") >> (nbytes * 8 - bits)
    return {name: (acc >> shift) & mask for name, shift, mask in layout}, frame[nbytes:]


# ---------------------------------------------------------------------------------------------
# The device
# ---------------------------------------------------------------------------------------------


class PipelineHolder:
    """The running pipeline and its state, shared by the device and the architecture core.

    Why an object of its own: a pipeline swap must replace both at once, and every reader (the
    core, per packet) then sees the new pair - on one loop thread that is atomic.
    """

    def __init__(self) -> None:
        self.pipeline: Any = None
        self.state: RuntimeState | None = None
        self.program: CompiledProgram | None = None
        self.generation = 0

    def swap(self, pipeline: Any, state: RuntimeState, program: CompiledProgram | None) -> None:
        self.pipeline, self.state, self.program = pipeline, state, program
        self.generation += 1


PacketInSink = Callable[[bytes, dict[str, int]], Any]


class P4SwitchDevice:
    """Implements ``p4switch.p4runtime.device.Device`` for a p4switch.

    ``inject(port, frame)`` makes a frame enter ingress as if received on ``port`` (the
    architecture core's ``receive``); ``cpu_port`` None means packet I/O with the controller is
    off (like BMv2 without ``--cpu-port``). ``on_load`` is called after every swap; ``seed``
    seeds the pipeline's ``random`` extern (None: not reproducible).
    """

    def __init__(self, holder: PipelineHolder, inject: Callable[[int, bytes], None], cpu_port: int | None,
                 on_load: Callable[[], None] | None = None, seed: int | None = None) -> None:
        self.holder = holder
        self.seed = seed
        self.inject = inject
        self.cpu_port = cpu_port
        self.on_load = on_load
        self.packet_in_sink: PacketInSink | None = None
        # the engine walk's route_packet_ins (p4switch.switch sets it): packet-ins past this device
        self.packet_in_router: Callable[..., None] | None = None
        self._cache: tuple[bytes, CompiledProgram] | None = None
        self.packet_outs = 0
        self.packet_ins = 0
        self.packet_ins_dropped = 0

    @property
    def state(self) -> RuntimeState | None:
        return self.holder.state

    @state.setter
    def state(self, value: RuntimeState | None) -> None:
        # The core assigns a state only when load_pipeline left none; ours always sets one.
        self.holder.state = value

    # ---- pipeline -----------------------------------------------------------------------
    def _compiled(self, device_config: bytes, p4info: p4info_pb2.P4Info | None = None) -> CompiledProgram:
        """Compile once per distinct config (VERIFY then COMMIT pushes the same bytes twice); a
        BMv2 JSON is read with the P4Info pushed with it, so that is part of the key."""
        h = hashlib.sha256(device_config)
        if p4info is not None and device_config.lstrip()[:1] == b"{":
            h.update(p4info.SerializeToString(deterministic=True))
        digest = h.digest()
        if self._cache is not None and self._cache[0] == digest:
            return self._cache[1]
        program = _shared_compile(digest, device_config, p4info)
        self._cache = (digest, program)
        return program

    def verify_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        program = self._compiled(device_config, p4info)
        reason = p4info_mismatch(p4info, program.p4info)
        if reason:
            raise PipelineLoadError(reason)

    def load_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        self.verify_pipeline(p4info, device_config)
        self.install(self._compiled(device_config, p4info), p4info)

    def install(self, program: CompiledProgram, p4info: p4info_pb2.P4Info | None = None) -> RuntimeState:
        """Build a fresh state and pipeline for ``program`` and swap them in (atomically)."""
        info = p4info if p4info is not None else program.p4info
        pipeline, state = build_pipeline(program, info, seed=self.seed)
        self.holder.swap(pipeline, state, program)
        log.info("pipeline loaded: %s (generation %d)", info.pkg_info.name or "program", self.holder.generation)
        if self.on_load is not None:
            self.on_load()
        return state

    # ---- controller packets -------------------------------------------------------------
    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> None:
        """A PacketOut: the packet_out header + payload enter ingress on the CPU port."""
        if self.cpu_port is None:
            raise ValueError("packet-out refused: the switch has no CPU port (start it with --cpu-port N)")
        state = self.holder.state
        header = state.packet_out if state is not None else None
        frame = pack_controller_header(header, metadata) + bytes(payload)
        self.packet_outs += 1
        self.inject(self.cpu_port, frame)

    def route_packet_ins(self, state: RuntimeState | None, sink: PacketInSink | None) -> None:
        """While ``state`` is in force, the walk hands the packet-ins it splits with its packet_in
        header to ``sink`` itself, past :meth:`frame_to_cpu` and its caller (None: stop).

        Why: the P4Runtime core routes an in-process primary's packet-ins this way (a report
        every interval per link in a simulation: six Python steps each, a tenth of its CPU
        time). The route holds for the pipeline in force when it was set; after a swap the
        frames come here again and the core sets it anew, or not."""
        if self.packet_in_router is None:
            return
        header = state.packet_in if state is not None else None
        if sink is None or state is None or state is not self.holder.state or header is None or header.splitter is None:
            self.packet_in_router()
            return
        self.packet_in_router(self.holder.pipeline, header.splitter, sink)

    def frame_to_cpu(self, frame: bytes) -> bool:
        """A frame the pipeline sent to the CPU port: split off packet_in, hand it over."""
        state = self.holder.state
        header = state.packet_in if state is not None else None
        split = split_controller_header(header, frame)
        if split is None or self.packet_in_sink is None:
            self.packet_ins_dropped += 1
            return False
        metadata, payload = split
        self.packet_ins += 1
        taken = self.packet_in_sink(payload, metadata)
        if taken is False:
            self.packet_ins_dropped += 1
        return taken is not False
