"""With per-destination classes the fluid model keeps what the data plane and the agents keep per class.

Issue 46: the head-of-line experiment's ``alinea-classes`` (``options.classes``: a buffer cell, a priority
queue and a law per (port, destination class), docs/howto/fabric.md) got ``alinea``'s warnings word for
word: the model had one buffer, one FIFO and one law per port. The shipped 2 x 2 fabric, seed 1, lost 13
packets, 9 of them in leaf 2's buffers from the spines with no warning. Now a class's fluid fills its own cell, waits in
its own priority queue (the classes of a port share its link, the highest first) and its law, set as the
switch agent sets it (R_max cut to a fair share while other classes of the port are busy), reads its cell.
"""

from __future__ import annotations

import pytest

from runtime.fluid import FluidPlant
from tests.topo.analysis.hol_laws import lossy_laws, warned_laws
from topo.experiments.hol import HolSetup, hol_topology


@pytest.mark.xfail(strict=True, reason=(
    "issue 46, the head-of-line family: seed 1 loses 1 packet at 2.84 s in leaf2's buffer from spine1 (class 0, "
    "its law's loop swinging the buffer 50 -> 100 % in 60 ms), where the model peaks at 96 % (4 packets of room "
    "for 2 feeding links). It warned at 98.1 % while its idle buffers reported at every interval; with the data "
    "plane's report rule it warns the run's two other lossy laws and one that loses nothing. Over the shipped "
    "2 x 2 and a 6 x 3 fabric, seeds 1-3, per-port fairness: 5 of 12 runs have a lossy law unwarned, 3 before"))
def test_the_shipped_head_of_line_fabric_with_classes_loses_packets_only_where_the_analysis_warned() -> None:
    setup = HolSetup()
    topo = hol_topology(setup, "alinea-classes", incast=True)
    lossy = lossy_laws(topo, 1, setup.seconds)
    assert lossy, "the case no longer loses packets: it tests nothing"
    assert lossy <= warned_laws(topo, 1, setup.seconds)


def _two_classes(below: bool, fixed: bool) -> tuple[FluidPlant, list[int]]:
    """Two queues onto one link of 100 packets/s, each fed 100 packets/s from its own leg, the second below
    the first (one port's priority queues) or beside it (two ports); BMv2's queues or the shaper."""
    plant = FluidPlant(0.01, fixed)
    src = [plant.add_leg(1, plant.add_buffer(1e6)) for _ in range(2)]
    out = [plant.add_leg(1) for _ in range(2)]
    queues = [plant.add_queue(100.0), plant.add_queue(100.0, below)]
    for q, here, onward in zip(queues, src, out):
        plant.add_slot(q, 0, here, onward)
        plant.route_leg(here, (q, 0), [])
    sender = plant.add_sender(2 * 8000 * 100.0, 8000.0, [(leg, 0.0, float("inf")) for leg in src], False)
    assert sender == 0
    return plant, queues


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("below", [False, True])
def test_a_ports_priority_queues_share_its_link_the_highest_first(below: bool, fixed: bool) -> None:
    plant, queues = _two_classes(below, fixed)
    plant.run(0, 100)
    high, low = (plant.counters(q)[1] for q in queues)
    assert high > 90 and high == pytest.approx(plant.counters(queues[0])[0], abs=2.0)  # it keeps up with its input
    if below:
        assert low < 0.05 * high  # the link is the first's: nothing left for the one below
    else:
        assert low == pytest.approx(high, rel=0.05)  # two ports: each its own link
