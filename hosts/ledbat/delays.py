"""LEDBAT's two delay estimates (RFC 6817 2.4.1-2.4.2 and 3.4).

* base delay: the minimum one-way delay seen, kept as the minima of the last ``BASE_HISTORY``
  (10) one-minute intervals, so a route change or a clock drift ages out within ten minutes;
* current delay: the minimum of the last ``CURRENT_FILTER`` samples, which takes the noise off a
  single sample while still following the queue within a few packets (the RFC lets the filter
  be chosen; MIN over a few samples is its example).

One-way delays are differences of two unsynchronised clocks: only their differences matter, and
the queuing delay is current minus base.
"""

from __future__ import annotations

from collections import deque

__all__ = ["DelayEstimates", "BASE_HISTORY", "CURRENT_FILTER", "BASE_INTERVAL_NS"]

BASE_HISTORY = 10
CURRENT_FILTER = 4
BASE_INTERVAL_NS = 60_000_000_000


class DelayEstimates:
    def __init__(self, base_history: int = BASE_HISTORY, current_filter: int = CURRENT_FILTER) -> None:
        if base_history < 1 or current_filter < 1:
            raise ValueError(f"base_history {base_history} and current_filter {current_filter}: must be >= 1")
        self.base: deque[int] = deque(maxlen=base_history)
        self.current: deque[int] = deque(maxlen=current_filter)
        self.base_minute: int | None = None

    def on_sample(self, now_ns: int, owd_ns: int) -> None:
        minute = now_ns // BASE_INTERVAL_NS
        if self.base_minute is None or minute != self.base_minute:
            self.base.append(owd_ns)  # a new interval (the oldest falls out)
            self.base_minute = minute
        else:
            self.base[-1] = min(self.base[-1], owd_ns)
        self.current.append(owd_ns)

    @property
    def ready(self) -> bool:
        return bool(self.current)

    @property
    def queuing_delay_ns(self) -> int:
        """FILTER(current) - MIN(base), at least 0 (a current sample may be older than the base
        history's oldest interval and below what remains of it)."""
        return max(0, min(self.current) - min(self.base))
