"""The control plane's latency in the simulator: fixed, or drawn per call with a measured spread.

Why a spread: netns runs measure the agent's packet-in -> set_queue_rate latency with a median
of a few ms but a 99th percentile five to fifteen times larger (docs/netns.md, "Control
latency"); a loop that holds with the median alone may not hold with the tail. Each direction of
one agent's channel (packet-ins to it, its queue calls to the switch) is one connection, so calls
arrive in the order they were made: a late call holds back the ones behind it.
"""

from __future__ import annotations

import math
import random

__all__ = ["ControlLatency", "Z_99"]

#: The standard normal's 99th percentile: a lognormal with median m and p99 q has sigma ln(q/m)/Z_99.
Z_99 = 2.3263478740408408


class ControlLatency:
    """One direction of one control channel: ``delay(now)`` is how long a call made now takes."""

    def __init__(self, median_ns: int, p99_ns: int | None, rng: random.Random) -> None:
        if p99_ns is not None and p99_ns < median_ns:
            raise ValueError(f"p99 {p99_ns} ns is below the median {median_ns} ns")
        self.median_ns = median_ns
        self.sigma = math.log(p99_ns / median_ns) / Z_99 if p99_ns and median_ns else 0.0
        self._rng = rng
        self._last_ns = 0  # when the previous call arrives

    def delay(self, now_ns: int) -> int:
        draw = self.median_ns if not self.sigma else round(self.median_ns * math.exp(self._rng.gauss(0.0, self.sigma)))
        arrive = max(now_ns + draw, self._last_ns)
        self._last_ns = arrive
        return arrive - now_ns
