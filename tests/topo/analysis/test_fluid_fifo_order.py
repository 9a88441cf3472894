"""The fluid model's egress queues serve in the order fluid joined them, as BMv2's and the simulator's FIFOs do.

Issue 46: `hbh hol --leaves 6 --spines 3` (per-port ALINEA) lost 181 packets at seed 1 and the loop analysis
said nothing. incast2 starts last (1.153 s at seed 1), and its packets join leaf 2's FIFO toward the
receiver behind ~120 of spine 1's and spine 3's: in the run none of them leaves for 90 ms, spine 2's law
reads no drain, falls to its floor, and on BMv2's queues the packets it stamps then hold its queue at the
floor for about a second, whatever its law says next; spine 2's buffer from leaf 1 overflows from 1.39 s,
and the backlog's release later overflows leaf 2's buffer from spine 3. The model appended every arrival
to the queue's last chunk while the queue rate stayed the same and served a chunk's slots in proportion:
spine 2's fluid left beside the backlog at once, its law never reached its floor, and nothing overflowed
(engine/src/analysis/fluid.rs, ``enqueue``).
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.topo.analysis.hol_laws import lossy_laws, warned_laws
from topo.analysis.check import warnings
from topo.experiments.hol import HolSetup, hol_topology
from topo.net.starts import with_drawn_starts

FABRIC_6X3 = dataclasses.replace(HolSetup().fabric, leaves=6, spines=3)


@pytest.mark.parametrize("fairness", ["per-port", "per-flow"])
def test_the_6x3_head_of_line_fabric_loses_packets_only_where_the_analysis_warned(fairness: str) -> None:
    setup = HolSetup(fabric=FABRIC_6X3, fairness=fairness)
    topo = hol_topology(setup, "alinea", incast=True)
    lossy = lossy_laws(topo, 1, setup.seconds)
    assert lossy <= warned_laws(topo, 1, setup.seconds)


def test_the_shipped_2x2_head_of_line_fabric_is_warned_where_per_port_loses_and_silent_per_flow() -> None:
    """The shipped shape's verdicts as before the model served its queues in order: per-port, the buffers that
    overflow are warned; per-flow, nothing is lost and nothing warned."""
    per_port = HolSetup()
    topo = hol_topology(per_port, "alinea", incast=True)
    assert lossy_laws(topo, 1, per_port.seconds) <= warned_laws(topo, 1, per_port.seconds)
    per_flow = HolSetup(fairness="per-flow")
    topo = hol_topology(per_flow, "alinea", incast=True)
    assert lossy_laws(topo, 1, per_flow.seconds) == set()
    assert warned_laws(topo, 1, per_flow.seconds) == set()


def test_the_warning_names_the_flow_whose_start_the_loss_follows() -> None:
    """A loss in the model long after the run began follows a flow that joined the running network: the
    warning says which (it said only "as the hops start up together", while the victim had run alone for a
    second), here the incast that starts last, whose packets wait behind the others' backlog."""
    setup = HolSetup(fabric=FABRIC_6X3)
    topo = hol_topology(setup, "alinea", incast=True)
    last = max((f for f in with_drawn_starts(topo, 1, "sim").flows), key=lambda f: f.start_ns)
    assert last.name.startswith("incast")
    spine = next(w for w in warnings(topo, setup.seconds, 1) if w.startswith("law leaf1->spine2:"))
    assert f"after flow {last.name} joins at {last.start_ns / 1e9:.3g} s" in spine


@pytest.mark.parametrize("seed", [6, 9, 11])
def test_the_shipped_2x2_per_port_fabric_loses_packets_only_where_the_analysis_warned(seed: int) -> None:
    """Seeds the model's one interleaving of leaf 2's FIFO toward h2_1 missed: at 6 leaf 2's buffer from spine 2
    (the model at 96 %), at 9 and 11 leaf 1's buffer at spine 2 (98 and 95 %; at 9 spine 2's rate toward leaf 2, its
    drain a share of that FIFO, slid from 10 to 7 Mb/s over 0.1 s and leaf 1's law followed it late). Each spine's
    law toward leaf 2 takes a share of the FIFO and leaf 1's laws feed them: warned where the model holds their
    buffers at their target (topo/analysis/head_of_line.py, ``fifo_shares`` and ``share_feeders``)."""
    setup = HolSetup()
    topo = hol_topology(setup, "alinea", incast=True)
    lossy = lossy_laws(topo, seed, setup.seconds)
    assert lossy, "the case no longer loses packets: it tests nothing"
    assert lossy <= warned_laws(topo, seed, setup.seconds)
