"""Fabric workloads: flow sizes drawn from a CDF file, Poisson arrivals at a given load, and incast.

Why flows as a ``flows:`` section of the topology file: a workload's flows are then ordinary
``control: tcp`` flows with a ``size`` and a ``start``, loaded, routed and checked like any other,
and the simulator's TCP model (``hosts/tcp``, ``topo/sim/tcp.py``) carries each one reliably until
its last byte is delivered (its completion time). Everything is drawn from one
``random.Random(seed)``: the same seed gives the same flows.

A CDF file (``topo/workloads/*.cdf``) has one point a line, ``<size in bytes> <cumulative
fraction>``, sizes and fractions non-decreasing, the last fraction 1; ``#`` starts a comment. A
size is drawn by inverting the CDF with linear interpolation between points.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass
from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from controlplane.units import parse_duration_ns
from topo.file.leafspine import LeafSpine
from topo.file.yaml_tree import Doc

__all__ = ["WorkloadError", "SizeCdf", "FlowSpec", "load_cdf", "cdf_named", "poisson_flows", "incast",
           "flows_yaml", "expand_workload", "BUILTIN_CDFS", "CDF_DIR", "WORKLOAD_KEYS"]

CDF_DIR = Path(__file__).resolve().parents[1] / "workloads"
#: the distributions shipped (their sources are named in the files)
BUILTIN_CDFS = ("websearch", "datamining")


class WorkloadError(ValueError):
    """A CDF file or a workload parameter is wrong; the message names which and why."""


@dataclass(frozen=True)
class SizeCdf:
    name: str
    points: tuple[tuple[float, float], ...]  # (size in bytes, cumulative fraction), validated

    def size_at(self, u: float) -> float:
        """The size whose cumulative fraction is ``u`` (0 <= u <= 1), interpolated."""
        fractions = [p for _, p in self.points]
        i = bisect.bisect_left(fractions, u)
        if i == 0:
            return self.points[0][0]
        (x0, p0), (x1, p1) = self.points[i - 1], self.points[min(i, len(self.points) - 1)]
        return x1 if p1 == p0 else x0 + (x1 - x0) * (u - p0) / (p1 - p0)

    def sample(self, rng: random.Random, scale: float = 1.0) -> int:
        """A flow size in bytes (times ``scale``), at least one byte."""
        return max(1, round(self.size_at(rng.random()) * scale))

    def mean(self) -> float:
        """The mean size of the interpolated distribution (each segment uniform)."""
        return sum((p1 - p0) * (x0 + x1) / 2 for (x0, p0), (x1, p1) in zip(self.points, self.points[1:])) \
            + self.points[0][1] * self.points[0][0]


def load_cdf(path: str | Path) -> SizeCdf:
    """Read and check a CDF file; every complaint names the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"{path}: cannot read the flow-size CDF: {exc}") from None
    points: list[tuple[float, float]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        where = f"{path}:{n}"
        if len(line) != 2:
            raise WorkloadError(f"{where}: expected '<size in bytes> <cumulative fraction>', got {raw.strip()!r}")
        try:
            size, frac = float(line[0]), float(line[1])
        except ValueError:
            raise WorkloadError(f"{where}: not two numbers: {raw.strip()!r}") from None
        if not (math.isfinite(size) and size >= 0):
            raise WorkloadError(f"{where}: size {line[0]}: must be a finite number of bytes >= 0")
        if not 0 <= frac <= 1:
            raise WorkloadError(f"{where}: cumulative fraction {line[1]}: must be in [0, 1]")
        if points and (size < points[-1][0] or frac < points[-1][1]):
            raise WorkloadError(f"{where}: ({line[0]}, {line[1]}) goes below the previous point "
                                f"({points[-1][0]:g}, {points[-1][1]:g}): sizes and fractions never decrease")
        points.append((size, frac))
    if len(points) < 2:
        raise WorkloadError(f"{path}: a CDF needs at least two points, got {len(points)}")
    if points[-1][1] != 1:
        raise WorkloadError(f"{path}: the last cumulative fraction is {points[-1][1]:g}: it must be 1")
    if points[-1][0] <= 0:
        raise WorkloadError(f"{path}: every flow would be empty (the largest size is 0)")
    return SizeCdf(path.stem, tuple(points))


def cdf_named(name: str) -> SizeCdf:
    """A shipped distribution by name (``websearch``, ``datamining``) or a CDF file by path."""
    if name in BUILTIN_CDFS:
        return load_cdf(CDF_DIR / f"{name}.cdf")
    if not Path(name).is_file():
        raise WorkloadError(f"{name}: no such CDF file (or give a shipped one: {', '.join(BUILTIN_CDFS)})")
    return load_cdf(name)


@dataclass(frozen=True)
class FlowSpec:
    name: str
    src: str
    dst: str
    size_bytes: int
    start_ns: int


def poisson_flows(hosts: list[str], cdf: SizeCdf, *, load: float, host_rate_bps: float, duration_ns: int,
                  seed: int, size_scale: float = 1.0, start_ns: int = 0, prefix: str = "w") -> list[FlowSpec]:
    """All-to-all flows whose arrivals are Poisson at a rate that offers ``load`` of every host's
    link on average: lambda = load * host_rate * hosts / (8 * mean size). Source and destination are
    drawn uniformly (distinct), sizes from ``cdf`` times ``size_scale``."""
    if len(hosts) < 2:
        raise WorkloadError(f"a workload needs at least two hosts, got {len(hosts)}")
    if not 0 < load <= 1:
        raise WorkloadError(f"load {load:g}: a fraction of the host links' capacity in (0, 1]")
    if not (host_rate_bps > 0 and size_scale > 0 and duration_ns > 0):
        raise WorkloadError("host rate, size scale and duration must be > 0")
    rng = random.Random(f"{seed}:workload:{cdf.name}")
    per_s = load * host_rate_bps * len(hosts) / (8 * cdf.mean() * size_scale)
    out: list[FlowSpec] = []
    t = float(start_ns)
    while True:
        t += rng.expovariate(per_s) * 1e9
        if t >= start_ns + duration_ns:
            return out
        src, dst = rng.sample(hosts, 2)
        out.append(FlowSpec(f"{prefix}{len(out) + 1}", src, dst, cdf.sample(rng, size_scale), round(t)))


def incast(senders: list[str], receiver: str, size_bytes: int, at_ns: int, prefix: str = "incast") -> list[FlowSpec]:
    """N senders to one receiver, all starting at ``at_ns`` (the partition-aggregate pattern)."""
    if receiver in senders:
        raise WorkloadError(f"incast: the receiver {receiver} is also a sender")
    if not senders or size_bytes <= 0:
        raise WorkloadError("incast: needs at least one sender and a size > 0")
    return [FlowSpec(f"{prefix}{i}", s, receiver, size_bytes, at_ns) for i, s in enumerate(senders, start=1)]


def flows_yaml(specs: list[FlowSpec], control: str = "tcp", cc: str | None = None) -> str:
    """The ``flows:`` section for ``specs`` (sized flows of ``control``, tcp by default; ``cc`` for
    every flow, or the default)."""
    lines = ["flows:"]
    with_cc = "" if cc is None else f", cc: {cc}"
    lines += [f"  - {{name: {f.name}, src: {f.src}, dst: {f.dst}, control: {control}, size: {f.size_bytes}, "
              f"start: {f.start_ns}ns{with_cc}}}" for f in specs]
    return "\n".join(lines) + "\n"


# ---- the ``workload:`` section of a topology file --------------------------------------------------
#: ``workload:``'s keys (docs/reference/topologies.md): the flows ``hbh fabric`` draws, from a file
WORKLOAD_KEYS = ("cdf", "load", "size_scale", "duration", "start", "seed", "cc")
_STR, _INT = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int"


def expand_workload(root: Node, doc: Doc, fabric: LeafSpine | None) -> list[FlowSpec]:
    """Replace ``workload:`` by the sized TCP flows it draws between ``fabric``'s hosts (in place:
    after the file's own ``flows``, named ``w1``, ``w2``, ...), exactly as :func:`poisson_flows`
    draws them for ``hbh fabric``; the flows drawn ([] without a workload).

    Why in the file: a user's own fabric (any leaves, spines and hosts, ``fabric:``) then runs the
    shipped experiments' workloads with ``hbh run``, ``hbh sweep`` or ``hbh compare``, no Python
    needed. Generated flows carry the line of the ``workload`` key, so an error in them points there.
    """
    if not isinstance(root, MappingNode):
        return []
    at = [i for i, (k, _v) in enumerate(root.value) if isinstance(k, ScalarNode) and k.value == "workload"]
    if not at:
        return []
    key_node, node = root.value[at[0]]
    if fabric is None:
        raise doc.error(key_node, "workload", "draws flows between a fabric's hosts at its host rate: "
                                              "the file needs a fabric: section")
    w = doc.mapping(node, "workload", WORKLOAD_KEYS, required=("cdf", "load", "duration"))
    cdf_name = doc.text(w["cdf"].value, "workload.cdf")
    here = Path(doc.source).parent
    if cdf_name not in BUILTIN_CDFS and not Path(cdf_name).is_absolute() and (here / cdf_name).is_file():
        cdf_name = str(here / cdf_name)  # a CDF file beside the topology file
    load = _number(doc, w["load"].value, "workload.load")
    scale = _number(doc, w["size_scale"].value, "workload.size_scale") if "size_scale" in w else 1.0
    duration = doc.unit(w["duration"].value, "workload.duration", parse_duration_ns)
    start = doc.unit(w["start"].value, "workload.start", parse_duration_ns) if "start" in w else 0
    seed = doc.integer(w["seed"].value, "workload.seed", "seed") if "seed" in w else 1
    if not 0 < load <= 1:
        raise doc.error(w["load"].value, "workload.load", f"{load:g}: a fraction of the host links' capacity in (0, 1]")
    if not scale > 0:
        raise doc.error(w["size_scale"].value, "workload.size_scale", f"{scale:g}: must be > 0")
    if not duration > 0:
        raise doc.error(w["duration"].value, "workload.duration", "the arrivals' window must be > 0")
    try:
        cdf = cdf_named(cdf_name)
    except WorkloadError as exc:
        raise doc.error(w["cdf"].value, "workload.cdf", str(exc)) from None
    try:
        specs = poisson_flows(fabric.hosts(), cdf, load=load, host_rate_bps=fabric.host_rate_bps,
                              duration_ns=duration, seed=seed, size_scale=scale, start_ns=start)
    except WorkloadError as exc:
        raise doc.error(node, "workload", str(exc)) from None
    mark = key_node.start_mark

    def scalar(value: str, tag: str = _STR) -> ScalarNode:
        return ScalarNode(tag, value, mark, mark)

    def flow(f: FlowSpec) -> MappingNode:
        pairs = [("name", scalar(f.name)), ("src", scalar(f.src)), ("dst", scalar(f.dst)),
                 ("control", scalar("tcp")), ("size", scalar(str(f.size_bytes), _INT)),
                 ("start", scalar(f"{f.start_ns}ns"))]
        if "cc" in w:
            pairs.append(("cc", w["cc"].value))
        return MappingNode("tag:yaml.org,2002:map", [(scalar(k), v) for k, v in pairs], mark, mark)

    del root.value[at[0]]
    flows = [k for k in root.value if isinstance(k[0], ScalarNode) and k[0].value == "flows"]
    generated = [flow(f) for f in specs]
    if flows and isinstance(flows[0][1], SequenceNode):
        flows[0][1].value.extend(generated)
    elif not flows:
        root.value.append((scalar("flows"), SequenceNode("tag:yaml.org,2002:seq", generated, mark, mark)))
    else:
        doc.sequence(flows[0][1], "flows")  # not a list: the loader's own complaint
    return specs


def _number(doc: Doc, node: Node, path: str) -> float:
    value = doc.scalar(node, path)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise doc.error(node, path, f"{value!r}: expected a number")
    return float(value)
