"""The engine's paced sender (hosts/sender.py ``Pacer``): spacing, round-robin, stamps, the NIC queue.

Why: the hosts' per-packet sending runs in the engine (issue 22); the law only sets its rate. These
pin what the Python send loop did: packets ``packet_bytes * 8 / rate`` apart from the last one sent
(each frame's own bits over the rate when a host's flows have several sizes),
flows taken in turn while active, each frame its flow's with the sequence number and the send time
plus the clock offset, a full NIC queue dropped and counted, on the engine's scheduler or another.
"""

from __future__ import annotations

import gc
import heapq
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.datagram import FrameTemplate, parse
from hosts.sender import FixedSender, Pacer, SenderFlow
from runtime.link import InMemoryLink, LinkModel
from runtime.sched import VirtualScheduler
from tests.runtime.test_engine import ListScheduler, Sink

SIZE = 100


def _frame(flow: int) -> bytes:
    return FrameTemplate(src_mac=1, dst_mac=2, src_ip=3, dst_ip=4, flow=flow, size=SIZE).frame(0, 0)


def _line(sched: Any, rate_bps: int = 0, queue: int = 1000, offset: int = 0,
          pacer: Any = None) -> tuple[Any, Sink, dict[str, int]]:
    host, far = Sink(sched), Sink(sched)
    link = InMemoryLink(sched, host, far, model=LinkModel(bitrate_bps=rate_bps, overhead_bytes=0, min_frame_bytes=0))
    counts: dict[str, int] = {}
    pacer = pacer if pacer is not None else Pacer(8e6, SIZE)
    pacer.bind(sched, link, host, offset, queue, counts)
    return pacer, far, counts


@pytest.mark.parametrize("make_sched", [VirtualScheduler, ListScheduler])
def test_packets_leave_at_the_rate_with_their_sequence_numbers_and_send_times(make_sched: Any) -> None:
    sched = make_sched()
    pacer, far, _ = _line(sched, offset=7)
    pacer.add_flow(1, 0, 1_000_000, _frame(1))  # 100 bytes at 8 Mb/s: one every 100 µs until 1 ms
    pacer.rearm()
    sched.run()
    got = [(t, parse(f)) for t, f in far.got]
    assert [t for t, _ in got] == list(range(0, 1_000_000, 100_000))
    assert [d.seq for _, d in got] == list(range(10))
    assert all(d.ts_ns == t + 7 and d.flow == 1 and d.size == SIZE for t, d in got)
    assert pacer.sent(1) == pacer.taken == 10


def test_flows_take_turns_while_active_and_a_rate_change_counts_from_the_last_packet() -> None:
    sched = VirtualScheduler()
    pacer, far, _ = _line(sched)
    pacer.add_flow(1, 0, None, _frame(1))
    pacer.add_flow(2, 0, 300_000, _frame(2))
    pacer.rearm()
    sched.run_until(450_000)
    assert [parse(f).flow for _, f in far.got] == [1, 2, 1, 1, 1]  # at 0, 100, 200 µs; 2 stops at 300 µs
    sched.run_until(450_000)
    pacer.set_rate(4e6)  # 200 µs apart from the last packet (400 µs), not from now
    pacer.rearm()
    sched.run_until(1_000_000)
    assert [t for t, _ in far.got][-3:] == [600_000, 800_000, 1_000_000]


def test_a_fixed_sender_stops_at_its_stop_time() -> None:
    sched = VirtualScheduler()
    sender = FixedSender(SenderFlow(5, "f", 50_000, 250_000), 8e6, SIZE)
    pacer, far, _ = _line(sched, pacer=sender.pacer)
    pacer.add_flow(5, 50_000, 250_000, _frame(5))
    pacer.rearm()
    sched.run()
    assert [t for t, _ in far.got] == [50_000, 150_000]
    assert sched.pending() == 0


def test_a_full_nic_queue_drops_and_counts() -> None:
    sched = VirtualScheduler()
    pacer, far, counts = _line(sched, rate_bps=1_000_000, queue=2)  # 800 µs per frame on the wire
    pacer.add_flow(1, 0, 1_000_000, _frame(1))
    pacer.rearm()
    sched.run()
    assert counts["host_tx_queue_full"] > 0
    assert len(far.got) + counts["host_tx_queue_full"] == pacer.sent(1) == 10


class LateScheduler(ListScheduler):
    """A real-time loop's wake-ups: each call comes ``late`` ns after its time, and the ones due
    at ``stall_at`` only at ``stall_end``."""

    def __init__(self, late: int, stall_at: int = -1, stall_end: int = -1) -> None:
        super().__init__()
        self.late, self.stall_at, self.stall_end = late, stall_at, stall_end

    def run(self) -> None:
        while self.heap:
            t, _, fn, args, _ = heapq.heappop(self.heap)
            woke = self.stall_end if t == self.stall_at else t + self.late
            self.now = max(self.now, woke)
            fn(*args)


