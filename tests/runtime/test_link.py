"""Link model and in-memory links on virtual time: serialization, delay, FIFO, exactness."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4switch.tm import TMItem, TrafficManager
from runtime.link import DATE_BACK_MAX_NS, InMemoryLink, LinkModel, RealtimeWire, Transmitter
from runtime.sched import VirtualScheduler

NS = 1_000_000_000


class Sink:
    def __init__(self, sched: VirtualScheduler) -> None:
        self.sched = sched
        self.got: list[tuple[int, bytes]] = []

    def receive(self, frame: bytes) -> None:
        self.got.append((self.sched.now_ns(), frame))


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def test_wire_time_counts_ethernet_overhead_and_padding() -> None:
    m = LinkModel(bitrate_bps=2_000_000)
    assert m.wire_time_ns(1000) == ceil_div(8 * (1000 + 24) * NS, 2_000_000)
    assert m.wire_time_ns(10) == m.wire_time_ns(60)  # padded to the 60-byte minimum
    assert m.wire_time_ns(61) > m.wire_time_ns(60)
    raw = LinkModel(bitrate_bps=8_000_000, overhead_bytes=0, min_frame_bytes=0)
    assert raw.wire_time_ns(1000) == 1_000_000  # 8000 bits at 8 Mb/s
    assert LinkModel(bitrate_bps=0).wire_time_ns(1500) == 0  # infinite rate


def test_link_model_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="bitrate_bps"):
        LinkModel(bitrate_bps=-1)
    with pytest.raises(ValueError, match="delay_ns"):
        LinkModel(delay_ns=1.5)  # type: ignore[arg-type]


def test_single_frame_arrives_after_serialization_plus_delay() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    link = InMemoryLink(s, a, b, bitrate=2_000_000, delay_ns=3_000_000)
    frame = bytes(1000)
    busy = link.send(a, frame)
    assert busy == link.model.wire_time_ns(1000)
    s.run()
    assert b.got == [(busy + 3_000_000, frame)]
    assert a.got == []


def test_back_to_back_frames_queue_in_fifo_order() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    delay = 1_000_000
    link = InMemoryLink(s, a, b, bitrate=10_000_000, delay_ns=delay)
    sizes = [1500, 64, 1000, 64, 1500]
    busy = [link.send(a, bytes([i]) * n) for i, n in enumerate(sizes)]
    s.run()
    ends, t = [], 0
    for n in sizes:
        t += ceil_div(8 * (n + 24) * NS, 10_000_000)
        ends.append(t)
    assert [f[0] for _, f in b.got] == list(range(5))  # no overtaking, even small behind big
    assert [t for t, _ in b.got] == [e + delay for e in ends]
    assert busy == ends  # each send returns how long until the transmitter is free


def test_full_duplex_directions_are_independent() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    link = InMemoryLink(s, a, b, bitrate=1_000_000, delay_ns=500)
    for _ in range(3):
        link.send(a, bytes(100))
        link.send(b, bytes(100))
    s.run()
    assert [t for t, _ in a.got] == [t for t, _ in b.got]
    assert link.stats["a->b"].delivered == link.stats["b->a"].delivered == 3


def test_saturated_link_delivers_exact_bit_rate() -> None:
    # 7 Mb/s: a 100-byte frame (124 wire bytes = 992 bits) takes 141714.28... ns. Rounding each
    # frame up would lose ~0.3 ns per frame; the transmitter carries the remainder instead.
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    rate, n = 7_000_000, 20_000
    link = InMemoryLink(s, a, b, bitrate=rate, delay_ns=0)
    for _ in range(n):
        link.send(a, bytes(100))
    s.run()
    total_bits = n * 8 * (100 + 24)
    assert b.got[-1][0] == ceil_div(total_bits * NS, rate)
    assert b.got[-1][0] < n * link.model.wire_time_ns(100)


def test_idle_gap_restarts_serialization_at_send_time() -> None:
    tx = Transmitter(LinkModel(bitrate_bps=3_000_000))
    _, end1 = tx.transmit(0, 100)
    start2, end2 = tx.transmit(end1 + 10_000, 100)
    assert start2 == end1 + 10_000
    assert end2 - start2 == LinkModel(bitrate_bps=3_000_000).wire_time_ns(100)


def test_loss_hook_drops_in_transit_but_frame_occupies_wire() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    lose = {1, 3}
    counter = iter(range(100))
    link = InMemoryLink(s, a, b, bitrate=1_000_000, delay_ns=0,
                        loss=lambda frame, direction: next(counter) in lose)
    for i in range(5):
        link.send(a, bytes([i]) * 100)
    s.run()
    wire = link.model.wire_time_ns(100)
    assert [(t, f[0]) for t, f in b.got] == [(wire, 0), (3 * wire, 2), (5 * wire, 4)]
    st = link.stats["a->b"]
    assert (st.sent, st.delivered, st.lost) == (5, 3, 2)


def test_infinite_link_with_zero_delay_keeps_order() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    link = InMemoryLink(s, a, b)
    for i in range(4):
        assert link.send(a, bytes([i])) == 0
    s.run()
    assert b.got == [(0, bytes([i])) for i in range(4)]


def test_send_from_a_stranger_is_refused() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    link = InMemoryLink(s, a, b)
    with pytest.raises(ValueError, match="not an end of this link"):
        link.send(Sink(s), b"x")


def test_tm_paced_by_link_never_backlogs_the_wire() -> None:
    """TM service returns the link's busy time: departures are exactly back to back."""
    s = VirtualScheduler()
    switch_port, host = Sink(s), Sink(s)
    link = InMemoryLink(s, switch_port, host, bitrate=2_000_000, delay_ns=3_000_000)
    send = link.sender(switch_port)
    backlog: list[int] = []

    def service(port: int, item: TMItem) -> int:
        busy = send(item.packet)
        backlog.append(busy)
        return busy

    tm = TrafficManager(s, service)
    for i in range(50):
        tm.enqueue(1, TMItem(packet=bytes([i]) * 1000))
    s.run()
    wire = link.model.wire_time_ns(1000)
    assert set(backlog) == {wire}  # the link never had a frame waiting behind another
    assert [t for t, _ in host.got] == [3_000_000 + (k + 1) * wire for k in range(50)]


