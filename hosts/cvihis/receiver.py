"""The CVIHIS receiver: one-way delays in, rate commands out (sans-I/O).

The receiver decides; the sender only obeys. Per data packet it measures the one-way delay
(OWD) from the sender's timestamp. Clocks are not synchronised, so every delay is kept
*relative to the first OWD seen* (an exact integer difference): a constant clock offset then
cancels out of every quantity the decisions use, bit for bit.

Once per update interval (a third of the sender's RTT, clamped) it places the interval's
mean OWD in one of 7 areas of [minDelay, maxDelay], reads the delay gradient, and emits a
command; a loss (from sequence numbers) emits an MD command at once, one per lost packet up to two per fill of
the queue, a sustained overload counted as the next fill (the default; ``md:`` in hosts/cvihis/variants.py: a fill
until the queue drains whatever comes, at most one per RTT, or one per lost packet).
In real-time mode (RTM) minDelay is pushed up by PF every update and falls back to any lower
OWD, so the areas drift up and the flow competes (how the top of the areas moves with it is a
reading the sources leave open: hosts/cvihis/variants.py); in
backward-loading mode (BLM) minDelay is the smallest OWD ever, so the flow yields. The mode
can change at any time without touching the delay history.
"""

from __future__ import annotations

from enum import Enum

from hosts.cvihis.areas import AREAS, TARGET_AREA, Command, classify, decide, gradient_sign, step_packets
from hosts.cvihis.params import CvihisParams
from hosts.cvihis.seqtrack import Arrival, SeqTracker
from hosts.cvihis.wire import Feedback

#: ``md: two-per-fill-overload``: a loss this many RTTs after a fill's first, its delay held at the fill's peak from
#: one RTT on, starts the next fill: one RTT for the fill's MDs to reach the queue, two in which it has not begun to
#: drain (a queue the flows share stays full until the others' MDs reach it too; docs/background/cvihis.md)
OVERLOAD_RTTS = 3
#: ... held: within this fraction of the peak's height above minDelay (the narrowest area's width, the target's)
DRAIN_FRACTION = 0.10


class Mode(Enum):
    """BLM yields to competing traffic (like LEDBAT); RTM competes for a fair share."""

    BLM = "blm"
    RTM = "rtm"


def parse_mode(mode: Mode | str) -> Mode:
    """``Mode`` from a Mode or its name; a clear ValueError otherwise."""
    if isinstance(mode, Mode):
        return mode
    try:
        return Mode(str(mode).lower())
    except ValueError:
        raise ValueError(f"CVIHIS mode: {mode!r} is not 'blm' or 'rtm'") from None


