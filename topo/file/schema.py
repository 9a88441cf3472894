"""The topology file format (docs/reference/topologies.md): YAML in, a resolved ``topo.net.model.Topology`` out.

Why a hand-written walker rather than a schema library: every complaint must name the file, the
line and the key path (``FILE:LINE: links[3].rate: ...``), and the values use the project's own
unit parsers; PyYAML's composed node tree keeps the lines, ``topo.file.yaml_tree`` walks it.

The loader does all resolution once, so backends never see defaults or selectors: every
directed link whose far end reports gets its final ``LawParams`` (r_max derived from the flows),
every switch port its ``PortParams``, every flow its path, every event its targets.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yaml.nodes import Node as YamlNode
from yaml.nodes import ScalarNode, SequenceNode

from controlplane.agent import MAX_CLASSES
from controlplane.dataplane_config import MCAST_MAX_COPIES, MCAST_RING
from controlplane.params import MAX_32, LawParams, ParamError, PortParams, validate_law, validate_port
from controlplane.units import (
    OfCapacity,
    UnitError,
    format_rate,
    parse_bytes,
    parse_duration_ns,
    parse_fraction,
    parse_rate,
    parse_rate_or_share,
    resolve_rate,
)
from hosts.cvihis.variants import CHOICE_KEYS as CVIHIS_CHOICE_KEYS
from hosts.cvihis.variants import RUN_KEYS as CVIHIS_RUN_KEYS
from hosts.cvihis.variants import CvihisReading, ReadingError
from hosts.gcc.params import FILTERS as GCC_FILTERS
from hosts.gcc.params import GAIN_SETS as GCC_GAIN_SETS
from hosts.gcc.params import GccParams
from hosts.pgmcc.params import RTT_UNITS, PgmccParams
from hosts.tcp import SIM_ONLY_CC
from p4switch.tm import MAX_QUEUE_DEPTH, QUEUE_MODELS
from topo.analysis.derive import derive_missing
from topo.file.fairness import FAIRNESS, apply_fairness
from topo.file.leafspine import expand_fabric
from topo.file.workload import expand_workload
from topo.file.yaml_tree import Doc, Entry, TopologyError, compose
from topo.net.model import (
    CONTROLS,
    CVIHIS_CONTROLS,
    DEFAULT_CONTROL_LATENCY_NS,
    DEFAULT_REORDER_DELAY_NS,
    DEFAULT_TCP_CC,
    MULTICAST_CONTROLS,
    TCP_RECORD_BYTES,
    BufferTime,
    Event,
    Flow,
    Link,
    Node,
    Options,
    Topology,
)
from topo.net.routes import routed_paths

__all__ = ["TopologyError", "load_topology", "load_topology_text", "kernel_congestion_controls"]


#: Where the running kernel lists the congestion controls a TCP socket may take (a ``tcp`` flow's ``cc``).
AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
#: Accepted when the kernel does not say (no /proc file): every Linux has these two built in.
FALLBACK_CC = ("reno", "cubic")


def kernel_congestion_controls() -> tuple[tuple[str, ...], bool]:
    """The congestion controls this kernel offers, and whether it said so (False: the fallback)."""
    try:
        names = tuple(AVAILABLE_CC.read_text().split())
    except OSError:
        return FALLBACK_CC, False
    return (names, True) if names else (FALLBACK_CC, False)

TOP_KEYS = ("name", "description", "defaults", "fabric", "workload", "nodes", "groups", "links", "flows", "alinea", "events",
            "options", "cvihis")
DEFAULT_KEYS = ("link", "packet_size", "alinea")
LINK_KEYS = ("ends", "rate", "delay", "buffer", "reorder", "reorder_delay", "loss")
NODE_KEYS = ("kind", "receive_buffer", "playout", "clock_offset")
FLOW_KEYS = ("name", "src", "dst", "control", "start", "stop", "packet_size", "r_max", "rate", "cc", "size", "sack", "target",
             "gcc", "cvihis", "pgmcc")
CVIHIS_KEYS = ("variant", *CVIHIS_CHOICE_KEYS, *CVIHIS_RUN_KEYS)
GCC_KEYS = ("min_rate", "max_rate", "start_rate", "filter", "gains")
PGMCC_KEYS = ("switch_ratio", "timeout", "loss_weight", "repair", "nak_retries", "rtt")
EVENT_KEYS = ("at", "link", "rate", "alinea", "flow", "mode")
MAX_CONTROL_LATENCY_NS = 1_000_000_000
OPTION_KEYS = ("report_loss", "fairness", "queue_model", "control_latency", "control_latency_p99", "report_polls",
               "ecmp", "network", "classes", "nak_aggregation")
NETWORK_MODES = ("hop-by-hop", "end-to-end")
#: Law keys a file may set in defaults.alinea (r_max is derived per link, see _derived_r_max).
DEFAULT_LAW_KEYS = ("o_min", "o_max", "w_max", "w_min", "k_p", "r_floor")
#: Law keys an override or an event may set.
LAW_KEYS = DEFAULT_LAW_KEYS + ("r_max",)
SELECTOR_KEYS = ("node", "toward")
FRACTION_KEYS = ("o_min", "o_max")

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
PACKET_SIZE_RANGE = (64, 9000)
MAX_INTERVAL_US = (1 << 32) - 1
#: A node id is one byte of the addresses topo.net.model derives; with no duplicate links a switch
#: then has at most 254 ports, which fits its one-byte port field too.
MAX_ID = 255
#: The most packets a buffer may hold: a link's (a switch port's, p4switch's and BMv2's queue
#: depth limit) and a host's receive buffer (PortParams' 32 bits).
LINK_BUFFER_LIMIT = (MAX_QUEUE_DEPTH, "the switch's maximum queue depth")
RECEIVE_BUFFER_LIMIT = (MAX_32, "the largest receive buffer")
BUFFER_FORMS = "a buffer is a whole number of packets, e.g. 200, or a duration, e.g. 5ms"

DirectedLink = tuple[str, str]


def load_topology(path: str | Path) -> Topology:
    """Read, validate and resolve the topology file at ``path``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: cannot read the topology file: {exc}") from None
    return load_topology_text(text, str(path))


def load_topology_text(text: str, source: str, edit: Callable[[YamlNode], dict[int, str]] | None = None) -> Topology:
    """Like :func:`load_topology` for text already read; ``source`` names it in errors.

    ``edit`` changes the composed YAML tree before it is read (``hbh sweep``'s points), so an
    edited value passes exactly the checks a file's value does; it returns the labels of the
    lines it gave its new nodes (see :class:`topo.file.yaml_tree.Doc`).
    """
    root = compose(text, source)
    labels = edit(root) if edit is not None else {}
    doc = Doc(source, labels)
    fabric = expand_fabric(root, doc)  # fabric: -> nodes and links (topo/file/leafspine.py)
    expand_workload(root, doc, fabric)  # workload: -> flows (topo/file/workload.py)
    top = doc.mapping(root, "", TOP_KEYS, required=("nodes", "links"))
    return _Loader(doc, top).load()


# ---- where a law value came from (so an invalid combination is blamed on the right line) ----------
@dataclass(frozen=True)
class _Origin:
    """The setting that gave a law its value; the highest ``rank`` among the fields involved is blamed."""

    rank: int
    path: str
    line: int


_BUILTIN = _Origin(0, "(built-in default)", 1)


def _provenance(origin: _Origin) -> str:
    return "default" if origin.rank == 0 else "derived" if origin.rank == _DERIVED_RANK else "file"



#: A law value as written: b/s or a fraction, or a multiple of the regulated link's capacity (``0.25C``).
LawValue = float | OfCapacity

_DERIVED_RANK = 1
_DEFAULTS_RANK = 2
_OVERRIDE_RANK = 3  # + the override's index: later overrides win the blame


@dataclass
class _Draft:
    """A law being resolved: its values, interval and the origin of each."""

    values: dict[str, LawValue]
    origins: dict[str, _Origin]
    interval_us: int
    interval_origin: _Origin

    def apply(self, changes: dict[str, tuple[LawValue, int]], path: str, rank: int) -> None:
        for key, (value, line) in changes.items():
            self.values[key] = value
            self.origins[key] = _Origin(rank, path, line)


@dataclass
class _Selector:
    """An ``alinea`` override or an alinea event: which directed laws, and what to change."""

    path: str
    line: int
    node: str | None
    toward: str | None
    law: dict[str, tuple[LawValue, int]]  # key -> (value, line of the key)
    interval: tuple[int, int] | None  # (µs, line)

    def matches(self, link: DirectedLink) -> bool:
        return (self.node is None or link[0] == self.node) and (self.toward is None or link[1] == self.toward)


