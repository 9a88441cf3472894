"""A switch's cut that lands late: its backlog waits behind its wire with its departures stamped in the past
(topo/analysis/check.py).

Why: on BMv2's queues a packet's departure is stamped when it is queued, ``max(now, last + 1/rate)``, and leaves
no earlier than its stamp nor before the wire is free. A switch u whose law toward v runs at an R_max of at least
its link converts that rate at the mean frame its port sent over the last 0.2 s (controlplane/frame_size.py, at
most that mean: ``open_mean``), so with frames of several sizes its queue rate can sit above the link's packets/s
at the frames it queues now (the mean lags a growing share of the larger frames, and the frames' order jitters
around it). When the links into u bring more than u's link carries, the laws upstream hold a backlog in u's
buffers at their targets, and that backlog then waits behind the wire, not in the stamps: each packet is stamped
about when it came. When u's law later cuts to hold v's buffer, the cut spaces only the packets queued after it,
from the last stamp, which is in the past: they leave at the wire's rate until their stamps catch up with it. A
cut to r takes ``B·C / (C − r)`` to show (C the link, B the wire time of the backlog), in which the wire sends
``r·B`` more than the cut's spacing would; the agent's forecast (controlplane/forecast.py) rebuilds the schedule
from the stamps' spacings and credits its cut with those packets. At a cut to what v forwards of u's flows (μ,
where a law holding v's buffer at its target sits), v's buffer gains ``μ·B`` above what the law expected.

Seen in fuzz-topo seed 11 (issue 46, tests/topo/random_cases/tree-two-exits-overflow.yaml, seeds 1-3: 20, 9 and
12 lost): f1 (1448 B, H2 at 50 Mb/s) and f2 (1000 B, H1 at 20 Mb/s) merge at S2 into its 20 Mb/s link to S1, whose
exit to H5 passes f1 at 10 Mb/s. S2's queue rate at its 20 Mb/s R_max was 2,040-2,100 packets/s while its link
sent ~1,990 (its mean lagging f1's growing share: 1,224 B against 1,244 sent), and H1's and H2's laws held ~90-100
packets (45-50 ms of the wire) in S2. From 1.05 s S2's law cut to 10-17 Mb/s (1,050-1,840 packets/s) while its
link went on sending 20 Mb/s until 1.29 s, and S1's buffer from S2 went from its target (66 of 84 frames) to full
(104 packets). With S2's R_max 19.5 Mb/s, below the link's packets/s, the stamps hold the backlog and nothing is
lost (seeds 1-3); since the agent's forecast counts a bound on the stamps' lag (controlplane/forecast.py,
``_note_stamps``), nothing is lost there at R_max 20 Mb/s either, but the forecast leaves the lag out while its drain's
window holds a starved report, as in the stamped-backlog-mix fabrics, which still lose: the rule stays. The fluid model converts a switch's rate at one mean frame (topo/analysis/fluid_network.py), so
its stamps keep the wire and it sees none of this: it peaks that buffer at 90 %.

So: u's law toward v is warned where (1) it sends its backlog at the wire (:func:`mix_step._sends_backlog_at_wire`:
BMv2's queues, R_max at least the link, a law upstream over its flows toward v), (2) frames of several sizes cross
u -> v (with one size the queue rate at R_max is the link's packets/s and the stamps keep the backlog), (3) what
reaches u for v exceeds its link (the laws upstream then hold the excess behind the wire) and v forwards less of
u's flows than u's link brings (u's law must cut: each flow its share of the link in proportion to what its source
hands the network, at most what its path behind v takes: :meth:`~topo.analysis.floor_check._Stretch.drain`), (4) the laws-together
model holds v's buffer at its target or above (u's law cuts to hold it; check.py gates on that), and (5) ``μ·B``,
B the wire time of what the laws upstream hold at their targets (:func:`mix_step._backlog_wait`), in packets of
u's mean frame, is more than v's buffer holds above its target. Not modelled: the law's own deeper cuts as the
buffer rises (each brings the stamps up sooner: ``μ·B`` errs toward a warning) and link-rate events within a
stretch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topo.analysis.floor_check import NS, _Stretch, _unit, worst_per_law
from topo.analysis.mix_step import _backlog_wait, _mean_frame, _sends_backlog_at_wire
from topo.net.model import Topology
from topo.net.plan import buffer_for_gain, flow_frame_bytes, room_above_target
from topo.net.routes import routed_paths

__all__ = ["WireBacklog", "wire_backlogs"]

DirectedLink = tuple[str, str]


@dataclass(frozen=True)
class WireBacklog:
    """Law u -> v from ``from_s``: what reaches u for v (``feed_bps``) exceeds its link (``link_bps``), the laws
    upstream hold ``backlog_s`` of its wire in u's buffers, and a cut to ``drain_bps`` (what v forwards of u's flows)
    shows only once the stamps catch up with the wire: v's buffer gains ``gained_pkts`` of ``frame_bytes`` above the
    target, more than the ``room_pkts`` it holds there; ``need_pkts`` would hold them."""

    from_s: float
    link_bps: float
    feed_bps: float
    drain_bps: float
    backlog_s: float
    frame_bytes: float
    gained_pkts: float
    room_pkts: float
    need_pkts: int


def wire_backlogs(topo: Topology, duration_s: float) -> dict[DirectedLink, WireBacklog]:
    """For each switch law (u, v) toward a switch: the stretch of the first ``duration_s`` of the run (between the
    ALINEA flows' starts, stops and link-rate events) where a cut that lands behind u's wire backlog overfills v's
    buffer the most, if one does (conditions 1-3 and 5 of the module's docstring; check.py adds the model's 4)."""
    alinea = [f for f in topo.flows if f.control == "alinea"]
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    keys = [k for k in topo.law if topo.nodes[k[0]].is_switch and topo.nodes[k[1]].is_switch
            and (k[1], k[0]) in topo.ports and _sends_backlog_at_wire(topo, paths, alinea, k)]
    if not alinea or not keys:
        return {}
    return worst_per_law(topo, paths, alinea, duration_s, keys, _late_cut)


def _late_cut(stretch: _Stretch, key: DirectedLink, t0: int) -> WireBacklog | None:
    """Whether u's backlog behind its wire makes a cut of u's law land late enough to overfill v's buffer."""
    u, v = key
    crossing = stretch.crossing.get(key, [])
    if len({flow_frame_bytes(f) for f in crossing}) < 2:
        return None
    link = stretch.rate(u, v)
    feed = _feed(stretch, u, v)
    if feed <= link * (1 + 1e-9):
        return None
    drain = stretch.drain(u, v, link)[0]
    if drain >= link * (1 - 1e-9):  # v forwards all u's link brings: u's law need not cut
        return None
    backlog_s = _backlog_wait(stretch, u, v)
    frame = _mean_frame(stretch, u, v)
    gained = drain * backlog_s / (8 * frame)
    port = stretch.topo.ports[(v, u)]
    room = room_above_target(stretch.topo, u, v, port.capacity)
    if gained <= room:
        return None
    need = buffer_for_gain(stretch.topo, u, v, gained)
    return WireBacklog(t0 / NS, link, feed, drain, backlog_s, frame, gained, room, need)


def _feed(stretch: _Stretch, u: str, v: str) -> float:
    """What reaches switch u for v while u's law is at its R_max, not capped by u's link: each link into u
    carries u's flows toward v at their demands' share of what its law lets it send
    (:meth:`_Stretch.push`'s feed, before the link caps it)."""
    units = {_unit(f) for f in stretch.crossing.get((u, v), [])}
    before = {hops[hops.index((u, v)) - 1] for hops in (stretch.paths[f.name] for f in stretch.crossing.get((u, v), []))
              if hops.index((u, v)) > 0}
    feed = 0.0
    for w, _ in before:
        theirs = {_unit(f) for f in stretch.crossing[(w, u)]}
        d_all = sum(stretch.demand[n] for n in theirs)
        mine = sum(stretch.demand[n] for n in theirs if n in units)
        share = mine / d_all if d_all > 0 and math.isfinite(d_all) else 1.0
        feed += stretch._upstream(w, u) * share
    return feed
