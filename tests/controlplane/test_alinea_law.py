"""The ALINEA law: the paper's rule step by step, and its invariants on any report sequence."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.alinea import (
    NEWEST_CAP,
    NEWEST_FALL,
    OVERFLOW_CUT,
    OVERFLOW_DRAIN_SHARE,
    STALE_HOLD_INTERVALS,
    AlineaLaw,
    Forecast,
    settled_base,
    unexplained,
)
from controlplane.params import LawParams, ParamError

PAPER = LawParams(o_min=0.15, o_max=0.8, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=0.0)


def test_hand_worked_sequence_follows_the_pseudo_code() -> None:
    """Worked by hand from SOURCES.md A: R += W(O - O(k)), clamp; O/W adaptation."""
    law = AlineaLaw(PAPER)
    assert (law.rate, law.o, law.w) == (4e4, 0.15, 8e6)
    steps = [  # O(k) -> (R, O, W) after the report
        (0.00, (1.24e6, 0.15, 8e6)),   # R = 4e4 + 8e6*0.15
        (0.10, (1.64e6, 0.15, 8e6)),   # R += 8e6*0.05
        (0.30, (0.44e6, 0.30, 4e6)),   # R += 8e6*(0.15-0.30); O < 0.3 < O_max: O = 0.3, W/2
        (0.25, (0.64e6, 0.30, 4e6)),   # R += 4e6*0.05; O(k) below O: no adaptation
        (0.90, (4e4, 0.80, 5e5)),      # R += 4e6*(0.3-0.9) < floor; O(k) > O_max: O = O_max, W = W_min
        (0.50, (1.9e5, 0.80, 5e5)),    # R += 5e5*0.3
        (0.00, (5.9e5, 0.80, 5e5)),    # R += 5e5*0.8
        (0.00, (9.9e5, 0.80, 5e5)),
        (0.00, (1.39e6, 0.80, 5e5)),
        (0.00, (1.79e6, 0.80, 5e5)),
        (0.00, (2e6, 0.80, 5e5)),      # clamped to R_max
    ]
    for occ, (rate, o, w) in steps:
        law.on_report(occ)
        assert law.rate == pytest.approx(rate)
        assert (law.o, law.w) == (pytest.approx(o), w)


def test_w_is_halved_at_most_down_to_w_min() -> None:
    law = AlineaLaw(PAPER)
    for occ in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        law.on_report(occ)
    assert law.w == PAPER.w_min and law.o == 0.7


def test_damping_term_acts_only_once_the_target_reached_o_max() -> None:
    p = PAPER.with_changes(k_p=1e7)
    law, plain = AlineaLaw(p, rate=1.5e6), AlineaLaw(PAPER, rate=1.5e6)
    for a in (law, plain):
        a.on_report(0.16)
        a.on_report(0.17)  # O rises to 0.17 < O_max: the paper's rule alone, in both
    assert law.rate == plain.rate
    for a in (law, plain):
        a.on_report(0.81)  # O = O_max from here on
        a.on_report(0.805)
    # the report after pinning: R -= k_p * (0.805 - 0.81): the falling occupancy slows the cut
    assert plain.rate == pytest.approx(97_500)
    assert law.rate == pytest.approx(plain.rate + 1e7 * 0.005)


def test_the_damping_term_compares_occupancies_on_one_capacity() -> None:
    """The buffer read in the node's mean frame: when that capacity moves (``packet`` = 1 / capacity), the
    same packets are another fraction of it, which is no change of the buffer (issue 46: a host's law read
    4.03 -> 2.91 of its buffer as the buffer emptying and left its floor for 49 Mb/s into a full buffer)."""
    from controlplane.alinea import Forecast

    p = PAPER.with_changes(k_p=1e7)
    law, plain = AlineaLaw(p, rate=1.5e6), AlineaLaw(PAPER, rate=1.5e6)
    for a in (law, plain):
        a.on_report(34 / 40, packet=1 / 40)  # past O_max: O = O_max from here on
        a.on_report(34 / 50, packet=1 / 50)  # the same 34 packets, the capacity now 50 frames
    assert law.rate == pytest.approx(plain.rate)  # no damping: the buffer did not change
    law.on_report(40 / 40, packet=1 / 40)  # back to 40 frames, 6 packets more: damped on 6 / 40
    plain.on_report(40 / 40, packet=1 / 40)
    assert law.rate == pytest.approx(max(p.r_floor, plain.rate - 1e7 * 6 / 40))
    settled = AlineaLaw(p, rate=1.5e6)
    settled.on_report(34 / 40, packet=1 / 40, forecast=Forecast(34 / 40, 1.2e6))
    settled.on_report(34 / 50, packet=1 / 50, forecast=Forecast(0.8, 1.2e6))
    assert settled.rate == pytest.approx(1.2e6)  # on target, the buffer unchanged: the drain


def test_overflow_reads_as_a_full_buffer_and_cuts_the_rate() -> None:
    law = AlineaLaw(PAPER, rate=1.6e6)
    law.on_report(0.5, overflow=True)
    assert law.o == PAPER.o_max and law.w == PAPER.w_min
    assert law.rate <= 1.6e6 * OVERFLOW_CUT


def test_with_a_forecast_an_overflow_cuts_below_the_drain_but_not_to_half() -> None:
    """On BMv2's queues a halved rate would stamp every packet queued before the next command at
    twice the spacing; the measured drain says what the buffer can take."""
    drain = 50e6  # x25 the paper's rates, its absolute gains: the drain dominates the law's step
    law = AlineaLaw(replace(PAPER, k_p=2.4e7, r_max=1e8), rate=55e6)
    law.on_report(0.97, forecast=Forecast(0.97, drain), packet=1 / 200)  # O = O_max, W = W_min
    law.on_report(0.97, forecast=Forecast(0.97, drain), packet=1 / 200)  # settled: the rate follows the drain
    before = law.rate
    law.on_report(1.0, overflow=True, forecast=Forecast(1.0, drain), packet=1 / 200)
    assert drain * OVERFLOW_DRAIN_SHARE <= law.rate < min(before, drain)
    assert law.rate > before * OVERFLOW_CUT


def test_resting_on_the_target_raises_it_by_one_packet() -> None:
    law = AlineaLaw(PAPER)
    law.on_report(0.3)  # O = 0.3
    law.on_report(0.3, packet=1 / 200)
    assert law.o == pytest.approx(0.305)
    law.on_report(0.2, packet=1 / 200)  # below the target: nothing moves
    assert law.o == pytest.approx(0.305)


def test_silence_holds_then_halves_the_rate_and_the_next_report_restarts() -> None:
    law = AlineaLaw(PAPER, rate=1.6e6)
    law.on_report(0.15, now_ns=0, interval_ns=10_000_000)  # on the target: R unchanged
    rate = law.rate
    assert not law.tick(STALE_HOLD_INTERVALS * 10_000_000)
    assert law.rate == rate
    assert law.tick((STALE_HOLD_INTERVALS + 2) * 10_000_000)
    assert law.rate == pytest.approx(rate / 4)
    law.on_report(0.0, now_ns=(STALE_HOLD_INTERVALS + 3) * 10_000_000, interval_ns=10_000_000)
    assert law.w == PAPER.w_max  # adaptation restarted: O = O_min, W = W_max before applying


def test_live_parameter_change_keeps_a_pinned_target_pinned() -> None:
    law = AlineaLaw(PAPER)
    law.on_report(0.9)
    law.set_params(PAPER.with_changes(o_max=0.6, w_min=1e5))
    assert law.o == 0.6 and law.w == 5e5
    law.set_params(PAPER.with_changes(r_max=1e5))
    assert law.rate <= 1e5


@pytest.mark.parametrize("changes, message", [
    ({"o_min": 0.9}, "o_min = 0.9 is above o_max = 0.8"),
    ({"w_min": 9e6}, "w_min = 9e+06 is above w_max = 8e+06"),
    ({"o_max": 1.5}, "o_max = 1.5: a fraction must be in (0, 1]"),
    ({"r_max": 0}, "r_max = 0: must be > 0"),
    ({"r_floor": 3e6}, "r_floor = 3e+06 is above r_max = 2e+06"),
    ({"k_p": -1}, "k_p = -1: must be >= 0"),
])
def test_invalid_parameters_are_refused_with_their_name(changes: dict, message: str) -> None:
    with pytest.raises(ParamError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        PAPER.with_changes(**changes)


fractions = st.floats(0.01, 1.0)


@st.composite
def law_params(draw: st.DrawFn) -> LawParams:
    o_min = draw(fractions)
    o_max = draw(st.floats(o_min, 1.0))
    w_min = draw(st.floats(1e3, 1e7))
    w_max = draw(st.floats(w_min, 1e8))
    r_floor = draw(st.floats(1e3, 1e6))
    r_max = draw(st.floats(r_floor, 1e9))
    k_p = draw(st.sampled_from([0.0, 1e6, 5e7]))
    return LawParams(o_min, o_max, w_max, w_min, r_max, r_floor, k_p)


reports = st.lists(st.tuples(st.floats(0.0, 1.2), st.booleans(), st.sampled_from([0.0, 1 / 200])), max_size=60)


@settings(max_examples=200, deadline=None)
@given(law_params(), reports)
def test_state_stays_in_its_ranges(p: LawParams, seq: list[tuple[float, bool, float]]) -> None:
    law = AlineaLaw(p)
    for occ, overflow, packet in seq:
        law.on_report(occ, overflow, packet=packet)
        assert p.o_min <= law.o <= p.o_max
        assert p.w_min <= law.w <= p.w_max
        assert p.r_floor <= law.rate <= p.r_max


@settings(max_examples=100, deadline=None)
@given(law_params(), reports)
def test_identical_reports_give_identical_outputs(p: LawParams, seq: list[tuple[float, bool, float]]) -> None:
    a, b = AlineaLaw(p), AlineaLaw(p)
    out_a = [(a.on_report(o, f, packet=k), a.o, a.w) for o, f, k in seq]
    out_b = [(b.on_report(o, f, packet=k), b.o, b.w) for o, f, k in seq]
    assert out_a == out_b


class _PaperRule:
    """The law without a forecast written from the pseudo-code (SOURCES.md A) and the module's rules on top of it
    (damping, overflow cut, resting rule, a new capacity's rescale, set_params' carried state), every parameter
    read from its ``LawParams`` where it is used: the reference of the law that keeps its parameters' fields."""

    def __init__(self, p: LawParams) -> None:
        self.p, self.rate, self.o, self.w = p, p.r_floor, p.o_min, p.w_max
        self.last: float | None = None
        self.last_packet = 0.0

    def report(self, occ: float, overflow: bool, packet: float) -> float:
        p = self.p
        occ = 1.0 if overflow else max(0.0, occ)
        if packet and self.last_packet and packet != self.last_packet and self.last is not None:
            self.last *= packet / self.last_packet
        rate = self.rate + self.w * (self.o - occ)
        if p.k_p and self.o >= p.o_max and self.last is not None:
            rate -= p.k_p * (occ - self.last)
        if overflow:
            rate = min(rate, self.rate * OVERFLOW_CUT)
        self.rate = min(max(rate, p.r_floor), p.r_max)
        if self.o < occ < p.o_max:
            self.o, self.w = occ, max(self.w / 2, p.w_min)
        elif packet and abs(occ - self.o) < packet / 2 and self.o < p.o_max:
            self.o, self.w = min(self.o + packet, p.o_max), max(self.w / 2, p.w_min)
        elif occ > p.o_max:
            self.o, self.w = p.o_max, p.w_min
        self.last, self.last_packet = occ, packet
        return self.rate

    def set_params(self, p: LawParams) -> None:
        pinned = self.o >= self.p.o_max
        self.p = p
        self.o = p.o_max if pinned else min(max(self.o, p.o_min), p.o_max)
        self.w = min(max(self.w, p.w_min), p.w_max)
        self.rate = min(max(self.rate, p.r_floor), p.r_max)


