"""A host's law that cannot cut within its loop's delay when a flow's stop or start shrinks the frames it sends
through a switch whose queue rate is still set from the old, larger mean frame (topo/analysis/check.py).

Why: a switch's egress queue rate is in packets/s, its law's bits over the mean frame the port sent over the
last 0.2 s (controlplane/frame_size.py), so right after a larger-frame flow stops (or a smaller-frame one starts
beside it) the queue sends the new, smaller frames at the old packets/s: fewer bits than its law, by their ratio
(:meth:`~topo.analysis.floor_check._Stretch.mix_dip`). A host's pacer counts bytes (hosts/sender.py): its law's
bits go to its remaining flows at once, in more packets/s. The switch's buffer from the host, which the data plane
counts in packets, gains the difference, and nothing the host's law does can cut it before its loop's delay has
passed (the link's propagation both ways and a packet's serialization: :func:`topo.analysis.check.loop_delay_s`),
the report's sampling aside. :mod:`topo.analysis.floor_check` asks the same dip of a law at its floor only; the
laws-together model (:mod:`topo.analysis.fluid_network`) converts every link's bits at one mean frame, so it sees
no dip at all. Seen in fuzz-topo seed 4 (issue 46, tests/topo/random_cases/stop-frame-mix-line.yaml): f1 (1500 B)
and f2 (200 B) from H2 through S1 and S2, 10 Mb/s, S1's buffer from H2 17 packets; f1 stops at 1.52 s and S1's
queue toward S2 keeps its ~2,900 packets/s (the 353 B mean) while H2 sends f2's 200 B frames at ~5,000 a second:
S1's buffer went from 7 packets to 17 in 7 ms and lost 8, H2's loop delay being 5 ms.

What u sends when the mix changes: its flows' path's rate (what v forwards of them before the change, the rate
the laws run at when they use their links: issue 46 asks >= 98 %), in bits, now in the remaining flows' frames.
What v forwards then: at the share of its rate its window's first read carries (:func:`floor_check._window_reads`,
through :meth:`~topo.analysis.floor_check._Stretch.dip_gathers`, which counts BMv2's stamped departures as
the floor check does). The excess over the loop's delay, in packets of the new frames, against the packets v's
buffer holds above the law's target (its capacity less the target's share of it counted in u's frames,
:func:`topo.net.plan.law_frames`, as the agent counts it): more, and the law is ruled out. A switch u's
own queue converts at its own window, so its packets/s do not jump when its frames shrink, unless it sends a backlog
at its wire's bits (:func:`_sends_backlog_at_wire`: on BMv2's queues a backlog a law upstream holds waits behind the
wire with its departures stamped when queued, in the past): then it is counted as a host's pacer is, over its loop's
delay and the time its link takes to send that backlog (its cuts stamp only what is queued after them), from its
law's R_max (the agent starts a switch's law there on BMv2) and only once v's port can have read its frame window
(before, it converts at the smallest frame). Seen in fuzz-topo seed 7 (tests/topo/random_cases/
stamped-backlog-mix-fabric.yaml): H2's law held ~105 packets in S1; when f2's 200 B frames reached S1's head, S1 sent
4,300-4,900 packets/s at 10 Mb/s though set to ~3,900, S3's queue toward S2 stayed at ~3,950 packets/s (its 317 B
mean) and S3's buffer from S1 gained from 3 packets to 40 in 80 ms: 10 lost at seed 1. The rate at the
path's is an upper estimate: fuzz-topo seed 17 (300 draws, --alinea-only) gained 4 warnings, all one drawn
topology and its shrinks, that lose nothing: H2's law was at 7 Mb/s of its 10 when f2's 1500 B frames stopped
beside f1's 200 B ones, S1's buffer from H2 peaked at 11 of its 17 packets where the check counts 10.9 gained
above a 9-packet room at 10 Mb/s. A switch whose law and link are above all it carries holds no backlog and
passes its hosts' packets as they come: a host that starts mid-run then reaches v's queue as through a host's
pacer, from its law's floor in its smallest frame (:func:`_through_step`, merge-burst-through-ramp.yaml); in
the same frames its law's climb reaches v's buffer until the switch's law hears it (:func:`_ramp_step`,
start-ramp-through-fabric.yaml).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controlplane.alinea import AlineaLaw
from controlplane.frame_size import READ_PERIOD_NS
from controlplane.params import LawParams
from topo.analysis.floor_check import NS, _Stretch, _unit, keep_worst, stretches
from topo.net.model import Flow, Topology
from topo.net.plan import buffer_for_gain, flow_frame_bytes, law_frames, room_above_target
from topo.net.routes import routed_paths

__all__ = ["MixStep", "mix_steps"]

DirectedLink = tuple[str, str]


@dataclass(frozen=True)
class MixStep:
    """Law u -> v (u a host) when the frames change at ``at_s``: u keeps sending ``push_bps`` for ``delay_s``,
    now in frames of ``frame_bytes``, while v's queue toward ``hop`` forwards ``drain_bps`` of them (``share``
    of its rate): v's buffer from u gains ``gained_pkts``, more than the ``room_pkts`` above its target."""

    hop: str
    share: float
    at_s: float
    push_bps: float
    drain_bps: float
    delay_s: float
    frame_bytes: float
    gained_pkts: float
    room_pkts: float
    need_pkts: int  # the smallest buffer (packets) whose room above the target holds the gain
    backlog_s: float = 0.0  # u a switch: of ``delay_s``, the wait of u's stamped backlog (_backlog_wait)
    through: bool = False  # u a switch that passes its hosts' packets as they come (_passes_through)
    ramp: bool = False  # u passes a starting host's ramp at its R_max (_ramp_step): in u's frames, no mix


