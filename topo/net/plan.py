"""From a topology to what each switch agent installs (routes, modelled ports, regulated ports).

Both backends build their agents from these plans, so a switch is configured identically in
the simulator, between namespaces and on real BMv2.
"""

from __future__ import annotations

import math

from controlplane.agent import EcmpGroup, McastRoute, ModelledPort, NextHop, RegulatedPort, Route, SwitchPlan
from controlplane.dataplane_config import MCAST_MAX_COPIES, MCAST_PORT_LIMIT
from controlplane.frame_size import capacity_in_frames
from hosts.tcp import MSS
from hosts.tcp.wire import data_frame_bytes
from topo.net.model import Flow, Topology
from topo.net.routes import routed_paths

__all__ = ["switch_plan", "room_above_target", "buffer_for_gain", "streams_over", "frame_sizes_over", "network_mode", "neighbour_mac", "packet_bytes_over", "expected_frame_bytes",
           "expected_shares", "flow_frame_bytes", "buffer_unit_bytes", "port_unit_bytes", "law_frames", "QUEUE_HEADROOM", "host_classes", "priority_queues"]

#: Extra egress queue places beyond the modelled buffers: reports and unmodelled frames.
QUEUE_HEADROOM = 64


def neighbour_mac(topo: Topology, node: str, neighbour: str) -> int:
    """The MAC address ``node`` sends to on its link to ``neighbour``."""
    if topo.nodes[neighbour].is_switch:
        return topo.mac(neighbour, node)
    return topo.mac(neighbour)


def packet_bytes_over(topo: Topology, u: str, v: str, default: int = 1000) -> int:
    """The packet size of the flows crossing u -> v (the largest), for rate -> packets/s."""
    sizes = [f.packet_size for f in streams_over(topo, u, v)]
    return max(sizes) if sizes else default


def streams_over(topo: Topology, u: str, v: str) -> list[Flow]:
    """The flows whose data crosses u -> v, a multicast group once (its first branch there): the
    branches of a group on a link of its tree are one stream on it (docs/howto/multicast.md).

    On the path the switches hash the flow to (topo.net.routes.routed_paths), not ``Flow.path``, the
    tie-break: under ECMP a link the hash picks and the tie-break does not carried no flow here, so its
    frames were the 1,000-byte default: the loop analysis ran an S1-S4-S2 line of 200-byte frames as
    625 packets/s (1 Mb/s of them, not 5) and saw no buffer behind S1 fill, where the run lost 10
    (tests/topo/random/cases/test_ecmp_path_cases.py, random_cases/ecmp-slow-exit-line.yaml)."""
    seen: set[str] = set()
    out: list[Flow] = []
    paths = routed_paths(topo)
    for f in topo.flows:
        path = paths[f.name]
        if (u, v) in zip(path, path[1:]) and (f.group is None or f.group not in seen):
            out.append(f)
            if f.group is not None:
                seen.add(f.group)
    return out


def frame_sizes_over(topo: Topology, u: str, v: str) -> list[int]:
    """The data frames of the flows whose path crosses u -> v (a TCP flow's: a full segment's frame)."""
    return [flow_frame_bytes(f) for f in streams_over(topo, u, v)]


def flow_frame_bytes(f: Flow) -> int:
    """The frames a flow's data travels in: ``packet_size``, or for TCP a full segment's frame (its
    ``packet_size`` is the application's record, the segment's payload)."""
    return data_frame_bytes(MSS) if f.control == "tcp" else f.packet_size


def expected_shares(topo: Topology, u: str, v: str) -> list[tuple[Flow, float]]:
    """The flows crossing u -> v with the b/s each is expected to carry there: the link's max-min
    fair shares in bits, a flow asking for less (``rate``, ``r_max``) keeping what it asks for."""
    flows = streams_over(topo, u, v)
    left = topo.link_between(u, v).rate_bps
    share: dict[str, float] = {}
    todo = sorted(flows, key=lambda f: f.rate_bps or f.r_max_bps or math.inf)
    while todo:
        fair = left / len(todo)
        f = todo.pop(0)
        share[f.name] = min(fair, f.rate_bps or f.r_max_bps or math.inf)
        left -= share[f.name]
    return [(f, share[f.name]) for f in flows]


