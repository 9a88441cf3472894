"""Scheduler behaviour: deterministic virtual time, and the real-time loop's thread contract."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from p4switch.sched import RealtimeScheduler, VirtualScheduler

# ---- virtual time ------------------------------------------------------------------------


def test_virtual_runs_in_time_order_and_ties_in_insertion_order() -> None:
    s = VirtualScheduler()
    seen: list[tuple[int, str]] = []
    for t, tag in [(30, "c"), (10, "a1"), (20, "b"), (10, "a2"), (10, "a3")]:
        s.call_at(t, lambda tag=tag: seen.append((s.now_ns(), tag)))
    assert s.run() == 5
    assert seen == [(10, "a1"), (10, "a2"), (10, "a3"), (20, "b"), (30, "c")]


def test_virtual_call_later_is_relative_and_callbacks_can_schedule() -> None:
    s = VirtualScheduler(start_ns=1000)
    times: list[int] = []

    def tick(n: int) -> None:
        times.append(s.now_ns())
        if n:
            s.call_later(7, tick, n - 1)

    s.call_later(5, tick, 3)
    s.run()
    assert times == [1005, 1012, 1019, 1026]


def test_virtual_cancel_and_pending() -> None:
    s = VirtualScheduler()
    ran: list[int] = []
    h1 = s.call_at(5, ran.append, 1)
    s.call_at(6, ran.append, 2)
    assert s.pending() == 2
    h1.cancel()
    h1.cancel()  # idempotent
    assert s.pending() == 1
    s.run()
    assert ran == [2]
    assert s.pending() == 0
    assert s.step() is False


def test_virtual_run_until_and_run_for_move_the_clock() -> None:
    s = VirtualScheduler()
    ran: list[int] = []
    for t in (10, 20, 30):
        s.call_at(t, ran.append, t)
    assert s.run_until(20) == 2
    assert s.now_ns() == 20 and ran == [10, 20]
    assert s.run_for(5) == 0
    assert s.now_ns() == 25
    s.run_for(100)
    assert s.now_ns() == 125 and ran == [10, 20, 30]


def test_virtual_late_callbacks_run_now_in_due_time_order_before_later_ones() -> None:
    s = VirtualScheduler()
    seen: list[tuple[int, str]] = []

    def at_100() -> None:
        s.call_at(150, lambda: seen.append((s.now_ns(), "future")))
        s.call_at(50, lambda: seen.append((s.now_ns(), "late50")))
        s.call_at(20, lambda: seen.append((s.now_ns(), "late20")))

    s.call_at(100, at_100)
    s.run()
    assert seen == [(100, "late20"), (100, "late50"), (150, "future")]


def test_virtual_run_max_events_and_errors_propagate() -> None:
    s = VirtualScheduler()
    for t in range(5):
        s.call_at(t, lambda: None)
    assert s.run(max_events=3) == 3
    assert s.pending() == 2

    def boom() -> None:
        raise RuntimeError("boom")

    s2 = VirtualScheduler()
    s2.call_at(1, boom)
    with pytest.raises(RuntimeError, match="boom"):
        s2.run()


def test_virtual_rejects_non_integer_time() -> None:
    s = VirtualScheduler()
    with pytest.raises(TypeError, match="t_ns"):
        s.call_at(1.5, lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dt_ns"):
        s.call_later(-1, lambda: None)


# ---- real time ---------------------------------------------------------------------------


@pytest.fixture
def loop():
    errors: list[BaseException] = []
    sched = RealtimeScheduler(on_error=errors.append)
    sched.errors = errors  # type: ignore[attr-defined]
    sched.start()
    try:
        yield sched
    finally:
        sched.stop()


def test_realtime_clock_starts_near_zero_and_is_monotonic() -> None:
    s = RealtimeScheduler()
    a = s.now_ns()
    b = s.now_ns()
    assert 0 <= a <= b < 5_000_000_000
    assert abs(s.wall_origin_ns + a - time.time_ns()) < 1_000_000_000
    s.stop()


def test_realtime_timers_run_on_loop_thread_in_order_not_early(loop: RealtimeScheduler) -> None:
    seen: list[tuple[str, int, str]] = []
    due = {}
    for tag, dt in [("b", 20_000_000), ("a", 5_000_000), ("b2", 20_000_000)]:
        due[tag] = loop.now_ns() + dt
        loop.call_at(due[tag], lambda tag=tag: seen.append((tag, loop.now_ns(), threading.current_thread().name)))
    assert loop.wait_until(lambda: len(seen) == 3, timeout=5)
    assert [t for t, _, _ in seen] == ["a", "b", "b2"]
    for tag, t_ran, thread in seen:
        assert t_ran >= due[tag]
        assert thread == "p4switch-loop"


def test_realtime_run_sync_returns_and_reraises(loop: RealtimeScheduler) -> None:
    assert loop.run_sync(lambda x: x * 2, 21) == 42
    assert loop.run_sync(threading.current_thread) is not threading.current_thread()

    def fail() -> None:
        raise KeyError("nope")

    with pytest.raises(KeyError, match="nope"):
        loop.run_sync(fail)
    # nested: run_sync from the loop thread calls directly instead of deadlocking
    assert loop.run_sync(lambda: loop.run_sync(lambda: 7)) == 7


def test_realtime_run_sync_times_out_when_loop_is_busy(loop: RealtimeScheduler) -> None:
    loop.call_soon_threadsafe(time.sleep, 0.5)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="did not complete"):
        loop.run_sync(lambda: None, timeout=0.05)
    assert time.monotonic() - t0 < 0.4


def test_realtime_run_sync_requires_running_loop() -> None:
    s = RealtimeScheduler()
    with pytest.raises(RuntimeError, match="not running"):
        s.run_sync(lambda: None)
    s.stop()


def test_realtime_call_soon_threadsafe_fifo(loop: RealtimeScheduler) -> None:
    seen: list[int] = []
    for i in range(100):
        loop.call_soon_threadsafe(seen.append, i)
    assert loop.wait_until(lambda: len(seen) == 100, timeout=5)
    assert seen == list(range(100))


def test_realtime_cancelled_timer_does_not_run(loop: RealtimeScheduler) -> None:
    ran: list[int] = []
    h = loop.call_later(20_000_000, ran.append, 1)
    loop.call_later(40_000_000, ran.append, 2)
    h.cancel()
    assert loop.wait_until(lambda: ran == [2], timeout=5)
    assert ran == [2]


def test_realtime_reader_called_on_loop_thread(loop: RealtimeScheduler) -> None:
    a, b = socket.socketpair()
    a.setblocking(False)
    got: list[tuple[bytes, str]] = []

    def readable() -> None:
        got.append((a.recv(100), threading.current_thread().name))

    try:
        loop.add_reader(a.fileno(), readable)
        b.send(b"hello")
        assert loop.wait_until(lambda: len(got) == 1, timeout=5)
        assert got == [(b"hello", "p4switch-loop")]
        assert loop.remove_reader(a.fileno()) is True
        assert loop.remove_reader(a.fileno()) is False
        b.send(b"again")
        time.sleep(0.05)
        assert loop.run_sync(lambda: len(got)) == 1
    finally:
        a.close()
        b.close()


def test_realtime_callback_error_is_reported_and_loop_continues(loop: RealtimeScheduler) -> None:
    def boom() -> None:
        raise ValueError("bad packet")

    loop.call_soon_threadsafe(boom)
    assert loop.run_sync(lambda: 5) == 5
    assert [str(e) for e in loop.errors] == ["bad packet"]  # type: ignore[attr-defined]


def test_realtime_wait_until_gives_up_in_time(loop: RealtimeScheduler) -> None:
    t0 = time.monotonic()
    assert loop.wait_until(lambda: False, timeout=0.1) is False
    assert time.monotonic() - t0 < 1.0


def test_realtime_stop_is_idempotent_and_final() -> None:
    s = RealtimeScheduler()
    s.start()
    s.stop()
    s.stop()
    with pytest.raises(RuntimeError, match="after stop"):
        s.start()
