"""The head-of-line experiment: per-port hop-by-hop control throttles a victim that only shares the path."""

from __future__ import annotations

import dataclasses

import pytest

from topo.experiments.hol import HolSetup, hol_topology, run_hol
from topo.net.plan import host_classes

SHORT = HolSetup(incast_start_s=0.5, seconds=1.5)


def test_the_victim_shares_the_uplinks_and_spines_but_not_the_receivers_port():
    topo = hol_topology(SHORT, "alinea", incast=True)
    victim = next(f for f in topo.flows if f.name == "victim")
    incast = [f for f in topo.flows if f.name.startswith("incast")]
    assert len(incast) == SHORT.senders and {f.dst for f in incast} == {SHORT.receiver}
    assert victim.dst != SHORT.receiver and victim.src not in {f.src for f in incast}
    assert set(topo.all_paths(victim.src, victim.dst)[0][1:-1]) <= {"leaf1", "leaf2", "spine1", "spine2"}


#: long enough for the victim's loss to show over its window (1-3 s): over SHORT's (1-1.5 s) the share
#: it keeps swung with the incast's start-up from seed to seed (0.81-1.03 at seeds 1-3 at 05cf078; 0.88-0.91
#: over 1-3 s)
THROTTLED = dataclasses.replace(SHORT, seconds=3.0)


def test_per_port_alinea_throttles_the_spine_toward_the_receivers_leaf_and_spreads_upstream():
    r = run_hol(THROTTLED, "alinea")
    hops = {d["hops"] for d in r["spread"]}
    assert any(d["port"].endswith("->leaf2") for d in r["spread"] if d["hops"] == 1)
    assert {1, 2} <= hops  # the spine's port toward leaf 2, then a leaf 1 uplink
    # the victim, bound for an idle host, loses throughput: below the band the run without control
    # keeps it in (the next test: within 5 % of its idle rate)
    assert r["victim_share"] < 0.95


def test_without_control_the_victim_keeps_its_rate_and_nothing_is_throttled():
    r = run_hol(SHORT, "none")
    assert r["spread"] == []
    assert r["victim_share"] == pytest.approx(1.0, abs=0.05)
    assert r["switch_drops"] > 0  # the incast overflows the receiver's port instead


def test_an_unknown_control_is_refused():
    with pytest.raises(ValueError, match="choose alinea, alinea-classes, cvihis-rtm, tcp, none"):
        hol_topology(SHORT, "pfc", incast=True)


def test_per_flow_caps_keep_the_victim_within_ten_percent_of_idle_with_no_loss():
    """The issue's target for a fix: the incast's senders capped at their share of the receiver's
    link (docs/background/fairness.md) never fill leaf 2's buffer, so the shared ports are not cut for them
    (their rates sit at the caps, which the spread lists as well)."""
    r = run_hol(dataclasses.replace(SHORT, fairness="per-flow"), "alinea")
    assert r["victim_share"] >= 0.9
    assert r["switch_drops"] == 0


def test_an_unknown_fairness_is_refused():
    with pytest.raises(ValueError, match="choose per-port, per-flow"):
        hol_topology(dataclasses.replace(SHORT, fairness="per-host"), "alinea", incast=True)


def test_per_destination_classes_keep_the_victim_within_ten_percent_of_idle_with_no_loss():
    """The designed fix (docs/howto/fabric.md): the incast's class and the victim's have their own priority
    queues and laws at every hop, so a cut toward the congested receiver leaves the victim's class at
    R_max; none of the victim's packets is lost, and no law of its class is among the throttled."""
    r = run_hol(SHORT, "alinea-classes")
    assert r["victim_share"] >= 0.9
    assert r["victim_lost"] == 0
    victim_class = hol_topology(SHORT, "alinea-classes", incast=False)
    classes = host_classes(victim_class)
    throttled = {(d["port"], d["class"]) for d in r["spread"] if d["hops"] <= 2}
    assert throttled and all(c != classes[SHORT.victim[1]] for _port, c in throttled)
