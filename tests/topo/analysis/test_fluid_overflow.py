"""When the laws-together model counts a buffer as overflowing (topo/analysis/fluid_network.py, ``overflows``):
its fluid lost ``LOSS_PKTS`` or more, or its peak left room for fewer packets than the links feeding
its queue can hand it at once (with none, ``check.packet_margin``'s 0, its peak at full). Hypothesis over any
peak the model can report."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.topo.randomcheck import judge
from topo.analysis.check import _single_feed_margin, check_topology, feeding_links, packet_margin
from topo.analysis.fluid_network import LOSS_PKTS, NetworkPeak, overflows, room_at_peak
from topo.file.schema import load_topology_text
from topo.net.starts import with_drawn_starts

peaks = st.builds(
    lambda c, peak, lost: NetworkPeak(
        ("S1", "H1"), c, 1.0 if lost > 0 else peak, lost, 0.5 if lost > 0 else None
    ),
    st.integers(1, 1000),
    st.floats(0.0, 1.0),
    st.one_of(st.just(0.0), st.floats(1e-6, 50.0)),
)


@given(peaks, st.integers(0, 4))
def test_a_buffer_overflows_exactly_when_it_lost_enough_or_had_no_packet_of_room(
    p: NetworkPeak, packets: int
) -> None:
    room = (1.0 - p.peak) * p.capacity
    if p.lost_pkts >= LOSS_PKTS:
        assert overflows(p, packets)
    elif packets == 0:
        assert overflows(p, packets) == (room_at_peak(p) <= 0)
    elif room >= packets + 1e-6:
        assert not overflows(p, packets)
    elif room < packets - 1e-6:
        assert overflows(p, packets)


@given(peaks, st.integers(0, 4))
def test_any_fluid_lost_is_an_overflow(p: NetworkPeak, packets: int) -> None:
    """A model that dropped fluid had the buffer full: no room for a packet."""
    if p.lost_pkts > 0:
        assert room_at_peak(p) == 0.0 and overflows(p, packets)


@given(peaks, st.integers(0, 4), st.floats(0.0, 1.0), st.integers(0, 3))
def test_a_higher_peak_or_more_feeding_links_never_clears_an_overflow(
    p: NetworkPeak, packets: int, more: float, extra: int
) -> None:
    higher = NetworkPeak(p.buffer, p.capacity, p.peak + (1.0 - p.peak) * more, p.lost_pkts, p.first_loss_s)
    if overflows(p, packets):
        assert overflows(higher, packets) and overflows(p, packets + extra)


@given(st.integers(1, 1000), st.integers(1, 4))
def test_a_peak_that_leaves_exactly_the_packets_needed_does_not_overflow(capacity: int, packets: int) -> None:
    """Room in whole 1e-9, as the analysis's room above the target: (1 - 0.8) * 5 is 0.999...98 in floats."""
    if packets < capacity:
        p = NetworkPeak(("S1", "H1"), capacity, 1.0 - packets / capacity, 0.0, None)
        assert not overflows(p, packets)


#: ``make fuzz-topo`` seed 29, draw 455: S1's 9-packet buffer from H1 (1500 B frames, H1's link alone feeds S1's
#: queue toward H3) peaks at 91.5 % in the model, within a packet of full; the run loses nothing (seeds 1-3).
NEAR_FULL_LINE = """name: random-line
defaults:
  link: {rate: 20Mbps, delay: 5ms, buffer: 182}
nodes:
  S1: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
  H3: {kind: host}
links:
  - {ends: [H1, S1], delay: 5ms, buffer: 5ms}
  - {ends: [H2, S1], buffer: 5ms}
  - {ends: [H3, S1], rate: 10Mbps, buffer: 182}
flows:
  - {name: f1, src: H1, dst: H3, control: alinea, start: 0.4s, packet_size: 1500B}
  - {name: f2, src: H1, dst: H3, control: alinea, start: 0.4s, packet_size: 1500B, r_max: 5Mbps}
"""

