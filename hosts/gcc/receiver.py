"""GCC's receiver: the delay-based controller (draft-ietf-rmcat-gcc-02, 5) and its reports.

Why at the receiver: with REMB feedback the receiver sees every arrival time and sends back only
its estimate A_hat, the draft's first arrangement and the one Carlucci et al. 2016 measured (docs/
e2e.md says why not transport-wide feedback). Per packet: its group (groups.py); per complete group:
the filter's estimate (trendline.py or kalman.py), the detector's signal (detector.py) and the rate
controller's A_hat (aimd.py) with R_hat, the bytes received over the last 0.5 s.

Reports (wire.py): every second a regular one (RTCP receiver report: loss since the last one, and
the REMB), and at once an early REMB when A_hat has fallen 3 % or more below the last one sent, so
the sender hears of an over-use within a one-way delay rather than up to a second later.
"""

from __future__ import annotations

from collections import deque

from hosts.gcc.aimd import AimdRateController
from hosts.gcc.detector import OveruseDetector, Usage
from hosts.gcc.groups import PacketGroups
from hosts.gcc.kalman import KalmanFilter
from hosts.gcc.trendline import TrendlineEstimator
from hosts.gcc.wire import GccReport

__all__ = ["GccReceiver", "REPORT_INTERVAL_NS", "RATE_WINDOW_NS", "EARLY_DROP"]

REPORT_INTERVAL_NS = 1_000_000_000
RATE_WINDOW_NS = 500_000_000
EARLY_DROP = 0.97
DEFAULT_RTT_MS = 100.0


class GccReceiver:
    def __init__(self, filter_name: str = "trendline", gains: str = "draft") -> None:
        self.groups = PacketGroups()
        self.filter: TrendlineEstimator | KalmanFilter = KalmanFilter() if filter_name == "kalman" \
            else TrendlineEstimator()
        self.detector = OveruseDetector(gains)
        self.rate = AimdRateController()
        self.window: deque[tuple[int, int]] = deque()  # (arrival, bytes) over the last RATE_WINDOW_NS
        self.window_bytes = 0
        self.first_arrival_ns: int | None = None
        self.rtt_ms = DEFAULT_RTT_MS
        self.newest: tuple[int, int] | None = None  # (send timestamp, arrival) of the newest packet
        self.highest = -1
        self.received = 0
        self.expected_base = 0  # highest + 1 at the last regular report
        self.received_base = 0
        self.last_fraction = 0
        self.next_report_ns: int | None = None
        self.sent_remb: float | None = None
        self.reports = 0

    def incoming_bps(self, now_ns: int) -> float | None:
        """R_hat: bits received over the last RATE_WINDOW_NS (None until a window has passed)."""
        while self.window and self.window[0][0] <= now_ns - RATE_WINDOW_NS:
            self.window_bytes -= self.window.popleft()[1]
        if self.first_arrival_ns is None or now_ns - self.first_arrival_ns < RATE_WINDOW_NS:
            return None
        return self.window_bytes * 8e9 / RATE_WINDOW_NS

    def on_data(self, now_ns: int, seq: int, ts_ns: int, size: int, rtt_ns: int) -> list[GccReport]:
        if rtt_ns > 0:
            self.rtt_ms = rtt_ns / 1e6
        if self.first_arrival_ns is None:
            self.first_arrival_ns = now_ns
            self.next_report_ns = now_ns + REPORT_INTERVAL_NS
        self.window.append((now_ns, size))
        self.window_bytes += size
        self.received += 1
        self.highest = max(self.highest, seq)
        if self.newest is None or ts_ns >= self.newest[0]:
            self.newest = (ts_ns, now_ns)
        delta = self.groups.on_packet(ts_ns, now_ns, size)
        if delta is None:
            return []
        m = self.filter.update(delta)
        signal = self.detector.detect(now_ns, m, delta.send_delta_ns)
        a_hat = self.rate.update(now_ns, signal, self.incoming_bps(now_ns), self.rtt_ms)
        if a_hat is not None and self.sent_remb is not None and a_hat < EARLY_DROP * self.sent_remb:
            return [self._report(now_ns, early=True)]
        return []

    def next_timer_ns(self) -> int | None:
        return self.next_report_ns

    def on_timer(self, now_ns: int) -> list[GccReport]:
        if self.next_report_ns is None or now_ns < self.next_report_ns:
            return []
        return [self._report(now_ns, early=False)]

    def _report(self, now_ns: int, *, early: bool) -> GccReport:
        assert self.newest is not None
        if not early:
            expected = self.highest + 1 - self.expected_base
            got = self.received - self.received_base
            self.last_fraction = 0 if expected <= 0 else min(255, max(0, (expected - got) * 256 // expected))
            self.expected_base, self.received_base = self.highest + 1, self.received
            self.next_report_ns = now_ns + REPORT_INTERVAL_NS
        a_hat = self.rate.rate_bps
        if a_hat is not None:
            self.sent_remb = a_hat
        self.reports += 1
        return GccReport(None if a_hat is None else max(1, round(a_hat)), self.newest[0],
                         (now_ns - self.newest[1]) // 1000, self.highest, max(0, self.highest + 1 - self.received),
                         self.last_fraction, early, int(self.detector.state), int(self.rate.state))

    @property
    def usage(self) -> Usage:
        return self.detector.state
