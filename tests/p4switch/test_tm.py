"""Traffic manager on virtual time: FIFO, depth limits, priorities, stamps; the dequeue-time shaper model.

BMv2's enqueue-time model (the default) has its own file, test_tm_bmv2.py."""

from __future__ import annotations

import pytest

from p4switch.tm import MAX_QUEUE_DEPTH, TMItem, TrafficManager
from runtime.sched import VirtualScheduler
from tests.wakeups import skip_if_the_machine_wakes_late

NS = 1_000_000_000


class Recorder:
    """A service callback that records (time, port, item) and returns a fixed wire time."""

    def __init__(self, sched: VirtualScheduler, wire_ns: int = 0) -> None:
        self.sched = sched
        self.wire_ns = wire_ns
        self.served: list[tuple[int, int, TMItem]] = []

    def __call__(self, port: int, item: TMItem) -> int:
        self.served.append((self.sched.now_ns(), port, item))
        return self.wire_ns

    def payloads(self) -> list:
        return [item.packet for _, _, item in self.served]

    def times(self) -> list[int]:
        return [t for t, _, _ in self.served]


def make(wire_ns: int = 0, **kw) -> tuple[VirtualScheduler, Recorder, TrafficManager]:
    s = VirtualScheduler()
    rec = Recorder(s, wire_ns)
    return s, rec, TrafficManager(s, rec, **kw)


