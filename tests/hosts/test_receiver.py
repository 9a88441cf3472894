"""Receiver cores: loss and reordering apart, the playout buffer, reports like a switch port."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controlplane.report import FLAG_OVERFLOW, decode, encode
from hosts.datagram import FrameTemplate, parse
from hosts.receiver import FlowRecord, HostReporter, PlayoutBuffer
from hosts.sender import Pacer


def test_reordering_is_not_loss_and_gaps_are() -> None:
    r = FlowRecord("f")
    for seq in (0, 1, 3, 2, 5, 5):
        r.on_packet(seq, 0, 10, 100)
    assert (r.received, r.reordered, r.duplicates, r.lost) == (5, 1, 1, 1)  # 4 never came


@given(st.permutations(list(range(40))))
def test_any_order_of_all_packets_loses_nothing(order: list[int]) -> None:
    r = FlowRecord("f")
    for seq in order:
        r.on_packet(seq, 0, 1, 100)
    assert r.lost == 0 and r.received == 40


def test_playout_buffer_drains_at_its_rate_and_refuses_when_full() -> None:
    b = PlayoutBuffer(capacity=2, playout_bps=8000, packet_bytes=1000)  # one packet per second
    assert b.on_arrival(0) and b.on_arrival(0) and not b.on_arrival(0)
    assert b.dropped == 1
    b.drain(1_000_000_000)
    assert (b.occupancy, b.played) == (1, 1)
    b.drain(5_000_000_000)
    assert (b.occupancy, b.played, b.next_drain_ns()) == (0, 2, None)


def test_host_reports_at_most_once_per_interval_with_drops_since_the_last() -> None:
    rep = HostReporter(node_id=7, capacity=200, interval_us=10_000, src_mac=1, dst_mac=2)
    first = rep.on_arrival(0, 10, 0)
    assert first is not None and first.seq == 1 and first.drops == 0
    assert rep.on_arrival(5_000_000, 11, 3) is None
    second = rep.on_arrival(10_000_000, 12, 3)
    assert second is not None and second.drops == 3 and second.flags == FLAG_OVERFLOW
    assert decode(encode(second)) == second


def test_datagram_round_trip_and_fixed_size() -> None:
    t = FrameTemplate(src_mac=1, dst_mac=2, src_ip=0x0A000101, dst_ip=0x0A000201, flow=3, size=1000)
    frame = t.frame(41, 123_456_789)
    d = parse(frame)
    assert len(frame) == 1000 and (d.flow, d.seq, d.ts_ns, d.dst_ip) == (3, 41, 123_456_789, 0x0A000201)


def test_pacer_spaces_packets_by_size_over_rate() -> None:
    p = Pacer(8e6, 1000)
    assert p.gap_ns == 1_000_000
    p.on_sent(0)
    p.set_rate(4e6)
    assert p.next_send_ns() == 2_000_000