@dataclass(frozen=True)
class _BufferDraft:
    """A buffer given as a duration (``5ms``): resolved into packets once the flows are routed,
    since the packet size it is counted in is that of the flows crossing the link."""

    ns: int
    text: str  # as written, for messages
    node: YamlNode  # where a complaint about it points
    path: str


@dataclass(frozen=True)
class _Group:
    """A named receiver set of the file's ``groups`` (docs/reference/topologies.md): its hosts and their list items."""

    name: str
    hosts: tuple[str, ...]
    items: tuple[YamlNode, ...]


@dataclass
class _Defaults:
    rate_bps: float = 2.0e6
    delay_ns: int = 3_000_000
    buffer: int | _BufferDraft = 200
    reorder: float = 0.0
    reorder_delay_ns: int = DEFAULT_REORDER_DELAY_NS
    loss: float = 0.0
    packet_size: int = 1000
    law: dict[str, tuple[LawValue, int]] = field(default_factory=dict)
    interval: tuple[int, int] | None = None
    law_path: str = "defaults.alinea"


class _Loader:
    """One file's resolution; each section is read by its own method, in dependency order."""

    def __init__(self, doc: Doc, top: dict[str, Entry]) -> None:
        self.doc = doc
        self.top = top
        self.nodes: dict[str, Node] = {}
        self.links: list[Link] = []
        self.defaults = _Defaults()
        self.buffer_drafts: dict[int | str, _BufferDraft] = {}  # link index / host name -> its duration
        self.groups: dict[str, _Group] = {}

    def load(self) -> Topology:
        self.defaults = self._defaults()
        self.cvihis = self._cvihis(self.top["cvihis"].value, "cvihis") if "cvihis" in self.top else CvihisReading()
        self.nodes = self._nodes()
        self.links = self._links()
        self.groups = self._groups()
        flows, flow_nodes = self._flows()
        skeleton = Topology(self._name(), self.doc.source, self.nodes, self.links, [], {}, {})
        flows = [self._routed(skeleton, i, f, flow_nodes[i]) for i, f in enumerate(flows)]
        self._check_trees(flows, flow_nodes)
        self._flows_by_name = flows
        if self.buffer_drafts:
            self._resolve_buffers(flows, skeleton.name)
            skeleton = Topology(skeleton.name, self.doc.source, self.nodes, self.links, [], {}, {})
        law, intervals, origins = self._laws(skeleton, flows)
        options = self._options()
        draft = Topology(skeleton.name, self.doc.source, self.nodes, self.links, flows, law,
                         self._ports(skeleton, intervals), options=options,
                         host_buffers=self._host_buffers(skeleton, intervals))
        law, intervals = derive_missing(draft, intervals, origins)
        ports = self._ports(skeleton, intervals)
        host_buffers = self._host_buffers(skeleton, intervals)
        events = self._events(skeleton, law)
        return apply_fairness(Topology(
            name=skeleton.name, source=self.doc.source, nodes=self.nodes, links=self.links, flows=flows,
            law=law, ports=ports, events=events, options=options, description=self._description(),
            host_buffers=host_buffers, provenance=origins))

    # ---- small typed readers ---------------------------------------------------------------------
    def _rate(self, node: YamlNode, path: str) -> float:
        value = self.doc.unit(node, path, parse_rate)
        if not (math.isfinite(value) and value > 0):
            raise self.doc.error(node, path, f"rate = {value:g} b/s: must be > 0")
        return value

    def _duration(self, node: YamlNode, path: str) -> int:
        value = self.doc.unit(node, path, parse_duration_ns)
        if value < 0:
            raise self.doc.error(node, path, f"{value} ns: must be >= 0")
        return value

    def _capacity(self, node: YamlNode, path: str) -> int:
        value = self.doc.integer(node, path, "packets")
        try:
            validate_port(PortParams(capacity=value))
        except ParamError as exc:
            raise self.doc.error(node, path, str(exc)) from None
        return value

    def _buffer(self, node: YamlNode, path: str, limit: tuple[int, str]) -> int | _BufferDraft:
        """A buffer: packets, or a duration (text ending in a unit) that :meth:`_resolve_buffers`
        turns into packets. A number in text (``"200"``, ``1e3``) is no packet count and is refused."""
        value = self.doc.scalar(node, path)
        if not (isinstance(value, str) and re.fullmatch(r"\s*-?[0-9.].*[A-Za-zµ]\s*", value)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.doc.error(node, path, f"expected a whole number of packets, got {value!r}; "
                                                 "a buffer may also be a duration, e.g. 5ms")
            packets = self._capacity(node, path)
            if packets > limit[0]:
                raise self.doc.error(node, path, f"{packets} packets: above {limit[1]} ({limit[0]} packets)")
            return packets
        text = value.strip()
        try:
            ns = parse_duration_ns(text.removeprefix("-"), path)
        except UnitError as exc:
            raise TopologyError(f"{self.doc.where(self.doc.line(node))}: {exc}; {BUFFER_FORMS}") from None
        if text.startswith("-") or ns <= 0:
            raise self.doc.error(node, path, f"{text}: a buffer's duration must be > 0")
        return _BufferDraft(ns, text, node, path)

    def _interval_us(self, node: YamlNode, path: str) -> int:
        ns = self._duration(node, path)
        if ns % 1000:
            raise self.doc.error(node, path, f"{ns} ns is not a whole number of microseconds")
        if ns // 1000 > MAX_INTERVAL_US:
            raise self.doc.error(node, path, f"{ns // 1000} us does not fit 32 bits of microseconds")
        return ns // 1000

    def _node_ref(self, node: YamlNode, path: str) -> str:
        name = self.doc.text(node, path)
        if name not in self.nodes:
            raise self.doc.error(node, path, f"unknown node {name!r} (nodes: {', '.join(self.nodes)})")
        return name

    def _law_values(self, entries: dict[str, Entry], path: str, keys: tuple[str, ...]) -> dict[str, tuple[LawValue, int]]:
        out: dict[str, tuple[LawValue, int]] = {}
        for key in keys:
            if key in entries:
                parse = parse_fraction if key in FRACTION_KEYS else parse_rate_or_share
                value = self.doc.unit(entries[key].value, f"{path}.{key}", parse)
                out[key] = (value, self.doc.line(entries[key].key_node))
        return out

    def _interval_entry(self, entries: dict[str, Entry], path: str) -> tuple[int, int] | None:
        if "interval" not in entries:
            return None
        entry = entries["interval"]
        return self._interval_us(entry.value, f"{path}.interval"), self.doc.line(entry.key_node)

    # ---- name, description, defaults --------------------------------------------------------------
    def _name(self) -> str:
        if "name" in self.top:
            return self.doc.text(self.top["name"].value, "name")
        return Path(self.doc.source).stem

    def _description(self) -> str:
        if "description" not in self.top:
            return ""
        value = self.doc.scalar(self.top["description"].value, "description")
        if not isinstance(value, str):
            raise self.doc.error(self.top["description"].value, "description", f"expected text, got {value!r}")
        return value

    def _defaults(self) -> _Defaults:
        d = _Defaults()
        if "defaults" not in self.top:
            return d
        entries = self.doc.mapping(self.top["defaults"].value, "defaults", DEFAULT_KEYS)
        if "link" in entries:
            link = self.doc.mapping(entries["link"].value, "defaults.link", LINK_KEYS[1:])
            if "rate" in link:
                d.rate_bps = self._rate(link["rate"].value, "defaults.link.rate")
            if "delay" in link:
                d.delay_ns = self._duration(link["delay"].value, "defaults.link.delay")
            if "buffer" in link:
                d.buffer = self._buffer(link["buffer"].value, "defaults.link.buffer", LINK_BUFFER_LIMIT)
            d.reorder, d.reorder_delay_ns = self._reorder(link, "defaults.link", d.reorder, d.reorder_delay_ns)
            d.loss = self._loss(link, "defaults.link", d.loss)
        if "packet_size" in entries:
            d.packet_size = self._packet_size(entries["packet_size"].value, "defaults.packet_size")
        if "alinea" in entries:
            law = self.doc.mapping(entries["alinea"].value, d.law_path, DEFAULT_LAW_KEYS + ("interval",))
            d.law = self._law_values(law, d.law_path, DEFAULT_LAW_KEYS)
            d.interval = self._interval_entry(law, d.law_path)
            self._check_default_law(d, entries["alinea"].value)
        return d

    def _check_default_law(self, d: _Defaults, node: YamlNode) -> None:
        """The defaults must be valid on their own (r_max aside: it is derived per link)."""
        values = {k: resolve_rate(v, d.rate_bps, k) for k, (v, _) in d.law.items()}
        floor = values.get("r_floor", LawParams().r_floor)
        try:
            validate_law(LawParams(**values, r_max=max(LawParams().r_max, floor)))
        except ParamError as exc:
            raise self.doc.error(node, d.law_path, str(exc)) from None

    def _packet_size(self, node: YamlNode, path: str) -> int:
        size = self.doc.unit(node, path, parse_bytes)
        lo, hi = PACKET_SIZE_RANGE
        if not lo <= size <= hi:
            raise self.doc.error(node, path, f"{size} bytes: a packet is {lo} to {hi} bytes (the whole frame)")
        return size

    # ---- nodes and links ---------------------------------------------------------------------------
    def _nodes(self) -> dict[str, Node]:
        entries = self.doc.mapping(self.top["nodes"].value, "nodes")
        if not entries:
            raise self.doc.error(self.top["nodes"].value, "nodes", "no nodes")
        if len(entries) > MAX_ID:
            extra = list(entries.values())[MAX_ID]
            raise self.doc.error(extra.key_node, f"nodes.{extra.key}",
                                 f"more than {MAX_ID} nodes (a node id is one byte of its MAC and IPv4 addresses)")
        return {name: self._node(entry, index) for index, (name, entry) in enumerate(entries.items(), start=1)}

    def _node(self, entry: Entry, index: int) -> Node:
        path = f"nodes.{entry.key}"
        if not NAME_RE.fullmatch(entry.key):
            raise self.doc.error(entry.key_node, path,
                                 f"bad node name {entry.key!r} (a letter, then letters, digits, '_' or '-')")
        fields = self.doc.mapping(entry.value, path, NODE_KEYS, required=("kind",))
        kind = self.doc.text(fields["kind"].value, f"{path}.kind")
        if kind not in ("host", "switch"):
            raise self.doc.error(fields["kind"].value, f"{path}.kind", f"unknown kind {kind!r} (use host or switch)")
        for key in ("receive_buffer", "playout"):
            if key in fields and kind != "host":
                raise self.doc.error(fields[key].key_node, f"{path}.{key}", f"only hosts have a {key}")
        if ("receive_buffer" in fields) != ("playout" in fields):
            raise self.doc.error(entry.key_node, path, "give both receive_buffer and playout, or neither")
        buffer = playout = None
        if "receive_buffer" in fields:
            buffer = self._buffer(fields["receive_buffer"].value, f"{path}.receive_buffer", RECEIVE_BUFFER_LIMIT)
            playout = self._rate(fields["playout"].value, f"{path}.playout")
            if isinstance(buffer, _BufferDraft):  # resolved at the playout rate by _resolve_buffers
                self.buffer_drafts[entry.key] = buffer
                buffer = 0
        offset = 0
        if "clock_offset" in fields:
            if kind != "host":
                raise self.doc.error(fields["clock_offset"].key_node, f"{path}.clock_offset",
                                     "only hosts have a clock_offset")
            offset = self._signed_duration(fields["clock_offset"].value, f"{path}.clock_offset")
        return Node(entry.key, kind, index, buffer, playout, line=self.doc.line(entry.key_node),  # type: ignore[arg-type]
                    clock_offset_ns=offset)

    def _signed_duration(self, node: YamlNode, path: str) -> int:
        """A duration that may be negative (a clock offset): ``-1s``, ``250ms``."""
        text = node.value if isinstance(node.value, str) else None
        if text is not None and text.strip().startswith("-"):
            return -self._duration(type(node)(node.tag, text.strip()[1:], node.start_mark, node.end_mark), path)
        return self._duration(node, path)

    def _links(self) -> list[Link]:
        links: list[Link] = []
        seen: dict[frozenset[str], int] = {}
        host_link: dict[str, int] = {}
        for i, item in enumerate(self.doc.sequence(self.top["links"].value, "links")):
            link, ends_node = self._link(item, i)
            pair = frozenset(link.ends)
            if pair in seen:
                raise self.doc.error(ends_node, f"links[{i}].ends",
                                     f"duplicate link {link.a} -- {link.b} (first: links[{seen[pair]}])")
            seen[pair] = i
            for end in link.ends:
                if self.nodes[end].is_switch:
                    continue
                if end in host_link:
                    raise self.doc.error(ends_node, f"links[{i}].ends",
                                         f"host {end} already has a link (links[{host_link[end]}]); "
                                         "a host has exactly one link")
                host_link[end] = i
            links.append(link)
        for node in self.nodes.values():
            if not node.is_switch and node.name not in host_link:
                raise self.doc.error_at_line(node.line, f"nodes.{node.name}",
                                             f"host {node.name} has no link (a host has exactly one link)")
        return links

    def _link(self, item: YamlNode, i: int) -> tuple[Link, YamlNode]:
        """The link and its ``ends`` node (where errors about the pair point)."""
        path = f"links[{i}]"
        fields = self.doc.mapping(item, path, LINK_KEYS, required=("ends",))
        ends = self.doc.sequence(fields["ends"].value, f"{path}.ends")
        if len(ends) != 2:
            raise self.doc.error(fields["ends"].value, f"{path}.ends", f"a link has two ends, got {len(ends)}")
        a, b = (self._node_ref(n, f"{path}.ends") for n in ends)
        if a == b:
            raise self.doc.error(fields["ends"].value, f"{path}.ends", f"a link joins two distinct nodes, got {a} twice")
        d = self.defaults
        rate = self._rate(fields["rate"].value, f"{path}.rate") if "rate" in fields else d.rate_bps
        delay = self._duration(fields["delay"].value, f"{path}.delay") if "delay" in fields else d.delay_ns
        buffer = self._buffer(fields["buffer"].value, f"{path}.buffer", LINK_BUFFER_LIMIT) if "buffer" in fields \
            else d.buffer
        if isinstance(buffer, _BufferDraft):  # resolved at this link's rate by _resolve_buffers
            self.buffer_drafts[i] = buffer
            buffer = 0
        reorder, reorder_delay = self._reorder(fields, path, d.reorder, d.reorder_delay_ns)
        return Link(a, b, rate, delay, buffer, line=self.doc.line(item), reorder=reorder,
                    reorder_delay_ns=reorder_delay, loss=self._loss(fields, path, d.loss)), fields["ends"].value

    def _loss(self, fields: dict[str, Entry], path: str, loss: float) -> float:
        """``loss: 2%``: the fraction of frames the link loses, each independently (topo.sim.network.loss_hook)."""
        if "loss" not in fields:
            return loss
        node = fields["loss"].value
        loss = self.doc.unit(node, f"{path}.loss", parse_fraction)
        if not 0 <= loss < 1:
            raise self.doc.error(node, f"{path}.loss", f"{loss:g}: a loss fraction must be in [0, 1)")
        return loss

    def _reorder(self, fields: dict[str, Entry], path: str, reorder: float, delay: int) -> tuple[float, int]:
        """``reorder: 0.2%`` (the fraction of frames held back) and ``reorder_delay: 20ms`` (by how much)."""
        if "reorder" in fields:
            node = fields["reorder"].value
            reorder = self.doc.unit(node, f"{path}.reorder", parse_fraction)
            if not 0 <= reorder < 1:
                raise self.doc.error(node, f"{path}.reorder", f"{reorder:g}: a reorder fraction must be in [0, 1)")
        if "reorder_delay" in fields:
            node = fields["reorder_delay"].value
            delay = self._duration(node, f"{path}.reorder_delay")
            if delay <= 0:
                raise self.doc.error(node, f"{path}.reorder_delay", "a reorder delay must be > 0")
        return reorder, delay

    # ---- flows -----------------------------------------------------------------------------------
    def _flows(self) -> tuple[list[Flow], list[YamlNode]]:
        if "flows" not in self.top:
            return [], []
        items = self.doc.sequence(self.top["flows"].value, "flows")
        flows: list[Flow] = []
        names: dict[str, int] = {}
        for i, item in enumerate(items):
            flow = self._flow(item, f"flows[{i}]", i)
            if flow.name in names:
                fields = self.doc.mapping(item, f"flows[{i}]")
                where = fields["name"].value if "name" in fields else item
                raise self.doc.error(where, f"flows[{i}].name",
                                     f"duplicate flow name {flow.name!r} (first: flows[{names[flow.name]}])")
            names[flow.name] = i
            if flow.group is None:
                flows.append(flow)
                continue
            for r in flow.receivers:  # one branch per receiver (docs/howto/multicast.md)
                if f"{flow.name}@{r}" in names:
                    raise self.doc.error(item, f"flows[{i}].name", f"branch {flow.name}@{r} is also a flow's name")
                names[f"{flow.name}@{r}"] = i
                flows.append(dataclasses.replace(flow, name=f"{flow.name}@{r}", dst=r))
        self._flow_index = [names[f.name] for f in flows]
        if any(f.group for f in flows) and self._ecmp_on():
            raise self.doc.error(self.top["flows"].value, "flows", "multicast flows need single-path routes "
                                 "(options.ecmp: false): a tree per group")
        return flows, [items[k] for k in self._flow_index]

    def _flow(self, item: YamlNode, path: str, i: int) -> Flow:
        f = self.doc.mapping(item, path, FLOW_KEYS, required=("src", "dst", "control"))
        name = self.doc.text(f["name"].value, f"{path}.name") if "name" in f else f"f{i + 1}"
        src = self._host_ref(f["src"].value, f"{path}.src")
        receivers = self._receivers(f["dst"].value, f"{path}.dst", src)
        dst = receivers[0] if receivers else self._host_ref(f["dst"].value, f"{path}.dst")
        if src == dst:
            raise self.doc.error(f["dst"].value, f"{path}.dst", f"src and dst are both {src}")
        control = self.doc.text(f["control"].value, f"{path}.control")
        if control not in CONTROLS:
            raise self.doc.error(f["control"].value, f"{path}.control",
                                 f"unknown control {control!r} (known: {', '.join(CONTROLS)})")
        if receivers and control not in MULTICAST_CONTROLS:
            raise self.doc.error(f["dst"].value, f"{path}.dst", f"a {control} flow has one receiver; a list of "
                                 f"receivers (multicast) takes control {' or '.join(MULTICAST_CONTROLS)}")
        start = self._duration(f["start"].value, f"{path}.start") if "start" in f else 0
        stop = self._duration(f["stop"].value, f"{path}.stop") if "stop" in f else None
        if stop is not None and stop <= start:
            raise self.doc.error(f["stop"].value, f"{path}.stop", f"stop ({stop} ns) must be after start ({start} ns)")
        if control != "tcp":
            self._check_send_times(f, item, path, src, start)
        if "cvihis" in f and control not in CVIHIS_CONTROLS:
            raise self.doc.error(f["cvihis"].key_node, f"{path}.cvihis",
                                 f"only {' and '.join(CVIHIS_CONTROLS)} flows have cvihis (this one is {control}; "
                                 "the file's top-level cvihis: applies to every CVIHIS law, cc cvihis-rtm too)")
        reading = self._cvihis(f["cvihis"].value, f"{path}.cvihis", self.cvihis) if "cvihis" in f else self.cvihis
        if control == "tcp":
            return Flow(name, src, dst, control, start, stop, TCP_RECORD_BYTES, line=self.doc.line(item),
                        cvihis=reading, **self._tcp_keys(f, path))
        if "target" in f and control != "ledbat":
            raise self.doc.error(f["target"].key_node, f"{path}.target",
                                 f"only ledbat flows have target (this one is {control})")
        for key in ("cc", "size", "sack"):
            if key in f:
                raise self.doc.error(f[key].key_node, f"{path}.{key}", f"only tcp flows have {key} (this one is {control})")
        if "gcc" in f and control != "gcc":
            raise self.doc.error(f["gcc"].key_node, f"{path}.gcc", f"only gcc flows have gcc (this one is {control})")
        if "pgmcc" in f and control != "pgmcc":
            raise self.doc.error(f["pgmcc"].key_node, f"{path}.pgmcc",
                                 f"only pgmcc flows have pgmcc (this one is {control})")
        size = self._packet_size(f["packet_size"].value, f"{path}.packet_size") if "packet_size" in f \
            else self.defaults.packet_size
        rate = self._flow_rate(item, f, path, control)
        r_max = None
        if "r_max" in f:
            if control == "fixed":
                raise self.doc.error(f["r_max"].key_node, f"{path}.r_max",
                                     "a fixed flow has no r_max (it sends at its rate)")
            if control == "ledbat":
                raise self.doc.error(f["r_max"].key_node, f"{path}.r_max",
                                     "a ledbat flow has no r_max (its window follows the queuing delay)")
            if control == "pgmcc":
                raise self.doc.error(f["r_max"].key_node, f"{path}.r_max",
                                     "a pgmcc flow has no r_max (its window follows the acker's ACKs)")
            r_max = self._rate(f["r_max"].value, f"{path}.r_max")
        target = None
        if "target" in f:
            target = self._duration(f["target"].value, f"{path}.target")
            if target <= 0:
                raise self.doc.error(f["target"].value, f"{path}.target", "a ledbat target must be > 0")
        gcc = self._gcc(f, path, r_max) if control == "gcc" else None
        pgmcc = self._pgmcc(f["pgmcc"].value, f"{path}.pgmcc") if "pgmcc" in f else None
        return Flow(name, src, dst, control, start, stop, size, r_max_bps=r_max, rate_bps=rate,
                    line=self.doc.line(item), target_ns=target, gcc=gcc, cvihis=reading, pgmcc=pgmcc,
                    group=name if receivers else None, receivers=receivers)

    def _receivers(self, node: YamlNode, path: str, src: str) -> tuple[str, ...]:
        """A multicast flow's receivers (``dst: [H2, H3]``, or ``dst: G1`` naming one of the file's
        ``groups``), () for a single ``dst``: hosts, each once, two or more, the source not among them
        (docs/howto/multicast.md)."""
        if isinstance(node, ScalarNode) and node.value in self.groups:
            group = self.groups[node.value]
            if src in group.hosts:
                j = group.hosts.index(src)
                raise self.doc.error(node, path, f"the source {src} is among the receivers of group {group.name} "
                                     f"(groups.{group.name}[{j}], line {self.doc.line(group.items[j])})")
            return group.hosts
        if not isinstance(node, SequenceNode):
            if isinstance(node, ScalarNode) and self.groups and node.value not in self.nodes:
                raise self.doc.error(node, path, f"unknown host or group {node.value!r} (nodes: "
                                     f"{', '.join(self.nodes)}; groups: {', '.join(self.groups)})")
            return ()
        items = self.doc.sequence(node, path)
        names: list[str] = []
        for j, item in enumerate(items):
            name = self._host_ref(item, f"{path}[{j}]")
            if name == src:
                raise self.doc.error(item, f"{path}[{j}]", f"the source {src} is among its own receivers")
            if name in names:
                raise self.doc.error(item, f"{path}[{j}]", f"receiver {name} named twice")
            names.append(name)
        if len(names) < 2:
            raise self.doc.error(node, path, "a list of receivers (multicast) names two or more hosts "
                                 "(one receiver: dst: H2)")
        return tuple(names)

    def _groups(self) -> dict[str, _Group]:
        """The file's named receiver sets (``groups: {G1: [H2, H3, H4]}``), which a flow's ``dst`` may
        name instead of listing its receivers: each two or more distinct hosts; a name no node has."""
        if "groups" not in self.top:
            return {}
        groups: dict[str, _Group] = {}
        for entry in self.doc.mapping(self.top["groups"].value, "groups").values():
            path = f"groups.{entry.key}"
            if not NAME_RE.fullmatch(entry.key):
                raise self.doc.error(entry.key_node, path,
                                     f"bad group name {entry.key!r} (a letter, then letters, digits, '_' or '-')")
            if entry.key in self.nodes:
                raise self.doc.error(entry.key_node, path, f"group {entry.key} has the name of a node "
                                     f"(line {self.nodes[entry.key].line}); a flow's dst: {entry.key} would be ambiguous")
            items = self.doc.sequence(entry.value, path)
            if not items:
                raise self.doc.error(entry.value, path, f"group {entry.key} is empty (it names two or more hosts)")
            hosts: list[str] = []
            for j, item in enumerate(items):
                name = self._host_ref(item, f"{path}[{j}]")
                if name in hosts:
                    raise self.doc.error(item, f"{path}[{j}]", f"receiver {name} named twice")
                hosts.append(name)
            if len(hosts) < 2:
                raise self.doc.error(entry.value, path, f"group {entry.key} names one host; a group (multicast) "
                                     "names two or more (one receiver: dst: a host)")
            groups[entry.key] = _Group(entry.key, tuple(hosts), tuple(items))
        return groups

    def _cvihis(self, node: YamlNode, path: str, base: CvihisReading | None = None) -> CvihisReading:
        """``cvihis: {variant, areas, decisions_per_rtt, push, md, max_delay, start_rate}`` (each optional):
        the reading of CVIHIS to run (hosts/cvihis/variants.py) and the rate its senders start at. A flow's
        mapping goes on top of the file's (``base``): its variant, if given, replaces the file's reading; its
        other keys change one choice each."""
        entries = self.doc.mapping(node, path, CVIHIS_KEYS)
        if not entries:
            raise self.doc.error(node, path, f"changes nothing (set some of: {', '.join(CVIHIS_KEYS)})")
        base = base or CvihisReading()
        variant, changes = base.variant, dict(base.changes)
        for key, entry in sorted(entries.items(), key=lambda kv: kv[0] != "variant"):  # the variant first
            value = self._rate(entry.value, f"{path}.{key}") if key == "start_rate" \
                else self.doc.scalar(entry.value, f"{path}.{key}")
            try:
                if key == "variant":
                    variant, changes = CvihisReading(str(value)).variant, {}
                else:
                    CvihisReading(changes=((key, value),))
                    changes[key] = value
            except ReadingError as exc:
                raise self.doc.error(entry.value, f"{path}.{key}", str(exc).split(": ", 1)[1]) from None
        order = [k for k in (*CVIHIS_CHOICE_KEYS, *CVIHIS_RUN_KEYS) if k in changes]
        return CvihisReading(variant, tuple((k, changes[k]) for k in order))

    def _pgmcc(self, node: YamlNode, where: str) -> PgmccParams:
        """A pgmcc flow's ``pgmcc: {switch_ratio, timeout, loss_weight, repair, nak_retries, rtt}`` (each
        optional): switch_ratio c in (0, 1], timeout ``adaptive`` or a duration > 0, loss_weight in (0, 1) (a
        fraction or a percentage), repair true or false, nak_retries a whole number >= 0, rtt ``time`` or
        ``packets`` (hosts/pgmcc/params.py)."""
        g = self.doc.mapping(node, where, PGMCC_KEYS)
        values: dict[str, Any] = {}
        for key, closed in (("switch_ratio", True), ("loss_weight", False)):
            if key in g:
                values[key] = v = self.doc.unit(g[key].value, f"{where}.{key}", parse_fraction)
                if not (0 < v <= 1 if closed else 0 < v < 1):
                    raise self.doc.error(g[key].value, f"{where}.{key}",
                                         f"{v:g}: {key} must be in (0, 1{']' if closed else ')'}")
        if "timeout" in g:
            raw = self.doc.scalar(g["timeout"].value, f"{where}.timeout")
            if raw != "adaptive":
                values["timeout_ns"] = self._duration(g["timeout"].value, f"{where}.timeout")
                if values["timeout_ns"] <= 0:
                    raise self.doc.error(g["timeout"].value, f"{where}.timeout",
                                         "a fixed timeout must be > 0 (or: adaptive)")
        if "repair" in g:
            values["repair"] = self.doc.scalar(g["repair"].value, f"{where}.repair")
            if not isinstance(values["repair"], bool):
                raise self.doc.error(g["repair"].value, f"{where}.repair", f"{values['repair']!r}: repair is true or false")
        if "nak_retries" in g:
            values["nak_retries"] = self.doc.scalar(g["nak_retries"].value, f"{where}.nak_retries")
            if isinstance(values["nak_retries"], bool) or not isinstance(values["nak_retries"], int) \
                    or values["nak_retries"] < 0:
                raise self.doc.error(g["nak_retries"].value, f"{where}.nak_retries",
                                     f"{values['nak_retries']!r}: nak_retries is a whole number >= 0")
        if "rtt" in g:
            values["rtt"] = self.doc.text(g["rtt"].value, f"{where}.rtt")
            if values["rtt"] not in RTT_UNITS:
                raise self.doc.error(g["rtt"].value, f"{where}.rtt",
                                     f"{values['rtt']!r}: rtt is {' or '.join(RTT_UNITS)} (what the acker election's "
                                     "RTT counts)")
        return PgmccParams(**values)  # every value checked above, each against its own line

    def _gcc_choice(self, g: dict, key: str, default: str, known: Sequence[str], where: str) -> str:
        """``gcc.<key>``: one of ``known`` (``default`` when absent), else refused at its line."""
        if key not in g:
            return default
        value = self.doc.text(g[key].value, f"{where}.{key}")
        if value not in known:
            raise self.doc.error(g[key].value, f"{where}.{key}", f"unknown {key} {value!r} (known: {', '.join(known)})")
        return value

    def _gcc(self, f: dict[str, Entry], path: str, r_max: float | None) -> GccParams:
        """A gcc flow's ``gcc: {min_rate, max_rate, start_rate, filter, gains}`` (each optional): rates > 0,
        min_rate <= start_rate <= max_rate as far as given, max_rate or r_max (one cap, not both)."""
        if "gcc" not in f:
            return GccParams() if r_max is None else GccParams().capped(r_max)
        where = f"{path}.gcc"
        g = self.doc.mapping(f["gcc"].value, where, GCC_KEYS)
        rates: dict[str, float] = {}
        for key in ("min_rate", "start_rate", "max_rate"):
            if key in g:
                rates[key] = self._rate(g[key].value, f"{where}.{key}")  # > 0, or refused there
        if "max_rate" in rates and r_max is not None:
            raise self.doc.error(g["max_rate"].key_node, f"{where}.max_rate",
                                 "the flow has r_max too: give its cap once (gcc.max_rate or r_max)")
        order = [k for k in ("min_rate", "start_rate", "max_rate") if k in rates]
        for low, high in zip(order, order[1:]):
            if rates[low] > rates[high]:
                raise self.doc.error(g[high].value, f"{where}.{high}",
                                     f"{high} ({rates[high]:g} b/s) is below {low} ({rates[low]:g} b/s)")
        filt = self._gcc_choice(g, "filter", "trendline", GCC_FILTERS, where)
        gains = self._gcc_choice(g, "gains", "draft", GCC_GAIN_SETS, where)
        if r_max is not None and rates.get("min_rate", 0) > r_max:
            raise self.doc.error(g["min_rate"].value, f"{where}.min_rate",
                                 f"min_rate ({rates['min_rate']:g} b/s) is above the flow's r_max ({r_max:g} b/s)")
        base = GccParams()
        floor = min(base.min_rate_bps, rates.get("start_rate", math.inf), rates.get("max_rate", math.inf))
        params = GccParams(rates.get("min_rate", floor),
                           rates.get("start_rate", base.start_rate_bps), rates.get("max_rate"), filt, gains)
        return params if r_max is None else params.capped(r_max)

    def _check_send_times(self, f: dict[str, Entry], item: YamlNode, path: str, src: str, start: int) -> None:
        """A datagram carries its send time on the source's clock as an unsigned number: a host whose
        clock runs behind (negative clock_offset) cannot stamp a packet before its clock reads 0."""
        behind = -self.nodes[src].clock_offset_ns
        if start < behind:
            where = f["start"].value if "start" in f else item
            raise self.doc.error(where, f"{path}.start",
                                 f"{start / 1e6:g} ms: {src}'s clock_offset ({-behind / 1e6:g} ms) reads below 0 "
                                 f"until {behind / 1e6:g} ms, and a packet's send time cannot be negative: start "
                                 f"the flow at {behind / 1e6:g}ms or later")

    def _tcp_keys(self, f: dict[str, Entry], path: str) -> dict[str, Any]:
        """A kernel TCP flow: its congestion control (one the running kernel offers) and its size."""
        for key, why in (("rate", "its rate is TCP's own"), ("r_max", "its rate is TCP's own"),
                         ("packet_size", "its segments are the path MTU's")):
            if key in f:
                raise self.doc.error(f[key].key_node, f"{path}.{key}", f"a tcp flow has no {key} ({why})")
        cc = DEFAULT_TCP_CC
        if "cc" in f:
            cc = self.doc.text(f["cc"].value, f"{path}.cc")
            offered, _known = kernel_congestion_controls()
            if cc not in offered and cc not in SIM_ONLY_CC:
                raise self.doc.error(f["cc"].value, f"{path}.cc",
                                     f"{cc!r} is not offered by this kernel (available: {' '.join(offered)}; "
                                     f"the simulator's TCP model also has {', '.join(SIM_ONLY_CC)})")
        size = None
        if "size" in f:
            size = self.doc.unit(f["size"].value, f"{path}.size", parse_bytes)
            if size <= 0:
                raise self.doc.error(f["size"].value, f"{path}.size", f"{size} bytes: a tcp flow's size must be > 0")
        sack = True
        if "sack" in f:
            sack = self.doc.scalar(f["sack"].value, f"{path}.sack")
            if not isinstance(sack, bool):
                raise self.doc.error(f["sack"].value, f"{path}.sack", f"{sack!r}: sack is true or false")
            if not sack and cc == "cvihis-rtm":
                raise self.doc.error(f["sack"].value, f"{path}.sack", "cc cvihis-rtm paces every segment the "
                                     "model sends, which needs SACK recovery (NewReno's retransmissions bypass the pace)")
        return {"cc": cc, "size_bytes": size, "sack": sack}

    def _flow_rate(self, item: YamlNode, f: dict[str, Entry], path: str, control: str) -> float | None:
        if control == "fixed":
            if "rate" not in f:
                raise self.doc.error(item, path, "a fixed flow needs a rate (e.g. rate: 500kbps)")
            return self._rate(f["rate"].value, f"{path}.rate")
        if "rate" in f:
            raise self.doc.error(f["rate"].key_node, f"{path}.rate",
                                 f"only fixed flows have a rate (an {control} flow's rate is set by its control; "
                                 "use r_max to cap it)")
        return None

    def _resolve_buffers(self, flows: list[Flow], name: str) -> None:
        """Durations into packets: a link's at its rate, a host's receive buffer at its playout rate,
        counted in the largest packet size of the flows through it (any direction; for a host, the
        flows it receives), or ``defaults.packet_size`` when none is. Rounded up, at least 1.

        A flow goes through the links of the path the switches hash it to (topo.net.routes), not of
        ``Flow.path``, the tie-break: under ECMP a 20 ms buffer on a 2 Mb/s link only the hash gave
        200-byte flows was 5 packets (1,000-byte default), 4 ms of their frames
        (tests/topo/file/test_schema_buffer_time.py)."""
        paths = routed_paths(Topology(name, self.doc.source, self.nodes, self.links, flows, {}, {},
                                      options=Options(ecmp=self._ecmp_on())))
        for key, draft in self.buffer_drafts.items():
            if isinstance(key, int):
                link = self.links[key]
                sizes = [f.packet_size for f in flows
                         if any({u, v} == set(link.ends) for u, v in zip(paths[f.name], paths[f.name][1:]))]
                whose = "" if draft.path == f"links[{key}].buffer" else f" (links[{key}] {link.a} -- {link.b})"
                time = self._buffer_time(draft, link.rate_bps, sizes, LINK_BUFFER_LIMIT, whose)
                self.links[key] = dataclasses.replace(link, buffer=time.packets, buffer_time=time)
            else:
                host = self.nodes[key]
                sizes = [f.packet_size for f in flows if f.dst == key]
                time = self._buffer_time(draft, host.playout_bps or 0, sizes, RECEIVE_BUFFER_LIMIT, " (playout)")
                self.nodes[key] = dataclasses.replace(host, receive_buffer=time.packets, receive_buffer_time=time)

    def _buffer_time(self, draft: _BufferDraft, rate_bps: float, sizes: list[int], limit: tuple[int, str],
                     whose: str) -> BufferTime:
        time = BufferTime(draft.ns, rate_bps, max(sizes, default=self.defaults.packet_size))
        if time.packets > limit[0]:
            raise self.doc.error(draft.node, draft.path,
                                 f"{draft.text} at {format_rate(rate_bps)}{whose} in {time.packet_size} B packets "
                                 f"is {time.packets} packets: above {limit[1]} ({limit[0]} packets)")
        return time

    def _host_ref(self, node: YamlNode, path: str) -> str:
        name = self._node_ref(node, path)
        if self.nodes[name].is_switch:
            raise self.doc.error(node, path, f"{name} is a switch; flows run between hosts")
        return name

    def _check_trees(self, flows: list[Flow], items: list[YamlNode]) -> None:
        """A multicast flow's routes must form a tree: one upstream neighbour per node (shortest paths
        toward different receivers may part and meet again; then no switch knows its one parent)."""
        parent: dict[tuple[str, str], str] = {}
        children: dict[tuple[str, str], set[str]] = {}
        for f, item in zip(flows, items):
            if f.group is None:
                continue
            k = self._flow_index[flows.index(f)]
            for u, v in zip(f.path, f.path[1:]):
                if parent.setdefault((f.group, v), u) != u:
                    raise self.doc.error(item, f"flows[{k}].dst", f"the routes to {f.group}'s receivers reach {v} "
                                         f"from both {parent[(f.group, v)]} and {u}: not a tree")
                copies = children.setdefault((f.group, u), set())
                copies.add(v)
                if len(copies) > MCAST_MAX_COPIES:
                    raise self.doc.error(item, f"flows[{k}].dst", f"{u} would copy {f.group} to {len(copies)} "
                                         f"neighbours ({', '.join(sorted(copies))}); alinea.p4 makes at most "
                                         f"{MCAST_MAX_COPIES} copies per switch")

    def _routed(self, skeleton: Topology, i: int, flow: Flow, item: YamlNode) -> Flow:
        path = skeleton.path(flow.src, flow.dst)
        if path is None:
            k = self._flow_index[i]
            if flow.group is not None:
                dst = self.doc.mapping(item, f"flows[{k}]")["dst"].value
                j = flow.receivers.index(flow.dst)
                if isinstance(dst, ScalarNode):  # dst: a named group
                    group = self.groups[dst.value]
                    raise self.doc.error(dst, f"flows[{k}].dst", f"receiver {flow.dst} of group {group.name} "
                                         f"(groups.{group.name}[{j}], line {self.doc.line(group.items[j])}) "
                                         f"is unreachable from {flow.src}")
                raise self.doc.error(dst.value[j], f"flows[{k}].dst[{j}]",
                                     f"receiver {flow.dst} is unreachable from {flow.src}")
            raise self.doc.error(item, f"flows[{k}]", f"no path from {flow.src} to {flow.dst}")
        if flow.control == "alinea" and not skeleton.reports(path[1]):
            # the source's law is the one toward its neighbour, which exists only where that
            # neighbour reports (a host linked straight to the source, without a receive buffer,
            # left the run to fail on the missing law, with a traceback)
            k = self._flow_index[i]
            raise self.doc.error(item, f"flows[{k}]", f"an alinea flow's source sets its rate from its neighbour's "
                                 f"reports, and {path[1]}, a host without receive_buffer, sends none: give "
                                 f"{path[1]} receive_buffer and playout, or put a switch between {flow.src} and it")
        return dataclasses.replace(flow, path=path)

    # ---- ALINEA laws and ports -------------------------------------------------------------------
    def _law_links(self, topo: Topology) -> list[DirectedLink]:
        """Every directed link (u, v) whose downstream end v reports, in file order of the links."""
        out: list[DirectedLink] = []
        for link in self.links:
            out += [(u, v) for u, v in ((link.a, link.b), (link.b, link.a)) if topo.reports(v)]
        return out

    def _selectors(self, topo: Topology) -> list[_Selector]:
        if "alinea" not in self.top:
            return []
        items = self.doc.sequence(self.top["alinea"].value, "alinea")
        law_links = self._law_links(topo)
        return [self._selector(item, f"alinea[{i}]", law_links) for i, item in enumerate(items)]

    def _selector(self, item: YamlNode, path: str, law_links: list[DirectedLink],
                  entries: dict[str, Entry] | None = None) -> _Selector:
        if entries is None:
            entries = self.doc.mapping(item, path, SELECTOR_KEYS + LAW_KEYS + ("interval",))
        refs = {k: self._node_ref(entries[k].value, f"{path}.{k}") if k in entries else None for k in SELECTOR_KEYS}
        sel = _Selector(path, self.doc.line(item), refs["node"], refs["toward"],
                        self._law_values(entries, path, LAW_KEYS), self._interval_entry(entries, path))
        if sel.node is None and sel.toward is None:
            raise self.doc.error(item, path, "name node, toward or both (which laws to change)")
        if not sel.law and sel.interval is None:
            raise self.doc.error(item, path, f"changes nothing (set some of: {', '.join(LAW_KEYS)}, interval)")
        if not any(sel.matches(link) for link in law_links):
            raise self.doc.error(item, path, f"matches no law: {self._describe(sel)} "
                                             "(a law runs on u toward a neighbour v that reports: "
                                             "a switch, or a host with a receive_buffer)")
        return sel

    @staticmethod
    def _describe(sel: _Selector) -> str:
        return " ".join(p for p in (f"node {sel.node}" if sel.node else "",
                                    f"toward {sel.toward}" if sel.toward else "") if p)

    def _laws(self, topo: Topology, flows: list[Flow]) -> tuple[dict[DirectedLink, LawParams], dict[DirectedLink, int],
                                                              dict[DirectedLink, dict[str, str]]]:
        """The laws, their downstream ports' report intervals, and where each value came from
        (``file``, ``derived`` or ``default``: the built-in, which topo.analysis.derive may replace)."""
        law: dict[DirectedLink, LawParams] = {}
        intervals: dict[DirectedLink, int] = {}
        origins: dict[DirectedLink, dict[str, str]] = {}
        selectors = self._selectors(topo)
        paths = routed_paths(Topology(topo.name, self.doc.source, self.nodes, self.links, flows, {}, {},
                                      options=Options(ecmp=self._ecmp_on())))
        for link in self._law_links(topo):
            draft = self._draft(link, flows, paths)
            for rank, sel in enumerate(selectors, start=_OVERRIDE_RANK):
                if sel.matches(link):
                    draft.apply(sel.law, sel.path, rank)
                    if sel.interval is not None:
                        draft.interval_us = sel.interval[0]
                        draft.interval_origin = _Origin(rank, sel.path, sel.interval[1])
            law[link] = self._validated(link, draft)
            intervals[link] = draft.interval_us
            origins[link] = {k: _provenance(o) for k, o in draft.origins.items()}
            origins[link]["interval"] = _provenance(draft.interval_origin)
        return law, intervals, origins

    def _draft(self, link: DirectedLink, flows: list[Flow], paths: dict[str, tuple[str, ...]]) -> _Draft:
        d = self.defaults
        builtin = LawParams()
        values = {k: getattr(builtin, k) for k in DEFAULT_LAW_KEYS}
        origins = dict.fromkeys(DEFAULT_LAW_KEYS, _BUILTIN)
        for key, (value, line) in d.law.items():
            values[key] = value
            origins[key] = _Origin(_DEFAULTS_RANK, d.law_path, line)
        values["r_max"], origins["r_max"] = self._derived_r_max(link, flows, paths)
        interval, interval_origin = PortParams().interval_us, _BUILTIN
        if d.interval is not None:
            interval, interval_origin = d.interval[0], _Origin(_DEFAULTS_RANK, d.law_path, d.interval[1])
        return _Draft(values, origins, interval, interval_origin)

    def _derived_r_max(self, link: DirectedLink, flows: list[Flow],
                       paths: dict[str, tuple[str, ...]]) -> tuple[float, _Origin]:
        """min(link rate, sum of the crossing flows' caps) when every crossing flow has a cap.

        A flow crosses the links of the path the switches hash it to (``paths``: topo.net.routes), as
        the buffers' durations count it (``_resolve_buffers``), not ``Flow.path``, the tie-break: under
        ECMP the head-of-line fabric's victim, capped at 4 Mb/s, hashes to spine 2, and its cap went to
        spine 1's laws, whose links carry none of its packets, while spine 2's took the link's rate.

        A flow's cap is its r_max (alinea) or its rate (fixed): a fixed flow's packets cross
        the link too, so the regulated aggregate must leave room for them. A multicast group counts
        once (its first branch on the link): its branches carry one copy of each packet over a link
        (docs/howto/multicast.md). Counted per receiver behind the link, a 1 Mb/s group of two receivers
        behind S3 -> S7 gave that law 2 Mb/s, a floor of 40 kb/s and room to cut below the group's rate
        (tests/topo/random_cases/report-gap-multicast.yaml, which gives those values in its file).

        The sum is not a switch's law's last word: ``topo.analysis.derive.derive_missing`` adds a margin of one
        frame per report interval, at most the sum again, once the interval is known (``r_max_with_margin``: at
        the sum the port's queue is at load 1).
        """
        wire = self._link_of(link)
        index = self.links.index(wire)
        link_origin = _Origin(_DERIVED_RANK, f"links[{index}]", wire.line)
        crossing, groups = [], set()
        for i, f in enumerate(flows):
            path = paths.get(f.name, f.path)
            if link in zip(path, path[1:]) and (f.group is None or f.group not in groups):
                crossing.append((i, f))
                if f.group is not None:
                    groups.add(f.group)
        caps = [f.r_max_bps if f.r_max_bps is not None else f.rate_bps for _, f in crossing]
        if not crossing or any(c is None for c in caps):
            return wire.rate_bps, link_origin
        total = sum(c for c in caps if c is not None)
        if total >= wire.rate_bps:
            return wire.rate_bps, link_origin
        first, flow = crossing[0]
        return total, _Origin(_DERIVED_RANK, f"flows[{first}]", flow.line)

    def _validated(self, link: DirectedLink, draft: _Draft) -> LawParams:
        capacity = self._link_of(link).rate_bps
        values = {k: resolve_rate(v, capacity, k) for k, v in draft.values.items()}
        try:
            return validate_law(LawParams(**values))
        except ParamError as exc:
            involved = [k for k in draft.values if re.search(rf"\b{k} = ", str(exc))] or list(draft.values)
            origin = max((draft.origins[k] for k in involved), key=lambda o: o.rank)
            raise self.doc.error_at_line(origin.line, origin.path, f"{exc} (law {link[0]}->{link[1]})") from None

    def _ports(self, topo: Topology, intervals: dict[DirectedLink, int]) -> dict[DirectedLink, PortParams]:
        """Each switch port's modelled buffer: its link's, but at most ``MCAST_RING`` packets on a port that
        receives a group's packets, whose ring of pending multicast packets (alinea.p4) refuses the next
        one past that many, whatever room the buffer has: a law aiming at 80 % of a larger buffer sat at
        the ring's 1024 and dropped there (tests/topo/random_cases/multicast-small-packets.yaml)."""
        ports: dict[DirectedLink, PortParams] = {}
        tree_ports = {(v, u) for f in self._flows_by_name if f.group is not None for u, v in zip(f.path, f.path[1:])}
        for switch in topo.switches:
            for nb in topo.neighbours(switch.name):
                capacity = topo.link_between(switch.name, nb).buffer
                if (switch.name, nb) in tree_ports:
                    capacity = min(capacity, MCAST_RING)
                ports[(switch.name, nb)] = validate_port(PortParams(capacity, intervals[(nb, switch.name)]))
        return ports

    def _host_buffers(self, topo: Topology, intervals: dict[DirectedLink, int]) -> dict[DirectedLink, PortParams]:
        """A reporting host's receive buffer, like a switch port: its capacity and report interval."""
        out: dict[DirectedLink, PortParams] = {}
        for host in topo.hosts:
            if host.receive_buffer is not None:
                [nb] = topo.neighbours(host.name)
                out[(host.name, nb)] = validate_port(PortParams(host.receive_buffer, intervals[(nb, host.name)]))
        return out

    # ---- events and options ----------------------------------------------------------------------
    def _events(self, topo: Topology, law: dict[DirectedLink, LawParams]) -> list[Event]:
        if "events" not in self.top:
            return []
        items = self.doc.sequence(self.top["events"].value, "events")
        parsed = [(e, i) for i, item in enumerate(items) for e in self._event(topo, item, f"events[{i}]")]
        parsed.sort(key=lambda ei: ei[0].at_ns)
        running = dict(law)
        for event, i in parsed:
            self._check_event_law(event, f"events[{i}].alinea", running)
        return [e for e, _ in parsed]

    def _event(self, topo: Topology, item: YamlNode, path: str) -> list[Event]:
        """One event entry; an alinea change written relative to capacity (``0.25C``) becomes one
        event per target, each resolved at its own link's rate."""
        event = self._event_entry(topo, item, path)
        if isinstance(event, Event):
            return [event]
        at, sel, targets, line = event
        if not any(isinstance(v, OfCapacity) for v, _ in sel.law.values()):
            return [self._alinea_event(at, sel, targets, line, None)]
        return [self._alinea_event(at, sel, (t,), line, self._link_of(t).rate_bps) for t in targets]

    @staticmethod
    def _alinea_event(at: int, sel: _Selector, targets: tuple[DirectedLink, ...], line: int,
                      capacity: float | None) -> Event:
        changes = tuple((k, resolve_rate(v, capacity, k)) for k, (v, _) in sel.law.items())
        return Event(at, "alinea", targets=targets, law_changes=changes,
                     interval_us=sel.interval[0] if sel.interval else None, line=line)

    def _link_of(self, link: DirectedLink) -> Link:
        return next(ln for ln in self.links if set(ln.ends) == set(link))

    def _event_entry(self, topo: Topology, item: YamlNode, path: str
                     ) -> Event | tuple[int, _Selector, tuple[DirectedLink, ...], int]:
        f = self.doc.mapping(item, path, EVENT_KEYS, required=("at",))
        at = self._duration(f["at"].value, f"{path}.at")
        line = self.doc.line(item)
        if "link" in f:
            if "alinea" in f:
                raise self.doc.error(f["alinea"].key_node, f"{path}.alinea",
                                     "an event changes a link or alinea, not both")
            if "rate" not in f:
                raise self.doc.error(item, path, "a link event needs a rate (e.g. rate: 1Mbps)")
            wire = self._event_link(f["link"].value, f"{path}.link", topo)
            return Event(at, "link_rate", link=wire.ends, rate_bps=self._rate(f["rate"].value, f"{path}.rate"),
                         line=line)
        if "alinea" in f:
            if "rate" in f:
                raise self.doc.error(f["rate"].key_node, f"{path}.rate", "rate belongs to a link event (link: [A, B])")
            sel_path = f"{path}.alinea"
            entries = self.doc.mapping(f["alinea"].value, sel_path, SELECTOR_KEYS + LAW_KEYS + ("interval",))
            sel = self._selector(f["alinea"].value, sel_path, self._law_links(topo), entries)
            return at, sel, tuple(t for t in self._law_links(topo) if sel.matches(t)), line
        if "flow" in f or "mode" in f:
            return self._mode_event(f, item, path, at, line)
        raise self.doc.error(item, path, "an event needs link (with rate), alinea, or flow (with mode)")

    def _mode_event(self, f: dict[str, Entry], item: YamlNode, path: str, at: int, line: int) -> Event:
        if "flow" not in f or "mode" not in f:
            raise self.doc.error(item, path, "a mode event needs flow and mode (e.g. flow: f1, mode: rtm)")
        name = self.doc.text(f["flow"].value, f"{path}.flow")
        flow = next((fl for fl in self._flows_by_name if fl.name == name), None)
        if flow is None:
            known = ", ".join(fl.name for fl in self._flows_by_name) or "none"
            raise self.doc.error(f["flow"].value, f"{path}.flow", f"unknown flow {name!r} (flows: {known})")
        if flow.control not in CVIHIS_CONTROLS:
            raise self.doc.error(f["flow"].value, f"{path}.flow",
                                 f"flow {name} is {flow.control}: only CVIHIS flows have a mode")
        mode = self.doc.text(f["mode"].value, f"{path}.mode")
        if mode not in ("rtm", "blm"):
            raise self.doc.error(f["mode"].value, f"{path}.mode", f"unknown mode {mode!r} (use rtm or blm)")
        return Event(at, "mode", flow=name, mode=mode, line=line)

    def _event_link(self, node: YamlNode, path: str, topo: Topology) -> Link:
        ends = self.doc.sequence(node, path)
        if len(ends) != 2:
            raise self.doc.error(node, path, f"a link has two ends, got {len(ends)}")
        a, b = (self._node_ref(n, path) for n in ends)
        try:
            return topo.link_between(a, b)
        except KeyError:
            raise self.doc.error(node, path, f"no link between {a} and {b}") from None

    def _check_event_law(self, event: Event, path: str, running: dict[DirectedLink, LawParams]) -> None:
        """Apply an alinea event on top of earlier ones; each target must stay valid."""
        if event.kind != "alinea" or not event.law_changes:
            return
        for target in event.targets:
            try:
                running[target] = running[target].with_changes(**dict(event.law_changes))
            except ParamError as exc:
                raise self.doc.error_at_line(event.line, path,
                                             f"{exc} (law {target[0]}->{target[1]} from {event.at_ns / 1e9:g}s)") from None

    def _options(self) -> Options:
        if "options" not in self.top:
            return Options(ecmp="fabric" in self.top)
        entries = self.doc.mapping(self.top["options"].value, "options", OPTION_KEYS)
        loss = 0.0
        if "report_loss" in entries:
            node = entries["report_loss"].value
            loss = self.doc.unit(node, "options.report_loss", parse_fraction)
            if not 0 <= loss < 1:
                raise self.doc.error(node, "options.report_loss", f"{loss:g}: a loss fraction must be in [0, 1)")
        fairness = "per-port"
        if "fairness" in entries:
            node = entries["fairness"].value
            fairness = self.doc.text(node, "options.fairness")
            if fairness not in FAIRNESS:
                raise self.doc.error(node, "options.fairness", f"{fairness!r}: choose {' or '.join(FAIRNESS)}")
        queue_model = "bmv2"
        if "queue_model" in entries:
            node = entries["queue_model"].value
            queue_model = self.doc.text(node, "options.queue_model")
            if queue_model not in QUEUE_MODELS:
                raise self.doc.error(node, "options.queue_model",
                                     f"{queue_model!r}: choose {' or '.join(QUEUE_MODELS)}")
        latency = DEFAULT_CONTROL_LATENCY_NS
        if "control_latency" in entries:
            node = entries["control_latency"].value
            latency = self.doc.unit(node, "options.control_latency", parse_duration_ns)
            if not 0 <= latency <= MAX_CONTROL_LATENCY_NS:
                raise self.doc.error(node, "options.control_latency",
                                     f"{latency / 1e6:g} ms: must be in 0..{MAX_CONTROL_LATENCY_NS // 1_000_000} ms")
        p99 = None
        if "control_latency_p99" in entries:
            node = entries["control_latency_p99"].value
            p99 = self.doc.unit(node, "options.control_latency_p99", parse_duration_ns)
            if not latency <= p99 <= MAX_CONTROL_LATENCY_NS:
                raise self.doc.error(node, "options.control_latency_p99",
                                     f"{p99 / 1e6:g} ms: must be in control_latency ({latency / 1e6:g} ms).."
                                     f"{MAX_CONTROL_LATENCY_NS // 1_000_000} ms")
        polls = False
        if "report_polls" in entries:
            node = entries["report_polls"].value
            polls = self.doc.scalar(node, "options.report_polls")
            if not isinstance(polls, bool):
                raise self.doc.error(node, "options.report_polls", f"{polls!r}: report_polls is true or false")
        return Options(report_loss=loss, fairness=fairness, queue_model=queue_model, control_latency_ns=latency,
                       control_latency_p99_ns=p99, report_polls=polls, ecmp=self._ecmp(entries),
                       network=self._network(entries), classes=self._classes(entries),
                       nak_aggregation_ns=self._nak_aggregation(entries))

    def _nak_aggregation(self, entries: dict[str, Entry]) -> int:
        """``options.nak_aggregation: 500ms``: every switch forwards the first NAK of a pgmcc session for a
        packet and drops its repeats for that long (PGM's router aggregation; alinea.p4); 0 or absent: off."""
        if "nak_aggregation" not in entries:
            return 0
        node = entries["nak_aggregation"].value
        hold = self.doc.unit(node, "options.nak_aggregation", parse_duration_ns)
        if not 0 <= hold < 1 << 47:
            raise self.doc.error(node, "options.nak_aggregation", f"{hold} ns: a hold must be >= 0")
        if hold and not any(f.control == "pgmcc" for f in self._flows_by_name):
            raise self.doc.error(node, "options.nak_aggregation", "no pgmcc flow: NAK aggregation acts on "
                                 "pgmcc sessions only")
        return hold

    def _classes(self, entries: dict[str, Entry]) -> int:
        """``options.classes``: per-destination classes, 1 (the default) to MAX_CLASSES."""
        if "classes" not in entries:
            return 1
        node = entries["classes"].value
        value = self.doc.scalar(node, "options.classes")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CLASSES:
            raise self.doc.error(node, "options.classes",
                                 f"{value!r}: classes is a whole number in 1..{MAX_CLASSES} (BMv2 has 8 priority "
                                 "queues per port; the top one is the reports')")
        return value

    def _ecmp_on(self) -> bool:
        if "options" not in self.top:
            return "fabric" in self.top
        return self._ecmp(self.doc.mapping(self.top["options"].value, "options", OPTION_KEYS))

    def _ecmp(self, entries: dict[str, Entry]) -> bool:
        """Multipath: ``options.ecmp`` if given, else on exactly when a fabric generated the file."""
        if "ecmp" not in entries:
            return "fabric" in self.top
        value = self.doc.scalar(entries["ecmp"].value, "options.ecmp")
        if not isinstance(value, bool):
            raise self.doc.error(entries["ecmp"].value, "options.ecmp", f"{value!r}: true or false")
        return value

    def _network(self, entries: dict[str, Entry]) -> str | None:
        if "network" not in entries:
            return None
        node = entries["network"].value
        mode = self.doc.text(node, "options.network")
        if mode not in NETWORK_MODES:
            raise self.doc.error(node, "options.network", f"{mode!r}: choose {' or '.join(NETWORK_MODES)}")
        return mode
