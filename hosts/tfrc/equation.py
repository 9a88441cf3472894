"""The TCP throughput equation TFRC paces by (RFC 5348 3.1, as SOURCES.md C states it).

    X = s / (R * sqrt(2p/3) + t_RTO * 3 * sqrt(3p/8) * p * (1 + 32 p^2)),   t_RTO = 4 R

Why this form: it is Padhye et al.'s steady-state model of a Reno flow with timeouts, which
TFRC uses so that its rate is what a TCP flow would get under the same loss event rate ``p``
and round-trip time ``R`` (b = 1: TFRC assumes no delayed ACKs, RFC 5348 3.1).
"""

from __future__ import annotations

import math

__all__ = ["throughput_Bps", "loss_rate_for"]


def throughput_Bps(s_bytes: float, rtt_s: float, p: float, t_rto_s: float | None = None) -> float:
    """Bytes per second allowed for packets of ``s_bytes``, RTT ``rtt_s``, loss event rate ``p`` (0 < p <= 1)."""
    if s_bytes <= 0 or rtt_s <= 0:
        raise ValueError(f"s {s_bytes} bytes and R {rtt_s} s must be > 0")
    if not 0 < p <= 1:
        raise ValueError(f"loss event rate {p}: must be in (0, 1]")
    t_rto = 4 * rtt_s if t_rto_s is None else t_rto_s
    return s_bytes / (rtt_s * math.sqrt(2 * p / 3) + t_rto * 3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p * p))


def loss_rate_for(x_Bps: float, s_bytes: float, rtt_s: float) -> float:
    """The ``p`` at which the equation gives ``x_Bps`` (bisection; the equation falls with p). RFC 5348
    6.3.1 seeds the first loss interval with it (1/p), so the rate does not collapse at the first loss."""
    if x_Bps >= throughput_Bps(s_bytes, rtt_s, 1e-9):
        return 1e-9
    lo, hi = 1e-9, 1.0
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if throughput_Bps(s_bytes, rtt_s, mid) > x_Bps:
            lo = mid
        else:
            hi = mid
    return hi
