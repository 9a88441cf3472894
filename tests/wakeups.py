"""How late this machine wakes a sleeping thread right now: the reason a real-time test may skip.

Why: a few tests assert what real time itself is about (timers 200 µs apart fire about 200 µs
apart, not at epoll's millisecond). On a machine whose cores other work keeps busy, every thread
wakes late, the loop's too, and such a test would measure the load. The tests check their
property first; only when it fails do they measure the machine (this module) and skip, with the
measured number, if a plain sleeping thread wakes as late as the property's bound, so a
regression on an idle machine still fails.
"""

from __future__ import annotations

import threading
import time

import pytest

__all__ = ["thread_wakeup_late_us", "busy_thread_share", "skip_if_the_machine_wakes_late"]


def thread_wakeup_late_us(sleep_s: float = 200e-6, n: int = 60, quantile: float = 0.5) -> float:
    """The ``quantile`` (default the median) of the lateness (µs) of ``n`` sleeps of ``sleep_s`` in a
    fresh thread."""
    late: list[float] = []

    def run() -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            time.sleep(sleep_s)
            late.append((time.perf_counter() - t0 - sleep_s) * 1e6)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return sorted(late)[min(len(late) - 1, int(quantile * len(late)))]


def busy_thread_share(seconds: float = 0.2) -> float:
    """The share of a core a thread that keeps busy for ``seconds`` gets now (1.0: a whole core)."""
    out: list[float] = []

    def run() -> None:
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        while time.perf_counter() - wall0 < seconds:
            pass
        out.append((time.thread_time() - cpu0) / (time.perf_counter() - wall0))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[0]


def skip_if_the_machine_wakes_late(bound_us: float, what: str, quantile: float = 0.5) -> None:
    """Skip the calling test when the machine is measurably loaded now: a plain thread's wake-up (the
    median, or ``quantile``) is already ``bound_us`` / 2 late, or a thread that keeps busy gets less
    than 90 % of a core (a loop that spins towards its timers, as the real-time ones do, is then
    preempted for whole scheduler slices, which a sleeping probe does not see)."""
    late = thread_wakeup_late_us(quantile=quantile)
    share = busy_thread_share()
    if late > bound_us / 2 or share < 0.9:
        pytest.skip(f"{what}: this machine is loaded now: it wakes a sleeping thread {late:.0f} µs late "
                    f"({100 * quantile:.0f}th percentile of 60 sleeps of 200 µs; bound {bound_us:.0f} µs) and gives "
                    f"a busy thread {100 * share:.0f} % of a core")
