"""Where a netns host's kernel TCP endpoints run (topo/netns/tcp_ends.py): threads by default; a child
process on request, bounded and cleaned up; a bad ``HBH_TCP_ENDS`` refused by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.paths import ROOT
from topo.file.schema import load_topology
from topo.netns import tcp_ends
from topo.netns.tcp_ends import TcpEnds, TcpEndsProcess, open_tcp_ends

TOPO = load_topology(ROOT / "topo/tcp-1router.yaml")
FLOWS = {1: TOPO.flows[0]}  # t1: H1 -> H2


def _sender_only(duration_ns: int) -> TcpEndsProcess:
    """H1's ends (one sender, no listener), its run's time 0 a minute away: it never connects."""
    ends = TcpEndsProcess(TOPO, "H1", FLOWS, {1: None})
    ends.start(time.monotonic_ns() + 60_000_000_000, duration_ns, {})
    return ends


def test_the_child_process_hands_back_its_results_when_stopped_and_ends() -> None:
    ends = _sender_only(300_000_000)
    try:
        assert ends.proc.is_alive() and ends.pid == ends.proc.pid
        assert ends.sent() == {"t1": 0} and ends.received() == {}
        res = ends.results()
        assert res["flows"]["t1"]["bytes_sent"] == 0 and res["flows"]["t1"]["sender_error"] is None, res
        assert res["rows"] == {} and res["samples"] == [] and res["send_times"] == []
        assert ends.results() is res  # asked once
    finally:
        ends.close()
    assert not ends.proc.is_alive()


def test_the_child_ends_when_the_hosts_pipe_closes() -> None:
    ends = _sender_only(60_000_000_000)  # only the closed pipe ends it before two minutes
    ends.conn.close()
    ends.proc.join(10)
    assert not ends.proc.is_alive()


def test_a_child_gone_before_its_results_is_each_flows_error() -> None:
    ends = _sender_only(60_000_000_000)
    ends.proc.kill()
    ends.proc.join(10)
    res = ends.results()
    assert "no TCP results" in res["flows"]["t1"]["sender_error"] and res["rows"] == {}, res
    ends.close()


def test_a_child_that_dies_before_ready_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcp_ends, "READY_TIMEOUT_S", 0.01)
    with pytest.raises(RuntimeError, match="no 'ready' from the TCP endpoints process"):
        TcpEndsProcess(TOPO, "H1", FLOWS, {1: None})


def test_the_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tcp_ends.ENV, raising=False)
    ends = open_tcp_ends(TOPO, "H1", FLOWS, {1: None})
    assert isinstance(ends, TcpEnds)  # the default
    ends.close()
    monkeypatch.setenv(tcp_ends.ENV, "process")
    ends = open_tcp_ends(TOPO, "H1", FLOWS, {1: None})
    assert isinstance(ends, TcpEndsProcess)
    ends.close()
    monkeypatch.setenv(tcp_ends.ENV, "fork")
    with pytest.raises(ValueError, match="HBH_TCP_ENDS='fork': not one of thread, process"):
        open_tcp_ends(TOPO, "H1", FLOWS, {1: None})


# ---- root: both ends, each in its own child process, over a namespace's loopback ---------------------------
TWO_ENDS = """
import time
from topo.file.schema import load_topology_text
from topo.netns.tcp_ends import TcpEndsProcess
text = open("topo/tcp-1router.yaml").read().replace("start: 0s}", "start: 0s, size: 300kB}")
topo = load_topology_text(text, "tcp-1router.yaml")
flows = {1: topo.flows[0]}
rx = TcpEndsProcess(topo, "H2", flows, {1: None})
tx = TcpEndsProcess(topo, "H1", flows, {1: "reno"})
t0 = time.monotonic_ns() + 200_000_000
for ends in (rx, tx):
    ends.start(t0, 1_500_000_000, {})
time.sleep(1.8)
sent, received = tx.sent(), rx.received()
out, got = tx.results(), rx.results()
for ends in (rx, tx):
    ends.close()
    assert not ends.proc.is_alive()
records = len(got["rows"]["t1"])
assert out["flows"]["t1"]["bytes_sent"] == got["flows"]["t1"]["bytes_received"] == 300_000, (out, got)
assert sent == {"t1": out["flows"]["t1"]["records_sent"]} and received[1][0] == records > 200, (sent, received)
assert received[1][1] == sum(r - s for _q, s, r in got["rows"]["t1"]) > 0
assert out["samples"] and out["flows"]["t1"]["sack"] is True
print("ok")
"""


@pytest.mark.netns
def test_two_child_processes_carry_a_sized_flow_over_loopback() -> None:
    """The sockets, the shared counters and the results over the pipe, in an anonymous namespace
    (``unshare --net``: nothing to clean up, the namespace ends with its last process)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1)")
    setup = "ip link set lo up && ip addr add 10.0.1.1/32 dev lo && ip addr add 10.0.3.1/32 dev lo"
    proc = subprocess.run(["unshare", "--net", "sh", "-c", f'{setup} && exec "$0" -c "$1"', sys.executable, TWO_ENDS],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_a_stored_run_says_where_its_ends_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tcp_ends.ENV, raising=False)
    monkeypatch.delenv(tcp_ends.RAISE_ENV, raising=False)
    assert tcp_ends.mode() == "thread" and tcp_ends.describe() == "threads of the host process"
    monkeypatch.setenv(tcp_ends.ENV, "process")
    assert "1 real-time priority above" in tcp_ends.describe()
