"""The three shipped paper topologies load and say what the paper says."""

from __future__ import annotations

import pytest

from controlplane.params import validate_law
from tests.paths import ROOT
from topo.file.schema import load_topology

TOPO = ROOT / "topo"
FILES = ["paper-1router", "paper-5router", "capacity-drop"]


def load(name: str):
    return load_topology(TOPO / f"{name}.yaml")


@pytest.mark.parametrize("name", FILES)
def test_shipped_file_is_complete_and_consistent(name):
    t = load(name)
    assert t.name == name and t.description
    directed = [(u, v) for link in t.links for u, v in (link.ends, link.ends[::-1])]
    assert set(t.law) == {(u, v) for u, v in directed if t.reports(v)}
    assert set(t.ports) == {(v, u) for u, v in directed if t.nodes[v].is_switch}
    for port in t.ports.values():
        assert port.capacity == 200 and port.interval_us == 10_000
    for p in t.law.values():
        assert validate_law(p) is p
        assert (p.o_min, p.w_max, p.w_min, p.k_p, p.r_floor) == (0.15, 8e6, 5e5, 24e6, 4e4)
    for link in t.links:
        assert link.delay_ns == 3_000_000 and link.buffer == 200
    [flow] = t.flows
    assert (flow.src, flow.dst, flow.control) == ("H1", "H2", "alinea")
    assert flow.r_max_bps == (1.8e6 if name == "paper-1router" else None)  # the paper's 1-router run only
    assert flow.start_ns == 0 and flow.stop_ns is None and flow.packet_size == 1000
    assert flow.path[0] == "H1" and flow.path[-1] == "H2"
    h2 = t.nodes["H2"]
    assert (h2.receive_buffer, h2.playout_bps) == (200, 1.2e6)
    assert not t.reports("H1")
    [(host, nb)] = t.host_buffers
    assert host == "H2" and nb == flow.path[-2]
    assert t.host_buffers[(host, nb)].capacity == 200 and t.host_buffers[(host, nb)].interval_us == 10_000


def test_paper_1router():
    t = load("paper-1router")
    assert list(t.nodes) == ["H1", "R1", "H2"]
    assert [link.rate_bps for link in t.links] == [2e6, 2e6]
    assert t.flows[0].path == ("H1", "R1", "H2")
    assert t.law[("R1", "H2")].r_max == 1.8e6 and t.law[("R1", "H2")].o_max == 0.95
    assert t.law[("H1", "R1")].o_max == 0.8 and t.law[("H1", "R1")].r_max == 1.8e6
    # No flow from H2: the reverse law is capped by the link alone.
    assert t.law[("H2", "R1")].r_max == 2e6
    assert t.port("R1", "H1") == 1 and t.port("R1", "H2") == 2
    assert t.ip("H2") == (10 << 24) | (3 << 8) | 1


def test_paper_5router():
    t = load("paper-5router")
    chain = ("H1", "R1", "R2", "R3", "R4", "R5", "H2")
    assert t.flows[0].path == chain
    fast = {frozenset(("R2", "R3")), frozenset(("R3", "R4"))}
    for link in t.links:
        assert link.rate_bps == (3e6 if frozenset(link.ends) in fast else 2e6)
    for u, v in zip(chain, chain[1:]):
        assert t.law[(u, v)].r_max == t.link_between(u, v).rate_bps  # no connection R_max: the link's rate
        assert t.law[(u, v)].o_max == (0.95 if v == "H2" else 0.7)
    assert t.law[("R3", "R2")].r_max == 3e6
    assert t.events == []


def test_capacity_drop_is_paper_5router_plus_the_drop():
    base, drop = load("paper-5router"), load("capacity-drop")
    assert (drop.nodes, drop.links, drop.flows) == (base.nodes, base.links, base.flows)
    assert (drop.law, drop.ports) == (base.law, base.ports)
    # both on BMv2's queues, the default (docs/howto/bmv2.md)
    assert drop.options == base.options and drop.options.queue_model == "bmv2"
    [event] = drop.events
    assert (event.kind, event.at_ns, event.link, event.rate_bps) == ("link_rate", 30_000_000_000, ("R3", "R4"), 1e6)
