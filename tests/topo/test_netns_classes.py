"""Per-destination classes in the netns backend (docs/fabric.md, "In netns"): the agents' law rows
keep their class, as the simulator's do, so that ``topo.hol``'s spread names the class a law cut."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from controlplane.agent import LawTrace
from topo.hol import HolSetup, hol_topology


def test_a_netns_law_row_keeps_the_class_of_its_law(tmp_path: Path) -> None:
    from topo.netns import NetnsNetwork

    topo = hol_topology(HolSetup(), "alinea-classes", incast=True)
    net = NetnsNetwork(topo, duration_ns=10**9, run_dir=tmp_path)
    net.switches["spine1"] = SimpleNamespace(offset_ns=0)  # type: ignore[assignment]
    port = topo.port("spine1", "leaf2")
    trace = net._law_trace("spine1")
    for data_class in (0, 1, 3):
        trace(LawTrace(t_ns=1000 + data_class, port=port, occupancy=5, capacity=100, drops=0, rate_bps=1e6, pps=83,
                       o=0.1, w=0.5, data_class=data_class))
    assert [(r.node, r.toward, r.data_class) for r in net.recorder.laws] == [
        ("spine1", "leaf2", 0), ("spine1", "leaf2", 1), ("spine1", "leaf2", 3)]