def mix_steps(topo: Topology, duration_s: float, delays: dict[DirectedLink, float]) -> dict[DirectedLink, MixStep]:
    """For each host law (u, v) in ``delays`` (its loop's delay, s): the change of the run's flows whose mix dip
    at v overfills v's buffer from u the most within that delay, if one does (the law's climb from its start
    bounds what it sends: a change early in the run may overfill it less than a later one)."""
    alinea = [f for f in topo.flows if f.control == "alinea"]
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    keys = [k for k in delays if topo.nodes[k[1]].is_switch
            and (not topo.nodes[k[0]].is_switch or _sends_backlog_at_wire(topo, paths, alinea, k))]
    # a switch's law toward a switch that can pass a starting host's ramp as it comes (_ramp_step)
    ramps = [k for k in delays if topo.nodes[k[0]].is_switch and topo.nodes[k[1]].is_switch]
    if not alinea or not (keys or ramps):
        return {}
    out: dict[DirectedLink, MixStep] = {}
    before: list[Flow] = []
    prior: _Stretch | None = None
    for t0, t1, rates, active in stretches(topo, alinea, duration_s):
        stretch = _Stretch(topo, paths, active, rates, prior=prior, span=(t0, t1))
        if t0 > 0 and prior is not None:
            for key in keys:
                if key not in stretch.crossing or key not in prior.crossing:
                    continue
                keep_worst(out, key, _step(stretch, prior, key, before, delays[key], t0, t1))
            for key in ramps:
                if key in stretch.crossing:
                    keep_worst(out, key, _ramp_step(stretch, prior, key, before, delays[key], t0, t1))
        before, prior = active, stretch
    return out


