"""What the compiled engine adds to the contracts of runtime/sched.py, runtime/link.py, p4switch/tm.py.

Why: the engine's objects hold Python objects and call back into Python (docs/background/engine.md, "Rules the
Rust code keeps"). These tests pin the rules: cycles through the engine are collected, a callback
may re-enter the object that called it, the same objects run on a scheduler that is not the
engine's, and a missing callback is a clear error.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from p4switch.tm import TMItem, TrafficManager
from runtime.link import InMemoryLink, LinkModel
from runtime.sched import VirtualScheduler


class Owner:
    """A Python object in a cycle with engine objects (as a switch core is with its TM)."""

    def __init__(self) -> None:
        self.sched = VirtualScheduler()
        self.tm = TrafficManager(self.sched, self.service)
        self.link = InMemoryLink(self.sched, self, Sink(self.sched), loss=self.lose)
        self.served: list[Any] = []

    def receive(self, frame: bytes) -> None:
        self.served.append(frame)

    def lose(self, frame: bytes, direction: str) -> bool:
        return False

    def service(self, port: int, item: TMItem) -> int:
        self.served.append(item.packet)
        return 0


def test_cycles_through_engine_objects_are_collected() -> None:
    owner = Owner()
    owner.sched.call_at(10, owner.service, 1, TMItem("timer"))  # the heap holds a bound method too
    for i in range(3):
        owner.tm.enqueue(1, TMItem(i))
    owner.tm.set_queue_rate(1, 10)  # a pending wake-up handle: TM -> handle -> owner.tm._serve
    owner.link.send(owner, b"frame")  # a pending delivery on the heap
    ref = weakref.ref(owner)
    del owner
    gc.collect()
    assert ref() is None


class FrontOwner:
    """As p4switch/p4runtime/server.py holds it: the front end's callbacks are this object and its methods."""

    def __init__(self) -> None:
        import hbh_engine

        self.front = hbh_engine.P4RuntimeFront("127.0.0.1:0", "127.0.0.1:1", self.write, self.read, self)

    def write(self, body: bytes) -> bytes:
        return body

    def read(self, body: bytes) -> bytes:
        return body


def test_a_cycle_through_the_p4runtime_front_end_is_collected() -> None:
    ref = weakref.ref(FrontOwner())
    gc.collect()
    assert ref() is None


def test_a_service_callback_may_enqueue_into_its_own_tm() -> None:
    """Recirculation: egress of one packet queues another into the same TM."""
    s = VirtualScheduler()
    out: list[tuple[int, int]] = []

    def service(port: int, item: TMItem) -> int:
        out.append((port, item.packet))
        if item.packet < 3:
            assert tm.enqueue(port + 1, TMItem(item.packet + 1))
        return 1_000

    tm = TrafficManager(s, service)
    tm.enqueue(0, TMItem(0))
    s.run()
    assert out == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert s.now_ns() == 0 and tm.stats(3).dequeued == 1


def test_a_tm_without_service_says_so() -> None:
    s = VirtualScheduler()
    tm = TrafficManager(s)
    tm.enqueue(1, TMItem(b"x"))
    with pytest.raises(RuntimeError, match="bind_service"):
        s.run()


class ListScheduler:
    """A plain Python scheduler (not the engine's): the engine's objects must use its calls."""

    def __init__(self) -> None:
        self.now = 0
        self.heap: list[tuple[int, int, Callable[..., Any], tuple]] = []
        self.seq = itertools.count()

    def now_ns(self) -> int:
        return self.now

    def call_at(self, t: int, fn: Callable[..., Any], *args: Any) -> Any:
        entry = [t, next(self.seq), fn, args, False]
        heapq.heappush(self.heap, entry)
        return self

    def cancel(self) -> None:  # the handle: cancelling is not needed by this test's program
        pass

    def run(self) -> None:
        while self.heap:
            t, _, fn, args, _ = heapq.heappop(self.heap)
            self.now = max(self.now, t)
            fn(*args)


class Sink:
    def __init__(self, sched: Any) -> None:
        self.sched = sched
        self.got: list[tuple[int, bytes]] = []

    def receive(self, frame: bytes) -> None:
        self.got.append((self.sched.now_ns(), frame))


@pytest.mark.parametrize("make_sched", [VirtualScheduler, ListScheduler])
def test_tm_and_link_give_the_same_times_on_any_scheduler(make_sched: Callable[[], Any]) -> None:
    sched = make_sched()
    a, b = Sink(sched), Sink(sched)
    link = InMemoryLink(sched, a, b, model=LinkModel(bitrate_bps=8_000_000, delay_ns=1_000, overhead_bytes=0,
                                                     min_frame_bytes=0))
    tm = TrafficManager(sched, lambda port, item: link.send(a, item.packet), default_rate_pps=1000)
    for i in range(3):
        tm.enqueue(1, TMItem(bytes([i]) * 100))
    sched.run()
    # BMv2: the first departure is 1 ms after the queue was created; 100 bytes at 8 Mb/s = 100 µs on
    # the wire, 1 µs of delay
    assert b.got == [(1_101_000, bytes([0]) * 100), (2_101_000, bytes([1]) * 100), (3_101_000, bytes([2]) * 100)]
    assert link.stats["a->b"].delivered == 3 and link.stats["a->b"].sent_bytes == 300


def test_bytearray_frames_are_delivered_as_bytes() -> None:
    s = VirtualScheduler()
    a, b = Sink(s), Sink(s)
    link = InMemoryLink(s, a, b)
    assert link.send(a, bytearray(b"abc")) == 0
    s.run()
    assert b.got == [(0, b"abc")] and type(b.got[0][1]) is bytes


def test_engine_objects_stay_visible_to_the_collector_after_reuse() -> None:
    """A freed object's memory reused for a new one must still be tracked (a PyO3 freelist is not)."""
    s = VirtualScheduler()
    for _ in range(3):
        handles, items = [s.call_at(1, print) for _ in range(50)], [TMItem(i) for i in range(50)]
        del handles, items
    assert gc.is_tracked(s.call_at(1, print)) and gc.is_tracked(TMItem(0))