def max_min_shares(topo: Topology, hops: dict[str, tuple[tuple[str, str], ...]], flows: list[Flow]) -> dict[str, float]:
    """Each flow's max-min fair share in bits over the links of its whole path (``hops``: its directed links), a flow asking for less (``rate``,
    ``r_max``) keeping what it asks for: the mix its frames make at each hop when the laws use their links."""
    cap = {f.name: f.rate_bps or f.r_max_bps or math.inf for f in flows}
    left = {hop: topo.link_between(*hop).rate_bps for f in flows for hop in hops[f.name]}
    share: dict[str, float] = {}
    todo = {f.name for f in flows}
    while todo:
        on = {hop: [n for n in todo if hop in hops[n]] for hop in left}
        fair = min((left[hop] / len(ns) for hop, ns in on.items() if ns), default=math.inf)
        fair = min(fair, min(cap[n] for n in todo))
        done = {n for n in todo if cap[n] <= fair * (1 + 1e-12)} | {
            n for hop, ns in on.items() if ns and left[hop] / len(ns) <= fair * (1 + 1e-12) for n in ns}
        for n in done:
            share[n] = fair
            for hop in hops[n]:
                left[hop] -= fair
        todo -= done
    return share


def expected_frame_bytes(topo: Topology, u: str, v: str, default: int = 1000) -> int:
    """The mean size of the frames u is expected to send to v: the flows' sizes, each weighted by
    the packets it sends at its expected share of the link (:func:`expected_shares`, in bits), so
    ``sum(share) / sum(share / size)``, in whole bytes; exactly the size when all are of one.

    The rule the switch agent follows from the port's counters once it sends (what left the port,
    controlplane/frame_size.py): it turns a law's b/s into packets/s. The loop analysis and the
    derived gains use it so that they see the loop the agent runs (docs/background/alinea.md, "Bits, not packets")."""
    shares = expected_shares(topo, u, v)
    sizes = {flow_frame_bytes(f) for f, _ in shares}
    if len(sizes) <= 1:
        return sizes.pop() if sizes else default
    bits = sum(s for _, s in shares)
    packets = sum(s / flow_frame_bytes(f) for f, s in shares)
    return round(bits / packets) if packets > 0 else max(sizes)


def buffer_unit_bytes(topo: Topology, v: str) -> int:
    """The unit of v's modelled buffers when the flows entering v are of several sizes: the smallest
    (0 otherwise: the buffers are in packets, which is then the same). Each law toward v reads its
    buffer as capacity x unit bytes (controlplane/frame_size.py), so that the ports sharing one of
    v's FIFOs share it in bits; the smallest, so that no law aims past the packets v admits. A
    host's receive buffer stays in packets: one link feeds it, there is nothing to share."""
    if not topo.nodes[v].is_switch:
        return 0
    paths = routed_paths(topo)  # as the switches hash them (streams_over)
    sizes = {flow_frame_bytes(f) for f in topo.flows if v in paths[f.name][1:]}
    return min(sizes) if len(sizes) > 1 else 0


def port_unit_bytes(topo: Topology, u: str, v: str) -> int:
    """The unit of v's buffer from u (its capacity is read as capacity x unit bytes; 0: in packets): v's
    unit (:func:`buffer_unit_bytes`), except where the u -- v link's buffer was given as a duration and the
    frames entering v over it are all of one size, larger than v's unit: that size, so that the law reads
    the buffer's packets, each one such frame, which hold the duration at the link's rate (rounded up to a
    whole frame; docs/reference/topologies.md).

    Why: equal durations on links feeding one switch are equal bytes but unequal packets (63, 13 and 9 for
    200, 1000 and 1500 B flows over 20 Mb/s at 5 ms); read in v's smallest frame they were 5, 1 and 0.7 ms,
    and the merge split 2.60 / 0.72 / 0.69 Mb/s (Jain 0.69; 1.32 / 1.33 / 1.34 read in their own frames).
    Only where one size enters: where several do, the packets the buffer holds are of any of them, and the
    agent turns b/s into a queue's packets/s at the mean frame the port has sent, which a queue that fixes
    departures when it queues (BMv2) stamps on a backlog of another mix: read in bytes there, S1's law
    filled S2 with 200 B frames stamped at the packets/s of the 1448 B ones that had left, and S2's
    200 Mb/s line carried 4 Mb/s for a second (tests/topo/random_cases/stamped-mixed-backlog.yaml, seed 2)."""
    unit = buffer_unit_bytes(topo, v)
    if not unit or topo.link_between(u, v).buffer_time is None:
        return unit
    sizes = set(frame_sizes_over(topo, u, v))
    return sizes.pop() if len(sizes) == 1 and max(sizes) > unit else unit


