"""A steady fall of the exact drain across the window (controlplane/forecast.py, ``QueueForecast._follow_trend``):
the window's drain is the drain of its middle, so a drain that falls slowly stays under it, report after report,
by the slope times half the window, while no single stretch falls by more than the spread. The forecast follows
the trend's value now; a drain that only jitters about a constant rate (no slope beyond its error) is not followed;
the loop analysis's fluid model's switch laws (controlplane/fluid_laws.py) do not follow it."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.fluid_laws import SwitchControl
from controlplane.forecast import DRAIN_SPREAD_GAPS, QueueForecast, drain_noise
from controlplane.params import LawParams

GAP_NS = 750_000  # the report gap (fail-1's S6 -> S3: 0.75 ms)
START_PPS = 3_800.0  # 6.1 Mb/s in 200 B frames, S3's drain toward S1 when S3's buffer started to fill
END_PPS = 3_480.0  # 5.6 Mb/s 0.25 s later
SPAN_NS = 250_000_000


def feed(rate_at, seed: int = 1, f: QueueForecast | None = None) -> QueueForecast:
    """Reports every GAP_NS over SPAN_NS, the buffer holding 20 packets, its departures spaced at ``rate_at(t_ns)``
    with a jitter of a tenth of a spacing (frames of other ports interleaved); this hop's queue holds 2 packets."""
    rnd = random.Random(seed)
    f = QueueForecast() if f is None else f
    t, drained, last_ns = 0, 0, 0
    next_ns = 1e9 / rate_at(0)
    while t < SPAN_NS:
        t += GAP_NS
        while next_ns <= t:
            last_ns = round(next_ns)
            drained += 1
            next_ns += 1e9 / rate_at(next_ns) * (1 + 0.1 * (rnd.random() - 0.5))
        f.update(t, 20, drained + 2, drained, round(START_PPS), drained=drained, drained_ns=last_ns)
    return f


def falling(t_ns: float) -> float:
    return START_PPS + (END_PPS - START_PPS) * t_ns / SPAN_NS


def test_a_slow_steady_fall_of_the_drain_is_followed_to_its_value_now() -> None:
    """fail-1 of issue 46 (tests/topo/random_cases/slow-drain-creep-tree.yaml): S3's drain toward S1 fell from
    6.1 to 5.6 Mb/s over 0.2-0.3 s; S6's law followed the window's drain 0.4-0.7 Mb/s above it and S3's buffer
    from S6 crept full. The expected drain is the trend's now, not the window's (the middle's)."""
    f = feed(falling)
    assert f.window_pps > END_PPS + 0.1 * (START_PPS - END_PPS)  # the window lags the fall ...
    assert f.expected_pps < f.window_pps - 0.5 * (f.window_pps - END_PPS)  # ... the forecast, at most half as much


def test_a_jittering_constant_drain_is_not_read_as_a_trend() -> None:
    for seed in range(1, 6):
        f = feed(lambda t_ns: START_PPS, seed)
        assert f.expected_pps == f.window_pps


def test_a_paced_drain_is_a_flat_line() -> None:
    """Departures exactly 1.25 ms apart, then 1.6 ms (800 then 625 packets/s, as a paced exit: burst-brake-merge.yaml):
    once every stretch of the window reads 625 packets/s, the line through them is flat, exactly, and not followed (its
    noise is 0: a slope of rounding would pass the gate)."""
    f = QueueForecast()
    t, drained, last_ns, next_ns, flat = 0, 0, 0, 1_250_000, 0
    while t < 1_500_000_000:
        t += GAP_NS
        while next_ns <= t:
            last_ns, drained = next_ns, drained + 1
            next_ns += 1_250_000 if next_ns < 200_000_000 else 1_600_000
        f.update(t, 20, drained + 2, drained, 625, drained=drained, drained_ns=last_ns)
        line = f._trend.line(f, len(f._hist) - 1)
        if line is not None and {r for r, _ in f._chunk_rates(len(f._hist) - 1)} == {625.0}:
            flat += 1
            assert line[1] == 0.0
            assert f.expected_pps == f.window_pps
    assert flat > 1000


def test_the_fluid_models_switch_laws_do_not_follow_the_trend() -> None:
    """The model's drain readings are fluid counts at the report's sample time, the run's exact departure times with
    their noise: the trend's gate opens at other reports in the two, and a model that followed it cut where the run
    did not yet (silent-before-start-merge.yaml, tests/topo/random/cases/test_start_order_cases.py)."""
    control = SwitchControl(LawParams(), 200, fixed_departures=True)
    assert control.forecast is not None
    f = feed(falling, f=control.forecast)
    assert f.expected_pps == f.window_pps


