"""GCC's sans-I/O core (hosts/gcc): groups, the two arrival-time filters, the threshold and the
detector, the AIMD rate controller, the loss controller, the report codec (draft-ietf-rmcat-gcc-02)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hosts.gcc import GccParams, GccReceiver, GccReport, GccSender, decode_report, encode_report
from hosts.gcc.aimd import BETA, AimdRateController, RateState
from hosts.gcc.detector import GAINS, OVERUSE_TIME_TH_MS, AdaptiveThreshold, OveruseDetector, Usage
from hosts.gcc.groups import GroupDelta, PacketGroups
from hosts.gcc.kalman import KalmanFilter
from hosts.gcc.loss import LossController
from hosts.gcc.trendline import MAX_DELTAS, THRESHOLD_GAIN, TrendlineEstimator, least_squares_slope

MS = 1_000_000
S = 1_000_000_000


# ---- groups ------------------------------------------------------------------------------------------------
def test_packets_within_burst_time_form_one_group_and_d_is_the_delay_variation() -> None:
    g = PacketGroups()
    out = []
    # groups sent at 0, 10, 20 ms (two packets each, 1 ms apart); each arrives 2 ms later than the last
    for i in range(4):
        for j in range(2):
            out.append(g.on_packet(i * 10 * MS + j * MS, 100 * MS + i * 12 * MS + j * MS, 1000))
    deltas = [d for d in out if d is not None]
    assert len(deltas) == 2  # the third and fourth groups' first packets close groups 1 and 2
    for d in deltas:
        assert d.send_delta_ns == 10 * MS and d.arrival_delta_ns == 12 * MS and d.size_bytes == 2000
        assert d.delay_variation_ms == pytest.approx(2.0)


def test_a_burst_released_after_an_outage_joins_the_current_group() -> None:
    """5.2: sent 10 ms later, but arrived right behind (an outage released both): one group."""
    g = PacketGroups()
    assert g.on_packet(0, 50 * MS, 1000) is None
    assert g.on_packet(10 * MS, 51 * MS, 1000) is None
    assert g.current is not None and g.current.size == 2000


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=2, max_size=200),
       st.integers(-10**12, 10**12))
def test_delay_variations_do_not_depend_on_the_clock_offset(steps: list[tuple[int, int]], offset: int) -> None:
    """d(i) uses differences of one clock's readings: shifting the receiver's clock changes nothing."""
    a, b = PacketGroups(), PacketGroups()
    send = arrive = 0
    for ds, da in steps:
        send += ds
        arrive += da
        assert a.on_packet(send, arrive, 1000) == _shift(b.on_packet(send, arrive + offset, 1000), offset)


def _shift(d: GroupDelta | None, offset: int) -> GroupDelta | None:
    return None if d is None else GroupDelta(d.send_delta_ns, d.arrival_delta_ns, d.arrival_ns - offset, d.size_bytes)


# ---- filters -------------------------------------------------------------------------------------------------
def groups(slope: float, n: int, spacing_ms: float = 5.0, jitter: list[float] | None = None) -> list[GroupDelta]:
    """Groups ``spacing_ms`` apart whose arrival spacing grows by ``slope`` (ms of delay per ms)."""
    out, t = [], 0.0
    for i in range(n):
        t += spacing_ms * (1 + slope)
        j = jitter[i] if jitter else 0.0
        out.append(GroupDelta(round(spacing_ms * MS), round((spacing_ms * (1 + slope) + j) * MS), round(t * MS), 1000))
    return out


@pytest.mark.parametrize("slope", [-0.2, -0.05, 0.0, 0.03, 0.1, 0.5])
def test_trendline_estimates_a_known_slope(slope: float) -> None:
    """The delay grows by ``slope`` ms per ms of arrival time: once the smoothing has settled, the
    trend is the slope, and the estimate compared with the threshold is 60 x 4 x slope."""
    f = TrendlineEstimator()
    for d in groups(slope, 300):
        f.update(d)
    assert f.slope == pytest.approx(slope / (1 + slope), rel=1e-3, abs=1e-9)  # per ms of *arrival* time
    assert f.estimate == pytest.approx(MAX_DELTAS * THRESHOLD_GAIN * f.slope)


@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)), min_size=2, max_size=40),
       st.floats(-10, 10), st.floats(-1e3, 1e3))
def test_least_squares_slope_of_a_line_plus_points(points: list[tuple[float, float]], a: float, b: float) -> None:
    """Differential: on exact lines the slope is the line's; adding a line to any points adds its slope."""
    xs = [x for x, _ in points]
    if max(xs) - min(xs) < 1e-3:
        return
    line = [(x, a * x + b) for x in xs]
    assert least_squares_slope(line) == pytest.approx(a, abs=1e-6 * (1 + abs(a)))
    shifted = [(x, y + a * x + b) for x, y in points]
    assert least_squares_slope(shifted) == pytest.approx(least_squares_slope(points) + a, abs=1e-6 * (1 + abs(a)))


