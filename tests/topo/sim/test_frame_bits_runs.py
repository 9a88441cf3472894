"""Bits, not packets, in runs: a bottleneck shared by frames of several sizes is used to the full, and a
merge of two sizes is shared in bits (docs/background/alinea.md, "Bits, not packets"). The topologies are written
from docs/reference/topologies.md, as a user would."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.file.schema import load_topology_text
from topo.net.plan import (
    buffer_unit_bytes,
    expected_frame_bytes,
    expected_shares,
    flow_frame_bytes,
    law_frames,
)
from topo.run.runner import run_experiment

S = 1_000_000_000

#: Two 1000-byte ALINEA flows and one TCP flow (1448-byte segments) through R1 - R2 - R3 at 10 Mb/s.
LINE_WITH_TCP = """\
defaults:
  link: {rate: 10Mbps, delay: 2ms, buffer: 100}
  packet_size: 1000B
nodes:
  H1: {kind: host}
  H2: {kind: host}
  H3: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  R3: {kind: switch}
  D: {kind: host}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [H3, R1]}
  - {ends: [R1, R2]}
  - {ends: [R2, R3]}
  - {ends: [R3, D]}
flows:
  - {name: a1, src: H1, dst: D, control: alinea}
  - {name: a2, src: H2, dst: D, control: alinea}
  - {name: t, src: H3, dst: D, control: tcp, start: 1s}
"""

#: Two ALINEA flows of 500 and 1500 bytes merging at R1 onto the 2 Mb/s link R1 - R2 (gains derived).
MERGE_OF_TWO_SIZES = """\
defaults:
  link: {rate: 4Mbps, delay: 3ms, buffer: 100}
  alinea: {o_max: 70%}
nodes:
  H1: {kind: host}
  H2: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  D1: {kind: host}
  D2: {kind: host}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [R1, R2], rate: 2Mbps}
  - {ends: [R2, D1]}
  - {ends: [R2, D2]}
flows:
  - {name: small, src: H1, dst: D1, control: alinea, packet_size: 500B}
  - {name: large, src: H2, dst: D2, control: alinea, packet_size: 1500B}
"""


def utilisation(rec, a: str, b: str, t0_s: float, t1_s: float) -> float:
    """The share of link a->b's rate it carried between the samples at t0 and t1 (links.csv's rows)."""
    rows = [s for s in rec.links if s.src == a and s.dst == b and t0_s * S <= s.t_ns <= t1_s * S]
    first, last = rows[0], rows[-1]
    return (last.bytes - first.bytes) * 8 / ((last.t_ns - first.t_ns) / S) / first.rate_bps


def received_bps(rec, flow: str, t0_s: float, t1_s: float) -> float:
    """A flow's receive rate in bits between the samples at t0 and t1 (flows.csv's rows)."""
    rows = [s for s in rec.flows if s.flow == flow and t0_s * S <= s.t_ns <= t1_s * S]
    first, last = rows[0], rows[-1]
    return (last.received - first.received) * 8 * last.packet_bytes / ((last.t_ns - first.t_ns) / S)


def jain(rates: list[float]) -> float:
    return sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))


@pytest.mark.slow
def test_a_bottleneck_shared_by_two_frame_sizes_is_used_to_the_full() -> None:
    """Before the TCP flow starts R1 -> R2 carries only 1000-byte frames; after, 1514-byte ones too.
    A queue rate in packets of the largest size left a quarter of the link idle before, a sixth after."""
    t = load_topology_text(LINE_WITH_TCP, "line-tcp.yaml")
    rec = run_experiment(t, 3 * S, seed=1, plots=False).recorder
    assert utilisation(rec, "R1", "R2", 0.5, 1.0) >= 0.98
    assert utilisation(rec, "R1", "R2", 1.5, 3.0) >= 0.98


@pytest.mark.slow
def test_a_merge_of_two_frame_sizes_is_shared_in_bits() -> None:
    """Equal packet occupancies in one FIFO give equal packet rates (Little's law): 500-byte frames got
    a third of the 1500-byte flow's bits. Read in bytes, the buffers share the link in bits."""
    t = load_topology_text(MERGE_OF_TWO_SIZES, "merge.yaml")
    result = run_experiment(t, 10 * S, seed=1, plots=False)  # the 1500-byte flow's law, on 33 frames, starts slowly
    rec = result.recorder
    assert result.summary["loss"]["total"] == 0
    rates = [received_bps(rec, f, 6.0, 10.0) for f in ("small", "large")]
    assert jain(rates) >= 0.99, rates
    assert utilisation(rec, "R1", "R2", 6.0, 10.0) >= 0.98


def test_the_plan_expects_the_mean_frame_of_the_flows_shares() -> None:
    t = load_topology_text(LINE_WITH_TCP, "line-tcp.yaml")
    shares = expected_shares(t, "R1", "R2")
    assert sum(s for _, s in shares) == pytest.approx(10e6)
    frames = [flow_frame_bytes(f) for f, _ in shares]
    assert frames[:2] == [1000, 1000] and frames[2] > 1448  # a TCP segment's frame, headers included
    # equal shares in bits: the harmonic mean of the frames
    assert expected_frame_bytes(t, "R1", "R2") == round(3 / sum(1 / f for f in frames))
    assert buffer_unit_bytes(t, "R2") == 1000 and buffer_unit_bytes(t, "R1") == 1000
    m = load_topology_text(MERGE_OF_TWO_SIZES, "merge.yaml")
    assert expected_frame_bytes(m, "H2", "R1") == 1500 and buffer_unit_bytes(m, "R1") == 500
    assert law_frames(m, "H2", "R1", 100) == (33, 8 * 1500)
    assert law_frames(m, "H1", "R1", 100) == (100, 8 * 500)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(64, 9000), min_size=1, max_size=5), st.integers(1, 1000))
def test_the_expected_frame_is_the_packet_weighted_mean_of_equal_bit_shares(sizes, capacity) -> None:
    """Property over size mixes: flows with no rate of their own share the link equally in bits, so
    the frame the port is expected to send is the harmonic mean of their frames (an independent
    formula); a buffer entered by several sizes is read in bytes of the smallest, never in more frames
    than packets."""
    hosts = "".join(f"  H{i}: {{kind: host}}\n" for i in range(len(sizes)))
    links = "".join(f"  - {{ends: [H{i}, R1]}}\n" for i in range(len(sizes)))
    flows = "".join(f"  - {{src: H{i}, dst: D, control: alinea, packet_size: {s}B}}\n" for i, s in enumerate(sizes))
    t = load_topology_text(f"nodes:\n{hosts}  R1: {{kind: switch}}\n  R2: {{kind: switch}}\n  D: {{kind: host}}\n"
                           f"links:\n{links}  - {{ends: [R1, R2]}}\n  - {{ends: [R2, D]}}\nflows:\n{flows}", "mix.yaml")
    mean = expected_frame_bytes(t, "R1", "R2")
    assert min(sizes) <= mean <= max(sizes)
    assert abs(mean - len(sizes) / sum(1 / s for s in sizes)) <= 0.5
    if len(set(sizes)) == 1:
        assert mean == sizes[0] and buffer_unit_bytes(t, "R2") == 0
    else:
        assert buffer_unit_bytes(t, "R2") == min(sizes)
    frames, bits = law_frames(t, "R1", "R2", capacity)
    assert bits == 8 * mean and 1 <= frames <= capacity
