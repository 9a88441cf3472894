"""The downstream buffer's forecast on BMv2's queues (controlplane/forecast.py)."""

from __future__ import annotations

import pytest

from controlplane.forecast import SCHEDULE_BOUND_S, QueueForecast, schedule_floor_pps

MS = 1_000_000


def steady(f: QueueForecast, reports: int, pps: int, occ: int, queued: int, t0: int = 0, fwd0: int = 0,
           period_ms: int = 10) -> int:
    """``pps`` in and out of this hop's queue (``queued`` packets); the downstream buffer holds ``occ``."""
    per = pps * period_ms // 1000
    t, fwd = t0, fwd0
    for _ in range(reports):
        f.update(t, occ, fwd + queued, fwd, pps)
        t += period_ms * MS
        fwd += per
    return t


def test_at_equilibrium_the_forecast_is_the_occupancy() -> None:
    f = QueueForecast()
    steady(f, 300, 200, 140, 140)
    assert f.queued == 140
    assert f.horizon_s == pytest.approx(140 / 200, abs=0.02)  # last_sent rebuilt: Q / r
    assert f.drain_pps == pytest.approx(200, abs=1)
    assert f.forecast_pkts == pytest.approx(140, abs=3)


def test_a_slower_drain_downstream_raises_the_forecast_before_the_buffer_rises() -> None:
    f = QueueForecast()
    t = steady(f, 300, 200, 140, 140)
    # the downstream buffer now drains 150 of our 200 packets/s: it gains 0.5 packet per report
    fwd, occ = 300 * 2, 140.0
    for _ in range(30):
        occ += 0.5
        f.update(t, int(occ), fwd + 140, fwd, 200)
        t += 10 * MS
        fwd += 2
    assert f.drain_pps == pytest.approx(150, abs=10)  # the short window took over
    assert f.forecast_pkts > occ + 20  # about 50 packets/s over the 0.7 s horizon


def test_an_empty_queue_has_no_horizon() -> None:
    f = QueueForecast()
    f.update(0, 5, 10, 10, 100)
    f.update(10 * MS, 5, 11, 11, 100)
    assert f.queued == 0 and f.horizon_s == 0


def test_schedule_floor_bounds_the_schedule_a_cut_can_stamp() -> None:
    link = 250.0
    for q in (0, 10, 140, 300):
        r = schedule_floor_pps(q, link)
        assert (q + 1) / r == pytest.approx((q + 1) / link + SCHEDULE_BOUND_S)
    assert schedule_floor_pps(10, 0) == 0
