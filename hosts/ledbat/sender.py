"""LEDBAT's sender (RFC 6817 2.4.2): a window driven by the queuing delay it measures.

Why: LEDBAT is the "scavenger" the CVIHIS thesis compares backward-loading mode with: it keeps
the queuing delay it adds near ``TARGET`` and yields to anything that builds a queue.

    off_target = (TARGET - queuing_delay) / TARGET
    cwnd += GAIN * off_target * bytes_newly_acked * MSS / cwnd
    cwnd = min(cwnd, flightsize + ALLOWED_INCREASE * MSS);  cwnd >= MIN_CWND * MSS

On loss (a packet unacknowledged while ``DUPTHRESH`` later ones are acknowledged) cwnd halves,
at most once per RTT (2.4.2, "as TCP"); when nothing is acknowledged for a timeout
(max(1 s, 2 RTT) here, the RFC leaves it to the TCP-like timer) cwnd falls to one packet. The
data are datagrams, not a byte stream: nothing is retransmitted (the receiver's records count
the loss, like every other flow's). TARGET is 100 ms by default (the RFC's maximum); the thesis'
runs used 60 and 55 ms (flow key ``target``).
"""

from __future__ import annotations

from hosts.ledbat.delays import DelayEstimates

__all__ = ["LedbatSender", "TARGET_NS", "GAIN", "ALLOWED_INCREASE", "MIN_CWND", "INIT_CWND", "DUPTHRESH"]

TARGET_NS = 100_000_000
GAIN = 1.0
ALLOWED_INCREASE = 1
MIN_CWND = 2
INIT_CWND = 2
DUPTHRESH = 3
MIN_TIMEOUT_NS = 1_000_000_000


class LedbatSender:
    def __init__(self, packet_bytes: int, *, target_ns: int = TARGET_NS, gain: float = GAIN) -> None:
        if packet_bytes <= 0 or target_ns <= 0 or gain <= 0:
            raise ValueError(f"packet size {packet_bytes}, target {target_ns} ns and gain {gain}: must be > 0")
        self.mss = packet_bytes
        self.target_ns = target_ns
        self.gain = gain
        self.cwnd = float(INIT_CWND * packet_bytes)  # bytes
        self.delays = DelayEstimates()
        self.outstanding: dict[int, int] = {}  # seq -> send time
        self.next_seq = 0
        self.highest_acked = -1
        self.rtt_ns: float | None = None
        self.last_cut_ns: int | None = None
        self.last_ack_ns: int | None = None
        self.losses = 0

    @property
    def flight_bytes(self) -> int:
        return len(self.outstanding) * self.mss

    @property
    def timeout_ns(self) -> int:
        return int(max(MIN_TIMEOUT_NS, 2 * (self.rtt_ns or 0)))

    def can_send(self) -> bool:
        return self.flight_bytes + self.mss <= self.cwnd

    def on_sent(self, now_ns: int) -> int:
        """A packet leaves now; its sequence number."""
        seq = self.next_seq
        self.next_seq += 1
        self.outstanding[seq] = now_ns
        if self.last_ack_ns is None:
            self.last_ack_ns = now_ns
        return seq

    def on_ack(self, now_ns: int, seq: int, owd_ns: int) -> None:
        """The receiver got packet ``seq`` with one-way delay ``owd_ns`` (its clock minus ours)."""
        sent = self.outstanding.pop(seq, None)
        self.last_ack_ns = now_ns
        if sent is None:
            return
        sample = now_ns - sent
        self.rtt_ns = float(sample) if self.rtt_ns is None else 0.875 * self.rtt_ns + 0.125 * sample
        self.highest_acked = max(self.highest_acked, seq)
        flight_before = self.flight_bytes + self.mss
        self.delays.on_sample(now_ns, owd_ns)
        off_target = (self.target_ns - self.delays.queuing_delay_ns) / self.target_ns
        self.cwnd += self.gain * off_target * self.mss * self.mss / self.cwnd
        self.cwnd = min(self.cwnd, flight_before + ALLOWED_INCREASE * self.mss)
        self.cwnd = max(self.cwnd, MIN_CWND * self.mss)
        lost = [s for s in self.outstanding if s <= self.highest_acked - DUPTHRESH]
        if lost:
            for s in lost:
                del self.outstanding[s]
            self.losses += len(lost)
            self._halve(now_ns)

    def _halve(self, now_ns: int) -> None:
        if self.last_cut_ns is not None and now_ns - self.last_cut_ns < (self.rtt_ns or 0):
            return
        self.cwnd = max(self.cwnd / 2, MIN_CWND * self.mss)
        self.last_cut_ns = now_ns

    def next_timer_ns(self) -> int | None:
        if not self.outstanding or self.last_ack_ns is None:
            return None
        return self.last_ack_ns + self.timeout_ns

    def on_timer(self, now_ns: int) -> None:
        """Nothing acknowledged for the timeout: one packet's window, the outstanding ones given up."""
        t = self.next_timer_ns()
        if t is None or now_ns < t:
            return
        self.losses += len(self.outstanding)
        self.outstanding.clear()
        self.cwnd = float(self.mss)
        self.last_ack_ns = now_ns
