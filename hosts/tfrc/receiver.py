"""TFRC's receiver (RFC 5348 6): the loss event rate, the receive rate, and when to report.

Why the receiver computes ``p``: it sees the losses first, and one report per RTT carries
everything the sender's equation needs. A report goes out once per RTT (the sender's estimate,
carried in each data packet) while data arrives, and at once when a new loss event starts
(6.1). The first loss event's interval is seeded from the receive rate (6.3.1).
"""

from __future__ import annotations

from hosts.tfrc.equation import loss_rate_for
from hosts.tfrc.loss_events import LossEvents
from hosts.tfrc.sender import TfrcReport

__all__ = ["TfrcReceiver"]

NS = 1_000_000_000
DEFAULT_RTT_NS = 100_000_000  # before the sender has an RTT estimate (RFC 5348 leaves it open)


class TfrcReceiver:
    def __init__(self, packet_bytes: int) -> None:
        self.s = packet_bytes
        self.events = LossEvents()
        self.rtt_ns = DEFAULT_RTT_NS
        self.last_data: tuple[int, int] | None = None  # (sender timestamp, arrival time) of the newest packet
        self.bytes_since = 0
        self.last_report_ns: int | None = None
        self.next_report_ns: int | None = None
        self.x_recv_Bps = 0.0

    def on_data(self, now_ns: int, seq: int, ts_ns: int, size: int, rtt_ns: int) -> list[TfrcReport]:
        if rtt_ns > 0:
            self.rtt_ns = rtt_ns
        self.bytes_since += size
        if self.last_data is None or ts_ns >= self.last_data[0]:
            self.last_data = (ts_ns, now_ns)
        if self.last_report_ns is None:
            self.last_report_ns = now_ns
        new_event = self.events.on_packet(seq, ts_ns, self.rtt_ns)
        if new_event or self.next_report_ns is None:
            return [self._report(now_ns)] if new_event or self.last_report_ns < now_ns else self._arm(now_ns)
        return []

    def _arm(self, now_ns: int) -> list[TfrcReport]:
        self.next_report_ns = now_ns + self.rtt_ns
        return []

    def next_timer_ns(self) -> int | None:
        return self.next_report_ns

    def on_timer(self, now_ns: int) -> list[TfrcReport]:
        if self.next_report_ns is None or now_ns < self.next_report_ns:
            return []
        if self.bytes_since == 0:  # nothing arrived for an RTT: the sender's timer will act
            self.next_report_ns = None
            return []
        return [self._report(now_ns)]

    def _report(self, now_ns: int) -> TfrcReport:
        assert self.last_data is not None and self.last_report_ns is not None
        elapsed = max(now_ns - self.last_report_ns, 1)
        self.x_recv_Bps = self.bytes_since * NS / elapsed
        if self.events.events == 1 and not self.events.intervals and self.x_recv_Bps > 0:
            p = loss_rate_for(self.x_recv_Bps, self.s, self.rtt_ns / NS)
            self.events.seed_first_interval(1 / p)
        report = TfrcReport(self.last_data[0], now_ns - self.last_data[1], self.x_recv_Bps,
                            self.events.loss_event_rate())
        self.bytes_since = 0
        self.last_report_ns = now_ns
        self.next_report_ns = now_ns + self.rtt_ns
        return report
