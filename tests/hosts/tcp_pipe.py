"""A sender and a receiver of the TCP model through a fixed-delay, fixed-rate pipe with chosen losses
(no simulator), so that each RFC rule is seen on its own (tests/hosts/test_tcp_*.py)."""

from __future__ import annotations

import heapq
from collections.abc import Callable

from hosts.tcp import TcpReceiver, TcpSender
from hosts.tcp.sender import Segment

MS = 1_000_000


class Pipe:
    """Sender -> receiver at one segment per ``seg_ns`` with a one-way ``delay``; ``lose(n)`` says
    whether the n-th data frame sent is lost, ``drop(segment)`` (if given) whether that segment is.
    ACKs come back after ``delay``. ``sack``: the SYN's and SYN-ACK's SACK-permitted options and the
    ACKs' blocks are passed on (without it the two ends never agree on SACK)."""

    def __init__(self, tx: TcpSender, rx: TcpReceiver, lose: Callable[[int], bool], delay: int = 10 * MS,
                 seg_ns: int = MS, *, sack: bool = False, drop: Callable[[Segment], bool] | None = None) -> None:
        self.tx, self.rx, self.lose, self.delay, self.seg_ns = tx, rx, lose, delay, seg_ns
        self.sack, self.drop = sack, drop
        self.acks: list = []  # every ACK the receiver sent
        self.events: list[tuple[int, int, str, object]] = []
        self.n = self.k = 0
        self.free = 0
        self.delivered: list[int] = []
        self._delivered_ns: dict[int, int] = {}

    def push(self, t: int, kind: str, what: object) -> None:
        self.k += 1
        heapq.heappush(self.events, (t, self.k, kind, what))

    def send(self, now: int, segs: list) -> None:
        for s in segs:
            self.free = max(self.free, now) + self.seg_ns
            self.n += 1
            if s.syn or not (self.lose(self.n) or (self.drop is not None and self.drop(s))):
                self.push(self.free + self.delay, "seg", s)

    def run(self, until: int) -> None:
        timers = {"tx": -1, "rx": -1}
        while True:
            cand = [(t, k) for k, t in (("tx", self.tx.next_timer_ns()), ("rx", self.rx.next_timer_ns()))
                    if t is not None]
            nxt_timer = min(cand) if cand else None
            nxt_event = self.events[0][0] if self.events else None
            if nxt_event is None and nxt_timer is None:
                return
            if nxt_event is not None and (nxt_timer is None or nxt_event <= nxt_timer[0]):
                now, _k, kind, what = heapq.heappop(self.events)
                if now > until:
                    return
                if kind == "seg":
                    s = what
                    if s.syn:
                        a = self.rx.on_syn(now, s.ts_ns, s.sack_ok and self.sack)
                        self.push(now + self.delay, "ack", a)
                    else:
                        for a in self.rx.on_segment(now, s.seq, s.length, s.stamp_ns, s.ts_ns):
                            self.acks.append(a)
                            self.push(now + self.delay, "ack", a)
                        for q, _, _ in self.rx.take_delivered():
                            self.delivered.append(q)
                            self._delivered_ns[q] = now
                else:
                    a = what
                    self.send(now, self.tx.on_syn_ack(now, a.ts_echo_ns, sack_ok=a.sack_ok) if a.syn else
                              self.tx.on_ack(now, a.ack, a.ts_echo_ns, sack=a.sack))
            else:
                now, side = nxt_timer
                if now > until:
                    return
                timers[side] = now
                if side == "tx":
                    self.send(now, self.tx.on_timer(now))
                else:
                    for a in self.rx.on_timer(now):
                        self.acks.append(a)
                        self.push(now + self.delay, "ack", a)

    def delivered_at(self, seq: int) -> int:
        """When segment ``seq`` was delivered in order to the application."""
        return self._delivered_ns[seq]