def _step(stretch: _Stretch, prior: _Stretch, key: DirectedLink, before: list[Flow], delay_s: float,
          t0: int, t1: int) -> MixStep | None:
    """Whether the frames' change at ``t0`` fills v's buffer from u before u's law can have heard of it."""
    u, v = key
    switch = stretch.topo.nodes[u].is_switch
    # a switch whose link idles holds no backlog: it passes its feeders' packets as they come (_passes_through)
    if switch and not _link_full(prior, u, v):
        return _through_step(stretch, prior, key, before, delay_s, t0, t1) if _passes_through(stretch, prior, u, v) else None
    dip = stretch.mix_dip(u, v, before=before)
    if dip is None:
        return None
    hop, reads = dip[0], dip[2]
    if switch and not _window_read(stretch, hop, t0):
        return None
    # what u sent before: what v forwarded of its flows, the laws at their links; at most what u's remaining
    # flows can take now (their r_max, u's link)
    push = min(prior.drain(u, v, prior.push(u, v, False))[0], stretch.push(u, v, False))
    port = stretch.topo.ports.get((v, u))
    if port is None or push <= 0:
        return None
    law = stretch.topo.law[key]
    frames = law_frames(stretch.topo, u, v, port.capacity)[0]
    # no more than the law can have climbed to since u's first flow toward v started
    flows = [f for f in stretch.topo.flows if f.control == "alinea" and (u, v) in stretch.paths[f.name]]
    if not switch:  # a switch's law on BMv2's queues starts at its R_max (agent.py)
        push = _ramp(law, frames, port.interval_us * 1000, flows, t0, push)
    backlog_s = _backlog_wait(stretch, u, v) if switch else 0.0
    delay_s += backlog_s
    span_ns = min(int(delay_s * NS), t1 - t0)
    gathered, deepest, _ = stretch.dip_gathers(u, v, push, hop, reads, span_ns)
    if gathered <= 0:
        return None
    frame = _mean_frame(stretch, u, v)
    gained = gathered / (8 * frame)
    room = room_above_target(stretch.topo, u, v, port.capacity)
    if gained < room:
        return None
    need = buffer_for_gain(stretch.topo, u, v, gained)
    return MixStep(hop[1], reads[0], t0 / NS, push, deepest, span_ns / NS, frame, gained, room, need, backlog_s)


def _sends_backlog_at_wire(topo: Topology, paths: dict[str, tuple[DirectedLink, ...]], alinea: list[Flow],
                            key: DirectedLink) -> bool:
    """Whether switch u's queue toward v sends its backlog at its link's bits, like a host's pacer, when its frames
    shrink: on BMv2's queues (a departure stamped when the packet is queued, at most one queue-rate interval after the
    one before, never before the packet came), with u's law free to run at its link's rate (its R_max at least
    the link's: its queue rate is the link's packets/s at its mean frame, so frames larger than that mean are held
    by the wire, not the stamps) and a law upstream that keeps u's buffer from it at a target (a law (x, u) over
    u's flows toward v): that standing backlog waits behind the wire with its stamps past, and when smaller frames
    reach the head they leave at the wire's bits, not at the mean's packets/s; u's law's cuts stamp only the packets
    queued after them."""
    u, v = key
    law = topo.law.get(key)
    if topo.options.queue_model != "bmv2" or law is None or law.r_max < topo.link_between(u, v).rate_bps:
        return False
    feeders = {p[p.index(key) - 1][0] for f in alinea if key in (p := paths[f.name]) and p.index(key) > 0}
    return any((x, u) in topo.law for x in feeders)


def _backlog_wait(stretch: _Stretch, u: str, v: str) -> float:
    """The time (s) switch u's link toward v takes to send the backlog the laws upstream hold in u's buffers at their
    targets (each its ``o_max`` of the buffer in its frames, the target :func:`~topo.net.plan.room_above_target` counts): packets queued before u's law cut, their
    departures stamped then, which leave at the wire's bits whatever the cut (:func:`_sends_backlog_at_wire`); u's
    cut reaches v's buffer only after them."""
    topo = stretch.topo
    feeders = {x for f in stretch.crossing[(u, v)] for (x, y) in stretch.paths[f.name] if y == u}
    bits = 0.0
    for x in sorted(feeders):
        port = topo.ports.get((u, x))
        if (x, u) in topo.law and port is not None:
            frames, frame_bits = law_frames(topo, x, u, port.capacity)
            bits += topo.law[(x, u)].o_max * frames * frame_bits
    return bits / topo.link_between(u, v).rate_bps


