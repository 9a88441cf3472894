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
    ``work`` s per ``sleep`` s: (raised, policy at once, policy after).

    How long "after" is: until the guard has put the thread back to normal priority (at most
    30 s), or, for a thread that mostly sleeps (``sleep`` > 0), 20 guard windows. Why not a fixed wall
    time: on a loaded machine the guard (a normal-priority thread, which also needs the GIL) may
    wake late, and a test that gave it 0.35 s of wall time would fail on load, not on behaviour;
    the guard's verdict uses the thread's CPU time against the window's wall time, which load
    does not change for a real-time thread."""
    out: dict[str, object] = {}

    def run() -> None:
        out["raised"] = enter_realtime(5, windows=3, window_s=0.02)
        out["before"] = os.sched_getscheduler(0)
        deadline = time.monotonic() + (0.4 if sleep > 0 else 30)
        while os.sched_getscheduler(0) == os.SCHED_FIFO and time.monotonic() < deadline:
            busy = time.thread_time() + work
            while time.thread_time() < busy:
                pass
            time.sleep(sleep)
        out["after"] = os.sched_getscheduler(0)

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    return out["raised"], out["before"], out["after"]  # type: ignore[return-value]


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_a_thread_that_keeps_a_core_busy_goes_back_to_normal_priority() -> None:
    assert _policies(work=0.01, sleep=0.0) == (True, os.SCHED_FIFO, os.SCHED_OTHER)


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_a_thread_that_mostly_waits_stays_at_real_time_priority() -> None:
    assert _policies(work=0.001, sleep=0.004) == (True, os.SCHED_FIFO, os.SCHED_FIFO)