def walked_line(f: QueueForecast) -> tuple[int, float, float, float, float] | None:
    """The trend's line recomputed from the window's stretches (``_chunk_rates``, the walk along them), in two passes
    over times taken from the window's first entry (the exact fit, to rounding): the stretches' number, the slope, the
    sum of squares of the midpoints' deviations (s²), the noise of successive drains and the line's value now."""
    hist, end = f._hist, len(f._hist) - 1
    t0 = hist[f._first][0]
    rates: list[float] = []
    mids: list[float] = []
    stop = hist[end][0]
    for rate, start in f._chunk_rates(end):
        rates.append(rate)
        mids.append((start + stop - 2 * t0) / 2e9)
        stop = start
    n = len(rates)
    if n < DRAIN_SPREAD_GAPS + 1:
        return None
    t_mean, r_mean = math.fsum(mids) / n, math.fsum(rates) / n
    sxx = math.fsum((m - t_mean) ** 2 for m in mids)
    slope = math.fsum((m - t_mean) * (r - r_mean) for m, r in zip(mids, rates)) / sxx
    return n, slope, sxx, drain_noise(rates), r_mean + slope * ((hist[end][0] - t0) / 1e9 - t_mean)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**13), st.lists(st.tuples(st.integers(1, 40), st.integers(20, 20_000), st.integers(0, 6),
                                                   st.integers(0, 300), st.integers(50, 5_000), st.integers(0, 2)),
                                         min_size=1, max_size=12))
def test_the_trend_s_running_sums_fit_the_line_through_the_window_s_stretches(
        t0: int, segments: list[tuple[int, int, int, int, int, int]]) -> None:
    """Reports in segments of a pace (20 µs to 20 ms), drain (0-6 departures a report, its newest departure up to two
    report gaps back: its time may fall) and queue (the horizon, so the window's length, moving 0.1-1 s), from any
    clock: after each, the line from the sums kept per stretch (``_TrendSums``, across the window's slides and the
    deletions of what left it) is the line fitted afresh through the window's stretches."""
    f = QueueForecast()
    t, drained, last_ns, fwd = t0, 0, 0, 0
    for reports, gap_us, departures, queued, pps, late in segments:
        for _ in range(reports):
            t += gap_us * 1_000
            if departures:
                drained += departures
                last_ns = t - late * gap_us * 500
            fwd += departures
            f.update(t, 20, fwd + queued, fwd, pps, drained=drained, drained_ns=last_ns or t)
            if f._newest_stretch(len(f._hist) - 1, 1) is None:
                continue
            got, want = f._trend.line(f, len(f._hist) - 1), walked_line(f)
            assert (got is None) == (want is None)
            if got is None or want is None:
                continue
            n, slope, sxx, noise, now = got
            scale = abs(want[4]) + max(abs(r) for r, _ in f._chunk_rates(len(f._hist) - 1))
            assert n == want[0]
            assert sxx == pytest.approx(want[2], rel=1e-12)
            # the gate's terms, in packets/s: the fall over the window's spread of times and the noise
            assert slope * math.sqrt(sxx) == pytest.approx(want[1] * math.sqrt(want[2]), rel=1e-9, abs=1e-10 * scale)
            assert noise == pytest.approx(want[3], rel=1e-9, abs=1e-10 * scale)
            assert now == pytest.approx(want[4], rel=1e-10, abs=1e-10 * scale)


def test_a_fall_that_begins_within_a_steady_fall_expects_no_more_than_the_trend() -> None:
    """silent-before-start-merge.yaml (seed 3): S1's law toward S3 followed a steady fall of S3's drain (the trend's
    14,555 packets/s against the window's 16,745) when a stretch fell past the fall's gate; the fall's horizon mixed
    the fallen drain with the window's, the expected drain jumped to 16,612 packets/s, the forecast fell by 31
    packets and the law rose 3.4 Mb/s for 10 ms, which S1's stamped backlog delivered into S3's full buffer 20 ms
    later (1 lost, unwarned). The drain before a fall is the trend's value now where a steady fall is followed:
    the report at which a fall begins to be followed expects no more than the report before it."""
    f = QueueForecast()
    t, drained, last_ns = 0, 0, 0
    next_ns = 1e9 / falling(0)
    expected: list[tuple[bool, float, float]] = []  # per report: a fall followed, the expected drain, the window's
    while t < SPAN_NS + 20_000_000:
        t += GAP_NS
        while next_ns <= t:
            last_ns, drained = round(next_ns), drained + 1
            rate = falling(next_ns) if next_ns < SPAN_NS else 0.8 * END_PPS
            next_ns += 1e9 / rate
        f.update(t, 20, drained + 60, drained, round(START_PPS), drained=drained, drained_ns=last_ns)  # 16 ms queued
        expected.append((f.guessed_fall, f.expected_pps, f.window_pps))
    onsets = [i for i in range(1, len(expected)) if expected[i][0] and not expected[i - 1][0]]
    assert onsets, "no fall followed: the test tests nothing"
    assert expected[onsets[0] - 1][1] < expected[onsets[0] - 1][2]  # the trend was followed before the fall
    for i in onsets:
        assert expected[i][1] <= expected[i - 1][1]
