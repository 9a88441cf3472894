"""A TCP receiver in segments, sans-I/O: cumulative ACKs, delayed as Linux delays them.

Why model the delayed ACK: it halves the ACK clock and makes RTT samples include the receiver's
wait, and Linux's timing of it decides how fast slow start opens the window. What is modelled:

* the first ``QUICKACKS`` data segments are acknowledged one by one (Linux starts a connection
  in "quickack" mode, at most 16 ACKs);
* then an ACK for every second in-order segment, or when ``DELACK_NS`` (40 ms, Linux's
  ``TCP_DELACK_MIN``) has passed since the first unacknowledged one;
* an out-of-order or duplicate segment is answered at once (a duplicate ACK, RFC 5681 4.2), and
  so is the segment that fills a hole;
* timestamps (RFC 7323 4.3): TS.Recent takes a segment's timestamp only when that segment starts
  at or before the last ACK sent, so a delayed ACK echoes the first of the segments it acknowledges
  and a duplicate ACK echoes the segment that last advanced the window.

Segments delivered in order are kept for the binding as (seq, bytes, application stamp) in
:attr:`TcpReceiver.delivered` until it takes them (:meth:`take_delivered`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Ack", "TcpReceiver", "QUICKACKS", "DELACK_NS"]

QUICKACKS = 16
DELACK_NS = 40_000_000


@dataclass(frozen=True, slots=True)
class Ack:
    ack: int  # the next segment expected
    ts_echo_ns: int
    syn: bool = False


class TcpReceiver:
    def __init__(self, *, quickacks: int = QUICKACKS, delack_ns: int = DELACK_NS) -> None:
        self.rcv_nxt = 0
        self.ooo: dict[int, tuple[int, int]] = {}  # seq -> (bytes, stamp)
        self.ts_recent = 0
        self.last_ack_sent = 0
        self.pending = 0  # in-order segments not yet acknowledged
        self.quickacks = quickacks
        self.delack_ns = delack_ns
        self.timer_ns: int | None = None
        self.delivered: list[tuple[int, int, int]] = []
        self.bytes_received = 0
        self.connected = False

    def next_timer_ns(self) -> int | None:
        return self.timer_ns

    def take_delivered(self) -> list[tuple[int, int, int]]:
        out, self.delivered = self.delivered, []
        return out

    def on_syn(self, now_ns: int, ts_ns: int) -> Ack:
        """A SYN (or its retransmission): the SYN-ACK echoing its timestamp."""
        self.connected = True
        self.ts_recent = max(self.ts_recent, ts_ns)
        return Ack(0, ts_ns, syn=True)

    def on_segment(self, now_ns: int, seq: int, length: int, stamp_ns: int, ts_ns: int) -> list[Ack]:
        if seq <= self.last_ack_sent and ts_ns >= self.ts_recent:
            self.ts_recent = ts_ns
        if seq != self.rcv_nxt:
            if seq > self.rcv_nxt:
                self.ooo.setdefault(seq, (length, stamp_ns))
            return [self._ack()]
        had_hole = bool(self.ooo)
        self._deliver(seq, length, stamp_ns)
        while self.rcv_nxt in self.ooo:
            self._deliver(self.rcv_nxt, *self.ooo.pop(self.rcv_nxt))
        self.pending += 1
        if had_hole or self.quickacks > 0 or self.pending >= 2:
            self.quickacks = max(0, self.quickacks - 1)
            return [self._ack()]
        if self.timer_ns is None:
            self.timer_ns = now_ns + self.delack_ns
        return []

    def on_timer(self, now_ns: int) -> list[Ack]:
        if self.timer_ns is None or now_ns < self.timer_ns:
            return []
        return [self._ack()] if self.pending else self._cleared()

    def _cleared(self) -> list[Ack]:
        self.timer_ns = None
        return []

    def _deliver(self, seq: int, length: int, stamp_ns: int) -> None:
        self.delivered.append((seq, length, stamp_ns))
        self.bytes_received += length
        self.rcv_nxt = seq + 1

    def _ack(self) -> Ack:
        self.pending = 0
        self.timer_ns = None
        self.last_ack_sent = self.rcv_nxt
        return Ack(self.rcv_nxt, self.ts_recent)