def _passes_through(stretch: _Stretch, prior: _Stretch, u: str, v: str) -> bool:
    """Whether switch u passes its flows toward v as they come, at its feeders' packets/s, before and after the
    change: on BMv2's queues its law starts at its R_max (agent.py), and where that and its link are above all
    that reaches u for v, its queue, stamping each packet at most a queue-rate gap after the one before, never
    before it came, holds none; its hosts' pacers count bytes, so when their frames shrink v gets their bits in
    more packets/s at once, and u's law can cut them only a loop's delay after v's buffer has read them, as a
    host's can. Seen in merge-burst-through-ramp.yaml (fuzz-topo seed 19): S1's law toward S2 at its
    500 Mb/s R_max passed the 200 B frames of H3's f5 (started at 0.24 s beside f1's 576 B) at ~6,000
    packets/s into S2's queue toward H4, still at ~4,300 packets/s (20 Mb/s over 576 B): S2's buffer from S1
    went from 1 packet to 44 frames in 40 ms and lost 10 (seed 1), S1's loop delay being 41 ms."""
    law = stretch.topo.law.get((u, v))
    if stretch.topo.options.queue_model != "bmv2" or law is None:
        return False
    top = min(law.r_max, stretch.rate(u, v))
    return max(prior.push(u, v, False), stretch.push(u, v, False)) < top * (1 - 1e-9)


def _through_step(stretch: _Stretch, prior: _Stretch, key: DirectedLink, before: list[Flow], delay_s: float,
                  t0: int, t1: int) -> MixStep | None:
    """Switch u passes its hosts' packets as they come (:func:`_passes_through`): when a host that sent nothing
    before starts flows toward v at ``t0``, v gets at once its law's start (its floor, the climb over the loop's
    delay) in packets of its smallest frame (the flows' starts are drawn apart: the smallest may send alone
    first, its pacer handing it the whole law), beside the hosts already sending, each at most the rate its law
    can have climbed to, in its flows' mean frame; v's queue toward the next hop still sends its law's bits over
    the mean frame of the flows it carried (the 0.2 s window, read no sooner). The packets/s over that rate, over
    u's loop's delay (no report can cut u sooner), against the packets v's buffer holds above its target."""
    u, v = key
    topo, span_ns = stretch.topo, min(int(delay_s * NS), t1 - t0, READ_PERIOD_NS)
    hops = {stretch.paths[f.name][stretch.paths[f.name].index(key) + 1] for f in stretch.crossing[key]
            if stretch.paths[f.name].index(key) + 1 < len(stretch.paths[f.name])}
    port = topo.ports.get((v, u))
    if len(hops) != 1 or port is None:
        return None
    (hop,) = hops
    means = stretch._mix_change(hop, before)
    if hop not in topo.law or means is None or not _window_read(stretch, hop, t0):
        return None
    sending = {f.src for f in before}
    if all(f.src in sending for f in stretch.crossing[key]):
        return None  # no host starts: the pacers' frames shrink only as mix_dip counts them
    queue_pps = prior.allowed(*hop) / (8 * means[1])
    arrivals_pps, bits = 0.0, 0.0
    for first in sorted({stretch.paths[f.name][0] for f in stretch.crossing[key]}):
        rate = _host_ramp(stretch, first, t0 + span_ns)
        if not math.isfinite(rate):
            return None  # a flow a switch's law or a fixed source feeds: not bounded here
        mine = [f for f in stretch.crossing[key] if stretch.paths[f.name][0] == first]
        frames = [flow_frame_bytes(f) for f in mine]
        frame = min(frames) if first[0] not in sending else len(frames) / sum(1 / b for b in frames)
        arrivals_pps += rate / (8 * frame)
        bits += rate
    gained = (arrivals_pps - queue_pps) * span_ns / NS
    room = room_above_target(topo, u, v, port.capacity)
    if gained < room:
        return None
    frame = bits / (8 * arrivals_pps)
    return MixStep(hop[1], means[1] and queue_pps * 8 * frame / prior.allowed(*hop), t0 / NS, bits,
                   queue_pps * 8 * frame, span_ns / NS, frame, gained, room, buffer_for_gain(topo, u, v, gained),
                   through=True)


