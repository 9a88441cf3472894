"""The throughput rounds' receiver (tests/bench/run.py ``_start(elsewhere=True)``): the blast reaches
h2's eth0, but h2's IP, UDP and ICMP never take it; with h2's own MAC (the latency rows and the
full-stack row) h2's stack answers the same frames with ICMP port-unreachables. Why a test: the
bench's per-CPU-second figure rests on this premise, which a kernel or a change to ``_start``
could break silently (needs root)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.bench.blast import ELSEWHERE_MAC, _frame
from tests.bench.run import _is_bench_udp, h1_switch_h2
from tests.switch import netns as N

pytestmark = pytest.mark.netns


def _unreachables_sent(ns: str) -> int:
    """ICMP destination-unreachables namespace ``ns`` has sent (its /proc/net/snmp)."""
    lines = [ln.split() for ln in subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                                                 capture_output=True, text=True, check=True).stdout.splitlines()
             if ln.startswith("Icmp:")]
    return int(dict(zip(lines[0], lines[1]))["OutDestUnreachs"])


def _blast(tmp: Path, elsewhere: bool, count: int = 20) -> tuple[list[bytes], int]:
    """The bench frames h2's eth0 saw of ``count`` sent by h1, and the unreachables h2 sent meanwhile."""
    if (reason := N.netns_available()) is not None:
        pytest.skip(reason)
    with h1_switch_h2(tmp, cpu=None, elsewhere=elsewhere) as (topo, tx, rx):
        before = _unreachables_sent(topo.hosts["h2"].name)
        frame = _frame(topo)
        for _ in range(count):
            tx.send(frame)
            time.sleep(0.002)
        got = [f for _, f in N.collect(rx, _is_bench_udp, 30.0, max_frames=10 * count, want=count)]  # its replies count too
        return got, _unreachables_sent(topo.hosts["h2"].name) - before


def test_h2_drops_the_blast_before_its_stack(tmp_path: Path) -> None:
    got, replies = _blast(tmp_path, elsewhere=True)
    assert len(got) == 20 and {f[:6] for f in got} == {ELSEWHERE_MAC.to_bytes(6, "big")}
    assert replies == 0


def test_with_its_own_mac_h2_answers_the_blast(tmp_path: Path) -> None:
    got, replies = _blast(tmp_path, elsewhere=False)
    assert len(got) == 20 and replies >= 1
