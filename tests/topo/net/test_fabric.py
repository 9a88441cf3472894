"""Leaf-spine fabrics: the generator form, equal-cost routes, and short simulator runs of workloads."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.p4runtime_client import InProcessController
from tests.paths import ROOT
from tests.topo.helpers import expect_error
from topo.experiments.fabric import FabricSpec, fabric_topology, hashed_bytes, run_fabric, summary
from topo.file.schema import load_topology, load_topology_text
from topo.file.workload import FlowSpec, cdf_named, poisson_flows
from topo.net.plan import switch_plan
from topo.sim.network import SimNetwork

FABRIC = """\
name: fab
fabric:
  leaves: 3
  spines: 2
  hosts_per_leaf: 2
  host_rate: 10Mb/s
  oversubscription: 2
  delay: 100us
  buffer: 40
"""


def test_the_generator_writes_leaves_spines_hosts_and_numbers_ports_hosts_first():
    topo = load_topology_text(FABRIC, "t.yaml")
    assert [n.name for n in topo.switches] == ["leaf1", "leaf2", "leaf3", "spine1", "spine2"]
    assert [n.name for n in topo.hosts] == ["h1_1", "h1_2", "h2_1", "h2_2", "h3_1", "h3_2"]
    assert [topo.port("leaf2", n) for n in ("h2_1", "h2_2", "spine1", "spine2")] == [1, 2, 3, 4]
    assert [topo.port("spine2", f"leaf{i}") for i in (1, 2, 3)] == [1, 2, 3]
    # oversubscription 2: two 10 Mb/s hosts over two uplinks of 5 Mb/s
    assert topo.link_between("leaf1", "spine1").rate_bps == pytest.approx(5e6)
    assert topo.link_between("h1_1", "leaf1").rate_bps == 10e6
    assert {link.buffer for link in topo.links} == {40}
    assert topo.options.ecmp


def test_routes_between_leaves_are_one_group_over_every_spine_and_local_hosts_direct():
    topo = load_topology_text(FABRIC, "t.yaml")
    plan = switch_plan(topo, "leaf1")
    (group,) = plan.groups
    assert sorted(h.port for h in group.hops) == [3, 4]
    assert sorted(p for p, _ in group.prefixes) == sorted(topo.ip(h) for h in ("h2_1", "h2_2", "h3_1", "h3_2"))
    assert sorted(r.prefix for r in plan.routes) == sorted(topo.ip(h) for h in ("h1_1", "h1_2"))
    spine = switch_plan(topo, "spine1")  # one way down to each leaf: no group
    assert not spine.groups and len(spine.routes) == 6
    assert topo.all_paths("h1_1", "h3_2") == [("h1_1", "leaf1", s, "leaf3", "h3_2") for s in ("spine1", "spine2")]


@pytest.mark.parametrize("path", sorted((ROOT / "topo").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_single_path_topologies_keep_direct_routes_only(path):
    topo = load_topology(path)
    assert not topo.options.ecmp
    for sw in topo.switches:
        plan = switch_plan(topo, sw.name)
        assert plan.groups == ()
        assert {r.prefix: r.port for r in plan.routes} == {
            topo.ip(h.name): topo.port(sw.name, topo.next_hop(sw.name, h.name)) for h in topo.hosts
            if topo.next_hop(sw.name, h.name) is not None}


@pytest.mark.parametrize(("old", "new", "needle", "path", "what"), [
    ("  leaves: 3\n", "  leaves: 1\n", "leaves: 1", "fabric.leaves", "at least 2"),
    ("  spines: 2\n", "  spines: 17\n", "spines: 17", "fabric.spines", "at most 16 next hops"),
    ("  spines: 2\n", "  spines: two\n", "spines: two", "fabric.spines", "whole number"),
    ("  hosts_per_leaf: 2\n", "  hosts_per_leaf: 0\n", "hosts_per_leaf: 0", "fabric.hosts_per_leaf", "at least 1"),
    ("  hosts_per_leaf: 2\n", "  hosts_per_leaf: 90\n", "fabric:", "fabric", "more than 255"),
    ("  oversubscription: 2\n", "  oversubscription: 0\n", "oversubscription: 0", "fabric.oversubscription",
     "a ratio > 0"),
    ("  oversubscription: 2\n", "", "fabric:", "fabric", "give spine_rate or oversubscription"),
    ("  oversubscription: 2\n", "  oversubscription: 2\n  spine_rate: 1Mb/s\n", "fabric:", "fabric",
     "one of the two"),
    ("  host_rate: 10Mb/s\n", "  host_rate: 0Mb/s\n", "host_rate", "fabric.host_rate", "must be > 0"),
    ("  buffer: 40\n", "  buffer: 40\n  color: red\n", "color", "fabric.color", "unknown key 'color'"),
    ("  host_rate: 10Mb/s\n", "", "leaves: 3", "fabric", "missing required key 'host_rate'"),
])
def test_bad_generator_input_is_refused_naming_the_key(old, new, needle, path, what):
    assert old in FABRIC
    expect_error(FABRIC.replace(old, new), needle, path, what)


def test_a_fabric_with_nodes_or_links_of_its_own_is_refused():
    text = FABRIC + "nodes:\n  x: {kind: host}\n"
    expect_error(text, "nodes:", "nodes", "give fabric or nodes and links, not both")


def test_bad_ecmp_and_network_options_are_refused():
    expect_error(FABRIC + "options:\n  ecmp: maybe\n", "ecmp", "options.ecmp", "true or false")
    expect_error(FABRIC + "options:\n  network: mesh\n", "network", "options.network", "hop-by-hop or end-to-end")


def test_the_agent_writes_groups_the_switch_holds_over_p4runtime():
    topo = load_topology_text(FABRIC, "t.yaml")
    net = SimNetwork(topo, seed=1).build()
    client: InProcessController = net.switches["leaf2"].client
    from p4.v1 import p4runtime_pb2 as pb

    prof = client.names.action_profiles["MyIngress.ecmp_selector"].preamble.id
    groups = client.read(pb.Entity(action_profile_group=pb.ActionProfileGroup(action_profile_id=prof)))
    members = client.read(pb.Entity(action_profile_member=pb.ActionProfileMember(action_profile_id=prof)))
    assert len(groups) == 1 and len(groups[0].action_profile_group.members) == 2
    assert len(members) == 2


SPEC = FabricSpec(leaves=2, spines=2, hosts_per_leaf=2, delay="100us", buffer=60)


def test_one_flow_keeps_one_spine():
    flows = [FlowSpec("only", "h1_1", "h2_2", 60_000, 0)]
    run = run_fabric(fabric_topology(SPEC, flows, "tcp"), seed=1)
    assert run.completed == 1
    carried = sorted(run.uplinks[("leaf1", s)] for s in ("spine1", "spine2"))
    assert carried[0] == 0 and carried[1] > 60_000  # every data byte of the flow through one spine


@pytest.fixture(scope="module")
def uniform_cdf(tmp_path_factory):
    path = tmp_path_factory.mktemp("cdf") / "uniform.cdf"
    path.write_text("# every flow 5 to 10 kB\n5000 0\n10000 1\n")
    return cdf_named(str(path))


@pytest.mark.parametrize("control", ["tcp", "alinea", "alinea-classes", "none", "cvihis-rtm"])
def test_many_flows_spread_over_both_spines_and_all_complete_no_faster_than_ideal(uniform_cdf, control):
    flows = poisson_flows(SPEC.hosts(), uniform_cdf, load=0.4, host_rate_bps=10e6, duration_ns=300_000_000, seed=3)
    assert len(flows) > 40
    run = run_fabric(fabric_topology(SPEC, flows, control), seed=1, cap_ns=5_000_000_000)
    assert run.completed == len(flows)  # a reliable transport: every byte delivered
    for r in run.rows:
        assert r.fct_ns >= r.ideal_ns and r.slowdown >= 1
    a, b = run.spines.values()
    assert a > 0 and b > 0
    assert abs(a - b) / (a + b) < 0.25  # hashing many flows spreads them evenly enough


def test_the_documented_fabric_example_loads_as_described():
    import re

    doc = (ROOT / "docs" / "reference" / "topologies.md").read_text(encoding="utf-8").split("## Leaf-spine fabrics", 1)[1]
    example = re.search(r"```yaml\n(.*?)```", doc, re.S).group(1)
    topo = load_topology_text(example, "docs/reference/topologies.md")
    assert len(topo.hosts) == 16 and len(topo.switches) == 6 and topo.options.ecmp
    assert topo.link_between("leaf1", "spine1").rate_bps == 20e6  # 4 x 10 Mb/s over 2 spines, oversubscription 1
    (flow,) = topo.flows
    assert flow.size_bytes == 50_000 and len(topo.all_paths(flow.src, flow.dst)) == 2


def test_the_simulators_flows_take_the_spine_their_ports_hash_to():
    """The simulator's packets go through alinea.p4's selector too: an uplink carries at least the
    bytes of the flows whose 5-tuple hashes to it, and nothing when none does (ACKs go the other way)."""
    flows = [FlowSpec(f"f{i}", f"h1_{1 + i % 2}", f"h2_{1 + i // 2 % 2}", 5000 + 700 * i, 20_000_000 * i)
             for i in range(10)]
    run = run_fabric(fabric_topology(SPEC, flows, "tcp"), seed=1)
    assert run.completed == len(flows)
    hashed = hashed_bytes(run)
    assert sum(hashed.values()) == sum(f.size_bytes for f in flows)
    for spine, n in hashed.items():
        assert (run.spine_links[("leaf1", spine)] > 0) == (n > 0) and run.spine_links[("leaf1", spine)] >= n
    assert summary(run)["spine_balance"]["hashed"]["spine_bytes"] == hashed


@given(ends=st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from("ABCD")), max_size=8),
       a=st.sampled_from("ABCD"), b=st.sampled_from("ABCD"))
@settings(max_examples=200, deadline=None)
def test_link_between_is_the_first_link_whose_ends_are_the_pair(ends: list[tuple[str, str]], a: str, b: str) -> None:
    """Topology.link_between compares the ends pairwise (issue 46: two sets a link were ~3 % of a fabric's loop
    analysis): the first link whose set of ends is {a, b}, as the sets found, a loop on a node included."""
    t = load_topology_text(FABRIC, "fab.yaml")
    t.links = [dataclasses.replace(t.links[0], a=x, b=y) for x, y in ends]
    want = next((link for link in t.links if {a, b} == set(link.ends)), None)
    if want is None:
        with pytest.raises(KeyError):
            t.link_between(a, b)
    else:
        assert t.link_between(a, b) is want
