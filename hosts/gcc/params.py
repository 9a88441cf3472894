"""A GCC flow's parameters (a topology's ``gcc: {min_rate, max_rate, start_rate, filter, gains}``).

Why these four: GCC drives a media encoder, which has a floor (below it the picture is useless) and a
ceiling (the encoder's best quality); the sender starts somewhere between and only the congestion
controllers move it. ``filter`` names the arrival-time filter (docs/background/e2e.md, "GCC": the trendline
estimator of today's implementations by default, the draft's Kalman filter on request); ``gains``
the adaptive threshold's K_u and K_d (the draft's by default, or libwebrtc's: hosts/gcc/detector.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["GccParams", "FILTERS", "GAIN_SETS", "DEFAULT_MIN_BPS", "DEFAULT_START_BPS"]

#: The arrival-time filters (hosts/gcc/trendline.py, hosts/gcc/kalman.py).
FILTERS = ("trendline", "kalman")
#: The adaptive threshold's (K_u, K_d) pairs (hosts/gcc/detector.py's GAINS).
GAIN_SETS = ("draft", "libwebrtc")
DEFAULT_MIN_BPS = 50_000.0  # a video call's floor (audio plus a thumbnail)
DEFAULT_START_BPS = 300_000.0  # WebRTC's usual start bitrate


@dataclass(frozen=True)
class GccParams:
    """``max_rate_bps`` None: the binding's cap (the flow's first link, or its ``r_max``)."""

    min_rate_bps: float = DEFAULT_MIN_BPS
    start_rate_bps: float = DEFAULT_START_BPS
    max_rate_bps: float | None = None
    filter: str = "trendline"
    gains: str = "draft"

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """What is wrong with these values, in one line, or None."""
        for name in ("min_rate_bps", "start_rate_bps", "max_rate_bps"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                return f"{name.removesuffix('_bps')} {v}: must be a rate > 0"
        if self.filter not in FILTERS:
            return f"filter {self.filter!r}: unknown (known: {', '.join(FILTERS)})"
        if self.gains not in GAIN_SETS:
            return f"gains {self.gains!r}: unknown (known: {', '.join(GAIN_SETS)})"
        top = math.inf if self.max_rate_bps is None else self.max_rate_bps
        if self.min_rate_bps > top:
            return f"min_rate {self.min_rate_bps:g} b/s is above max_rate {top:g} b/s"
        return None

    def capped(self, cap_bps: float) -> GccParams:
        """These parameters with max_rate at most ``cap_bps``; start and min follow a lower cap down
        (a default start of 300 kb/s on a 200 kb/s access link starts at 200 kb/s)."""
        top = min(self.max_rate_bps or math.inf, cap_bps)
        return GccParams(min(self.min_rate_bps, top), min(self.start_rate_bps, top), top, self.filter, self.gains)

    def start_bps(self) -> float:
        top = math.inf if self.max_rate_bps is None else self.max_rate_bps
        return min(max(self.start_rate_bps, self.min_rate_bps), top)