def _send_times(sched: LateScheduler, stop_ns: int = 1_000_000) -> list[int]:
    pacer, far, _ = _line(sched)
    pacer.add_flow(1, 0, stop_ns, _frame(1))  # one every 100 µs until stop_ns
    pacer.rearm()
    sched.run()
    return [parse(f).ts_ns for _, f in far.got]


def test_late_wake_ups_do_not_slow_the_pacing() -> None:
    """Each packet is spaced from when it was due, not from the late wake-up that sent it: spaced
    from the wake-up, 30 µs late at every 100 µs packet, a host sent 77 % of its rate (netns, a 22
    Mb/s law sent 19 Mb/s: docs/howto/netns.md, "At higher link rates")."""
    assert _send_times(LateScheduler(30_000)) == [30_000 + 100_000 * i for i in range(10)]


def test_a_stall_shorter_than_the_catch_up_is_made_up() -> None:
    """After a 450 µs stall the packets due at 100-500 µs all go at 550 (the uplink's model spaces
    them at its bit rate), then the schedule goes on as before: a late wake-up loses no rate."""
    times = _send_times(LateScheduler(0, stall_at=100_000, stall_end=550_000))
    assert times == [0] + [550_000] * 5 + [600_000, 700_000, 800_000, 900_000]


def test_a_long_stall_gives_back_one_catch_up_at_most() -> None:
    """After a 3 ms stall, only the packets of the last eight gaps (the catch-up bound, under 1 ms
    here) go at once: a long stall is not a burst of everything it missed."""
    times = _send_times(LateScheduler(0, stall_at=100_000, stall_end=3_100_000), stop_ns=4_000_000)
    owed = 8
    assert times == [0] + [3_100_000] * (1 + owed) + [3_100_000 + 100_000 * i for i in range(1, 9)]


def test_at_a_high_rate_the_catch_up_is_eight_packets() -> None:
    """The bound in gaps: at one packet per 10 µs a 3 ms stall gives back eight packets, not the
    hundred of a millisecond."""
    sched = LateScheduler(0, stall_at=10_000, stall_end=3_010_000)
    pacer, far, _ = _line(sched, pacer=Pacer(SIZE * 8 * 100_000, SIZE))  # 100,000 packets/s
    pacer.add_flow(1, 0, 3_100_000, _frame(1))
    pacer.rearm()
    sched.run()
    times = [parse(f).ts_ns for _, f in far.got]
    assert times.count(3_010_000) == 1 + 8


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sending rate must be > 0"):
        Pacer(0.0, SIZE)
    with pytest.raises(ValueError, match="sending rate must be > 0"):
        Pacer(1e6, SIZE).set_rate(-1.0)


def test_a_bound_sender_in_a_cycle_is_collected() -> None:
    sched = VirtualScheduler()
    pacer, far, _ = _line(sched)
    pacer.add_flow(1, 0, None, _frame(1))
    pacer.rearm()  # the heap holds the pacer, the pacer holds the scheduler (and the link, its ends)
    sched.run_until(300_000)
    ref = weakref.ref(far)
    del sched, pacer, far
    gc.collect()
    assert ref() is None


# ---- bits, not packets: each frame is followed by its own bits at the rate --------------------------

NS = 1_000_000_000


def _sized_frame(flow: int, size: int) -> bytes:
    return FrameTemplate(src_mac=1, dst_mac=2, src_ip=3, dst_ip=4, flow=flow, size=size).frame(0, 0)


def drr_order(sizes: list[int]) -> Iterator[int]:
    """Deficit round-robin as textbooks write it (Shreedhar and Varghese): flows visited in turn,
    each visit adds the quantum (the largest frame) to the flow's deficit, which then sends frames
    while the deficit covers one; the flows' frame sizes, in the order sent, forever."""
    quantum, deficit = max(sizes), [0] * len(sizes)
    while True:
        for i, size in enumerate(sizes):
            deficit[i] += quantum
            while deficit[i] >= size:
                deficit[i] -= size
                yield size


def expected_send_times(sizes: list[int], rate_bps: float, start: int, until: int) -> list[tuple[int, int]]:
    """An independent pacer: flows taken by deficit round-robin in bytes, frame k at t_k, and
    t_(k+1) = t_k + its own bits / rate (rounded half to even to the ns, at least 1): (time, size)
    per frame before ``until``."""
    out, t, order = [], start, drr_order(sizes)
    while t < until:
        size = next(order)
        out.append((t, size))
        t += max(1, round(size * 8 * NS / rate_bps))
    return out


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(64, 9000), min_size=1, max_size=4),
       rate_bps=st.floats(1e5, 1e10, allow_nan=False), start=st.integers(0, 10**6))
