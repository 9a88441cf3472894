"""BMv2's egress queues (QueueingLogicPriRL), the traffic manager's default model.

Each test is written from a fact of BMv2's sources (docs/howto/bmv2.md restates them): departure
fixed at push as max(now, last_sent + 1/rate), capacity per priority queue, enq_qdepth and
deq_qdepth per priority queue, the highest-priority head whose time has come. They fail on a
traffic manager that applies the rate when it serves the queue (the ``shaper`` model).
"""

from __future__ import annotations

import pytest

from p4switch.tm import TMItem, TrafficManager, bmv2_interval_ns
from runtime.sched import VirtualScheduler

NS = 1_000_000_000
MS = 1_000_000


def make(wire_ns: int = 0, **kw) -> tuple[VirtualScheduler, list[tuple[int, TMItem]], TrafficManager]:
    s = VirtualScheduler()
    served: list[tuple[int, TMItem]] = []

    def service(port: int, item: TMItem) -> int:
        served.append((s.now_ns(), item))
        return wire_ns

    return s, served, TrafficManager(s, service, **kw)


def fill(tm: TrafficManager, port: int, n: int, prio: int = 0, tag: str = "") -> list[TMItem]:
    items = [TMItem(packet=f"{tag}{i}") for i in range(n)]
    for it in items:
        assert tm.enqueue(port, it, prio=prio)
    return items


def test_bmv2_is_the_default_model() -> None:
    assert make()[2].queue_model == "bmv2"


