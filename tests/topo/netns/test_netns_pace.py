"""``cc: cvihis-rtm`` in netns (topo/netns/pace.py): the stamps, the CVIHIS feedback and the socket's
pacing rate without namespaces, then (root) one sized flow on the kernel's TCP through p4switch."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from hosts.datagram import KIND_FEEDBACK, parse
from tests.paths import ROOT
from tests.switch import netns as N
from topo.file.schema import load_topology_text
from topo.netns.pace import (
    TRAILER_BYTES,
    UNPACED_SEGMENTS,
    KernelPacedFlows,
    pace_summary,
    pacing_bytes_per_s,
)
from topo.netns.tcpflow import TCP_PORT_BASE, TUN_MTU
from topo.run.runner import run_experiment

TCP_FILE = ROOT / "topo/tcp-1router.yaml"
PACED = TCP_FILE.read_text().replace("cc: cubic, start: 0s}", "cc: cvihis-rtm, start: 0s, size: 400kB}")
MTU = TUN_MTU - TRAILER_BYTES


class Clock:
    def __init__(self) -> None:
        self.t = 0
        self.timers: list[tuple[int, object, tuple]] = []

    def now_ns(self) -> int:
        return self.t

    def call_at(self, t_ns: int, fn, *args):
        entry = (t_ns, fn, args)
        self.timers.append(entry)

        class Handle:
            def cancel(_self) -> None:
                if entry in self.timers:
                    self.timers.remove(entry)

        return Handle()


def segment(src: int, dst: int, port: int, payload: int) -> bytes:
    """An IPv4 TCP packet (no options) with ``payload`` bytes."""
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 40 + payload, 0, 0x4000, 64, 6, 0, src, dst)
    tcp = struct.pack("!HHIIBBHHH", 40000, port, 1, 0, 5 << 4, 0x18, 1000, 0, 0)
    return ip + tcp + bytes(payload)


@pytest.fixture
def ends():
    topo = load_topology_text(PACED, str(TCP_FILE))
    flows = {1: topo.flows[0]}
    eth = bytes(6) + bytes(5) + b"\x01" + b"\x08\x00"
    wire: list[bytes] = []
    clock = Clock()
    tx = KernelPacedFlows(topo, "H1", flows, clock, wire.append, lambda fid: TCP_PORT_BASE + fid, MTU, eth)
    rx = KernelPacedFlows(topo, "H2", flows, clock, wire.append, lambda fid: TCP_PORT_BASE + fid, MTU, eth)
    return topo, tx, rx, clock, wire


def test_data_segments_carry_a_stamp_that_the_receiver_strips_and_answers(ends) -> None:
    """Each data segment of the paced flow gets a trailer; the receiving side writes the IP packet
    back unchanged, and its CVIHIS receiver answers in feedback datagrams; ACKs and other flows'
    segments carry nothing."""
    topo, tx, rx, clock, wire = ends
    h1, h2 = topo.ip("H1"), topo.ip("H2")
    rates: list[int] = []
    initial = tx.attach(1, rates.append)
    assert initial == pacing_bytes_per_s(tx.senders[1].pace.core.rate_pps, MTU)
    assert tx.stamp(segment(h1, h2, TCP_PORT_BASE + 1, 0)) == b""  # a pure ACK / SYN
    assert tx.stamp(segment(h1, h2, TCP_PORT_BASE + 9, 100)) == b""  # another flow's port
    for k in range(40):
        clock.t = k * 5_000_000
        packet = segment(h1, h2, TCP_PORT_BASE + 1, 1000)
        trailer = tx.stamp(packet)
        assert len(trailer) == TRAILER_BYTES
        clock.t += 1_000_000 + (k % 3) * 200_000  # a one-way delay that moves
        assert rx.strip(bytes(14) + packet + trailer) == packet
        for t, fn, args in sorted(list(clock.timers), key=lambda e: e[0]):
            if t <= clock.t:
                clock.timers.remove((t, fn, args))
                fn(*args)
    feedback = [parse(f) for f in wire]
    assert feedback and all(d.kind == KIND_FEEDBACK and d.flow == 1 for d in feedback)
    for frame in wire:
        assert tx.on_feedback(frame)
    assert tx.senders[1].feedbacks == len(wire)
    assert rates and rates[-1] == pacing_bytes_per_s(tx.senders[1].pace.core.rate_pps, MTU)


def test_a_frame_without_a_stamp_passes_unchanged(ends) -> None:
    topo, _tx, rx, _clock, wire = ends
    packet = segment(topo.ip("H1"), topo.ip("H2"), TCP_PORT_BASE + 1, 500)
    assert rx.strip(bytes(14) + packet) == packet and wire == []


def test_pace_summary_counts_the_segments_the_rates_allowed() -> None:
    # the kernel's unpaced first segments at once, then 100 segments/s for 1 s and 200 for 1 s: 300
    # allowed; the 301 paced stamps are 300 intervals
    burst = [0] * UNPACED_SEGMENTS
    stamps = burst + [i * 10_000_000 for i in range(101)] + [1_000_000_000 + i * 5_000_000 for i in range(1, 201)]
    s = pace_summary([(0, 100.0), (1_000_000_000, 200.0)], stamps, feedbacks=7, frame_bits=12_000)
    assert s["sent_over_paced"] == 1.0 and s["rate_changes"] == 1 and s["feedbacks"] == 7
    assert s["rate_bps"] == {"initial": 1_200_000, "min": 1_200_000, "max": 2_400_000, "last": 2_400_000}
    half = pace_summary([(0, 100.0), (1_000_000_000, 200.0)], burst + stamps[UNPACED_SEGMENTS::2], feedbacks=0,
                        frame_bits=12_000)
    assert half["sent_over_paced"] == 0.5  # a flow its window held to half the pace


@pytest.mark.netns
@pytest.mark.slow
def test_a_paced_kernel_flow_completes_at_the_cvihis_rate(tmp_path: Path) -> None:
    """400 kB on the kernel's TCP through p4switch with a 2 Mb/s bottleneck: every byte arrives,
    CVIHIS's feedback moved the socket's pacing rate from its initial value, and the segments left
    at the rates set (the pace, not the window, held the flow)."""
    N.require_netns()
    topo = load_topology_text(PACED, str(TCP_FILE))
    s = run_experiment(topo, 6_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns", pcap=False).summary
    t = s["flows"]["t1"]["tcp"]
    assert t["cc"] == "cvihis-rtm" and t["errors"] == [] and t["sack"] is True, t
    N.skip_unless_kept_up(s, "a paced kernel flow")
    assert t["bytes_received"] == 400_000 and t["completed"], t
    pace = t["pace"]
    assert pace["feedbacks"] > 10 and pace["rate_changes"] > 3, pace
    assert pace["rate_bps"]["max"] > pace["rate_bps"]["initial"], pace
    assert pace["segments"] >= 400_000 // (MTU - 52), pace
    # each skb's gap is set at the rate in force when it leaves, so a cut lands one gap late: a few % over
    assert 0.7 < pace["sent_over_paced"] < 1.15, pace
