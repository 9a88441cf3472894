"""P4RuntimeCore: the ``p4.v1.P4Runtime`` service as plain method calls (sans-I/O).

Every RPC is a method taking the request protobuf and returning the response or
raising P4RuntimeError (code, message, per-item ``p4.v1.Error`` details). The
gRPC binding (server.py) marshals calls onto the switch loop; the simulation
calls the methods directly. Nothing here blocks, sleeps or reads a clock: time
comes from the injected scheduler (``now_ns()``, ``call_at(t_ns, fn)``), which
also drives the digest timers.
"""

from __future__ import annotations

import logging
import operator
import os
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from typing import Any, Protocol

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.bytestrings import decode_unsigned, encode_unsigned, fits_unsigned
from p4switch.state.digests import DigestBuffer, DigestList
from p4switch.state.errors import Code, StateError
from p4switch.state.runtime import RuntimeState

from .arbitration import Arbitration, StreamSession, check_role, election_id_of, to_uint128
from .device import Device, PipelineLoadError
from .errors import P4RuntimeError, to_p4_error
from .fast_writes import STORE_MAX_UPDATES, FastWriter
from .p4data import encode_p4data
from .reads import CellRef, counter_cell_refs, counter_cells, read_cell_refs, read_entity, read_entity_wire
from .wire_encode import packet_in_response, read_response
from .writes import apply_update

log = logging.getLogger(__name__)
FPC = pb.SetForwardingPipelineConfigRequest
GET = pb.GetForwardingPipelineConfigRequest
READ_CHUNK = 256  # entities per ReadResponse message