@settings(max_examples=150, deadline=None)
@given(law_params(), law_params(), reports, reports, st.booleans())
def test_the_law_reads_the_parameters_it_was_last_given_as_the_paper_rule_does(
        p: LawParams, q: LawParams, before: list[tuple[float, bool, float]], after: list[tuple[float, bool, float]],
        equal: bool) -> None:
    """The law keeps its parameters' fields beside them (``AlineaLaw.params``' setter: a compiled law read each by
    name, a tenth of the loop analysis's cost): its rates, targets and gains are, to the bit, the reference's,
    which reads every field from the parameters where it uses it, before and after ``set_params`` (new values, or
    equal ones in another object) and a ``restart``."""
    law, ref = AlineaLaw(p), _PaperRule(p)
    for occ, overflow, packet in before:
        assert law.on_report(occ, overflow, packet=packet) == ref.report(occ, overflow, packet)
        assert (law.o, law.w) == (ref.o, ref.w)
    new = replace(p) if equal else q
    law.set_params(new)
    ref.set_params(new)
    assert law.params == new and (law.rate, law.o, law.w) == (ref.rate, ref.o, ref.w)
    for occ, overflow, packet in after:
        assert law.on_report(occ, overflow, packet=packet) == ref.report(occ, overflow, packet)
        assert (law.o, law.w) == (ref.o, ref.w)
    law.restart()
    assert (law.o, law.w) == (new.o_min, new.w_max)


