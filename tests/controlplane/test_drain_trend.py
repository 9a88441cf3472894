"""A steady fall of the exact drain across the window (controlplane/forecast.py, ``QueueForecast._follow_trend``):
the window's drain is the drain of its middle, so a drain that falls slowly stays under it, report after report,
by the slope times half the window, while no single stretch falls by more than the spread. The forecast follows
the trend's value now; a drain that only jitters about a constant rate (no slope beyond its error) is not followed;
the loop analysis's fluid model's switch laws (controlplane/fluid_laws.py) do not follow it."""

from __future__ import annotations

import random

from controlplane.fluid_laws import SwitchControl
from controlplane.forecast import QueueForecast
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


def test_the_fluid_models_switch_laws_do_not_follow_the_trend() -> None:
    """The model's drain readings are fluid counts at the report's sample time, the run's exact departure times with
    their noise: the trend's gate opens at other reports in the two, and a model that followed it cut where the run
    did not yet (silent-before-start-merge.yaml, tests/topo/random/cases/test_start_order_cases.py)."""
    control = SwitchControl(LawParams(), 200, fixed_departures=True)
    assert control.forecast is not None
    f = feed(falling, f=control.forecast)
    assert f.expected_pps == f.window_pps
