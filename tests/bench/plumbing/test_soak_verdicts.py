"""The soak's leak verdict (tests/bench/soak.py): the P4Runtime front end's thread pool may fill late
in a soak within its bound; any other thread or fd more is growth."""

from __future__ import annotations

import os

from tests.bench.soak import FRONT_THREADS_MAX, ProcStats, no_growth, proc_stats


def test_the_front_ends_pool_may_fill_within_its_bound() -> None:
    before = ProcStats(80_000, 28, 16, 3)
    assert no_growth(before, ProcStats(78_000, 28, 17, 4))
    assert no_growth(before, ProcStats(78_000, 27, 15, 3))


def test_a_thread_an_fd_or_a_pool_past_its_bound_is_growth() -> None:
    before = ProcStats(80_000, 28, 16, 3)
    assert not no_growth(before, ProcStats(78_000, 28, 17, 3))  # another thread
    assert not no_growth(before, ProcStats(78_000, 29, 16, 3))  # an fd
    extra = FRONT_THREADS_MAX + 1 - 3
    assert not no_growth(before, ProcStats(78_000, 28, 16 + extra, FRONT_THREADS_MAX + 1))


def test_proc_stats_counts_this_process_threads() -> None:
    st = proc_stats(os.getpid())
    assert st.threads >= 1 and st.fds >= 3 and st.front_threads == 0