# ---- with a forecast (BMv2's queues) ------------------------------------------------------------

def test_with_a_forecast_the_settled_law_follows_the_drain_and_damps_on_the_measured_occupancy() -> None:
    from controlplane.alinea import Forecast

    p = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=24e6)
    law = AlineaLaw(p, 1.5e6)
    law.o, law.w, law.last_occupancy = p.o_max, p.w_min, 0.7  # settled
    law.on_report(0.7, packet=0.005, forecast=Forecast(0.7, 1.2e6))
    assert law.rate == pytest.approx(1.2e6)  # on target: the drain
    law.on_report(0.705, packet=0.005, forecast=Forecast(0.7, 1.2e6))
    assert law.rate == pytest.approx(1.2e6 - 24e6 * 0.005)  # one packet more measured: damped
    law.on_report(0.705, packet=0.005, forecast=Forecast(0.75, 1.2e6))
    # 10 packets of forecast error: W's gain is 1 + 7 * (10 - 4) / 10
    assert law.rate == pytest.approx(1.2e6 - (1 + 7 * 0.6) * 5e5 * 0.05)


def test_with_a_forecast_the_start_up_ramps_on_the_forecast() -> None:
    from controlplane.alinea import Forecast

    p = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=24e6)
    law = AlineaLaw(p)
    law.on_report(0.0, packet=0.005, forecast=Forecast(0.4, 0.0))  # the queue already holds 40 % for it
    assert law.o == pytest.approx(0.4) and law.rate == p.r_floor  # ramped down, not up


