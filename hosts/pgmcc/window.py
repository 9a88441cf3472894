"""pgmcc's TCP-like window on the acker's ACKs: slow start, then one packet per window per RTT;
halved once per RTT on loss; back to one packet on a timeout.

Why transmissions are resolved from the ACK's bitmask and not from a cumulative ACK: the acker is
one receiver of many and repair is not its business, so its ACK says which of the last 33
transmissions reached it (its highest and the 32 before). A transmission is acknowledged when the
mask shows it; lost when the acker has three later ones and the mask does not show it, or when it
has fallen out of the mask unseen (DUP_THRESHOLD, as TCP's duplicate ACKs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hosts.pgmcc.params import DUP_THRESHOLD, MASK_BITS

__all__ = ["Window"]


@dataclass
class Window:
    max_window: int
    cwnd: float = 1.0
    ssthresh: float = float("inf")
    recover: int = 0  # losses of transmissions below this cut no more (one cut per RTT)
    inflight: dict[int, None] = field(default_factory=dict)  # unresolved transmission numbers, in order
    acked: int = 0
    losses: int = 0
    cuts: int = 0

    def can_send(self) -> bool:
        return len(self.inflight) < max(1, int(self.cwnd))

    def on_sent(self, tx_seq: int) -> None:
        self.inflight[tx_seq] = None

    def on_ack(self, rx_max: int, mask: int, next_tx: int) -> int:
        """Resolve what the ACK (the acker's highest transmission and its mask) shows; returns how
        many transmissions it newly acknowledged (0: a duplicate or old ACK)."""
        newly = 0
        done = []
        for s in self.inflight:
            if s > rx_max:
                break
            back = rx_max - s
            if back == 0 or (back <= MASK_BITS and mask >> (back - 1) & 1):
                done.append(s)
                newly += 1
                self._grow()
            elif back >= DUP_THRESHOLD:
                done.append(s)
                self._loss(s, next_tx)
        for s in done:
            del self.inflight[s]
        self.acked += newly
        return newly

    def _grow(self) -> None:
        if self.cwnd < self.ssthresh:
            self.cwnd += 1
        else:
            self.cwnd += 1 / self.cwnd
        self.cwnd = min(self.cwnd, float(self.max_window))

    def _loss(self, tx_seq: int, next_tx: int) -> None:
        self.losses += 1
        if tx_seq < self.recover:
            return
        self.cuts += 1
        self.cwnd = max(self.cwnd / 2, 1.0)
        self.ssthresh = max(self.cwnd, 2.0)
        self.recover = next_tx

    def on_timeout(self, next_tx: int) -> None:
        """Everything in flight is written off; one packet at a time again, slow start to half."""
        self.ssthresh = max(self.cwnd / 2, 2.0)
        self.cwnd = 1.0
        self.inflight.clear()
        self.recover = next_tx
