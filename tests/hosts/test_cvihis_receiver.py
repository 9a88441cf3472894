"""CvihisReceiver properties: clock-offset invariance, loss vs reordering, RTM drift, mode switch."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hosts.cvihis import Command, CvihisParams, CvihisReceiver, Feedback, Mode
from hosts.cvihis.variants import CvihisReading

MS = 1_000_000
P = CvihisParams()
PER_RTT = CvihisParams(md_per_fill=0)  # md: per-rtt, one MD per loss event
# Traces are generated packet by packet: no per-example deadline on a shared, loaded machine.
TRACES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass(frozen=True)
class Pkt:
    """One data packet as the receiver sees it (arrival on a clock with no offset)."""

    seq: int
    send_ts: int
    arrival: int
    hint: int
    size: int = 1000


@st.composite
def traces(draw: st.DrawFn, drops: bool = True, reorder: bool = True, max_len: int = 150) -> list[Pkt]:
    """Packets with a wandering queueing delay, optional drops and adjacent swaps."""
    n = draw(st.integers(2, max_len))
    t, queue, out = 10**9, 0, []
    for seq in range(n):
        t += draw(st.integers(100_000, 20 * MS))
        queue = max(0, queue + draw(st.integers(-3 * MS, 3 * MS)))
        hint = draw(st.sampled_from([0, 20 * MS, 40 * MS, 90 * MS]))
        if drops and seq and draw(st.integers(0, 19)) == 0:
            continue
        out.append(Pkt(seq, t, t + 10 * MS + queue, hint))
    if reorder:
        for i in range(len(out) - 1):
            if draw(st.integers(0, 9)) == 0:
                out[i], out[i + 1] = out[i + 1], out[i]
    # arrival times follow the arrival order
    fixed, last = [], 0
    for p in out:
        last = max(last, p.arrival)
        fixed.append(Pkt(p.seq, p.send_ts, last, p.hint))
    return fixed


def run(rx: CvihisReceiver, trace: list[Pkt], offset: int = 0,
        switches: dict[int, Mode] | None = None) -> list[tuple[int, Feedback]]:
    """Feed ``trace`` (receiver clock = arrival + offset), firing timers when due."""
    out: list[tuple[int, Feedback]] = []
    for i, p in enumerate(trace):
        if switches and i in switches:
            rx.set_mode(switches[i])
        now = p.arrival + offset
        while rx.next_update_ns is not None and rx.next_update_ns <= now:
            due = rx.next_update_ns
            out += [(i, fb) for fb in rx.on_timer(due)]
            if rx.next_update_ns == due:
                break
        out += [(i, fb) for fb in rx.on_data(now, p.seq, p.send_ts, p.size, p.hint)]
    return out


offsets = st.integers(-(10**15), 10**15)


@TRACES
@given(traces(), offsets, st.sampled_from(list(Mode)))
def test_clock_offset_changes_no_decision(trace: list[Pkt], offset: int, mode: Mode) -> None:
    a, b = CvihisReceiver(P, mode), CvihisReceiver(P, mode)
    assert run(a, trace) == run(b, trace, offset)
    assert (a.lost, a.reordered, a.area_histogram) == (b.lost, b.reordered, b.area_histogram)
    assert b.min_delay_ns == pytest.approx(a.min_delay_ns + offset)


@st.composite
def reordered_without_loss(draw: st.DrawFn) -> tuple[list[int], int]:
    """A permutation of 0..n-1 in which no packet is overtaken by reorder_window or more."""
    window = draw(st.integers(1, 6))
    n = draw(st.integers(1, 200))
    jitter = [draw(st.floats(0, window - 1, exclude_max=window > 1)) for _ in range(n)]
    order = sorted(range(n), key=lambda s: (s + jitter[s], s))
    return order, window


@TRACES
@given(reordered_without_loss(), st.sampled_from(list(Mode)))
def test_reordering_is_counted_apart_from_loss_and_never_triggers_md(case: tuple[list[int], int],
                                                                     mode: Mode) -> None:
    order, window = case
    rx = CvihisReceiver(CvihisParams(reorder_window=window), mode)
    trace = [Pkt(s, 10**9 + s * MS, 10**9 + 10 * MS + i * MS, 40 * MS) for i, s in enumerate(order)]
    feedback = run(rx, trace)
    overtaken = sum(any(t > s for t in order[:i]) for i, s in enumerate(order))
    assert rx.lost == 0
    assert rx.reordered == overtaken
    assert rx.received == len(order)
    assert all(fb.command is not Command.MD and not fb.loss for _, fb in feedback)


@TRACES
@given(st.lists(st.integers(0, 299), unique=True, max_size=40), st.integers(1, 5))
def test_every_missing_packet_becomes_one_loss_once_the_window_has_passed(dropped: list[int],
                                                                          window: int) -> None:
    n = 300
    rx = CvihisReceiver(CvihisParams(reorder_window=window))
    sent = [s for s in range(n) if s not in set(dropped)]
    feedback = run(rx, [Pkt(s, 10**9 + s * MS, 10**9 + 10 * MS + s * MS, 40 * MS) for s in sent])
    last = sent[-1] if sent else -1
    assert rx.lost == sum(1 for s in dropped if s <= last - window and s > sent[0])
    assert rx.reordered == 0
    assert any(fb.command is Command.MD for _, fb in feedback) == (rx.lost > 0)


def test_a_packet_arriving_after_its_loss_was_declared_is_late_not_lost() -> None:
    rx = CvihisReceiver(CvihisParams(reorder_window=3))
    order = [0, 1, 3, 4, 5, 6, 2]
    run(rx, [Pkt(s, 10**9 + s * MS, 10**9 + 10 * MS + i * MS, 40 * MS) for i, s in enumerate(order)])
    assert (rx.lost, rx.reordered, rx.late, rx.duplicates) == (0, 1, 1, 0)


def test_duplicates_are_counted_and_ignored() -> None:
    rx = CvihisReceiver(P)
    trace = [Pkt(s, 10**9 + s * MS, 10**9 + 10 * MS + i * MS, 40 * MS) for i, s in enumerate([0, 1, 1, 2, 0])]
    run(rx, trace)
    assert (rx.received, rx.duplicates, rx.lost, rx.reordered) == (3, 2, 0, 0)


@TRACES
@given(traces(reorder=False))
def test_md_commands_are_at_least_one_rtt_hint_apart(trace: list[Pkt]) -> None:
    """``md: per-rtt`` (one MD per loss event; the default's two-per-fill: tests/hosts/test_cvihis_variants.py)."""
    rx = CvihisReceiver(PER_RTT)
    md_times: list[tuple[int, int]] = []
    hints = [p.hint for p in trace]
    for i, fb in run(rx, trace):
        if fb.command is Command.MD:  # the guard is the latest RTT hint the sender gave
            guard = next((h for h in reversed(hints[:i + 1]) if h), P.initial_rtt_ns)
            md_times.append((trace[i].arrival, guard))
    for (t0, _), (t1, guard) in zip(md_times, md_times[1:]):
        assert t1 - t0 >= guard


def test_max_delay_follows_the_owd_before_each_loss_as_an_ewma() -> None:
    rx = CvihisReceiver(P)
    base = 10**9
    # queue grows 1 ms per packet; packet 10 is lost, so packet 9's OWD is the sample
    trace = [Pkt(s, base + s * MS, base + s * MS + 10 * MS + s * MS, 40 * MS) for s in range(20) if s != 10]
    run(rx, trace)
    first_owd = 10 * MS
    assert rx.max_delay_ns == first_owd + 9 * MS
    trace2 = [Pkt(s, base + s * MS, base + s * MS + 10 * MS + 2 * MS, 40 * MS) for s in range(20, 40) if s != 30]
    run(rx, trace2)
    expected = (first_owd + 9 * MS) + P.max_delay_gain * (2 * MS - 9 * MS)
    assert rx.max_delay_ns == pytest.approx(expected)


@settings(max_examples=50, deadline=None)
@given(st.integers(5, 200), st.sampled_from([1.01, 1.05, 1.2]), st.integers(2, 12), st.booleans())
def test_rtm_min_delay_is_pushed_by_pf_per_update_and_reset_by_a_lower_owd(rtt_ms: int, pf: float,
                                                                           updates: int, per_rtt: bool) -> None:
    """Each decision multiplies the offset-free estimate by PF (``pf_per_rtt`` False) or by PF^(1/n) with n
    decisions per RTT (True: PF once per RTT); ``pf_pushes_per_rtt`` 0, so ``pf_per_rtt`` says."""
    params = CvihisParams(pf=pf, update_interval_min_ns=MS, pf_per_rtt=per_rtt, pf_pushes_per_rtt=0.0)
    per_rtt_decisions = params.updates_per_rtt
    rx = CvihisReceiver(params, Mode.RTM)
    rtt = rtt_ms * MS
    t = 10**10
    rx.on_data(t, 0, t - 10 * MS, 1000, rtt)  # OWD 10 ms: the smallest ever
    base = rx.min_delay_ns
    estimates = []
    seq = 1
    while len(estimates) < updates:  # every later OWD is far above: nothing resets the push
        t += MS
        before = rx.min_delay_ns
        fbs = rx.on_data(t, seq, t - 10 * MS - 10**9, 1000, rtt)
        seq += 1
        if fbs:
            assert rx.min_delay_ns > before
            estimates.append(rtt / 2 + (rx.min_delay_ns - base))
    ratios = [b / a for a, b in zip([rtt / 2, *estimates], estimates)]
    assert ratios == pytest.approx([pf ** (1 / per_rtt_decisions) if per_rtt else pf] * updates)
    lower = math.floor(rx.min_delay_ns) - 1  # above the smallest OWD, below the pushed value
    rx.on_data(t + MS, seq, t + MS - lower, 1000, rtt)
    assert rx.min_delay_ns == lower


@TRACES
@given(traces(max_len=80))
def test_blm_min_delay_is_the_smallest_owd_ever(trace: list[Pkt]) -> None:
    rx = CvihisReceiver(P, Mode.BLM)
    run(rx, trace)
    assert rx.min_delay_ns == min(p.arrival - p.send_ts for p in trace)


@TRACES
@given(traces(), st.data(), st.sampled_from([PER_RTT, P]))
def test_mode_switch_mid_run_keeps_the_delay_history(trace: list[Pkt], data: st.DataObject,
                                                     params: CvihisParams) -> None:
    """After returning to BLM every periodic decision is what a never-switched receiver decides; with ``md:
    per-rtt`` every MD too, bit for bit. With the default's two MDs per fill, a fill open at the switch may end at
    another decision (RTM's pushed areas decide when the queue is back below the target), so the MD commands, and
    the feedback numbers after them, may differ: the decisions are compared without them."""
    i = data.draw(st.integers(0, len(trace) - 1))
    j = data.draw(st.integers(i, len(trace)))
    steady, switched = CvihisReceiver(params, Mode.BLM), CvihisReceiver(params, Mode.BLM)
    a = run(steady, trace)
    b = run(switched, trace, switches={i: Mode.RTM, j: Mode.BLM})
    switched.set_mode(Mode.BLM)  # j may be past the last packet
    if params.md_per_fill:
        def decisions(out: list[tuple[int, Feedback]]) -> list[tuple[object, ...]]:
            return [(fb.command, fb.area, fb.step_milli, fb.gradient) for k, fb in out if k >= j and not fb.loss]
        assert decisions(a) == decisions(b)
    else:
        assert [fb for k, fb in a if k >= j] == [fb for k, fb in b if k >= j]
        assert len(a) == len(b)
    for attr in ("received", "lost", "reordered", "duplicates", "min_delay_ns", "max_delay_ns"):
        assert getattr(steady, attr) == getattr(switched, attr)


def test_switching_to_rtm_starts_from_the_measured_min_delay() -> None:
    rx = CvihisReceiver(P, Mode.BLM)
    t = 10**9
    for s in range(50):
        rx.on_data(t + s * MS, s, t + s * MS - (10 + s % 7) * MS, 1000, 40 * MS)
    before = (rx.min_delay_ns, rx.max_delay_ns, rx.received, rx.area_histogram)
    rx.set_mode("rtm")
    assert rx.mode is Mode.RTM
    assert (rx.min_delay_ns, rx.received, rx.area_histogram) == (before[0], before[2], before[3])


def test_bad_inputs_raise_a_one_line_error_naming_the_argument() -> None:
    rx = CvihisReceiver(P)
    with pytest.raises(ValueError, match="seq must be an integer"):
        rx.on_data(1, 1.5, 0, 100, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rtt_ns_hint must be >= 0"):
        rx.on_data(1, 1, 0, 100, -5)
    with pytest.raises(ValueError, match="'fast' is not 'blm' or 'rtm'"):
        CvihisReceiver(P, "fast")
    with pytest.raises(ValueError, match="'x' is not"):
        rx.set_mode("x")


def test_updates_come_three_times_per_rtt_hint_clamped() -> None:
    params = CvihisParams(update_interval_min_ns=10 * MS, update_interval_max_ns=200 * MS)
    assert params.updates_per_rtt == 3
    for hint, expected in ((60 * MS, 20 * MS), (2 * MS, 10 * MS), (900 * MS, 200 * MS)):
        rx = CvihisReceiver(params)
        times = []
        t = 10**9
        for s in range(2000):
            t += MS // 2
            if rx.on_data(t, s, t - 10 * MS, 1000, hint):
                times.append(t)
        gaps = {b - a for a, b in zip(times, times[1:])}
        assert gaps == {expected}


def test_shifted_rtm_areas_keep_their_width_and_move_up_with_the_push() -> None:
    """``areas shift`` (the ``shifted`` reading): the top of the areas moves up with the pushed minDelay."""
    rtm, blm = CvihisReceiver(CvihisReading("shifted").apply(P), Mode.RTM), CvihisReceiver(P, Mode.BLM)
    base = 10**9
    # a packet every 5 ms, the queue growing 1 ms per packet (faster than the push), packet 50 lost
    trace = [Pkt(s, base + 5 * s * MS, base + 5 * s * MS + 10 * MS + s * MS, 40 * MS) for s in range(60) if s != 50]
    run(rtm, trace)
    run(blm, trace)
    assert rtm.lost == blm.lost == 1 and blm.max_delay_ns == blm.min_delay_ns + 49 * MS  # OWD before the loss
    lift = rtm.min_delay_ns - blm.min_delay_ns  # blm: the smallest OWD
    assert lift > 0  # pushed: no later OWD fell below the pushed value
    assert rtm.max_delay_ns - rtm.min_delay_ns == pytest.approx(blm.max_delay_ns - blm.min_delay_ns)
    rtm.set_mode(Mode.BLM)  # back in BLM: the learned areas again
    assert (rtm.min_delay_ns, rtm.max_delay_ns) == (blm.min_delay_ns, blm.max_delay_ns)


def test_rtm_areas_squeezed_keep_their_top_when_shifting_is_off() -> None:
    """``areas squeeze``: the sources' literal wording, only minDelay is pushed, so the top of the areas stays
    the learned maxDelay and the span shrinks by the lift."""
    squeezed = CvihisReceiver(CvihisParams(rtm_shift_areas=False, rtm_shift_until_loss=False), Mode.RTM)
    blm = CvihisReceiver(P, Mode.BLM)
    base = 10**9
    trace = [Pkt(s, base + 5 * s * MS, base + 5 * s * MS + 10 * MS + s * MS, 40 * MS) for s in range(60) if s != 50]
    run(squeezed, trace)
    run(blm, trace)
    assert squeezed.min_delay_ns > blm.min_delay_ns  # pushed
    assert squeezed.max_delay_ns == blm.max_delay_ns  # not moved with it


def test_rtm_shift_areas_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="CvihisParams.rtm_shift_areas: expected True or False"):
        CvihisParams(rtm_shift_areas=1)  # type: ignore[arg-type]