def law_frames(topo: Topology, u: str, v: str, capacity: int) -> tuple[int, int]:
    """(v's buffer of ``capacity`` packets counted in u's frames, the bits of one): the loop u's law
    toward v runs, as the agent runs it (port_unit_bytes, expected_frame_bytes); for the analysis."""
    frame = expected_frame_bytes(topo, u, v)
    return capacity_in_frames(capacity, port_unit_bytes(topo, u, v), frame), 8 * frame


def room_above_target(topo: Topology, u: str, v: str, capacity: int) -> float:
    """Packets v's buffer of ``capacity`` from u holds above the target u's law aims at (counted in u's
    frames, as the law counts it): what a burst the law cannot yet answer may add without a loss."""
    return capacity - topo.law[(u, v)].o_max * law_frames(topo, u, v, capacity)[0]


def buffer_for_gain(topo: Topology, u: str, v: str, gained_pkts: float) -> int:
    """The smallest buffer (packets, from its own size, at most 64 times it) whose room above the target
    holds ``gained_pkts``: the remedy a warning names."""
    capacity = topo.ports[(v, u)].capacity
    need = capacity
    while need < 64 * capacity and room_above_target(topo, u, v, need) < gained_pkts:
        need += 1
    return need


def network_mode(topo: Topology) -> str:
    """``hop-by-hop`` when some flow is ALINEA-controlled (switches regulate their egress rates),
    else ``end-to-end``: the same data plane, reports kept for measurement, no queue rate ever
    set, and each output port a drop-tail FIFO as deep as its link's buffer, shared by every
    flow through it (the sources' own control, e.g. CVIHIS, is all there is)."""
    if topo.options.network is not None:
        return topo.options.network
    return "hop-by-hop" if any(f.control == "alinea" for f in topo.flows) else "end-to-end"


def _routes(topo: Topology, name: str) -> tuple[tuple[Route, ...], tuple[EcmpGroup, ...]]:
    """A /32 route per reachable host: direct (one next hop, exactly as without ECMP) or to the
    equal-cost group of its next hops, one group per distinct set of next hops (group ids 1, 2, ...
    in host order), so that a leaf sends every remote host through one group of its uplinks."""
    routes: list[Route] = []
    by_hops: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    for host in topo.hosts:
        hops = topo.next_hops(name, host.name)
        if len(hops) == 1:
            nxt = hops[0]
            routes.append(Route(topo.ip(host.name), 32, topo.port(name, nxt), neighbour_mac(topo, name, nxt),
                                topo.mac(name, nxt)))
        elif hops:
            by_hops.setdefault(hops, []).append((topo.ip(host.name), 32))
    groups = tuple(EcmpGroup(gid, tuple(NextHop(topo.port(name, h), neighbour_mac(topo, name, h), topo.mac(name, h))
                                        for h in hops), tuple(prefixes))
                   for gid, (hops, prefixes) in enumerate(by_hops.items(), start=1))
    return tuple(routes), groups


#: Controls whose receivers send packets back along the path (ACKs, feedback, rate commands).
NO_RETURN = ("alinea", "fixed")


def _return_links(topo: Topology) -> set[tuple[str, str]]:
    """The directed links the flows' return traffic crosses: traffic enters a switch there too,
    so the switch reports that buffer, and its reports share the egress queue toward the flow."""
    return {(v, u) for f in topo.flows if f.control not in NO_RETURN for u, v in zip(f.path, f.path[1:])}


def host_classes(topo: Topology) -> dict[str, int]:
    """Per-destination classes: a host's index among the hosts of its switch, mod ``options.classes``,
    so that two hosts behind one switch share a class only beyond that many (docs/howto/fabric.md)."""
    classes = topo.options.classes
    out: dict[str, int] = {}
    for sw in topo.switches:
        hosts = [n for n in topo.neighbours(sw.name) if not topo.nodes[n].is_switch]
        out.update({h: i % classes for i, h in enumerate(hosts)})
    return out


