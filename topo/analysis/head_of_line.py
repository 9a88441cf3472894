"""Where the drain an ALINEA law measures is not a capacity (topo/analysis/check.py): a buffer shared by an
exit slower than its share of the feed and exits that pass (:func:`slow_exits`), and a drain that is a
share of a FIFO another link fills (:func:`shared_fifos`).

Why: alinea.p4 counts, per ingress port, the packets that came in on it and have not left the switch
(docs/reference/dataplane.md, "The buffer model"): v's buffer from u is one count for u's packets
whatever egress of v they leave by. Group u's flows by that exit (v's next hop, or v itself for the
flows it receives). An exit whose flows u feeds faster than the path behind it takes them (its share
of what u can send above what its links, or a receiver's playout, drain) keeps its packets in the
buffer: the buffer builds with them whatever the other exits drain. When every other exit's path
takes more than u can feed it, their packets leave as they come: for them the buffer is starved, and
their departures are what u sent of them. (Where two exits build, the law measures what their paths
take, a capacity: not this case.)

A per-port law cannot slow one exit: it holds the buffer only by holding the whole port to the rate
at which the slow exit's share is what its path drains (head-of-line blocking: every exit waits with
it; docs/howto/fabric.md). It reads that from the buffer's occupancy, as any law; but the drain it
measures (the buffer's departures of u's packets, which the forecast on BMv2's queues subtracts over
its horizon, ``Ô = O + Q − μ·h``, and the start-up brake caps at: controlplane/forecast.py) is then
mostly its own sending, the passing exits' packets: not a capacity, the trap the agent avoids only
when the buffer holds at most one packet (``IDLE_PKTS``), which a buffer holding the slow exit's
backlog never does. When the passing exits carry more of the measured drain than the slow exit
drains, at the rate that holds the buffer, the law takes what it sent for what the buffer can take.
The settled law reads ``R = drain + g·W·(O − Ô) − K_P·(O(k) − O(k−1))`` (controlplane/alinea.py):
with the buffer full and steady its rate is its measured drain, which is its own sending, a fixed
point at whatever rate it sits, and its forecast, which subtracts that drain over the horizon, reads
the buffer emptying. In tests/topo/random_cases/shared-buffer-slow-egress.yaml (the slow exit a fourth
of the feed) S2's forecast read 0 while S1's 10-packet buffer held 9-10 and 182 were lost; a scratch
run with the forecast replaced by the occupancy (``Ô = O``) still lost 153, S2's rate staying at its
measured drain (3.3-4.6 Mb/s, about the 4 Mb/s that only holds the backlog) with the buffer full, and
without the overflow cut's floor at the drain as well 127: after each cut the rate returns to the
drain, the window's mean of what it sent. The drain the law anchors on, not the forecast alone, is
blind; on the shaper queue model, where the law has no drain base (its step alone), 9 were lost. So
only a switch's law on BMv2's queues is checked: a host's law and a law on a shaper take no forecast
(controlplane/agent.py), their rate is their step alone, and the lossless topologies where a slow exit
was warned (fuzz-topo seed 8, six of 300 all-ALINEA) were a host's. The head-of-line experiment's incast,
three fourths of the spine's port toward the receivers' leaf, loses nothing. So the rule: a share
below one half (the passing exits then carry most of the drain measured at the holding rate, the
slow exit's drain over its share), and the slow exit's backlog, growing from nothing at the feed less
its drain, filling the whole buffer within a stretch (a law blind to it keeps sending what it can).

A kin case, one hop on (:func:`shared_fifos`): u's flows join, at v, the egress FIFO toward w, which
another link p -> v keeps backlogged by itself (p's link, its law's R_max and its flows' sources bring at
least what v forwards toward w). A FIFO serves each link's packets in the order they came, so u's packets
leave it in proportion to how many of them wait there: u's drain is its share of that FIFO, set by what u
keeps in it, not a capacity, and u's law, whose settled rate on BMv2's queues is its measured drain plus
its forecast's correction, may sit anywhere down to its own floor (nothing pulls it to its target). The
law x -> u that feeds it cannot go below its floor: if that floor is above u's, u's buffer from x fills
whenever u's law sits between them. tests/topo/random_cases/head-of-line-fabric.yaml: S4's 50 Mb/s into
S2's FIFO toward S1 (50 Mb/s), S5's law holding S2's buffer from S5 at 1-6 of 14 packets and sending
0.2-1.8 Mb/s, H3's floor 1 Mb/s (S5's 0.2 Mb/s): S5's buffer from H3 overflowed; with S4-S2 at 40 Mb/s
(S4 alone no longer fills the FIFO) nothing was lost. On a shaper the law has no drain base: not checked.

What u can send of each flow: its source's share of the source's link (a host's flows share it
equally in bits), at most its R_max and every link on its way to v; u's link to v shared among the
flows in proportion to what they bring (a FIFO serves each flow as it arrives). What the path behind v
takes of an exit's flows: check.py's reading (every link behind v at most its rate for the flows that
cross it, a receiver's playout), passed in as ``beyond`` (check.py imports this module). Checked over
each stretch of the run in which the same ALINEA flows run, at the links' declared rates (link-rate
events left out). Multicast groups are left out (a group's packet leaves at its slowest copy's pace:
topo/analysis/floor_check.py). The feed is what the sources could bring, every one at its link's share,
a bound from above (toward a warning); against it, the backlog counts from an empty buffer and only one
exit may build (toward silence; a first version that let several build warned three lossless
topologies of 300 drawn by fuzz-topo's seed 8, all-ALINEA, whose sources never ramped that far).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from topo.net.model import Flow, Topology
from topo.net.routes import routed_paths

__all__ = ["SlowExit", "slow_exits", "SharedFifo", "shared_fifos", "FifoShare", "fifo_shares", "share_feeders"]

DirectedLink = tuple[str, str]
Rests = list[tuple[str, tuple[DirectedLink, ...]]]  # (a flow's receiver, its hops after the hop)
#: What the links behind a hop take of the flows whose hops after it are the rests (check.py's ``_beyond``).
Beyond = Callable[[Topology, DirectedLink, Rests], float]
#: The slow exit's share of the feed below which the passing exits carry most of the drain the law measures.
PASSING_MAJORITY = 0.5


@dataclass(frozen=True)
class SlowExit:
    """v's buffer from u holds the packets of the flows leaving v toward ``exit`` (v's next hop; None: v
    receives them), fed ``feed_bps`` (``share`` of u's link) while their path takes ``drain_bps``; the
    other exits' flows pass, so the law's measured drain at the rate that holds the buffer
    (``hold_bps``) is mostly what it sent, from ``from_s``; sending on at the feed, the backlog alone
    fills the buffer in ``fill_s``."""

    exit: str | None
    flows: tuple[str, ...]
    feed_bps: float
    drain_bps: float
    share: float
    hold_bps: float
    fill_s: float  # the backlog, from nothing, fills the whole buffer in this long at the feed
    from_s: float = 0.0


def _paths(topo: Topology) -> dict[str, tuple[DirectedLink, ...]]:
    """Each flow's path as its directed links."""
    return {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}


def _stretches(topo: Topology, duration_s: float) -> list[tuple[int, int, list[Flow]]]:
    """The stretches (start ns, end ns, the ALINEA flows running) of the first ``duration_s`` of the
    run between two flows' starts or stops: within one, the same flows share the same buffers."""
    alinea = [f for f in topo.flows if f.control == "alinea"]
    end_ns = int(duration_s * 1e9)
    cuts = sorted({0} | {f.start_ns for f in alinea} | {f.stop_ns for f in alinea if f.stop_ns is not None})
    times = [c for c in cuts if c < end_ns] + [end_ns]
    return [(t0, t1, [f for f in alinea if f.start_ns <= t0 and (f.stop_ns is None or f.stop_ns > t0)])
            for t0, t1 in zip(times, times[1:])]


def slow_exits(topo: Topology, duration_s: float, beyond: Beyond) -> dict[DirectedLink, SlowExit]:
    """The laws whose buffer a slow exit shares with passing ones, each at the first stretch of the
    first ``duration_s`` of the run where it does."""
    if topo.options.queue_model != "bmv2":  # on a shaper the law has no drain base (forecast None)
        return {}
    paths = _paths(topo)
    out: dict[DirectedLink, SlowExit] = {}
    for t0, t1, running in _stretches(topo, duration_s):
        for key in topo.law:
            if key in out or not topo.nodes[key[0]].is_switch:  # a host's law has no drain base (see above)
                continue
            found = _slow_exit(topo, key, running, paths, beyond)
            if found is not None and found.fill_s <= (t1 - t0) / 1e9:
                out[key] = dataclasses.replace(found, from_s=t0 / 1e9)
    return out


def _slow_exit(
    topo: Topology,
    key: DirectedLink,
    running: Sequence[Flow],
    paths: dict[str, tuple[DirectedLink, ...]],
    beyond: Beyond,
) -> SlowExit | None:
    u, v = key
    crossing = [f for f in running if key in paths[f.name]]
    if len(crossing) < 2 or any(f.group is not None for f in crossing):
        return None
    bring = {
        f.name: _brings(topo, f, running, paths[f.name][: paths[f.name].index(key) + 1]) for f in crossing
    }
    total = sum(bring.values())
    link = topo.link_between(u, v).rate_bps
    scale = min(1.0, link / total) if total > 0 else 0.0
    exits: dict[str | None, list[Flow]] = {}
    for f in crossing:
        rest = paths[f.name][paths[f.name].index(key) + 1 :]
        exits.setdefault(rest[0][1] if rest else None, []).append(f)
    port = topo.ports.get((v, u)) or topo.host_buffers.get((v, u))
    if len(exits) < 2 or port is None:
        return None
    feeds: dict[str | None, tuple[float, float]] = {}  # exit -> (its feed, what its path takes)
    for nxt, fs in exits.items():
        rests = [(f.dst, paths[f.name][paths[f.name].index(key) + 2 :]) for f in fs]
        drain = beyond(topo, (v, nxt), rests) if nxt is not None else topo.nodes[v].playout_bps or math.inf
        feeds[nxt] = (scale * sum(bring[f.name] for f in fs), drain)
    slow = [nxt for nxt, (feed, drain) in feeds.items() if feed > drain]
    if len(slow) != 1:  # none builds, or several: the drain the law measures is then theirs, a capacity
        return None
    worst = None
    for nxt in slow:
        fs = exits[nxt]
        feed, drain = feeds[nxt]
        share = feed / (scale * total) if total > 0 else 0.0
        if share < PASSING_MAJORITY:
            pps = scale * sum(
                bring[f.name] / (8 * f.packet_size) for f in fs
            )  # the exit's packets/s at the feed
            fill = port.capacity / (pps * (1 - drain / feed))
            if worst is None or fill < worst.fill_s:
                worst = SlowExit(nxt, tuple(f.name for f in fs), feed, drain, share, drain / share, fill)
    return worst


def _brought(topo: Topology, f: Flow, running: Sequence[Flow], hops: tuple[DirectedLink, ...]) -> float:
    """:func:`_brings`, at most the source's law's R_max shared equally among the source's running flows, as its
    link is. Why: with ``fairness: per-flow`` a host's law has its flows' share of the fabric as R_max (5 Mb/s
    each for the head-of-line 2 x 2's incast, on 10 Mb/s links), and no spine alone then keeps leaf 2's FIFO
    toward the receiver backlogged: that run loses nothing and was not warned (test_fluid_fifo_order.py)."""
    brings = _brings(topo, f, running, hops)
    law = topo.law.get(hops[0])
    if law is None or topo.nodes[hops[0][0]].is_switch:
        return brings
    sharing = sum(1 for g in running if g.src == f.src)
    return min(brings, law.r_max / max(1, sharing))


def _brings(topo: Topology, f: Flow, running: Sequence[Flow], hops: tuple[DirectedLink, ...]) -> float:
    """What flow ``f`` can bring over ``hops`` (its path from its source up to the law's link): its source's
    link shared equally in bits among the source's running flows, at most its R_max and every link."""
    sharing = sum(1 for g in running if g.src == f.src)
    rate = topo.link_between(*hops[0]).rate_bps / max(1, sharing)
    for a, b in hops[1:]:
        rate = min(rate, topo.link_between(a, b).rate_bps)
    return min(rate, f.r_max_bps or math.inf)


@dataclass(frozen=True)
class SharedFifo:
    """Law x -> u feeds u's flows toward v, whose egress toward ``toward`` link ``other`` -> v keeps
    backlogged by itself (it brings ``other_bps``, at least the ``fifo_bps`` v forwards there): u's drain is
    its share of that FIFO, and u's law (its floor ``u_floor_bps``) may sit anywhere down to it, below the
    ``floor_bps`` x cannot go under, from ``from_s``."""

    u: str
    v: str
    toward: str
    other: str
    other_bps: float
    fifo_bps: float
    floor_bps: float
    u_floor_bps: float
    from_s: float = 0.0


def shared_fifos(topo: Topology, duration_s: float) -> dict[DirectedLink, SharedFifo]:
    """The laws x -> u whose floor is above the floor of a law u -> v whose drain is its share of a FIFO
    another link keeps backlogged by itself (see :func:`_shared_fifo`), each at the first stretch of the
    first ``duration_s`` of the run where it is."""
    if topo.options.queue_model != "bmv2":  # on a shaper the law has no drain base (forecast None)
        return {}
    paths = _paths(topo)
    out: dict[DirectedLink, SharedFifo] = {}
    for t0, _t1, running in _stretches(topo, duration_s):
        for (u, v), law in sorted(topo.law.items()):
            if topo.nodes[u].is_switch:
                for key, found in _shared_fifo(topo, u, v, law.r_floor, running, paths).items():
                    out.setdefault(key, dataclasses.replace(found, from_s=t0 / 1e9))
    return out


def _shared_fifo(
    topo: Topology,
    u: str,
    v: str,
    u_floor: float,
    running: Sequence[Flow],
    paths: dict[str, tuple[DirectedLink, ...]],
) -> dict[DirectedLink, SharedFifo]:
    out: dict[DirectedLink, SharedFifo] = {}
    for f in running:
        hops = paths[f.name]
        if (u, v) not in hops or (i := hops.index((u, v))) == 0 or i + 1 >= len(hops):
            continue
        x, w = hops[i - 1][0], hops[i + 1][1]
        law_x = topo.law.get((x, u))
        if law_x is None or law_x.r_floor <= u_floor or (x, u) in out:
            continue
        found = _backlogger(topo, u, v, w, running, paths)
        if found is not None:
            out[(x, u)] = SharedFifo(u, v, w, found[0], found[1], found[2], law_x.r_floor, u_floor)
    return out


def _backlogger(
    topo: Topology,
    u: str,
    v: str,
    w: str,
    running: Sequence[Flow],
    paths: dict[str, tuple[DirectedLink, ...]],
    host_laws: bool = False,
) -> tuple[str, float, float] | None:
    """The first link p -> v (p not u) that keeps v's FIFO toward w backlogged by itself: (p, what it
    brings, what v forwards there); None if none does. ``host_laws``: each flow brings no more than its
    source's law's R_max shared as the source's link is (:func:`_brought`)."""
    law_vw = topo.law.get((v, w))
    fifo = min(topo.link_between(v, w).rate_bps, law_vw.r_max if law_vw is not None else math.inf)
    others: dict[str, list[tuple[Flow, tuple[DirectedLink, ...]]]] = {}
    for g in running:
        gh = paths[g.name]
        if (v, w) in gh and (j := gh.index((v, w))) > 0 and gh[j - 1][0] != u:
            others.setdefault(gh[j - 1][0], []).append((g, gh[:j]))
    for p, gs in sorted(others.items()):
        law_p = topo.law.get((p, v))
        feed = min(
            topo.link_between(p, v).rate_bps,
            law_p.r_max if law_p is not None else math.inf,
            sum((_brought if host_laws else _brings)(topo, g, running, up) for g, up in gs),
        )
        if feed >= fifo:
            return p, feed, fifo
    return None


@dataclass(frozen=True)
class FifoShare:
    """Law u -> v's flows leave v through its FIFO toward ``toward``, which link ``other`` -> v keeps
    backlogged by itself (it brings ``other_bps``, at least the ``fifo_bps`` v forwards there): u's drain
    at v is its share of that FIFO, from ``from_s``."""

    toward: str
    other: str
    other_bps: float
    fifo_bps: float
    from_s: float = 0.0
    per_flow: bool = False  # the file caps its host laws per flow (``fairness: per-flow``): the warning's fix then differs


def fifo_shares(topo: Topology, duration_s: float) -> dict[DirectedLink, FifoShare]:
    """The switches' laws u -> v whose drain at v is their share of a FIFO of v another link keeps backlogged by
    itself (:func:`_backlogger`), each at the first stretch of the first ``duration_s`` of the run where it is.

    Why (the law itself, where :func:`shared_fifos` takes the law feeding it): its drain is not a capacity. A
    FIFO serves the links' packets in the order they came, so u's packets leave it as fast as they are a share
    of what waits there, and that share moves with what the other link keeps in it: its backlog grows, u's drain
    falls, within one sojourn of the FIFO, after u's queue has stamped a horizon of packets at the drain before.
    The settled law follows that drain (``R = drain + g·W·(O − Ô) − K_P·ΔO``, controlplane/alinea.py), so where it
    holds v's buffer at its target, which cell of the FIFO swings to full is the packets' order's choice: the
    fluid model runs one interleaving of its chunks, and its verdict there is one draw. The head-of-line fabrics
    (``python -m topo.hol``, 2 x 2 and 6 x 3, alinea and alinea-classes, seeds 1-12: 48 runs) lost packets in a
    spine's buffer at the receivers' leaf in 31 of the 120 (run, spine) pairs, where the model held every one of
    them at 80-100 %; it warned 26 of those 31, and the 5 it missed moved with the phase alone (the victim's
    start 1 ms later: 4 of the 24 alinea-classes runs lost unwarned, then 7; the model's warnings with it 1 ms
    earlier or later were its own, 2 x 2 seeds 1-11). check.py warns such a law when the model holds its buffer
    at its target or above."""
    if topo.options.queue_model != "bmv2":  # on a shaper the law has no drain base (forecast None)
        return {}
    paths = _paths(topo)
    out: dict[DirectedLink, FifoShare] = {}
    for t0, _t1, running in _stretches(topo, duration_s):
        for f in running:
            hops = paths[f.name]
            for i in range(len(hops) - 1):
                u, v = hops[i]
                if (u, v) in out or (u, v) not in topo.law or not topo.nodes[u].is_switch:
                    continue
                found = _backlogger(topo, u, v, hops[i + 1][1], running, paths, host_laws=True)
                if found is not None:
                    out[(u, v)] = FifoShare(hops[i + 1][1], found[0], found[1], found[2], t0 / 1e9,
                                            topo.options.fairness == "per-flow")
    return out


def share_feeders(topo: Topology, shares: dict[DirectedLink, FifoShare]) -> dict[DirectedLink, tuple[str, FifoShare]]:
    """The switches' laws x -> u that feed u's flows toward v where u -> v is in ``shares`` (a law whose drain is a
    FIFO share: :func:`fifo_shares`): (v, that share), for each x -> u.

    Why: x's drain at u is what u's law sends of x's flows, and that law follows a drain that swings with the other
    link's backlog in v's FIFO; x's law follows u's rate a loop's delay late, and the swings that reach u's buffer
    from x are the run's draw of the FIFO's order, not the model's. The head-of-line 2 x 2 with one law per port,
    seeds 9 and 11: leaf 1's buffer at spine 2 (the model's peak 98 % and 95 %) lost 20 and 2 packets unwarned while
    spine 2's rate toward leaf 2 slid from 10 to 7 Mb/s over 0.1 s."""
    paths = _paths(topo)
    out: dict[DirectedLink, tuple[str, FifoShare]] = {}
    for f in topo.flows:
        hops = paths.get(f.name, ())
        for i in range(1, len(hops)):
            (x, u), (_, v) = hops[i - 1], hops[i]
            if (u, v) in shares and (x, u) in topo.law and topo.nodes[x].is_switch and (x, u) not in out:
                out[(x, u)] = (v, shares[(u, v)])
    return out
