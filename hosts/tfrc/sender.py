"""TFRC's sender (RFC 5348 4): a paced rate from the receiver's reports and the equation.

Why rate-based: TFRC is for flows (media) that want a smooth rate; it follows what TCP would get
(the throughput equation) but changes its rate gradually, once per report.

Rules kept (section numbers of RFC 5348):

* 4.2: before the first report one packet per second; at the first report with an RTT the
  initial rate W_init / R, W_init = min(4 s, max(2 s, 4380 bytes));
* 4.3: each report gives an RTT sample (now - echoed timestamp - receiver's hold time),
  R = 0.9 R + 0.1 sample; RTO = max(4 R, 2 s / X);
* with p > 0: X = max(min(X_Bps, 2 X_recv), s / t_mbi), t_mbi = 64 s; with p = 0 (slow start):
  X doubles at most once per RTT, at most to 2 X_recv;
* 4.4: no report for RTO halves X (at least s / t_mbi) and re-arms the timer.

Simplified against the RFC, and said so in docs/background/e2e.md: ``X_recv_set`` is the last report's
X_recv only, and the sender does not cap the rate by the data it has (bulk sender).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.tfrc.equation import throughput_Bps

__all__ = ["TfrcSender", "TfrcReport", "T_MBI_S"]

T_MBI_S = 64.0
NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class TfrcReport:
    """The receiver's feedback (RFC 5348 6.2)."""

    t_recvdata_ns: int  # timestamp of the last data packet received (sender's clock)
    t_delay_ns: int  # time the receiver held it before reporting
    x_recv_Bps: float  # bytes per second received since the last report
    p: float  # loss event rate


class TfrcSender:
    def __init__(self, packet_bytes: int, *, max_rate_bps: float | None = None) -> None:
        if packet_bytes <= 0:
            raise ValueError(f"packet size {packet_bytes}: must be > 0")
        self.s = packet_bytes
        self.x_Bps = float(packet_bytes)  # one packet per second until the first report
        self.max_Bps = None if max_rate_bps is None else max_rate_bps / 8
        self.rtt_ns: float | None = None
        self.p = 0.0
        self.x_recv_Bps = 0.0
        self.last_sent_ns: int | None = None
        self.tld_ns: int | None = None  # time the rate last doubled (slow start)
        self.nofeedback_ns: int | None = None
        self.reports = 0

    @property
    def rate_bps(self) -> float:
        return self.x_Bps * 8

    @property
    def rto_ns(self) -> int:
        if self.rtt_ns is None:
            return 2 * NS  # RFC 5348 4.2: the no-feedback timer starts at 2 s
        return int(max(4 * self.rtt_ns, 2 * self.s / self.x_Bps * NS))

    def next_send_ns(self, now_ns: int) -> int:
        if self.last_sent_ns is None:
            return now_ns
        return self.last_sent_ns + max(1, round(self.s / self.x_Bps * NS))

    def on_sent(self, now_ns: int) -> None:
        self.last_sent_ns = now_ns
        if self.nofeedback_ns is None:
            self.nofeedback_ns = now_ns + self.rto_ns

    def on_report(self, now_ns: int, r: TfrcReport) -> None:
        sample = now_ns - r.t_recvdata_ns - r.t_delay_ns
        if sample > 0:
            self.rtt_ns = float(sample) if self.rtt_ns is None else 0.9 * self.rtt_ns + 0.1 * sample
        self.reports += 1
        self.p, self.x_recv_Bps = r.p, r.x_recv_Bps
        rtt_s = (self.rtt_ns or NS) / NS
        recv_limit = 2 * r.x_recv_Bps
        floor = self.s / T_MBI_S
        if self.reports == 1 and self.rtt_ns is not None:
            self.x_Bps = min(4 * self.s, max(2 * self.s, 4380)) / rtt_s
            self.tld_ns = now_ns
        elif self.p > 0:
            self.x_Bps = max(min(throughput_Bps(self.s, rtt_s, self.p), recv_limit), floor)
        elif self.tld_ns is None or now_ns - self.tld_ns >= (self.rtt_ns or 0):
            self.x_Bps = max(min(2 * self.x_Bps, recv_limit), self.s / rtt_s)
            self.tld_ns = now_ns
        if self.max_Bps is not None:
            self.x_Bps = min(self.x_Bps, self.max_Bps)
        self.nofeedback_ns = now_ns + self.rto_ns

    def on_timer(self, now_ns: int) -> None:
        """The no-feedback timer (4.4): called when :attr:`nofeedback_ns` has come."""
        if self.nofeedback_ns is None or now_ns < self.nofeedback_ns:
            return
        self.x_Bps = max(self.x_Bps / 2, self.s / T_MBI_S)
        self.nofeedback_ns = now_ns + self.rto_ns
