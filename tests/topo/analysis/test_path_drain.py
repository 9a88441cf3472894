"""What a node forwards of the flows one link brings it, links behind it shared at every depth
(topo/analysis/check.py, ``path_drain``), against a direct computation: progressive filling of the flows'
rates over the links and receivers they cross (hypothesis, on random trees behind the node).

Why progressive filling is the oracle: the flows that enter at v and branch off toward their
receivers form a tree; raising every unfrozen flow's rate together and freezing the flows of a link
or receiver as it saturates ends with every flow behind a saturated link, and the topmost of those
are disjoint, so the total is a cut's capacity, which no assignment exceeds: the most v can forward.
It is computed from the rates alone, by a different procedure than the analysis's recursion.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from topo.analysis.check import downstream_drain, feeding_links, path_drain
from topo.file.schema import load_topology_text
from topo.net.routes import routed_paths

RATES = (1, 2, 5, 10, 20, 50, 100)


@st.composite
def trees(draw: st.DrawFn) -> str:
    """H0 -- S0, then a random tree of switches behind S0 whose leaves hold hosts (some with a playout),
    and ALINEA flows from H0 to some of those hosts (several to one host allowed)."""
    n = draw(st.integers(1, 6))
    parents = [draw(st.integers(0, i)) for i in range(n)]  # switch S(i+1) hangs under S(parent)
    lines = ["name: drain-tree", "nodes:", "  H0: {kind: host}", "  S0: {kind: switch}"]
    links = [f"  - {{ends: [H0, S0], rate: {draw(st.sampled_from(RATES))}Mbps}}"]
    for i, p in enumerate(parents, start=1):
        lines.append(f"  S{i}: {{kind: switch}}")
        links.append(f"  - {{ends: [S{p}, S{i}], rate: {draw(st.sampled_from(RATES))}Mbps}}")
    hosts = []
    for s in range(n + 1):
        for _ in range(draw(st.integers(0 if s else 1, 2))):
            h = f"H{len(hosts) + 1}"
            hosts.append(h)
            playout = draw(st.sampled_from((None, *RATES)))
            lines.append(
                f"  {h}: {{kind: host"
                + (f", receive_buffer: 50, playout: {playout}Mbps}}" if playout else "}")
            )
            links.append(f"  - {{ends: [S{s}, {h}], rate: {draw(st.sampled_from(RATES))}Mbps}}")
    dsts = draw(st.lists(st.sampled_from(hosts), min_size=1, max_size=5))
    flows = [f"  - {{name: f{i}, src: H0, dst: {d}, control: alinea}}" for i, d in enumerate(dsts)]
    return "\n".join([*lines, "links:", *links, "flows:", *flows, ""])


def progressive_filling(text: str) -> float:
    """The flows' rates raised together, each frozen when a link or receiver on its path saturates."""
    topo = load_topology_text(text, "drain-tree.yaml")
    paths = routed_paths(topo)
    crossing: dict[object, list[str]] = {}
    capacity: dict[object, float] = {}
    for f in topo.flows:
        path = paths[f.name]
        for a, b in zip(path[1:], path[2:]):  # behind S0 (the link H0 -> S0 is the feed, not the drain)
            crossing.setdefault((a, b), []).append(f.name)
            capacity[(a, b)] = topo.link_between(a, b).rate_bps
        if topo.nodes[f.dst].playout_bps:
            crossing.setdefault(f.dst, []).append(f.name)
            capacity[f.dst] = topo.nodes[f.dst].playout_bps
    rate = {f.name: 0.0 for f in topo.flows}
    frozen: set[str] = set()
    while len(frozen) < len(rate):
        # the largest equal raise of the unfrozen flows that saturates no link or receiver
        step = min(
            (capacity[k] - sum(rate[n] for n in names)) / sum(1 for n in names if n not in frozen)
            for k, names in crossing.items()
            if any(n not in frozen for n in names)
        )
        for n in rate:
            if n not in frozen:
                rate[n] += step
        for k, names in crossing.items():
            if sum(rate[n] for n in names) >= capacity[k] * (1 - 1e-12):
                frozen.update(names)
    return sum(rate.values())


@settings(max_examples=40, deadline=None)
@given(trees())
def test_the_drain_behind_a_node_is_what_progressive_filling_forwards(text: str) -> None:
    topo = load_topology_text(text, "drain-tree.yaml")
    expected = progressive_filling(text)
    assert abs(path_drain(topo, "H0", "S0") - expected) <= 1e-6 * expected, text


@settings(max_examples=25, deadline=None)
@given(trees())
def test_sharing_every_link_never_drains_more_than_sharing_the_first(text: str) -> None:
    topo = load_topology_text(text, "drain-tree.yaml")
    assert path_drain(topo, "H0", "S0") <= downstream_drain(topo, "H0", "S0") * (1 + 1e-12)


def test_a_one_packet_buffer_drained_through_a_shared_slow_link_needs_room_for_a_packet() -> None:
    """Three flows from H1 cross S2 - S3 - S4 and then one 5 Mb/s link into H2; S1 - S2 is 10 Mb/s.
    Counted per flow, the drain behind S2 was 15 Mb/s, faster than S2's feed, and S2's buffer seemed
    never to build; shared, it is 5 Mb/s, and the buffer needs room for a packet."""
    text = """name: shared-slow
nodes:
  H1: {kind: host}
  S1: {kind: switch}
  S2: {kind: switch}
  S3: {kind: switch}
  H2: {kind: host}
links:
  - {ends: [H1, S1], rate: 10Mbps}
  - {ends: [S1, S2], rate: 10Mbps}
  - {ends: [S2, S3], rate: 50Mbps}
  - {ends: [S3, H2], rate: 5Mbps}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
  - {name: f2, src: H1, dst: H2, control: alinea}
  - {name: f3, src: H1, dst: H2, control: alinea}
"""
    topo = load_topology_text(text, "shared-slow.yaml")
    assert downstream_drain(topo, "S1", "S2") == 15e6
    assert path_drain(topo, "S1", "S2") == 5e6
    assert feeding_links(topo, "S1", "S2") == 1