def test_with_a_forecast_the_ramp_approaches_o_max_instead_of_overrunning_it() -> None:
    """The paper's ramp runs open loop up to O_max (O follows the occupancy); at ten times the rate
    the buffer then overruns the headroom above O_max within one loop delay. The brake caps the
    ramp's rate at the drain plus the room left below O_max over the approach time."""
    from controlplane.alinea import Forecast

    p = LawParams(o_min=0.15, o_max=0.95, w_max=1e4, w_min=1e4, r_max=18e6, r_floor=4e4, k_p=24e6)  # gentle W
    approach = 200 * 8000 / 0.06  # 200 packets of 8000 bits over 60 ms
    braked, free = AlineaLaw(p, 18e6), AlineaLaw(p, 18e6)
    rates = []
    for occ in (0.3, 0.6, 0.8, 0.9, 0.94):
        rates.append(braked.on_report(occ, packet=0.005, forecast=Forecast(occ, 12e6, approach)))
        free.on_report(occ, packet=0.005, forecast=Forecast(occ, 12e6))
        assert braked.rate <= 12e6 + (p.o_max + 0.005 - occ) * approach + 1e-6
    assert rates == sorted(rates, reverse=True) and rates[-1] < 12e6 + 0.02 * approach
    assert free.rate > rates[-1] + 3e6  # without the brake the ramp still runs near R_max
    starved = AlineaLaw(p, 18e6)  # an empty buffer says nothing of the drain: no brake
    assert starved.on_report(0.0, packet=0.005, forecast=Forecast(0.0, 1e5, approach)) == pytest.approx(18e6)


