"""A real-time scheduling priority for a loop thread, with a guard against it spinning.

Why: a link emulator delivers each frame at a time its model fixes, on a machine shared with
switches, hosts and a test runner. At normal priority its loop thread waits behind whatever else
is runnable: on a two-core machine under load its wake-ups came 0.5-1 ms late, which is the whole
delay budget a link model is held to. ``SCHED_FIFO`` puts the thread ahead of every normal one.

The risk of ``SCHED_FIFO`` is a thread that stops blocking (a bug, or a rate the loop cannot keep
up with): it would hold its core. The guard is a watchdog thread that reads the raised thread's
CPU clock: when the thread used more than ``BUSY_SHARE`` of a core over ``BUSY_WINDOWS``
consecutive windows of ``WINDOW_S``, it is put back to ``SCHED_OTHER`` (and a line logged), so
the process keeps working at normal priority instead of holding the core. Not ``RLIMIT_RTTIME``:
its ``SIGXCPU`` reaches Python's handler only on the main thread, which a spinning thread may
never let run before the hard limit's ``SIGKILL``; and a poll that returns at once, as a busy
loop's does, never resets it.
"""

from __future__ import annotations

import logging
import os
import threading
import time

__all__ = ["enter_realtime", "BUSY_SHARE", "BUSY_WINDOWS", "WINDOW_S"]

log = logging.getLogger(__name__)

#: The guard: a raised thread using more than BUSY_SHARE of a core over BUSY_WINDOWS windows of
#: WINDOW_S in a row goes back to normal priority.
BUSY_SHARE = 0.9
BUSY_WINDOWS = 3
WINDOW_S = 0.1


def enter_realtime(priority: int, *, busy_share: float = BUSY_SHARE, windows: int = BUSY_WINDOWS,
                   window_s: float = WINDOW_S) -> bool:
    """Run the calling thread at ``SCHED_FIFO`` ``priority``, guarded (above); False (logged)
    where the kernel refuses (not root) or ``priority`` is 0."""
    if priority <= 0:
        return False
    top = os.sched_get_priority_max(os.SCHED_FIFO)
    if not 1 <= priority <= top:
        raise ValueError(f"real-time priority {priority}: choose 0 (none) or 1-{top}")
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as exc:
        log.warning("staying at normal priority: SCHED_FIFO %d refused (%s)", priority, exc)
        return False
    clock = time.pthread_getcpuclockid(threading.get_ident())
    guard = threading.Thread(target=_watch, args=(threading.get_native_id(), clock, busy_share, windows, window_s),
                             name="realtime-guard", daemon=True)
    guard.start()
    return True


def _watch(tid: int, clock: int, busy_share: float, windows: int, window_s: float) -> None:
    busy = 0
    try:
        cpu, wall = time.clock_gettime(clock), time.monotonic()
        while True:
            time.sleep(window_s)
            cpu2, wall2 = time.clock_gettime(clock), time.monotonic()
            busy = busy + 1 if cpu2 - cpu > busy_share * (wall2 - wall) else 0
            cpu, wall = cpu2, wall2
            if busy >= windows:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                log.warning("thread %d used over %.0f %% of a core for %.1f s at real-time priority: "
                            "back to normal priority", tid, 100 * busy_share, windows * window_s)
                return
    except OSError:  # the thread has ended
        return
