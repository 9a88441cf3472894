"""With per-destination classes the fluid model keeps what the data plane and the agents keep per class.

Issue 46: the head-of-line experiment's ``alinea-classes`` (``options.classes``: a buffer cell, a priority
queue and a law per (port, destination class), docs/howto/fabric.md) got ``alinea``'s warnings word for
word: the model had one buffer, one FIFO and one law per port. The shipped 2 x 2 fabric, seed 1, lost 13
packets, 9 of them in leaf 2's buffers from the spines with no warning. Now a class's fluid fills its own cell, waits in
its own priority queue (the classes of a port share its link, the highest first) and its law, set as the
switch agent sets it (R_max cut to a fair share while other classes of the port are busy), reads its cell.
"""

from __future__ import annotations

import dataclasses

import pytest

from runtime.fluid import FluidPlant
from tests.paths import RANDOM_CASES
from tests.topo.analysis.hol_laws import lossy_laws, warned_laws
from topo.analysis.check import warnings
from topo.analysis.fluid_network import _Network
from topo.analysis.head_of_line import fifo_shares
from topo.experiments.hol import HolSetup, hol_topology
from topo.file.schema import load_topology_text
from topo.net.starts import with_drawn_starts

FABRIC_6X3 = HolSetup(fabric=dataclasses.replace(HolSetup().fabric, leaves=6, spines=3))


@pytest.mark.parametrize(("setup", "seed"), [(HolSetup(), 2), (HolSetup(), 3), (FABRIC_6X3, 1), (FABRIC_6X3, 2)],
                         ids=["2x2-seed2", "2x2-seed3", "6x3-seed1", "6x3-seed2"])
def test_the_head_of_line_fabrics_with_classes_lose_packets_only_where_the_analysis_warned(setup: HolSetup,
                                                                                           seed: int) -> None:
    """6 x 3, seeds 1 and 2: the run lost packets in leaf 1's uplink buffer at spine 3, and in leaf 2's buffer from
    spine 1, where the model had taken a twin of each (spine 1's and 2's from leaf 1; leaf 2's from spine 2) to
    the loss and the run's own to 94 and 85 %; twins take each other's peak (fluid_network.py, ``_twins``)."""
    topo = hol_topology(setup, "alinea-classes", incast=True)
    lossy = lossy_laws(topo, seed, setup.seconds)
    assert lossy, "the case no longer loses packets: it tests nothing"
    assert lossy <= warned_laws(topo, seed, setup.seconds)


@pytest.mark.parametrize(("setup", "seed"), [(HolSetup(), 10), (HolSetup(), 11), (FABRIC_6X3, 7)],
                         ids=["2x2-seed10", "2x2-seed11", "6x3-seed7"])
def test_a_spines_buffer_at_the_receivers_leaf_is_warned_where_its_drain_is_a_share_of_a_fifo(setup: HolSetup,
                                                                                             seed: int) -> None:
    """Issue 46, the head-of-line family: these runs lost packets in leaf 2's buffer from a spine (class 0, the
    incast's) that the fluid model held at 88-96 % (the shipped 2 x 2 at seed 7, when found: 2 lost at 2.44 s, the
    model at 91 %). Which spine's cell swings to full follows the packets' order in leaf 2's FIFO toward h2_1, where each
    spine's drain is its share (the victim's start 1 ms later moved which runs lose); the analysis now warns a
    law whose drain is such a share where the model holds its buffer at its target (head_of_line.py, fifo_shares).
    The 2 x 2 at seed 7 now loses nothing at leaf 2 (only at the spines from leaf 1, warned): a fall of a drain that
    begins while a steady fall is followed expects no more than the trend (controlplane/forecast.py,
    ``QueueForecast._follow_exact_fall``). The 2 x 2 at seed 9 and the 6 x 3 at seed 8 lose nothing at leaf 2 since
    the damping leaves out a fall that what reached the buffer explains (controlplane/alinea.py, ``unexplained``):
    seeds 10 and 7 in their place, which do (every seed 1-14 of the 2 x 2 and 1-12 of the 6 x 3 loses only where
    warned)."""
    topo = hol_topology(setup, "alinea-classes", incast=True)
    lossy = lossy_laws(topo, seed, setup.seconds)
    assert any(law.endswith("->leaf2") for law in lossy), "the case no longer loses at leaf 2: it tests nothing"
    assert lossy <= warned_laws(topo, seed, setup.seconds)


