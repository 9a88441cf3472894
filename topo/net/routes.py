"""The path a flow's packets take, ECMP included: what the loop analysis must model.

Why: ``Flow.path`` is the routes' tie-break (the next hop first by name). With ``ecmp`` on (a
leaf-spine fabric's default) a switch with several shortest next hops spreads flows by the crc16
of their 5-tuple (alinea.p4's ``ecmp_selector``, :func:`selector_next_hop`), so the
flows a spine carries are not the ones the tie-break puts there: an analysis of the tie-break's
paths checks queues the packets never meet and misses those they fill (the head-of-line fabric
at 6 leaves and 3 spines lost 153 packets on spines the tie-break left idle). A datagram flow's
5-tuple is known before the run (UDP, source port ``DATA_PORT + id % 1000``, destination port
``DATA_PORT``, ``id`` its 1-based place in the file: hosts/datagram.py), so its path is too.
A TCP flow's source port is the kernel's (netns) or the model's; its tie-break path is kept.
"""

from __future__ import annotations

from topo.net.model import Flow, Topology

__all__ = ["routed_path", "routed_paths", "selector_next_hop", "DATAGRAM", "IPPROTO_TCP", "IPPROTO_UDP"]

#: Controls whose packets carry hosts/datagram.py's UDP header.
DATAGRAM = frozenset({"alinea", "fixed", "cvihis-rtm", "cvihis-blm", "tfrc", "ledbat", "gcc", "pgmcc"})
IPPROTO_TCP, IPPROTO_UDP = 6, 17


def routed_path(topo: Topology, index: int, flow: Flow) -> tuple[str, ...]:
    """The nodes ``flow`` (``index``: its 0-based place in ``topo.flows``) crosses, as the switches
    hash it."""
    if not topo.options.ecmp or flow.control not in DATAGRAM or len(topo.all_paths(flow.src, flow.dst)) <= 1:
        return flow.path
    from hosts.datagram import DATA_PORT

    sport = DATA_PORT + (index + 1) % 1000
    hops = [flow.src]
    while hops[-1] != flow.dst:
        here = hops[-1]
        nexts = topo.next_hops(here, flow.dst)
        if len(nexts) == 1 or not topo.nodes[here].is_switch:
            hops.append(nexts[0])
        else:
            hops.append(selector_next_hop(topo, here, flow.src, flow.dst, IPPROTO_UDP, sport, DATA_PORT))
    return tuple(hops)


def selector_next_hop(topo: Topology, node: str, src: str, dst: str, proto: int, sport: int = 0,
                      dport: int = 0) -> str:
    """The next hop alinea.p4's ``ecmp_selector`` gives a packet ``src -> dst`` at ``node``: the crc16
    of the selector fields (source and destination address, protocol, the two L4 ports the parser
    copied: 0 where it copies none), modulo the group's size, picks a member in the group's order
    (topo/net/plan.py: the next hops sorted by name). BMv2's and p4switch's rule with unit weights."""
    from p4switch.pipeline.algorithms import crc16

    hops = topo.next_hops(node, dst)
    if not hops:
        raise ValueError(f"{node} has no route to {dst}")
    key = (topo.ip(src) << 72) | (topo.ip(dst) << 40) | (proto << 32) | (sport << 16) | dport
    return hops[crc16(key, 104) % len(hops)]


def routed_paths(topo: Topology) -> dict[str, tuple[str, ...]]:
    """Every flow's :func:`routed_path`, by name; remembered on the topology for the flows it has
    (the analysis asks once per law)."""
    key = (tuple(map(id, topo.flows)), topo.options.ecmp)
    cached = getattr(topo, "_routed_paths", None)
    if cached is None or cached[0] != key:
        cached = (key, {f.name: routed_path(topo, i, f) for i, f in enumerate(topo.flows)})
        topo._routed_paths = cached  # type: ignore[attr-defined]
    return cached[1]
