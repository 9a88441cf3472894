"""The adaptive threshold and the over-use detector (draft-ietf-rmcat-gcc-02, 5.4).

Why the threshold adapts: a fixed one makes GCC starve beside a loss-based flow (TCP keeps the
queue growing and a delay-based flow that always backs off loses everything), and a path's jitter
differs by orders of magnitude. So gamma follows |m(i)|, fast when m leaves it (K_u) and slowly
back (K_d):

    gamma(i) = gamma(i-1) + dt * K(i) * (|m(i)| - gamma(i-1)),  K = K_d if |m(i)| < gamma(i-1) else K_u

dt in ms (at most 100 ms: a long silence must not swing gamma), gamma kept in [6, 600] ms, and not
updated when |m(i)| exceeds it by more than 15 ms (a spike, not a new level). gamma(0) = 12.5 ms.

The detector: m(i) > gamma for at least overuse_time_th (10 ms) of groups, and m not falling (m(i) >=
m(i-1)) -> OVERUSE; m(i) < -gamma -> UNDERUSE; within +-gamma -> NORMAL. While m is above gamma but
the time condition is not met yet, the state stays what it was.

K_u, K_d: the draft's 0.01 and 0.00018 by default, whichever the filter: they are the adaptive
threshold's design (Carlucci et al. 2016): up fast, down slowly, so that the queue a loss-based flow
builds raises gamma and GCC is not starved. ``gains: libwebrtc`` takes the pair libwebrtc uses with
its trendline, 0.0087 and 0.039, which lets gamma fall faster than it rises (docs/background/e2e.md measures
what that does against cubic).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Usage", "AdaptiveThreshold", "OveruseDetector", "GAINS", "OVERUSE_TIME_TH_MS"]

GAMMA0_MS = 12.5
GAMMA_MIN_MS, GAMMA_MAX_MS = 6.0, 600.0
MAX_ADAPT_OFFSET_MS = 15.0
MAX_STEP_MS = 100.0
OVERUSE_TIME_TH_MS = 10.0
#: gain set -> (K_u, K_d), per ms
GAINS = {"draft": (0.01, 0.00018), "libwebrtc": (0.0087, 0.039)}


class Usage(IntEnum):
    NORMAL = 0
    OVERUSE = 1
    UNDERUSE = 2


class AdaptiveThreshold:
    def __init__(self, k_u: float, k_d: float) -> None:
        if k_u <= 0 or k_d <= 0:
            raise ValueError(f"K_u {k_u} and K_d {k_d}: must be > 0")
        self.k_u, self.k_d = k_u, k_d
        self.gamma = GAMMA0_MS
        self.last_ns: int | None = None

    def update(self, now_ns: int, m: float) -> float:
        """gamma after the estimate ``m`` (ms) at ``now_ns``."""
        last, self.last_ns = self.last_ns, now_ns
        if last is None or abs(m) - self.gamma > MAX_ADAPT_OFFSET_MS:
            return self.gamma
        dt = min(max(now_ns - last, 0) / 1e6, MAX_STEP_MS)
        k = self.k_d if abs(m) < self.gamma else self.k_u
        self.gamma = min(max(self.gamma + dt * k * (abs(m) - self.gamma), GAMMA_MIN_MS), GAMMA_MAX_MS)
        return self.gamma


class OveruseDetector:
    def __init__(self, gains: str = "draft") -> None:
        self.threshold = AdaptiveThreshold(*GAINS[gains])
        self.state = Usage.NORMAL
        self.time_over_ms: float | None = None  # time spent above gamma so far (None: not above)
        self.previous = 0.0
        self.overuses = 0

    def detect(self, now_ns: int, m: float, send_delta_ns: int) -> Usage:
        """The signal after estimate ``m`` (ms) of a group that came ``send_delta_ns`` after the last.
        The threshold this estimate is compared with is the one before it (then it adapts)."""
        gamma = self.threshold.gamma
        if m > gamma:
            self.time_over_ms = 0.0 if self.time_over_ms is None else self.time_over_ms + send_delta_ns / 1e6
            if self.time_over_ms >= OVERUSE_TIME_TH_MS and m >= self.previous:
                if self.state != Usage.OVERUSE:
                    self.overuses += 1
                self.state = Usage.OVERUSE
        else:
            self.time_over_ms = None
            self.state = Usage.UNDERUSE if m < -gamma else Usage.NORMAL
        self.previous = m
        self.threshold.update(now_ns, m)
        return self.state
