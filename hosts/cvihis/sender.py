"""The CVIHIS sender: applies the receiver's rate commands to its inter-packet gap (sans-I/O).

The receiver decides *what* to do (area, signed step, loss); the sender decides *how much*,
because only it knows the RTT precisely (it times its own echoed timestamps). A step of s
packets per sqrt(RTT) changes the rate by s / sqrt(RTT in seconds) packets per second at
each command; the change actually applied is an EWMA of the commanded changes
(``ewma_weight`` for the newest, the rest for the history), which damps the alternation of
opposite commands near the target. A loss multiplies the gap by ``md_factor``, at most once
per RTT (``md:`` in hosts/cvihis/variants.py: once per lost packet, or once per MD command the receiver counts), and
clears the smoothing history so no earlier increase is replayed after it.
"""

from __future__ import annotations

import math

from hosts.cvihis.areas import Command
from hosts.cvihis.params import CvihisParams
from hosts.cvihis.wire import U32, Feedback

NS_PER_S = 1_000_000_000
MAX_MD_PER_COMMAND = 64  # more would only pin the rate at its floor


class CvihisSender:
    """Sender state machine: ``stamp`` each data packet, feed it each ``Feedback``."""

    def __init__(self, params: CvihisParams) -> None:
        self.params = params
        self._rate_pps = params.pps(params.initial_rate_bps)
        self._min_pps = params.pps(params.min_rate_bps)
        self._max_pps = params.pps(params.max_rate_bps)
        self._smoothed_step_pps = 0.0
        self._srtt: float | None = None
        self._min_rtt: int | None = None
        self._last_md_ns: int | None = None
        self._last_fb_seq: int | None = None
        self._lost_seen = 0  # the receiver's lost_total in the newest feedback (md per-packet)
        self._seq = -1
        self._last_send_ns: int | None = None
        self.feedbacks = 0
        self.stale_feedbacks = 0
        self.md_applied = 0
        self.md_suppressed = 0

    # ----------------------------------------------------------------- events
    def on_feedback(self, now_ns: int, fb: Feedback) -> None:
        """Take one feedback: RTT sample from the echo, then the rate command."""
        if isinstance(now_ns, bool) or not isinstance(now_ns, int):
            raise ValueError(f"CvihisSender: now_ns must be an integer, got {now_ns!r}")
        if not self._is_newer(fb.fb_seq):
            self.stale_feedbacks += 1
            return
        self.feedbacks += 1
        self._last_fb_seq = fb.fb_seq % U32
        self._take_rtt(now_ns - fb.echo_ts_ns - fb.echo_delay_ns)
        newly_lost = (fb.lost_total - self._lost_seen) % U32
        self._lost_seen = fb.lost_total % U32
        if fb.command == Command.MD:  # == not is: a plain int 5 from a caller counts too
            if self.params.md_per_packet:
                self._md_per_packet(newly_lost)
            elif self.params.md_per_fill:
                self._md_per_fill()
            else:
                self._multiplicative_decrease(now_ns)
        else:
            self._step(fb.step)

    def stamp(self, now_ns: int) -> tuple[int, int, int]:
        """Sequence number, send timestamp and RTT hint (0: none yet) for a packet sent now."""
        self._seq += 1
        self._last_send_ns = now_ns
        hint = 0 if self._srtt is None else max(1, round(self._srtt))
        return self._seq, now_ns, hint

    def next_send_ns(self, now_ns: int) -> int:
        """When the next packet is due: one gap after the last one (now if none sent yet).

        A result in the past means "send now"; pacing restarts from the actual send time,
        so a late caller gets no burst.
        """
        if self._last_send_ns is None:
            return now_ns
        return self._last_send_ns + self.gap_ns

    # ----------------------------------------------------------------- read-only state
    @property
    def rtt_ns(self) -> int:
        """Smoothed RTT; ``initial_rtt_ns`` until the first sample."""
        return self.params.initial_rtt_ns if self._srtt is None else max(1, round(self._srtt))

    @property
    def min_rtt_ns(self) -> int | None:
        return self._min_rtt

    @property
    def rate_pps(self) -> float:
        return self._rate_pps

    @property
    def rate_bps(self) -> float:
        return self._rate_pps * self.params.packet_bits

    @property
    def gap_ns(self) -> int:
        """Current inter-packet gap."""
        return max(1, round(NS_PER_S / self._rate_pps))

    # ----------------------------------------------------------------- internals
    def _is_newer(self, fb_seq: int) -> bool:
        """Serial-number comparison (RFC 1982) on 32 bits: reverse-path reordering is dropped."""
        if self._last_fb_seq is None:
            return True
        diff = (fb_seq - self._last_fb_seq) % U32
        return 0 < diff < U32 // 2

    def _take_rtt(self, sample: int) -> None:
        if sample <= 0:
            return  # an echo from the future: clock went backwards or a corrupt echo
        self._min_rtt = sample if self._min_rtt is None else min(self._min_rtt, sample)
        if self._srtt is None:
            self._srtt = float(sample)
        else:
            self._srtt += self.params.rtt_gain * (sample - self._srtt)

    def _multiplicative_decrease(self, now_ns: int) -> None:
        if self._last_md_ns is not None and now_ns - self._last_md_ns < self.rtt_ns:
            self.md_suppressed += 1
            return
        self._last_md_ns = now_ns
        self._md_per_fill()

    def _md_per_fill(self) -> None:
        """One MD, unguarded (``md: two-per-fill`` takes one per MD command: the receiver sends one per lost packet
        up to ``md_per_fill`` per fill of the queue, which it alone sees, the delays)."""
        self.md_applied += 1
        self._smoothed_step_pps = 0.0
        self._set_rate(self._rate_pps / self.params.md_factor)

    def _md_per_packet(self, newly_lost: int) -> None:
        """One MD per packet lost since the last feedback (at least one: the command says a loss)."""
        k = newly_lost if 0 < newly_lost < U32 // 2 else 1
        self.md_applied += 1
        self._smoothed_step_pps = 0.0
        self._set_rate(self._rate_pps / self.params.md_factor ** min(k, MAX_MD_PER_COMMAND))

    def _step(self, step_packets: float) -> None:
        """Rate += EWMA of (step / sqrt(RTT in s)) packets per second."""
        delta = step_packets / math.sqrt(self.rtt_ns / NS_PER_S)
        w = self.params.ewma_weight
        self._smoothed_step_pps = w * delta + (1 - w) * self._smoothed_step_pps
        self._set_rate(self._rate_pps + self._smoothed_step_pps)

    def _set_rate(self, pps: float) -> None:
        self._rate_pps = min(max(pps, self._min_pps), self._max_pps)
