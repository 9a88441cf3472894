"""A TCP sender in segments, sans-I/O: SACK recovery (RFC 6675) or NewReno's (RFC 6582), RFC 6298's timer.

Why segments and not bytes: every segment the model sends is a full MSS (the last one of a sized
flow shorter), as the kernel's are for a bulk writer, so sequence numbers count segments; byte
totals are segments times their lengths.

What it is driven by (the binding, ``topo/sim/network.py``, does the I/O): :meth:`on_timer` when
:meth:`next_timer_ns` comes (the flow's start, the retransmission timer), :meth:`on_syn_ack` and
:meth:`on_ack` for what arrives. Each returns the segments to put on the wire now.

Behaviour, and where it comes from:

* connection set-up: a SYN (retransmitted on the 1 s initial RTO), data once its answer arrives;
  the SYN's RTT is the first sample (as Linux takes it);
* the application writes like ``topo/netns/tcpflow.py``'s: while less than ``notsent_segments`` are
  written but not sent (Linux's ``TCP_NOTSENT_LOWAT``), so a record's send stamp includes its
  wait in the socket, and bulk data never runs out;
* slow start and congestion avoidance: the congestion control's (``hosts/tcp/reno.py``,
  ``hosts/tcp/cubic.py``), from an initial window of 10 segments (RFC 6928, Linux's default);
* fast retransmit and fast recovery without SACK, RFC 6582: on the third duplicate ACK whose
  cumulative ACK covers more than ``recover``, ``recover`` = the highest segment sent, ssthresh
  from the congestion control, the first unacknowledged segment retransmitted; a partial ACK
  retransmits the next hole; a full ACK ends recovery with cwnd = ssthresh.
* how much new data recovery sends: by default Proportional Rate Reduction (RFC 6937, what
  Linux does). Each duplicate ACK counts one segment delivered beyond the hole, and a partial ACK
  of n segments counts n minus the duplicate ACKs it covers (at least 1; one of the n was the
  hole), as a SACK-less Linux counts them. While the pipe is above ssthresh, PRR sends
  ssthresh/RecoverFS segments per segment delivered, so a window that overshot the path (slow
  start's last round) drains the queue during recovery instead of keeping it full. The pipe is
  the flight (``pipe="flight"``, the default): the kernel's traces fit that, not the RFC 6675
  estimate that takes the duplicate-ACKed segments out of it (``pipe="dupacks"``), with which the
  model kept sending near the link's rate through recoveries in which the kernel sent at less than
  half of it (docs/howto/tcp.md, "Validation").
  ``recovery="inflation"`` is RFC 6582's own window arithmetic instead: cwnd = ssthresh + 3 on
  entry, +1 per duplicate ACK, deflated by the amount a partial ACK acknowledges (+1); with the
  pipe held at ssthresh + 3 a slow-start overshoot keeps the queue full and loses again, which the
  kernel does not (docs/howto/tcp.md).
* the timer: every ACK of new data restarts it, partial ones included (RFC 6582's
  "Slow-but-Steady" variant, what Linux does; ``impatient=True`` restarts it on the first partial
  ACK only): a window with many losses is then recovered one loss per RTT, not cut short by a
  timeout;
* RTT samples from echoed timestamps (RFC 7323) on every ACK of new data, so retransmissions
  give samples too (Karn's rule is for senders without timestamps);
* retransmission timeout (RFC 6298 5.4-5.7): the window falls to one segment, ``recover`` = the
  highest segment sent, sending goes back to the first unacknowledged segment, the timer backs
  off; every segment sent again counts as a retransmission. A timeout during fast recovery, or
  after another timeout with no new data acknowledged since, keeps ssthresh: the loss was already
  answered, and the inflated window is no measure of the path (Linux's ``tcp_enter_loss`` does
  the same).

With SACK (``sack=True``, the default as in Linux, and only if the receiver's SYN-ACK permits it):

* the scoreboard (``hosts/tcp/scoreboard.py``) takes every ACK's blocks; an ACK is a duplicate
  only if it SACKs something new (RFC 6675 2); recovery starts on the third duplicate ACK or when
  the first unacknowledged segment IsLost, if the cumulative ACK is past ``recover``;
* during recovery PRR (RFC 6937) says how many segments may go on each ACK, with RFC 6675's pipe
  and DeliveredData = the change in snd_una plus the change in SACKed segments, and NextSeg says
  which: lost holes first (each once: HighRxt), then new data; the first hole goes at once on
  entry (fast retransmit). Recovery ends when the cumulative ACK passes ``recover``;
* outside recovery the window counts the flight less what is SACKed (as Linux's
  ``tcp_packets_in_flight``), and after a timeout sending goes back to snd_una but skips what is
  SACKed (RFC 6675 5.1: the scoreboard is kept).

The receiver's window (``hosts/tcp/receiver.py``) bounds what is sent: no segment at or past
its right edge. An ACK that moves the right edge is not a duplicate ACK (as Linux counts them).

A ``pacer`` (optional; ``hosts/cvihis_tcp.py``'s drives ``cc: cvihis-rtm``) says when the next data
segment may leave: every segment the window, PRR or NextSeg would send, new or retransmitted, also
waits for it, and :meth:`next_timer_ns` includes the release time, so the binding calls
:meth:`on_timer` then. One place decides what is sent (the loops below), so a paced flow keeps the
model's recovery unchanged. Pacing needs SACK: without it NewReno's fast and partial-ACK
retransmissions leave outside those loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from hosts.tcp.reno import AckInfo
from hosts.tcp.rto import RtoEstimator
from hosts.tcp.scoreboard import Scoreboard

__all__ = ["Segment", "TcpSender", "CongestionControl", "Pacer", "MSS", "INITIAL_CWND", "NOTSENT_SEGMENTS",
           "DUPACK_THRESHOLD"]

MSS = 1448  # payload bytes of a 1500-byte IPv4 packet with TCP timestamps
INITIAL_CWND = 10
NOTSENT_SEGMENTS = math.ceil(16384 / MSS)  # topo/netns/tcpflow.py's TCP_NOTSENT_LOWAT, in segments
DUPACK_THRESHOLD = 3


class Pacer(Protocol):
    """When the next data segment may leave (``release_ns``), told of each that does (``on_release``)."""

    def release_ns(self, now_ns: int) -> int: ...
    def on_release(self, now_ns: int) -> None: ...


class CongestionControl(Protocol):
    name: str
    cwnd: float
    ssthresh: float

    def on_ack(self, ack: AckInfo) -> None: ...
    def on_loss(self, now_ns: int, flight: int) -> float: ...
    def on_timeout(self, now_ns: int, flight: int) -> None: ...
    def on_recovered(self, now_ns: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment to transmit: ``syn`` (no data) or data segment ``seq`` of ``length`` bytes."""

    seq: int
    length: int
    stamp_ns: int  # when the application wrote it (its record's send time)
    ts_ns: int  # the timestamp option's value: the sender's clock now
    syn: bool = False
    retransmission: bool = False
    sack_ok: bool = False  # on a SYN: SACK-permitted