class _Handle(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def now_ns(self) -> int: ...

    def call_at(self, t_ns: int, fn: Callable[..., Any], *args: Any) -> _Handle: ...


@dataclass
class ReadResult:
    """Responses to stream back, then ``error`` (None: status OK)."""

    responses: list[Any]  # pb.ReadResponse, or its bytes from read_wire
    error: P4RuntimeError | None = None


@dataclass
class _Saved:
    """A VERIFY_AND_SAVE'd config: Read/Write address its shadow state until COMMIT."""

    config: pb.ForwardingPipelineConfig
    state: RuntimeState
    log: list[pb.Update] = field(default_factory=list)


def p4rt_mode() -> str:
    """``HBH_P4RT``: unset, empty or ``compiled``: the engine's gRPC front end before the P4Runtime
    server (server.py); ``grpcio``: the grpcio server alone, with one-pass table writes;
    ``python``: the server and its Writes all in Python (the path before issue 49: no one-pass
    table writes either), e.g. to compare."""
    return os.environ.get("HBH_P4RT", "").strip().lower()


def python_only() -> bool:
    """``HBH_P4RT=python`` (:func:`p4rt_mode`)."""
    return p4rt_mode() == "python"


def api_version() -> str:
    """The P4Runtime API version of the installed ``p4runtime`` protobuf package."""
    try:
        return importlib_metadata.version("p4runtime")
    except importlib_metadata.PackageNotFoundError:
        return "1.4.1"


class P4RuntimeCore:
    def __init__(self, device: Device,
                 state_factory: Callable[[p4info_pb2.P4Info], RuntimeState] = RuntimeState.from_p4info,
                 device_id: int = 1, scheduler: Scheduler | None = None, fast_writes: bool | None = None) -> None:
        self.device = device
        #: table entries written in one pass (fast_writes.py) where it can; False: every update
        #: through the general path. None: on unless HBH_P4RT=python (the Python-only path)
        self.fast_writes = fast_writes if fast_writes is not None else not python_only()
        self._fast: FastWriter | None = None
        self.state_factory = state_factory
        self.device_id = device_id
        self.scheduler = scheduler
        self.arbitration = Arbitration(device_id)
        self.api_version = api_version()
        self._config: pb.ForwardingPipelineConfig | None = None
        self._saved: _Saved | None = None
        self._timer: _Handle | None = None
        self._timer_at: int | None = None
        self._attached: RuntimeState | None = None
        self.dropped_packet_ins = 0
        self.dropped_digest_lists = 0
        # A device that can route packet-ins past split_packet_in (p4switch's: route_packet_ins)
        # takes an in-process primary's there while the state it was set for lasts (a new state
        # comes here first, and is attached then); any change of primary takes the route away.
        self._route: Callable[[RuntimeState | None, Any], None] | None = getattr(device, "route_packet_ins", None)

    # ------------------------------------------------------------ helpers

    def now_ns(self) -> int:
        return self.scheduler.now_ns() if self.scheduler is not None else 0

    @property
    def state(self) -> RuntimeState | None:
        """The state Read/Write address (a saved, uncommitted config's shadow state first)."""
        self._sync()
        if self._saved is not None:
            return self._saved.state
        return self.device.state

    def _unroute_packet_ins(self) -> None:
        if self._route is not None:
            self._route(None, None)

    def _sync(self) -> None:
        """Watch the digests of the device's state, however its pipeline was loaded."""
        st = self.device.state
        if st is not self._attached and st is not None:
            self._attach(st)

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise P4RuntimeError(Code.NOT_FOUND, f"unknown device id {device_id} (this server is device {self.device_id})")

    def _require_primary(self, req: pb.WriteRequest | FPC) -> None:
        self._check_device(req.device_id)
        check_role(req.role, req.role_id)
        if not self.arbitration.is_primary(election_id_of(req)):
            raise P4RuntimeError(Code.PERMISSION_DENIED,
                                 "not the primary client: open a StreamChannel with the highest election id and use it")

    def _require_state(self) -> RuntimeState:
        st = self.state
        if st is None:
            raise P4RuntimeError(Code.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        return st

    # -------------------------------------------------------------- RPCs

    def capabilities(self, req: pb.CapabilitiesRequest | None = None) -> pb.CapabilitiesResponse:
        return pb.CapabilitiesResponse(p4runtime_api_version=self.api_version)

    def set_forwarding_pipeline_config(self, req: FPC) -> pb.SetForwardingPipelineConfigResponse:
        self._require_primary(req)
        action = req.action
        if action == FPC.VERIFY:
            self._verify(req)
        elif action == FPC.VERIFY_AND_SAVE:
            self._saved = _Saved(_copy(req.config), self._verify(req))
        elif action == FPC.VERIFY_AND_COMMIT:
            self._verify(req)
            self._commit(req.config, [])
        elif action == FPC.COMMIT:
            if req.HasField("config"):
                raise P4RuntimeError(Code.INVALID_ARGUMENT, "COMMIT takes no config (it commits the saved one)")
            if self._saved is None:
                raise P4RuntimeError(Code.FAILED_PRECONDITION, "COMMIT: no config was saved with VERIFY_AND_SAVE")
            self._commit(self._saved.config, self._saved.log)
        elif action == FPC.RECONCILE_AND_COMMIT:
            raise P4RuntimeError(Code.UNIMPLEMENTED, "RECONCILE_AND_COMMIT is not supported; use VERIFY_AND_COMMIT")
        else:
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"pipeline config action {FPC.Action.Name(action)} is not valid")
        return pb.SetForwardingPipelineConfigResponse()

    def get_forwarding_pipeline_config(self, req: pb.GetForwardingPipelineConfigRequest) -> pb.GetForwardingPipelineConfigResponse:
        self._check_device(req.device_id)
        cfg = self._saved.config if self._saved is not None else self._config
        if cfg is None and self.device.state is not None:  # pipeline loaded by other means
            cfg = pb.ForwardingPipelineConfig(p4info=self.device.state.p4info)
        resp = pb.GetForwardingPipelineConfigResponse()
        if cfg is None:
            return resp
        rt = req.response_type
        if rt not in (GET.ALL, GET.COOKIE_ONLY, GET.P4INFO_AND_COOKIE, GET.DEVICE_CONFIG_AND_COOKIE):
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"unknown response type {rt}")
        resp.config.SetInParent()
        if rt in (GET.ALL, GET.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(cfg.p4info)
        if rt in (GET.ALL, GET.DEVICE_CONFIG_AND_COOKIE):
            resp.config.p4_device_config = cfg.p4_device_config
        if cfg.HasField("cookie"):
            resp.config.cookie.CopyFrom(cfg.cookie)
        return resp

    def write(self, req: pb.WriteRequest, raw: bytes | None = None) -> pb.WriteResponse:
        """The whole batch in one call (the simulation and in-process clients); ``raw``: the
        request's wire bytes, when the caller has them (the engine then decodes table entries)."""
        steps = self.write_steps(req, raw=raw)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def write_wire(self, raw: bytes) -> bytes | None:
        """A Write's bytes applied in the engine's entry store (fast_writes.py: every update a
        plain one of a stored table, all succeeding, from the primary): the response's bytes, or
        None, with nothing changed, for :meth:`write` to take the request."""
        if not self.fast_writes or self._saved is not None:
            return None
        st = self.state
        primary = self.arbitration.primary
        if st is None or primary is None or primary.election_id is None:
            return None
        fast = self._fast
        if fast is None or fast.state is not st:
            fast = self._fast = FastWriter.of(st)
        return b"" if fast.apply(raw, self.device_id, primary.election_id) else None  # b"": a WriteResponse

    def write_steps(self, req: pb.WriteRequest, slice_ns: int | None = None,
                    raw: bytes | None = None) -> Generator[None, None, pb.WriteResponse]:
        """A Write as a generator that yields after every ``slice_ns`` of work (never for
        DATAPLANE_ATOMIC): the gRPC binding runs one slice per switch-loop turn, so ports are
        served between slices and a 10,000-update batch does not stop forwarding for a second.
        CONTINUE_ON_ERROR and ROLLBACK_ON_ERROR let the data plane see a batch half applied
        (the specification says so); DATAPLANE_ATOMIC never does. Returns the response or
        raises P4RuntimeError, as :meth:`write`."""
        self._require_primary(req)
        st = self._require_state()
        atomic = req.atomicity in (pb.WriteRequest.ROLLBACK_ON_ERROR, pb.WriteRequest.DATAPLANE_ATOMIC)
        if not atomic and req.atomicity != pb.WriteRequest.CONTINUE_ON_ERROR:
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"unknown atomicity {req.atomicity}")
        if req.atomicity == pb.WriteRequest.DATAPLANE_ATOMIC:
            slice_ns = None
        failures: dict[int, StateError] = {}  # pb.Error objects are built only when something failed
        undos = []
        saved = self._saved
        clock = time.perf_counter_ns
        t_end = clock() + slice_ns if slice_ns else None
        if self.fast_writes and saved is None:  # the one-pass path, else (nothing left applied) the general one
            fast = self._fast
            if fast is None or fast.state is not st:
                fast = self._fast = FastWriter.of(st)
            if fast.stored and len(req.updates) <= STORE_MAX_UPDATES:  # all in the engine's store
                primary = self.arbitration.primary
                if fast.apply(req.SerializeToString() if raw is None else raw, self.device_id, primary.election_id):
                    return pb.WriteResponse()
            decoded = fast.decode(req, raw)
            for i in range(len(decoded) if decoded is not None else -1):
                undo = fast.apply_decoded(decoded.update(i))
                if undo is None:
                    for u in reversed(undos):
                        u()
                    undos = []
                    break
                undos.append(undo)
                if t_end is not None and clock() >= t_end:
                    yield
                    t_end = clock() + slice_ns
            else:
                if decoded is not None:
                    return pb.WriteResponse()
        for i, update in enumerate(req.updates):
            try:
                undos.append(apply_update(st, update))
                if saved is not None:  # a fast-decoded update (wire.py) is parsed for the log
                    saved.log.append(update.to_pb() if hasattr(update, "to_pb") else _copy(update))
            except StateError as e:
                failures[i] = e
                if atomic:
                    break
            if t_end is not None and clock() >= t_end:
                yield  # the binding runs no other Write or pipeline change meanwhile
                t_end = clock() + slice_ns
        if not failures:
            return pb.WriteResponse()
        n = len(req.updates)
        if atomic:
            errors = self._roll_back(undos, failures, n)
        else:
            errors = _error_details(failures, n)
        raise P4RuntimeError(Code.UNKNOWN, f"Write failure: {len(failures)} of {n} update(s) failed", errors)

    def _roll_back(self, undos: list, failures: dict[int, StateError], n: int) -> list[pb.Error]:
        """All-or-none: undo what was applied; the others are reported ABORTED."""
        for undo in reversed(undos):
            undo()
        if self._saved is not None:
            del self._saved.log[len(self._saved.log) - len(undos):]
        (failed,) = failures
        out = _error_details(failures, n)
        aborted = [to_p4_error(Code.ABORTED, f"rolled back: update {failed} failed"),
                   to_p4_error(Code.ABORTED, f"not attempted: update {failed} failed")]
        for i in range(n):
            if i != failed:
                out[i] = aborted[i > failed]
        return out

    def read(self, req: pb.ReadRequest) -> ReadResult:
        return self._read(req, read_entity, lambda chunk: pb.ReadResponse(entities=chunk))

    def read_counter_cells(self, cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """(packets, bytes) of each (counter id, index), for an in-process client: the values a Read
        of those cells answers, without the messages. Why: a simulation reads its switches' drop
        counters every second, and building and reading the messages in pure-Python protobuf cost
        a seventh of its time. A bad id or index raises P4RuntimeError, as :meth:`read` fails."""
        try:
            return counter_cells(self._require_state(), cells)
        except StateError as e:
            raise P4RuntimeError(e.code, e.message) from None

    def counter_cells_reader(self, cells: list[tuple[int, int]]) -> Callable[[], list[tuple[int, int]]]:
        """:meth:`read_counter_cells` of ``cells`` as a call of no arguments, for a client that reads the
        same cells again and again (a switch agent its ports' frame counters every 50 ms): each call
        answers as :meth:`read_counter_cells` would then, from the state a Read addresses then, its
        errors included; the cells are found again only when that state is another (a pipeline
        pushed). Why: finding them was most of a read's cost (reads.counter_cell_refs)."""
        kept: list[tuple[RuntimeState, list[CellRef]]] = []

        def read() -> list[tuple[int, int]]:
            st = self._require_state()
            if not kept or kept[0][0] is not st:
                try:
                    refs = counter_cell_refs(st, cells)
                except StateError as e:
                    raise P4RuntimeError(e.code, e.message) from None
                kept[:] = [(st, refs)]
            return read_cell_refs(kept[0][1])

        return read

    def read_keyed_wire(self, raw: bytes) -> bytes | None:
        """A ReadRequest's bytes answered by the engine's entry store (``FastWriter.read_keyed``:
        one entry of a plain table by its whole key, nothing else asked): the one ReadResponse's
        bytes :meth:`read_wire` would answer; None, nothing read, for :meth:`read_wire` to take
        the request (any other Read, and every error)."""
        if not self.fast_writes or self._saved is not None:
            return None
        st = self.state
        if st is None:
            return None
        fast = self._fast
        if fast is None or fast.state is not st:
            fast = self._fast = FastWriter.of(st)
        return fast.read_keyed(raw, self.device_id)

    def read_wire(self, req: pb.ReadRequest) -> ReadResult:
        """:meth:`read` with each ReadResponse already serialised (bytes): the gRPC server's path."""
        return self._read(req, read_entity_wire, read_response)

    def _read(self, req: pb.ReadRequest, reader: Callable[[RuntimeState, pb.Entity, int], list[Any]],
              response: Callable[[list[Any]], Any]) -> ReadResult:
        self._check_device(req.device_id)
        check_role(req.role)
        st = self._require_state()
        now = self.now_ns()
        entities: list[Any] = []
        failures: dict[int, StateError] = {}  # the p4.v1.Error details are built only when one failed
        for i, ent in enumerate(req.entities):
            try:
                entities += reader(st, ent, now)
            except StateError as e:
                failures[i] = e
        if len(entities) <= READ_CHUNK:
            responses = [response(entities)]
        else:
            responses = [response(entities[i:i + READ_CHUNK]) for i in range(0, len(entities), READ_CHUNK)]
        err = None
        if failures:
            n = len(req.entities)
            errors = [to_p4_error(e.code, e.message) if e is not None else to_p4_error(Code.OK)
                      for e in map(failures.get, range(n))]
            err = P4RuntimeError(Code.UNKNOWN, f"Read failure: {len(failures)} of {n} request(s) failed", errors)
        return ReadResult(responses, err)

    # ---------------------------------------------------- pipeline config

    def _verify(self, req: FPC) -> RuntimeState:
        if not req.HasField("config") or not req.config.HasField("p4info"):
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"{FPC.Action.Name(req.action)} needs a config with a P4Info")
        try:
            state = self.state_factory(req.config.p4info)
        except StateError as e:
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"P4Info rejected: {e.message}") from None
        verify = getattr(self.device, "verify_pipeline", None)
        if verify is not None:
            try:
                verify(req.config.p4info, req.config.p4_device_config)
            except PipelineLoadError as e:
                raise P4RuntimeError(Code.INVALID_ARGUMENT, f"pipeline rejected by the device: {e}") from None
        return state

    def _commit(self, config: pb.ForwardingPipelineConfig, replay: list[pb.Update]) -> None:
        try:
            self.device.load_pipeline(config.p4info, config.p4_device_config)
        except PipelineLoadError as e:
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"pipeline rejected by the device: {e}") from None
        if self.device.state is None:
            self.device.state = self.state_factory(config.p4info)
        self._config = _copy(config)
        self._saved = None
        for update in replay:  # COMMIT replays the writes made since VERIFY_AND_SAVE
            try:
                apply_update(self.device.state, update)
            except StateError as e:
                log.warning("COMMIT: replayed update refused: %s", e)
        self._attach(self.device.state)

    # ---------------------------------------------------------- streams

    def open_stream(self, send: Callable[[pb.StreamMessageResponse | bytes], None],
                    packet_in: Callable[[bytes, dict[str, int]], None] | None = None,
                    wire: bool = False) -> StreamSession:
        """A stream; ``packet_in`` (in-process clients): packet-ins as ``(payload, {name: int})``;
        ``wire`` (the gRPC server's streams): packet-ins to ``send`` as wire bytes.

        Why the second form: a client in the same process would decode the PacketIn it gets right
        back into these two values, and building the message in pure-Python protobuf cost a fifth
        of a simulation. Why the third: a gRPC stream serialises the message at once, and building
        and serialising it in pure-Python protobuf was a sixth of a netns switch's GIL time at a
        report every 1.25 ms per port (``wire_encode.packet_in_response`` writes the same bytes).
        The checks (names, widths) and the arbitration are the same for all.
        """
        return StreamSession(send, packet_in=packet_in, wire=wire)

    def stream_message(self, s: StreamSession, req: pb.StreamMessageRequest) -> None:
        """One message from a client; raises P4RuntimeError to terminate that stream."""
        if s.closed:
            return
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            self._arbitrate(s, req.arbitration)
        elif kind == "packet":
            self._packet_out(s, req.packet)
        elif kind == "digest_ack":
            self._digest_ack(s, req.digest_ack)
        else:
            err = pb.StreamError(canonical_code=Code.UNIMPLEMENTED, message=f"stream message '{kind}' not supported")
            err.other.other.CopyFrom(req.other)
            s.send(pb.StreamMessageResponse(error=err))

    def close_stream(self, s: StreamSession) -> None:
        if s.closed:
            return
        s.closed = True
        self._unroute_packet_ins()
        self._notify(self.arbitration.remove(s))

    def _arbitrate(self, s: StreamSession, upd: pb.MasterArbitrationUpdate) -> None:
        try:
            self._unroute_packet_ins()
            notify = self.arbitration.update(s, upd)
        except P4RuntimeError:
            self.close_stream(s)
            raise
        self._notify(notify)

    def _notify(self, sessions: list[StreamSession]) -> None:
        for t in sessions:
            upd = pb.MasterArbitrationUpdate(device_id=self.device_id)
            if self.arbitration.election_id_past is not None:
                upd.election_id.CopyFrom(to_uint128(self.arbitration.election_id_past))
            code, message = self.arbitration.status_for(t)
            upd.status.code = int(code)
            upd.status.message = message
            t.send(pb.StreamMessageResponse(arbitration=upd))

    def _stream_error(self, s: StreamSession, code: Code, message: str, packet: pb.PacketOut | None = None,
                      ack: pb.DigestListAck | None = None) -> None:
        err = pb.StreamError(canonical_code=int(code), message=message)
        if packet is not None:
            err.packet_out.packet_out.CopyFrom(packet)
        if ack is not None:
            err.digest_list_ack.digest_list_ack.CopyFrom(ack)
        s.send(pb.StreamMessageResponse(error=err))

    def _packet_out(self, s: StreamSession, pkt: pb.PacketOut) -> None:
        if self.arbitration.primary is not s:
            self._stream_error(s, Code.PERMISSION_DENIED, "only the primary client may send packet-outs", packet=pkt)
            return
        st = self.device.state
        if st is None:
            self._stream_error(s, Code.FAILED_PRECONDITION, "no forwarding pipeline config has been set", packet=pkt)
            return
        try:
            metadata = self._decode_packet_out(st, pkt)
        except StateError as e:
            self._stream_error(s, e.code, e.message, packet=pkt)
            return
        try:
            self.device.packet_out(pkt.payload, metadata)
        except ValueError as e:  # the device refuses this packet (e.g. bad port)
            self._stream_error(s, Code.INVALID_ARGUMENT, f"packet-out refused: {e}", packet=pkt)
        except Exception as e:  # a device bug must not end the controller's session
            log.exception("device.packet_out failed")
            self._stream_error(s, Code.INTERNAL, f"packet-out failed: {type(e).__name__}: {e}", packet=pkt)

    def _decode_packet_out(self, st: RuntimeState, pkt: pb.PacketOut) -> dict[str, int]:
        header = st.packet_out
        fields = header.by_id if header is not None else {}
        out: dict[str, int] = {}
        for md in pkt.metadata:
            f = fields.get(md.metadata_id)
            if f is None:
                raise StateError(Code.INVALID_ARGUMENT, f"packet-out: unknown metadata id {md.metadata_id}")
            if f.name in out:
                raise StateError(Code.INVALID_ARGUMENT, f"packet-out: metadata '{f.name}' given twice")
            out[f.name] = decode_unsigned(md.value, f.bitwidth, f"packet-out metadata '{f.name}'")
        missing = [f.name for f in fields.values() if f.name not in out]
        if missing:
            raise StateError(Code.INVALID_ARGUMENT, f"packet-out: metadata {', '.join(missing)} missing")
        return out

    def _digest_ack(self, s: StreamSession, ack: pb.DigestListAck) -> None:
        if self.arbitration.primary is not s:
            self._stream_error(s, Code.PERMISSION_DENIED, "only the primary client acknowledges digests", ack=ack)
            return
        st = self.device.state
        buf = st.digests.get(ack.digest_id) if st is not None else None
        if buf is None:
            self._stream_error(s, Code.INVALID_ARGUMENT, f"digest ack: unknown digest id {ack.digest_id}", ack=ack)
            return
        buf.ack(ack.list_id)
        self._reschedule()

    # ------------------------------------------------------ device side

    def packet_in(self, payload: bytes, metadata: Mapping[str, int]) -> bool:
        """The pipeline sent a packet to the CPU port; False if no primary took it.

        ``metadata`` maps the packet_in controller header's field names to ints;
        a wrong name or an oversized value is a device bug and raises ValueError.
        """
        primary = self.arbitration.primary
        if primary is None:
            self.dropped_packet_ins += 1
            return False
        self._sync()
        st = self.device.state
        header = st.packet_in if st is not None else None
        fields = header.fields if header is not None else ()
        if len(metadata) != len(fields):
            names = {f.name for f in fields}
            for name in metadata:
                if name not in names:
                    raise ValueError(f"packet_in has no metadata field '{name}'")
        values = self._packet_in_values(header, metadata) if header is not None else {}
        if primary.packet_in is not None:
            primary.packet_in(payload, values)
            return True
        if primary.wire:
            primary.send(packet_in_response(payload, [(f.id, encode_unsigned(values[f.name])) for f in fields]))
            return True
        resp = pb.StreamMessageResponse()  # filled in place: no copy of a finished PacketIn
        msg = resp.packet
        msg.payload = payload
        add = msg.metadata.add
        for f in fields:
            m = add()
            m.metadata_id = f.id
            m.value = encode_unsigned(values[f.name])
        primary.send(resp)
        return True

    def split_packet_in(self, payload: bytes, metadata: dict[str, int]) -> bool:
        """:meth:`packet_in` of metadata the device split off the frame with the packet_in header
        in force (``p4switch.device.split_controller_header``): its names, order and widths are
        that header's by construction, so the checks are left out and the dict is handed on as
        it is (a report comes this way every interval on every link)."""
        primary = self.arbitration.primary
        if primary is None or primary.packet_in is None:
            return self.packet_in(payload, metadata)
        self._sync()
        if self._route is not None:  # the next ones go to the primary straight while this state lasts
            self._route(self._attached, primary.packet_in)
        primary.packet_in(payload, metadata)
        return True

    @classmethod
    def _packet_in_values(cls, header: Any, metadata: Mapping[str, int]) -> dict[str, int]:
        """The header's fields in its order, checked: in C-level passes when all is well (a report
        comes this way every 10 ms per link), field by field to name what is wrong otherwise."""
        try:
            got = tuple(map(metadata.__getitem__, header.names))
            if all(map(operator.lt, got, header.limits)) and (not got or min(got) >= 0):
                return dict(zip(header.names, got))
        except (KeyError, TypeError):
            pass
        return {f.name: cls._packet_in_value(f, metadata) for f in header.fields}

    @staticmethod
    def _packet_in_value(f: Any, metadata: Mapping[str, int]) -> int:
        """The value of controller-header field ``f``, checked (a device bug raises ValueError)."""
        value = metadata.get(f.name)
        if value is None:
            raise ValueError(f"packet_in metadata '{f.name}' missing")
        if not fits_unsigned(value, f.bitwidth):
            raise ValueError(f"packet_in metadata '{f.name}': {value} does not fit bit<{f.bitwidth}>")
        return value

    def poll(self, now_ns: int | None = None) -> int:
        """Send the digest lists that are due to the primary; returns how many left."""
        self._sync()
        st = self.device.state
        if st is None:
            return 0
        now = self.now_ns() if now_ns is None else now_ns
        sent = 0
        for buf in st.digests.values():
            for dl in buf.poll(now):
                sent += self._send_digest(st, dl)
        self._reschedule()
        return sent

    def next_deadline_ns(self) -> int | None:
        st = self.device.state
        if st is None:
            return None
        times = [t for t in (b.next_deadline_ns() for b in st.digests.values()) if t is not None]
        return min(times) if times else None

    def _attach(self, st: RuntimeState) -> None:
        """Watch the new pipeline's digest buffers (their additions may make a list due)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, None
        for buf in st.digests.values():
            buf.listener = self._on_digest
        self._attached = st

    def _on_digest(self, buf: DigestBuffer) -> None:
        cfg = buf.config
        if cfg is not None and (cfg.max_timeout_ns == 0 or 0 < cfg.max_list_size <= buf.pending()):
            self.poll()
        else:
            self._reschedule()

    def _reschedule(self) -> None:
        if self.scheduler is None:
            return
        deadline = self.next_deadline_ns()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, deadline
        if deadline is not None:
            self._timer = self.scheduler.call_at(max(deadline, self.now_ns()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, None
        self.poll()

    def _send_digest(self, st: RuntimeState, dl: DigestList) -> int:
        primary = self.arbitration.primary
        if primary is None:
            self.dropped_digest_lists += 1
            return 0
        spec = st.digest_specs[dl.digest_id]
        msg = pb.DigestList(digest_id=dl.digest_id, list_id=dl.list_id, timestamp=dl.timestamp_ns)
        try:
            msg.data.extend(encode_p4data(d, spec, st.p4info, f"digest {dl.digest_id}") for d in dl.data)
        except (StateError, TypeError, ValueError) as e:
            log.warning("digest list %d of digest 0x%08x dropped: %s", dl.list_id, dl.digest_id, e)
            self.dropped_digest_lists += 1
            return 0
        primary.send(pb.StreamMessageResponse(digest=msg))
        return 1


#: failing updates beyond this many get their code without a message, so that a large batch's
#: ``grpc-status-details-bin`` stays as small as the specification's one Error per update allows
DETAILED_ERRORS = 100
#: longest message of one update's Error (the rest is cut, with "...")
ERROR_MESSAGE_MAX = 160


def _error_details(failures: dict[int, StateError], n: int) -> list[pb.Error]:
    """One p4.v1.Error per update: OK for the applied ones (shared: no message), the failures'
    codes with short messages (the first DETAILED_ERRORS failures only)."""
    ok = to_p4_error(Code.OK)
    out = [ok] * n
    for rank, (i, e) in enumerate(sorted(failures.items())):
        msg = e.message if rank < DETAILED_ERRORS else ""
        if len(msg) > ERROR_MESSAGE_MAX:
            msg = msg[:ERROR_MESSAGE_MAX - 3] + "..."
        out[i] = to_p4_error(e.code, msg)
    return out


def _copy(msg: Any) -> Any:
    out = type(msg)()
    out.CopyFrom(msg)
    return out
