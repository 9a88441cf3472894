"""The control plane's latency in the simulator: fixed, or drawn per call with a measured spread.

Why a spread: netns runs measure the agent's packet-in -> set_queue_rate latency with a median
of a few ms but a 99th percentile five to fifteen times larger (docs/howto/netns.md, "Control
latency"); a loop that holds with the median alone may not hold with the tail. Each direction of
one agent's channel (packet-ins to it, its queue calls to the switch) is one connection, so calls
arrive in the order they were made: a late call holds back the ones behind it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from runtime.sched import DelayedCalls, FifoDelay, VirtualScheduler

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
        self._fifo = FifoDelay()  # when the previous call arrives (the engine's, shared with calls())

    def delay(self, now_ns: int) -> int:
        draw = self.median_ns if not self.sigma else round(self.median_ns * math.exp(self._rng.gauss(0.0, self.sigma)))
        return self._fifo.delay(now_ns, draw)  # type: ignore[no-any-return]

    def calls(self, sched: VirtualScheduler, target: Callable[..., Any] | None = None,
              behind: bool = False) -> Callable[..., None] | None:
        """A callable whose calls reach ``target`` after this latency, in the engine (no Python
        step per call; ``connect(target)`` sets a target later), or None when the latency has a
        spread: its draws are Python's. ``behind``: the target is then scheduled once more at
        delay 0, behind what is due at that time. In order with :meth:`delay`'s calls."""
        if self.sigma:
            return None
        return DelayedCalls(sched, self._fifo, self.median_ns, target, behind)  # type: ignore[no-any-return]