def test_raising_the_rate_does_not_respace_packets_already_queued() -> None:
    """The issue's observation on simple_switch: 20 frames behind ``set_queue_rate 5``, the rate
    raised to 100 kpps after 0.5 s: they still leave 200 ms apart, the last at 4 s."""
    s, served, tm = make()
    tm.set_queue_depth(2, 64)
    tm.set_queue_rate(2, 5)
    fill(tm, 2, 20)
    s.run_until(NS // 2)
    tm.set_queue_rate(2, 100_000)
    s.run()
    times = [t for t, _ in served]
    assert times == [(k + 1) * 200 * MS for k in range(20)]


def test_the_shaper_model_respaces_at_once() -> None:
    """The same sequence on the dequeue-time shaper: the remaining 17 leave at 0.5 s."""
    s, served, tm = make(queue_model="shaper")
    tm.set_queue_rate(2, 5)
    fill(tm, 2, 20)
    s.run_until(NS // 2)
    tm.set_queue_rate(2, 100_000)
    s.run()
    assert served[-1][0] < 600 * MS


def test_a_rate_change_spaces_later_pushes_from_the_last_stamp() -> None:
    s, served, tm = make()
    tm.set_queue_rate(1, 10)  # 100 ms
    fill(tm, 1, 3, tag="a")  # stamped 100, 200, 300 ms
    tm.set_queue_rate(1, 100)  # 10 ms: later pushes follow last_sent = 300 ms
    fill(tm, 1, 2, tag="b")
    s.run()
    assert [(t // MS, it.packet) for t, it in served] == [
        (100, "a0"), (200, "a1"), (300, "a2"), (310, "b0"), (320, "b1")]


def test_rate_zero_still_waits_for_last_sent() -> None:
    """Rate 0 is no delay (interval 0), but max(now, last_sent) still holds a later push."""
    s, served, tm = make()
    tm.set_queue_rate(1, 1)
    fill(tm, 1, 3, tag="a")  # 1 s, 2 s, 3 s
    tm.set_queue_rate(1, 0)
    fill(tm, 1, 2, tag="b")
    s.run()
    assert [t for t, _ in served] == [NS, 2 * NS, 3 * NS, 3 * NS, 3 * NS]


def test_departure_is_max_of_now_and_last_sent_plus_interval() -> None:
    s, served, tm = make()
    tm.set_queue_rate(0, 1000)  # created at 0: last_sent = 0
    s.run_until(50 * MS)
    first = fill(tm, 0, 1)[0]
    assert first.depart_ns == 50 * MS  # now > last_sent + 1 ms
    second = fill(tm, 0, 1)[0]
    assert second.depart_ns == 51 * MS
    s.run()
    assert [t for t, _ in served] == [50 * MS, 51 * MS]


def test_a_queue_created_by_set_queue_rate_delays_its_first_packet_by_one_interval() -> None:
    """BMv2 sets last_sent to the queue's creation time, so a push right after the first
    set_queue_rate leaves one interval later."""
    s, served, tm = make()
    tm.set_queue_rate(3, 10)
    fill(tm, 3, 1)
    s.run()
    assert served[0][0] == 100 * MS


def test_interval_is_one_over_rate_truncated_to_ns() -> None:
    assert bmv2_interval_ns(3) == 333_333_333
    assert bmv2_interval_ns(7) == 142_857_142
    assert bmv2_interval_ns(250) == 4_000_000
    s, served, tm = make()
    tm.set_queue_depth(0, 100)
    tm.set_queue_rate(0, 3)
    fill(tm, 0, 10)
    s.run()
    assert {b[0] - a[0] for a, b in zip(served, served[1:])} == {333_333_333}


def test_capacity_is_per_priority_queue() -> None:
    s, served, tm = make(num_priorities=2)
    tm.set_queue_depth(4, 3)
    fill(tm, 4, 3, prio=0)
    assert tm.enqueue(4, TMItem(packet="lo-full"), prio=0) is False
    assert tm.enqueue(4, TMItem(packet="hi"), prio=1)  # its own queue has room
    assert tm.stats(4).dropped_full == 1


@pytest.mark.parametrize("model", ["bmv2", "shaper"])
def test_enq_and_deq_qdepth_count_the_packets_priority_queue_only(model: str) -> None:
    s, served, tm = make(num_priorities=2, queue_model=model)
    tm.set_queue_rate(5, 1)
    lo = fill(tm, 5, 3, prio=0, tag="lo")
    hi = fill(tm, 5, 2, prio=1, tag="hi")
    assert [it.enq_qdepth for it in lo] == [0, 1, 2]
    assert [it.enq_qdepth for it in hi] == [0, 1]  # the low queue's 3 packets are not counted
    assert tm.port_depth(5) == 5
    s.run()
    by_tag = {it.packet: it.deq_qdepth for _, it in served}
    assert (by_tag["hi0"], by_tag["hi1"]) == (1, 0)
    assert (by_tag["lo0"], by_tag["lo1"], by_tag["lo2"]) == (2, 1, 0)


def test_highest_priority_head_whose_time_has_come() -> None:
    """A higher priority whose head is not due yet lets a lower one go (BMv2's pop_back)."""
    s, served, tm = make(num_priorities=2)
    tm.set_queue_rate(0, 10, prio=1)  # prio 1 at 100 ms spacing, prio 0 unlimited
    fill(tm, 0, 2, prio=1, tag="hi")  # 100 ms, 200 ms
    fill(tm, 0, 2, prio=0, tag="lo")  # due now
    s.run_until(150 * MS)
    fill(tm, 0, 1, prio=0, tag="late")
    s.run()
    assert [(t // MS, it.packet) for t, it in served] == [
        (0, "lo0"), (0, "lo1"), (100, "hi0"), (150, "late0"), (200, "hi1")]


def test_a_busy_wire_holds_the_head_without_restamping() -> None:
    """p4switch's link model: the port is not served while its wire is busy; the stamps of
    the queued packets stay what the rate gave them."""
    s, served, tm = make(wire_ns=30 * MS)
    tm.set_queue_rate(0, 100)  # 10 ms spacing < 30 ms wire
    items = fill(tm, 0, 4)
    s.run()
    assert [it.depart_ns // MS for it in items] == [10, 20, 30, 40]
    assert [t // MS for t, _ in served] == [10, 40, 70, 100]


class LateScheduler:
    """A virtual clock whose timers fire ``late_ns`` after their time, as a real-time loop's do."""

    def __init__(self, late_ns: int) -> None:
        self.inner, self.late_ns = VirtualScheduler(), late_ns

    def now_ns(self) -> int:
        return self.inner.now_ns()

    def call_at(self, t_ns: int, fn, *args):  # noqa: ANN001, ANN201 - the Scheduler protocol
        return self.inner.call_at(t_ns + self.late_ns, fn, *args)


US = 1_000


@pytest.mark.parametrize(("pps", "spacing"), [(25_000, 40 * US), (0, 16 * US)], ids=["rate-bound", "wire-bound"])
def test_an_item_served_late_keeps_the_time_its_model_served_it(pps: int, spacing: int) -> None:
    """Every service 25 µs late, on a 16 µs wire: ``deq_ns`` is when the service ran, ``due_ns``
    when BMv2's model served the item: its departure stamp (rate-bound), or the end of the
    previous frame on the wire, dated from the previous due time (wire-bound). A real-time port
    starts each frame at ``due_ns`` (``RealtimeWire.busy_due_ns``), so late wake-ups cost it no
    rate."""
    s = LateScheduler(25 * US)
    served: list[TMItem] = []

    def service(port: int, item: TMItem) -> int:
        served.append(item)
        return item.due_ns + 16 * US - s.now_ns()  # what the port's dated wire returns

    tm = TrafficManager(s, service)
    tm.set_queue_rate(1, pps)
    fill(tm, 1, 20)
    s.inner.run()
    assert [it.due_ns - served[0].due_ns for it in served] == [k * spacing for k in range(20)]
    assert all(it.deq_ns - it.due_ns >= 9 * US for it in served[1:])  # the services ran late
