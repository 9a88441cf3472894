"""Invariants every run must satisfy, checked at its end (both backends): a metric is a claim, and
these are the claims' cross-checks. docs/reference/metrics.md ("Invariants") states each one precisely.

Pure functions over the topology, the :class:`~topo.net.record.Recorder`, the summary and the
backend's :class:`EndState` (what it knows of the network when the run stops: per flow what was
sent and what arrived, per place what was dropped there and what it still held). A violation is
one human line; :func:`check_invariants` returns them all, the runner records them in
summary.json and prints them (``hbh run --strict`` fails on any).

* ``conservation`` -- packets sent = arrived + dropped (by place) + held at the end (in a switch
  queue, on a link). Switches and links count frames, not flows: drops and held frames are
  attributed to the flows whose path crosses the place, so per flow the check is a bound (what
  is missing must fit in what its path dropped or held), over all flows together an aggregate
  bound, and exact per egress queue and per playout buffer.
* ``link_rate`` -- no directed link carried more than its rate allowed over any window of
  links.csv's samples (rate events included), within one frame per rate change plus one.
* ``host_capacity`` -- what a host received over any window fits its link's rate; what it
  played out fits its playout rate.
* ``counters_agree`` -- the per-flow sums equal the per-link and per-port counters, and the
  summary's loss figures equal the counters they sum.
* ``goodput_total`` -- the summary's ``goodput_total_bps`` is what the flows' counters say their
  applications took over the run window (between the samples around its ends), at least the
  goodputs of the flows measured over that window, and within what the receivers' links and
  playouts allowed over it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from typing import Any

from topo.net.model import CONTROLS, Flow, Topology
from topo.net.record import Recorder
from topo.net.stats import bits_of_first

__all__ = ["Violation", "Place", "FlowEnd", "QueueEnd", "EndState", "NAMES", "check_invariants", "flow_places",
           "max_frame_bytes", "place_tx", "place_link", "place_in", "place_egress", "place_rx", "invariants_block",
           "goodput_total"]

#: every invariant's stable id, in the order checked
NAMES = ("conservation", "link_rate", "host_capacity", "counters_agree", "goodput_total")
#: datagram controls (every one but TCP): sequence-numbered packets, each counted at its arrival
DATAGRAM_CONTROLS = frozenset(c for c in CONTROLS if c != "tcp")


@dataclass(frozen=True, slots=True)
class Violation:
    name: str  # one of NAMES
    detail: str  # one line naming the flow/link/port and the numbers

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Place:
    """Somewhere a frame can be dropped or held at the end: a host's transmit queue, a link direction,
    a switch port's ingress (its drop counters) or egress queue, a host's receive buffer.

    ``data_only``: every frame counted here is a data packet of a flow crossing the place (a receive
    buffer), so the flows' missing packets must cover it; otherwise reports, feedback and ACKs
    count here too. ``held_is_bound``: ``held`` is an upper bound, not a count (the netns backend
    cannot see a wire or a kernel queue at the instant the hosts took their last sample)."""

    dropped: int = 0
    held: int = 0
    data_only: bool = False
    held_is_bound: bool = False


@dataclass(frozen=True, slots=True)
class FlowEnd:
    """One flow at the end: ``sent`` data packets (datagram flows) or data segments, retransmissions
    included (the simulator's TCP); ``arrived`` those its destination counted; ``path`` the places
    its data frames cross (:func:`flow_places`)."""

    sent: int
    arrived: int
    unit: str  # "packets" | "segments"
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QueueEnd:
    """A switch port's egress queue: frames admitted, served, refused (full), queued at the end."""

    enqueued: int
    dequeued: int
    dropped_full: int
    depth: int


@dataclass(frozen=True)
class EndState:
    """What a backend knows of the network when the run stops (``net.end_state()``)."""

    backend: str
    flows: Mapping[str, FlowEnd] = field(default_factory=dict)
    places: Mapping[str, Place] = field(default_factory=dict)
    queues: Mapping[str, QueueEnd] = field(default_factory=dict)  # "S port N" -> its egress queue
    # the backend's own count of data packets refused by full receive buffers (None: not kept)
    receiver_overflow: int | None = None
    # largest frame any flow sends (bytes): the slack of a windowed rate check
    max_frame_bytes: int = 1514
    # how late a sample may be read after its nominal time (netns reads counters in real time)
    sample_lateness_ns: int = 0
    # frames each directed link delivered to its far end by the end (sim; netns: a host socket's
    # received frames, read after the hosts' last sample, so a bound from above)
    link_delivered: Mapping[tuple[str, str], int] = field(default_factory=dict)
    link_delivered_exact: bool = True
    # frames handed to each directed link by the end (sim): a switch's egress queue serves its link
    link_sent: Mapping[tuple[str, str], int] = field(default_factory=dict)


# ---- places -----------------------------------------------------------------------------------
def place_tx() -> str:
    return "hosts' transmit queues"


def place_link(u: str, v: str) -> str:
    return f"link {u}->{v}"


def place_in(switch: str, port: int) -> str:
    return f"{switch} port {port} ingress"


def place_egress(switch: str, port: int) -> str:
    return f"{switch} port {port} egress queue"


def place_rx(host: str) -> str:
    return f"{host} receive buffer"


def flow_places(topo: Topology, flow: Flow) -> tuple[str, ...]:
    """The places a flow's data frames cross, over every path the routes may give it (ECMP)."""
    out: dict[str, None] = {place_tx(): None}
    paths = topo.all_paths(flow.src, flow.dst) if topo.options.ecmp else [flow.path]
    for path in paths:
        for u, v in zip(path, path[1:]):
            out[place_link(u, v)] = None
            if topo.nodes[v].is_switch:
                out[place_in(v, topo.port(v, u))] = None
            if topo.nodes[u].is_switch:
                out[place_egress(u, topo.port(u, v))] = None
    out[place_rx(flow.dst)] = None
    return tuple(out)


# ---- the checks --------------------------------------------------------------------------------
def check_invariants(topo: Topology, recorder: Recorder, summary: Mapping[str, Any],
                     end_state: EndState | None) -> list[Violation]:
    """Every invariant's violations (empty: the run is consistent). ``end_state`` None: only the
    checks the recorder alone supports."""
    out: list[Violation] = []
    memo: dict[str, dict[str, _HostSeries]] = {}

    def series() -> dict[str, _HostSeries]:  # one pass over the flow samples, shared by two checks
        if "s" not in memo:
            memo["s"] = _host_series(topo, recorder)
        return memo["s"]

    checks = (("conservation", lambda: _conservation(topo, recorder, end_state, series)),
              ("link_rate", lambda: _link_rate(topo, recorder, end_state)),
              ("host_capacity", lambda: _host_capacity(topo, recorder, end_state, series)),
              ("counters_agree", lambda: _counters_agree(topo, recorder, summary, end_state)),
              ("goodput_total", lambda: goodput_total(topo, recorder, summary, end_state)))
    for name, check in checks:
        try:
            out += check()
        except Exception as exc:  # noqa: BLE001 - a checker's own fault must not cost the run its results
            out.append(Violation(name, f"could not be checked: {type(exc).__name__}: {' '.join(str(exc).split())}"))
    return out


def invariants_block(violations: Iterable[Violation]) -> dict[str, Any]:
    """summary.json's ``invariants``: what was checked and what failed."""
    return {"checked": list(NAMES), "violations": [v.as_dict() for v in violations]}


def _final_flows(rec: Recorder) -> dict[str, tuple[int, int]]:
    """flow -> (sent, received) at its last sample."""
    out: dict[str, tuple[int, int]] = {}
    for s in rec.flows:
        out[s.flow] = (s.sent, s.received)
    return out


def _conservation(topo: Topology, rec: Recorder, end: EndState | None,
                  series: Callable[[], dict[str, _HostSeries]]) -> list[Violation]:
    out: list[Violation] = []
    for name, (sent, received) in sorted(_final_flows(rec).items()):
        if received > sent or received < 0 or sent < 0:
            out.append(Violation("conservation", f"flow {name}: received {received} > sent {sent} "
                                                 "(flows.csv, last sample)"))
    out += _tcp_bytes(rec, acked_is_received=end is not None and end.backend == "sim")
    out += _playout_conservation(topo, rec, series())
    if end is None:
        return out
    return out + _places_conservation(end, {f.name: f.group for f in topo.flows if f.group is not None})


def _places_conservation(end: EndState, groups: Mapping[str, str] | None = None) -> list[Violation]:
    """What the flows miss against what the places dropped and held (the module's docstring).

    ``groups``: multicast branch -> its group (docs/howto/multicast.md). A packet a group's branches miss is
    one frame held or dropped, shared by the branches behind that place, so over all flows a group
    counts its most-missing branch against the frames held or dropped (the packets missing anywhere
    are at least that many); against the drops, every branch's count (at most that many)."""
    out: list[Violation] = []
    for key, q in sorted(end.queues.items()):
        if q.enqueued != q.dequeued + q.depth:
            out.append(Violation("conservation", f"{key} egress queue: enqueued {q.enqueued} != dequeued "
                                                 f"{q.dequeued} + queued at the end {q.depth}"))
    missing: dict[str, int] = {}
    for name, f in sorted(end.flows.items()):
        if f.arrived > f.sent:
            out.append(Violation("conservation", f"flow {name}: {f.arrived} {f.unit} arrived > {f.sent} sent"))
            continue
        gone = f.sent - f.arrived
        missing[name] = gone
        room = sum(end.places[p].dropped + end.places[p].held for p in f.path if p in end.places)
        if gone > room:
            out.append(Violation("conservation", f"flow {name}: {gone - room} of {f.sent} {f.unit} sent are neither "
                                                 f"arrived ({f.arrived}), dropped nor held on its path (its path's "
                                                 f"places dropped or held {room} frames)"))
    total_room = sum(p.dropped + p.held for p in end.places.values())
    by_group: dict[str, int] = {}
    for name, gone in missing.items():
        if groups and name in groups:
            by_group[groups[name]] = max(by_group.get(groups[name], 0), gone)
    at_least = sum(n for name, n in missing.items() if not groups or name not in groups) + sum(by_group.values())
    if at_least > total_room:
        out.append(Violation("conservation", f"all flows: {at_least} {_unit(end)} sent and not arrived "
                                             f"> {total_room} frames dropped or held anywhere"))
    data_drops = sum(p.dropped for p in end.places.values() if p.data_only)
    if data_drops > sum(missing.values()):
        out.append(Violation("conservation", f"all flows: {data_drops} data packets dropped, more than the "
                                             f"{sum(missing.values())} {_unit(end)} sent and not arrived"))
    for pname, place in sorted(end.places.items()):
        if not place.data_only:
            continue
        crossing = [n for n, f in end.flows.items() if pname in f.path]
        if place.dropped > sum(missing.get(n, 0) for n in crossing):
            out.append(Violation("conservation", f"{pname}: dropped {place.dropped} data packets, more than its flows "
                                                 f"({', '.join(sorted(crossing)) or 'none'}) miss "
                                                 f"({sum(missing.get(n, 0) for n in crossing)})"))
    return out


def _tcp_bytes(rec: Recorder, acked_is_received: bool) -> list[Violation]:
    """A TCP flow's bytes: received in order by the receiver <= written by the sender (both ends'
    totals: the kernel's in netns, the model's in the simulator); in the simulator also
    acknowledged (the sender's last sample) <= received (the model's receiver counts a byte when
    it is in order; a kernel's application may not have read an acknowledged byte yet)."""
    out = []
    acked = {s.flow: s.get("bytes_acked") for s in rec.tcp}
    for name, t in sorted(rec.tcp_flows.items()):
        sent, got = t.get("bytes_sent"), t.get("bytes_received")
        if isinstance(sent, int) and isinstance(got, int) and got > sent:
            out.append(Violation("conservation", f"flow {name}: TCP receiver got {got} bytes, its sender wrote {sent}"))
        ack = acked.get(name) if acked_is_received else None
        if isinstance(ack, int) and isinstance(got, int) and ack > got:
            out.append(Violation("conservation", f"flow {name}: TCP sender saw {ack} bytes acknowledged, its receiver "
                                                 f"got {got}"))
    return out


def _unit(end: EndState) -> str:
    units = {f.unit for f in end.flows.values()}
    return "packets" if units <= {"packets"} else "packets and segments"


def _playout_conservation(topo: Topology, rec: Recorder, series: dict[str, _HostSeries]) -> list[Violation]:
    """Per host playout buffer, at each of its samples (the host samples its buffer and its flows'
    counts at one instant): occupancy within its capacity; what its datagram flows received =
    what it played + what it holds; each flow's own played count <= its received, and the flows'
    played counts add up to the buffer's (the first violation per buffer is said)."""
    out = []
    n_datagram = {h.name: sum(1 for f in topo.flows if f.dst == h.name and f.control in DATAGRAM_CONTROLS)
                  for h in topo.hosts}
    for host, rows in sorted(_group(rec.buffers, "host").items()):
        at = series.get(host)
        for b in rows:
            v = at.at.get(b.t_ns) if at is not None else None
            said = None
            if not 0 <= b.occupancy <= b.capacity:
                said = f"holds {b.occupancy} packets, capacity {b.capacity}"
            elif v is not None and v.received != b.played + b.occupancy:
                said = f"its flows received {v.received} packets, it played {b.played} and holds {b.occupancy}"
            elif at is not None and at.over_played is not None and at.over_played[0] <= b.t_ns:
                said = at.over_played[1]
            elif v is not None and v.n_played and v.n_played == n_datagram.get(host) and v.played != b.played:
                said = f"its flows' played counts add up to {v.played}, the buffer played {b.played}"
            if said is not None:
                out.append(Violation("conservation", f"{host} receive buffer at {b.t_ns / 1e9:.3f} s: {said}"))
                break
    return out


@dataclass(frozen=True, slots=True)
class _AtTime:
    """A destination host's flows at one sample time (cumulative)."""

    datagram_bits: int  # bits of the packets its datagram flows received
    all_bits: int  # the same with its TCP flows' in-order records
    received: int  # packets its datagram flows received
    played: int  # their played counts, summed
    n_played: int  # how many of them have a played count
    played_bits: int  # their played counts, in bits (each flow's packets its own size)


@dataclass
class _HostSeries:
    at: dict[int, _AtTime] = field(default_factory=dict)
    over_played: tuple[int, str] | None = None  # the first flow that played more than it received


def _host_series(topo: Topology, rec: Recorder) -> dict[str, _HostSeries]:
    """Per destination host, its flows' counts summed at each sample time, in one pass over the
    samples (thousands of flows over a long run stay cheap)."""
    totals = {h.name: [0, 0, 0, 0, 0, 0] for h in topo.hosts}
    # flow -> (its host's totals, bits per packet, datagram?)
    info = {f.name: (totals[f.dst], 8 * f.packet_size, f.control in DATAGRAM_CONTROLS) for f in topo.flows
            if f.dst in totals}
    last_rx: dict[str, int] = {}
    last_played: dict[str, int] = {}
    out = {h.name: _HostSeries() for h in topo.hosts}
    for t, group in groupby(sorted(rec.flows, key=attrgetter("t_ns")), key=attrgetter("t_ns")):
        for s in group:
            i = info.get(s.flow)
            if i is None:
                continue
            tot, bits, datagram = i
            got = s.received - last_rx.get(s.flow, 0)
            last_rx[s.flow] = s.received
            tot[1] += got * bits
            if not datagram:
                continue
            tot[0] += got * bits
            tot[2] += got
            if s.played is not None:
                before = last_played.get(s.flow)
                last_played[s.flow] = s.played
                tot[3] += s.played - (before or 0)
                tot[4] += before is None
                tot[5] += (s.played - (before or 0)) * bits
                if s.played > s.received:
                    dst = _dst(topo, s.flow)
                    if out[dst].over_played is None:
                        out[dst].over_played = (t, f"flow {s.flow} played {s.played} packets of {s.received} "
                                                   "received")
        for host, tot in totals.items():
            out[host].at[t] = _AtTime(*tot)
    return out


def _dst(topo: Topology, flow: str) -> str:
    return next(f.dst for f in topo.flows if f.name == flow)


def _last(rows: Iterable[Any], key: str) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for r in rows:
        out[getattr(r, key)] = r
    return out


def _excess(points: list[tuple[int, float, float]]) -> tuple[float, int, int]:
    """Over every window [t_i, t_j] of ``points`` = [(t, carried, allowed)] (both cumulative, in
    time order): the largest (carried_j - carried_i) - (allowed_j - allowed_i), with i and j.
    One pass: the largest excess ends at j and starts at the i < j of least carried - allowed."""
    best, bi, bj = -math.inf, 0, 0
    low, li = math.inf, 0
    for j, (_t, c, a) in enumerate(points):
        if j and c - a - low > best:
            best, bi, bj = c - a - low, li, j
        if c - a < low:
            low, li = c - a, j
    return best, bi, bj


def _rate_integral(topo: Topology, u: str, v: str) -> Any:
    """``allowed(t)``: bits link u-v may carry in [0, t] (its rate, then each rate event's)."""
    link = topo.link_between(u, v)
    # by time only (a stable sort): events at one instant act in the file's order, the last one stays
    changes = sorted(((ev.at_ns, ev.rate_bps) for ev in topo.events
                      if ev.kind == "link_rate" and ev.link is not None and set(ev.link) == {u, v}
                      and ev.rate_bps is not None), key=lambda c: c[0])
    steps = [(0, link.rate_bps), *changes]

    def allowed(t_ns: int) -> float:
        bits = 0.0
        for k, (at, rate) in enumerate(steps):
            end = steps[k + 1][0] if k + 1 < len(steps) else math.inf
            if t_ns <= at:
                break
            bits += rate * (min(t_ns, end) - at) / 1e9
        return bits

    return allowed, len(changes)


def _link_rate(topo: Topology, rec: Recorder, end: EndState | None) -> list[Violation]:
    out = []
    by_link: dict[tuple[str, str], list[Any]] = {}
    for s in rec.links:
        by_link.setdefault((s.src, s.dst), []).append(s)
    frame_bits = 8 * (end.max_frame_bytes if end else max_frame_bytes(topo))
    late = end.sample_lateness_ns if end else 0
    for (u, v), rows in sorted(by_link.items()):
        allowed, changes = _rate_integral(topo, u, v)
        peak = max([topo.link_between(u, v).rate_bps] + [ev.rate_bps or 0 for ev in topo.events
                                                          if ev.kind == "link_rate" and ev.link and set(ev.link) == {u, v}])
        slack = frame_bits * (1 + changes) + peak * late / 1e9
        pts = [(s.t_ns, 8.0 * s.bytes, allowed(s.t_ns)) for s in rows]
        worst, i, j = _excess(pts)
        if worst > slack:
            t0, t1 = pts[i][0], pts[j][0]
            out.append(Violation("link_rate", f"link {u}->{v}: carried {(pts[j][1] - pts[i][1]) / 8:.0f} bytes in "
                                              f"{t0 / 1e9:.3f}-{t1 / 1e9:.3f} s, its rate allows "
                                              f"{(pts[j][2] - pts[i][2]) / 8:.0f} (+ {slack / 8:.0f} slack)"))
    return out


def max_frame_bytes(topo: Topology) -> int:
    """The largest frame any flow of ``topo`` sends (TCP: a full segment's frame)."""
    from hosts.tcp import MSS
    from hosts.tcp.wire import data_frame_bytes

    tcp = data_frame_bytes(MSS) if any(f.control == "tcp" for f in topo.flows) else 0
    return max([tcp, 64] + [f.packet_size for f in topo.flows])


def _host_capacity(topo: Topology, rec: Recorder, end: EndState | None,
                   series: Callable[[], dict[str, _HostSeries]]) -> list[Violation]:
    """Datagram flows into a host: their packets over any window fit the host's link (each counted
    at its arrival); every flow, TCP's in-order records included, fits it from the run's start.
    A host's playout: what it played over any window fits its playout rate."""
    late = end.sample_lateness_ns if end else 0
    return _host_links(topo, rec, series(), late) + _host_playouts(topo, rec, series())


def _host_links(topo: Topology, rec: Recorder, series: dict[str, _HostSeries], late: int) -> list[Violation]:
    """Each sample's received counts at the time its host read them (``Recorder.read_ns``); the
    lateness term stays for the frames a netns host takes after their kernel stamp."""
    out: list[Violation] = []
    for host in topo.hosts:
        mine = [f for f in topo.flows if f.dst == host.name]
        if not mine:
            continue
        (sw,) = topo.neighbours(host.name)
        sent_allowed, changes = _rate_integral(topo, sw, host.name)
        link = topo.link_between(sw, host.name)

        def allowed(t_ns: int, _a: Any = sent_allowed, _d: int = link.delay_ns) -> float:
            """A frame arrives one propagation delay after the wire carried it: what arrived by t was
            carried by t - delay, at the rate in force then (frames on the wire when a rate falls
            arrive at the old rate)."""
            return float(_a(max(0, t_ns - _d)))

        slack = 8 * max(f.packet_size for f in mine) * (1 + changes) + link.rate_bps * late / 1e9
        at = [(rec.read_at(host.name, t), v) for t, v in sorted(series[host.name].at.items())]
        pts_d = [(t, float(v.datagram_bits), allowed(t)) for t, v in at]
        worst, i, j = _excess(pts_d)
        if worst > slack:
            out.append(Violation("host_capacity", f"{host.name}: its datagram flows received "
                                                  f"{(pts_d[j][1] - pts_d[i][1]) / 8:.0f} bytes in "
                                                  f"{pts_d[i][0] / 1e9:.3f}-{pts_d[j][0] / 1e9:.3f} s, link "
                                                  f"{sw}->{host.name} allows {(pts_d[j][2] - pts_d[i][2]) / 8:.0f}"))
        over = next(((t, v.all_bits - allowed(t)) for t, v in at if v.all_bits - allowed(t) > slack), None)
        if over is not None:
            out.append(Violation("host_capacity", f"{host.name}: its flows received {over[1] / 8:.0f} bytes more by "
                                                  f"{over[0] / 1e9:.3f} s than link {sw}->{host.name} carried at most"))
    return out


def _host_playouts(topo: Topology, rec: Recorder, series: dict[str, _HostSeries]) -> list[Violation]:
    """A host's application plays each packet in its own bits' time at ``playout``: over any window,
    the bits its flows played (their per-flow played counts) <= playout x window + one packet.
    Without per-flow counts, the buffer's packets, each at least the smallest of its flows' size.

    Each sample counts at the time its host read it (``Recorder.read_ns``: a netns host's wake-up
    may be late), and a buffer plays no packet before a time it was read at (engine PlayoutBuffer): so the
    bound is exact at those times in both backends, with no lateness allowance to hide a burst in."""
    out: list[Violation] = []
    for host, rows in sorted(_group(rec.buffers, "host").items()):
        node = topo.nodes.get(host)
        sizes = [f.packet_size for f in topo.flows if f.dst == host and f.control in DATAGRAM_CONTROLS]
        if node is None or node.playout_bps is None or not rows or not sizes:
            continue
        at = series[host].at if host in series else {}
        per_flow = [(rec.read_at(host, b.t_ns), at[b.t_ns]) for b in rows if b.t_ns in at]
        if per_flow and all(v.n_played == len(sizes) for _t, v in per_flow):
            pts = [(t, float(v.played_bits), node.playout_bps * t / 1e9) for t, v in per_flow]
            slack, unit = 8 * max(sizes), "bits"
        else:
            pps = node.playout_bps / (8 * min(sizes))
            reads = [rec.read_at(host, b.t_ns) for b in rows]
            pts = [(t, float(b.played), pps * t / 1e9) for t, b in zip(reads, rows)]
            slack, unit = 1, "packets"
        worst, i, j = _excess(pts)
        if worst > slack:
            out.append(Violation("host_capacity", f"{host}: played {pts[j][1] - pts[i][1]:.0f} {unit} in "
                                                  f"{pts[i][0] / 1e9:.3f}-{pts[j][0] / 1e9:.3f} s, its playout "
                                                  f"({node.playout_bps / 1e6:g} Mb/s) allows "
                                                  f"{pts[j][2] - pts[i][2]:.0f} (+ {slack:.0f})"))
    return out


def _by_time(samples: Iterable[Any]) -> list[tuple[int, list[Any]]]:
    groups: dict[int, list[Any]] = {}
    for s in samples:
        groups.setdefault(s.t_ns, []).append(s)
    return sorted(groups.items())


def _group(rows: Iterable[Any], key: str) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for r in rows:
        out.setdefault(getattr(r, key), []).append(r)
    return out


def _counters_agree(topo: Topology, rec: Recorder, summary: Mapping[str, Any],
                    end: EndState | None) -> list[Violation]:
    out: list[Violation] = []
    final = _final_flows(rec)
    drops: dict[tuple[str, int, str], int] = {}
    for d in rec.drops:
        drops[(d.switch, d.port, d.reason)] = d.packets
    loss = summary.get("loss", {})
    in_network = sum(n for (_s, _p, r), n in drops.items() if r != "spoofed_report")
    overflow = sum(b.dropped for b in _last(rec.buffers, "host").values())
    said = {"data_packets_sent": sum(s for s, _ in final.values()),
            "data_packets_received": sum(r for _, r in final.values()),
            "dropped_in_network": in_network, "receiver_buffer_overflow": overflow}
    for key, value in said.items():
        if key in loss and loss[key] != value:
            out.append(Violation("counters_agree", f"summary loss.{key} = {loss[key]}, the recorded counters sum to "
                                                   f"{value}"))
    out += _packet_rows_agree(topo, rec, end.sample_lateness_ns if end else 0)
    if end is None:
        return out
    if end.receiver_overflow is not None and end.receiver_overflow != overflow:
        out.append(Violation("counters_agree", f"receive buffers refused {end.receiver_overflow} packets (the hosts' "
                                               f"count), buffers.csv says {overflow}"))
    if end.queues:
        tail = sum(n for (_s, _p, r), n in drops.items() if r == "egress_queue_full")
        full = sum(q.dropped_full for q in end.queues.values())
        if tail != full:
            out.append(Violation("counters_agree", f"egress queues refused {full} frames (per port), drops.csv's "
                                                   f"egress_queue_full rows sum to {tail}"))
    for (u, v), handed in sorted(end.link_sent.items()):
        q = end.queues.get(f"{u} port {topo.port(u, v)}") if topo.nodes[u].is_switch else None
        if q is not None and q.dequeued != handed:
            out.append(Violation("counters_agree", f"{u} port {topo.port(u, v)} egress queue served {q.dequeued} "
                                                   f"frames, link {u}->{v} was handed {handed}"))
    for pname, place in end.places.items():
        if pname.endswith(" ingress"):
            sw, _, port = pname.removesuffix(" ingress").partition(" port ")
            recorded = sum(n for (s, p, r), n in drops.items()
                           if s == sw and p == int(port) and r not in ("spoofed_report", "egress_queue_full"))
            if recorded != place.dropped:
                out.append(Violation("counters_agree", f"{pname}: drop counters say {place.dropped}, drops.csv "
                                                       f"{recorded}"))
    out += _host_links_agree(topo, rec, end, final)
    return out


def _packet_rows_agree(topo: Topology, rec: Recorder, late_ns: int) -> list[Violation]:
    """Per datagram flow: its packets_<flow>.csv rows received by flows.csv's last sample = the
    received count of that sample. A netns host hands its rows over after the run, so rows of
    packets that came after its last sample are left out; and its rows carry the kernel's receive
    stamp while its counts move when it takes the packet, so within ``late_ns`` of the sample's
    nominal time a row may be counted or not."""
    out = []
    last = {s.flow: s for s in rec.flows}
    for f in topo.flows:
        rows, s = rec.packets.get(f.name), last.get(f.name)
        if rows is None or s is None or f.control not in DATAGRAM_CONTROLS:
            continue
        surely, maybe = _rows_by(rows, s.t_ns - late_ns, s.t_ns + late_ns)
        if not surely <= s.received <= maybe:
            rows_said = f"{surely} rows" if surely == maybe else f"{surely}-{maybe} rows"
            out.append(Violation("counters_agree", f"flow {f.name}: flows.csv says {s.received} received by "
                                                   f"{s.t_ns / 1e9:.3f} s, packets_{f.name}.csv has {rows_said} "
                                                   "received by then"))
    return out


def _rows_by(rows: list[tuple[int, int, int]], lo_ns: int, hi_ns: int) -> tuple[int, int]:
    """Rows received at or before ``lo_ns``, and at or before ``hi_ns`` (one pass)."""
    lo = hi = 0
    for _seq, _sent, recv in rows:
        if recv <= hi_ns:
            hi += 1
            if recv <= lo_ns:
                lo += 1
    return lo, hi


def _host_links_agree(topo: Topology, rec: Recorder, end: EndState, final: dict[str, tuple[int, int]]) -> list[Violation]:
    """Per link into a host: the frames of its datagram flows that came in (received, plus those
    its full buffer refused) never exceed the frames the link delivered; for a host that only
    receives datagrams that send no feedback (alinea, fixed) and sends nothing, the link carries
    nothing else toward it, and the two are equal (the simulator, where both are counted at the
    same instant)."""
    out = []
    buffers = _last(rec.buffers, "host")
    for host in topo.hosts:
        mine = [f for f in topo.flows if f.dst == host.name]
        if not mine or any(f.control not in DATAGRAM_CONTROLS for f in mine):
            continue
        (sw,) = topo.neighbours(host.name)
        delivered = end.link_delivered.get((sw, host.name))
        if delivered is None:
            continue
        refused = buffers[host.name].dropped if host.name in buffers else 0
        came = sum(final.get(f.name, (0, 0))[1] for f in mine) + refused
        pure = all(f.control in ("alinea", "fixed") for f in mine) and not any(f.src == host.name for f in topo.flows)
        if came > delivered or (pure and end.link_delivered_exact and came != delivered):
            out.append(Violation("counters_agree", f"link {sw}->{host.name}: delivered {delivered} frames, {host.name}'s "
                                                   f"flows counted {came} (received, plus {refused} its buffer refused)"))
    return out


# ---- the total goodput ---------------------------------------------------------------------------
def goodput_total(topo: Topology, rec: Recorder, summary: Mapping[str, Any], end: EndState | None) -> list[Violation]:
    """summary.json's ``goodput_total_bps`` (hbh compare's total goodput row) against three things
    it must agree with, over the run window ``windows.run_s`` (docs/reference/metrics.md, Invariants):

    (1) the flows' own counters (flows.csv): per flow, its played count where its host plays a
        buffer out, else its received count, taken between the samples around the window's ends
        (a cumulative count at a time lies between the samples before and after it), so the total
        lies between the sums of the narrowest and the widest of those spans;
    (2) the goodputs of the flows measured over the run window itself (``flows.<f>.window`` not
        ``lifetime``): their sum is at most the total (the others add what they took), and equal
        to it when every flow is;
    (3) the receivers: per destination host, what its link allowed over the window (plus what its
        playout buffer held at the start), or, where its application plays every flow of it out,
        the playout rate over the window."""
    total = summary.get("goodput_total_bps")
    run_s = summary.get("windows", {}).get("run_s")
    if total is None or not run_s:
        return []
    start, stop = round(run_s[0] * 1e9), round(run_s[1] * 1e9)
    secs = (stop - start) / 1e9
    if secs <= 0:
        return [] if total == 0 else [Violation("goodput_total", f"goodput_total_bps = {total} over an empty window")]
    late = end.sample_lateness_ns if end else 0
    by_flow = _group(rec.flows, "flow")
    played = {f.name for f in topo.flows if by_flow.get(f.name) and by_flow[f.name][-1].played is not None}
    lo, hi = _counted_bits(topo, rec, by_flow, played, (start, stop), late)
    out = []
    if not lo / secs - 1 <= total <= hi / secs + 1:  # + 1: the summary rounds to whole b/s
        out.append(Violation("goodput_total", f"goodput_total_bps = {total}, the flows' counters say "
                                              f"{lo / secs:.0f}-{hi / secs:.0f} b/s over {run_s[0]:g}-{run_s[1]:g} s"))
    flows = summary.get("flows", {})
    whole = [float(f["goodput_bps"]) for f in flows.values() if f.get("window") != "lifetime"]
    if sum(whole) > total + len(whole) or (len(whole) == len(flows) and abs(sum(whole) - total) > len(whole) + 1):
        out.append(Violation("goodput_total", f"goodput_total_bps = {total}, the {len(whole)} flows measured over the "
                                              f"run window took {sum(whole):.0f} b/s "
                                              + ("(the others add to it)" if len(whole) < len(flows) else "(all flows)")))
    taken = {f.name: bits_of_first(f)(_count_at_or_before(_taken_counts(rec, by_flow, played, f), start - 1))
             for f in topo.flows}
    allowed = sum(_receiver_bits(topo, h, played, (start, stop), late, taken) for h in {f.dst for f in topo.flows})
    if total * secs > allowed:
        out.append(Violation("goodput_total", f"goodput_total_bps = {total}, more than the receivers' links and "
                                              f"playouts allowed over {run_s[0]:g}-{run_s[1]:g} s "
                                              f"({allowed / secs:.0f} b/s)"))
    return out


def _counted_bits(topo: Topology, rec: Recorder, by_flow: Mapping[str, list[Any]], played: set[str],
                  window: tuple[int, int], late: int) -> tuple[float, float]:
    """The least and the most bits the flows' applications can have taken in [start, stop] by their
    counters, each sample at the time its host read it (``Recorder.read_at``).

    A played count: the summary interpolates it between those samples, so its value at a time lies
    between the samples at or before and at or after it. A received count: the summary counts the
    packets stamped start <= recv <= stop; a count read at r holds no packet stamped after r, and
    every packet stamped ``late`` before r or earlier (a netns host takes a frame after its kernel
    stamp; ``counters_agree`` (2)); a sample at a packet's own stamp may or may not count it; a netns
    host's rows after its last sample count too."""
    lo = hi = 0.0
    start, stop = window
    for f in topo.flows:
        bits = bits_of_first(f)
        pts = _taken_counts(rec, by_flow, played, f)
        if f.name in played:
            ceiling, wait, edge = (pts[-1][1] if pts else 0), 0, 1
        else:
            ceiling, wait, edge = max([len(rec.packets.get(f.name, []))] + [c for _, c in pts[-1:]]), late, 0
        lo += max(0.0, bits(_count_at_or_before(pts, stop)) - bits(_count_after(pts, start + wait - 1, ceiling)))
        hi += bits(_count_after(pts, stop + wait - edge, ceiling)) - bits(_count_at_or_before(pts, start - 1))
    return lo, hi


def _taken_counts(rec: Recorder, by_flow: Mapping[str, list[Any]], played: set[str], f: Any) -> list[tuple[int, int]]:
    """What ``f``'s application had taken by each flows.csv sample, at the time its host read it: its played
    count where its host plays a buffer out (``played``), else its received count."""
    return [(rec.read_at(f.dst, s.t_ns), s.played or 0 if f.name in played else s.received)
            for s in by_flow.get(f.name, [])]


def _count_at_or_before(pts: list[tuple[int, int]], t: int) -> int:
    """A cumulative count's last sample at or before ``t`` (0 before the first)."""
    return max((c for at, c in pts if at <= t), default=0)


def _count_after(pts: list[tuple[int, int]], t: int, ceiling: int) -> int:
    """A cumulative count's first sample after ``t`` (``ceiling`` after the last)."""
    return min((c for at, c in pts if at > t), default=ceiling)


def _receiver_bits(topo: Topology, host: str, played: set[str], window: tuple[int, int], late: int,
                   taken: Mapping[str, float]) -> float:
    """The most bits ``host``'s applications can take in [start, stop]: its link's rate integral one
    propagation delay earlier, plus a frame per rate change and one more, what its playout buffer
    held at the start and the netns lateness at the link's rate; or, where every flow into the host
    is counted as played (``played``) out of its buffer, the playout rate over the window plus a packet at
    each end (a played count is interpolated between samples).

    A host that receives a TCP flow: from the run's start instead, less what its flows' applications had
    taken before the window (``taken``, per flow, a lower bound). A TCP receiver hands its application
    in-order records, and the records a hole held back go up together when a retransmission fills it, so
    over a window it may take more than its link carried then (fuzz seed 79: one reno flow behind 1017
    NIC-queue drops took 23.6 Mb/s over 2-4 s through a 20 Mb/s link); only the cumulative form holds, as
    ``host_capacity`` (2) checks it."""
    start, stop = window
    mine = [f for f in topo.flows if f.dst == host]
    node = topo.nodes[host]
    biggest = 8 * max(f.packet_size for f in mine)
    if node.playout_bps and all(f.name in played for f in mine):
        return node.playout_bps * (stop - start) / 1e9 + 2 * biggest
    (sw,) = topo.neighbours(host)
    allowed, changes = _rate_integral(topo, sw, host)
    link = topo.link_between(sw, host)
    held = biggest * (node.receive_buffer or 0)
    if any(f.control == "tcp" for f in mine):
        return (allowed(max(0, stop - link.delay_ns + late)) - sum(taken[f.name] for f in mine)
                + biggest * (2 + changes) + held)
    return (allowed(max(0, stop - link.delay_ns + late)) - allowed(max(0, start - link.delay_ns - late))
            + biggest * (2 + changes) + held)