def test_tm_paced_by_link_keeps_exact_rate_with_fractional_wire_time() -> None:
    s = VirtualScheduler()
    switch_port, host = Sink(s), Sink(s)
    rate, n, delay = 7_000_000, 3000, 1000
    link = InMemoryLink(s, switch_port, host, bitrate=rate, delay_ns=delay)
    send = link.sender(switch_port)
    tm = TrafficManager(s, lambda port, item: send(item.packet))
    tm.set_queue_depth(0, n)
    for _ in range(n):
        tm.enqueue(0, TMItem(packet=bytes(100)))
    s.run()
    assert len(host.got) == n
    assert host.got[-1][0] == ceil_div(n * 8 * (100 + 24) * NS, rate) + delay


MS = 1_000_000


def test_a_realtime_wire_credits_a_late_wake_up_while_back_to_back() -> None:
    """Frames waiting for the wire, each served 0.1 ms after the previous ended: the wire runs back
    to back, so its bit rate holds on average."""
    wire = RealtimeWire()
    now = 0
    for _ in range(10):
        busy = wire.busy_ns(now, MS)
        now += busy + MS // 10
    assert wire.free_ns == 10 * MS


def test_a_realtime_wire_does_not_date_a_frame_back_over_an_idle_gap_after_a_rate_fall() -> None:
    """The TM spaces frames 6.7 ms apart on a 2.7 ms wire; the bit rate falls to an 8 ms wire. The
    next frame starts when it is served, not when the previous one ended (docs/howto/bmv2.md)."""
    wire = RealtimeWire()
    for k in range(5):
        assert wire.busy_ns(k * 6_700_000, 2_700_000) == 2_700_000
    assert wire.busy_ns(5 * 6_700_000, 8 * MS) == 8 * MS


@given(st.lists(st.tuples(st.integers(0, 5 * MS), st.integers(1, 5 * MS)), min_size=1, max_size=40))
def test_a_realtime_wire_never_overlaps_frames_nor_starts_one_before_the_last_ended(
        steps: list[tuple[int, int]]) -> None:
    """Served at or after the wire is free (as the TM serves), each frame starts at or after the one
    before ended, and at most one previous frame time before it was served."""
    wire, now = RealtimeWire(), 0
    for late, wire_ns in steps:
        before_free, window = wire.free_ns, wire.last_wire_ns
        busy = wire.busy_ns(now, wire_ns)
        start = wire.free_ns - wire_ns
        assert start >= before_free and now - start <= window and busy == wire.free_ns - now
        now = max(now, wire.free_ns) + late


def test_a_frame_the_tm_served_starts_when_its_model_served_it_however_late_the_loop() -> None:
    """Frames due 32 µs apart on a 16 µs wire, each put on it 25 µs late (a virtual machine's
    wake-up): every one starts at its due time, so the port keeps the TM's rate; under the
    one-frame-time rule (``busy_ns``) each late service cost the port its lateness."""
    us = 1_000
    dated, plain = RealtimeWire(), RealtimeWire()
    for k in range(100):
        due = k * 32 * us
        busy = dated.busy_due_ns(due + 25 * us, due, 16 * us)
        assert dated.free_ns == due + 16 * us and busy == -9 * us  # its wire time ended 9 µs ago
        plain.busy_ns(due + 25 * us, 16 * us)
    assert plain.free_ns == 99 * 32 * us + 41 * us  # what the rule without the due time gives: late
    assert dated.free_ns == 99 * 32 * us + 16 * us


def test_a_frame_served_later_than_the_bound_starts_when_it_is_served() -> None:
    """A stall longer than ``DATE_BACK_MAX_NS``: the frame is not dated back (no burst credit)."""
    wire = RealtimeWire()
    wire.busy_due_ns(0, 0, 10_000)
    late = 10_000 + DATE_BACK_MAX_NS + 1
    assert wire.busy_due_ns(late, 10_000, 10_000) == 10_000
    assert wire.free_ns == late + 10_000


@given(st.lists(st.tuples(st.integers(0, 3 * MS), st.integers(0, 2 * MS), st.integers(1, MS)),
                min_size=1, max_size=40))
def test_a_dated_wire_never_overlaps_frames_nor_starts_one_before_it_was_due(
        steps: list[tuple[int, int, int]]) -> None:
    """Each frame starts no sooner than its due time and the end of the one before, never after it
    was served unless the wire was still busy, and, served within the bound, exactly at the later
    of the two."""
    wire, due, now = RealtimeWire(), 0, 0
    for gap, late, wire_ns in steps:
        due = max(due + gap, wire.free_ns if gap else due)
        now = max(now, due + late)
        before_free = wire.free_ns
        busy = wire.busy_due_ns(now, due, wire_ns)
        start = wire.free_ns - wire_ns
        assert before_free <= start <= max(now, before_free)
        if now - max(due, before_free) <= DATE_BACK_MAX_NS:
            assert start == max(due, before_free) and busy == wire.free_ns - now
        else:
            assert busy == max(wire.free_ns - now, 0)
