"""Where an ALINEA law's floor alone overflows the buffer it regulates (topo/analysis.py).

Why: a law's floor (``r_floor``) is derived from its own link (a fiftieth of its rate, topo/derive.py),
not from what the flows cross behind the buffer it regulates. A host on a 500 Mb/s link has a 10 Mb/s
floor; if its flows cross 5 Mb/s behind its switch, the switch's buffer gains 5 Mb/s with the law at
its floor, whatever the reports say: no gain, target or forecast can hold it. The laws-together model
(topo/fluid_network.py) sees it when it runs long enough, and then blames the start-up and offers a
larger buffer, which only delays the loss.

What a law pushes at its floor is the floor, or less when its flows cannot bring that much: a host's
flows are each at most their R_max and its link; a switch forwards what reaches it, at least what the
laws before it push at their own floors (flows that leave by other links counted in full: the check
errs toward silence). What the buffer's node forwards of those flows is what the links behind it can
carry of them, links shared by several of the flows counted once (per path from the node: a link
reached by two paths is counted twice, again toward silence), and a receiver's playout. Checked over
each stretch of the run in which the same flows run and no link changes rate; the law is ruled out if
its floor's excess fills, within one stretch, its buffer and every buffer behind it on its flows'
paths (the laws there forward at their own floors, so the excess may gather at the last buffer
before the slow link).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topo.model import Flow, Topology
from topo.plan import law_frames
from topo.routes import routed_paths

__all__ = ["FloorOverflow", "floor_overflows"]

DirectedLink = tuple[str, str]
NS = 1_000_000_000


@dataclass(frozen=True)
class FloorOverflow:
    """Law u -> v at its floor sends ``push_bps``, more than v forwards of its flows (``drain_bps``),
    from ``from_s``: the buffers from v on are full ``fill_s`` later."""

    floor_bps: float
    push_bps: float
    drain_bps: float
    from_s: float
    fill_s: float


def floor_overflows(topo: Topology, duration_s: float) -> dict[DirectedLink, FloorOverflow]:
    """The laws whose floor fills their buffer in some stretch of the first ``duration_s`` of the run
    (the first such stretch of each)."""
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    alinea = [f for f in topo.flows if f.control == "alinea"]
    if not alinea or any(f.group is not None for f in alinea):
        return {}  # a multicast group frees its packet at its slowest copy: not modelled here
    end_ns = int(duration_s * NS)
    cuts = {0} | {f.start_ns for f in alinea} | {f.stop_ns for f in alinea if f.stop_ns is not None} | {
        ev.at_ns for ev in topo.events if ev.kind == "link_rate"}
    times = sorted(t for t in cuts if 0 <= t < end_ns) + [end_ns]
    out: dict[DirectedLink, FloorOverflow] = {}
    for t0, t1 in zip(times, times[1:]):
        rates = {}
        for ev in sorted(topo.events, key=lambda e: e.at_ns):
            if ev.kind == "link_rate" and ev.at_ns <= t0 and ev.link is not None and ev.rate_bps is not None:
                rates[_key(*ev.link)] = ev.rate_bps
        active = [f for f in alinea if f.start_ns <= t0 and (f.stop_ns is None or f.stop_ns > t0)]
        stretch = _Stretch(topo, paths, active, rates)
        for key, law in topo.law.items():
            if key in out or key not in stretch.crossing:
                continue
            push, drain = stretch.push(*key), stretch.drain(*key)
            if push <= drain * (1 + 1e-9):
                continue
            held = stretch.buffers_bits(*key)
            if (push - drain) * (t1 - t0) / NS >= held:
                out[key] = FloorOverflow(law.r_floor, push, drain, t0 / NS, held / (push - drain))
    return out


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _buffer_bits(topo: Topology, u: str, v: str) -> float:
    """v's buffer fed by u, bits (0: none)."""
    port = topo.ports.get((v, u)) or topo.host_buffers.get((v, u))
    if port is None:
        return 0.0
    frames, bits = law_frames(topo, u, v, port.capacity)
    return frames * bits


class _Stretch:
    """One stretch of the run: its flows, its link rates."""

    def __init__(self, topo: Topology, paths: dict[str, tuple[DirectedLink, ...]], active: list[Flow],
                 rates: dict[tuple[str, str], float]) -> None:
        self.topo, self.paths, self.rates = topo, paths, rates
        self.crossing: dict[DirectedLink, list[Flow]] = {}
        for f in active:
            for hop in paths[f.name]:
                self.crossing.setdefault(hop, []).append(f)
        self._push: dict[DirectedLink, float] = {}

    def rate(self, a: str, b: str) -> float:
        return self.rates.get(_key(a, b), self.topo.link_between(a, b).rate_bps)

    def push(self, u: str, v: str) -> float:
        """What u sends toward v at the floor of its law (and of the laws before it)."""
        if (u, v) in self._push:
            return self._push[(u, v)]
        flows = self.crossing.get((u, v), [])
        link = self.rate(u, v)
        if self.topo.nodes[u].is_switch:
            before = {hops[hops.index((u, v)) - 1] for hops in (self.paths[f.name] for f in flows)
                      if hops.index((u, v)) > 0}
            feed = sum(self.push(*hop) for hop in before)
        else:
            feed = sum(min(f.r_max_bps or math.inf, link) for f in flows)
        law = self.topo.law.get((u, v))
        floor = law.r_floor if law is not None else math.inf
        self._push[(u, v)] = out = min(floor, link, feed)
        return out

    def buffers_bits(self, u: str, v: str) -> float:
        """The buffers the floor's excess can fill: v's and every one behind it on the flows' paths (the
        laws there forward at their own floors, so the excess may gather at the last before the slow link)."""
        hops = {hop for f in self.crossing[(u, v)] for hop in self.paths[f.name][self.paths[f.name].index((u, v)):]}
        return sum(_buffer_bits(self.topo, *hop) for hop in hops)

    def drain(self, u: str, v: str) -> float:
        """What v forwards of the flows u sends it: each path out of v at most its links and its receiver."""
        rest = [(f, self.paths[f.name][self.paths[f.name].index((u, v)) + 1:]) for f in self.crossing[(u, v)]]
        return self._through(v, rest, math.inf)

    def _through(self, node: str, rest: list[tuple[Flow, tuple[DirectedLink, ...]]], cap: float) -> float:
        ending = [f for f, hops in rest if not hops]
        out = sum(f.r_max_bps or math.inf for f in ending)
        playout = self.topo.nodes[node].playout_bps
        if ending and playout:
            out = min(out, playout)
        onward: dict[DirectedLink, list[tuple[Flow, tuple[DirectedLink, ...]]]] = {}
        for f, hops in rest:
            if hops:
                onward.setdefault(hops[0], []).append((f, hops[1:]))
        for (a, b), group in onward.items():
            out += self._through(b, group, self.rate(a, b))
        return min(out, cap)
