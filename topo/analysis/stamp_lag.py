"""A forecast over a long stamped horizon: the commands a switch's law sends reach its queue a control latency
after the report they answer, and the packets that arrive meanwhile keep the rate before (topo/analysis/check.py).

Why: on BMv2's queues a packet's departure is stamped when it is queued, at the queue rate in force then, so a
switch u whose buffers the laws upstream hold at their targets keeps B packets (those targets) stamped ahead of
what it sends v: its law acts on v's buffer a horizon h later, and it reads the buffer through a forecast
``Ô = O + Q − μ·h`` whose h the agent rebuilds from its own commands (controlplane/forecast.py, the ledger: each
report's arrivals at the rate it set at that report). A command takes effect a control latency c after the counters
it answers were read; the packets u queues in that time are stamped at the rate before, so at each report a share
``min(1, c/g)`` of the horizon's packets (g the report gap: v reports at an arrival once its interval has passed, so
no more often than a packet at the drain) is spaced otherwise than the ledger spaces it. The settled law cuts by the
damping's step at each packet v's buffer gains, ``ΔR = K_P/C`` whole (C the buffer in packets: controlplane/alinea.py),
and climbs back: each such packet's spacing is misplaced by ``μ/(μ − ΔR) − 1`` packets of v's drain (the cut no lower
than the law's floor), longer after a cut and shorter after the climb. The ledger's horizon, and the forecast with it,
walks by the sum of those over the horizon's ``n = B·min(1, c/g)`` misplaced packets: a random walk, whose typical
excursion is ``√n`` steps, and twice that one time in twenty (:data:`EXCURSION`, :func:`walk_pkts`). Where that is
more than v's buffer has left, the law, which trusts the forecast, holds the rate above the drain until the buffer
is full.

Seen in fuzz-topo seed 73 (issue 46, tests/topo/random_cases/long-horizon-multicast-branch.yaml, 1/1/0 lost at seeds
1-3): H1's law holds 152 of S1's 190-packet buffer, all of it waiting in S1's queue toward S3 (10 Mb/s, behind it
H4's 1 Mb/s exit), whose law's buffer, 20 packets, holds 4 above its target; K_P 12 Mb/s, so one packet's rise cuts
0.6 Mb/s (the run's law swung between ~0.45 and ~1.26 Mb/s report to report); a report per packet at the drain
(11.6 ms), control latency 1 ms: n = 13 packets, each misplaced by 1.5 packets, a typical walk of 5.4, 10.9 counted.
Rebuilt from the run's sends and commands, 30 of S1's 455 packets toward S3 were stamped at another rate than the
ledger gave them (this rule: 8.6 %), and its horizon ran up to 0.13 s (11 packets of the drain) longer than the
queue's. The laws-together model (fluid_network.py) swings its law by 5 % there (a fluid rises by no whole packet):
it peaks S3's buffer at 78-80 %, leaving 4.4 packets at seed 1.

So: u's law toward v is warned where (1) u is a switch on BMv2's queues and a law upstream feeds u's flows toward v,
(2) what can reach u for them exceeds what v forwards of them (:func:`~topo.analysis.report_gap.supply_bps`: the
laws upstream then hold their targets in u), (3) the model holds one of those feeders' buffers at u at its target or
above (check.py gates on that: the horizon is there), and (4) the walk is more than v's buffer has left at the
model's peak (check.py). Not modelled: how often the law does cut a whole step (a law that settles without
one-packet swings walks less), cuts of other sizes, and the start-up, where a ledger without this error may still
commit an overshoot a horizon ahead (the same file with the control latency at 0.01 ms loses 2 at 2.5 s, unwarned).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topo.analysis.drain_fall import law_feeders
from topo.analysis.floor_check import NS, _Stretch, worst_per_law
from topo.analysis.mix_step import _backlog_wait, _mean_frame
from topo.analysis.report_gap import supply_bps
from topo.net.model import Topology
from topo.net.plan import law_frames, room_above_target
from topo.net.routes import routed_paths

__all__ = ["StampLag", "stamp_lags", "walk_pkts", "EXCURSION"]

DirectedLink = tuple[str, str]
#: The walk's excursion the rule counts, in its typical ones (√n steps): a walk of n steps is beyond twice that about
#: one time in twenty, and the run's law reads it at every report. Measured in long-horizon-multicast-branch.yaml:
#: the ledger's horizon ran up to 11 packets of the drain long where √n steps are 5.4; with S3's buffer at 28
#: packets (5.6 above its target, more than one typical excursion) the run lost 3 at each of seeds 1-3, at 40 none.
EXCURSION = 2.0


@dataclass(frozen=True)
class StampLag:
    """Law u -> v from ``from_s``: u holds ``backlog_pkts`` (of ``frame_bytes``) its ``feeders``' laws keep in it,
    stamped ahead of v's drain of u's flows (``drain_bps``); a share ``latched`` of them (the control latency over
    the report gap) keep the rate before a cut of ``step_bps`` (the damping's one-packet step), so the forecast
    walks by about ``gained_pkts``, more than the ``room_pkts`` v's buffer holds above its target (check.py
    compares it with the room at the model's peak); ``need_pkts`` would hold them above the target."""

    from_s: float
    feeders: tuple[str, ...]
    backlog_pkts: float
    frame_bytes: float
    drain_bps: float
    step_bps: float
    gap_s: float
    latency_s: float
    gained_pkts: float
    room_pkts: float
    need_pkts: int

    @property
    def latched(self) -> float:
        """The share of a report's arrivals a command has not reached the queue for yet."""
        return min(1.0, self.latency_s / self.gap_s)


def stamp_lags(topo: Topology, duration_s: float) -> dict[DirectedLink, StampLag]:
    """For each switch law (u, v) on BMv2's queues: the stretch of the first ``duration_s`` of the run (between the
    ALINEA flows' starts, stops and link-rate events) where the ledger's error over u's stamped backlog exceeds v's
    room the most, if it does (conditions 1, 2 and 4 of the module's docstring; check.py adds the model's 3)."""
    alinea = [f for f in topo.flows if f.control == "alinea"]
    if topo.options.queue_model != "bmv2" or not alinea or topo.options.control_latency_ns <= 0:
        return {}
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    keys = [k for k in topo.law if topo.nodes[k[0]].is_switch
            and ((k[1], k[0]) in topo.ports or (k[1], k[0]) in topo.host_buffers)]
    return worst_per_law(topo, paths, alinea, duration_s, keys, _lag)


def walk_pkts(backlog_pkts: float, latched: float, drain_bps: float, step_bps: float, floor_bps: float) -> float:
    """The forecast's error, packets of the drain, over a horizon of ``backlog_pkts`` of which ``latched`` (at most
    all) are stamped at the rate before a command: each such packet's spacing misplaced by a one-packet cut of
    ``step_bps`` from the drain (to the law's floor at most), ``drain/cut − 1`` packets of the drain, up or down as the
    law cuts or climbs back; their sum a random walk, its typical excursion ``√n`` steps, counted ``EXCURSION`` times."""
    misplaced = backlog_pkts * min(1.0, latched)
    if misplaced <= 0:
        return 0.0
    cut = max(drain_bps - step_bps, floor_bps)
    if cut <= 0:  # (a law's floor is above 0: controlplane/params.py)
        return math.inf
    return EXCURSION * math.sqrt(misplaced) * (drain_bps / cut - 1)


def _lag(stretch: _Stretch, key: DirectedLink, t0: int) -> StampLag | None:
    """Whether, in this stretch, u's stamped backlog toward v is long enough for the ledger's error to overfill v's
    buffer."""
    u, v = key
    topo = stretch.topo
    feeders = law_feeders(stretch, key)
    if not feeders:
        return None
    law = topo.law[key]
    stamp = min(law.r_max, stretch.rate(u, v))
    drain = stretch.drain(u, v, stamp)[0]
    if drain <= 0 or supply_bps(topo, u, v) <= drain * (1 + 1e-9):  # u passes what reaches it: no backlog
        return None
    frame = _mean_frame(stretch, u, v)
    backlog = _backlog_wait(stretch, u, v) * topo.link_between(u, v).rate_bps / (8 * frame)  # the feeders' targets
    port = topo.ports.get((v, u)) or topo.host_buffers[(v, u)]
    capacity, interval_us = port.capacity, port.interval_us
    frames, bits = law_frames(topo, u, v, capacity)
    step = law.k_p / frames  # the damping's cut at one packet's rise (controlplane/alinea.py)
    gap = max(interval_us / 1e6, bits / drain)  # v reports at an arrival once its interval has passed
    latency = topo.options.control_latency_ns / NS
    gained = walk_pkts(backlog, latency / gap, drain, step, law.r_floor)
    room = room_above_target(topo, u, v, capacity)
    if gained <= room:
        return None
    need = capacity
    while need < 64 * capacity and room_above_target(topo, u, v, need) < gained:
        need += 1
    return StampLag(t0 / NS, feeders, backlog, frame, drain, step, gap, latency, gained, room, need)