@pytest.mark.parametrize("d_ms", [-3.0, 0.0, 2.0, 8.0])
def test_kalman_converges_to_a_constant_delay_variation(d_ms: float) -> None:
    """A constant d(i): the filter's m_hat tends to it (the draft's model with no noise)."""
    f = KalmanFilter()
    spacing = 5.0
    for d in groups(d_ms / spacing, 2000, spacing):
        f.update(d)
    assert f.estimate == pytest.approx(d_ms, abs=0.05)


def test_kalman_clips_an_outlier_in_its_noise_estimate() -> None:
    """One 500 ms spike: var_v_hat moves by at most (1 - alpha) 9 var_v (the outlier filter)."""
    f = KalmanFilter()
    for d in groups(0.0, 200):
        f.update(d)
    before = f.var_v
    f.update(GroupDelta(5 * MS, 505 * MS, 10**9, 1000))
    assert f.var_v <= max(before * 9, 1.0) + 1e-9


@given(st.lists(st.floats(-50, 50), min_size=1, max_size=300))
def test_filters_stay_finite_on_any_jitter(jitter: list[float]) -> None:
    for f in (TrendlineEstimator(), KalmanFilter()):
        for d in groups(0.0, len(jitter), jitter=jitter):
            assert math.isfinite(f.update(d))


# ---- threshold and detector ------------------------------------------------------------------------------------
@given(st.lists(st.tuples(st.integers(0, 500 * MS), st.floats(-1000, 1000)), max_size=200),
       st.sampled_from(sorted(GAINS)))
def test_threshold_stays_in_its_band(steps: list[tuple[int, float]], filt: str) -> None:
    th = AdaptiveThreshold(*GAINS[filt])
    now = 0
    for dt, m in steps:
        now += dt
        assert 6.0 <= th.update(now, m) <= 600.0


@pytest.mark.parametrize("gains", sorted(GAINS))
def test_threshold_rises_faster_than_it_falls_with_the_drafts_gains_only(gains: str) -> None:
    """The draft's K_u > K_d: gamma follows a larger |m| quickly and comes back slowly (the design
    against starvation beside TCP); libwebrtc's pair is the other way round."""
    up, down = AdaptiveThreshold(*GAINS[gains]), AdaptiveThreshold(*GAINS[gains])
    up.update(0, 0.0)
    down.update(0, 0.0)
    for t in range(1, 21):  # 100 ms of 5 ms groups
        up.update(t * 5 * MS, 20.0)  # 7.5 ms above gamma0 (within the 15 ms spike guard)
        down.update(t * 5 * MS, 5.0)  # 7.5 ms below
    rose, fell = up.gamma - 12.5, 12.5 - down.gamma
    assert rose > 0 and fell > 0
    assert (rose > fell) == (gains == "draft")


def test_a_spike_beyond_15_ms_above_the_threshold_does_not_move_it() -> None:
    th = AdaptiveThreshold(*GAINS["libwebrtc"])
    th.update(0, 0.0)
    assert th.update(100 * MS, 12.5 + 15.1) == 12.5


def test_detector_signals_overuse_only_after_the_time_condition() -> None:
    """m above gamma: OVERUSE once it has been above for overuse_time_th (10 ms), not before."""
    det = OveruseDetector("draft")
    step = 5 * MS
    states = [det.detect(i * step, 20.0 + i * 0.01, step) for i in range(4)]
    above_ms = [i * step / MS for i in range(4)]
    for s, t in zip(states, above_ms):
        assert (s == Usage.OVERUSE) == (t >= OVERUSE_TIME_TH_MS)


def test_detector_does_not_signal_overuse_while_the_estimate_falls() -> None:
    det = OveruseDetector("libwebrtc")
    step = 5 * MS
    states = [det.detect(i * step, 30.0 - i, step) for i in range(6)]  # above gamma, but falling
    assert Usage.OVERUSE not in states


def test_detector_underuse_and_normal() -> None:
    det = OveruseDetector()
    assert det.detect(0, -20.0, 5 * MS) == Usage.UNDERUSE
    assert det.detect(5 * MS, 1.0, 5 * MS) == Usage.NORMAL


