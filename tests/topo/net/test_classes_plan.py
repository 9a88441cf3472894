"""Per-destination classes in the plan: which class a destination is, and what each switch installs."""

from __future__ import annotations

from controlplane.agent import MAX_CLASSES
from topo.experiments.hol import HolSetup, hol_topology
from topo.net.plan import host_classes, priority_queues, switch_plan


def test_hosts_behind_one_switch_get_distinct_classes_up_to_the_count() -> None:
    topo = hol_topology(HolSetup(), "alinea-classes", incast=True)
    assert topo.options.classes == 4
    classes = host_classes(topo)
    for leaf in ("leaf1", "leaf2"):
        behind = [h for h in topo.neighbours(leaf) if not topo.nodes[h].is_switch]
        assert sorted(classes[h] for h in behind) == list(range(len(behind)))


def test_every_switch_maps_every_host_and_one_class_maps_none() -> None:
    topo = hol_topology(HolSetup(), "alinea-classes", incast=True)
    plan = switch_plan(topo, "spine1")
    assert plan.classes == 4
    assert {(p, c) for p, _len, c in plan.dst_classes} == {(topo.ip(h), c) for h, c in host_classes(topo).items()}
    plain = switch_plan(hol_topology(HolSetup(), "alinea", incast=True), "spine1")
    assert plain.classes == 1 and plain.dst_classes == ()


def test_priority_queues_hold_the_reports_and_every_class() -> None:
    assert priority_queues(1) == 1
    assert priority_queues(MAX_CLASSES) == 8  # BMv2's most


def test_with_classes_reports_are_cloned_to_the_recirculation_port_and_one_class_to_their_own() -> None:
    """The agents point every report session at alinea.p4's REPORT_RECIRC_PORT and write report_path's
    one entry (the reports' top priority, docs/howto/fabric.md); with one class neither."""
    from controlplane.dataplane_config import REPORT_RECIRC_PORT, REPORT_SESSION_BASE
    from topo.sim.network import SimNetwork

    for control, classes in (("alinea-classes", 4), ("alinea", 1)):
        net = SimNetwork(hol_topology(HolSetup(), control, incast=True), 1).build()
        state = net.switches["spine1"].switch.state
        modelled = {m.port for m in switch_plan(net.topo, "spine1").modelled}
        assert modelled
        ports = {r.port for p in modelled for r in state.pre.clone_session(REPORT_SESSION_BASE + p).replicas}
        path = state.tables_by_name["MyEgress.report_path"]
        if classes == 1:
            assert ports == modelled and len(path) == 0
        else:
            assert ports == {REPORT_RECIRC_PORT} and len(path) == 1
