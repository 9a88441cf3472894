"""The law on a buffer starved within the drain's window (controlplane/forecast.py, ``QueueForecast.law_forecast``;
controlplane/alinea.py, ``Forecast.gap_bps``, ``Forecast.passing_bps`` and ``settled_base``): the window's drain is
then what this hop sent, a lower bound of what the buffer takes."""

from __future__ import annotations

from controlplane.alinea import AlineaLaw, Forecast, settled_base
from controlplane.forecast import QueueForecast
from controlplane.params import LawParams

MS = 1_000_000
GAP = 5 * MS
CAPACITY = 300  # packets of the downstream buffer
BITS = 8000
LAW = LawParams(o_min=0.15, o_max=0.8, w_max=1e6, w_min=1e5, r_max=1e9, r_floor=1e6, k_p=0.0)


def ramp_then_burst(burst: int) -> tuple[AlineaLaw, QueueForecast, float]:
    """A hop at R_max whose queue sends what reaches it, the sources ramping (10 more packets each 5 ms report
    gap), into a buffer that drains all it gets (1 packet at every report); then a report finds ``burst`` packets
    there (a burst off a faster link). Returns the law, the forecast and what reached the buffer over that last
    gap (b/s)."""
    law, f = AlineaLaw(LAW, LAW.r_max), QueueForecast()
    t = fwd = 0
    for k in range(40):  # 0.2 s: longer than the drain's shortest window
        t += GAP
        fwd += 10 * (k + 1)
        occupancy = burst if k == 39 else 1
        pkts = f.update(t, occupancy, fwd, fwd, 0, drained=fwd - occupancy + 1, drained_ns=t)
        law.on_report(occupancy / CAPACITY, packet=1 / CAPACITY, forecast=f.law_forecast(pkts, CAPACITY, BITS))
    return law, f, 400 * BITS / (GAP / 1e9)


def test_a_burst_on_a_buffer_starved_within_the_window_is_not_braked_below_what_it_drained_last() -> None:
    """The window's drain lags the ramp (what the hop sent over the last 0.1 s, half of what it sends now): read as
    what the buffer takes, the brake cut the hop to it plus the room over the approach time, below what the buffer
    drained over the last gap, and the hop's own buffer filled (grant-burst-line.yaml)."""
    law, f, arrived = ramp_then_burst(3)
    assert f.starved_in_window
    assert f.expected_pps * BITS < 0.8 * arrived  # the window lags
    assert law.rate >= 0.95 * arrived


def test_a_buffer_that_has_held_packets_over_the_whole_window_is_braked_on_its_drain() -> None:
    """Once no report in the drain's window found the buffer starved, its drain is what it takes: the brake caps
    the ramp there as before, whatever a gap's drain says."""
    law, f = AlineaLaw(LAW, LAW.r_max), QueueForecast()
    t = fwd = drained = 0
    for k in range(60):  # 0.3 s at 20 packets in and out per gap, the buffer holding 5; the last gap drains 60
        t += GAP
        fwd += 20 if k < 59 else 60
        drained += 20 if k < 59 else 60
        pkts = f.update(t, 5, fwd, fwd, 0, drained=drained, drained_ns=t)
        law.on_report(5 / CAPACITY, packet=1 / CAPACITY, forecast=f.law_forecast(pkts, CAPACITY, BITS))
    assert not f.starved_in_window
    assert law.rate < 60 * BITS / (GAP / 1e9)


def test_a_settled_law_does_not_follow_the_newest_drain_down_while_the_window_holds_starvation() -> None:
    """The drain is then what this hop sent, and a newest drain below it this hop's own spacing: not a fall of
    what the buffer takes (burst-brake-merge.yaml)."""
    fell = Forecast(0.5, 9e6, newest_bps=7e6)
    assert settled_base(fell, 9.5e6) < 9e6  # a fall of the drain, followed
    fell.window_starved = True
    assert settled_base(fell, 9.5e6) == 9e6


def test_a_settled_law_whose_window_has_not_measured_a_drain_keeps_its_own_rate() -> None:
    """A drain of 0 is none yet: as the base it cut a law to its floor as its ramp ended."""
    unmeasured = Forecast(0.9, 0.0, window_starved=True)
    assert settled_base(unmeasured, 9.5e6) == 9.5e6
    assert settled_base(Forecast(0.9, 0.0), 9.5e6) == 0.0  # a drain measured as 0 (no starved report) stays the base


def test_a_settled_law_while_the_window_holds_starvation_is_no_lower_than_what_a_passing_buffer_drained() -> None:
    """While the drain's window holds a starved report the drain is a lower bound of what the buffer takes, and a
    buffer holding no more than the newest gap brought it took all it was given: the settled base is the higher of
    the known lower bounds (``Forecast.passing_bps``: the newest gap's drain, the window's). Settled on the drain
    alone, S4's law toward S3's 5-packet buffer sat at 15.3 Mb/s of a 20 Mb/s exit while each gap drained 17-21
    (tests/topo/random_cases/mixed-frame-exit-shortfall-long-link.yaml). Not once the buffer holds more than the gap
    brought (the gap's drain is then one report's count of a backlog's), nor while Ô is above the target, nor above
    the law's own rate."""
    _, f, _ = ramp_then_burst(5)
    passing = f.law_forecast(f.forecast_pkts, CAPACITY, BITS)
    assert f.passing and passing.window_starved and not passing.starved
    assert passing.passing_bps == passing.gap_bps > passing.drain_bps
    assert settled_base(passing, LAW.r_max) == passing.passing_bps
    assert settled_base(passing, LAW.r_max, below=False) == passing.drain_bps  # Ô above the target: cut on the drain
    own = (passing.drain_bps + passing.passing_bps) / 2  # the law's own rate between: the bound only keeps it
    assert settled_base(passing, own) == own
    assert settled_base(Forecast(0.6, 15e6, window_starved=True, passing_bps=12e6)) == 15e6  # a drain above it: kept
    fwd = 10 * 40 * 41 // 2 + 2  # then 2 packets in a gap that finds 5 in the buffer
    pkts = f.update(41 * GAP, 5, fwd, fwd, 0, drained=fwd - 4, drained_ns=41 * GAP)
    held = f.law_forecast(pkts, CAPACITY, BITS)
    assert not f.passing and held.window_starved and held.passing_bps == 0.0
    assert settled_base(held) == held.drain_bps
