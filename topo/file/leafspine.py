"""The ``fabric:`` generator form of a topology file: a two-tier leaf-spine, written out as nodes and links.

Why expand into the YAML tree rather than build model objects: the generated ``nodes`` and ``links``
then pass every check a hand-written file passes (names, buffers, rates, law derivation), and there
is one loader. Generated nodes carry the line of the ``fabric`` key they came from, so an error in
them points there.

Naming and numbering (docs/reference/topologies.md): leaves ``leaf1..leafL``, spines ``spine1..spineS``, hosts
``h<leaf>_<i>``; node ids in that order; links host--leaf first (leaf by leaf), then every
leaf--spine link, so a leaf's ports are its hosts 1..H, then its uplinks H+1..H+S, and a spine's
port l faces leaf l. Routes between leaves are equal-cost groups over the spines (``options.ecmp``).
"""

from __future__ import annotations

from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from controlplane.units import parse_rate
from topo.file.yaml_tree import Doc, Entry

__all__ = ["FABRIC_KEYS", "LeafSpine", "expand_fabric", "read_fabric"]

FABRIC_KEYS = ("leaves", "spines", "hosts_per_leaf", "host_rate", "spine_rate", "oversubscription", "delay",
               "buffer")
#: node ids are one byte (model.py); a group holds at most alinea.p4's ECMP_MAX_GROUP next hops
MAX_NODES = 255
MAX_SPINES = 16
_STR = "tag:yaml.org,2002:str"


@dataclass(frozen=True)
class LeafSpine:
    leaves: int
    spines: int
    hosts_per_leaf: int
    host_rate_bps: float
    spine_rate_bps: float

    @property
    def oversubscription(self) -> float:
        """A leaf's host capacity over its uplink capacity."""
        return self.hosts_per_leaf * self.host_rate_bps / (self.spines * self.spine_rate_bps)

    def leaf(self, i: int) -> str:
        return f"leaf{i}"

    def spine(self, j: int) -> str:
        return f"spine{j}"

    def host(self, leaf: int, i: int) -> str:
        return f"h{leaf}_{i}"

    def hosts(self) -> list[str]:
        return [self.host(lf, i) for lf in range(1, self.leaves + 1) for i in range(1, self.hosts_per_leaf + 1)]


def _count(doc: Doc, f: dict[str, Entry], key: str, low: int) -> int:
    path = f"fabric.{key}"
    value = doc.integer(f[key].value, path, key.replace("_", " "))
    if value < low:
        raise doc.error(f[key].value, path, f"{value}: a fabric needs at least {low}")
    return value


def read_fabric(doc: Doc, entry: Entry) -> LeafSpine:
    """The generator's parameters, checked: counts, rates and exactly one of spine_rate and
    oversubscription (spine_rate = hosts_per_leaf * host_rate / (spines * oversubscription))."""
    f = doc.mapping(entry.value, "fabric", FABRIC_KEYS, required=("leaves", "spines", "hosts_per_leaf", "host_rate"))
    leaves, spines = _count(doc, f, "leaves", 2), _count(doc, f, "spines", 1)
    per_leaf = _count(doc, f, "hosts_per_leaf", 1)
    if spines > MAX_SPINES:
        raise doc.error(f["spines"].value, "fabric.spines",
                        f"{spines}: an equal-cost group holds at most {MAX_SPINES} next hops (alinea.p4)")
    total = leaves * (per_leaf + 1) + spines
    if total > MAX_NODES:
        raise doc.error(entry.key_node, "fabric", f"{total} nodes: more than {MAX_NODES} "
                                                  "(a node id is one byte of its MAC and IPv4 addresses)")
    host_rate = _positive_rate(doc, f["host_rate"].value, "fabric.host_rate")
    if ("spine_rate" in f) == ("oversubscription" in f):
        raise doc.error(entry.key_node, "fabric", "give spine_rate or oversubscription (one of the two)")
    if "spine_rate" in f:
        spine_rate = _positive_rate(doc, f["spine_rate"].value, "fabric.spine_rate")
    else:
        node = f["oversubscription"].value
        ratio = doc.scalar(node, "fabric.oversubscription")
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio < float("inf"):
            raise doc.error(node, "fabric.oversubscription",
                            f"{ratio!r}: a ratio > 0, e.g. 1 (non-blocking) or 2 (hosts offer twice the uplinks)")
        spine_rate = per_leaf * host_rate / (spines * ratio)
    return LeafSpine(leaves, spines, per_leaf, host_rate, spine_rate)


def _positive_rate(doc: Doc, node: Node, path: str) -> float:
    value = doc.unit(node, path, parse_rate)
    if not value > 0:
        raise doc.error(node, path, f"rate = {value:g} b/s: must be > 0")
    return value


def expand_fabric(root: Node, doc: Doc) -> LeafSpine | None:
    """Replace ``fabric:`` by the ``nodes`` and ``links`` it stands for (in place); None without one."""
    if not isinstance(root, MappingNode):
        return None
    entries = {k.value: Entry(k.value, k, v) for k, v in root.value if isinstance(k, ScalarNode)}
    if "fabric" not in entries:
        return None
    entry = entries["fabric"]
    for key in ("nodes", "links"):
        if key in entries:
            raise doc.error(entries[key].key_node, key,
                            f"a file with a fabric generates its {key}; give fabric or nodes and links, not both")
    fab = read_fabric(doc, entry)
    fields = doc.mapping(entry.value, "fabric")
    mark = entry.key_node.start_mark

    def text(value: str) -> ScalarNode:
        return ScalarNode(_STR, value, mark, mark)

    def mapping(pairs: list[tuple[str, Node]]) -> MappingNode:
        return MappingNode("tag:yaml.org,2002:map", [(text(k), v) for k, v in pairs], mark, mark)

    def sequence(items: list[Node]) -> SequenceNode:
        return SequenceNode("tag:yaml.org,2002:seq", items, mark, mark)

    def link(a: str, b: str, rate: float) -> MappingNode:
        pairs: list[tuple[str, Node]] = [("ends", sequence([text(a), text(b)])), ("rate", text(f"{rate!r}b/s"))]
        pairs += [(k, fields[k].value) for k in ("delay", "buffer") if k in fields]
        return mapping(pairs)

    names = [fab.leaf(i) for i in range(1, fab.leaves + 1)] + [fab.spine(j) for j in range(1, fab.spines + 1)]
    nodes = [(n, mapping([("kind", text("switch"))])) for n in names]
    nodes += [(h, mapping([("kind", text("host"))])) for h in fab.hosts()]
    links = [link(fab.host(lf, i), fab.leaf(lf), fab.host_rate_bps)
             for lf in range(1, fab.leaves + 1) for i in range(1, fab.hosts_per_leaf + 1)]
    links += [link(fab.leaf(lf), fab.spine(s), fab.spine_rate_bps)
              for lf in range(1, fab.leaves + 1) for s in range(1, fab.spines + 1)]
    root.value += [(text("nodes"), mapping(nodes)), (text("links"), sequence(links))]
    return fab