def _ramp_step(stretch: _Stretch, prior: _Stretch, key: DirectedLink, before: list[Flow], delay_s: float,
               t0: int, t1: int) -> MixStep | None:
    """Switch u passes its hosts' packets as they come (:func:`_passes_through`) when a host that sent nothing
    before starts flows toward v at ``t0``: the host's law climbs from its floor (:func:`_ramp`), its buffer in u
    read empty, and u's law, at its R_max above all it carries, hands the climb on to v, whose queue toward the
    next hop drains what that hop lets it (:meth:`_Stretch.allowed`). From the moment the climb passes that drain,
    v's buffer from u gains the climb's rate over it until u hears it: u's loop's delay and v's report interval
    (no report can cut u sooner), at most the climb's rate at the end of that span over the drain. Seen in
    start-ramp-through-fabric.yaml (fuzz seed 23): S1's law toward S3 at its 1 Gb/s R_max passed H1's climb (414
    Mb/s by 0.916 s) into S3's 625-packet buffer, which drains at 100 Mb/s toward S2, behind a 10 ms link: S1's
    cuts came a loop later and the buffer was full at 0.939 s (71 lost at seeds 1-3)."""
    u, v = key
    topo, sending = stretch.topo, {f.src for f in before}
    hops = {stretch.paths[f.name][stretch.paths[f.name].index(key) + 1] for f in stretch.crossing[key]
            if stretch.paths[f.name].index(key) + 1 < len(stretch.paths[f.name])}
    port = topo.ports.get((v, u))
    firsts = sorted({stretch.paths[f.name][0] for f in stretch.crossing[key] if f.src not in sending})
    if len(hops) != 1 or port is None or not firsts or not _passes_through(stretch, prior, u, v):
        return None
    drain = stretch.allowed(*next(iter(hops)))
    top = min(topo.law[key].r_max, stretch.rate(u, v))
    carried = min(prior.push(u, v, False), stretch.push(u, v, False)) if key in prior.crossing else 0.0

    def arrival(at_ns: int) -> float:
        return min(top, carried + sum(_host_ramp(stretch, first, at_ns) for first in firsts))

    if not math.isfinite(arrival(t1)) or arrival(t1) <= drain:
        return None
    lo, hi = t0, t1  # the climb passes the drain in (lo, hi]
    while hi - lo > port.interval_us * 1000:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if arrival(mid) > drain else (mid, hi)
    span_ns = min(int(delay_s * NS) + port.interval_us * 1000, t1 - lo)
    push = arrival(lo + span_ns)
    frame = _mean_frame(stretch, u, v)
    gained = (push - drain) * span_ns / NS / (8 * frame)
    room = room_above_target(topo, u, v, port.capacity)
    if gained < room:
        return None
    return MixStep(hops.pop()[1], 1.0, lo / NS, push, drain, span_ns / NS, frame, gained, room,
                   buffer_for_gain(topo, u, v, gained), ramp=True)


def _host_ramp(stretch: _Stretch, first: DirectedLink, until_ns: int) -> float:
    """The most the host law ``first`` can have climbed to by ``until_ns`` (:func:`_ramp`, from its floor, over
    its own flows, at most its link); inf for a hop no host's law regulates."""
    topo = stretch.topo
    law, port = topo.law.get(first), topo.ports.get(first[::-1])
    if law is None or port is None or topo.nodes[first[0]].is_switch:
        return math.inf
    mine = [f for f in topo.flows if f.control == "alinea" and stretch.paths[f.name][0] == first]
    frames = law_frames(topo, *first, port.capacity)[0]
    return _ramp(law, frames, port.interval_us * 1000, mine, until_ns, stretch.rate(*first))


