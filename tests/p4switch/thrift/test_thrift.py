"""BMv2 Thrift server: the real simple_switch_CLI drives the traffic manager."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bm_runtime.simple_pre_lag import SimplePreLAG
from bm_runtime.standard import Standard
from bm_runtime.standard.ttypes import InvalidTableOperation, TableOperationErrorCode
from sswitch_runtime import SimpleSwitch
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport

from p4switch.thrift_server import ThriftServer
from p4switch.tm import TrafficManager
from runtime.sched import RealtimeScheduler

CLI = Path(sys.executable).parent / "simple_switch_CLI"
P4SWITCH_CLI = Path(sys.executable).parent / "p4switch-cli"


class Switch:
    def __init__(self) -> None:
        self.sched = RealtimeScheduler()
        self.tm = TrafficManager(self.sched, lambda port, item: 0)
        self.server = ThriftServer("127.0.0.1", 0, tm=self.tm, run_in_loop=self.sched.run_sync,
                                   clock=self.sched.now_ns, epoch_ns=self.sched.wall_origin_ns)

    def on_loop(self, fn, *args):
        return self.sched.run_sync(fn, *args)

    def cli(self, commands: str, cli: Path = CLI) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(cli), "--thrift-port", str(self.server.port)], input=commands,
                              capture_output=True, text=True, timeout=60)


@pytest.fixture
def switch() -> Iterator[Switch]:
    sw = Switch()
    sw.sched.start()
    sw.server.start()
    try:
        yield sw
    finally:
        sw.server.stop()
        sw.sched.stop()


def client(port: int, service: str, cls):
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
    proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport), service)
    transport.open()
    return cls.Client(proto), transport


def test_cli_sets_queue_rate_and_depth(switch: Switch) -> None:
    r = switch.cli("set_queue_rate 100 2\nset_queue_depth 16 3\n")
    assert r.returncode == 0, r.stderr
    assert "Obtaining JSON from switch" in r.stdout
    assert switch.on_loop(switch.tm.queue_rate, 2) == 100
    assert switch.on_loop(switch.tm.queue_depth_limit, 3) == 16
    assert switch.on_loop(switch.tm.queue_rate, 3) == 0  # untouched
    assert switch.on_loop(switch.tm.queue_depth_limit, 2) == 64

    r = switch.cli("set_queue_rate 50\n")
    assert r.returncode == 0, r.stderr
    for port in (0, 2, 3, 511):
        assert switch.on_loop(switch.tm.queue_rate, port) == 50


def test_cli_out_of_range_port_is_a_clear_error(switch: Switch) -> None:
    r = switch.cli("set_queue_depth 16 600\n")
    out = r.stdout + r.stderr
    assert "set_egress_queue_depth(port=600, depth=16): egress port 600 out of range 0..511" in out
    assert switch.on_loop(switch.tm.queue_depth_limit, 0) == 64


def test_cli_unsupported_calls_are_reported_and_cli_keeps_going(switch: Switch) -> None:
    r = switch.cli("mc_mgrp_create 1\nshow_ports\nset_queue_depth 20 4\n")
    assert "Invalid PRE operation (ERROR)" in r.stdout
    assert "Invalid device manager operation (ERROR)" in r.stdout
    assert switch.on_loop(switch.tm.queue_depth_limit, 4) == 20

    r = switch.cli("mirroring_add 1 2\nset_queue_depth 21 4\n")
    assert "Invalid mirroring operation (SESSION_NOT_FOUND)" in r.stdout  # one line, no traceback
    assert "Traceback" not in r.stderr
    assert switch.on_loop(switch.tm.queue_depth_limit, 4) == 21  # the CLI kept going


def test_queue_calls_on_the_drop_port_are_refused(switch: Switch) -> None:
    for cmd in ("set_queue_rate 100 511\n", "set_queue_depth 10 511\n"):
        r = switch.cli(cmd)
        assert "port 511 is the drop port" in r.stdout + r.stderr
    assert switch.on_loop(switch.tm.queue_rate, 511) == 0


def test_p4switch_cli_prints_refused_queue_calls_as_one_line_and_goes_on(switch: Switch) -> None:
    """The stock CLI stops at the first refusal with a traceback (the IDL declares no
    exception for the queue calls); p4switch-cli is that CLI with one line instead."""
    refused = ["set_queue_rate -5 1", "set_queue_rate 100 511", "set_queue_depth 10 600"]
    r = switch.cli("\n".join([*refused, "set_queue_depth 12 1", ""]), cli=P4SWITCH_CLI)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    errors = [line for line in r.stdout.splitlines() if "Error: " in line]
    assert len(errors) == len(refused), r.stdout
    for line, fragment in zip(errors, ("queue rate -5 must be", "port 511 is the drop port", "port 600 out of range")):
        assert fragment in line
    assert switch.on_loop(switch.tm.queue_depth_limit, 1) == 12  # the commands after them ran
    assert switch.on_loop(switch.tm.queue_rate, 1) == 0

    stock = switch.cli("set_queue_rate -5 1\nset_queue_depth 13 1\n")
    assert "Traceback" in stock.stderr  # why p4switch-cli exists: the stock CLI stops here
    assert switch.on_loop(switch.tm.queue_depth_limit, 1) == 12


def test_cli_reads_switch_clock(switch: Switch) -> None:
    r = switch.cli("get_time_elapsed\n")
    values = [int(tok) for tok in r.stdout.split() if tok.isdigit()]
    assert values, r.stdout
    assert 0 < values[0] <= switch.sched.now_ns() // 1000


def test_standard_config_and_clock_over_thrift(switch: Switch) -> None:
    std, t1 = client(switch.server.port, "standard", Standard)
    ss, t2 = client(switch.server.port, "simple_switch", SimpleSwitch)
    try:
        cfg = std.bm_get_config()
        doc = json.loads(cfg)
        assert doc["pipelines"] == [] and doc["actions"] == []
        assert std.bm_get_config_md5() == hashlib.md5(cfg.encode()).digest()
        since_epoch = ss.get_time_since_epoch_us()
        assert abs(since_epoch - time.time_ns() // 1000) < 2_000_000
        with pytest.raises(InvalidTableOperation) as e:
            std.bm_mt_get_num_entries(0, "ingress.t")
        assert e.value.code == TableOperationErrorCode.ERROR
        with pytest.raises(TApplicationException, match="bm_mgmt_get_info is not supported by p4switch"):
            std.bm_mgmt_get_info()
    finally:
        t1.close()
        t2.close()


def test_bad_rate_over_thrift_names_the_call(switch: Switch) -> None:
    ss, t = client(switch.server.port, "simple_switch", SimpleSwitch)
    try:
        with pytest.raises(TApplicationException, match=r"set_all_egress_queue_rates\(rate=-5\).*queue rate -5"):
            ss.set_all_egress_queue_rates(-5)
        assert ss.set_egress_queue_rate(9, 1234) == 0
        assert switch.on_loop(switch.tm.queue_rate, 9) == 1234
    finally:
        t.close()


def test_pre_lag_answers_invalid_mc_operation(switch: Switch) -> None:
    pre, t = client(switch.server.port, "simple_pre_lag", SimplePreLAG)
    try:
        with pytest.raises(SimplePreLAG.InvalidMcOperation):
            pre.bm_mc_mgrp_create(0, 1)
    finally:
        t.close()


def test_stop_is_prompt_with_a_connected_client() -> None:
    sw = Switch()
    sw.sched.start()
    sw.server.start()
    _std, t = client(sw.server.port, "standard", Standard)
    try:
        accepted_by = time.monotonic() + 30
        while not sw.server._clients and time.monotonic() < accepted_by:
            time.sleep(0.01)
        threads = [thread for _conn, thread in sw.server._clients.items()]
        assert threads, "the client's connection was not accepted"
        t0 = time.monotonic()
        sw.server.stop(timeout=60)
        # prompt: the server closed the client's connection and its thread ended (a stop that waited
        # for the client to leave would have run out its whole timeout with the thread alive)
        assert not any(thread.is_alive() for thread in threads)
        assert sw.server._acceptor is None or not sw.server._acceptor.is_alive()
        assert time.monotonic() - t0 < 60
    finally:
        t.close()
        sw.sched.stop()
