"""The delay-based (remote) rate controller of draft-ietf-rmcat-gcc-02, 5.5: AIMD on A_hat.

Why AIMD on a delay signal: GCC learns the path's capacity only by over-using it a little, so
it increases until the detector says the queue grows, then falls below what actually arrived:

* states Increase, Hold, Decrease; the signal moves them (draft's table): OVERUSE -> Decrease from
  Hold or Increase; NORMAL -> Increase from Hold, Hold from Decrease; UNDERUSE -> Hold (the queue
  drains: keep the rate while it does, which keeps the delay low);
* Increase: multiplicative, A *= 1.08^min(dt, 1 s) (8 % per second), far from the last known
  maximum; additive near it: half an expected packet per response time (100 ms + RTT), the packet
  a 30 frames/s video's frame split into packets of at most 1200 bytes;
* Decrease: A = beta * R_hat (beta = 0.85, R_hat the rate received over the last T = 0.5 s), never
  above A; at most once per response interval (RTT in [10, 200] ms), because R_hat lags the
  sender's cut by its window and every repeat would cut again on the same evidence;
* A <= 1.5 R_hat: a sender that cannot produce what the estimate allows must not let it run away.

"Near the maximum": the average and variance of R_hat at the decreases (exponential, weight 0.05);
R_hat within 3 standard deviations of that average -> additive; above it -> the average is
forgotten and the increase is multiplicative again (the draft's convergence test). The variance is
kept as a fraction of the average in [0.4, 2.5] kb/s (as the implementations do), so one decrease
already defines a band.
"""

from __future__ import annotations

import math
from enum import IntEnum

from hosts.gcc.detector import Usage

__all__ = ["RateState", "AimdRateController", "BETA", "ETA_PER_S"]

BETA = 0.85
ETA_PER_S = 1.08
MAX_BURST_FRACTION = 1.5
FPS = 30.0
MTU_BITS = 1200 * 8
MIN_BPS = 10_000.0
AVG_WEIGHT = 0.05


class RateState(IntEnum):
    HOLD = 0
    INCREASE = 1
    DECREASE = 2


_NEXT = {  # (state, signal) -> state (the draft's table; blank = stay)
    (RateState.HOLD, Usage.OVERUSE): RateState.DECREASE,
    (RateState.INCREASE, Usage.OVERUSE): RateState.DECREASE,
    (RateState.HOLD, Usage.NORMAL): RateState.INCREASE,
    (RateState.DECREASE, Usage.NORMAL): RateState.HOLD,
    (RateState.INCREASE, Usage.UNDERUSE): RateState.HOLD,
    (RateState.DECREASE, Usage.UNDERUSE): RateState.HOLD,
}


class AimdRateController:
    def __init__(self, beta: float = BETA) -> None:
        if not 0 < beta < 1:
            raise ValueError(f"beta {beta}: must be in (0, 1)")
        self.beta = beta
        self.state = RateState.INCREASE
        self.rate_bps: float | None = None  # A_hat; None until the first R_hat
        self.last_ns: int | None = None
        self.last_decrease_ns: int | None = None
        self.avg_max_kbps: float | None = None
        self.var_max = 0.4
        self.decreases = 0

    def update(self, now_ns: int, signal: Usage, incoming_bps: float | None, rtt_ms: float) -> float | None:
        """A_hat after the detector's ``signal``; ``incoming_bps`` is R_hat (None: not measured yet)."""
        if incoming_bps is None:
            return self.rate_bps
        if self.rate_bps is None:
            self.rate_bps = max(incoming_bps, MIN_BPS)
            self.last_ns = now_ns
            return self.rate_bps
        self.state = _NEXT.get((self.state, signal), self.state)
        dt_s = 0.0 if self.last_ns is None else max(now_ns - self.last_ns, 0) / 1e9
        self.last_ns = now_ns
        if self.avg_max_kbps is not None and incoming_bps / 1e3 > self.avg_max_kbps + 3 * self._std_kbps():
            self.avg_max_kbps = None  # the congestion level changed: multiplicative again
        if self.state == RateState.INCREASE:
            self.rate_bps = self._increased(dt_s, rtt_ms)
            self.rate_bps = min(self.rate_bps, MAX_BURST_FRACTION * incoming_bps)
        elif self.state == RateState.DECREASE and self._may_decrease(now_ns, rtt_ms):
            self._track_max(incoming_bps / 1e3)
            self.rate_bps = min(self.rate_bps, self.beta * incoming_bps)
            self.last_decrease_ns = now_ns
            self.decreases += 1
        self.rate_bps = max(self.rate_bps, MIN_BPS)
        return self.rate_bps

    @property
    def near_max(self) -> bool:
        return self.avg_max_kbps is not None

    def _increased(self, dt_s: float, rtt_ms: float) -> float:
        assert self.rate_bps is not None
        if not self.near_max:
            return self.rate_bps * ETA_PER_S ** min(dt_s, 1.0)
        bits_per_frame = self.rate_bps / FPS
        packet_bits = bits_per_frame / math.ceil(bits_per_frame / MTU_BITS)
        response_s = (100.0 + rtt_ms) / 1e3
        return self.rate_bps + max(1000.0, 0.5 * packet_bits / response_s) * dt_s

    def _may_decrease(self, now_ns: int, rtt_ms: float) -> bool:
        if self.last_decrease_ns is None:
            return True
        return now_ns - self.last_decrease_ns >= min(max(rtt_ms, 10.0), 200.0) * 1e6

    def _track_max(self, kbps: float) -> None:
        avg = kbps if self.avg_max_kbps is None else (1 - AVG_WEIGHT) * self.avg_max_kbps + AVG_WEIGHT * kbps
        norm = max(avg, 1.0)
        self.var_max = (1 - AVG_WEIGHT) * self.var_max + AVG_WEIGHT * (avg - kbps) ** 2 / norm
        self.var_max = min(max(self.var_max, 0.4), 2.5)
        self.avg_max_kbps = avg

    def _std_kbps(self) -> float:
        return math.sqrt(self.var_max * max(self.avg_max_kbps or 0.0, 1.0))
