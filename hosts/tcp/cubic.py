"""CUBIC's window (RFC 9438), with Linux's delay-based HyStart as an option.

Why the Reno-friendly region: in short-RTT or low-rate paths the cubic curve grows more slowly
than Reno would; RFC 9438 4.3 then follows an estimate of Reno's window (W_est, growing by
alpha_cubic = 3(1 - beta)/(1 + beta) segments per RTT) so that CUBIC is never less aggressive than
Reno there. The estimate grows at alpha_cubic throughout, as Linux's (``bictcp_update``'s
``tcp_friendliness``: one segment per ``cwnd * beta_scale / 8`` segments acknowledged, beta_scale =
8(1024 + 717) / 3 / (1024 - 717), about 0.53 per RTT), not RFC 9438's 1 once past the window before
the last reduction, which Linux does not do.

Why HyStart: Linux's cubic leaves slow start, once cwnd is at least 16 segments, on either of its
two tests (``hystart_detect``, both on by default; ``hystart_update`` in net/ipv4/tcp_cubic.c):
the *delay* test, when the RTT of a round's first ACKs has grown by more than an eighth of the
minimum RTT (clamped to 4..16 ms), and the *ACK train*, when ACKs arriving at most 2 ms apart
(``hystart_ack_delta_us``) have run from the round's first ACK for more than half of the minimum
RTT plus ``hystart_ack_delay`` (1 ms at most, which it is at these rates; halved because nothing
paces the flow): the window then fills the path. Without them, slow start fills the bottleneck's
buffer and loses a window's worth of segments; with them the kernel often leaves slow start before
any loss (at 20 Mb/s, 20 ms its stored run left at about 40 segments, the model without the ACK
train at 117 with some 200 segments lost). ``hystart=False`` turns both off.

Two more of Linux's rules (``bictcp_update``, ``cubictcp_state``): until the first reduction
(``last_max_cwnd`` 0) the window grows by at least 1/20 segment per segment acknowledged (5 % per
RTT), where the curve, starting at the window itself, would barely move; and a retransmission
timeout forgets the curve and HyStart's verdict (``bictcp_reset``, ``bictcp_hystart_reset``), so
the slow start after it is HyStart's again and the first congestion avoidance after it grows by
the 5 % rule.
"""

from __future__ import annotations

from hosts.tcp.reno import MIN_SSTHRESH, AckInfo, WindowControl

__all__ = ["Cubic", "BETA", "C", "ALPHA"]

BETA = 0.7
C = 0.4
ALPHA = 3 * (1 - BETA) / (1 + BETA)
HYSTART_LOW_WINDOW = 16
HYSTART_MIN_SAMPLES = 8
HYSTART_MIN_NS, HYSTART_MAX_NS = 4_000_000, 16_000_000
HYSTART_ACK_DELTA_NS = 2_000_000
HYSTART_ACK_DELAY_NS = 1_000_000
FIRST_EPOCH_GROWTH = 1 / 20  # segments per segment acknowledged before any reduction (Linux: cnt <= 20)