def expected_slots(pps: int, start: int, end: int) -> list[int]:
    """Exact service times of a backlogged queue: start + ceil(k * 1e9 / pps) within [start, end]."""
    out, k = [], 0
    while (t := start + -(-k * NS // pps)) <= end:
        out.append(t)
        k += 1
    return out


def test_defaults_match_bmv2() -> None:
    _, _, tm = make()
    assert tm.queue_depth_limit(1) == 64
    assert tm.queue_rate(1) == 0  # unlimited


def test_fifo_order_unlimited_rate_serves_everything_at_once() -> None:
    s, rec, tm = make()
    for i in range(10):
        assert tm.enqueue(3, TMItem(packet=i))
    s.run()
    assert rec.payloads() == list(range(10))
    assert set(rec.times()) == {0}
    assert {port for _, port, _ in rec.served} == {3}


@pytest.mark.parametrize(("pps", "duration"), [(7, 3 * NS), (1000, 3 * NS), (33_333, NS // 2 + 12_345)])
def test_backlogged_queue_drains_at_exactly_the_rate(pps: int, duration: int) -> None:
    s, rec, tm = make(queue_model="shaper")
    n = duration * pps // NS + 50  # more than can be served: the queue never empties
    tm.set_queue_depth(1, n)
    tm.set_queue_rate(1, pps)
    for i in range(n):
        tm.enqueue(1, TMItem(packet=i))
    s.run_until(duration)
    # count from the rate and the duration: one at t=0, then one per 1/pps s
    assert len(rec.served) == duration * pps // NS + 1
    assert rec.times() == expected_slots(pps, 0, duration)
    assert rec.payloads() == list(range(len(rec.served)))


def test_long_run_has_no_drift_with_a_fractional_interval() -> None:
    # 3 pps: interval 333_333_333.33 ns. Truncating the interval would serve an extra
    # packet every ~1e8 packets' worth of ns; carrying the fraction keeps k/pps exact.
    s, rec, tm = make(queue_model="shaper")
    pps, duration = 3, 600 * NS
    tm.set_queue_depth(0, 2000)
    tm.set_queue_rate(0, pps)
    for i in range(2000):
        tm.enqueue(0, TMItem(packet=i))
    s.run_until(duration)
    assert len(rec.served) == duration * pps // NS + 1
    times = rec.times()
    assert times[-1] == duration  # the 1800th interval ends exactly on the second
    gaps = {b - a for a, b in zip(times, times[1:])}
    assert gaps == {NS // pps, NS // pps + 1}


def test_continuous_arrivals_faster_than_rate_are_served_at_rate() -> None:
    s, rec, tm = make(queue_model="shaper")
    pps = 250
    tm.set_queue_rate(2, pps)
    tm.set_queue_depth(2, 10_000)
    arrivals_every = NS // 1000  # 1000 pps offered

    def arrive(i: int) -> None:
        tm.enqueue(2, TMItem(packet=i))
        if i < 9999:
            s.call_later(arrivals_every, arrive, i + 1)

    s.call_at(0, arrive, 0)
    duration = 4 * NS
    s.run_until(duration)
    assert rec.times() == expected_slots(pps, 0, duration)


def test_depth_limit_drops_and_counts() -> None:
    s, rec, tm = make()
    tm.set_queue_depth(4, 5)
    results = [tm.enqueue(4, TMItem(packet=i)) for i in range(8)]
    assert results == [True] * 5 + [False] * 3
    st = tm.stats(4)
    assert (st.enqueued, st.dropped_full, st.max_depth) == (5, 3, 5)
    assert tm.depth(4) == 5
    s.run()
    assert rec.payloads() == [0, 1, 2, 3, 4]
    assert tm.stats(4).dequeued == 5 and tm.depth(4) == 0


def test_depth_zero_refuses_everything() -> None:
    s, rec, tm = make()
    tm.set_queue_depth(1, 0)
    assert tm.enqueue(1, TMItem(packet="x")) is False
    s.run()
    assert rec.served == []


def test_lowering_depth_keeps_queued_packets() -> None:
    s, rec, tm = make()
    tm.set_queue_rate(1, 10)
    for i in range(6):
        tm.enqueue(1, TMItem(packet=i))
    tm.set_queue_depth(1, 2)
    assert tm.depth(1) == 6
    assert tm.enqueue(1, TMItem(packet="late")) is False
    s.run()
    assert rec.payloads() == list(range(6))


def test_stamps_follow_bmv2_semantics() -> None:
    s, rec, tm = make()
    pps = 1000  # one packet per ms
    tm.set_queue_rate(0, pps)
    s.run_until(5 * NS // 1000 + 123)  # arbitrary start, not on a µs boundary
    t_enq = s.now_ns()
    for i in range(4):
        tm.enqueue(0, TMItem(packet=i))
    s.run()
    items = [item for _, _, item in rec.served]
    assert [it.enq_qdepth for it in items] == [0, 1, 2, 3]  # depth before this packet
    assert [it.deq_qdepth for it in items] == [3, 2, 1, 0]  # packets left behind it
    assert all(it.enq_timestamp_us == t_enq // 1000 for it in items)
    for k, (t, _, it) in enumerate(rec.served):
        assert t == t_enq + k * NS // pps
        assert it.deq_ns == t and it.enq_ns == t_enq
        assert it.deq_timedelta_us == t // 1000 - t_enq // 1000
        assert it.port == 0 and it.prio == 0


def test_strict_priority_higher_number_first() -> None:
    s, rec, tm = make(wire_ns=10_000_000, num_priorities=3)  # the port sends one packet per 10 ms
    order = [(0, "a0"), (2, "a2"), (1, "a1"), (0, "b0"), (2, "b2"), (1, "b1")]
    for prio, tag in order:
        tm.enqueue(1, TMItem(packet=tag), prio=prio)
    s.run_until(15 * NS // 1000)  # two services done (t=0 and t=10 ms)

    tm.enqueue(1, TMItem(packet="c2"), prio=2)  # arrives later, still goes before prio 1 and 0
    s.run()
    assert rec.payloads() == ["a2", "b2", "c2", "a1", "b1", "a0", "b0"]


def test_shaper_each_priority_queue_has_its_own_rate() -> None:
    s, rec, tm = make(num_priorities=2, queue_model="shaper")
    tm.set_queue_rate(0, 10)  # both queues of port 0 at 10 pps each
    for i in range(2):
        tm.enqueue(0, TMItem(packet=f"hi{i}"), prio=1)
        tm.enqueue(0, TMItem(packet=f"lo{i}"), prio=0)
    s.run()
    assert [(t, it.packet) for t, _, it in rec.served] == [
        (0, "hi0"), (0, "lo0"), (NS // 10, "hi1"), (NS // 10, "lo1")]


def test_rate_limited_high_priority_lets_lower_priority_use_the_port() -> None:
    s, rec, tm = make(num_priorities=2, queue_model="shaper")
    tm.set_queue_rate(0, 1, prio=1)  # prio 1: one packet per second; prio 0 unlimited
    for i in range(3):
        tm.enqueue(0, TMItem(packet=f"hi{i}"), prio=1)
        tm.enqueue(0, TMItem(packet=f"lo{i}"), prio=0)
    s.run()
    assert rec.served[0][0] == 0 and rec.served[0][2].packet == "hi0"
    assert [(t, it.packet) for t, _, it in rec.served[1:4]] == [(0, "lo0"), (0, "lo1"), (0, "lo2")]
    assert [(t, it.packet) for t, _, it in rec.served[4:]] == [(NS, "hi1"), (2 * NS, "hi2")]


def test_wire_time_spaces_services_when_longer_than_rate_slot() -> None:
    wire = 3000
    s, rec, tm = make(wire_ns=wire, queue_model="shaper")
    for i in range(5):
        tm.enqueue(0, TMItem(packet=i))
    s.run()
    assert rec.times() == [k * wire for k in range(5)]

    s, rec, tm = make(wire_ns=wire, queue_model="shaper")
    tm.set_queue_rate(0, NS // 2000)  # 2 µs slot < 3 µs wire: the wire decides
    for i in range(5):
        tm.enqueue(0, TMItem(packet=i))
    s.run()
    assert rec.times() == [k * wire for k in range(5)]

    s, rec, tm = make(wire_ns=wire, queue_model="shaper")
    tm.set_queue_rate(0, NS // 5000)  # 5 µs slot > 3 µs wire: the rate decides
    for i in range(5):
        tm.enqueue(0, TMItem(packet=i))
    s.run()
    assert rec.times() == [k * 5000 for k in range(5)]


def test_idle_queue_earns_no_burst() -> None:
    s, rec, tm = make(queue_model="shaper")
    pps = 10
    tm.set_queue_rate(0, pps)
    tm.enqueue(0, TMItem(packet="first"))
    s.run_until(NS)
    for i in range(3):
        tm.enqueue(0, TMItem(packet=i))
    s.run()
    assert rec.times() == [0, NS, NS + NS // pps, NS + 2 * NS // pps]


def test_rate_change_respaces_after_the_last_service() -> None:
    s, rec, tm = make(queue_model="shaper")
    tm.set_queue_depth(0, 100)
    tm.set_queue_rate(0, 10)
    for i in range(20):
        tm.enqueue(0, TMItem(packet=i))
    s.run_until(250_000_000)  # services at 0, 100, 200 ms
    tm.set_queue_rate(0, 20)
    s.run_until(400_000_000)
    assert rec.times() == [ms * 1_000_000 for ms in (0, 100, 200, 250, 300, 350, 400)]
    tm.set_queue_rate(0, 0)  # unlimited: the rest goes at once
    s.run()
    assert rec.times()[-1] == 400_000_000 and len(rec.served) == 20


def test_set_all_applies_to_used_and_future_ports() -> None:
    s, rec, tm = make(num_ports=16)
    tm.enqueue(2, TMItem(packet="x"))
    tm.set_all_queue_depths(7)
    tm.set_all_queue_rates(50)
    for port in (2, 9):
        assert tm.queue_depth_limit(port) == 7
        assert tm.queue_rate(port) == 50
    tm.set_queue_rate(9, 5)
    assert tm.queue_rate(9) == 5 and tm.queue_rate(10) == 50


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda tm: tm.set_queue_depth(512, 10), "egress port 512 out of range 0..511"),
        (lambda tm: tm.set_queue_depth(-1, 10), "egress port -1 out of range"),
        (lambda tm: tm.set_queue_depth(1, -3), "queue depth -3"),
        (lambda tm: tm.set_all_queue_depths(MAX_QUEUE_DEPTH + 1), "queue depth"),
        (lambda tm: tm.set_queue_rate(1, -1), "queue rate -1"),
        (lambda tm: tm.set_queue_rate(1, 10, prio=1), "queue priority 1 out of range 0..0"),
        (lambda tm: tm.enqueue(600, TMItem(packet=b"")), "egress port 600"),
        (lambda tm: tm.set_queue_rate(1, 2.5), "queue rate 2.5"),
    ],
)
def test_bad_arguments_are_named(call, match: str) -> None:
    _, _, tm = make()
    with pytest.raises(ValueError, match=match):
        call(tm)


def test_enqueue_requires_tmitem() -> None:
    _, _, tm = make()
    with pytest.raises(TypeError, match="TMItem"):
        tm.enqueue(1, b"raw bytes")  # type: ignore[arg-type]


def test_bad_service_return_is_reported_and_port_keeps_going() -> None:
    s = VirtualScheduler()
    answers = iter(["oops", 0])
    tm = TrafficManager(s, lambda port, item: next(answers))
    tm.enqueue(1, TMItem(packet=1))
    tm.enqueue(1, TMItem(packet=2))
    with pytest.raises(ValueError, match="wire time"):
        s.run()
    s.run()
    assert tm.stats(1).dequeued == 2 and tm.depth(1) == 0


@pytest.mark.parametrize("model", ["shaper", "bmv2"])
def test_realtime_rate_is_kept_despite_loop_lateness(model: str) -> None:
    """On the wall clock, services are never early and lateness does not accumulate: under
    the shaper the span of n services is the rate's; under BMv2's model every packet leaves
    at or after its stamped departure, the stamps exactly one interval apart."""
    from runtime.sched import RealtimeScheduler

    rt = RealtimeScheduler()
    served: list[tuple[int, TMItem]] = []
    tm = TrafficManager(rt, lambda port, item: served.append((rt.now_ns(), item)) or 0, queue_model=model)
    pps, n = 200, 60
    rt.start()
    try:
        def fill() -> None:
            tm.set_queue_rate(0, pps)
            for i in range(n):
                tm.enqueue(0, TMItem(packet=i))

        rt.run_sync(fill)
        assert rt.wait_until(lambda: len(served) == n, timeout=60)
    finally:
        rt.stop()
    times = [t for t, _ in served]
    span = times[-1] - times[0]
    ideal = (n - 1) * NS // pps
    if model == "shaper":
        assert span >= ideal
        if span >= ideal + 30_000_000:  # a loaded machine makes many services late, not one
            skip_if_the_machine_wakes_late(30_000, f"the span was {(span - ideal) / 1e6:.1f} ms over", 0.9)
        assert span < ideal + 30_000_000  # bounded by one late service, not n of them
    else:
        departs = [it.depart_ns for _, it in served]
        assert {b - a for a, b in zip(departs, departs[1:])} == {NS // pps}
        assert all(t >= d for t, d in zip(times, departs))
        late = max(t - d for t, d in zip(times, departs))
        if late >= 30_000_000:
            skip_if_the_machine_wakes_late(30_000, f"a packet left {late / 1e6:.1f} ms after its stamp", 0.9)
        assert late < 30_000_000