class TcpSender:
    """One connection's sending side; ``total_bytes`` None means bulk until ``stop_ns``."""

    def __init__(self, cc: CongestionControl, *, start_ns: int, stop_ns: int | None = None,
                 total_bytes: int | None = None, mss: int = MSS, notsent_segments: int = NOTSENT_SEGMENTS,
                 impatient: bool = False, recovery: str = "prr", pipe: str = "flight", sack: bool = True,
                 pacer: Pacer | None = None) -> None:
        if total_bytes is not None and total_bytes <= 0:
            raise ValueError(f"total_bytes {total_bytes}: must be > 0")
        if mss <= 0 or notsent_segments <= 0:
            raise ValueError(f"mss {mss} and notsent_segments {notsent_segments}: must be > 0")
        self.cc = cc
        self.start_ns, self.stop_ns = start_ns, stop_ns
        self.mss = mss
        self.total_bytes = total_bytes
        self.total_segments = None if total_bytes is None else -(-total_bytes // mss)
        self.notsent = notsent_segments
        self.impatient = impatient
        if recovery not in ("prr", "inflation"):
            raise ValueError(f"recovery {recovery!r}: prr or inflation")
        self.prr = recovery == "prr"
        if pipe not in ("flight", "dupacks"):
            raise ValueError(f"pipe {pipe!r}: flight or dupacks")
        self.pipe_counts_dupacks = pipe == "dupacks"
        self._recover_fs = self._prr_delivered = self._prr_out = self._dups_counted = 0
        self._allowance = 0  # PRR: new segments recovery may send now
        self.rto = RtoEstimator()
        self.phase = "idle"  # idle -> syn -> open -> done
        self.snd_una = self.snd_nxt = self.snd_max = 0
        self.stamps: list[int] = []  # per segment written: the application's send time
        self.dupacks = 0
        self.in_recovery = False
        self.recover = -1
        self.timer_ns: int | None = start_ns
        self._partial_seen = False
        self.connected_ns: int | None = None
        self.retransmissions = 0
        self.timeouts = 0  # retransmission timer expiries with data outstanding
        self.bytes_retransmitted = 0
        self.last_rtt_ns: int | None = None
        self.window_end = 1 << 31  # the receiver's right edge
        self.sack_wanted = sack
        self.sack = False  # negotiated (the SYN-ACK permitted it)
        self.board = Scoreboard()
        if pacer is not None and not sack:
            raise ValueError("a paced sender needs sack=True (NewReno's retransmissions bypass the pace)")
        self.pacer = pacer
        self._pace_at: int | None = None  # a segment waits for the pacer until then

    # ---- what the binding reads ------------------------------------------------------------------
    def next_timer_ns(self) -> int | None:
        if self._pace_at is None or self.phase != "open":
            return self.timer_ns
        return self._pace_at if self.timer_ns is None else min(self.timer_ns, self._pace_at)

    @property
    def written(self) -> int:
        """Segments (records) the application has written."""
        return len(self.stamps)

    def length(self, seq: int) -> int:
        if self.total_bytes is not None and seq == self.total_segments - 1:  # type: ignore[operator]
            return self.total_bytes - seq * self.mss
        return self.mss

    @property
    def bytes_written(self) -> int:
        return sum(self.length(s) for s in range(self.written)) if self.total_bytes is not None \
            else self.written * self.mss

    @property
    def bytes_acked(self) -> int:
        return self.snd_una * self.mss if self.total_bytes is None else min(self.snd_una * self.mss, self.total_bytes)

    @property
    def flight(self) -> int:
        return self.snd_nxt - self.snd_una

    # ---- events ---------------------------------------------------------------------------------
    def on_timer(self, now_ns: int) -> list[Segment]:
        if self._pace_at is not None and now_ns >= self._pace_at and self.phase == "open" \
                and (self.timer_ns is None or now_ns < self.timer_ns):
            return self._transmit(now_ns)
        if self.timer_ns is None or now_ns < self.timer_ns:
            return []
        if self.phase == "idle":
            self.phase = "syn"
            self.timer_ns = now_ns + self.rto.rto_ns
            return [Segment(0, 0, now_ns, now_ns, syn=True, sack_ok=self.sack_wanted)]
        if self.phase == "syn":
            self.rto.on_expiry()
            self.timer_ns = now_ns + self.rto.rto_ns
            self.retransmissions += 1
            return [Segment(0, 0, now_ns, now_ns, syn=True, retransmission=True, sack_ok=self.sack_wanted)]
        if self.phase != "open" or self.snd_una >= self.snd_max:
            self.timer_ns = None
            return []
        # RFC 6298 5.4-5.7 and RFC 5681 (4)-(5): one segment, back to snd_una, timer backed off
        answered = self.in_recovery or self.rto.backoff > 0
        self.timeouts += 1
        self.rto.on_expiry()
        if answered:
            self.cc.cwnd = 1.0
        else:
            self.cc.on_timeout(now_ns, self.snd_max - self.snd_una)
        self.recover = self.snd_max - 1
        self.in_recovery, self.dupacks = False, 0
        self.board.high_rxt = -1
        self.snd_nxt = self.snd_una
        self.timer_ns = None
        return self._transmit(now_ns)

    def repace(self, now_ns: int) -> list[Segment]:
        """The pacer's gap changed: what it allows now, and the wait re-timed (new ``next_timer_ns``)."""
        return self._transmit(now_ns) if self.phase == "open" else []

    def on_syn_ack(self, now_ns: int, ts_echo_ns: int, window_end: int = 1 << 31,
                   sack_ok: bool = False) -> list[Segment]:
        if self.phase != "syn":
            return []
        self.window_end = window_end
        self.sack = self.sack_wanted and sack_ok
        self._sample(now_ns, ts_echo_ns)
        self.phase = "open"
        self.connected_ns = now_ns
        self.timer_ns = None
        self._write(now_ns)
        return self._transmit(now_ns)

    def on_ack(self, now_ns: int, ack: int, ts_echo_ns: int, window_end: int = 1 << 31,
               sack: tuple[tuple[int, int], ...] = ()) -> list[Segment]:
        """A cumulative ACK (the next segment the receiver expects) echoing ``ts_echo_ns``, with the
        receive window's right edge and, if SACK was negotiated, its SACK blocks."""
        if self.phase != "open" or ack > self.snd_max or ack < self.snd_una:
            return []
        if self.sack:
            return self._on_sack_ack(now_ns, ack, ts_echo_ns, window_end, sack)
        out: list[Segment] = []
        window_update = window_end > self.window_end
        self.window_end = max(self.window_end, window_end)
        if ack > self.snd_una:
            rtt = self._sample(now_ns, ts_echo_ns)
            acked = ack - self.snd_una
            self.snd_una = ack
            self.snd_nxt = max(self.snd_nxt, ack)
            if self.in_recovery:
                if ack > self.recover:  # full ACK: recovery ends (RFC 6582 3.2 step 3)
                    self.in_recovery, self.dupacks = False, 0
                    self.cc.on_recovered(now_ns)
                else:  # partial ACK (step 4)
                    out.append(self._segment(now_ns, self.snd_una))
                    if self.prr:
                        # one segment acknowledged was the hole; the rest were counted by duplicate ACKs
                        delivered = max(acked - self._dups_counted, 1)
                        self._dups_counted = max(self._dups_counted - (acked - 1), 0)
                        self._prr_step(delivered, sent=1)
                    else:
                        self.cc.cwnd = max(self.cc.cwnd - acked + 1, 1.0)
                    first, self._partial_seen = not self._partial_seen, True
                    if first or not self.impatient:
                        self.timer_ns = now_ns + self.rto.rto_ns
            else:
                self.dupacks = 0
                self.cc.on_ack(AckInfo(now_ns, acked, rtt, self.rto.srtt_ns or 0.0, self.rto.min_rtt_ns or 0,
                                       self.snd_una, self.snd_nxt))
            if not (self.in_recovery and out):  # (a partial ACK has set the timer itself)
                self.timer_ns = now_ns + self.rto.rto_ns if self.snd_una < self.snd_max else None
            if self.total_segments is not None and self.snd_una >= self.total_segments:
                self.phase, self.timer_ns = "done", None
                return out
        elif self.snd_una < self.snd_max and not window_update:  # a duplicate ACK
            self.dupacks += 1
            if self.in_recovery:
                if self.prr:
                    self._dups_counted += 1
                    self._prr_step(1, sent=0)
                else:
                    self.cc.cwnd += 1
            elif self.dupacks == DUPACK_THRESHOLD and ack > self.recover:  # step 2: enter fast recovery
                self.recover = self.snd_max - 1
                ssthresh = self.cc.on_loss(now_ns, self.snd_max - self.snd_una)
                self.in_recovery, self._partial_seen = True, False
                out.append(self._segment(now_ns, self.snd_una))
                if self.prr:  # RFC 6937: RecoverFS, and the three duplicate ACKs as delivered
                    self._recover_fs = self.snd_max - self.snd_una
                    self._prr_delivered = self._prr_out = 0
                    self._dups_counted = DUPACK_THRESHOLD
                    self._prr_step(DUPACK_THRESHOLD, sent=1)
                else:
                    self.cc.cwnd = ssthresh + DUPACK_THRESHOLD
                self.timer_ns = now_ns + self.rto.rto_ns
        return out + self._transmit(now_ns)

    def _on_sack_ack(self, now_ns: int, ack: int, ts_echo_ns: int, window_end: int,
                     blocks: tuple[tuple[int, int], ...]) -> list[Segment]:
        """RFC 6675 with PRR: the scoreboard first, then recovery's entry, progress or end."""
        window_update = window_end > self.window_end
        self.window_end = max(self.window_end, window_end)
        before = len(self.board)
        acked = ack - self.snd_una
        rtt = self._sample(now_ns, ts_echo_ns) if acked else None
        self.snd_una = ack
        self.snd_nxt = max(self.snd_nxt, ack)
        newly_sacked = self.board.update(ack, self.snd_max, blocks)
        delivered = acked + len(self.board) - before  # RFC 6937 DeliveredData
        if acked:
            self.dupacks = 0
            if self.total_segments is not None and self.snd_una >= self.total_segments:
                self.phase, self.timer_ns = "done", None
                return []
            self.timer_ns = now_ns + self.rto.rto_ns if self.snd_una < self.snd_max else None
            if self.in_recovery and ack > self.recover:  # recovery ends
                self.in_recovery = False
                self.cc.on_recovered(now_ns)
            elif not self.in_recovery:
                self.cc.on_ack(AckInfo(now_ns, acked, rtt, self.rto.srtt_ns or 0.0, self.rto.min_rtt_ns or 0,
                                       self.snd_una, self.snd_nxt))
        elif newly_sacked > 0 and not window_update:
            self.dupacks += 1
        if self.in_recovery:
            self.board.high_rxt = max(self.board.high_rxt, self.snd_una - 1)
            self._prr_step(delivered, sent=0)
        elif (self.dupacks >= DUPACK_THRESHOLD or self.board.is_lost(self.snd_una)) and ack > self.recover \
                and self.snd_una < self.snd_max:
            self._enter_sack_recovery(now_ns, delivered)
        return self._transmit(now_ns)

    def _enter_sack_recovery(self, now_ns: int, delivered: int) -> None:
        """RFC 6675 5 (4): RecoveryPoint = HighData, ssthresh from the congestion control, HighRxt
        from HighACK; PRR starts counting (RFC 6937), and lets the first hole go at once."""
        self.recover = self.snd_max - 1
        self.cc.on_loss(now_ns, self.snd_max - self.snd_una)
        self.in_recovery = True
        # a segment retransmitted in an earlier recovery and not yet acknowledged is not sent again
        self.board.high_rxt = max(self.board.high_rxt, self.snd_una - 1)
        self._recover_fs = self.snd_max - self.snd_una
        self._prr_delivered = self._prr_out = self._dups_counted = 0
        self._prr_step(delivered, sent=0)
        self._allowance = max(self._allowance, 1)
        self.timer_ns = now_ns + self.rto.rto_ns

    def _sack_recovery_send(self, now_ns: int) -> list[Segment]:
        """What PRR allows, in NextSeg's order: lost holes (each once), then new data."""
        out = []
        while self._allowance > 0:
            self._write(now_ns)
            new_ok = self.snd_max < min(self.written, self.window_end)
            seq = self.board.next_seg(self.snd_una, new_ok)
            if seq is None or not self._paced(now_ns):
                break
            if seq < 0:
                out.append(self._segment(now_ns, self.snd_max))
                self.snd_nxt = self.snd_max = self.snd_max + 1
            else:
                out.append(self._segment(now_ns, seq))
                self.board.high_rxt = seq
            self._allowance -= 1
            self._prr_out += 1
        self._write(now_ns)
        return out

    # ---- internals ------------------------------------------------------------------------------
    def _prr_step(self, delivered: int, sent: int) -> None:
        """RFC 6937 on one ACK in recovery: how many new segments may go (``sent``: the hole just
        retransmitted, counted as sent). cwnd shows pipe + sndcnt, as Linux's snd_cwnd does."""
        self._prr_delivered += delivered
        self._prr_out += sent
        if self.sack:
            pipe = self.board.pipe(self.snd_una, self.snd_max)
        else:
            pipe = self.flight - self._dups_counted if self.pipe_counts_dupacks else self.flight
        ssthresh = self.cc.ssthresh
        if pipe > ssthresh:
            sndcnt = math.ceil(self._prr_delivered * ssthresh / max(self._recover_fs, 1)) - self._prr_out
        else:  # PRR-SSRB
            sndcnt = min(int(ssthresh) - pipe, max(self._prr_delivered - self._prr_out, delivered) + 1)
        self._allowance = max(sndcnt, 0)
        self.cc.cwnd = float(max(pipe + self._allowance, 1))

    def _in_flight(self) -> int:
        """Segments sent (or, after a timeout, sent again) and neither acknowledged nor SACKed."""
        return self.flight - self.board.between(self.snd_una, self.snd_nxt)

    def _sample(self, now_ns: int, ts_echo_ns: int) -> int | None:
        if not 0 < ts_echo_ns <= now_ns:
            return None
        rtt = now_ns - ts_echo_ns
        self.rto.on_sample(rtt)
        self.last_rtt_ns = rtt
        return rtt

    def _write(self, now_ns: int) -> None:
        """The application writes while fewer than ``notsent`` segments wait unsent."""
        if self.stop_ns is not None and now_ns >= self.stop_ns:
            return
        limit = self.snd_max + self.notsent
        if self.total_segments is not None:
            limit = min(limit, self.total_segments)
        while len(self.stamps) < limit:
            self.stamps.append(now_ns)

    def _paced(self, now_ns: int) -> bool:
        """May a data segment leave now? If not, when it may is the next pace timer."""
        if self.pacer is None:
            return True
        due = self.pacer.release_ns(now_ns)
        if due > now_ns:
            self._pace_at = due
            return False
        return True

    def _segment(self, now_ns: int, seq: int) -> Segment:
        if self.pacer is not None:
            self.pacer.on_release(now_ns)
        again = seq < self.snd_max
        if again:
            self.retransmissions += 1
            self.bytes_retransmitted += self.length(seq)
        return Segment(seq, self.length(seq), self.stamps[seq], now_ns, retransmission=again)

    def _transmit(self, now_ns: int) -> list[Segment]:
        """New (or, after a timeout, resent) segments while the window allows."""
        out = []
        self._write(now_ns)
        self._pace_at = None
        if self.in_recovery and self.sack:
            return self._sack_recovery_send(now_ns)
        if self.in_recovery and self.prr:
            while self.snd_nxt < min(self.written, self.window_end) and self._allowance > 0 and self._paced(now_ns):
                out.append(self._segment(now_ns, self.snd_nxt))
                self.snd_nxt += 1
                self._allowance -= 1
                self._prr_out += 1
                if self.snd_nxt > self.snd_max:
                    self.snd_max = self.snd_nxt
                    self._write(now_ns)
            return out
        while self.snd_nxt < min(self.written, self.window_end) and self._in_flight() < int(self.cc.cwnd):
            if self.snd_nxt not in self.board and not self._paced(now_ns):
                break
            if self.snd_nxt in self.board:  # SACKed: not sent again after a timeout
                self.snd_nxt += 1
                continue
            out.append(self._segment(now_ns, self.snd_nxt))
            self.snd_nxt += 1
            if self.snd_nxt > self.snd_max:
                self.snd_max = self.snd_nxt
                self._write(now_ns)
        if out and self.timer_ns is None:
            self.timer_ns = now_ns + self.rto.rto_ns
        return out
