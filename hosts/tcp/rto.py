"""The retransmission timer's estimator, RFC 6298, with Linux's floor on the variance term.

Why a floor of 200 ms and not RFC 6298's minimum RTO of 1 s: the model is validated against the
kernel, and Linux computes RTO = SRTT + max(200 ms, 4 * RTTVAR) (``TCP_RTO_MIN``). RFC 6298 allows
this (its G is "clock granularity"; its 1 s minimum is a SHOULD). The initial RTO is 1 s (RFC 6298
2.1 and Linux's ``TCP_TIMEOUT_INIT``), the ceiling 120 s (Linux's ``TCP_RTO_MAX``; RFC 6298 asks
for at least 60 s). Backoff doubles the RTO on each expiry (RFC 6298 5.5) until the next sample.
"""

from __future__ import annotations

__all__ = ["RtoEstimator", "INITIAL_RTO_NS", "MIN_VAR_TERM_NS", "MAX_RTO_NS"]

INITIAL_RTO_NS = 1_000_000_000
MIN_VAR_TERM_NS = 200_000_000
MAX_RTO_NS = 120_000_000_000
ALPHA, BETA, K = 1 / 8, 1 / 4, 4


class RtoEstimator:
    """SRTT, RTTVAR and the RTO from RTT samples (ns)."""

    def __init__(self) -> None:
        self.srtt_ns: float | None = None
        self.rttvar_ns = 0.0
        self.min_rtt_ns: int | None = None
        self.backoff = 0

    def on_sample(self, rtt_ns: int) -> None:
        """RFC 6298 2.2 (first sample) and 2.3 (later ones); a new sample ends the backoff."""
        if rtt_ns <= 0:
            rtt_ns = 1
        if self.srtt_ns is None:
            self.srtt_ns, self.rttvar_ns = float(rtt_ns), rtt_ns / 2
        else:
            self.rttvar_ns = (1 - BETA) * self.rttvar_ns + BETA * abs(self.srtt_ns - rtt_ns)
            self.srtt_ns = (1 - ALPHA) * self.srtt_ns + ALPHA * rtt_ns
        self.min_rtt_ns = rtt_ns if self.min_rtt_ns is None else min(self.min_rtt_ns, rtt_ns)
        self.backoff = 0

    def on_expiry(self) -> None:
        """RFC 6298 5.5: back the timer off (double it)."""
        self.backoff += 1

    @property
    def rto_ns(self) -> int:
        if self.srtt_ns is None:
            base = INITIAL_RTO_NS
        else:
            base = round(self.srtt_ns + max(MIN_VAR_TERM_NS, K * self.rttvar_ns))
        return min(MAX_RTO_NS, base << min(self.backoff, 16))