# ---- AIMD ------------------------------------------------------------------------------------------------------
def test_aimd_increases_about_8_percent_per_second_far_from_the_maximum() -> None:
    rc = AimdRateController()
    rc.update(0, Usage.NORMAL, 1e6, 50)
    for i in range(1, 201):
        rc.update(i * 5 * MS, Usage.NORMAL, 1e6, 50)  # 1 s, incoming 1 Mb/s (cap 1.5 Mb/s)
    assert rc.state == RateState.INCREASE and not rc.near_max
    assert rc.rate_bps == pytest.approx(1.08e6, rel=1e-6)


def test_aimd_decreases_to_beta_times_the_incoming_rate_then_holds_then_increases_additively() -> None:
    rc = AimdRateController()
    rc.update(0, Usage.NORMAL, 1e6, 50)
    rc.update(5 * MS, Usage.OVERUSE, 1e6, 50)
    assert rc.state == RateState.DECREASE and rc.rate_bps == pytest.approx(BETA * 1e6)
    rc.update(10 * MS, Usage.NORMAL, 1e6, 50)
    assert rc.state == RateState.HOLD and rc.rate_bps == pytest.approx(BETA * 1e6)
    rc.update(15 * MS, Usage.NORMAL, 1e6, 50)
    assert rc.state == RateState.INCREASE and rc.near_max
    before = rc.rate_bps
    for i in range(4, 204):  # 1 s near the maximum: additive, well below 8 %
        rc.update(i * 5 * MS, Usage.NORMAL, 0.9e6, 50)
    assert before < rc.rate_bps < 1.08 * before


def test_aimd_underuse_holds_the_rate() -> None:
    rc = AimdRateController()
    rc.update(0, Usage.NORMAL, 1e6, 50)
    rc.update(5 * MS, Usage.UNDERUSE, 1e6, 50)
    a = rc.rate_bps
    for i in range(2, 100):
        rc.update(i * 5 * MS, Usage.UNDERUSE, 1e6, 50)
    assert rc.state == RateState.HOLD and rc.rate_bps == a


def test_aimd_repeats_a_decrease_no_more_than_once_per_rtt() -> None:
    rc = AimdRateController()
    rc.update(0, Usage.NORMAL, 1e6, 50)
    for i in range(1, 10):  # 45 ms of over-use with an RTT of 50 ms
        rc.update(i * 5 * MS, Usage.OVERUSE, 1e6 * (1 - i / 100), 50)
    assert rc.decreases == 1


@given(st.lists(st.tuples(st.integers(0, 200 * MS), st.sampled_from(list(Usage)), st.floats(0, 1e8)),
                max_size=300))
def test_aimd_never_exceeds_one_and_a_half_times_the_incoming_rate_when_it_increases(
        steps: list[tuple[int, Usage, float]]) -> None:
    rc = AimdRateController()
    now = 0
    for dt, sig, incoming in steps:
        now += dt
        before = rc.rate_bps
        a = rc.update(now, sig, incoming, 50)
        assert a is not None and a >= 10_000
        if before is not None and a > before:
            assert a <= max(1.5 * incoming, 10_000) + 1e-6


# ---- loss controller --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("p", "factor"), [(0.0, 1.05), (0.019, 1.05), (0.02, 1.0), (0.05, 1.0), (0.10, 1.0),
                                           (0.2, 0.9), (0.5, 0.75), (1.0, 0.5)])
def test_loss_controller_three_regions(p: float, factor: float) -> None:
    lc = LossController(1e6, 1e4, 1e8)
    assert lc.on_loss(p) == pytest.approx(1e6 * factor)


@given(st.floats(1e3, 1e7), st.floats(1e3, 1e7), st.floats(1e3, 1e8),
       st.lists(st.one_of(st.floats(0, 1), st.tuples(st.floats(1, 1e9))), max_size=200))
def test_sending_rate_stays_within_min_and_max_for_any_feedback(a: float, b: float, start: float,
                                                                 feedback: list[float | tuple[float]]) -> None:
    lo, hi = min(a, b), max(a, b)
    lc = LossController(start, lo, hi)
    for fb in feedback:
        if isinstance(fb, tuple):
            lc.on_remb(fb[0])
        else:
            lc.on_loss(fb)
        assert lo <= lc.target_bps <= hi and lo <= lc.rate_bps <= hi
        if lc.remb_bps is not None:
            assert lc.target_bps <= max(lc.remb_bps, lo)


# ---- reports ---------------------------------------------------------------------------------------------------
@given(st.one_of(st.none(), st.integers(1, 2**64 - 1)), st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 255), st.booleans(),
       st.integers(0, 2), st.integers(0, 2))
