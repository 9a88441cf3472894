"""A burst into a starved buffer (controlplane/forecast.py, ``QueueForecast.burst_starved``).

Behind a link faster than the buffer's own, a buffer that drains all it is fed reads a few packets
when a burst arrives. While the drain's window holds a starved reading (at most ``IDLE_PKTS``) the
drain is what this hop sent there; a reading no larger than the feeding link deposits beyond that
drain within one report gap, nor than the law's lowest target, is starved too: no start-up brake,
its forecast its reading. A reading above that, or any reading once the window holds no starved
one, is regulated as before."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from controlplane.alinea import AlineaLaw
from controlplane.forecast import DRAIN_WINDOW_MIN_S, IDLE_PKTS, QueueForecast
from controlplane.params import LawParams

MS = 1_000_000
PERIOD_MS = 10
CAPACITY = 200
BITS = 8000
LAW = LawParams(o_min=0.15, o_max=0.8, w_max=8e6, w_min=5e5, r_max=20e6, r_floor=4e4, k_p=0.0)
TARGET_PKTS = LAW.o_min * CAPACITY


def fed(pps: int, starved_reports: int, readings: list[int]) -> tuple[QueueForecast, int]:
    """A buffer downstream drained at ``pps`` (this hop's queue holds one packet), first reading 1 packet
    at ``starved_reports`` reports 10 ms apart, then ``readings``; returns the forecast and the time."""
    f = QueueForecast()
    per = pps * PERIOD_MS // 1000
    t, deq, occ = 0, 0, 1
    for reading in [1] * starved_reports + readings:
        deq += per + reading - occ  # its departures: the drain plus what it gained
        occ = reading
        f.update(t, reading, deq + 1, deq, pps)
        t += PERIOD_MS * MS
    return f, t


def ramp_rate(f: QueueForecast, link_pps: float, rate: float) -> tuple[float, float]:
    """The rate a law in its ramp (target O_min) at ``rate`` sets on the newest report, with the burst
    rule (``link_pps``) and without it."""
    out = []
    for link in (link_pps, 0.0):
        law = AlineaLaw(LAW, rate)
        fc = f.law_forecast(f.forecast_pkts, CAPACITY, BITS, link, TARGET_PKTS)
        out.append(law.on_report(f.occupancy / CAPACITY, packet=1 / CAPACITY, forecast=fc))
    return out[0], out[1]


@given(
    pps=st.integers(100, 1000),
    link_x=st.integers(2, 20),
    share=st.floats(0.0, 1.0),
    rate=st.floats(1e6, 20e6),
    starved=st.integers(8, 30),
)
def test_a_reading_within_the_burst_bound_after_a_starved_one_never_brakes(
    pps: int, link_x: int, share: float, rate: float, starved: int
) -> None:
    link_pps = float(pps * link_x)
    f, _ = fed(pps, starved, [])
    bound = min(f.burst_pkts(link_pps), TARGET_PKTS)
    if bound < IDLE_PKTS + 1:
        return
    reading = IDLE_PKTS + 1 + math.floor(share * (bound - IDLE_PKTS - 1))
    f, _ = fed(pps, starved, [reading])
    assume(reading <= min(f.burst_pkts(link_pps), TARGET_PKTS))  # the drain as read with the burst in it
    fc = f.law_forecast(f.forecast_pkts, CAPACITY, BITS, link_pps, TARGET_PKTS)
    assert fc.starved and fc.approach_bps == 0.0
    assert fc.occupancy == reading / CAPACITY  # the reading, not this hop's queue against that drain
    with_rule, _ = ramp_rate(f, link_pps, rate)
    assert with_rule >= rate  # below the law's target and no brake: the ramp never cuts


@given(pps=st.integers(100, 1000), link_x=st.integers(2, 20), reading=st.integers(IDLE_PKTS + 1, CAPACITY))
def test_a_reading_held_longer_than_the_drain_window_is_regulated(
    pps: int, link_x: int, reading: int
) -> None:
    """Held above IDLE_PKTS for longer than the drain's window, a reading is a queue the law regulates,
    however small: the start-up brake applies."""
    held = math.ceil(DRAIN_WINDOW_MIN_S * 1000 / PERIOD_MS) + 2
    f, _ = fed(pps, 20, [reading] * held)
    assert not f.starved_in_window()
    fc = f.law_forecast(f.forecast_pkts, CAPACITY, BITS, float(pps * link_x), TARGET_PKTS)
    assert not fc.starved and fc.approach_bps > 0.0
    fast = LAW.with_changes(r_max=1e9)
    law = AlineaLaw(fast, fast.r_max)  # far above the drain and the buffer's approach: the brake caps it
    cut = law.on_report(reading / CAPACITY, packet=1 / CAPACITY, forecast=fc)
    assert cut < fast.r_max


@given(pps=st.integers(100, 1000), link_x=st.integers(2, 20), above=st.integers(1, 50))
def test_a_reading_above_the_burst_bound_is_regulated_at_once(pps: int, link_x: int, above: int) -> None:
    link_pps = float(pps * link_x)
    f, _ = fed(pps, 20, [])
    bound = min(f.burst_pkts(link_pps), TARGET_PKTS)
    reading = max(IDLE_PKTS + 1, math.floor(bound) + above)
    if reading > CAPACITY:
        return
    f, _ = fed(pps, 20, [reading])
    assert f.starved_in_window()
    fc = f.law_forecast(f.forecast_pkts, CAPACITY, BITS, link_pps, TARGET_PKTS)
    assert not fc.starved and fc.approach_bps > 0.0


def test_without_the_feeding_link_only_an_idle_reading_is_starved() -> None:
    """The owners that pass no link (the fluid model, topo/fluid_control.py) keep the per-report test."""
    f, _ = fed(200, 20, [3])
    assert not f.law_forecast(f.forecast_pkts, CAPACITY, BITS).starved
    assert f.law_forecast(f.forecast_pkts, CAPACITY, BITS, 4000.0, TARGET_PKTS).starved
