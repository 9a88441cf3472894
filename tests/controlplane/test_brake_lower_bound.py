"""The start-up brake on a drain that is only a lower bound (controlplane/alinea.py, ``AlineaLaw.braked_from``):
while the drain's window holds a report that found the buffer starved, the drain is what this hop sent, and a cut
to it plus the room over the approach time may leave the rate below what the buffer takes. The ramp then climbs
back toward the rate it was cut from at the brake's own pace (its cap on what the buffer is known to take), not
at the law's step, W·(O − O(k)), which a buffer of a hundred small frames makes a few kb/s a report."""

from __future__ import annotations

from controlplane.alinea import AlineaLaw, Forecast
from controlplane.params import LawParams

CAPACITY = 69  # packets of the downstream buffer
BITS = 1600  # 200 B frames
GAP_S = 0.02  # the report gap
APPROACH = CAPACITY * BITS / (6 * GAP_S)  # the buffer over the brake's approach time (BRAKE_GAPS gaps), b/s
PLAYOUT = 10e6  # what the buffer takes, b/s
# W as derived for such a buffer (kb/s per unit of occupancy): the step is ~3 kb/s a report below O_min
LAW = LawParams(o_min=0.15, o_max=0.8, w_max=24e3, w_min=2.4e3, r_max=200e6, r_floor=0.1e6, k_p=0.0)


def playout(reports: int, window_starved: bool) -> tuple[AlineaLaw, list[float], float]:
    """A hop at R_max into a buffer that plays out at ``PLAYOUT``, fed by sources that ramp (what the hop sends
    is the lower of its rate and what reaches it, 3.8 Mb/s then 0.4 Mb/s more each gap). The first report finds
    a burst of 2 packets there; the drain the hop reads is what left the buffer over the last gap, and
    ``window_starved`` says whether the forecast marks it a lower bound. Returns the law, its rates and the
    fullest the buffer got (packets)."""
    law = AlineaLaw(LAW, LAW.r_max)
    backlog, drained, fullest, rates = 2.0, 3.8e6, 2.0, []
    for k in range(reports):
        occupancy = backlog if backlog > 1 else 1.0
        rates.append(law.on_report(occupancy / CAPACITY, packet=1 / CAPACITY,
                                   forecast=Forecast(round(occupancy) / CAPACITY, drained, APPROACH,
                                                     window_starved=window_starved,
                                                     gap_bps=drained if window_starved else 0.0)))
        sent = min(law.rate, 3.8e6 + 0.4e6 * (k + 1)) * GAP_S / BITS  # packets over the next gap
        out = min(backlog + sent, PLAYOUT * GAP_S / BITS)
        backlog += sent - out
        drained = out * BITS / GAP_S
        fullest = max(fullest, backlog)
    return law, rates, fullest


def test_a_cut_on_a_lower_bound_drain_climbs_back_at_the_brakes_pace() -> None:
    """brake-starved-playout-small-gain.yaml (seed 13 of make fuzz-topo): S1 -> H3 cut from 200 to 4.55 Mb/s on a
    2-packet burst in a 69-packet playout buffer starved at the reports before, then climbed 15 kb/s a report (5.2
    Mb/s at 1.5 s) while H3 played out 10 Mb/s and S1's buffers behind overflowed. The rate must reach the playout
    within the brake's approach time and a few gaps more, and the buffer still stay below O_max."""
    law, rates, fullest = playout(25, window_starved=True)
    assert rates[0] < 0.5 * PLAYOUT  # the brake cut, to what the burst's gap drained plus the room
    assert max(rates[1:15]) >= PLAYOUT
    assert fullest <= LAW.o_max * CAPACITY


def test_a_cut_on_a_measured_drain_is_left_to_the_laws_step() -> None:
    """A drain measured over a window in which the buffer never starved is what it takes: the brake's cut there
    leaves the rate above it (the room term), and the law's own step goes on from the cut."""
    law = AlineaLaw(LAW, LAW.r_max)
    measured = Forecast(5 / CAPACITY, PLAYOUT, APPROACH)
    cut = law.on_report(5 / CAPACITY, packet=1 / CAPACITY, forecast=measured)
    assert PLAYOUT < cut < LAW.r_max
    emptied = Forecast(1 / CAPACITY, 2 * PLAYOUT, APPROACH)  # the buffer emptied: its drain read high
    assert law.on_report(1 / CAPACITY, packet=1 / CAPACITY, forecast=emptied) < cut + 0.1 * PLAYOUT


def test_a_cut_on_a_gap_that_began_on_a_filled_buffer_is_left_to_the_laws_step() -> None:
    """The window holds a starved report, but the newest gap began on a buffer holding packets: its drain is a
    measure of what the buffer takes, and the brake's cut to it is not a guess to undo."""
    law = AlineaLaw(LAW, LAW.r_max)
    law.on_report(3 / CAPACITY, packet=1 / CAPACITY, forecast=Forecast(3 / CAPACITY, 2 * LAW.r_max, APPROACH,
                                                                       window_starved=True))
    assert law.rate == LAW.r_max  # not cut: the buffer drained more than R_max
    cut = law.on_report(5 / CAPACITY, packet=1 / CAPACITY,
                        forecast=Forecast(5 / CAPACITY, 3.8e6, APPROACH, window_starved=True, gap_bps=3.8e6))
    assert cut < 0.5 * PLAYOUT
    starved = Forecast(1 / CAPACITY, 3.8e6, APPROACH, window_starved=True, gap_bps=8e6)  # the sources ramped
    assert law.on_report(1 / CAPACITY, packet=1 / CAPACITY, forecast=starved) < cut + 0.1 * PLAYOUT


def test_an_overflow_ends_the_climb_back() -> None:
    """An overflow says the rate was too high for the buffer: the rate the brake cut is no longer one to return to."""
    law = AlineaLaw(LAW, LAW.r_max)
    starved = Forecast(2 / CAPACITY, 3.8e6, APPROACH, window_starved=True, gap_bps=3.8e6)
    law.on_report(2 / CAPACITY, packet=1 / CAPACITY, forecast=starved)
    assert law.braked_from == LAW.r_max
    law.on_report(1.0, overflow=True, packet=1 / CAPACITY, forecast=starved)
    assert law.braked_from == 0.0
