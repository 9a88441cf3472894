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

* a receive window as Linux opens it (every ACK carries its right edge, :attr:`Ack.window_end`):
  20 segments at first (Linux's initial receive window, twice the initial congestion window),
  two more per in-order segment received, up to the buffer's space; the space starts at 45
  segments (half of ``tcp_rmem``'s default 128 kB) and, once per receiver RTT (measured as
  Linux does without timestamps: the time the window's worth of data takes to arrive), if the
  application read more in that RTT than in the last one that grew it, rises to twice what it
  read plus 16 segments, plus twice that times the relative growth of the reading (Linux's
  ``tcp_rcv_space_adjust``, whose growth term lets the window keep ahead of slow start's
  doubling), at most half of ``tcp_rmem``'s 6 MB maximum. Without the growth term the window held
  slow start's flight at 20 Mb/s, 200 ms to about 170 segments where the kernel's reached 260
  (docs/howto/tcp.md, "The model"). Why the window matters: while a hole is open
  the application reads nothing, so the window stops the sender from sending far past the hole;
  without it a SACK-less recovery keeps the bottleneck full and repairs one hole per full-queue
  RTT (docs/howto/tcp.md).

* SACK (RFC 2018) when both ends permit it (the SYN's and the SYN-ACK's SACK-permitted option):
  every ACK sent while segments are held out of order carries up to three blocks (what fits
  beside the timestamp option), the first the block holding the segment that triggered the ACK,
  then the blocks most recently reported, so that a block is repeated in several ACKs and a lost
  ACK loses no information for long (RFC 2018 4).

Segments delivered in order are kept for the binding as (seq, bytes, application stamp) in
:attr:`TcpReceiver.delivered` until it takes them (:meth:`take_delivered`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.tcp.scoreboard import MAX_SACK_BLOCKS

__all__ = ["Ack", "TcpReceiver", "QUICKACKS", "DELACK_NS", "INITIAL_WINDOW", "INITIAL_SPACE", "MAX_SPACE"]

QUICKACKS = 16
DELACK_NS = 40_000_000
INITIAL_WINDOW = 20
INITIAL_SPACE = 131072 // 2 // 1448
INITIAL_COPIED = 10  # Linux's rcvq_space.space to start with: TCP_INIT_CWND segments
MAX_SPACE = 6291456 // 2 // 1448


@dataclass(frozen=True, slots=True)
class Ack:
    ack: int  # the next segment expected
    ts_echo_ns: int
    syn: bool = False
    window_end: int = 1 << 31  # the receive window's right edge: the sender sends segments below it
    sack: tuple[tuple[int, int], ...] = ()  # SACK blocks [start, end), most recent first
    sack_ok: bool = False  # on a SYN-ACK: SACK-permitted


class TcpReceiver:
    def __init__(self, *, quickacks: int = QUICKACKS, delack_ns: int = DELACK_NS, window: bool = True,
                 sack: bool = True) -> None:
        self.sack_wanted = sack
        self.sack = False  # negotiated: both ends permit it
        self._recent: list[int] = []  # one out-of-order segment per block, most recently received first
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
        self.window = window
        self.rcv_wnd = INITIAL_WINDOW
        self.space = INITIAL_SPACE
        self.window_end = INITIAL_WINDOW
        self._rtt_mark: tuple[int, int] | None = None  # (segment that ends the measured window, start time)
        self._read_since = 0  # segments delivered since the last space adjustment
        self._copied = INITIAL_COPIED  # what the application read in the last RTT that grew the space

    def next_timer_ns(self) -> int | None:
        return self.timer_ns

    def take_delivered(self) -> list[tuple[int, int, int]]:
        out, self.delivered = self.delivered, []
        return out

    def on_syn(self, now_ns: int, ts_ns: int, sack_ok: bool = False) -> Ack:
        """A SYN (or its retransmission; ``sack_ok``: it permits SACK): the SYN-ACK echoing its
        timestamp, permitting SACK if both ends do."""
        self.connected = True
        self.ts_recent = max(self.ts_recent, ts_ns)
        self.sack = self.sack_wanted and sack_ok
        return Ack(0, ts_ns, syn=True, window_end=self._edge(), sack_ok=self.sack)

    def on_segment(self, now_ns: int, seq: int, length: int, stamp_ns: int, ts_ns: int) -> list[Ack]:
        if seq <= self.last_ack_sent and ts_ns >= self.ts_recent:
            self.ts_recent = ts_ns
        if seq != self.rcv_nxt:
            if seq > self.rcv_nxt:
                self.ooo.setdefault(seq, (length, stamp_ns))
                self._recent.insert(0, seq)
            return [self._ack()]
        had_hole = bool(self.ooo)
        self._deliver(seq, length, stamp_ns)
        while self.rcv_nxt in self.ooo:
            self._deliver(self.rcv_nxt, *self.ooo.pop(self.rcv_nxt))
        self._measure(now_ns)
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
        self._read_since += 1
        self.rcv_wnd = min(self.rcv_wnd + 2, self.space)

    def _measure(self, now_ns: int) -> None:
        """Linux's receiver RTT without timestamps, and the buffer's autotuning once per RTT."""
        if self._rtt_mark is None:
            self._rtt_mark = (self.rcv_nxt + max(self.rcv_wnd, 1), now_ns)
        elif self.rcv_nxt >= self._rtt_mark[0]:
            copied = self._read_since
            if copied > self._copied:  # Linux's tcp_rcv_space_adjust, its growth term included
                rcvwin = 2 * copied + 16
                rcvwin += 2 * (rcvwin * (copied - self._copied) // self._copied)
                self.space = max(self.space, min(rcvwin, MAX_SPACE))
                self._copied = copied
            self._read_since = 0
            self._rtt_mark = (self.rcv_nxt + max(self.rcv_wnd, 1), now_ns)

    def _edge(self) -> int:
        """The right edge: never moved left (RFC 9293 3.8.6)."""
        if self.window:
            self.window_end = max(self.window_end, self.rcv_nxt + self.rcv_wnd)
        else:
            self.window_end = 1 << 31
        return self.window_end

    def _ack(self) -> Ack:
        self.pending = 0
        self.timer_ns = None
        self.last_ack_sent = self.rcv_nxt
        return Ack(self.rcv_nxt, self.ts_recent, window_end=self._edge(), sack=self._blocks())

    def _blocks(self) -> tuple[tuple[int, int], ...]:
        """RFC 2018 4: the blocks held, the most recently received one's first, at most three."""
        if not self.sack or not self.ooo:
            self._recent.clear()
            return ()
        blocks: list[tuple[int, int]] = []
        keep: list[int] = []
        for seq in self._recent:
            if seq < self.rcv_nxt or seq not in self.ooo:
                continue
            block = self._block(seq)
            if block not in blocks:
                blocks.append(block)
                keep.append(seq)
        self._recent = keep
        return tuple(blocks[:MAX_SACK_BLOCKS])

    def _block(self, seq: int) -> tuple[int, int]:
        """The contiguous run of held segments around ``seq``, as [start, end)."""
        start, end = seq, seq + 1
        while start - 1 in self.ooo:
            start -= 1
        while end in self.ooo:
            end += 1
        return start, end