def _link_full(prior: _Stretch, u: str, v: str) -> bool:
    """Whether what reaches switch u for v before the change fills u's link toward v (its flows' demands, what the
    links into u bring, u's law at its R_max): only then do the laws upstream hold a backlog in u's buffers, behind
    the wire; a link faster than what comes in keeps none (stamped-mixed-backlog.yaml: 50 Mb/s into S2, whose link
    toward S5 carries 200)."""
    return prior.push(u, v, False) >= prior.rate(u, v) * (1 - 1e-9)


def _window_read(stretch: _Stretch, hop: DirectedLink, t0: int) -> bool:
    """Whether v's port toward ``hop`` can have read its frame window over the flows it carried before ``t0``: until a
    read (every ``READ_PERIOD_NS``) has seen ``MIN_FRAMES`` frames it converts at the smallest frame expected through
    it (controlplane/frame_size.py), below any mix, so no mix that shrinks makes it dip. The flows' first frames are
    counted from their start (the path's delay to v not taken off: a read sooner, a dip counted sooner)."""
    starts = [f.start_ns for f in stretch.topo.flows if f.control == "alinea" and hop in stretch.paths[f.name]
              and f.start_ns < t0]
    return bool(starts) and t0 - min(starts) >= READ_PERIOD_NS


def _ramp(params: LawParams, frames: int, interval_ns: int, flows: list[Flow], until_ns: int, cap: float) -> float:
    """The rate u's law can have reached by ``until_ns`` from its floor, ``flows`` (u's toward v) sending at it, v's
    buffer (``frames`` of u's frames) read empty at every report: its fastest climb (each report raises it by its
    gain times its target's distance; the damping term adds nothing at a steady reading, and the start-up brake
    only cuts). v reports one data arrival at most every ``interval_ns`` (alinea.p4): a report at most every
    interval or every packet of u's pacer at the law's rate, whichever is longer (its flows' units at equal shares
    in bits, the mean frame :func:`_mean_frame` takes), none while no flow runs. At most ``cap``: a 1500 B flow
    alone from 0 s at a 0.2 Mb/s floor brings a report every 60 ms, and f2's start at 0.15 s in
    stop-frame-mix-line.yaml found H2's law below 2 Mb/s in the bound (0.23 in the run), not at the link's 10."""
    law = AlineaLaw(params)
    now = min((f.start_ns for f in flows), default=until_ns)
    while now < until_ns and law.rate < cap:
        units: dict[str, int] = {}
        for f in flows:
            if f.start_ns <= now and (f.stop_ns is None or f.stop_ns > now):
                units.setdefault(_unit(f), flow_frame_bytes(f))
        if not units:
            now = min((f.start_ns for f in flows if f.start_ns > now), default=until_ns)
            continue
        mean = len(units) / sum(1 / b for b in units.values())
        gap = max(interval_ns, math.ceil(8 * mean * NS / law.rate)) if law.rate > 0 else interval_ns
        now += gap
        if now <= until_ns:
            law.on_report(0.0, False, now, gap, 1 / frames if frames else 0.0)
    return min(law.rate, cap)


def _mean_frame(stretch: _Stretch, u: str, v: str) -> float:
    """The mean frame (bytes) of u's flows toward v, each unit at its equal share in bits (u's pacer)."""
    sizes: dict[str, int] = {}
    for f in stretch.crossing[(u, v)]:
        sizes.setdefault(_unit(f), flow_frame_bytes(f))
    return len(sizes) / sum(1 / b for b in sizes.values()) if sizes else math.inf
