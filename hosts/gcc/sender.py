"""GCC's sender: the loss-based controller under the receiver's REMB, and a video-like source.

Why a video-like source: GCC drives an encoder. Here frames come FPS (30) times a second, each of
the target rate's bytes for one frame period (the remainder carried to the next frame, as an
encoder's rate control does over a few frames); the target is min(As, REMB) within [min_rate,
max_rate] (loss.py). A pacer sends the queued packets at PACING_FACTOR (2.5) times the target, the
draft's section 4 pacer, so a frame leaves in a short burst and the next one finds the queue empty.

RTT: each regular report echoes the newest data packet's send time and how long the receiver held
it; the sender smooths now - echo - hold (weight 1/8) and stamps it in each data packet, where the
receiver's rate controller needs it (its response time).
"""

from __future__ import annotations

from hosts.gcc.loss import LossController
from hosts.gcc.params import GccParams
from hosts.gcc.wire import GccReport

__all__ = ["GccSender", "FPS", "PACING_FACTOR"]

FPS = 30
PACING_FACTOR = 2.5
NS = 1_000_000_000


class GccSender:
    def __init__(self, params: GccParams, packet_bytes: int) -> None:
        if params.max_rate_bps is None:
            raise ValueError("a GCC sender needs its max_rate (the binding's cap)")
        if packet_bytes <= 0:
            raise ValueError(f"packet size {packet_bytes}: must be > 0")
        self.params = params
        self.packet_bytes = packet_bytes
        self.loss = LossController(params.start_bps(), params.min_rate_bps, params.max_rate_bps)
        self.frame_period_ns = NS // FPS
        self.next_frame_ns: int | None = None
        self.credit_bytes = 0.0
        self.queue = 0  # packets waiting in the pacer
        self.last_send_ns: int | None = None
        self.rtt_ns: float | None = None
        self.reports = 0
        self.frames = 0

    @property
    def target_bps(self) -> float:
        return self.loss.target_bps

    def _frames_until(self, now_ns: int) -> None:
        if self.next_frame_ns is None:
            self.next_frame_ns = now_ns
        while self.next_frame_ns <= now_ns:
            self.credit_bytes += self.target_bps / 8 / FPS
            whole = int(self.credit_bytes // self.packet_bytes)
            self.queue += whole
            self.credit_bytes -= whole * self.packet_bytes
            self.next_frame_ns += self.frame_period_ns
            self.frames += 1

    def _gap_ns(self) -> int:
        return max(1, round(self.packet_bytes * 8 * NS / (PACING_FACTOR * self.target_bps)))

    def next_send_ns(self, now_ns: int) -> int:
        """When the next packet may leave (a frame's time when the pacer is empty)."""
        self._frames_until(now_ns)
        if self.queue:
            return now_ns if self.last_send_ns is None else max(now_ns, self.last_send_ns + self._gap_ns())
        assert self.next_frame_ns is not None
        return self.next_frame_ns

    def can_send(self, now_ns: int) -> bool:
        self._frames_until(now_ns)
        return self.queue > 0 and (self.last_send_ns is None or now_ns >= self.last_send_ns + self._gap_ns())

    def on_sent(self, now_ns: int) -> None:
        self.queue -= 1
        self.last_send_ns = now_ns

    def on_report(self, now_ns: int, r: GccReport) -> None:
        self.reports += 1
        if not r.early:
            sample = now_ns - r.echo_ts_ns - r.hold_us * 1000
            if 0 < sample < 60 * NS:
                self.rtt_ns = float(sample) if self.rtt_ns is None else 0.875 * self.rtt_ns + 0.125 * sample
        if r.remb_bps is not None:
            self.loss.on_remb(float(r.remb_bps))
        if not r.early:
            self.loss.on_loss(r.loss_fraction)