class Cubic(WindowControl):
    """cwnd and ssthresh in segments, the cubic curve's state, HyStart's round."""

    name = "cubic"

    def __init__(self, initial_cwnd: float = 10.0, *, hystart: bool = True, fast_convergence: bool = True) -> None:
        self.cwnd = float(initial_cwnd)
        self.ssthresh = float("inf")
        self.hystart = hystart
        self.fast_convergence = fast_convergence
        self._reset()

    def _reset(self) -> None:
        """The curve and HyStart as at the connection's start (Linux: bictcp_reset, bictcp_hystart_reset)."""
        self.w_max = 0.0  # window before the last reduction (after fast convergence)
        self.reduced = False  # a reduction since the start or the last timeout (Linux: last_max_cwnd != 0)
        self.k_s = 0.0
        self.t_epoch_ns: int | None = None
        self.cwnd_epoch = 0.0
        self.w_est = 0.0
        self._round_end = -1  # HyStart: the round ends when this segment is acknowledged
        self._round_min: int | None = None
        self._round_samples = 0
        self._round_start_ns = self._last_ack_ns = 0  # HyStart's ACK train

    # ---- growth ------------------------------------------------------------------------------
    def on_ack(self, ack: AckInfo) -> None:
        acked = ack.acked
        if self.cwnd < self.ssthresh:
            if self.hystart:
                self._hystart(ack)
            if self.cwnd < self.ssthresh:
                acked = self.slow_start(acked)
                if acked <= 0:
                    return
        self._avoid(ack.now_ns, acked, ack.min_rtt_ns)

    def _avoid(self, now_ns: int, acked: int, min_rtt_ns: float) -> None:
        """RFC 9438 4.2-4.4, per ACK of ``acked`` segments. The target is the curve one *minimum*
        RTT ahead, as Linux's ``bictcp_update`` (net/ipv4/tcp_cubic.c: ``t += usecs_to_jiffies(
        ca->delay_min)``), not RFC 9438's smoothed RTT: behind a full buffer the smoothed RTT is many
        times the minimum (300 against 25 ms at 2 Mb/s, 20 ms), and looking that far along the curve
        grows the window faster than the kernel does."""
        if self.t_epoch_ns is None:  # first ACK of a congestion-avoidance stage
            self.t_epoch_ns = now_ns
            self.cwnd_epoch = self.cwnd
            self.w_est = self.cwnd
            if self.w_max < self.cwnd:  # no reduction yet, or grown past it: the curve starts here
                self.w_max = self.cwnd
            self.k_s = ((self.w_max - self.cwnd_epoch) / C) ** (1 / 3)
        t = (now_ns - self.t_epoch_ns) / 1e9
        self.w_est += ALPHA * acked / self.cwnd
        target = min(max(self.w_cubic(t + min_rtt_ns / 1e9), self.cwnd), 1.5 * self.cwnd)
        growth = (target - self.cwnd) / self.cwnd
        if not self.reduced:
            growth = max(growth, FIRST_EPOCH_GROWTH)
        grown = self.cwnd + growth * acked
        if self.w_cubic(t) < self.w_est:  # the Reno-friendly region: at least Reno's estimate
            grown = max(grown, self.w_est)
        self.cwnd = grown

    def w_cubic(self, t_s: float) -> float:
        """RFC 9438 eq. 1: C (t - K)^3 + W_max."""
        return C * (t_s - self.k_s) ** 3 + self.w_max

    def _hystart(self, ack: AckInfo) -> None:
        """Linux's hystart_update, from a window of 16 segments: rounds, the ACK train, the delay test."""
        if self.cwnd < HYSTART_LOW_WINDOW:
            return
        if ack.snd_una > self._round_end:  # a new round: one window of segments
            self._round_end = ack.snd_nxt
            self._round_min, self._round_samples = None, 0
            self._round_start_ns = self._last_ack_ns = ack.now_ns
        if ack.now_ns - self._last_ack_ns <= HYSTART_ACK_DELTA_NS:
            self._last_ack_ns = ack.now_ns
            if ack.now_ns - self._round_start_ns > (ack.min_rtt_ns + HYSTART_ACK_DELAY_NS) // 2:
                self.ssthresh = self.cwnd  # the ACK train spans the path: leave slow start
                return
        if ack.rtt_ns is None or self._round_samples >= HYSTART_MIN_SAMPLES:
            return
        self._round_samples += 1
        self._round_min = ack.rtt_ns if self._round_min is None else min(self._round_min, ack.rtt_ns)
        if self._round_samples == HYSTART_MIN_SAMPLES:
            eta = min(max(ack.min_rtt_ns // 8, HYSTART_MIN_NS), HYSTART_MAX_NS)
            if self._round_min >= ack.min_rtt_ns + eta:
                self.ssthresh = self.cwnd  # leave slow start: congestion avoidance from here

    # ---- reductions --------------------------------------------------------------------------
    def on_loss(self, now_ns: int, flight: int) -> float:
        """RFC 9438 4.6-4.7: remember W_max (fast convergence), ssthresh = beta * cwnd."""
        if self.fast_convergence and self.cwnd < self.w_max:
            self.w_max = self.cwnd * (1 + BETA) / 2
        else:
            self.w_max = self.cwnd
        self.ssthresh = max(self.cwnd * BETA, MIN_SSTHRESH)
        self.t_epoch_ns = None
        self.reduced = True
        return self.ssthresh

    def on_timeout(self, now_ns: int, flight: int) -> None:
        """RTO: ssthresh from the loss reduction, one segment, then the curve and HyStart forgotten
        (Linux's tcp_enter_loss calls ssthresh, then cubictcp_state resets on TCP_CA_Loss)."""
        super().on_timeout(now_ns, flight)
        self._reset()
