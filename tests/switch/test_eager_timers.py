"""EagerTimers: TM work due now runs after the current callback, in order, cancellable."""

from __future__ import annotations

from p4switch.sched import RealtimeScheduler
from p4switch.switch import EagerTimers


def test_due_work_runs_in_order_after_the_caller_and_future_work_on_the_loop() -> None:
    sched = RealtimeScheduler()
    sched.start()
    try:
        eager = EagerTimers(sched)
        log: list[str] = []

        def chain(n: int) -> None:
            log.append(f"chain{n}")
            if n < 3:
                eager.call_at(eager.now_ns(), chain, n + 1)  # re-arms itself "now", like the TM

        def scenario() -> None:
            eager.call_at(0, chain, 1)
            dropped = eager.call_at(0, log.append, "cancelled")
            eager.call_later(20_000_000, log.append, "future")
            dropped.cancel()
            log.append("caller")  # nothing ran re-entrantly inside call_at

        sched.run_sync(scenario)
        assert sched.wait_until(lambda: "chain3" in log, timeout=2)
        assert log[:4] == ["caller", "chain1", "chain2", "chain3"]
        assert "future" not in log
        assert sched.wait_until(lambda: "future" in log, timeout=2)
        assert "cancelled" not in log
    finally:
        sched.stop()


def test_drain_is_bounded_and_resumes_later() -> None:
    sched = RealtimeScheduler()
    sched.start()
    try:
        eager = EagerTimers(sched)
        count = [0]

        def tick() -> None:
            count[0] += 1

        n = 3 * EagerTimers.MAX_PER_DRAIN + 5
        sched.run_sync(lambda: [eager.call_at(0, tick) for _ in range(n)])
        assert sched.wait_until(lambda: count[0] == n, timeout=5)
    finally:
        sched.stop()
