"""The analysis-cost benchmark's cases (tests/bench/analysis_cost.py): what it measures is what it says."""

from __future__ import annotations

from tests.bench.analysis_cost import Measured, multicast_tree, random_cases
from topo.file.schema import load_topology_text


def test_the_generated_multicast_tree_has_a_receiver_on_every_leaf_switch() -> None:
    topo = load_topology_text(multicast_tree(3), "tree.yaml")
    switches = [n for n in topo.nodes.values() if n.is_switch]
    assert len(switches) == 7
    flow_receivers = {f.dst for f in topo.flows}
    assert flow_receivers == {"H4", "H5", "H6", "H7"}
    assert all(f.control == "alinea" and f.group is not None for f in topo.flows)


def test_the_same_seed_draws_the_same_random_topologies() -> None:
    first = [case.load() for case in random_cases(4, seed=3)]
    again = [case.load() for case in random_cases(4, seed=3)]
    assert [t.links for t in first] == [t.links for t in again]
    assert [[f.name for f in t.flows] for t in first] == [[f.name for f in t.flows] for t in again]


def test_the_bound_is_a_tenth_of_the_run_or_two_seconds() -> None:
    short = Measured("a", 1.0, 1, 1, 1, 10, 0, analysis_cpu_s=1.0, analysis_wall_s=1.0, run_wall_s=5.0, run_cpu_s=5.0)
    long = Measured("b", 1.0, 1, 1, 1, 10, 0, analysis_cpu_s=1.0, analysis_wall_s=1.0, run_wall_s=50.0, run_cpu_s=40.0)
    assert short.bound_s == 2.0 and short.of_bound == 0.5
    assert long.bound_s == 5.0 and long.of_bound == 0.2 and long.of_idle_bound == 0.25
