"""tests/bench/wakeup.py: the round trip it times, and the idle request it holds only while asked."""

from __future__ import annotations

import os

from tests.bench import wakeup


def test_a_round_trip_takes_time_and_cpu_and_leaves_the_affinity_as_it_was() -> None:
    mask = os.sched_getaffinity(0)
    cpu = min(mask)
    wall_us, cpu_us = wakeup.round_trip((cpu, cpu), 200)
    assert wall_us > 0 and cpu_us >= 0
    assert os.sched_getaffinity(0) == mask


def test_the_idle_request_lasts_while_held_only() -> None:
    """Held: the latency request's file is open in this process; after: closed (the request ends
    with it). Not root or no file: nothing held, and it says so."""
    def open_requests() -> int:
        n = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                n += os.readlink(f"/proc/self/fd/{fd}") == str(wakeup.CPU_DMA_LATENCY)
            except OSError:
                continue
        return n

    with wakeup.idle_polling() as polling:
        held = open_requests()
    assert held == (1 if polling else 0)
    assert open_requests() == 0
    assert wakeup.idle_settings().startswith("idle driver ")
