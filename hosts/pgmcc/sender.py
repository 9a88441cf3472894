"""A pgmcc sender, sans-I/O: a bulk source whose transmissions the acker's window clocks, whose
repairs the receivers' NAKs ask for, and whose acker the NAKs elect.

Why repairs take the window like new data: a repair loads the same links as a new packet, so the
congestion loop counts it (it is a transmission); reliability only decides *what* the next
transmission carries (the oldest repair asked for, else the next new packet), never *when*: the
sender keeps sending new packets while old ones are missing, as pgmcc keeps the two apart.

Why a switch gives the new acker one token: the acker only ACKs packets that name it, and a sender
whose window is full (an ACK-clocked sender's usual state) sends none after the switch, while the old
acker's ACKs, still in flight, only vote (draft sections 2.3 and 3). Read literally, the draft's sender
then stalls until its timeout on every switch, although its section 2.3 expects feedback of the old and
the new acker to interleave after one, which needs packets naming the new acker. Its section 3 gives a
newly elected acker one token when there was none (``T = T + 1``); this sender does the same on every
change of acker, and arms the timeout anew when that packet goes out, the draft's ``send_packet``.

The driver calls ``can_send``/``take`` to send, ``on_feedback`` for each ACK or NAK, and
``on_timer`` at ``next_timer_ns`` (the timeout). Times are the sender's clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from hosts.pgmcc.election import AckerElection, Switch
from hosts.pgmcc.params import RETRY_MAX, PgmccParams
from hosts.pgmcc.window import Window
from hosts.pgmcc.wire import NO_SEQ, DataTag, Feedback
from hosts.tcp.rto import RtoEstimator

__all__ = ["PgmccSender", "Transmission"]

#: Before the acker's first RTT sample, a repair is not sent twice within this long.
REPAIR_HOLD_UNKNOWN_NS = 500_000_000


@dataclass(frozen=True)
class Transmission:
    tx_seq: int
    tag: DataTag
    rtt_hint_ns: int  # the acker's smoothed RTT, 0 when unknown (receivers time their NAK retries on it)


class PgmccSender:
    def __init__(self, params: PgmccParams | None = None) -> None:
        self.params = params or PgmccParams()
        self.window = Window(self.params.max_window)
        self.election = AckerElection(self.params.switch_ratio, 1.0 if self.params.rtt == "packets" else 1e9)
        self._rtos: dict[int, RtoEstimator] = {}  # per receiver: the acker's RTO state survives switches
        self.next_tx = 0
        self.next_data = 0
        self._repairs: deque[int] = deque()
        self._queued: set[int] = set()
        self._repaired_at: dict[int, int] = {}
        self._deadline: int | None = None
        self.receivers: dict[int, tuple[float, float]] = {}  # rid -> (p, RTT ns) from its last NAK
        self.timeouts = 0
        self.initial_rto_timeouts = 0  # timeouts armed before the acker had an RTT sample (the initial RTO)
        self._armed_initial = False
        self.retry = 0  # successive timeouts (any feedback resets it)
        self.reelections = 0  # ackers dropped after RETRY_MAX successive timeouts
        self.repairs_sent = 0
        self.naks = 0
        self.acks = 0
        self.stale_acks = 0  # ACKs of a receiver that is not the acker (the election's reports only)
        self._switch_token = False  # a new acker's token: one packet naming it, whatever the window
        self.switch_tokens = 0  # packets sent on that token beyond a full window

    # ---- sending -----------------------------------------------------------------------------------
    @property
    def acker(self) -> int:
        return self.election.acker

    @property
    def rto(self) -> RtoEstimator:
        """The current acker's RTO state. The draft (section 2.7) restarts SRTT and RTTVAR on an acker
        change unless the sender keeps state for recent ackers. This sender restarts them, from the RTT
        the electing report measured (RFC 6298 2.2's first sample: RTO = R + max(200 ms, 2R)): state
        kept since a receiver was last the acker is stale when queues have grown meanwhile (set 2's
        congestion case: an acker taken back timed out on its old samples' RTO before its first ACK,
        while the report that elected it had measured the longer RTT)."""
        return self._rto_of(self.acker)

    def _rto_of(self, rid: int) -> RtoEstimator:
        est = self._rtos.get(rid)
        if est is None:
            est = self._rtos[rid] = RtoEstimator()
        return est

    @property
    def switches(self) -> list[Switch]:
        return self.election.switches

    def can_send(self) -> bool:
        return self.window.can_send() or self._switch_token

    def take(self, now_ns: int) -> Transmission:
        """The next transmission (call only when ``can_send``): a repair asked for, else new data."""
        rearm = self._switch_token  # the first packet naming a new acker: its timeout starts now
        if rearm:
            self._switch_token = False
            self.switch_tokens += not self.window.can_send()
        if self._repairs:
            seq = self._repairs.popleft()
            self._queued.discard(seq)
            self._repaired_at[seq] = now_ns
            self.repairs_sent += 1
            tag = DataTag(seq, self.acker, True)
        else:
            tag = DataTag(self.next_data, self.acker, False)
            self.next_data += 1
        tx = Transmission(self.next_tx, tag, round(self.rto.srtt_ns or 0))
        self.window.on_sent(self.next_tx)
        self.next_tx += 1
        if self._deadline is None or rearm:
            self._deadline = now_ns + self._timeout_ns()
        return tx

    def _timeout_ns(self) -> int:
        if self.params.timeout_ns is not None:
            return self.params.timeout_ns
        self._armed_initial = self.rto.srtt_ns is None
        return self.rto.rto_ns

    # ---- feedback ----------------------------------------------------------------------------------
    def on_feedback(self, now_ns: int, fb: Feedback) -> None:
        rtt = max(1, now_ns - fb.ts_echo_ns - fb.hold_ns)
        self.retry = 0  # draft section 3: any ACK or NAK ends a run of timeouts
        if fb.is_ack:
            self._on_ack(now_ns, fb, rtt)
        else:
            self._on_nak(now_ns, fb, rtt)

    def _election_rtt(self, fb: Feedback, rtt_ns: int) -> float:
        """The RTT the election compares (params.rtt): the clock's, or the transmissions made since the
        one the receiver last had (its rx_max)."""
        if self.params.rtt == "packets":
            return float(max(1, self.next_tx - fb.rx_max))
        return float(rtt_ns)

    def _on_ack(self, now_ns: int, fb: Feedback, rtt_ns: int) -> None:
        if fb.rid != self.acker:
            # draft sections 2.3 and 3: an ACK of another receiver (typically the previous acker's, in
            # flight for one RTT after a switch) is a report for the election, never a window update
            self.stale_acks += 1
            self._report(now_ns, fb, self._election_rtt(fb, rtt_ns), rtt_ns)
            return
        self.acks += 1
        self.rto.on_sample(rtt_ns)
        self.election.on_acker_state(fb.p, self._election_rtt(fb, rtt_ns))  # measured as a NAK's is
        if self.window.on_ack(fb.rx_max, fb.mask, self.next_tx):
            self._deadline = now_ns + self._timeout_ns() if self.window.inflight else None
        elif not self.window.inflight:
            self._deadline = None

    def _on_nak(self, now_ns: int, fb: Feedback, rtt_ns: int) -> None:
        self.naks += 1
        self._report(now_ns, fb, self._election_rtt(fb, rtt_ns), rtt_ns)
        if self.params.repair and fb.nak_seq != NO_SEQ and fb.nak_seq < self.next_data:
            self._ask_repair(now_ns, fb.nak_seq)

    def _report(self, now_ns: int, fb: Feedback, rtt: float, clock_rtt_ns: int) -> None:
        """A receiver's estimate for the election (draft section 2.3); with no acker, the first report
        elects (section 2.3.1). ``rtt`` is the election's (params.rtt), ``clock_rtt_ns`` the clock's."""
        self.receivers[fb.rid] = (fb.p, rtt)
        first = self.acker == 0
        if not self.election.on_report(now_ns, fb.rid, fb.p, rtt):
            return
        est = self._rtos[fb.rid] = RtoEstimator()  # the new acker's timer starts from this report's RTT
        est.on_sample(clock_rtt_ns)
        if first:
            # what went out while there was no acker can never be acknowledged: start the loop now
            self.window.inflight.clear()
            self._deadline = None
        else:
            self._switch_token = True  # one packet names the new acker even with the window full

    def _ask_repair(self, now_ns: int, seq: int) -> None:
        """Queue a repair of ``seq`` unless one is queued or went out within the acker's RTT (the
        other receivers' NAKs for the same loss, which the repair on its way will answer)."""
        if seq in self._queued:
            return
        hold = self.rto.srtt_ns or REPAIR_HOLD_UNKNOWN_NS
        last = self._repaired_at.get(seq)
        if last is not None and now_ns - last < hold:
            return
        self._queued.add(seq)
        self._repairs.append(seq)

    # ---- the timeout -------------------------------------------------------------------------------
    def next_timer_ns(self) -> int | None:
        return self._deadline

    def on_timer(self, now_ns: int) -> None:
        """The acker's ACKs stopped: window to one packet, the timer backed off (adaptive)."""
        if self._deadline is None or now_ns < self._deadline:
            return
        self.timeouts += 1
        self.initial_rto_timeouts += self._armed_initial
        self._switch_token = False  # the window sends again by itself
        self.window.on_timeout(self.next_tx)
        if self.params.timeout_ns is None:
            self.rto.on_expiry()
        self._deadline = None
        self.retry += 1
        if self.retry >= RETRY_MAX and self.acker != 0:
            # draft section 2.7: the acker may have left unannounced; after successive timeouts the
            # sender MUST force a new election (packets name no acker; the receivers' reports elect)
            self.election.drop_acker()
            self.reelections += 1

    def stats(self) -> dict[str, object]:
        return {
            "acker": self.acker,
            "cwnd": self.window.cwnd,
            "data_sent": self.next_data,
            "transmissions": self.next_tx,
            "repairs_sent": self.repairs_sent,
            "timeouts": self.timeouts,
            "initial_rto_timeouts": self.initial_rto_timeouts,
            "window_cuts": self.window.cuts,
            "losses_detected": self.window.losses,
            "unreported": self.window.unreported,
            "switch_tokens": self.switch_tokens,
            "acks": self.acks,
            "stale_acks": self.stale_acks,
            "naks": self.naks,
            "reelections": self.reelections,
            "acker_switches": max(0, len(self.switches) - 1),
        }
