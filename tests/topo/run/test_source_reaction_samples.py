"""The sources' reaction is read from the packets where packets cover the time; the source's 100 ms
counter only says what was sent after the last packet received (docs/reference/metrics.md,
"Reaction to a capacity drop"). A whole count at a sample sits up to a packet off the line through
the packets around it, and one packet is the whole 5 % cut over the 20-packet window: mixed in,
the samples moved the measure (topo/bottleneck-drop.yaml, seed 1: TFRC 0.300 s for the packets'
0.212 s, CVIHIS BLM 0.400 s for 0.542 s)."""

from __future__ import annotations

import math

import pytest

from topo.file.schema import load_topology_text
from topo.net.record import FlowSample, Recorder
from topo.run.summary_reaction import REACTION_DROP, REACTION_PACKETS, source_reaction

S = 1_000_000_000
LINE = """
name: line
defaults: {link: {rate: 10Mbps, delay: 5ms, buffer: 100}}
nodes: {H1: {kind: host}, R1: {kind: switch}, R2: {kind: switch}, H2: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2], rate: 4Mbps}
  - {ends: [R2, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: fixed, rate: 3Mbps}
events:
  - {at: 20s, link: [R1, R2], rate: 2Mbps}
"""
BEFORE, AFTER = 383.0, 358.0  # packets/s: a 6.5 % cut at the event, as TFRC's on bottleneck-drop
AT = 20 * S
END = 21 * S


def sends() -> list[int]:
    """Send times: packet k at (k + 0.5) / BEFORE s until the event, then every 1 / AFTER s."""
    out, k = [], 0
    while (t := round((k + 0.5) / BEFORE * S)) <= AT:
        out.append(t)
        k += 1
    t = out[-1]
    while (t := t + round(S / AFTER)) <= END:
        out.append(t)
    return out


def recorder(times: list[int], samples_until: int) -> Recorder:
    rec = Recorder()
    rec.packets["f1"] = [(seq, t, t + 10_000_000) for seq, t in enumerate(times)]
    for t in range(0, samples_until + 1, S // 10):  # the source's counter: whole packets sent by t
        n = sum(1 for x in times if x <= t)
        rec.flows.append(FlowSample(t, "f1", n, n, 0))
    return rec


def expected_reaction_s() -> float:
    """The definition, worked by hand: the trailing window's rate falls to (1 - DROP) x BEFORE when
    a share f of it is after the cut, BEFORE - f (BEFORE - AFTER) = (1 - DROP) BEFORE."""
    window_s = REACTION_PACKETS / BEFORE
    return REACTION_DROP * BEFORE / (BEFORE - AFTER) * window_s


def test_where_packets_cover_the_time_the_counter_does_not_move_the_reaction() -> None:
    topo = load_topology_text(LINE, "user.yaml")
    times = sends()
    got = source_reaction(topo, recorder(times, END), topo.events[0])
    alone = source_reaction(topo, recorder(times, -1), topo.events[0])  # no counter at all
    assert got == alone
    assert got["source_reaction_s"] == pytest.approx(expected_reaction_s(), abs=2 / AFTER)


def test_after_the_last_packet_received_the_counter_says_what_was_sent() -> None:
    """The source stops sending (its packets lost, or queued at the end) 50 ms after the event:
    only the counter sees that it went on sending, so the cut it made is read from it."""
    topo = load_topology_text(LINE, "user.yaml")
    times = sends()
    cut = AT + 50_000_000
    rec = recorder(times, END)
    rec.packets["f1"] = [r for r in rec.packets["f1"] if r[1] <= cut]
    got = source_reaction(topo, rec, topo.events[0])
    assert got["source_reaction_s"] is not None and not math.isnan(got["source_reaction_s"])
    assert got["source_reaction_s"] <= 0.2  # within the first two 100 ms samples after the cut
