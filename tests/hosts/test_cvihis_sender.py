"""CvihisSender properties: MD at most once per RTT, rate bounds, RTT from echoes, steps per sqrt(RTT)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.cvihis import Command, CvihisParams, CvihisSender, Feedback

MS = 1_000_000
S = 1_000_000_000
P = CvihisParams()
PER_RTT = CvihisParams(md_per_fill=0)  # md: per-rtt: the sender guards once per RTT


def feedback(fb_seq: int, command: Command, echo_ts: int, echo_delay: int = 0, step_milli: int | None = None,
             area: int | None = None) -> Feedback:
    if step_milli is None:
        step_milli = round({Command.INCREASE: P.step_increase, Command.STRONG_DECREASE: -P.step_strong_decrease}
                           .get(command, 0.0) * 1000)
    return Feedback(fb_seq=fb_seq, command=command, area=area, step_milli=step_milli, gradient=0,
                    loss=command is Command.MD, rtm=False, echo_ts_ns=echo_ts, echo_delay_ns=echo_delay)


@st.composite
def feedback_runs(draw: st.DrawFn) -> list[tuple[int, Feedback]]:
    """Feedback arriving at increasing times, echoing send times 5..300 ms earlier."""
    now, out = S, []
    for k in range(draw(st.integers(1, 80))):
        now += draw(st.integers(0, 200 * MS))
        command = draw(st.sampled_from(list(Command)))
        step = 0 if command in (Command.HOLD, Command.MD) else draw(st.integers(-(2**15), 2**15 - 1))
        rtt = draw(st.integers(5 * MS, 300 * MS))
        held = draw(st.integers(0, rtt - 1))
        out.append((now, feedback(k + 1, command, now - rtt, held, step)))
    return out


@settings(deadline=None)
@given(feedback_runs())
def test_md_is_applied_at_most_once_per_rtt(run: list[tuple[int, Feedback]]) -> None:
    tx = CvihisSender(PER_RTT)
    last_md: int | None = None
    for now, fb in run:
        applied = tx.md_applied
        tx.on_feedback(now, fb)
        if tx.md_applied > applied:
            assert fb.command is Command.MD
            assert last_md is None or now - last_md >= tx.rtt_ns
            last_md = now
    assert tx.md_applied + tx.md_suppressed == sum(fb.command is Command.MD for _, fb in run)


@settings(deadline=None)
@given(feedback_runs(), st.floats(1e3, 1e6), st.floats(1.0, 1e4))
def test_rate_stays_within_min_and_max(run: list[tuple[int, Feedback]], min_bps: float, factor: float) -> None:
    params = CvihisParams(min_rate_bps=min_bps, max_rate_bps=min_bps * factor, initial_rate_bps=min_bps)
    tx = CvihisSender(params)
    for now, fb in run:
        tx.on_feedback(now, fb)
        assert params.min_rate_bps * (1 - 1e-12) <= tx.rate_bps <= params.max_rate_bps * (1 + 1e-12)  # float b/s <-> pkt/s
        assert tx.gap_ns == round(S / tx.rate_pps)


@given(st.integers(1, 10 * S), st.integers(1 * MS, 2 * S), st.data())
def test_rtt_comes_from_the_echoed_timestamp_minus_the_receivers_hold_time(t0: int, rtt: int,
                                                                          data: st.DataObject) -> None:
    tx = CvihisSender(P)
    assert tx.stamp(t0)[2] == 0  # no RTT hint before a sample
    held = data.draw(st.integers(0, rtt - 1))
    tx.on_feedback(t0 + rtt, feedback(1, Command.HOLD, t0, held))
    assert tx.rtt_ns == rtt - held
    assert tx.stamp(t0 + rtt)[2] == rtt - held


def test_srtt_moves_towards_new_samples_by_the_gain() -> None:
    tx = CvihisSender(P)
    tx.on_feedback(S + 40 * MS, feedback(1, Command.HOLD, S))
    tx.on_feedback(2 * S + 120 * MS, feedback(2, Command.HOLD, 2 * S))
    assert tx.rtt_ns == round(40 * MS + P.rtt_gain * 80 * MS)
    assert tx.min_rtt_ns == 40 * MS


@given(st.integers(-(2**15), 2**15 - 1), st.integers(5 * MS, 400 * MS))
def test_one_step_changes_the_rate_by_the_weighted_step_over_sqrt_rtt(step_milli: int, rtt: int) -> None:
    params = CvihisParams(min_rate_bps=8.0, max_rate_bps=1e12)
    tx = CvihisSender(params)
    before = tx.rate_pps
    command = Command.INCREASE if step_milli >= 0 else Command.DECREASE
    tx.on_feedback(S + rtt, feedback(1, command, S, 0, step_milli))
    expected = before + params.ewma_weight * (step_milli / 1000) / math.sqrt(rtt / S)
    assert tx.rate_pps == pytest.approx(max(expected, params.pps(params.min_rate_bps)))


def test_smoothing_carries_half_of_the_last_update_into_the_next() -> None:
    tx = CvihisSender(P)
    tx.on_feedback(S + 100 * MS, feedback(1, Command.INCREASE, S))
    first = tx.rate_pps
    tx.on_feedback(S + 200 * MS, feedback(2, Command.HOLD, S + 100 * MS))
    second = tx.rate_pps
    assert second - first == pytest.approx((1 - P.ewma_weight) * (first - P.pps(P.initial_rate_bps)))


def test_md_divides_the_rate_by_md_factor_and_clears_the_smoothing_history() -> None:
    tx = CvihisSender(P)
    tx.on_feedback(S + 50 * MS, feedback(1, Command.INCREASE, S))
    before = tx.rate_pps
    tx.on_feedback(S + 100 * MS, feedback(2, Command.MD, S + 50 * MS))
    assert tx.rate_pps == pytest.approx(before / P.md_factor)
    assert tx.gap_ns == pytest.approx(S / before * P.md_factor, abs=1)
    tx.on_feedback(S + 150 * MS, feedback(3, Command.HOLD, S + 100 * MS))
    assert tx.rate_pps == pytest.approx(before / P.md_factor)  # no increase replayed after the MD


def test_second_md_within_one_rtt_is_suppressed_and_after_one_rtt_applied() -> None:
    tx = CvihisSender(PER_RTT)
    tx.on_feedback(S + 50 * MS, feedback(1, Command.MD, S))
    rate = tx.rate_pps
    tx.on_feedback(S + 90 * MS, feedback(2, Command.MD, S + 40 * MS))  # 40 ms after, RTT 50 ms
    assert (tx.rate_pps, tx.md_suppressed) == (rate, 1)
    tx.on_feedback(S + 50 * MS + tx.rtt_ns, feedback(3, Command.MD, S + tx.rtt_ns))
    assert tx.rate_pps < rate and tx.md_applied == 2


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=30))
def test_stale_feedback_is_ignored(seqs: list[int]) -> None:
    tx = CvihisSender(P)
    newest: int | None = None
    for k, fb_seq in enumerate(seqs):
        before = (tx.rate_pps, tx.feedbacks)
        tx.on_feedback(S + (k + 1) * 50 * MS, feedback(fb_seq, Command.INCREASE, S + k * 50 * MS))
        newer = newest is None or 0 < (fb_seq - newest) % 2**32 < 2**31
        assert (tx.feedbacks == before[1] + 1) == newer
        if newer:
            newest = fb_seq
        else:
            assert tx.rate_pps == before[0]


def test_pacing_and_sequence_numbers() -> None:
    tx = CvihisSender(P)
    assert tx.next_send_ns(7) == 7
    seqs = []
    t = S
    for _ in range(5):
        seq, ts, _hint = tx.stamp(t)
        seqs.append(seq)
        assert ts == t
        assert tx.next_send_ns(t) == t + tx.gap_ns
        t = tx.next_send_ns(t)
    assert seqs == list(range(5))
    assert tx.rate_bps == pytest.approx(P.initial_rate_bps)
