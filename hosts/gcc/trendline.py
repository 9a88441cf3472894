"""The trendline estimator: the arrival-time filter of today's GCC implementations (libwebrtc's
``goog_cc`` since 2017), the default here (docs/background/e2e.md says why).

Why a slope: a queue that grows makes the one-way delay climb at (sending rate - capacity) /
capacity, whatever the group spacing; the slope of the accumulated delay variation against arrival
time measures exactly that, in ms of delay per ms of time. Steps (facts of the public
implementation, our code):

* acc(i) = acc(i-1) + d(i); smoothed(i) = 0.9 smoothed(i-1) + 0.1 acc(i);
* the least-squares slope of (arrival time, smoothed) over the last 20 groups;
* the value the detector compares with its threshold (in ms, like the draft's m(i)) is
  ``min(n, 60) * slope * 4``: n groups so far (a young estimate counts less), 60 groups of 5 ms
  (the delay the trend would add over 0.3 s), 4 the threshold gain.
"""

from __future__ import annotations

from collections import deque

from hosts.gcc.groups import GroupDelta

__all__ = ["TrendlineEstimator", "WINDOW", "SMOOTHING", "THRESHOLD_GAIN", "MAX_DELTAS"]

WINDOW = 20
SMOOTHING = 0.9
THRESHOLD_GAIN = 4.0
MAX_DELTAS = 60


class TrendlineEstimator:
    name = "trendline"

    def __init__(self, window: int = WINDOW, smoothing: float = SMOOTHING, gain: float = THRESHOLD_GAIN) -> None:
        if window < 2 or not 0 <= smoothing < 1 or gain <= 0:
            raise ValueError(f"window {window} (>= 2), smoothing {smoothing} ([0, 1)), gain {gain} (> 0)")
        self.points: deque[tuple[float, float]] = deque(maxlen=window)
        self.smoothing = smoothing
        self.gain = gain
        self.accumulated = 0.0
        self.smoothed = 0.0
        self.first_arrival_ns: int | None = None
        self.deltas = 0
        self.slope = 0.0

    def update(self, delta: GroupDelta) -> float:
        """One group's delay variation in; the estimate the detector compares (ms)."""
        if self.first_arrival_ns is None:
            self.first_arrival_ns = delta.arrival_ns
        self.deltas = min(self.deltas + 1, 1000)
        self.accumulated += delta.delay_variation_ms
        self.smoothed = self.smoothing * self.smoothed + (1 - self.smoothing) * self.accumulated
        self.points.append(((delta.arrival_ns - self.first_arrival_ns) / 1e6, self.smoothed))
        if len(self.points) == self.points.maxlen:
            self.slope = least_squares_slope(self.points)
        return self.estimate

    @property
    def estimate(self) -> float:
        return min(self.deltas, MAX_DELTAS) * self.slope * self.gain


def least_squares_slope(points: deque[tuple[float, float]] | list[tuple[float, float]]) -> float:
    """The slope of the least-squares line through ``points`` (0 when every x is the same)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    num = sum((x - mx) * (y - my) for x, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return num / den if den > 0 else 0.0