def priority_queues(classes: int) -> int:
    """Egress priority queues per port (``--priority-queues``): one, or the reports' and one per class."""
    return 1 if classes == 1 else classes + 1


def _dst_classes(topo: Topology) -> tuple[tuple[int, int, int], ...]:
    if topo.options.classes == 1:
        return ()
    return tuple((topo.ip(h), 32, c) for h, c in sorted(host_classes(topo).items()))


def _multicast(topo: Topology, name: str) -> tuple[McastRoute, ...]:
    """The groups ``name`` replicates: per group whose tree it is on, a copy per child (docs/howto/multicast.md)."""
    out = []
    for group in topo.groups():
        children = topo.tree_children(group, name)
        if not children:
            continue
        if len(children) > MCAST_MAX_COPIES:
            raise ValueError(f"multicast flow {group}: {name} would copy it to {len(children)} neighbours, "
                             f"alinea.p4 makes at most {MCAST_MAX_COPIES} copies per switch")
        (parent,) = {u for u, v in topo.tree_links(group) if v == name}
        if topo.port(name, parent) >= MCAST_PORT_LIMIT:
            raise ValueError(f"multicast flow {group}: {name} receives it on port {topo.port(name, parent)}, "
                             f"alinea.p4 replicates from ports below {MCAST_PORT_LIMIT}")
        hops = tuple(NextHop(topo.port(name, c), neighbour_mac(topo, name, c), topo.mac(name, c)) for c in children)
        out.append(McastRoute(topo.group_ip(group), topo.group_id(group), hops))
    return tuple(out)


def switch_plan(topo: Topology, name: str, fixed_departures: bool | None = None) -> SwitchPlan:
    """``fixed_departures``: the switch's egress queues fix departures at enqueue (BMv2); by default
    what ``options.queue_model`` says (p4switch's model)."""
    node = topo.nodes[name]
    if not node.is_switch:
        raise ValueError(f"{name} is not a switch")
    routes, groups = _routes(topo, name)
    hop_by_hop = network_mode(topo) == "hop-by-hop"
    # End-to-end: no modelled ingress buffer (no admission, no reports). Its occupancy counter
    # would also leak: a packet the egress FIFO tail-drops was admitted but never released.
    used = set(topo.directed_links())
    carrying = used | _return_links(topo)
    classes = topo.options.classes
    # with classes, each (port, class) cell has the port's capacity: a class may hold what the port held
    # alone (dividing it among the classes in use, with gains tuned for the whole buffer, made the
    # fabric's tail four times slower: docs/howto/fabric.md)
    modelled = tuple(ModelledPort(topo.port(name, u), topo.ports[(name, u)], topo.mac(name, u),
                                  neighbour_mac(topo, name, u), polled=(u, name) in carrying)
                     for u in topo.neighbours(name) if (name, u) in topo.ports and hop_by_hop)
    cls = host_classes(topo) if classes > 1 else {}
    regulated = tuple(RegulatedPort(topo.port(name, v), topo.law[(name, v)], expected_frame_bytes(topo, name, v),
                                    limit_at_start=(name, v) in used, only_class=cls.get(v),
                                    unit_bytes=port_unit_bytes(topo, name, v),
                                    frame_sizes=tuple(sorted(set(frame_sizes_over(topo, name, v)))))
                      for v in topo.neighbours(name) if (name, v) in topo.law)
    multicast = _multicast(topo, name)
    if hop_by_hop:  # the modelled ingress buffers hold the packets; the egress queue only needs room for them
        depth = sum(m.params.capacity for m in modelled) + QUEUE_HEADROOM
        depths = tuple((topo.port(name, v), depth) for v in topo.neighbours(name))
    else:  # a router's drop-tail FIFO per output port, the link's buffer deep, shared by every flow
        depths = tuple((topo.port(name, v), topo.link_between(name, v).buffer) for v in topo.neighbours(name))
    return SwitchPlan(name=name, node_id=node.index, routes=routes, groups=groups, modelled=modelled,
                      regulated=regulated, queue_depths=depths, actuate=hop_by_hop,
                      report_polls=topo.options.report_polls, classes=classes, dst_classes=_dst_classes(topo),
                      neighbours=tuple((topo.port(name, v), v) for v in topo.neighbours(name)),
                      multicast=multicast,
                      fixed_departures=(topo.options.queue_model == "bmv2" if fixed_departures is None
                                        else fixed_departures))