class CvihisReceiver:
    """Receiver state machine; call ``on_data`` per packet and ``on_timer`` at ``next_update_ns``."""

    def __init__(self, params: CvihisParams, mode: Mode | str = Mode.BLM) -> None:
        self.params = params
        self._mode = parse_mode(mode)
        self._seq = SeqTracker(params.reorder_window)
        self._ref: int | None = None  # first OWD: every delay below is relative to it
        self._min = 0  # smallest relative OWD ever (BLM's minDelay)
        self._rtm_min = 0.0  # RTM's pushed minDelay (relative)
        self._max: float | None = None  # maxDelay EWMA (relative); None until the first loss
        self._peak = 0.0  # the highest interval mean OWD (relative) since the loss that taught maxDelay
        self._rtt_hint = 0  # sender's latest RTT estimate (0: none yet)
        self._min_rtt_hint = 0
        self._last_in_order: int | None = None
        self._grad_sum = 0
        self._owd_sum = 0
        self._owd_count = 0
        self._echo_ts = 0
        self._echo_arrival = 0
        self._next_update: int | None = None
        self._last_md_ns: int | None = None  # the newest loss event's (or fill's) first MD
        self._in_fill = False  # md_per_fill: losses since the newest fill began, and the queue not yet drained
        self._fill_lost = 0  # md_per_fill: packets lost in that fill
        self._fill_held = 0  # md_fill_overload: decisions since the fill's MDs reached the queue that found the delay
        #                      still at the fill's peak; -1 once one found it below (the queue has begun to drain)
        self._fill_peak = 0.0  # md_fill_overload: the highest interval mean OWD (relative) since the fill began
        self._fb_seq = 0
        self._bytes = 0
        self._histogram = [0] * AREAS
        self._last: Feedback | None = None

    # ----------------------------------------------------------------- events
    def on_data(self, now_ns: int, seq: int, send_ts_ns: int, size_bytes: int,
                rtt_ns_hint: int) -> list[Feedback]:
        """Account one data packet; returns the feedback to send back now (maybe none)."""
        _check_int("now_ns", now_ns)
        _check_int("seq", seq)
        _check_int("send_ts_ns", send_ts_ns, 0)
        _check_int("size_bytes", size_bytes, 0)
        _check_int("rtt_ns_hint", rtt_ns_hint, 0)
        owd = now_ns - send_ts_ns
        if self._ref is None:
            self._ref = owd
        rel = owd - self._ref
        result = self._seq.on_packet(seq, rel)
        if result.arrival is Arrival.DUPLICATE:
            return []
        self._bytes += size_bytes
        self._take_rtt_hint(rtt_ns_hint)
        self._take_delay(rel, result.arrival is Arrival.IN_ORDER)
        self._echo_ts, self._echo_arrival = send_ts_ns, now_ns
        if self._next_update is None:
            self._next_update = now_ns + self._interval()
        out: list[Feedback] = []
        if result.newly_lost:
            assert result.loss_owd is not None
            self._take_loss(result.loss_owd)
            out.extend(self._feedback(now_ns, Command.MD, None, 0) for _ in range(self._mds(now_ns, result.newly_lost)))
        if now_ns >= self._next_update:
            out.append(self._update(now_ns))
        return out

    def on_timer(self, now_ns: int) -> list[Feedback]:
        """Emit the periodic decision if it is due and the interval saw data."""
        _check_int("now_ns", now_ns)
        if self._next_update is None or now_ns < self._next_update:
            return []
        if not self._owd_count:  # nothing measured: no decision, wait one more interval
            self._next_update = now_ns + self._interval()
            return []
        return [self._update(now_ns)]

    def set_mode(self, mode: Mode | str) -> None:
        """Switch BLM <-> RTM on the fly; the delay history and counters are kept."""
        self._mode = parse_mode(mode)

    # ----------------------------------------------------------------- read-only state
    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def next_update_ns(self) -> int | None:
        """When ``on_timer`` should next be called (None until the first packet)."""
        return self._next_update

    @property
    def received(self) -> int:
        return self._seq.received

    @property
    def received_bytes(self) -> int:
        return self._bytes

    @property
    def lost(self) -> int:
        return self._seq.lost

    @property
    def reordered(self) -> int:
        return self._seq.reordered

    @property
    def late(self) -> int:
        """Packets that arrived after being declared lost (also counted in ``reordered``)."""
        return self._seq.late

    @property
    def duplicates(self) -> int:
        return self._seq.duplicates

    @property
    def min_delay_ns(self) -> float | None:
        """minDelay in use (receiver clock minus sender clock; offset included)."""
        return None if self._ref is None else self._ref + self._current_min()

    @property
    def max_delay_ns(self) -> float | None:
        """maxDelay in use (same units as ``min_delay_ns``)."""
        return None if self._ref is None else self._ref + self._current_max()

    @property
    def area_histogram(self) -> tuple[int, ...]:
        """How many periodic decisions fell in each area 0..6."""
        return tuple(self._histogram)

    @property
    def last_command(self) -> Feedback | None:
        return self._last

    # ----------------------------------------------------------------- internals
    def _take_rtt_hint(self, hint: int) -> None:
        if hint > 0:
            self._rtt_hint = hint
            self._min_rtt_hint = hint if not self._min_rtt_hint else min(self._min_rtt_hint, hint)

    def _take_delay(self, rel: int, in_order: bool) -> None:
        self._min = min(self._min, rel)
        self._rtm_min = min(self._rtm_min, rel)
        if in_order:
            if self._last_in_order is not None:
                self._grad_sum += rel - self._last_in_order
            self._last_in_order = rel
        self._owd_sum += rel
        self._owd_count += 1

    def _take_loss(self, loss_rel: int) -> None:
        """maxDelay follows the OWD of the last packet before each loss (EWMA).

        A loss whose packet before it waited in no queue (OWD within ``min_span_ns`` of minDelay)
        says nothing of where the loss point lies in the delay space: the packets were dropped
        where the delays do not show (a receiver's buffer, a policer, a bit error). Such a loss
        still brings an MD but does not move maxDelay: taken, it would collapse the areas onto
        minDelay, and the first lasting rise of the path's delay (a slower link's longer
        serialisation, a route change) would hold the flow in ``---`` at its floor for good.
        """
        if loss_rel - self._min < self.params.min_span_ns:
            return
        if self._max is None:
            self._max = float(loss_rel)
        else:
            self._max += self.params.max_delay_gain * (loss_rel - self._max)
        self._peak = float(loss_rel)

    def _mds(self, now_ns: int, newly_lost: int) -> int:
        """How many MD commands these losses bring: one (``md: per-packet``: the sender counts the packets from
        ``lost_total``); one per lost packet up to ``md_per_fill`` in the current fill of the queue (``md:
        two-per-fill``: an MD each, so the sender needs no guard); else one at most once per RTT hint."""
        if self.params.md_per_packet:
            return 1
        if self.params.md_per_fill:
            if not self._in_fill or self._overloaded(now_ns):  # the first loss of a fill
                self._in_fill, self._last_md_ns, self._fill_lost, self._fill_held = True, now_ns, 0, 0
                self._fill_peak = float(self._min)
            count = max(0, min(newly_lost, self.params.md_per_fill - self._fill_lost))
            self._fill_lost += newly_lost
            return count
        if self._last_md_ns is not None and now_ns - self._last_md_ns < self._md_guard():
            return 0
        self._last_md_ns = now_ns
        return 1

    def _overloaded(self, now_ns: int) -> bool:
        """``md: two-per-fill-overload``: a sustained overload, not one long fill. The fill's MDs reach the queue one
        RTT after its first loss; if every decision since then has found the delay still at the fill's peak (the
        queue has not begun to drain) and losses still come ``OVERLOAD_RTTS`` after its first, the rate after those
        MDs still exceeds the path's: this loss starts the next fill. A fill whose queue drains, however slowly, or
        whose losses stop by then (a shared queue held full a little longer by the other flows) stays one fill
        (docs/background/cvihis.md, "Loss command")."""
        return (self.params.md_fill_overload and self._fill_held > 0
                and now_ns - (self._last_md_ns or 0) >= OVERLOAD_RTTS * self._md_guard())

    def _hold_fill(self, now_ns: int, mean: float) -> None:
        """Track the fill's peak delay, and count the decisions, from one RTT after its first loss, whose interval
        mean OWD stays within ``DRAIN_FRACTION`` of the peak's height above minDelay (the smallest OWD: a queue's
        delay, whatever RTM's push has done to its own areas); one below marks the fill as draining for good."""
        if not self._in_fill:
            return
        self._fill_peak = max(self._fill_peak, mean)
        if self._fill_held < 0 or now_ns - (self._last_md_ns or 0) < self._md_guard():
            return
        held = mean - self._min >= (1 - DRAIN_FRACTION) * (self._fill_peak - self._min)
        self._fill_held = self._fill_held + 1 if held else -1

    def _md_guard(self) -> int:
        """One RTT (the sender's hint; ``initial_rtt_ns`` before one): a loss event's span."""
        return self._rtt_hint or self.params.initial_rtt_ns

    def _end_fill(self, now_ns: int, area: int) -> None:
        """``md: two-per-fill``: the fill of the queue that brought the newest MDs ends at the first decision below
        the target area (the queue has drained below where the flow aims) at least one RTT after its first loss, so
        one fill is never split into two, and losses after it start the next fill."""
        if self._in_fill and area < TARGET_AREA and now_ns - (self._last_md_ns or 0) >= self._md_guard():
            self._in_fill = False

    def _current_min(self) -> float:
        return self._rtm_min if self._mode is Mode.RTM else float(self._min)

    def _current_max(self) -> float:
        """maxDelay in use: the top of the areas (docs/background/cvihis.md, "Readings").

        From losses (before the first one, ``initial_span_ns`` above the smallest OWD). In RTM it
        depends on the reading: ``areas shift`` adds how far the push has lifted minDelay, so the
        areas keep their width and drift up as a whole; ``areas squeeze`` keeps the learned top, so
        only minDelay is pushed (the sources' literal wording); ``areas probe`` shifts
        until the first loss (no loss point is known yet: RTM probes for it) and squeezes after,
        with the top never below the highest OWD seen since the newest loss (a delay that went
        without loss shows the loss point is higher: a maxDelay learned when the queue was shorter,
        e.g. in a competing TCP's slow start, must not hold the flow in ``---`` for good); ``areas
        reprobe`` (the default) puts the top one PF push above such a delay (on the same offset-free estimate of the
        absolute OWD as ``_push_min``), so the highest delay yet sits below the top, not past it (in area 5 while
        that push exceeds a quarter of its height above minDelay, else still in area 6: docs/background/cvihis.md,
        "Row 6, what is left").
        """
        top = self._learned_max() + self._lift()
        if self._mode is Mode.RTM and self.params.rtm_shift_until_loss and self._max is not None:
            peak = float(self._peak)  # a delay that went without loss: the loss point is higher
            if self.params.rtm_reprobe and peak > self._learned_max():
                peak += (self.params.pf - 1) * (self._min_rtt_hint / 2 + peak - self._min)  # one push above it
            top = max(top, peak)
        return top

    def _learned_max(self) -> float:
        """maxDelay from losses; before the first, ``initial_span_ns`` above the smallest OWD."""
        return float(self._min + self.params.initial_span_ns) if self._max is None else self._max

    def _lift(self) -> float:
        """How far RTM's push holds minDelay above the smallest OWD (0 in BLM, and with
        ``rtm_shift_areas`` False: the sources' literal reading, only minDelay pushed)."""
        shifting = self.params.rtm_shift_areas or (self.params.rtm_shift_until_loss and self._max is None)
        shift = self._mode is Mode.RTM and shifting
        return self._rtm_min - self._min if shift else 0.0

    def _interval(self) -> int:
        """A third of the sender's RTT (``updates_per_rtt``), clamped (docs/background/cvihis.md).

        The steps are the published sizes per decision, so the decision rate sets how fast a
        flow can take or give up a link: once per RTT, ``+++`` adds 0.7·RTT^-1.5 packets/s per
        second (22 at 100 ms: 20 s to fill 4 Mb/s). Three decisions per RTT keep that scaling
        (the same for every flow on a path). A command shows in the delays one RTT later, so
        the two decisions after it do not see it yet: the sender's EWMA and the small steps
        beside the target bound that overshoot (4 per RTT made a lone BLM flow oscillate).
        """
        p = self.params
        if not self._rtt_hint:
            return p.initial_update_interval_ns
        interval = self._rtt_hint // p.updates_per_rtt
        return min(max(interval, p.update_interval_min_ns), p.update_interval_max_ns)

    def _update(self, now_ns: int) -> Feedback:
        """The periodic decision: area of the mean OWD, gradient, command; then RTM's push."""
        mean = self._owd_sum / self._owd_count
        self._peak = max(self._peak, mean)
        area = classify(mean, self._current_min(), self._current_max(), self.params)
        gradient = gradient_sign(self._grad_sum, self.params.gradient_deadband_ns)
        command = decide(area, gradient)
        self._histogram[area] += 1
        if self.params.md_fill_overload:
            self._hold_fill(now_ns, mean)
        self._end_fill(now_ns, area)
        if self._mode is Mode.RTM:
            self._push_min()
        self._grad_sum = self._owd_sum = self._owd_count = 0
        self._next_update = now_ns + self._interval()
        return self._feedback(now_ns, command, area, gradient)

    def _push_min(self) -> None:
        """RTM: multiply minDelay by PF, on an offset-free estimate of the absolute OWD.

        ``push: per-decision``: PF at every decision; ``push: per-rtt``: PF once per RTT, as a PF^(1/n) push at
        each of the n decisions per RTT, the push of one decision per RTT; ``push: k`` (a number): PF k times
        per RTT, PF^(k/n) at each decision, a push rate apart from the decision rate (``CvihisParams.push_factor``;
        docs/background/cvihis.md, "Readings", has what each does on the reno grid).

        The absolute OWD of the pushed value is estimated as half the smallest RTT the
        sender reported plus how far the push has already lifted it above the smallest OWD
        seen; multiplying that estimate by PF keeps the push independent of clock offsets.
        """
        if not self._min_rtt_hint:
            return
        absolute = self._min_rtt_hint / 2 + (self._rtm_min - self._min)
        self._rtm_min += (self.params.push_factor - 1) * absolute

    def _feedback(self, now_ns: int, command: Command, area: int | None, gradient: int) -> Feedback:
        self._fb_seq += 1
        fb = Feedback(
            fb_seq=self._fb_seq,
            command=command,
            area=area,
            step_milli=round(step_packets(command, self.params) * 1000),
            gradient=gradient,
            loss=command is Command.MD,
            rtm=self._mode is Mode.RTM,
            echo_ts_ns=self._echo_ts,
            echo_delay_ns=max(0, now_ns - self._echo_arrival),
            lost_total=self._seq.lost,
        )
        self._last = fb
        return fb


def _check_int(name: str, value: object, lo: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"CvihisReceiver: {name} must be an integer, got {value!r}")
    if lo is not None and value < lo:
        raise ValueError(f"CvihisReceiver: {name} must be >= {lo}, got {value!r}")