def test_report_round_trip(remb, echo, hold, seq, lost, frac, early, usage, state) -> None:
    r = GccReport(remb, echo, hold, seq, lost, frac, early, usage, state)
    assert decode_report(encode_report(r)) == r


def test_bad_reports_are_refused() -> None:
    good = encode_report(GccReport(1000, 1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="need 32"):
        decode_report(good[:31])
    with pytest.raises(ValueError, match="out of range"):
        decode_report(good[:29] + b"\x80" + good[30:])
    with pytest.raises(ValueError, match="REMB of 0"):
        decode_report(b"\x00" * 29 + b"\x01" + good[30:])


# ---- the two ends together ----------------------------------------------------------------------------------------
def loop(capacity_bps: float, seconds: float, params: GccParams, *, packet: int = 1000, owd_ms: float = 20.0,
         filt: str = "trendline") -> tuple[GccSender, GccReceiver, list[float]]:
    """Sender -> a FIFO of ``capacity_bps`` (no drop) -> receiver, reports back after ``owd_ms``: the queue's
    delay at each arrival."""
    tx, rx = GccSender(params, packet), GccReceiver(filt)
    free_at, now, end = 0, 0, int(seconds * S)
    pending: list[tuple[int, GccReport]] = []
    queue_ms: list[float] = []
    while now < end:
        t = tx.next_send_ns(now)
        rt = rx.next_timer_ns()
        nxt = min([t] + ([rt] if rt is not None else []) + [p[0] for p in pending])
        now = max(now, nxt)
        for p in [p for p in pending if p[0] <= now]:
            pending.remove(p)
            tx.on_report(now, p[1])
        for r in rx.on_timer(now):
            pending.append((now + int(owd_ms * MS), r))
        if tx.can_send(now):
            seq = len(queue_ms)
            tx.on_sent(now)
            start = max(now, free_at)
            free_at = start + int(packet * 8 * S / capacity_bps)
            arrive = free_at + int(owd_ms * MS)
            queue_ms.append((free_at - now) / MS)
            rtt = int(tx.rtt_ns or 0)
            for r in rx.on_data(arrive, seq, now, packet, rtt):
                pending.append((arrive + int(owd_ms * MS), r))
    return tx, rx, queue_ms


def test_loop_settles_below_capacity_with_a_short_queue() -> None:
    """One sender on a 1 Mb/s FIFO with no loss: the rate comes to the capacity and the delay-based
    controller keeps it there (no queue growing without bound): the last 10 s of 60 average within
    60-100 % of capacity (Carlucci et al.: a little over 80 %) with a queue below 200 ms."""
    tx, rx, q = loop(1e6, 60, GccParams(max_rate_bps=5e6))
    sent = len(q)
    assert rx.detector.overuses >= 1 and rx.rate.decreases >= 1
    tail = q[int(sent * 5 / 6):]
    assert max(tail) < 200
    assert 0.6e6 < tx.target_bps < 1.1e6 or 0.6e6 < (rx.rate.rate_bps or 0) < 1.1e6


def test_the_wire_format_example_is_what_the_codec_writes() -> None:
    """docs/reference/wire-format.md's GCC example: its bytes decode to the values its text states."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "wire-format.md").read_text(encoding="utf-8")
    section = doc.split("## GCC receiver report", 1)[1]
    dump = section.split("```\n", 1)[1].split("```", 1)[0]
    data = bytes(int(h, 16) for line in dump.splitlines() for h in line.split()[1:])
    r = decode_report(data)
    assert r == GccReport(850_000, 12_345_678_901, 2500, 4321, 7, 13, False, 0, 1)
    assert encode_report(r) == data


@given(st.floats(1e4, 1e6), st.floats(1e6, 1e8),
       st.lists(st.tuples(st.integers(0, 2 * S), st.one_of(st.none(), st.integers(1, 10**10)), st.integers(0, 255),
                          st.booleans()), max_size=100))
def test_a_senders_target_stays_within_its_rates_for_any_reports(lo: float, hi: float,
                                                                 reports: list[tuple[int, int | None, int, bool]]) -> None:
    """The whole sender (loss controller under the REMB, the source, the pacer) for any report sequence:
    its target stays in [min_rate, max_rate], and the source paces at 2.5 times it."""
    tx = GccSender(GccParams(lo, lo, hi), 1000)
    now = 0
    for dt, remb, frac, early in reports:
        now += dt
        tx.on_report(now, GccReport(remb, max(now - 10**6, 0), 0, 0, 0, frac, early))
        assert lo <= tx.target_bps <= hi
        assert tx.next_send_ns(now) >= now
        gap = tx._gap_ns()
        assert gap == max(1, round(8000 * S / (2.5 * tx.target_bps)))
