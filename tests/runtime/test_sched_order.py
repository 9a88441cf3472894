"""VirtualScheduler runs events in exactly one heap's order, whatever container holds them.

Why: the scheduler keeps callbacks due at the current time in a FIFO next to its heap (a
speed-up); the order must stay (due time, scheduling order) with late callbacks first, as
with one heap. A reference model with one sorted list is driven by the same random program
(callbacks that schedule now, in the past, in the future, and cancel) and both must run
the same callbacks at the same virtual times.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

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
