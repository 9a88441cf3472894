"""An exit no law paces that idles because the laws feeding it hold its FIFO at less than one of its large frames in
bits, and the laws together overflow a buffer upstream of it at what it then carries (topo/analysis/check.py).

Why: the laws feeding v's FIFO toward w hold their buffers at v at their targets, counted in packets of their own mean
frames (controlplane/frame_size.py, ``capacity_in_frames``), so the FIFO holds about ``target`` bytes (the targets'
packets times those frames). Where the flows through it come in frames of several sizes, its content in bits is a
sawtooth: each frame of ``s`` bytes arrives at once (in one slot of the feeding queue's packet rate, at its link) and
the exit sends it in its own bits' time, so over the cycle between two such frames the content falls by ``s``. Held at
the top of that sawtooth at ``target`` bytes (a report reads the buffer right after an arrival), the exit runs dry for
``s - target`` bytes of each cycle when ``s`` is larger: per byte the exit should send, it loses
``sum_f share_f * max(0, 1 - target / s_f)`` (``share_f``: flow f's share of the exit's bits, the max-min fair shares
over the flows' whole paths, as frame_run.py takes them). That is a rate the exit does not carry, whatever any law
reports: the laws behind it read a slower drain, and where the links upstream are no faster than the exit, a buffer
there gains the difference until its law, behind its own loop, cuts.

The fluid model has no frames, so the analysis runs it once more with each such exit's link at the rate it carries
(every rate it takes in the run, events included, times ``1 - idle``), and a law is ruled out where its buffer
overflows then and not at the links' rates. Seen in tests/topo/random_cases/mixed-frame-exit-shortfall-long-link.yaml
(make fuzz-topo seed 13, issue 46): f1 (1500 B) and f2 (200 B) from one host, S4's law holds S3's buffer at 4 of its
353 B frames (1412 B), less than one of f1's frames; this rule says S3's exit toward H5 carries 97.1 % of its 20 Mb/s
(the run: 19.38-19.51 Mb/s over 0.8-0.9 s), and with it the model fills S4's 20-packet buffer from S2, behind S2's
20 ms link, at 0.90 s (the run lost 1 packet there at 0.90 s, seeds 1 and 2); at the links' rates it peaks at 9 %.
Only exits whose frames differ in size: with one size a target under one frame is under one packet, which the room
rule (check.py) already rules out; and only exits whose every feeding link is regulated by a law (an unregulated
feed holds what it likes)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from topo.analysis.floor_check import _unit
from topo.analysis.fluid_network import NetworkPeak, network_peaks, overflows
from topo.net.model import Flow, Topology
from topo.net.plan import flow_frame_bytes, law_frames, max_min_shares
from topo.net.routes import routed_paths

__all__ = ["IdleExit", "idle_exits", "with_idle_exits", "ExitShortfall", "exit_shortfalls"]

DirectedLink = tuple[str, str]


@dataclass(frozen=True)
class IdleExit:
    """v's exit toward w (no law paces it): its FIFO held at ``target_bytes`` by the laws that feed it, its largest
    frame ``large_bytes``, the fraction ``idle`` of its rate it does not carry."""

    v: str
    w: str
    target_bytes: float
    large_bytes: int
    idle: float
    feeds: tuple[str, ...] = ()  # the nodes whose laws hold that FIFO (their buffers at v run dry, not over)


@dataclass(frozen=True)
class ExitShortfall:
    """Law u -> v: its buffer at v overflows in the fluid model only with ``exits`` at the rates they carry."""

    exits: tuple[IdleExit, ...]
    peak: NetworkPeak


def idle_exits(topo: Topology) -> list[IdleExit]:
    """Every exit (v, w) of a switch v that no law paces, whose ALINEA flows come in frames of several sizes and
    whose feeding laws hold its FIFO at less than its largest frame, in bits."""
    paths = routed_paths(topo)
    alinea = [f for f in topo.flows if f.control == "alinea"]
    crossing: dict[DirectedLink, list[Flow]] = {}
    feeds: dict[DirectedLink, set[str]] = {}  # (v, w) -> the nodes whose links bring v those flows
    for f in alinea:
        path = paths[f.name]
        for i in range(1, len(path) - 1):
            crossing.setdefault((path[i], path[i + 1]), []).append(f)
            feeds.setdefault((path[i], path[i + 1]), set()).add(path[i - 1])
    shares = max_min_shares(topo, {f.name: tuple(zip(paths[f.name], paths[f.name][1:])) for f in alinea}, alinea)
    out = []
    for (v, w), flows in sorted(crossing.items()):
        if not topo.nodes[v].is_switch or (v, w) in topo.law or len({flow_frame_bytes(f) for f in flows}) < 2:
            continue
        if any((x, v) not in topo.law or (v, x) not in topo.ports for x in feeds[(v, w)]):
            continue
        target = sum(_target_bytes(topo, x, v) for x in feeds[(v, w)])
        bits = {_unit(f): (shares[f.name], flow_frame_bytes(f)) for f in flows}
        total = sum(b for b, _ in bits.values())
        if total <= 0:
            continue
        idle = sum(b / total * max(0.0, 1 - target / size) for b, size in bits.values())
        if idle > 0:
            out.append(IdleExit(v, w, target, max(size for _, size in bits.values()), idle, tuple(sorted(feeds[(v, w)]))))
    return out


def _target_bytes(topo: Topology, x: str, v: str) -> float:
    """The bytes x's law holds its buffer at v at: its target, in x's frames as the law counts them, times one."""
    frames, bits = law_frames(topo, x, v, topo.ports[(v, x)].capacity)
    return topo.law[(x, v)].o_max * frames * bits / 8


def with_idle_exits(topo: Topology, exits: list[IdleExit]) -> Topology:
    """``topo`` with each idle exit's link at the rates it carries (its own and its events', times ``1 - idle``)."""
    scale = {frozenset((e.v, e.w)): 1 - e.idle for e in exits}
    links = [dataclasses.replace(link, rate_bps=link.rate_bps * scale[frozenset(link.ends)])
             if frozenset(link.ends) in scale else link for link in topo.links]
    events = [dataclasses.replace(ev, rate_bps=ev.rate_bps * scale[frozenset(ev.link)])
              if ev.kind == "link_rate" and ev.link is not None and ev.rate_bps is not None
              and frozenset(ev.link) in scale else ev for ev in topo.events]
    return dataclasses.replace(topo, links=links, events=events)


def exit_shortfalls(topo: Topology, duration_s: float, plain: dict[DirectedLink, NetworkPeak],
                    inputs: dict[DirectedLink, float]) -> dict[DirectedLink, ExitShortfall]:
    """For each law (u, v) (``inputs``: the packets of room its buffer must keep, check.packet_margin): its buffer overflows in the fluid model
    with the idle exits at the rates they carry (not the buffers that feed those exits), where at the links' rates (``plain``, keyed by buffer) it does not."""
    exits = idle_exits(topo)
    if not exits:
        return {}
    dry = {(x, e.v) for e in exits for x in e.feeds}  # the idle FIFO's own buffers: held at their targets, they run dry
    out = {}
    for peak in network_peaks(with_idle_exits(topo, exits), duration_s):
        key = peak.buffer[::-1]
        if key not in inputs or key in dry or not overflows(peak, inputs[key]):
            continue
        was = plain.get(peak.buffer)
        if was is not None and overflows(was, inputs[key]):
            continue
        out[key] = ExitShortfall(tuple(exits), peak)
    return out
