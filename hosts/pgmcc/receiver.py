"""A pgmcc receiver, sans-I/O: its loss estimate, its NAKs (with repair retries) and, while it is
the acker, an ACK per packet with the bitmask of recent transmissions.

Why the loss estimate runs on transmission numbers: every packet sent (new data or repair) is one
transmission of the session's congestion loop, so a gap there is a packet the network dropped;
gaps in data numbers are what reliability asks back for (NAKs), and the two are kept apart, as
pgmcc keeps reliability apart from congestion control. A transmission that arrives after a later
one was counted lost (reordering) stays counted lost: a receiver sees it as TCP would (docs/background/e2e.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.pgmcc.params import MASK_BITS, PgmccParams
from hosts.pgmcc.wire import ACK, NAK, NO_SEQ, Feedback

__all__ = ["PgmccReceiver", "RETRY_UNKNOWN_RTT_NS"]

#: A NAK is repeated after twice the sender's RTT hint, or this when the sender gave none.
RETRY_UNKNOWN_RTT_NS = 500_000_000
_KEEP = 64  # transmissions whose receive state is kept for the ACK's mask (>= MASK_BITS + 1)


@dataclass
class _Missing:
    next_ns: int
    tries: int


class PgmccReceiver:
    def __init__(self, rid: int, params: PgmccParams | None = None) -> None:
        if not 0 < rid < 0xFFFF:
            raise ValueError(f"pgmcc receiver id {rid}: must be 1..65534")
        self.rid = rid
        self.params = params or PgmccParams()
        self.p = 0.0
        self.rx_max: int | None = None
        self._recent = 0  # bit k: transmission rx_max - k received
        self.data_max: int | None = None
        self._missing: dict[int, _Missing] = {}
        self._last_ts = 0  # the sender's stamp of the last packet received, and when it came
        self._last_at = 0
        self._retry_ns = RETRY_UNKNOWN_RTT_NS
        self.joined = False
        self._reported_no_acker = False
        self.received = 0  # transmissions received
        self.lost = 0  # transmissions counted lost
        self.delivered = 0  # distinct data packets
        self.duplicates = 0
        self.repaired = 0
        self.unrecovered = 0
        self.acks_sent = 0
        self.naks_sent = 0

    # ---- packets -------------------------------------------------------------------------------
    def on_data(
        self, now_ns: int, tx_seq: int, data_seq: int, acker: int, ts_ns: int, rtt_hint_ns: int = 0
    ) -> list[Feedback]:
        """One data or repair packet; the ACK (when this receiver is named) and NAKs it triggers."""
        self._last_ts, self._last_at = ts_ns, now_ns
        if rtt_hint_ns > 0:
            self._retry_ns = 2 * rtt_hint_ns
        self.received += 1
        self._on_transmission(tx_seq)
        out: list[Feedback] = []
        if acker == self.rid:
            self.acks_sent += 1
            out.append(
                Feedback(
                    ACK,
                    self.rid,
                    self.rx_max or 0,
                    self.p,
                    ts_ns,
                    0,
                    mask=(self._recent >> 1) & ((1 << MASK_BITS) - 1),
                )
            )
        if acker == 0 and not self._reported_no_acker:
            # no acker (the session's start, or the sender dropped it after timeouts): report, so the
            # sender can elect one (draft section 2.3.1); once until a packet names an acker again
            out.append(self._nak(NO_SEQ, ts_ns, 0))
        self._reported_no_acker = acker == 0
        self.joined = True
        out.extend(self._on_data_seq(now_ns, data_seq, ts_ns))
        return out

    def _on_transmission(self, tx_seq: int) -> None:
        w = self.params.loss_weight
        if self.rx_max is None:
            self.rx_max, self._recent = tx_seq, 1
            self.p *= 1 - w
            return
        if tx_seq > self.rx_max:
            gap = tx_seq - self.rx_max - 1
            for _ in range(min(gap, 100_000)):  # each missing transmission is one loss in the filter
                self.p = (1 - w) * self.p + w
            self.lost += gap
            self.p *= 1 - w
            shift = tx_seq - self.rx_max
            self._recent = ((self._recent << shift) | 1) & ((1 << _KEEP) - 1) if shift < _KEEP else 1
            self.rx_max = tx_seq
        elif self.rx_max - tx_seq < _KEEP:
            self._recent |= 1 << (self.rx_max - tx_seq)

    def _on_data_seq(self, now_ns: int, data_seq: int, ts_ns: int) -> list[Feedback]:
        if self.data_max is None:
            self.data_max = data_seq
            self.delivered += 1
            return []
        if data_seq in self._missing:
            del self._missing[data_seq]
            self.delivered += 1
            self.repaired += 1
            return []
        if data_seq <= self.data_max:
            self.duplicates += 1
            return []
        out = []
        for s in range(self.data_max + 1, data_seq):
            out.append(self._nak(s, ts_ns, 0))
            self._missing[s] = _Missing(now_ns + self._retry_ns, 0) if self.params.repair else _Missing(0, -1)
        if not self.params.repair:  # NAKs only report the loss: nothing waits for a repair
            self.unrecovered += data_seq - self.data_max - 1
            self._missing.clear()
        self.data_max = data_seq
        self.delivered += 1
        return out

    def _nak(self, seq: int, ts_ns: int, hold_ns: int) -> Feedback:
        self.naks_sent += 1
        return Feedback(NAK, self.rid, self.rx_max or 0, self.p, ts_ns, hold_ns, nak_seq=seq)

    # ---- timers ----------------------------------------------------------------------------------
    def next_timer_ns(self) -> int | None:
        """When a NAK is next due again (a missing packet still unrepaired), or None."""
        return min((m.next_ns for m in self._missing.values()), default=None)

    def on_timer(self, now_ns: int) -> list[Feedback]:
        """NAKs again for packets still missing; after ``nak_retries`` repeats a packet is given up."""
        out = []
        for seq in [s for s, m in self._missing.items() if m.next_ns <= now_ns]:
            m = self._missing[seq]
            if m.tries >= self.params.nak_retries:
                del self._missing[seq]
                self.unrecovered += 1
                continue
            m.tries += 1
            m.next_ns = now_ns + self._retry_ns
            out.append(self._nak(seq, self._last_ts, now_ns - self._last_at))
        return out

    @property
    def missing(self) -> int:
        return len(self._missing)

    def stats(self) -> dict[str, object]:
        return {
            "loss_estimate": self.p,
            "transmissions_received": self.received,
            "transmissions_lost": self.lost,
            "delivered": self.delivered,
            "duplicates": self.duplicates,
            "repaired": self.repaired,
            "unrecovered": self.unrecovered,
            "missing": self.missing,
            "acks_sent": self.acks_sent,
            "naks_sent": self.naks_sent,
        }
