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

__all__ = ["thread_wakeup_late_us", "skip_if_the_machine_wakes_late"]


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


def skip_if_the_machine_wakes_late(bound_us: float, what: str, quantile: float = 0.5) -> None:
    """Skip the calling test when a plain thread's wake-up (the median, or ``quantile``) is already
    ``bound_us`` / 2 late."""
    late = thread_wakeup_late_us(quantile=quantile)
    if late > bound_us / 2:
        pytest.skip(f"{what}: this machine now wakes a sleeping thread {late:.0f} µs late ({100 * quantile:.0f}th "
                    f"percentile of 60 sleeps of 200 µs), against a bound of {bound_us:.0f} µs: the machine is "
                    "loaded")
