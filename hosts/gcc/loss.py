"""The sender's loss-based controller (draft-ietf-rmcat-gcc-02, 6; Carlucci et al. 2016).

Why a second controller: the delay-based one cannot see a shallow or policed bottleneck that
drops before it queues, nor compete with a loss-based flow that fills the queue; loss tells. At
each receiver report with the fraction ``p`` of packets lost since the last one:

    p < 2 %:   As = 1.05 As      (no congestion the loss can show: probe upward)
    p > 10 %:  As = As (1 - 0.5 p)
    otherwise: As unchanged       (2-10 %: loss a video can live with)

The sending rate is min(As, A_hat) (A_hat the receiver's delay-based estimate, its REMB), kept in
[min_rate, max_rate]; As itself is kept at most A_hat whenever a REMB arrives, as the implementations
do, so the loss-based state never runs ahead of the delay-based one while there is no loss (otherwise
it would sit at max_rate and a loss cut would start from there).
"""

from __future__ import annotations

__all__ = ["LossController", "LOW_LOSS", "HIGH_LOSS", "INCREASE"]

LOW_LOSS = 0.02
HIGH_LOSS = 0.10
INCREASE = 1.05


class LossController:
    def __init__(self, start_bps: float, min_bps: float, max_bps: float) -> None:
        if not 0 < min_bps <= max_bps:
            raise ValueError(f"min {min_bps} and max {max_bps} b/s: need 0 < min <= max")
        self.min_bps, self.max_bps = min_bps, max_bps
        self.rate_bps = self._clamp(start_bps)
        self.remb_bps: float | None = None

    def _clamp(self, bps: float) -> float:
        return min(max(bps, self.min_bps), self.max_bps)

    def on_loss(self, p: float) -> float:
        """A report with loss fraction ``p`` (0..1); the new As."""
        if not 0 <= p <= 1:
            raise ValueError(f"loss fraction {p}: must be in [0, 1]")
        if p < LOW_LOSS:
            self.rate_bps *= INCREASE
        elif p > HIGH_LOSS:
            self.rate_bps *= 1 - 0.5 * p
        self.rate_bps = self._clamp(self.rate_bps if self.remb_bps is None else min(self.rate_bps, self.remb_bps))
        return self.rate_bps

    def on_remb(self, remb_bps: float) -> None:
        self.remb_bps = remb_bps
        self.rate_bps = self._clamp(min(self.rate_bps, remb_bps))

    @property
    def target_bps(self) -> float:
        """The sending rate: min(As, A_hat) within [min, max]."""
        return self._clamp(self.rate_bps if self.remb_bps is None else min(self.rate_bps, self.remb_bps))
