"""A law's derived r_max counts the caps of the flows that cross its link on the path the switches hash
them to (topo.net.routes), not on ``Flow.path``, the tie-break (issue 46): under ECMP a capped flow's cap
went to the laws of a spine that carries none of its packets, and the spine it hashes to took the link's
rate, with a floor and gains derived from it."""

from __future__ import annotations

from controlplane.units import parse_rate
from tests.topo.helpers import capped_r_max
from topo.experiments.hol import HolSetup, hol_topology
from topo.net.routes import routed_paths


def test_a_capped_flows_cap_goes_to_the_laws_of_the_spine_it_hashes_to() -> None:
    """The head-of-line fabric without its incast: the victim alone, capped, from leaf 1 to leaf 2. Its
    hashed spine's two laws hold its cap and a margin (``capped_r_max``); the other spine's, which it never crosses, their links'."""
    setup = HolSetup()
    topo = hol_topology(setup, "alinea", incast=False)
    (victim,) = [f for f in topo.flows if f.name == "victim"]
    routed = routed_paths(topo)["victim"]
    spines = {n for n in topo.nodes if n.startswith("spine")}
    (hashed,) = spines & set(routed)
    (other,) = spines - {hashed}
    # the tie-break takes the other spine: the case this is about
    assert hashed not in victim.path
    cap = parse_rate(setup.victim_rate)
    for spine in (hashed, other):
        for u, v in ((routed[1], spine), (spine, routed[-2])):
            want = capped_r_max(topo, u, v, cap) if spine == hashed else topo.link_between(u, v).rate_bps
            assert topo.law[(u, v)].r_max == want, (u, v)
