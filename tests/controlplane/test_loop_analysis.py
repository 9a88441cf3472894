"""The loop analysis (controlplane/loop_analysis.py): the characteristic equation with the delay,
and the fluid model that runs the law itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.alinea import AlineaLaw
from controlplane.loop_analysis import (
    Loop,
    characteristic_roots,
    delay_intervals,
    fluid_peak,
    max_stable_scale,
    min_buffer,
    spectral_radius,
)
from controlplane.params import LawParams

PAPER = LawParams(o_min=0.15, o_max=0.95, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=24e6)
A = 0.01 / (200 * 8000)  # T / (C L) of the paper's buffers


@given(aw=st.floats(1e-4, 3.9), ak=st.floats(0, 0.99))
@settings(max_examples=60, deadline=None)
def test_without_delay_the_roots_are_docs_quadratic(aw: float, ak: float) -> None:
    """d = 0 is docs/background/alinea.md's z^2 - (2 - aW - aK) z + (1 - aK)."""
    got = np.sort_complex(characteristic_roots(1.0, aw, ak, 0))
    want = np.sort_complex(np.roots([1.0, -(2 - aw - ak), 1 - ak]))
    assert np.allclose(got, want, atol=1e-9)


def test_pure_integral_without_delay_is_marginal_and_damping_settles_it() -> None:
    assert spectral_radius(A, PAPER.w_min, 0.0, 0) == pytest.approx(1.0, abs=1e-9)
    k = 1e6  # small enough for complex roots, whose modulus is sqrt(1 - aK)
    assert spectral_radius(A, PAPER.w_min, k, 0) == pytest.approx(np.sqrt(1 - A * k))
    assert spectral_radius(A, PAPER.w_min, PAPER.k_p, 0) < 1.0  # the shipped k_p: two real roots


def test_delay_destabilises_the_shipped_gains() -> None:
    radii = [spectral_radius(A, PAPER.w_min, PAPER.k_p, d) for d in (0, 2, 5, 11, 95)]
    assert radii == sorted(radii)  # each interval of delay costs margin
    assert radii[1] < 1.0 < radii[3]  # the paper's 3 ms links settle, 50 ms links do not


def test_smaller_gains_restore_stability_at_a_long_delay() -> None:
    s = max_stable_scale(A, PAPER.w_min, PAPER.k_p, 95)
    assert 0 < s < 1
    assert spectral_radius(A, PAPER.w_min * s * s, PAPER.k_p * s, 95) < 1.0
    assert spectral_radius(A, PAPER.w_min * (1.2 * s) ** 2, PAPER.k_p * 1.2 * s, 95) >= 1.0


def test_delay_intervals_count_the_report_sampling() -> None:
    loop = Loop(PAPER, 200, 8000, 0.01, 0.007, 1.2e6)
    assert delay_intervals(loop) == 2  # 7 ms + 5 ms of sampling, in 10 ms intervals
    assert delay_intervals(Loop(PAPER, 200, 8000, 0.01, 0.0, 1.2e6)) == 1


def test_fluid_peak_stays_below_full_on_the_paper_and_not_with_a_faster_link() -> None:
    paper = Loop(PAPER, 200, 8000, 0.01, 0.007, 1.2e6)
    peak = fluid_peak(paper, 40)
    assert PAPER.o_max <= peak < 1.0  # it reaches its target and overshoots a little
    faster = Loop(LawParams(**{**PAPER.__dict__, "r_max": 20e6}), 200, 8000, 0.01, 0.007, 12e6)
    assert fluid_peak(faster, 40) > 1.0  # ten times the rate, the same gains: the ramp overshoots


def test_a_capacity_drop_raises_the_peak() -> None:
    law = LawParams(**{**PAPER.__dict__, "o_max": 0.7})
    steady = Loop(law, 200, 8000, 0.01, 0.007, 1.2e6)
    dropped = Loop(law, 200, 8000, 0.01, 0.007, 1.2e6, drop_to_bps=0.4e6)
    assert fluid_peak(dropped, 40, drop_at_s=20) > fluid_peak(steady, 40)


def test_min_buffer_is_the_smallest_that_keeps_the_peak_below_full() -> None:
    loop = Loop(PAPER, 200, 8000, 0.01, 0.1, 1.2e6)
    c = min_buffer(loop, 40)
    assert c is not None and c > 1
    assert fluid_peak(Loop(PAPER, c, 8000, 0.01, 0.1, 1.2e6), 40) < 1.0
    assert min_buffer(Loop(PAPER, 200, 8000, 0.01, 0.007, 1.2e6), 40) <= 200


def _fluid_peak_interpreted(loop: Loop, duration_s: float, drop_at_s: float | None) -> float:
    """fluid_peak's loop as it was before its steps moved into controlplane/fluid_laws.py (issue 46): the pending
    rates a list shifted by one each step, ``max`` where the compiled steps write the comparison out. An
    independent form of the same computation, the reference."""
    t_step = loop.interval_s
    law = AlineaLaw(loop.law)
    applied = [law.rate] * (delay_intervals(loop) + 1)
    x, peak = 0.0, 0.0
    drop_at = duration_s / 2 if drop_at_s is None else drop_at_s
    for k in range(int(duration_s / t_step)):
        t = k * t_step
        mu = loop.drain_bps if loop.drop_to_bps is None or t < drop_at else loop.drop_to_bps
        x = max(0.0, x + (applied[0] - mu) * t_step * (1 / loop.packet_bits))
        peak = max(peak, x)
        rate = law.on_report(x / loop.buffer_pkts, False, int(t * 1e9), int(t_step * 1e9), 1 / loop.buffer_pkts)
        applied = applied[1:] + [rate]
    return peak / loop.buffer_pkts


@given(buffer=st.integers(5, 400), bits=st.sampled_from([800, 8000, 12000]), interval=st.floats(1e-4, 0.02),
       delay=st.floats(0.0, 0.1), drain=st.one_of(st.floats(1e4, 5e6), st.integers(10_000, 5_000_000)),
       drop=st.one_of(st.none(), st.floats(0.0, 2e6), st.integers(0, 2_000_000)),
       drop_at=st.one_of(st.none(), st.floats(0.0, 3.0), st.integers(0, 3)), duration=st.floats(0.05, 3.0))
@settings(max_examples=80, deadline=None)
def test_fluid_peak_compiled_steps_are_the_interpreted_loops(buffer: int, bits: int, interval: float, delay: float,
                                                             drain: float, drop: float | None, drop_at: float | None,
                                                             duration: float) -> None:
    """The steps in controlplane/fluid_laws.py give the interpreted loop's peak to the bit (ints given as rates too)."""
    loop = Loop(PAPER, buffer, bits, interval, delay, drain, drop)
    assert fluid_peak(loop, duration, drop_at) == _fluid_peak_interpreted(loop, duration, drop_at)
