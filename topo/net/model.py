"""A topology as the backends use it: nodes, links, flows, ALINEA parameters, events.

Why a model apart from the YAML: both backends (sim, netns) and the runner read the same
resolved, validated objects; the loader (``topo.file.schema``) is the only code that knows the
file format. Everything derived -- port numbers, addresses, routes -- is computed here, once,
deterministically (so two runs of the same file build the same network).

Addressing (documented in docs/reference/topologies.md):

* a switch's ports are numbered 1, 2, ... in the order its links appear in the file;
* node ids are 1-based positions in the file's ``nodes`` mapping; a switch port's MAC is
  ``02:00:00:00:<node id>:<port>``, a host's ``02:00:00:01:<node id>:00``;
* a host's IPv4 address is ``10.0.<node id>.1`` (routes are /32 per host);
* routes are shortest paths by hop count, ties broken by neighbour name, computed per
  destination so that every switch's next hop agrees with every flow's path.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from controlplane.params import LawParams, PortParams
from hosts.cvihis.variants import CvihisReading
from hosts.gcc.params import GccParams
from hosts.pgmcc.params import PgmccParams

__all__ = ["BufferTime", "Node", "Link", "Flow", "Event", "Options", "Topology", "CONTROLS", "CVIHIS_CONTROLS", "MULTICAST_CONTROLS",
           "DEFAULT_TCP_CC", "TCP_RECORD_BYTES",
           "DEFAULT_REORDER_DELAY_NS"]

#: The values a flow's ``control`` may take (end-to-end controls join with the CVIHIS issue).
CONTROLS = ("alinea", "fixed", "cvihis-rtm", "cvihis-blm", "tcp", "tfrc", "ledbat", "gcc", "pgmcc")
#: The controls a multicast flow (``dst: [H2, H3]``) may take: hop-by-hop ALINEA, a fixed rate, pgmcc.
MULTICAST_CONTROLS = ("alinea", "fixed", "pgmcc")
#: The end-to-end controls: the receiver decides, the sender paces (hosts/cvihis).
CVIHIS_CONTROLS = ("cvihis-rtm", "cvihis-blm")
#: The simulator's default control latency, a report's packet-in to its queue rate applied: the
#: median the netns backend measures for p4switch on our 2-core machines (about 0.5 ms idle), rounded
#: up to a whole millisecond (docs/howto/netns.md, "Control latency").
DEFAULT_CONTROL_LATENCY_NS = 1_000_000
#: ``control: tcp`` (the kernel's TCP, netns backend only): the congestion control when the file names
#: none, and the application record a TCP sender writes (a "packet" of a TCP flow in the CSVs and the
#: summary: a 20-byte header -- length, sequence number, send time -- and padding; 1448 B = the MSS of
#: a 1500-byte MTU with TCP timestamps, so a record is about one segment's payload).
DEFAULT_TCP_CC = "cubic"
#: ``reorder_delay`` when a link with ``reorder`` gives none: at 2 Mb/s five 1000-byte packets pass a
#: held-back one, more than the three later packets that make TCP and TFRC call it lost.
DEFAULT_REORDER_DELAY_NS = 20_000_000
TCP_RECORD_BYTES = 1448


@dataclass(frozen=True)
class BufferTime:
    """Where a buffer given as a duration came from (``buffer: 5ms``): ``ns`` of draining at
    ``rate_bps`` in ``packet_size``-byte packets. The buffer itself is always the packet count
    the loader derived from these; this is kept only to show it (``hbh show``)."""

    ns: int
    rate_bps: float
    packet_size: int

    @property
    def packets(self) -> int:
        """``ns * rate / (8 * packet_size)`` rounded up, at least 1 (a 1e-9 packet margin absorbs float noise)."""
        return max(1, math.ceil(self.ns * self.rate_bps / (8e9 * self.packet_size) - 1e-9))


@dataclass(frozen=True)
class Node:
    name: str
    kind: Literal["host", "switch"]
    index: int  # 1-based position in the file: node id, addresses
    receive_buffer: int | None = None  # hosts: application buffer (packets); None: no buffer, no reports
    playout_bps: float | None = None  # hosts: rate the application drains that buffer at
    line: int = 0
    clock_offset_ns: int = 0  # hosts: added to every clock reading of the host (timestamps)
    receive_buffer_time: BufferTime | None = None  # hosts: receive_buffer was given as a duration

    @property
    def is_switch(self) -> bool:
        return self.kind == "switch"


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    rate_bps: float
    delay_ns: int
    buffer: int  # packets: the modelled incoming buffer at each end (switch port or host)
    line: int = 0
    buffer_time: BufferTime | None = None  # the buffer was given as a duration (already in ``buffer``)
    reorder: float = 0.0  # fraction of frames (ALINEA reports excepted) delivered reorder_delay_ns late
    reorder_delay_ns: int = 0
    # fraction of frames (ALINEA reports excepted) the link loses, each independently, in both directions
    # (drawn from a generator of the link's own, seeded by the run's seed: the seed's set 2)
    loss: float = 0.0

    @property
    def ends(self) -> tuple[str, str]:
        return (self.a, self.b)

    def other(self, name: str) -> str:
        return self.b if name == self.a else self.a


@dataclass(frozen=True)
class Flow:
    name: str
    src: str
    dst: str
    control: str  # one of CONTROLS
    start_ns: int
    stop_ns: int | None  # None: until the end of the run
    packet_size: int  # bytes of the whole frame (Ethernet header included)
    r_max_bps: float | None = None  # the connection's R_max (ALINEA), None: the links decide
    rate_bps: float | None = None  # fixed: the sending rate
    path: tuple[str, ...] = ()  # node names src .. dst, filled by Topology
    line: int = 0
    cc: str | None = None  # tcp: the kernel's congestion control (TCP_CONGESTION)
    size_bytes: int | None = None  # tcp: bytes to deliver, None: bulk until stop (or the run's end)
    # tcp: selective acknowledgements (netns: the kernel's net.ipv4.tcp_sack in both hosts' namespaces;
    # the simulator: the model's SACK option, RFC 2018 / RFC 6675; without it NewReno's recovery, RFC 6582)
    sack: bool = True
    target_ns: int | None = None  # ledbat: its target queuing delay (None: RFC 6817's 100 ms)
    gcc: GccParams | None = None  # gcc: its rates and filter (None: the defaults; max_rate None: r_max or the first link)
    pgmcc: PgmccParams | None = None  # pgmcc: its acker switch ratio, timeout, loss filter (None: the defaults)
    # CVIHIS (cvihis-rtm, cvihis-blm, tcp with cc cvihis-rtm): the reading it runs (hosts/cvihis/variants.py)
    cvihis: CvihisReading = field(default_factory=CvihisReading)
    # multicast (docs/howto/multicast.md): this flow is the branch toward ``dst`` of group ``group`` (the file's
    # flow name), whose receivers are ``receivers`` (file order); None and () for a unicast flow
    group: str | None = None
    receivers: tuple[str, ...] = ()

    @property
    def is_multicast(self) -> bool:
        return self.group is not None

    @property
    def sends(self) -> bool:
        """Does this flow's source send it? Unicast: yes; a group's branches: only the lead (its first
        receiver's), whose one stream the switches replicate to every receiver."""
        return self.group is None or self.dst == self.receivers[0]


@dataclass(frozen=True)
class Event:
    """A change during a run: a link's rate, or ALINEA parameters of some directed links."""

    at_ns: int
    kind: Literal["link_rate", "alinea", "mode"]
    link: tuple[str, str] | None = None  # link_rate
    rate_bps: float | None = None  # link_rate
    targets: tuple[tuple[str, str], ...] = ()  # alinea: (node, toward) pairs it applies to
    law_changes: tuple[tuple[str, float], ...] = ()  # alinea: LawParams field -> value
    interval_us: int | None = None  # alinea: new report interval of the targets' downstream ports
    flow: str | None = None  # mode: the CVIHIS flow whose receiver switches mode
    mode: str | None = None  # mode: "rtm" or "blm"
    line: int = 0


@dataclass(frozen=True)
class Options:
    report_loss: float = 0.0  # fraction of ALINEA reports lost at random on every link
    fairness: str = "per-port"  # "per-flow": laws' R_max weighted by the flows behind them (topo/file/fairness.py)
    queue_model: str = "bmv2"  # p4switch's egress queues: "bmv2" (departure fixed at enqueue) or "shaper"
    # simulator: a report's packet-in reaches the agent after half of it, the agent's set_queue_rate
    # reaches the queue after the other half (netns: the real one, measured)
    control_latency_ns: int = DEFAULT_CONTROL_LATENCY_NS
    # simulator: the 99th percentile of that latency (lognormal around the median above, each
    # direction in order, seeded); None = every call takes exactly control_latency
    control_latency_p99_ns: int | None = None
    # on BMv2's queues, each agent polls the reports of the ports traffic enters by (docs/howto/bmv2.md)
    report_polls: bool = False
    # equal-cost multipath: a switch with several shortest next hops toward a host spreads flows over
    # them by 5-tuple hash (alinea.p4's ecmp_group); off, the one next hop of the tie-break (by name)
    ecmp: bool = False
    # "hop-by-hop" or "end-to-end" whatever the flows' controls (e.g. TCP flows under ALINEA switches);
    # None: hop-by-hop when some flow is ALINEA-controlled (topo/net/plan.py, network_mode)
    network: str | None = None
    # per-destination classes (docs/howto/fabric.md): 1 = one FIFO and one law per port; N in 2..7: a host's
    # index among its switch's hosts, mod N, is its class, with a priority queue and a law per port
    classes: int = 1
    # pgmcc (docs/howto/multicast.md): every switch drops a session's repeated NAKs for a packet within this hold
    # (PGM's router NAK aggregation; alinea.p4's nak_aggregation); 0: off
    nak_aggregation_ns: int = 0


@dataclass
class Topology:
    """The resolved topology. ``law`` and ``ports`` are keyed by directed link.

    * ``law[(u, v)]`` -- the parameters of the law ``u`` runs on ``v``'s reports (``u`` sets its
      rate toward ``v``); present for every directed link whose downstream end ``v`` reports
      (a switch, or a host with a receive buffer).
    * ``ports[(v, u)]`` -- ``v``'s modelled incoming buffer on the link from ``u`` (capacity =
      the link's buffer, report interval); present for every switch ``v`` and neighbour ``u``.
    * ``host_buffers[(h, u)]`` -- the same for a host ``h`` with a receive buffer, on its one
      link from ``u``: capacity = ``receive_buffer``, interval = that of the law ``(u, h)``.
      Kept apart from ``ports`` (switch ports only) so a host's report interval is not lost.
    """

    name: str
    source: str
    nodes: dict[str, Node]
    links: list[Link]
    flows: list[Flow]
    law: dict[tuple[str, str], LawParams]
    ports: dict[tuple[str, str], PortParams]
    events: list[Event] = field(default_factory=list)
    options: Options = field(default_factory=Options)
    description: str = ""
    host_buffers: dict[tuple[str, str], PortParams] = field(default_factory=dict)
    # per law: where each value came from ("file", "derived" from the topology, or "default")
    provenance: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._port_numbers: dict[tuple[str, str], int] = {}
        counters: dict[str, int] = {}
        for link in self.links:
            for end, other in ((link.a, link.b), (link.b, link.a)):
                counters[end] = counters.get(end, 0) + 1
                self._port_numbers[(end, other)] = counters[end]
        self._next_hop = {dst: self._tree_toward(dst) for dst, n in self.nodes.items() if not n.is_switch}
        self._hops: dict[str, dict[str, tuple[str, ...]]] = {}

    # ---- structure -------------------------------------------------------------------------------
    @property
    def switches(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_switch]

    @property
    def hosts(self) -> list[Node]:
        return [n for n in self.nodes.values() if not n.is_switch]

    def neighbours(self, name: str) -> list[str]:
        return [link.other(name) for link in self.links if name in link.ends]

    def link_between(self, a: str, b: str) -> Link:
        for link in self.links:  # {a, b} == set(link.ends), without two sets per link (the analysis asks ~2,000)
            if link.a == a and link.b == b or link.a == b and link.b == a:
                return link
        raise KeyError(f"no link between {a} and {b}")

    def port(self, node: str, neighbour: str) -> int:
        """``node``'s port number on the link to ``neighbour`` (hosts have one port, 1)."""
        return self._port_numbers[(node, neighbour)]

    def neighbour_on(self, node: str, port: int) -> str:
        for (n, other), number in self._port_numbers.items():
            if n == node and number == port:
                return other
        raise KeyError(f"{node} has no port {port}")

    def reports(self, name: str) -> bool:
        """Does ``name`` report its buffer occupancy upstream (switches, hosts with a buffer)?"""
        node = self.nodes[name]
        return node.is_switch or node.receive_buffer is not None

    # ---- addresses -------------------------------------------------------------------------------
    def mac(self, node: str, neighbour: str | None = None) -> int:
        n = self.nodes[node]
        if n.is_switch:
            if neighbour is None:
                raise ValueError(f"switch {node}: a MAC belongs to a port, name the neighbour")
            return (0x02_00_00_00 << 16) | (n.index << 8) | self.port(node, neighbour)
        return (0x02_00_00_01 << 16) | (n.index << 8)

    def ip(self, host: str) -> int:
        return (10 << 24) | (self.nodes[host].index << 8) | 1

    # ---- routes ----------------------------------------------------------------------------------
    def _bfs_toward(self, dst: str) -> tuple[dict[str, int], dict[str, str]]:
        """Hops to ``dst`` and the next hop toward it from every node that can reach it (BFS from
        dst, ties by name). Hosts never forward, so they are leaves of the tree (except ``dst``)."""
        nxt: dict[str, str] = {}
        dist = {dst: 0}
        queue = deque([dst])
        while queue:
            cur = queue.popleft()
            if cur != dst and not self.nodes[cur].is_switch:
                continue
            for nb in sorted(self.neighbours(cur)):
                if nb not in dist:
                    dist[nb] = dist[cur] + 1
                    nxt[nb] = cur
                    queue.append(nb)
        return dist, nxt

    def _tree_toward(self, dst: str) -> dict[str, str]:
        return self._bfs_toward(dst)[1]

    def next_hop(self, node: str, dst_host: str) -> str | None:
        return self._next_hop[dst_host].get(node)

    def next_hops(self, node: str, dst_host: str) -> tuple[str, ...]:
        """Every next hop of ``node`` on a shortest path to ``dst_host`` (sorted by name) when
        ``options.ecmp``; otherwise the one of :meth:`next_hop` (empty if unreachable)."""
        if not self.options.ecmp:
            nxt = self.next_hop(node, dst_host)
            return () if nxt is None else (nxt,)
        if dst_host not in self._hops:
            self._hops[dst_host] = self._equal_cost_toward(dst_host)
        return self._hops[dst_host].get(node, ())

    def _equal_cost_toward(self, dst: str) -> dict[str, tuple[str, ...]]:
        dist = self._bfs_toward(dst)[0]
        return {n: tuple(sorted(nb for nb in self.neighbours(n) if dist.get(nb) == d - 1
                                and (nb == dst or self.nodes[nb].is_switch)))
                for n, d in dist.items() if d > 0}

    def all_paths(self, src: str, dst: str) -> list[tuple[str, ...]]:
        """Every path the routes may give a flow from ``src`` to ``dst`` (one without ECMP)."""
        if src == dst:
            return [(dst,)]
        return [(src, *rest) for nxt in self.next_hops(src, dst) for rest in self.all_paths(nxt, dst)]

    def path(self, src: str, dst: str) -> tuple[str, ...] | None:
        """Node names from ``src`` to host ``dst`` along the routes, None if unreachable."""
        hops = [src]
        while hops[-1] != dst:
            nxt = self.next_hop(hops[-1], dst)
            if nxt is None or len(hops) > len(self.nodes):
                return None
            hops.append(nxt)
        return tuple(hops)

    # ---- multicast (docs/howto/multicast.md) -----------------------------------------------------------
    def groups(self) -> dict[str, list[Flow]]:
        """Group name -> its branch flows, in receiver order (file order of the groups)."""
        out: dict[str, list[Flow]] = {}
        for f in self.flows:
            if f.group is not None:
                out.setdefault(f.group, []).append(f)
        return out

    def group_id(self, group: str) -> int:
        """The group's 1-based id: its PRE multicast group id and the low bits of its address."""
        return list(self.groups()).index(group) + 1

    def group_ip(self, group: str) -> int:
        """The group's IPv4 destination address, 239.1.<id >> 8>.<id & 255>."""
        return (239 << 24) | (1 << 16) | self.group_id(group)

    def wire_ids(self) -> dict[str, int]:
        """Flow name -> the flow id its datagrams carry: a unicast flow's 1-based index in ``flows``;
        every branch of a group carries its lead's (the one stream the source sends)."""
        index = {f.name: i for i, f in enumerate(self.flows, start=1)}
        return {f.name: index[self.sender_name(f)] for f in self.flows}

    def wire_id(self, flow_name: str) -> int:
        return self.wire_ids()[flow_name]

    @staticmethod
    def sender_name(f: Flow) -> str:
        """The flow whose source sends ``f``'s packets: itself, or its group's lead branch."""
        return f.name if f.group is None else f"{f.group}@{f.receivers[0]}"

    def local_flow(self, host: str, wire_id: int) -> str:
        """The name under which ``host`` records datagrams of ``wire_id``: the flow itself, or for a
        group its branch toward ``host`` (the lead's name on any other host, e.g. the source)."""
        f = self.flows[wire_id - 1]
        if f.group is not None and host in f.receivers:
            return f"{f.group}@{host}"
        return f.name

    def tree_links(self, group: str) -> list[tuple[str, str]]:
        """The directed links of the group's tree, each once, in branch order."""
        seen: dict[tuple[str, str], None] = {}
        for f in self.groups()[group]:
            for u, v in zip(f.path, f.path[1:]):
                seen[(u, v)] = None
        return list(seen)

    def tree_children(self, group: str, node: str) -> list[str]:
        """The nodes ``node`` sends the group's packets to (its copies), in branch order."""
        return [v for u, v in self.tree_links(group) if u == node]

    def directed_links(self) -> list[tuple[str, str]]:
        """Every (upstream, downstream) pair that some flow uses, in a stable order."""
        seen: dict[tuple[str, str], None] = {}
        for flow in self.flows:
            for path in self.all_paths(flow.src, flow.dst) if self.options.ecmp else [flow.path]:
                for u, v in zip(path, path[1:]):
                    seen[(u, v)] = None
        return list(seen)
