"""TFRC's loss event rate at the receiver (RFC 5348 5): loss events, intervals, their weighted mean.

Why events and not packets: TCP halves once per window however many packets it lost, so TFRC
counts losses within one RTT of the first as a single loss event (5.2), and ``p`` is one over the
weighted mean of the last 8 loss intervals (packets between the starts of successive events):
weights 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2 from the newest; the open interval since the last event
counts only when it raises the mean (5.4, "the max of the average with and without the current
one", SOURCES.md C).

A packet is lost once ``NDUPACK`` = 3 packets with higher sequence numbers have arrived (5.1): a
packet delayed past three others is counted lost even if it arrives later -- the reordering
that Gharai & Perkins show TFRC reads as loss. Its late arrival is counted apart
(:attr:`LossEvents.late`), the loss stays.
"""

from __future__ import annotations

__all__ = ["LossEvents", "WEIGHTS", "NDUPACK"]

WEIGHTS = (1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2)
NDUPACK = 3


class LossEvents:
    def __init__(self) -> None:
        self.highest = -1
        self.arrived: dict[int, int] = {}  # seq -> sender timestamp, while its fate can still change
        self.pending: set[int] = set()  # missing sequence numbers not yet declared lost
        self.intervals: list[int] = []  # closed loss intervals, newest first
        self.event_start: tuple[int, int] | None = None  # (seq, interpolated send time) of the last event
        self.current = 0  # packets since the last event's start (the open interval I_0)
        self.lost = 0
        self.late = 0
        self.events = 0

    def on_packet(self, seq: int, ts_ns: int, rtt_ns: int) -> bool:
        """A data packet; True if it made a new loss event start (the receiver then reports at once)."""
        if seq in self.pending:
            self.pending.discard(seq)
            return False
        if seq <= self.highest:
            if seq not in self.arrived:
                self.late += 1  # declared lost already: reordering read as loss
            return False
        self.pending.update(range(self.highest + 1, seq))
        self.highest = seq
        self.arrived[seq] = ts_ns
        self.current += 1
        new_event = False
        for missing in sorted(s for s in self.pending if seq - s >= NDUPACK):
            self.pending.discard(missing)
            new_event |= self._lost(missing, rtt_ns)
        if len(self.arrived) > 64:
            for old in sorted(self.arrived)[:-32]:
                del self.arrived[old]
        return new_event

    def _send_time(self, seq: int) -> int:
        """Interpolated send time of a lost packet from its neighbours' timestamps (RFC 5348 5.2)."""
        before = max((s for s in self.arrived if s < seq), default=None)
        after = min((s for s in self.arrived if s > seq), default=None)
        if before is None or after is None:
            return self.arrived[before if before is not None else after]  # type: ignore[index]
        t0, t1 = self.arrived[before], self.arrived[after]
        return t0 + (t1 - t0) * (seq - before) // (after - before)

    def _lost(self, seq: int, rtt_ns: int) -> bool:
        self.lost += 1
        t = self._send_time(seq)
        if self.event_start is not None and t - self.event_start[1] <= rtt_ns:
            return False  # within one RTT of the event's start: the same event
        if self.event_start is not None:
            self.intervals.insert(0, max(1, seq - self.event_start[0]))
            del self.intervals[len(WEIGHTS):]
        self.event_start = (seq, t)
        self.current = max(1, self.highest - seq)
        self.events += 1
        return True

    def seed_first_interval(self, interval: float) -> None:
        """RFC 5348 6.3.1: after the first event, the interval that gives the rate received so far."""
        if self.events == 1 and not self.intervals:
            self.intervals.append(max(1, round(interval)))

    def loss_event_rate(self) -> float:
        """p: 0 before any loss event."""
        if not self.intervals:
            return 0.0
        closed = self.intervals[:len(WEIGHTS)]
        with_open = [self.current, *closed][:len(WEIGHTS)]
        def mean(values: list[int]) -> float:
            w = WEIGHTS[:len(values)]
            return sum(v * x for v, x in zip(values, w)) / sum(w)
        return 1.0 / max(mean(closed), mean(with_open))
