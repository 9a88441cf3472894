"""Per-destination classes in the netns backend (docs/howto/fabric.md, "In netns"): the agents' law rows
keep their class, as the simulator's do, so that ``topo.experiments.hol``'s spread names the class a law cut;
(root) a short workload under classes through p4switch."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from controlplane.agent import LawTrace
from tests.switch import netns as N
from topo.experiments.fabric import FabricSpec, fabric_topology, run_fabric_netns
from topo.experiments.hol import HolSetup, hol_topology
from topo.file.workload import FlowSpec
from topo.net.plan import switch_plan


@pytest.mark.cpu_only
def test_a_netns_law_row_keeps_the_class_of_its_law_on_the_runner_s_clock(tmp_path: Path) -> None:
    from topo.netns.network import NetnsNetwork

    topo = hol_topology(HolSetup(), "alinea-classes", incast=True)
    net = NetnsNetwork(topo, duration_ns=10**9, run_dir=tmp_path)
    net.switches["spine1"] = SimpleNamespace(offset_ns=400)  # type: ignore[assignment]
    port = topo.port("spine1", "leaf2")
    plan = switch_plan(topo, "spine1")
    trace = net._law_trace("spine1")
    for data_class in (0, 1, 3):
        trace(LawTrace(t_ns=1000 + data_class, node=plan.name, toward=dict(plan.neighbours)[port], port=port,
                       occupancy=5, capacity=100, drops=0, rate_bps=1e6, pps=83, o=0.1, w=0.5, data_class=data_class))
    assert [(r.t_ns, r.node, r.toward, r.data_class) for r in net.recorder.laws] == [
        (600, "spine1", "leaf2", 0), (601, "spine1", "leaf2", 1), (603, "spine1", "leaf2", 3)]


@pytest.mark.netns
@pytest.mark.slow
def test_a_workload_under_classes_completes_through_p4switch_with_a_law_per_class() -> None:
    """Sized kernel TCP flows to both hosts of leaf 2 (classes 0 and 1) under ``alinea-classes``:
    every flow completes, and the switches ran laws for both classes (on the per-priority queues)."""
    N.require_netns()
    spec = FabricSpec(leaves=2, spines=2, hosts_per_leaf=2, host_rate="2Mb/s", delay="1ms", buffer=50)
    flows = [FlowSpec("a", "h1_1", "h2_1", 60_000, 0), FlowSpec("b", "h1_2", "h2_1", 60_000, 0),
             FlowSpec("c", "h1_2", "h2_2", 60_000, 100_000_000)]
    run = run_fabric_netns(fabric_topology(spec, flows, "alinea-classes"), seed=1, run_ns=4_000_000_000)
    if run.completed != 3:
        N.skip_unless_kept_up({"realtime": run.realtime}, f"{run.completed} of 3 flows completed in 4 s")
    assert run.completed == 3, run.rows
    classes = {r.data_class for r in run.recorder.laws if not r.node.startswith("h")}
    assert {0, 1} <= classes, classes
