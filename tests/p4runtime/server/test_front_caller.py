"""The compiled P4Runtime front end's caller thread (engine/src/p4rt/p4rtfront.rs, ``Caller``):
the short calls (``write_now``, ``read_now``) run there one at a time, and a call that finds it
busy takes the blocking threads' path (``read_bytes``, ``write_bytes``) instead of waiting."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4switch.p4runtime import NullDevice, P4RuntimeCore
from p4switch.p4runtime.server import P4RuntimeServer
from tests.p4runtime.helpers import b, compiled_front
from tests.p4runtime.p4info_builder import demo_p4info

COMPILED = compiled_front()

FPC = pb.SetForwardingPipelineConfigRequest


def _lend(fn):
    """``try_call`` of an idle switch loop: the call runs at once on the caller's thread."""
    future: Future = Future()
    future.set_result(fn())
    return future


def _entry(ids) -> pb.TableEntry:
    te = pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])
    te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(0x0A000000), prefix_len=24))
    te.action.action.action_id = ids["MyIngress.forward"]
    te.action.action.params.add(param_id=1, value=b(2))
    te.action.action.params.add(param_id=2, value=b(0xAABB))
    return te


@pytest.mark.skipif(not COMPILED, reason="the engine was built without the compiled front end (make engine)")
def test_a_read_meanwhile_a_short_write_is_answered_without_waiting_for_it() -> None:
    core = P4RuntimeCore(NullDevice(), device_id=1)
    srv = P4RuntimeServer(core, address="127.0.0.1:0", front="compiled", try_call=_lend)
    entered, release, done = threading.Event(), threading.Event(), threading.Event()
    write_now, read_now = srv.write_now, srv.read_now
    read_now_calls: list[bytes] = []

    def held_write_now(raw: bytes):
        entered.set()
        release.wait(30)
        return write_now(raw)

    def counted_read_now(raw: bytes):
        read_now_calls.append(raw)
        return read_now(raw)

    srv.write_now, srv.read_now = held_write_now, counted_read_now  # what start() hands the front end
    port = srv.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    out: dict = {}
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        p4info, ids = demo_p4info()
        el = pb.Uint128(low=10)
        requests = iter([pb.StreamMessageRequest(arbitration=pb.MasterArbitrationUpdate(device_id=1, election_id=el))])
        stream = stub.StreamChannel(_then_block(requests, done))
        assert next(stream).arbitration.status.code == 0
        config = pb.ForwardingPipelineConfig(p4info=p4info, p4_device_config=b"cfg")
        stub.SetForwardingPipelineConfig(
            FPC(device_id=1, election_id=el, action=FPC.VERIFY_AND_COMMIT, config=config), timeout=30
        )
        te = _entry(ids)
        insert = pb.WriteRequest(
            device_id=1, election_id=el, updates=[pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te))]
        )
        writer = threading.Thread(target=lambda: out.update(write=stub.Write(insert, timeout=30)))
        writer.start()
        assert entered.wait(30)
        keyed = pb.ReadRequest(
            device_id=1, entities=[pb.Entity(table_entry=pb.TableEntry(table_id=te.table_id, match=te.match))]
        )
        # the Write holds the caller thread: the Read is answered all the same, by read_bytes
        assert [len(r.entities) for r in stub.Read(keyed, timeout=30)] == [0]
        assert read_now_calls == []
        release.set()
        writer.join(30)
        assert out["write"] == pb.WriteResponse()
        # the caller thread free again: read_now answers, and sees the entry
        assert [len(r.entities) for r in stub.Read(keyed, timeout=30)] == [1]
        assert len(read_now_calls) == 1
    finally:
        release.set()
        done.set()
        channel.close()
        srv.stop(grace=0.5)



def _then_block(first, until: threading.Event):
    """The stream's requests: ``first``'s, then none until ``until`` (the stream stays open)."""
    yield from first
    until.wait(60)