def test_with_a_forecast_the_damping_is_scaled_for_a_late_report() -> None:
    from controlplane.alinea import Forecast

    p = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=24e6)
    on_time, late = AlineaLaw(p, 1.2e6), AlineaLaw(p, 1.2e6)
    for law in (on_time, late):
        law.o, law.w, law.last_occupancy = p.o_max, p.w_min, 0.7
    on_time.on_report(0.685, packet=0.005, forecast=Forecast(0.7, 1.2e6))
    late.on_report(0.685, packet=0.005, forecast=Forecast(0.7, 1.2e6, damp_scale=0.2))
    assert on_time.rate == pytest.approx(1.2e6 + 24e6 * 0.015)
    assert late.rate == pytest.approx(1.2e6 + 0.2 * 24e6 * 0.015)


@pytest.mark.parametrize(("committed", "damped"), [
    (0.0, -0.025),  # nothing this node sent explains it: the whole fall
    (-0.01, -0.015),  # two of the five packets: the rest
    (-0.05, 0.0),  # ten packets short of the drain (a hole passing): none of it
    (0.01, -0.025),  # it sent more than the drain: the fall is the drain's own, whole
])
def test_with_a_forecast_only_the_fall_the_own_departures_do_not_explain_is_damped(committed: float,
                                                                                  damped: float) -> None:
    """On BMv2's queues what this node sent over a report gap was stamped a horizon before, and Ô counts it: a fall
    of the buffer that its departures explain (fewer than the drain: a hole in the stamped schedule passing) is no
    news for the damping. Read whole, it raised S4's law toward H4's 20-packet receive buffer from 0.98 to 1.73 Mb/s
    while Ô read 16-20 packets (tests/topo/random_cases/hole-burst-receive-buffer-line.yaml)."""
    law = settled_on_forecast()
    law.on_report(0.7, packet=0.005, forecast=Forecast(0.7, 1.2e6))
    rate = law.on_report(0.675, packet=0.005, forecast=Forecast(0.7, 1.2e6, committed_change=committed))
    assert rate == pytest.approx(1.2e6 - 24e6 * damped)


def test_with_a_forecast_a_rise_is_damped_whole() -> None:
    """A rise this node's departures explain is damped as ever: the cut is what keeps the buffer from overflowing."""
    law = settled_on_forecast()
    law.on_report(0.7, packet=0.005, forecast=Forecast(0.7, 1.2e6))
    assert law.on_report(0.715, packet=0.005, forecast=Forecast(0.7, 1.2e6, committed_change=0.05)) == \
        pytest.approx(1.2e6 - 24e6 * 0.015)


