"""simple_switch's per-priority queue calls: the agents' client and p4switch's server, on BMv2's wire format."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TTransport

from bmv2_thrift import priority_queues
from controlplane.queues import QueueError, connect, in_process
from p4switch.thrift_server import ThriftServer, in_process_processor
from p4switch.tm import TrafficManager
from runtime.sched import RealtimeScheduler, VirtualScheduler


@pytest.fixture
def tm() -> TrafficManager:
    return TrafficManager(VirtualScheduler(), lambda port, item: 0, num_priorities=4)


def test_one_priority_queue_gets_its_own_rate_and_depth(tm: TrafficManager) -> None:
    q = in_process(in_process_processor(tm, lambda: 0))
    q.set_queue_rate(2, 300, priority=3)
    q.set_queue_depth(2, 17, priority=1)
    assert tm.queue_rate(2, 3) == 300 and tm.queue_rate(2, 0) == tm.queue_rate(2, 2) == 0
    assert tm.queue_depth_limit(2, 1) == 17 and tm.queue_depth_limit(2, 0) == 64
    q.set_queue_rate(2, 50)  # the per-port call still sets every priority
    assert {tm.queue_rate(2, p) for p in range(4)} == {50}


def test_a_priority_the_switch_lacks_is_a_clear_error(tm: TrafficManager) -> None:
    q = in_process(in_process_processor(tm, lambda: 0))
    with pytest.raises(QueueError, match=r"set_egress_priority_queue_rate\(port=2, priority=4, rate=10\).*"
                                         r"priority 4 out of range 0..3"):
        q.set_queue_rate(2, 10, priority=4)
    with pytest.raises(QueueError, match="port=511.*drop port"):
        q.set_queue_depth(511, 10, priority=0)


def test_the_call_is_bmv2s_message_field_for_field() -> None:
    """Field ids and types as simple_switch.thrift declares them (rate_pps is an i64): what a real
    simple_switch decodes."""
    buf = TTransport.TMemoryBuffer()
    proto = TBinaryProtocol.TBinaryProtocol(buf)
    priority_queues.write_args(proto, "set_egress_priority_queue_rate", (3, 2, 2**40))
    read = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(buf.getvalue()))
    read.readStructBegin()
    fields = []
    while True:
        _name, ftype, fid = read.readFieldBegin()
        if ftype == TType.STOP:
            break
        fields.append((fid, ftype, read.readI64() if ftype == TType.I64 else read.readI32()))
    assert fields == [(1, TType.I32, 3), (2, TType.I32, 2), (3, TType.I64, 2**40)]


def test_an_argument_of_the_wrong_type_is_refused_by_name(tm: TrafficManager) -> None:
    """A client with another idea of the IDL (rate as i32) gets an error naming the argument, not a
    call with a missing value."""
    request = TTransport.TMemoryBuffer()
    out = TBinaryProtocol.TBinaryProtocol(request)
    out.writeMessageBegin("set_egress_priority_queue_rate", TMessageType.CALL, 1)
    out.writeStructBegin("args")
    for fid, value in ((1, 2), (2, 1), (3, 5)):
        out.writeFieldBegin("f", TType.I32, fid)
        out.writeI32(value)
        out.writeFieldEnd()
    out.writeFieldStop()
    out.writeStructEnd()
    out.writeMessageEnd()
    response = TTransport.TMemoryBuffer()
    proc = priority_queues.Processor(type("H", (), {"set_egress_priority_queue_rate": lambda *a: 0})())
    proc.process(TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(request.getvalue())),
                 TBinaryProtocol.TBinaryProtocol(response))
    answer = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(response.getvalue()))
    _name, mtype, _seq = answer.readMessageBegin()
    assert mtype == TMessageType.EXCEPTION
    exc = TApplicationException()
    exc.read(answer)
    assert "rate_pps missing or of the wrong type" in exc.message


@pytest.fixture
def server() -> Iterator[tuple[ThriftServer, TrafficManager, RealtimeScheduler]]:
    sched = RealtimeScheduler()
    tm = TrafficManager(sched, lambda port, item: 0, num_priorities=3)
    srv = ThriftServer("127.0.0.1", 0, tm=tm, run_in_loop=sched.run_sync, clock=sched.now_ns,
                       epoch_ns=sched.wall_origin_ns)
    sched.start()
    srv.start()
    try:
        yield srv, tm, sched
    finally:
        srv.stop()
        sched.stop()


def test_over_tcp_the_agents_client_sets_one_priority(server) -> None:
    srv, tm, sched = server
    q = connect("127.0.0.1", srv.port)
    try:
        q.set_queue_rate(4, 1234, priority=2)
        q.set_queue_depth(4, 9, priority=2)
    finally:
        q.close()
    assert sched.run_sync(tm.queue_rate, 4, 2) == 1234 and sched.run_sync(tm.queue_rate, 4, 1) == 0
    assert sched.run_sync(tm.queue_depth_limit, 4, 2) == 9


def test_p4switch_cli_sets_one_priority_queue_with_a_third_argument(server) -> None:
    srv, tm, sched = server
    cli = Path(sys.executable).parent / "p4switch-cli"
    r = subprocess.run([str(cli), "--thrift-port", str(srv.port)], capture_output=True, text=True, timeout=60,
                       input="set_queue_rate 100 2 1\nset_queue_depth 9 2 2\nset_queue_rate 7 2 5\nset_queue_rate 40 3\n")
    assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, r.stderr
    assert sched.run_sync(tm.queue_rate, 2, 1) == 100 and sched.run_sync(tm.queue_rate, 2, 0) == 0
    assert sched.run_sync(tm.queue_depth_limit, 2, 2) == 9
    assert "priority 5 out of range 0..2" in r.stdout  # one line, and the CLI went on
    assert {sched.run_sync(tm.queue_rate, 3, p) for p in range(3)} == {40}
