"""A drain that falls under a stamped backlog: v's drain of u's flows falls in the start-up after u has stamped the
backlog its feeders' laws hold in it (topo/analysis/check.py).

Why: on BMv2's queues a packet's departure is stamped when it is queued, and every switch law starts at its R_max
(controlplane/agent.py). Where what can reach switch u for v (``report_gap.supply_bps``) exceeds the rate u's law
starts at, the laws upstream hold a backlog in u's buffers at their targets, B packets, and u's queue stamps them at
that rate. v's law toward its next hop starts at its R_max too, so v passes u's flows at first at up to that rate,
and u's forecast reads that drain (controlplane/forecast.py: ``Ô = O + Q − μ·h``). Where the path behind v forwards
less of them, v's law cuts later, as the buffer behind it fills, and v's drain falls to what the path forwards, d.
What u stamped before the fall cannot be taken back: it reaches v's buffer at the stamps' rate r while v forwards
d, and v's buffer gains up to ``B·(1 − d/r)`` (r the lower of u's and v's starting rates). u's forecast follows the
fall only as it shows, expected to last only as long again as it has (``QueueForecast._over_horizon``,
``FALL_PERSISTENCE``), so its law's cuts come as the buffer rises, and B is committed whatever they are.

Seen in fuzz-topo seed 19 (count 2,000; tests/topo/random_cases/ramp-drain-fall-tree.yaml, 111/110/110 lost at
seeds 1-3): H3 (100 Mb/s) feeds S5, whose 50 Mb/s link leads to S2 and on over S1 to H9's 20 Mb/s exit. H3's law
holds ~870 packets (576 B) in S5, stamped at S5's 50 Mb/s (h 56-178 ms); S2's law toward S1 starts at 100 Mb/s
and is cut as S1's buffer toward H9 fills, its drain of S5's packets falling from 29 to 20 Mb/s over 0.2-0.3 s,
while S2's buffer from S5 (543 packets) went from half to full. The rule counts B = 869 packets and r = 50 Mb/s:
521 packets gained, 109 above the target. The laws-together model (fluid_network.py) plays the same start-up and
loses ~100-400 packets there at most flow starts, but at seed 1's starts it peaked at 93 %: its S2 law cut deeper
at its first report (the report's phase against the fluid's arrival), S2's buffer from S5 held 2 packets while
S5's forecast had not yet measured a drain (``_rate_since`` spans 50 ms at least), S5's law read the whole queue as
arriving into a buffer that drains nothing and cut to its floor for one report, and the hole that stamped (45 ms)
held S5's backlog back through the fall. The run's packets never took that path.

So: u's law toward v is warned where (1) it runs on BMv2's queues and a law upstream feeds u's flows toward v,
(2) what can reach u for them exceeds the rate u's law starts at (its R_max, at most its link), (3) a law paces
each of v's queues toward their next hops and v forwards less of them (:meth:`~topo.analysis.floor_check._Stretch.drain`)
than u's starting rate and those laws' (v's drain falls where its laws cut: a queue no law paces drains at its link
from the first packet, and u's forecast reads that), (4) the model holds v's buffer from u and one of u's buffers from its feeders
at their targets or above (check.py gates on that: the backlog forms and the fall reaches v's buffer), and (5) the
gain is more than v's buffer holds above its target. Not modelled: how late the fall comes (the backlog's
stamps by then are at the rate u's law has cut to: the gain errs toward a warning) and link-rate events within a
stretch. On every random case file (seeds 1-3) it warns no run that lost nothing and was not warned already.
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.analysis.floor_check import NS, _Stretch, worst_per_law
from topo.analysis.mix_step import _backlog_wait, _mean_frame
from topo.analysis.report_gap import supply_bps
from topo.net.model import Topology
from topo.net.plan import buffer_for_gain, room_above_target
from topo.net.routes import routed_paths

__all__ = ["DrainFall", "drain_falls", "law_feeders"]

DirectedLink = tuple[str, str]


@dataclass(frozen=True)
class DrainFall:
    """Law u -> v from ``from_s``: u stamps ``backlog_pkts`` (of ``frame_bytes``) that its ``feeders``' laws hold in
    it at ``stamp_bps``, v's drain of them falls from ``start_bps`` to ``drain_bps``, and v's buffer gains
    ``gained_pkts``, more than the ``room_pkts`` it holds above its target; ``need_pkts`` would hold them."""

    from_s: float
    feeders: tuple[str, ...]
    supply_bps: float
    stamp_bps: float
    start_bps: float
    drain_bps: float
    backlog_pkts: float
    frame_bytes: float
    gained_pkts: float
    room_pkts: float
    need_pkts: int


def drain_falls(topo: Topology, duration_s: float) -> dict[DirectedLink, DrainFall]:
    """For each switch law (u, v) toward a switch on BMv2's queues: the stretch of the first ``duration_s`` of the run
    (between the ALINEA flows' starts, stops and link-rate events) where the fall of v's drain under u's stamped
    backlog overfills v's buffer the most, if it does (conditions 1-3 and 5 of the module's docstring; check.py adds
    the model's 4)."""
    alinea = [f for f in topo.flows if f.control == "alinea"]
    if topo.options.queue_model != "bmv2" or not alinea:
        return {}
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    keys = [k for k in topo.law if topo.nodes[k[0]].is_switch and topo.nodes[k[1]].is_switch
            and (k[1], k[0]) in topo.ports]
    return worst_per_law(topo, paths, alinea, duration_s, keys, _fall)


def law_feeders(stretch: _Stretch, key: DirectedLink) -> tuple[str, ...]:
    """The previous hops of u's flows toward v (``key``) whose laws toward u hold u's buffers from them: the nodes
    whose targets in u are its backlog toward v."""
    u = key[0]
    hops = [stretch.paths[f.name] for f in stretch.crossing.get(key, [])]
    return tuple(sorted({p[p.index(key) - 1][0] for p in hops if p.index(key) > 0}
                        & {x for x, y in stretch.topo.law if y == u}))


def _fall(stretch: _Stretch, key: DirectedLink, t0: int) -> DrainFall | None:
    """Whether v's drain of u's flows falls, in this stretch, under a backlog u stamped fast enough to overfill v's
    buffer."""
    u, v = key
    topo = stretch.topo
    feeders = law_feeders(stretch, key)
    hops = [stretch.paths[f.name] for f in stretch.crossing.get(key, [])]
    if not feeders:
        return None
    stamp = min(topo.law[key].r_max, stretch.rate(u, v))
    supply = supply_bps(topo, u, v)
    if supply <= stamp * (1 + 1e-9):  # u passes what reaches it: no backlog
        return None
    onward = {p[p.index(key) + 1] for p in hops if p.index(key) + 1 < len(p)}
    if not onward or any(h not in topo.law for h in onward):  # v's drain falls where its law cuts
        return None
    start = min([stamp] + [min(topo.law[h].r_max, stretch.rate(*h)) for h in onward])
    drain = stretch.drain(u, v, stamp)[0]
    if drain >= start * (1 - 1e-9):  # v's drain need not fall
        return None
    frame = _mean_frame(stretch, u, v)
    backlog = _backlog_wait(stretch, u, v) * topo.link_between(u, v).rate_bps / (8 * frame)  # the feeders' targets, in u's frames
    gained = backlog * (1 - drain / start)
    room = room_above_target(topo, u, v, topo.ports[(v, u)].capacity)
    if gained <= room:
        return None
    return DrainFall(t0 / NS, feeders, supply, stamp, start, drain, backlog, frame, gained, room,
                     buffer_for_gain(topo, u, v, gained))