#: ``make fuzz-topo`` seed 29, draw 540: a line of switches each fed by one link, one frame size; the model fills
#: S1's buffer from H1 and S2's and S3's after the link-rate event, and the run loses a packet (seeds 1-3).
FULL_LINE = """name: random-line
defaults:
  link: {rate: 2Mbps, delay: 0.1ms, buffer: 20ms}
nodes:
  S1: {kind: switch}
  S2: {kind: switch}
  S3: {kind: switch}
  S4: {kind: switch}
  S5: {kind: switch}
  H1: {kind: host}
  H2: {kind: host, receive_buffer: 20, playout: 5Mbps}
links:
  - {ends: [S1, S2], delay: 0.1ms}
  - {ends: [S2, S3], rate: 2Mbps, delay: 0.25ms}
  - {ends: [S3, S4], rate: 2Mbps, delay: 0.1ms}
  - {ends: [S4, S5], rate: 1Mbps, delay: 0.1ms, buffer: 6}
  - {ends: [H1, S1], buffer: 6}
  - {ends: [H2, S5], buffer: 20ms}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea, start: 1.2s, packet_size: 576B, r_max: 50Mbps}
  - {name: f2, src: H1, dst: H2, control: alinea, start: 1.2s, packet_size: 576B, r_max: 5Mbps}
events:
  - {at: 2s, link: [H1, S1], rate: 100Mbps}
"""


def test_a_switch_queue_one_link_feeds_keeps_no_packet_of_margin_a_receiver_or_a_shared_queue_does() -> None:
    """``check._single_feed_margin``: a switch frees a packet's slot when it releases it to the wire, so a queue u's
    link alone feeds, one frame size at the switch, holds no packet its fluid does not (one fewer than its exits);
    a receiver holds the packet it plays out (one), and a queue another link feeds keeps one per link."""
    line = load_topology_text(NEAR_FULL_LINE, "near-full-line.yaml")
    assert feeding_links(line, "H1", "S1") == 1 and packet_margin(line, "H1", "S1", 1) == 0
    assert _single_feed_margin(line, "S1", "H3") is None  # a receiver: the packet playing out counts
    exits = load_topology_text(NEAR_FULL_LINE.replace("{name: f2, src: H1, dst: H3", "{name: f2, src: H1, dst: H2"), "x")
    assert _single_feed_margin(exits, "H1", "S1") == 1  # two queues: the other's part-brought packet
    two = NEAR_FULL_LINE.replace("  - {name: f2, src: H1,", "  - {name: f2, src: H2,")
    shared = load_topology_text(two, "shared-line.yaml")
    assert feeding_links(shared, "H1", "S1") == 2 and packet_margin(shared, "H1", "S1", 2) == 2
    sizes = load_topology_text(NEAR_FULL_LINE.replace("packet_size: 1500B, r_max", "packet_size: 576B, r_max"), "x")
    assert packet_margin(sizes, "H1", "S1", feeding_links(sizes, "H1", "S1")) == 1  # frames of several sizes


def test_a_single_fed_buffer_within_a_packet_of_full_in_the_model_is_not_warned_and_loses_nothing() -> None:
    peak = next(c.network for c in check_topology(with_drawn_starts(load_topology_text(NEAR_FULL_LINE, "x"), 1, "sim"), 4.0)
                if c.key == ("H1", "S1"))
    assert peak is not None and 0 < room_at_peak(peak) < 1  # what the one-packet margin warned
    verdict = judge(NEAR_FULL_LINE, 4.0, True, seed=1, source="near-full-line.yaml")
    assert verdict.problems == [] and verdict.lost == 0 and verdict.warned == []


def test_a_line_whose_model_fills_its_single_fed_buffers_is_still_warned_and_loses() -> None:
    verdict = judge(FULL_LINE, 4.0, True, seed=1, source="full-line.yaml")
    assert verdict.problems == [] and verdict.lost > 0
    assert any(w.startswith("law H1->S1") and "in the fluid model" in w for w in verdict.warned), verdict.warned