@given(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0))
def test_the_damped_change_is_never_more_than_the_measured_nor_against_it(change: float, committed: float) -> None:
    damped = unexplained(change, committed)
    assert abs(damped) <= abs(change)
    assert damped * change >= 0.0
    assert damped == change or (change < 0.0 and committed < 0.0)


def test_a_starved_report_does_not_keep_the_damping_of_the_report_before() -> None:
    """On a starved buffer the settled law's base is its own rate (``settled_base``), without the damping term the
    report before added: that term answers one report's change, and kept as the base it became a level. S4's law
    toward H4's receive buffer, raised by the damping as the buffer fell from 2 packets to 1, held 1.38 Mb/s of a
    1 Mb/s playout over the starved reports after it, and those stamps overflowed the buffer 0.6 s later
    (hole-burst-receive-buffer-line.yaml). The step still moves the base as before."""
    law = settled_on_forecast()
    law.last_occupancy = 0.01  # two packets
    law.on_report(0.01, packet=0.005, forecast=Forecast(0.7, 1.2e6))
    kicked = law.on_report(0.005, packet=0.005, forecast=Forecast(0.7, 1.2e6))  # one packet fewer: raised
    assert kicked == pytest.approx(1.2e6 + 24e6 * 0.005)
    assert law.on_report(0.005, packet=0.005, forecast=Forecast(0.7, 1.2e6, starved=True)) == pytest.approx(1.2e6)
    raised = law.on_report(0.005, packet=0.005, forecast=Forecast(0.69, 1.0e6, starved=True))  # below target: climbs
    assert raised == pytest.approx(1.2e6 + PAPER.w_min * 0.01)  # from its own rate, above the drain


def settled_on_forecast(o_max: float = 0.7, k_p: float = 24e6) -> AlineaLaw:
    """A law with a forecast that has reached O_max (W = W_min): with the measured occupancy
    unchanged it sets drain + g·W·(O − Ô) (with the damping term; without it, its rate + g·W·(O − Ô))."""
    law = AlineaLaw(replace(PAPER, o_max=o_max, k_p=k_p))
    law.on_report(o_max, packet=0.005, forecast=Forecast(o_max + 0.05, 1.2e6))
    assert law.o == o_max and law.w == PAPER.w_min
    return law


@pytest.mark.parametrize("error_pkts", [10, 20, 40])
def test_a_cut_on_a_guessed_fall_is_not_amplified(error_pkts: int) -> None:
    """Above target on a guessed fall of the drain, the forecast error is corrected at W alone: on
    BMv2's queues a cut is stamped for good, and the fall's length is a guess (a dip of 0.25 s cut
    with the gain stamped four times the deficit it needed: docs/howto/bmv2.md). Not guessed, the same
    error is corrected with the gain."""
    occ = 0.7 + error_pkts * 0.005
    guessed, known = settled_on_forecast(), settled_on_forecast()
    cut_guessed = 1.2e6 - guessed.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6, guessed_fall=True))
    cut_known = 1.2e6 - known.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6))
    assert cut_guessed == pytest.approx(PAPER.w_min * (occ - 0.7))
    assert cut_known > 2 * cut_guessed


def test_a_rise_on_a_guessed_fall_keeps_its_gain() -> None:
    """Below target the forecast errs toward a fuller buffer under a guessed fall: the rise keeps the gain."""
    occ = 0.7 - 20 * 0.005
    guessed, known = settled_on_forecast(), settled_on_forecast()
    assert guessed.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6, guessed_fall=True)) == \
        known.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6))


def test_without_the_damping_term_a_cut_on_a_guessed_fall_keeps_its_gain() -> None:
    """The paper's law alone (k_p = 0) has no other fast answer to a fall than the gain."""
    occ = 0.7 + 20 * 0.005
    guessed, known = settled_on_forecast(k_p=0.0), settled_on_forecast(k_p=0.0)
    assert guessed.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6, guessed_fall=True)) == \
        known.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6))
    damped = settled_on_forecast()
    assert damped.on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6, guessed_fall=True)) > \
        settled_on_forecast().on_report(0.7, packet=0.005, forecast=Forecast(occ, 1.2e6))


