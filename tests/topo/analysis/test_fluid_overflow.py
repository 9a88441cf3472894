"""When the laws-together model counts a buffer as overflowing (topo/analysis/fluid_network.py, ``overflows``):
its fluid lost ``LOSS_PKTS`` or more, or its peak left room for fewer packets than the links feeding
its queue can hand it at once (with none, ``check.packet_margin``'s 0, its peak at full). Hypothesis over any
peak the model can report."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topo.analysis.fluid_network import LOSS_PKTS, NetworkPeak, overflows, room_at_peak

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
