"""``RealtimeScheduler.try_now``: ``try_call`` answered on the spot, without a Future.

The compiled P4Runtime front end waits for the answer on its own thread anyway; the Future it
got from ``try_call`` and read at once was about 10 µs of Python per Write. ``try_now`` lends
the state under the same rules: its result, the call's exception, or ``NOT_LENT`` with nothing
run.
"""

from __future__ import annotations

import threading
import time

import pytest

from runtime.sched import NOT_LENT, RealtimeScheduler


@pytest.fixture
def loop():
    sched = RealtimeScheduler(on_error=lambda exc: None)
    sched.start()
    try:
        yield sched
    finally:
        sched.stop()


def _until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.001)
    return predicate()


def test_try_now_runs_on_the_caller_as_owner_and_returns_the_result(loop: RealtimeScheduler) -> None:
    time.sleep(0.02)  # nothing to do: the loop sleeps in its poll
    seen: list[tuple[int, bool]] = []
    assert loop.try_now(lambda: seen.append((threading.get_ident(), loop.in_loop_thread())) or 7) == 7
    assert seen == [(threading.get_ident(), True)]
    assert not loop.in_loop_thread()  # lent for the call only


def test_try_now_raises_the_calls_error_and_lends_again_after_it(loop: RealtimeScheduler) -> None:
    time.sleep(0.02)
    with pytest.raises(ZeroDivisionError):
        loop.try_now(lambda: 1 // 0)
    assert not loop.in_loop_thread()
    assert loop.try_now(lambda: "again") == "again"  # the state was given back
    assert loop.run_sync(lambda: "loop") == "loop"  # and the loop still serves


def test_try_now_refuses_while_the_loop_works_and_before_start(loop: RealtimeScheduler) -> None:
    inside, release = threading.Event(), threading.Event()
    loop.call_soon_threadsafe(lambda: (inside.set(), release.wait(60)))
    assert inside.wait(30)
    ran: list[str] = []
    try:
        assert loop.try_now(lambda: ran.append("ran")) is NOT_LENT
    finally:
        release.set()
    assert ran == []  # nothing ran: the caller submits instead
    stopped = RealtimeScheduler()
    assert stopped.try_now(lambda: ran.append("ran")) is NOT_LENT
    assert ran == []


def test_try_now_wakes_the_loop_for_a_timer_it_set_sooner(loop: RealtimeScheduler) -> None:
    ran: list[int] = []
    loop.call_later(60_000_000_000, ran.append, 0)
    time.sleep(0.02)  # the loop sleeps towards the 60 s timer
    loop.try_now(lambda: loop.call_later(20_000_000, ran.append, 1))
    assert _until(lambda: ran == [1])


def test_try_call_keeps_its_future_answers(loop: RealtimeScheduler) -> None:
    """``try_call`` is ``try_now`` in a Future: a result, an error, or None when not lent."""
    time.sleep(0.02)
    ok = loop.try_call(lambda: 3)
    assert ok is not None and ok.result(0) == 3
    failing = loop.try_call(lambda: 1 // 0)
    assert failing is not None and isinstance(failing.exception(0), ZeroDivisionError)
    assert RealtimeScheduler().try_call(lambda: 3) is None