# ---- the newest drain (docs/background/alinea.md, "The newest drain") ---------------------------------------

@pytest.mark.parametrize(("newest", "base"), [
    (1.2e6, 1.2e6),  # as the drain
    (1.2e6 * (1 - NEWEST_FALL) + 1, 1.2e6),  # within the spread: the drain
    (1.0e6, 1.0e6),  # a capacity drop's two late departures (8 ms against 6.7): followed
    (0.3e6, 1.2e6 * (1 - NEWEST_CAP)),  # a stall: followed no deeper than NEWEST_CAP
    (0.0, 1.2e6),  # none
])
def test_the_settled_law_follows_the_newest_drain_only_when_it_has_clearly_fallen(newest: float, base: float) -> None:
    forecast = Forecast(0.7, 1.2e6, newest_bps=newest)
    assert settled_base(forecast) == pytest.approx(base)
    law = settled_on_forecast()
    assert law.on_report(0.7, packet=0.005, forecast=forecast) == pytest.approx(base)


def test_the_newest_drain_is_followed_for_one_report_and_never_on_a_guessed_fall() -> None:
    law = settled_on_forecast()
    assert law.on_report(0.7, packet=0.005, forecast=Forecast(0.7, 1.2e6, newest_bps=1.0e6)) == pytest.approx(1.0e6)
    assert law.on_report(0.7, packet=0.005, forecast=Forecast(0.7, 1.2e6, newest_bps=1.2e6)) == pytest.approx(1.2e6)
    guessed = Forecast(0.7, 1.1e6, guessed_fall=True, newest_bps=0.9e6)  # the fall is in the drain already
    assert settled_base(guessed) == pytest.approx(1.1e6)


def test_a_settled_law_on_a_starved_buffer_does_not_follow_its_own_rate_down() -> None:
    """A starved buffer's drain is what this node sent (0 before its window spans its shortest time):
    the settled law's base is then its own rate, and the step (below target) raises it. Read as the
    buffer's capacity, the drain took a 2-packet buffer's law from 19.9 Mb/s to its floor in one report
    (tests/topo/random_cases/starved-two-packet-buffer.yaml)."""
    p = replace(PAPER, o_max=0.8, r_max=20e6, r_floor=4e5, k_p=24e6)
    law = AlineaLaw(p, 19.9e6)
    for _ in range(2):  # a 2-packet buffer reads 1 packet (0.5): at rest there, its target is raised to O_max
        law.on_report(0.5, packet=0.5, forecast=Forecast(0.5, 0.0, starved=True))
    assert law.o == p.o_max
    before = law.rate
    unmeasured = law.on_report(0.5, packet=0.5, forecast=Forecast(0.5, 0.0, starved=True))
    assert unmeasured > before
    own = law.on_report(0.5, packet=0.5, forecast=Forecast(0.5, 2e6, starved=True))  # the drain lags its rate
    assert own > unmeasured
    assert settled_base(Forecast(0.5, 2e6, starved=True), 1e6) == 2e6  # a drain above the rate is kept
    fed = settled_on_forecast()  # not starved: the drain is the base, however far below the rate
    assert fed.on_report(0.7, packet=0.005, forecast=Forecast(0.7, 0.3e6)) == pytest.approx(0.3e6)


def test_the_newest_drain_is_not_the_ramps() -> None:
    """Before O has reached O_max the ramp runs as the paper's (its rate + W·(O − Ô))."""
    p = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=24e6)
    a, b = AlineaLaw(p, 1.5e6), AlineaLaw(p, 1.5e6)
    assert a.on_report(0.3, packet=0.005, forecast=Forecast(0.3, 1.2e6)) == \
        b.on_report(0.3, packet=0.005, forecast=Forecast(0.3, 1.2e6, newest_bps=0.6e6))
