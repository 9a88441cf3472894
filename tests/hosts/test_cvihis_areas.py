"""The 7 areas: target below the middle, gradient priority only beside the target."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hosts.cvihis import TARGET_AREA, Command, CvihisParams
from hosts.cvihis.areas import (
    EXTREME_AREAS,
    GRADIENT_AREAS,
    area_bounds,
    classify,
    decide,
    gradient_sign,
    step_packets,
)

P = CvihisParams()
delays = st.integers(min_value=-(10**15), max_value=10**15)
spans = st.integers(min_value=1, max_value=10**12)
offsets = st.integers(min_value=-(10**15), max_value=10**15)


def increases(c: Command) -> bool:
    return step_packets(c, P) > 0


def decreases(c: Command) -> bool:
    return step_packets(c, P) < 0


@st.composite
def edge_sets(draw: st.DrawFn) -> tuple[float, ...]:
    """Any valid positioning: 6 increasing fractions in (0, 1), the target's top at most 0.5."""
    lower = sorted(draw(st.sets(st.integers(1, 500), min_size=4, max_size=4)))
    upper = sorted(draw(st.sets(st.integers(lower[3] + 1, 999), min_size=2, max_size=2)))
    return tuple(c / 1000 for c in (*lower, *upper))


@given(delays, spans, edge_sets(), st.floats(min_value=0, max_value=1))
def test_target_area_lies_strictly_below_the_middle(lo: int, span: int, edges: tuple[float, ...],
                                                    x: float) -> None:
    params = CvihisParams(area_edges=edges, min_span_ns=1, initial_span_ns=1)
    hi = lo + span
    middle = (lo + hi) / 2
    t_lo, t_hi = area_bounds(TARGET_AREA, 0, span, params)  # relative: exact at any magnitude
    assert 0 < t_lo < t_hi <= span / 2
    owd = lo + x * span
    if classify(owd, lo, hi, params) == TARGET_AREA:
        assert owd < middle


@given(delays, spans, st.floats(min_value=-0.5, max_value=1.5), offsets)
def test_area_depends_only_on_delay_differences(lo: int, span: int, x: float, offset: int) -> None:
    owd = lo + round(x * span)
    assert classify(owd, lo, lo + span, P) == classify(owd + offset, lo + offset, lo + span + offset, P)


@given(delays, spans, st.lists(st.floats(min_value=-0.5, max_value=1.5), min_size=2, max_size=20))
def test_areas_are_ordered_by_delay(lo: int, span: int, xs: list[float]) -> None:
    owds = sorted(lo + x * span for x in xs)
    areas = [classify(o, lo, lo + span, P) for o in owds]
    assert areas == sorted(areas)
    assert all(0 <= a <= 6 for a in areas)


@given(st.integers(0, 6))
def test_lower_areas_increase_upper_areas_decrease_without_gradient(area: int) -> None:
    command = decide(area, 0)
    if area < TARGET_AREA:
        assert increases(command)
    elif area > TARGET_AREA:
        assert decreases(command)
    else:
        assert command is Command.HOLD


@given(st.integers(0, 6), st.sampled_from([-1, 0, 1]))
def test_gradient_overrides_the_area_only_in_the_four_inner_areas(area: int, gradient: int) -> None:
    with_gradient = decide(area, gradient)
    if area in EXTREME_AREAS or area == TARGET_AREA:
        assert with_gradient is decide(area, 0)  # the gradient is ignored
        return
    assert area in GRADIENT_AREAS
    disagrees = (area < TARGET_AREA and gradient > 0) or (area > TARGET_AREA and gradient < 0)
    if disagrees:  # the gradient wins, with the gradient step in its own direction
        expected = Command.GRADIENT_DECREASE if gradient > 0 else Command.GRADIENT_INCREASE
        assert with_gradient is expected
    else:
        assert with_gradient is decide(area, 0)


def test_extreme_areas_use_the_strong_steps_and_inner_areas_smaller_ones() -> None:
    assert decide(0, 1) is Command.STRONG_INCREASE
    assert decide(6, -1) is Command.STRONG_DECREASE
    sizes = [abs(step_packets(decide(a, 0), P)) for a in range(7)]
    assert sizes[0] > sizes[1] > sizes[2] > sizes[3] == 0 < sizes[4] < sizes[5] < sizes[6]


@given(st.integers(-(10**9), 10**9), st.integers(0, 10**6))
def test_gradient_sign_has_a_symmetric_dead_band(delta: int, band: int) -> None:
    assert gradient_sign(delta, band) == -gradient_sign(-delta, band)
    assert (gradient_sign(delta, band) == 0) == (abs(delta) <= band)
