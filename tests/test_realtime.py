"""runtime/realtime.py: a loop thread at SCHED_FIFO, put back to normal priority when it spins."""

from __future__ import annotations

import os
import threading
import time

import pytest

from runtime.realtime import enter_realtime


def test_priority_zero_is_normal_priority_and_out_of_range_is_refused() -> None:
    assert enter_realtime(0) is False
    with pytest.raises(ValueError, match="real-time priority 100: choose 0 \\(none\\) or 1-99"):
        enter_realtime(100)


def _policies(work: float, sleep: float) -> tuple[bool, int, int]:
    """A thread raised with a fast guard (3 windows of 20 ms), which then busies itself for
    ``work`` s per ``sleep`` s for 0.3 s: (raised, policy at once, policy after)."""
    out: dict[str, object] = {}

    def run() -> None:
        out["raised"] = enter_realtime(5, windows=3, window_s=0.02)
        out["before"] = os.sched_getscheduler(0)
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            busy = time.thread_time() + work
            while time.thread_time() < busy:
                pass
            time.sleep(sleep)
        time.sleep(0.05)  # the guard's last window
        out["after"] = os.sched_getscheduler(0)

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    return out["raised"], out["before"], out["after"]  # type: ignore[return-value]


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_a_thread_that_keeps_a_core_busy_goes_back_to_normal_priority() -> None:
    assert _policies(work=0.01, sleep=0.0) == (True, os.SCHED_FIFO, os.SCHED_OTHER)


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_a_thread_that_mostly_waits_stays_at_real_time_priority() -> None:
    assert _policies(work=0.001, sleep=0.004) == (True, os.SCHED_FIFO, os.SCHED_FIFO)
