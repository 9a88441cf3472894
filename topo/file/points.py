"""A sweep's points, and the one function that turns a point into a topology.

Why edit the YAML tree rather than the resolved ``Topology``: the loader resolves a lot (r_max
derived from links and flows, overrides in file order, events on top, ports from intervals);
a value changed after resolution would skip all of that. :func:`point_topology` instead adds
or replaces nodes in the file's composed tree and lets :func:`topo.file.schema.load_topology_text`
read it, so a swept value passes exactly the checks (and gets exactly the message) the same
value written in the file would. New nodes carry labelled lines, so a complaint about one
names the ``--set`` that made it instead of a line the file does not have.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from topo.file.schema import TopologyError, load_topology_text
from topo.file.settings import Setting, SweepError, split_control
from topo.net.model import Topology

__all__ = ["Base", "Point", "load_base", "grid", "point_topology"]

_RESOLVER = yaml.resolver.Resolver()


@dataclass(frozen=True)
class Base:
    """The topology file a sweep starts from: its text (what every point edits) and its resolution."""

    source: str
    text: str
    topo: Topology


@dataclass(frozen=True)
class Point:
    """One parameter point: a value for every swept setting and a control (None: each flow's own)."""

    values: tuple[tuple[Setting, str], ...]
    control: str | None

    def params(self) -> dict[str, str]:
        """Parameter name -> value as given, in the order of the ``--set`` options; control last."""
        out = {s.name: v for s, v in self.values}
        if self.control is not None:
            out["control"] = self.control
        return out

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params().items()) or "(the file as it is)"


def load_base(path: str | Path) -> Base:
    """Read and validate the sweep's topology file (its errors are the loader's: FILE:LINE: ...)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: cannot read the topology file: {exc}") from None
    return Base(str(path), text, load_topology_text(text, str(path)))


def grid(settings: list[Setting], controls: tuple[str, ...] | None) -> list[Point]:
    """The cartesian product, first ``--set`` varying slowest, controls fastest (a stable order)."""
    axes = [[(s, v) for v in s.values] for s in settings]
    return [Point(tuple(combo), control)
            for combo in itertools.product(*axes) for control in (controls or (None,))]


def point_topology(base: Base, point: Point) -> Topology:
    """The topology of ``point``: the base file with the point's values, read by the loader.

    Raises SweepError naming the point and, through the loader, the setting that is wrong.
    """
    first_line = base.text.count("\n") + 2  # labelled lines start past the end of the file

    def edit(root: Node) -> dict[int, str]:
        return _apply(root, base.topo, point, first_line)

    try:
        return load_topology_text(base.text, base.source, edit=edit)
    except TopologyError as exc:
        raise SweepError(f"point {point.label()}: {exc}") from None


# ---- editing the composed tree -----------------------------------------------------------------------
def _apply(root: Node, topo: Topology, point: Point, first_line: int) -> dict[int, str]:
    assert isinstance(root, MappingNode)  # the base file loaded, so its top level is a mapping
    labels: dict[int, str] = {}
    for i, (setting, value) in enumerate(point.values):
        line = first_line + i
        labels[line] = f"--set {setting.assignment(value)}"
        _EDITS[setting.target](root, topo, setting, _scalar(value, line), line)
    if point.control is not None:
        line = first_line + len(point.values)
        labels[line] = f"--controls {point.control}"
        _set_controls(root, point.control, line)
    return labels


def _mark(line: int) -> Mark:
    return Mark("<sweep>", 0, line - 1, 0, None, None)


def _scalar(value: str, line: int) -> ScalarNode:
    """A scalar typed as YAML would type it in the file (0.5 a number, 80% or 5ms text)."""
    tag = _RESOLVER.resolve(ScalarNode, value, (True, False))
    return ScalarNode(tag, value, _mark(line), _mark(line))


def _text(value: str, line: int) -> ScalarNode:
    return ScalarNode("tag:yaml.org,2002:str", value, _mark(line), _mark(line))


def _get(mapping: MappingNode, key: str) -> Node | None:
    for k, v in mapping.value:
        if isinstance(k, ScalarNode) and k.value == key:
            return v
    return None


def _set(mapping: MappingNode, key: str, value: Node, line: int) -> None:
    """Replace ``key``'s entry (key node too: the loader blames a law value on its key's line) or add it."""
    pair = (_text(key, line), value)
    for i, (k, _) in enumerate(mapping.value):
        if isinstance(k, ScalarNode) and k.value == key:
            mapping.value[i] = pair
            return
    mapping.value.append(pair)


def _section(root: MappingNode, key: str, line: int, kind: type[Node]) -> Node:
    node = _get(root, key)
    if node is None:
        tag = "tag:yaml.org,2002:map" if kind is MappingNode else "tag:yaml.org,2002:seq"
        node = kind(tag, [], _mark(line), _mark(line))
        _set(root, key, node, line)
    return node


def _edit_alinea(root: MappingNode, topo: Topology, s: Setting, value: ScalarNode, line: int) -> None:
    """An override appended after the file's own (so it wins); no selector: one per reporting node."""
    overrides = _section(root, "alinea", line, SequenceNode)
    selectors = [s.selector] if s.selector else \
        [(("toward", v),) for v in dict.fromkeys(v for (_, v) in topo.law)]
    for sel in selectors:
        pairs = [(_text(k, line), _text(name, line)) for k, name in sel] + [(_text(s.key, line), value)]
        overrides.value.append(MappingNode("tag:yaml.org,2002:map", pairs, _mark(line), _mark(line)))


