"""No integrator windup in the settled law (controlplane/alinea.py, module docstring "No windup"): while the
downstream buffer reads starved, the rate climbs no further than the brake's cap on what this hop sent (the
buffer's drain, which on a starved buffer is this hop's own sending) plus the room below O_max over the approach
time. A rate the hop never exercises (its own input is held upstream) must not grow into one that BMv2's queue
stamps on the next burst."""

from __future__ import annotations

from controlplane.alinea import AlineaLaw, Brake, Forecast
from controlplane.params import LawParams
from tests.topo.randomcheck import judge_case

CAPACITY = 39  # packets of the downstream buffer
BITS = 1448 * 8
GAP_S = 0.0023  # the report gap
APPROACH = CAPACITY * BITS / (6 * GAP_S)  # the buffer over the brake's approach time (BRAKE_GAPS gaps), b/s
EXIT = 20e6  # what the buffer takes, b/s
LAW = LawParams(o_min=0.15, o_max=0.8, w_max=9e6, w_min=0.9e6, r_max=500e6, r_floor=1e6, k_p=2e6)


def settled(rate: float) -> AlineaLaw:
    """A law whose target has reached O_max (a report found the buffer past it), at ``rate``."""
    law = AlineaLaw(LAW, rate)
    law.on_report(35 / CAPACITY, packet=1 / CAPACITY, forecast=Forecast(35 / CAPACITY, EXIT, APPROACH))
    assert law.o == LAW.o_max
    law.rate = rate
    return law


def starved_reports(law: AlineaLaw, reports: int, sending_cap: float) -> list[float]:
    """Reports of a buffer that drains all that reaches it (1 packet at each report): the hop sends the lower of
    its rate and ``sending_cap`` (what reaches it), and reads that as the buffer's drain."""
    rates = []
    for _ in range(reports):
        sent = min(law.rate, sending_cap, EXIT)
        rates.append(law.on_report(1 / CAPACITY, packet=1 / CAPACITY,
                                   forecast=Forecast(1 / CAPACITY, sent, APPROACH, starved=True,
                                                     window_starved=True, gap_bps=sent)))
    return rates


def test_a_rate_not_exercised_does_not_climb_while_the_buffer_reads_starved() -> None:
    """Issue 46's 7-switch tree (fuzz seed 2, fail-6): S2's law toward S1 climbed 5.6 Mb/s a report from 27 to 379
    Mb/s while S1's buffer read 1 packet, S2 sending 10 Mb/s (its input held upstream); the next burst left S2 at
    379 Mb/s into a 20 Mb/s exit and 266 packets overflowed. The rate stays within the brake's cap on what was
    sent (or where it was)."""
    law = settled(27e6)
    rates = starved_reports(law, 60, sending_cap=10e6)
    cap = Brake(10e6, APPROACH).cap(LAW.o_max, 1 / CAPACITY, 1 / CAPACITY)
    assert max(rates) <= max(27e6, cap)
    assert max(rates) < 0.2 * LAW.r_max


def test_a_rate_that_is_exercised_still_climbs_to_what_the_buffer_takes() -> None:
    """A settled law at its floor in front of a buffer that drains all it gets (starved-two-packet-buffer.yaml):
    what it sends is its rate, so the cap moves up with it and the rate reaches what the buffer takes."""
    law = settled(LAW.r_floor)
    rates = starved_reports(law, 60, sending_cap=LAW.r_max)
    assert max(rates) >= EXIT


def test_the_tree_whose_settled_law_wound_up_loses_nothing() -> None:
    """tests/topo/random_cases/settled-windup-tree.yaml (make fuzz-topo seed 2, fail-6): the 7-switch tree of the
    first test, which lost 266 packets at S1's buffer from S2, every flow ALINEA and the loop analysis silent."""
    verdict = judge_case("settled-windup-tree.yaml")
    assert verdict.problems == []