def test_a_fifo_share_is_warned_only_where_the_model_holds_the_buffer_at_its_target() -> None:
    """The 2 x 2 fabric: leaf 2's FIFO toward h2_1 is kept backlogged by either spine alone (spine 1's two incast
    flows, spine 2's one, each at its source's link), so both spines' laws toward leaf 2 take a share of it and
    the leaves' uplinks none. tests/topo/random_cases/paced-exit-16-packets.yaml: S7's law toward S3 takes a share
    of S3's FIFO that another link fills, but the model holds that buffer far below its target and the run loses
    nothing there: no such warning."""
    setup = HolSetup()
    topo = hol_topology(setup, "alinea-classes", incast=True)
    assert set(fifo_shares(topo, setup.seconds)) == {("spine1", "leaf2"), ("spine2", "leaf2")}
    said = [w for w in warnings(topo, setup.seconds, 1) if "share of that FIFO" in w]
    assert sorted(w.split(":")[0] for w in said) == ["law spine1->leaf2", "law spine2->leaf2"]
    # the fix named: per-flow caps where the file has none, the caps' limit where it has them
    assert all("options: {fairness: per-flow}" in w for w in said)
    per_flow = dataclasses.replace(topo, options=dataclasses.replace(topo.options, fairness="per-flow"))
    shares = fifo_shares(per_flow, setup.seconds)  # the option alone, its caps not applied: the same shares
    assert shares and all(s.per_flow for s in shares.values())
    case = load_topology_text((RANDOM_CASES / "paced-exit-16-packets.yaml").read_text(), "paced-exit-16-packets.yaml")
    assert ("S7", "S3") in fifo_shares(case, 2.0)
    assert not any("share of that FIFO" in w for w in warnings(case, 2.0, 1))


def test_the_spines_cells_of_one_class_are_twins_where_each_carries_one_incast_flow() -> None:
    """6 x 3: one incast flow a spine, so leaf 2's class-0 cells from the three spines are twins (the victim's class 1
    beside spine 3's leaves the flow its max-min share); 2 x 2: spine 1 carries two incast flows, spine 2 one, so
    theirs are not. A twin's warning names the buffer whose peak it takes (at seed 5: at seed 2 the model no longer
    takes a twin to the loss since the damping leaves out a fall that what reached the buffer explains,
    controlplane/alinea.py ``unexplained``; the run's losses there are warned all the same)."""
    six = with_drawn_starts(hol_topology(FABRIC_6X3, "alinea-classes", incast=True), 2, "sim")
    groups = _Network(six, FABRIC_6X3.seconds, 1.0).twins
    assert [("leaf2", f"spine{k}", 0) for k in (1, 2, 3)] in groups
    assert not any(len(cell) == 3 and cell[2] == 1 for g in groups for cell in g)  # the victim's cells have none
    two = with_drawn_starts(hol_topology(HolSetup(), "alinea-classes", incast=True), 2, "sim")
    assert not any(("leaf2", "spine1", 0) in g for g in _Network(two, HolSetup().seconds, 1.0).twins)
    said = [w for w in warnings(hol_topology(FABRIC_6X3, "alinea-classes", incast=True), FABRIC_6X3.seconds, 5)
            if "as its twin" in w]
    assert said and all(w.startswith("law spine") and "->leaf2" in w.split(":")[0] for w in said)


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
