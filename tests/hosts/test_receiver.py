"""Receiver cores: loss and reordering apart, the playout buffer, reports like a switch port."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from controlplane.report import FLAG_OVERFLOW, Report, decode, encode
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


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(64, 9000)), min_size=1, max_size=60),
       st.floats(1e4, 1e9, allow_nan=False))
def test_playout_takes_each_packet_in_its_own_bits_time(packets: list[tuple[int, int]], playout_bps: float) -> None:
    """Packets of several sizes (and flows) arriving at once are played out one after another, each
    its own bits at ``playout_bps`` after the previous (rounded to the ns): differential against
    that rule; the bytes played are the packets' own, and the per-flow counts add up."""
    b = PlayoutBuffer(capacity=len(packets), playout_bps=playout_bps, packet_bytes=max(n for _, n in packets))
    for flow, n in packets:
        assert b.on_arrival(0, flow, n)
    t = 0
    for k, (_, n) in enumerate(packets):
        t += round(n * 8 * 1_000_000_000 / playout_bps)
        assert b.next_drain_ns() == t
        b.drain(t)
        assert (b.played, b.played_bytes, b.last_played_ns) == (k + 1, sum(m for _, m in packets[:k + 1]), t)
    assert b.occupancy == 0 and b.next_drain_ns() is None
    assert b.played_by_flow == {f: sum(1 for g, _ in packets if g == f) for f, _ in packets}


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 2_000_000), st.integers(0, 4_000_000)), max_size=200))
@example([(False, 0, 0), (True, 3_000_000, 0), (False, 0, 3_000_000)])  # read empty at 3 ms, one stamped at 0
def test_a_packet_stamped_before_the_buffer_was_read_plays_no_earlier(ops: list[tuple[bool, int, int]]) -> None:
    """A netns host reads its buffer at a sample's wake-up and may then take frames its kernel stamped
    earlier. Whatever the stamps, what the buffer said it had played at each read stays true: between
    any two reads it plays at most its rate x the time between them + one packet, and no packet plays
    before the time the buffer last read (its clock never runs back; one packet per ms here)."""
    b = PlayoutBuffer(capacity=50, playout_bps=8_000_000, packet_bytes=1000)
    now, reads = 0, [(0, 0)]
    for is_read, step, back in ops:
        now += step
        if is_read:
            b.drain(now)
            reads.append((now, b.played))
        else:
            b.on_arrival(max(0, now - back))
            assert b.next_drain_ns() is None or b.next_drain_ns() > reads[-1][0]
    b.drain(now)
    reads.append((now, b.played))
    for i, (ti, pi) in enumerate(reads):
        for tj, pj in reads[i + 1:]:
            assert pj - pi <= (tj - ti) // 1_000_000 + 1


def test_a_packet_of_no_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="arriving packet must have > 0 bytes"):
        PlayoutBuffer(capacity=2, playout_bps=8000, packet_bytes=1000).on_arrival(0, 1, 0)


def test_host_reports_at_most_once_per_interval_with_drops_since_the_last() -> None:
    rep = HostReporter(node_id=7, capacity=200, interval_us=10_000, src_mac=1, dst_mac=2)
    first_frame = rep.on_arrival(0, 10, 0)
    assert first_frame is not None
    first = decode(first_frame)
    assert first.seq == 1 and first.drops == 0 and rep.seq == 1
    assert rep.on_arrival(5_000_000, 11, 3) is None
    second_frame = rep.on_arrival(10_000_000, 12, 3)
    assert second_frame is not None
    second = decode(second_frame)
    assert second.drops == 3 and second.flags == FLAG_OVERFLOW and (second.src_mac, second.dst_mac) == (1, 2)
    assert encode(second) == second_frame


#: One arrival: (µs since the last, occupancy, new drops, new packets played, µs the last was played)
ARRIVALS = st.lists(st.tuples(st.integers(0, 30_000), st.integers(0, 2**32 - 1), st.integers(0, 5),
                              st.integers(0, 2**31), st.integers(0, 2**50)), max_size=40)


@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
       st.integers(0, 2**48 - 1), st.integers(0, 2**48 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**53),
       ARRIVALS)
def test_the_engines_report_frame_is_what_encode_writes(node: int, port: int, capacity: int, interval: int,
                                                         src: int, dst: int, seq: int, start_ns: int,
                                                         arrivals: list[tuple[int, int, int, int, int]]) -> None:
    """The host's reporter is the engine's and writes its frame there: each frame must be the bytes
    ``controlplane.report.encode`` writes for the report the reporter's rules give (due once ``interval``
    µs have passed since the last; drops since the last report, flagged; the drain's count wrapping at
    32 bits, the times' at 48)."""
    rep = HostReporter(node_id=node, capacity=capacity, interval_us=interval, port=port, src_mac=src, dst_mac=dst,
                       seq=seq)
    now, drops, played, last, want_seq, reported = start_ns, 0, 0, None, seq, 0
    for dt_us, occ, new_drops, new_played, played_us in arrivals:
        now += dt_us * 1000 + dt_us % 7  # not whole µs: the report's time is the floor
        drops, played = drops + new_drops, played + new_played
        frame = rep.on_arrival(now, occ, drops, played, played_us * 1000 + 999)
        now_us = now // 1000
        if last is not None and now_us - last < interval:
            assert frame is None
            continue
        last, want_seq = now_us, (want_seq + 1) & 0xFFFF_FFFF
        want = Report(node_id=node, port=port, occupancy=occ, capacity=capacity, timestamp_us=now_us & (2**48 - 1),
                      seq=want_seq, drops=drops - reported, interval_us=interval,
                      flags=FLAG_OVERFLOW if drops - reported else 0, drained=played & 0xFFFF_FFFF,
                      drained_ts_us=played_us & (2**48 - 1), dst_mac=dst, src_mac=src)
        reported = drops
        assert frame == encode(want) and rep.seq == want_seq


def test_a_host_report_field_that_does_not_fit_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="node_id 65536 does not fit its 16-bit field"):
        HostReporter(node_id=65536, capacity=1, interval_us=1)
    with pytest.raises(ValueError, match="src_mac .* is not a 48-bit MAC address"):
        HostReporter(node_id=1, capacity=1, interval_us=1, src_mac=2**48)
    rep = HostReporter(node_id=1, capacity=1, interval_us=1)
    with pytest.raises(ValueError, match="interval_us -1 does not fit"):
        rep.interval_us = -1
    with pytest.raises(ValueError, match="occupancy 4294967296 does not fit its 32-bit field"):
        rep.on_arrival(0, 2**32, 0)


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
