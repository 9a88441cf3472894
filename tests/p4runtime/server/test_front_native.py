"""Writes and keyed Reads the compiled front end answers with no Python run
(engine/src/p4rt/p4rtnative.rs): where the server lends a ``RealtimeScheduler``'s state, a Write
the engine's entry store takes, and a Read of one of its entries by key, are answered by the
engine on the front end's own threads. The same requests against a server whose Writes go through
``P4RuntimeServer.write_now`` (its ``try_now`` not a RealtimeScheduler's) get the same answers -
successes, every refusal and its details, a primary taken over - and leave the same entries."""

from __future__ import annotations

import threading

import grpc
import hbh_engine
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4switch.device import P4SwitchDevice, PipelineHolder, compile_device_config
from p4switch.p4runtime import P4RuntimeCore
from p4switch.p4runtime.server import P4RuntimeServer
from runtime.sched import RealtimeScheduler
from tests.p4runtime.helpers import Client, compiled_front, route_update
from tests.p4switch.thrift.test_bmv2json_thrift import FIXTURES

pytestmark = pytest.mark.skipif(
    not compiled_front() or not hasattr(getattr(hbh_engine, "TableWritePlan", None), "apply"),
    reason="an engine without the compiled front end or the entry store (make engine)",
)
LPM_TABLE = "RouterIngress.ipv4_lpm"


class _Switch:
    """An engine-backed basic_forward switch whose loop is a started RealtimeScheduler, served
    by the compiled front end; ``native``: the server lends through the scheduler's ``try_now``
    itself (else through a ``try_now`` made of its ``try_call``: the Python path)."""

    def __init__(self, native: bool) -> None:
        self.holder = PipelineHolder()
        device = P4SwitchDevice(self.holder, inject=lambda port, frame: None, cpu_port=None, seed=1)
        device.install(compile_device_config((FIXTURES / "basic_forward.json").read_bytes()))
        self.core = P4RuntimeCore(device, device_id=1)
        Client(self.core).arbitrate(10)  # an in-process primary with election id 10
        self.sched = RealtimeScheduler()
        self.sched.start()
        self.srv = P4RuntimeServer(self.core, address="127.0.0.1:0", front="compiled", submit=self.sched.submit,
                                   try_call=self.sched.try_call, try_now=self.sched.try_now if native else None)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.srv.start()}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.streams: list[threading.Event] = []
        self.open: list = []

    def ids(self) -> tuple[int, int]:
        st = self.holder.state
        return st.tables_by_name[LPM_TABLE].id, st.actions_by_name["RouterIngress.set_nhop"].id

    def write(self, election: int, *updates: pb.Update) -> tuple:
        req = pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=election), updates=updates)
        try:
            return ("ok", self.stub.Write(req, timeout=30).SerializeToString())
        except grpc.RpcError as e:
            return (e.code(), e.details(), dict(e.trailing_metadata() or ()).get("grpc-status-details-bin"))

    def read(self, te: pb.TableEntry) -> tuple:
        try:
            return ("ok", [r.SerializeToString() for r in self.stub.Read(
                pb.ReadRequest(device_id=1, entities=[pb.Entity(table_entry=te)]), timeout=30)])
        except grpc.RpcError as e:
            return (e.code(), e.details())

    def take_primary(self, election: int) -> int:
        """A StreamChannel client with this election id (it stays open); its arbitration answer's code."""
        done = threading.Event()
        self.streams.append(done)

        def requests():
            yield pb.StreamMessageRequest(arbitration=pb.MasterArbitrationUpdate(
                device_id=1, election_id=pb.Uint128(low=election)))
            done.wait(60)

        stream = self.stub.StreamChannel(requests())
        self.open.append(stream)  # a stream dropped is cancelled: its client leaves
        return next(stream).arbitration.status.code

    def close(self) -> None:
        for done in self.streams:
            done.set()
        self.channel.close()
        self.srv.stop(grace=0.5)
        self.sched.stop()


def _update(sw: _Switch, kind: int, prefix: int, plen: int, port: int | None) -> pb.Update:
    tid, nhop = sw.ids()
    return route_update(tid, nhop, kind, prefix, plen, port)


def _key(sw: _Switch, prefix: int, plen: int) -> pb.TableEntry:
    return _update(sw, pb.Update.DELETE, prefix, plen, None).entity.table_entry


def _session(sw: _Switch) -> list:
    """The same requests, in order, and everything they answered."""
    INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
    out = [
        sw.write(10, _update(sw, INSERT, 0x0A000000, 8, 2)),
        sw.write(10, _update(sw, INSERT, 0x0A000000, 8, 3)),  # ALREADY_EXISTS
        sw.write(10, _update(sw, MODIFY, 0x0A000000, 8, 5)),
        sw.write(10, *(_update(sw, INSERT, (11 + i) << 24, 8, i + 1) for i in range(3))),
        sw.write(11, _update(sw, INSERT, 0x20000000, 8, 1)),  # not the primary's election id
        sw.write(10, _update(sw, DELETE, 0x30000000, 8, None)),  # NOT_FOUND
        sw.write(10, _update(sw, INSERT, 0x0E000000, 8, 1), _update(sw, INSERT, 0x0B000000, 8, 2)),  # half fails
        sw.write(10, _update(sw, DELETE, 0x0C000000, 8, None)),
        sw.write(10, _update(sw, INSERT, 0x0C000000, 8, 9)),  # the key again, a new handle
        sw.read(_key(sw, 0x0A000000, 8)),
        sw.read(_key(sw, 0x0C000000, 8)),
        sw.read(_key(sw, 0x0C000000, 16)),  # no such entry
        sw.read(_key(sw, 0x40000000, 8)),
        sw.take_primary(20),
        sw.write(10, _update(sw, INSERT, 0x50000000, 8, 1)),  # the old primary's id: refused
        sw.write(20, _update(sw, INSERT, 0x50000000, 8, 1)),
        sw.read(pb.TableEntry(table_id=sw.ids()[0])),  # the whole table
    ]
    def entries() -> list:
        table = sw.holder.state.tables_by_name[LPM_TABLE]
        return sorted((e.priority, repr(e.match), e.action.action_id, e.action.params, e._handle) for e in table)

    out.append(sw.sched.run_sync(entries))  # the Python state, on the switch loop
    return out


def test_native_answers_are_the_python_paths() -> None:
    native, python = _Switch(native=True), _Switch(native=False)
    try:
        got, want = _session(native), _session(python)
        assert got == want
        assert want[0] == ("ok", b"") and want[1][0] == grpc.StatusCode.UNKNOWN  # the requests did what they say
        assert want[14][0] == grpc.StatusCode.PERMISSION_DENIED and len(want[-1]) == 6
        # the engine answered the successful plain Writes and the keyed Reads of stored entries there
        assert native.srv._front.native_answers >= 8
        assert python.srv._front.native_answers == 0
    finally:
        native.close()
        python.close()
