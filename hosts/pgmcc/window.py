"""pgmcc's TCP-like window on the acker's ACKs (draft-ietf-rmt-bb-pgmcc-03 section 2.2): exponential
opening up to a fixed threshold of 4 packets, then one packet per window per RTT; halved on a loss, with
every change of the window suspended until feedback arrives for the first transmission after the cut;
back to one packet on a timeout.

Why transmissions are resolved from the ACK's bitmask and not from a cumulative ACK: the acker is
one receiver of many and repair is not its business, so its ACK says which of the last 33
transmissions reached it (its highest and the 32 before). A transmission is acknowledged when the
mask shows it; lost when the mask does not show it and at least three later transmissions are shown
received (the draft's rule, as TCP's three duplicate ACKs). A transmission the ACKs can no longer
report (older than an ACK's mask reaches: after 32 ACKs in a row were lost, or across an acker switch with
a window of more than 33) is neither: it leaves the window uncounted (``unreported``). The draft's token
for it would never return, and its timeout, re-armed by every ACK that acknowledges, would never fire
while ACKs flow: the window would shrink by one for good with each such transmission.

Why a count of unresolved transmissions against W instead of the draft's token count T: the same
arithmetic (the draft's W - T is the number of transmissions neither acknowledged nor lost), kept per
transmission so the sender knows which ones an ACK resolves, whichever acker they named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hosts.pgmcc.params import DUP_THRESHOLD, MASK_BITS, SSTHRESH

__all__ = ["Window"]


@dataclass
class Window:
    max_window: int
    cwnd: float = 1.0
    ssthresh: float = SSTHRESH
    recover: int = 0  # no window change until an ACK reports this transmission or later (one cut per RTT)
    inflight: dict[int, None] = field(default_factory=dict)  # unresolved transmission numbers, in order
    acked: int = 0
    losses: int = 0
    cuts: int = 0
    unreported: int = 0  # transmissions released beyond the ACK's mask, neither acked nor lost

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
            if back > MASK_BITS:  # no ACK can report it any more: out of the window, uncounted
                done.append(s)
                self.unreported += 1
            elif back == 0 or mask >> (back - 1) & 1:
                done.append(s)
                newly += 1
                if rx_max >= self.recover:
                    self._grow()
            elif 1 + bin(mask & ((1 << (back - 1)) - 1)).count("1") >= DUP_THRESHOLD:
                done.append(s)
                self._loss(s, next_tx)
        for s in done:
            del self.inflight[s]
        self.acked += newly
        return newly

    def _grow(self) -> None:
        d = min(1.0, self.ssthresh - self.cwnd) if self.cwnd < self.ssthresh else 0.0
        self.cwnd += d  # exponential opening up to the threshold, the rest of the packet linear
        self.cwnd += (1 - d) / self.cwnd
        self.cwnd = min(self.cwnd, float(self.max_window))

    def _loss(self, tx_seq: int, next_tx: int) -> None:
        self.losses += 1
        if tx_seq < self.recover:
            return
        self.cuts += 1
        self.cwnd = max(self.cwnd / 2, 1.0)
        self.recover = next_tx

    def on_timeout(self, next_tx: int) -> None:
        """Everything in flight is written off; one packet at a time again."""
        self.cwnd = 1.0
        self.inflight.clear()
        self.recover = next_tx