def _edit_link(root: MappingNode, topo: Topology, s: Setting, value: ScalarNode, line: int) -> None:
    items = _get(root, "links").value  # type: ignore[union-attr]
    if not s.selector:
        indices = range(len(topo.links))
    else:
        a, b = _link_ends(topo, s)
        indices = [i for i, link in enumerate(topo.links) if {a, b} == set(link.ends)]
        if not indices:
            raise SweepError(f"--set {s.text}: no link between {a} and {b} "
                             f"(links: {', '.join(f'{ln.a}-{ln.b}' for ln in topo.links)})")
    for i in indices:
        _set(items[i], s.key, value, line)


def _link_ends(topo: Topology, s: Setting) -> tuple[str, str]:
    text = s.selector[0][1]
    if "," in text:
        a, b = text.split(",", 1)
        return a, b
    splits = [(text[:i], text[i + 1:]) for i, c in enumerate(text) if c == "-"]
    known = [(a, b) for a, b in splits if a in topo.nodes and b in topo.nodes]
    if len(known) != 1:
        raise SweepError(f"--set {s.text}: link[{text}] does not name two nodes "
                         f"(nodes: {', '.join(topo.nodes)}; write link[A,B] if a name contains '-')")
    return known[0]


def _edit_flow(root: MappingNode, topo: Topology, s: Setting, value: ScalarNode, line: int) -> None:
    flows = _get(root, "flows")
    items = [i for i in flows.value if isinstance(i, MappingNode)] if isinstance(flows, SequenceNode) else []
    names = _file_flow_names(items)
    if s.selector and s.selector[0][1] not in names:
        raise SweepError(f"--set {s.text}: unknown flow {s.selector[0][1]!r} (the file's flows: "
                         f"{', '.join(names) or 'none'}{_not_in_the_file(topo, s.selector[0][1])})")
    for item, name in zip(items, names):
        if not s.selector or name == s.selector[0][1]:
            _set(item, s.key, value, line)


def _file_flow_names(items: list[MappingNode]) -> list[str]:
    """The name of each item of the file's ``flows:`` (its ``name``, else ``f<i>``, as the loader names it).

    Why not ``Topology.flows``: a multicast flow resolves to one branch per receiver and a
    ``workload:`` appends flows of its own, so its i-th flow is not the file's i-th item: with a
    multicast flow first, ``flow[u]`` failed with an IndexError, or edited another flow."""
    names = []
    for i, item in enumerate(items):
        name = _get(item, "name")
        names.append(str(name.value) if isinstance(name, ScalarNode) else f"f{i + 1}")
    return names


def _not_in_the_file(topo: Topology, name: str) -> str:
    """Why a resolved flow's name is no ``flow[...]``: a multicast branch, or a workload's draw."""
    flow = next((f for f in topo.flows if f.name == name), None)
    if flow is None:
        return ""
    if flow.group is not None and "@" in name:
        return f"; {name} is a branch of multicast flow {name.split('@')[0]}: set flow[{name.split('@')[0]}]"
    return f"; {name} is drawn by the file's workload: section"


def _edit_node(root: MappingNode, topo: Topology, s: Setting, value: ScalarNode, line: int) -> None:
    name = s.selector[0][1]
    if name not in topo.nodes:
        raise SweepError(f"--set {s.text}: unknown node {name!r} (nodes: {', '.join(topo.nodes)})")
    node = _get(_get(root, "nodes"), name)  # type: ignore[arg-type]
    _set(node, s.key, value, line)  # type: ignore[arg-type]


def _edit_options(root: MappingNode, topo: Topology, s: Setting, value: ScalarNode, line: int) -> None:
    _set(_section(root, "options", line, MappingNode), s.key, value, line)  # type: ignore[arg-type]


_EDITS = {"alinea": _edit_alinea, "link": _edit_link, "flow": _edit_flow, "node": _edit_node,
          "options": _edit_options}


#: Flow keys only some controls have (topo/file/schema.py): dropped when a flow's control changes to another.
_CONTROL_KEYS = {"tcp": ("cc", "size", "sack"), "ledbat": ("target",), "gcc": ("gcc",)}
#: Keys a control refuses: TCP's rate and segments are its own, LEDBAT's window follows the queuing delay.
_REFUSED_KEYS = {"tcp": ("rate", "r_max", "packet_size"), "ledbat": ("rate", "r_max")}


def _set_controls(root: MappingNode, name: str, line: int) -> None:
    """Every flow gets control ``name`` (``tcp-CC``: tcp with cc CC); its cap carries over where the new
    control has one (a fixed flow's rate <-> another's r_max); keys the new control does not take go."""
    control, cc = split_control(name)
    flows = _get(root, "flows")
    for item in flows.value if isinstance(flows, SequenceNode) else []:
        _set(item, "control", _text(control, line), line)
        rate, r_max = _get(item, "rate"), _get(item, "r_max")
        if control == "fixed" and rate is None and r_max is not None:
            _rename(item, "r_max", "rate")
        elif control != "fixed" and r_max is None and rate is not None:
            _rename(item, "rate", "r_max")
        refused = _REFUSED_KEYS.get(control, ()) + tuple(k for c, keys in _CONTROL_KEYS.items() if c != control
                                                          for k in keys)
        item.value = [(k, v) for k, v in item.value if not (isinstance(k, ScalarNode) and k.value in refused)]
        if cc is not None:
            _set(item, "cc", _text(cc, line), line)


def _rename(mapping: MappingNode, old: str, new: str) -> None:
    for i, (k, v) in enumerate(mapping.value):
        if isinstance(k, ScalarNode) and k.value == old:
            mapping.value[i] = (ScalarNode(k.tag, new, k.start_mark, k.end_mark), v)
