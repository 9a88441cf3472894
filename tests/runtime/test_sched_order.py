"""VirtualScheduler runs events in exactly one heap's order, whatever container holds them.

Why: the scheduler keeps callbacks due at the current time in a FIFO next to its heap, and a
link direction's deliveries in a lane whose head alone is in the heap (speed-ups); the order
must stay (due time, scheduling order) with late callbacks first, as with one heap. A
reference model with one sorted list is driven by the same random program (callbacks that
schedule now, in the past, in the future, and cancel) and both must run the same callbacks at
the same virtual times; link deliveries are checked against the order their due times give.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from runtime.link import InMemoryLink
from runtime.sched import VirtualScheduler


class ReferenceScheduler:
    """One list, smallest (due, seq) first, the clock never goes back: the specification."""

    def __init__(self) -> None:
        self.now = 0
        self.pending: list[list[Any]] = []  # [due, seq, fn, args, cancelled]
        self.seq = 0

    def now_ns(self) -> int:
        return self.now

    def call_at(self, t: int, fn: Callable[..., Any], *args: Any) -> list[Any]:
        entry = [t, self.seq, fn, args, False]
        self.seq += 1
        self.pending.append(entry)
        return entry

    @staticmethod
    def cancel(handle: list[Any]) -> None:
        handle[4] = True

    def run(self) -> None:
        while self.pending:
            entry = min(self.pending, key=lambda e: (e[0], e[1]))
            self.pending.remove(entry)
            if entry[4]:
                continue
            self.now = max(self.now, entry[0])
            entry[2](*entry[3])


def drive(sched: Any, cancel: Callable[[Any], None], seed: int) -> list[tuple[int, int]]:
    """A random program of callbacks; returns (virtual time, callback id) in running order."""
    rng = random.Random(seed)
    ran: list[tuple[int, int]] = []
    handles: list[Any] = []
    budget = [400]

    def callback(ident: int) -> None:
        ran.append((sched.now_ns(), ident))
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            if budget[0] <= 0:
                return
            budget[0] -= 1
            kind = rng.random()
            now = sched.now_ns()
            if kind < 0.45:
                t = now  # due now: the FIFO
            elif kind < 0.6:
                t = max(0, now - rng.randint(1, 50))  # late
            else:
                t = now + rng.randint(0, 100)
            handles.append(sched.call_at(t, callback, rng.randrange(10**6)))
            if handles and rng.random() < 0.15:
                cancel(handles[rng.randrange(len(handles))])

    for i in range(20):
        handles.append(sched.call_at(rng.randint(0, 200), callback, i))
    sched.run()
    return ran


@pytest.mark.parametrize("seed", range(25))
def test_same_order_and_times_as_one_sorted_list(seed: int) -> None:
    ref = ReferenceScheduler()
    expected = drive(ref, ReferenceScheduler.cancel, seed)
    got = drive(VirtualScheduler(), lambda h: h.cancel(), seed)
    assert len(expected) > 20
    assert got == expected


def drive_links(seed: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Callbacks and link deliveries scheduled by a random program, on the engine's scheduler.

    Each link direction's deliveries wait in a lane of the scheduler with only its head in the
    heap; the delay made shorter mid-flight and per-frame extra delays make some come due before
    frames sent earlier. Returns (what ran, in order) and (the same, in one heap's order: due
    time, then the order of scheduling), each as (virtual time, event id).
    """
    rng = random.Random(seed)
    sched = VirtualScheduler()
    ran: list[tuple[int, int]] = []
    keyed: list[tuple[int, int, int]] = []  # (due, scheduling order, id)
    order = [0]

    def note(due: int, ident: int) -> None:
        keyed.append((due, order[0], ident))
        order[0] += 1

    class End:
        def receive(self, frame: bytes) -> None:
            ran.append((sched.now_ns(), int.from_bytes(frame[:4], "big")))

    a, b = End(), End()
    extra: dict[int, int] = {}
    link = InMemoryLink(sched, a, b, bitrate=rng.choice((0, 10**9)), delay_ns=50,
                        extra_delay=lambda frame, _d: extra.get(int.from_bytes(frame[:4], "big"), 0))
    budget = [300]

    def callback(ident: int) -> None:
        ran.append((sched.now_ns(), ident))
        for _ in range(rng.choice((1, 2, 3, 4))):
            if budget[0] <= 0:
                return
            budget[0] -= 1
            now, ident = sched.now_ns(), rng.randrange(10**6)
            kind = rng.random()
            if kind < 0.5:
                if rng.random() < 0.1:
                    extra[ident] = rng.randint(1, 200)
                delay = link.model.delay_ns + extra.get(ident, 0)
                busy = link.send(rng.choice((a, b)), ident.to_bytes(4, "big") + bytes(60))
                note(now + busy + delay, ident)
            elif kind < 0.6:
                link.model = replace(link.model, delay_ns=rng.randint(0, 120))
            else:
                t = now + rng.randint(0, 100)
                sched.call_at(t, callback, ident)
                note(t, ident)

    for i in range(30):
        t = rng.randint(0, 100)
        sched.call_at(t, callback, i)
        note(t, i)
    sched.run()
    return ran, [(due, ident) for due, _, ident in sorted(keyed)]


@pytest.mark.parametrize("seed", range(25))
def test_link_deliveries_run_in_one_heaps_order_with_every_other_event(seed: int) -> None:
    got, expected = drive_links(seed)
    assert len(got) > 100
    assert got == expected
