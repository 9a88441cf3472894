"""Per-destination classes in the plan: which class a destination is, and what each switch installs."""

from __future__ import annotations

from controlplane.agent import MAX_CLASSES
from topo.hol import HolSetup, hol_topology
from topo.plan import host_classes, priority_queues, switch_plan


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