def test_each_frame_is_followed_by_its_own_bits_at_the_rate(sizes: list[int], rate_bps: float, start: int) -> None:
    """Flows of several frame sizes on one pacer: the gap after a frame is that frame's bits over
    the rate, not the largest frame's (``packet_bytes``), so the bits sent per second are the rate;
    the flows take turns by deficit round-robin in bytes, so each gets the same bits. Differential
    against a pacer written here from those rules alone."""
    sched = VirtualScheduler()
    pacer, far, _ = _line(sched, pacer=Pacer(rate_bps, max(sizes), start))
    for i, size in enumerate(sizes):
        pacer.add_flow(i + 1, 0, None, _sized_frame(i + 1, size))
    pacer.rearm()
    frames = 40
    horizon = start + sum(max(1, round(s * 8 * NS / rate_bps)) for s in sizes) * frames // len(sizes)
    sched.run_until(horizon - 1)
    got = [(t, len(f)) for t, f in far.got]
    assert got == expected_send_times(sizes, rate_bps, start, horizon)
    # the bits of every frame but the last fill the time to the last one, at the rate (rounding: 1/2 ns a gap)
    bits = 8 * sum(size for _, size in got[:-1])
    assert abs(bits / rate_bps * NS - (got[-1][0] - got[0][0])) <= len(got) / 2 + 1
    # equal bits: any two flows' bytes differ by less than a quantum and a frame (DRR's bound)
    per_flow = [sum(len(f) for _, f in far.got if parse(f).flow == i + 1) for i in range(len(sizes))]
    assert max(per_flow) - min(per_flow) < 2 * max(sizes)


def test_a_rate_change_spaces_the_last_frame_by_its_own_bits_at_the_new_rate() -> None:
    """Three 500-byte frames (a 1500-byte quantum) then a 1500-byte one at 8 Mb/s: 0.5 ms each, then
    1.5 ms; a new rate counts from the last frame sent, with that frame's bits."""
    sched = VirtualScheduler()
    pacer, far, _ = _line(sched, pacer=Pacer(8e6, 1500))
    pacer.add_flow(1, 0, None, _sized_frame(1, 500))
    pacer.add_flow(2, 0, None, _sized_frame(2, 1500))
    pacer.rearm()
    sched.run_until(3_100_000)
    assert [(t, len(f)) for t, f in far.got] == [(0, 500), (500_000, 500), (1_000_000, 500), (1_500_000, 1500),
                                                  (3_000_000, 500)]
    assert pacer.gap_ns == 500_000  # after the 500-byte frame sent at 3 ms
    assert (pacer.taken, pacer.taken_bytes) == (5, 3500)
    pacer.set_rate(4e6)  # 500 bytes at 4 Mb/s: 1 ms after the last frame
    pacer.rearm()
    sched.run_until(4_000_000)
    assert [t for t, _ in far.got][-1] == 4_000_000


def test_the_pure_pacer_spaces_by_the_frame_it_is_told_of() -> None:
    pacer = Pacer(8e6, 1500, 0)
    assert pacer.gap_ns == 1_500_000  # before any frame: a packet_bytes frame's
    pacer.on_sent(0, 500)
    assert pacer.next_send_ns() == 500_000
    pacer.on_sent(500_000)  # no size: packet_bytes
    assert pacer.next_send_ns() == 2_000_000
    with pytest.raises(ValueError, match="sent frame must have > 0 bytes"):
        pacer.on_sent(0, 0)
    with pytest.raises(ValueError, match="packet size must be > 0 bytes"):
        Pacer(8e6, 0)


@given(caps=st.lists(st.one_of(st.none(), st.integers(1, 12).map(lambda m: m * 1e6)), min_size=1, max_size=4))
@settings(max_examples=40, deadline=None)
def test_a_flow_with_a_ceiling_stays_under_it_and_the_others_share_what_it_leaves(caps: list[float | None]) -> None:
    """A flow's ``r_max`` is its own ceiling: the host's flows share its rate max-min fair in bits (an ALINEA
    flow of 5 Mb/s beside an uncapped one on a 20 Mb/s host got 10 before: an equal split). The rate here is
    8 Mb/s; each flow sends no more than its cap, and the pacer sends as much as the caps allow."""
    sched = VirtualScheduler()
    pacer, far, _ = _line(sched)
    for i, cap in enumerate(caps, start=1):
        pacer.add_flow(i, 0, None, _frame(i), cap)
    pacer.rearm()
    span = 200_000_000  # 0.2 s: 2,000 frames of 100 B at 8 Mb/s
    sched.run_until(span)
    bits = {i: 0 for i in range(1, len(caps) + 1)}
    for _, f in far.got:
        bits[parse(f).flow] += 8 * SIZE
    expected, left = {}, 8e6  # max-min fair shares of 8 Mb/s
    todo = sorted(bits, key=lambda i: caps[i - 1] or float("inf"))
    while todo:
        i = todo.pop(0)
        expected[i] = min(left / (len(todo) + 1), caps[i - 1] or float("inf"))
        left -= expected[i]
    for i, got in bits.items():
        rate = got / (span / 1e9)
        assert rate <= expected[i] + 8 * SIZE / (span / 1e9) * 2, (i, rate, expected)  # two frames' rounding
        assert rate >= expected[i] * 0.97 - 8 * SIZE / (span / 1e9) * 2, (i, rate, expected)


def test_a_flow_cap_must_be_a_rate() -> None:
    with pytest.raises(ValueError, match="flow 1's cap rate must be > 0"):
        Pacer(8e6, SIZE).add_flow(1, 0, None, _frame(1), 0.0)
