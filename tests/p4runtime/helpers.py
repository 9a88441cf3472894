"""Sans-I/O clients of P4RuntimeCore and protobuf builders for tests."""

from __future__ import annotations

import heapq
from collections.abc import Callable

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import Code, NullDevice, P4RuntimeCore, P4RuntimeError
from tests.p4runtime.p4info_builder import demo_p4info

FPC = pb.SetForwardingPipelineConfigRequest


def b(value: int) -> bytes:
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


class FakeScheduler:
    """Virtual time: call_at events run when the test advances the clock."""

    def __init__(self) -> None:
        self.t = 0
        self._heap: list = []
        self._seq = 0

    def now_ns(self) -> int:
        return self.t

    def call_at(self, t_ns: int, fn: Callable, *args):
        self._seq += 1
        ev = [t_ns, self._seq, fn, args, False]
        heapq.heappush(self._heap, ev)

        class H:
            def cancel(self_inner) -> None:
                ev[4] = True
        return H()

    def advance(self, to_ns: int) -> None:
        while self._heap and self._heap[0][0] <= to_ns:
            t, _, fn, args, cancelled = heapq.heappop(self._heap)
            self.t = max(self.t, t)
            if not cancelled:
                fn(*args)
        self.t = to_ns


class Client:
    """A stream session on the core; received messages are kept by kind."""

    def __init__(self, core: P4RuntimeCore) -> None:
        self.core = core
        self.received: list[pb.StreamMessageResponse] = []
        self.session = core.open_stream(self.received.append)
        self.election_id: tuple[int, int] | None = None

    def arbitrate(self, low: int | None, high: int = 0, device_id: int | None = None) -> None:
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = self.core.device_id if device_id is None else device_id
        if low is not None:
            req.arbitration.election_id.high = high
            req.arbitration.election_id.low = low
            self.election_id = (high, low)
        self.core.stream_message(self.session, req)

    def of(self, kind: str) -> list:
        return [getattr(m, kind) for m in self.received if m.WhichOneof("update") == kind]

    def last_status(self) -> int:
        return self.of("arbitration")[-1].status.code

    def _stamp(self, req):
        req.device_id = self.core.device_id
        if self.election_id is not None:
            req.election_id.high, req.election_id.low = self.election_id
        return req

    def set_pipeline(self, p4info, action=FPC.VERIFY_AND_COMMIT, device_config=b"cfg", cookie=None):
        req = self._stamp(FPC(action=action))
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.core.set_forwarding_pipeline_config(req)

    def write(self, *updates: pb.Update, atomicity: int = 0) -> pb.WriteResponse:
        req = self._stamp(pb.WriteRequest(atomicity=atomicity))
        req.updates.extend(updates)
        return self.core.write(req)

    def read(self, *entities: pb.Entity) -> list[pb.Entity]:
        result = self.core.read(pb.ReadRequest(device_id=self.core.device_id, entities=entities))
        if result.error is not None:
            raise result.error
        return [e for r in result.responses for e in r.entities]

    def packet_out(self, payload: bytes, **metadata: int) -> None:
        st = self.core.device.state
        req = pb.StreamMessageRequest()
        req.packet.payload = payload
        for name, value in metadata.items():
            req.packet.metadata.add(metadata_id=st.packet_out.by_name[name].id, value=b(value))
        self.core.stream_message(self.session, req)


def update(kind: int, **entity) -> pb.Update:
    return pb.Update(type=kind, entity=pb.Entity(**entity))


def insert(**entity) -> pb.Update:
    return update(pb.Update.INSERT, **entity)


def modify(**entity) -> pb.Update:
    return update(pb.Update.MODIFY, **entity)


def delete(**entity) -> pb.Update:
    return update(pb.Update.DELETE, **entity)


def error_codes(exc: P4RuntimeError) -> list[int]:
    return [e.canonical_code for e in exc.details]


def raises_code(code: Code, fn, *args, **kwargs) -> P4RuntimeError:
    with pytest.raises(P4RuntimeError) as exc:
        fn(*args, **kwargs)
    assert exc.value.code == code, exc.value
    return exc.value


def setup_core(scheduler=None):
    """A core on a NullDevice, the demo pipeline pushed by a primary client."""
    p4info, ids = demo_p4info()
    device = NullDevice()
    core = P4RuntimeCore(device, device_id=1, scheduler=scheduler)
    primary = Client(core)
    primary.arbitrate(10)
    primary.set_pipeline(p4info, cookie=42)
    return core, device, primary, p4info, ids


def compiled_front() -> bool:
    """Whether this build's engine carries the compiled P4Runtime front end (``front_kind("compiled")``)."""
    from p4switch.p4runtime.server import front_kind  # noqa: PLC0415 (the server module starts nothing on import)

    try:
        front_kind("compiled")
    except RuntimeError:
        return False
    return True


def route_update(tid: int, nhop: int, kind: int, prefix: int, plen: int, port: int | None) -> pb.Update:
    """An ``ipv4_lpm`` entry of the router fixture's table ``tid`` (``set_nhop``'s id ``nhop``): ``prefix/plen``
    to ``port`` (None: the match alone, as a DELETE sends it)."""
    te = pb.TableEntry(table_id=tid)
    te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(prefix), prefix_len=plen))
    if port is not None:
        te.action.action.action_id = nhop
        te.action.action.params.add(param_id=1, value=b(0x020000000002))
        te.action.action.params.add(param_id=2, value=b(port))
    return pb.Update(type=kind, entity=pb.Entity(table_entry=te))
