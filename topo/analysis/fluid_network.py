"""Every ALINEA law of a topology at once, against fluid queues joined as the flows join them.

Why: the loop analysis (controlplane/loop_analysis.py) takes one law at a time, its neighbours at
equilibrium. On a line they are not at start-up: the source's law reads only the first hop's
buffer, so it keeps ramping while the buffers behind fill one after another, and each hop's cut
takes a loop delay (propagation both ways, the control latency) to pass one hop back. At 1 Gb/s a
4 ms control latency is 500 packets, so the excess a line must hold during that passage can be
more than a 200-packet buffer's headroom where every single loop stays below full (docs/map.md's
x500 row; docs/background/analysis.md, "The hops together"). This model runs all the laws together, with the
controllers the runs use: the law (:class:`~controlplane.alinea.AlineaLaw`), and around it what a
switch agent and an ALINEA host add to each report (:mod:`topo.analysis.fluid_control`).

The plant, stepped every ``dt`` (an eighth of the shortest report interval, longer if a
run would take more than ``MAX_STEPS``, or 2,000 a second of the run, at least 20,000):

* an ALINEA flow's source sends at its law's rate toward the first hop (at most the link's);
* switch ``v`` admits a flow's fluid from its previous hop ``u`` while the packets it holds from
  ``u`` are below buffer ``(v, u)``'s capacity (alinea.p4's per-ingress occupancy), and drops the rest;
* what ``v`` admits joins its egress queue toward the next hop as a chunk, behind every chunk already
  there (a FIFO: a chunk leaves its flows in proportion, so fluid from several links shares one only
  when it joined at the same step; a stamped run of one link's fluid stays one chunk). A link's fluid
  appended to another's earlier run left beside the packets ahead of it: at seed 1 of
  ``hbh hol --leaves 6 --spines 3`` spine 2's first fluid left leaf 2's FIFO toward the receiver at once,
  where in the run its packets wait 90 ms behind ~120 of spine 1's and spine 3's, spine 2's law reads no
  drain, falls to its floor and stamps its queue there for a second; the model saw none of the 181
  packets lost (tests/topo/analysis/test_fluid_fifo_order.py). On BMv2's queues a
  chunk's packets are stamped when they are queued, as BMv2 stamps them (docs/howto/bmv2.md): each one
  a queue-rate gap after the stamp before it, or now if that has passed, and none leaves before
  its stamp. A stamp the link could not keep (a link slower than the queue rate) stays in the
  past, so when the link rises again the packets it holds back leave at the link's new rate,
  not the queue rate's (a receiver's link that dips and recovers delivers its backlog in a burst).
  On the shaper every chunk leaves at the rate in force. A chunk leaves no faster than the link;
* with per-destination classes (``options.classes``, docs/howto/fabric.md) a flow's fluid is of its
  destination's class (topo/net/plan.py ``host_classes``) and keeps to that class's cell of each buffer
  (each the port's capacity), priority queue and law, as alinea.p4 and the switch agent keep them: a port's
  queues share its link, the highest class served first (BMv2's strict priority), and each class's law
  takes its R_max from the port's other busy classes (:class:`~topo.analysis.fluid_control.SwitchControl`).
  With one FIFO and one law per port the model gave ``alinea-classes`` the warnings of ``alinea`` word for
  word: the shipped ``hbh hol`` fabric, seed 1, lost 13 packets, 9 in leaf 2's buffers from the spines
  unwarned (tests/topo/analysis/test_fluid_classes.py). The analysis warns per buffer: a port's cells as one;
* a receiver with a receive buffer drains it at its playout rate, one without absorbs;
* twin buffer cells, which the flows' paths cannot tell apart, each take the worst peak of their twins
  (``_Network._twins``): which of them swings deepest is the model's interleaving's choice, not theirs;
* a fluid takes the link's delay and one packet's serialization to cross it;
* the fluid is in one unit on every link, the smallest frame of the modelled flows, so that a leg hands
  the next link the same bits; a buffer's unit is a packet of the mean frame of the flows crossing its link
  at their expected shares of it in bits (``_mean_frame_bits``): its capacity is its packets in those units,
  and its law reads it, and its queue's counters, in packets (topo/analysis/fluid_control.py), of a capacity
  in packets or, where the node's buffers are in bytes of its smallest frame, in the law's frames (one run
  each: ``network_peaks``). What it holds it counts flow by flow, each flow's fluid as that flow's packets
  (``_Network._weight``): a FIFO that keeps one flow's small frames waiting while another's large ones pass
  fills the buffer with the small ones.
  Each link's fluid was in the largest frame of any flow crossing it: 576-byte frames beside a 1500-byte
  flow capped at 2 Mb/s ran as 1500-byte packets, every buffer of the line 2.6 times its bits, and the wave
  after a capacity drop came 0.1 s late, its loss after the run's end (fuzz-topo seed 23's fail-3,
  tests/topo/random_cases/frames-capacity-drop-line.yaml);
* buffer ``(v, u)`` reports as the data plane's buffers do (p4src/alinea.p4's ``check_report_due``): at an
  arrival once a report interval has passed since its last report, so its reports keep the phase of the
  arrival that started them, and a report at the first arrival after a silent step reads the buffer as
  that arrival found it (its occupancy, drops since the last report, its cumulative departures;
  engine/src/analysis/fluid_loop.rs, ``report_due``); the report reaches ``u`` after the link's delay, plus
  the control latency when ``u`` is a switch, and the rate it gives applies at once.

Left out: packets (a rate here is exact, an occupancy a real number until it is reported), the
reports' own bytes, flows other than ALINEA's. Timed link-rate events are played at their time, and
an ALINEA flow sends from its start to its stop.

The plant's steps run in the compiled engine (``hbh_engine.FluidPlant``, engine/src/analysis/fluid.rs: the
loop analysis runs before every ``hbh run``, and issue 46 bounds its cost at a tenth of the run or
2 s); this module builds it. Between its steps the engine (engine/src/analysis/fluid_loop.rs) samples the
buffers' reports, carries them to their laws and checks whether the model has settled; each law's
controller (controlplane/fluid_laws.py, compiled with the control path) answers its reports as the agents'
and hosts' controllers answer theirs, a step's reports in one call from the engine (``LawBatch.answer``:
what surrounded the answers in Python, then a call into each answer, cost more than the answers). Twin laws (of one kind and parameters, that have had the same reports: a fabric's or a
tree's symmetric ports) answer a report they share once, which changes none of the model's numbers
(the laws' answers are most of its cost). ``smallest_scale``'s runs stop at their first loss of
``LOSS_PKTS``: that answers what they ask.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Any

from controlplane.frame_size import capacity_in_frames
from runtime.fluid import FluidPlant
from topo.analysis.fluid_control import HostControl, LawBatch, SwitchControl
from topo.net.model import Flow, Topology
from topo.net.plan import expected_shares, flow_frame_bytes, host_classes, max_min_shares, port_unit_bytes
from topo.net.routes import routed_paths


def _hops(path: tuple[str, ...]) -> list[DirectedLink]:
    return list(zip(path, path[1:]))

__all__ = ["NetworkPeak", "network_peaks", "MAX_STEPS", "LOSS_PKTS", "overflows", "room_at_peak", "smallest_scale"]

DirectedLink = tuple[str, str]
#: A buffer or an egress queue of the model: its link (v, u) or (a, b), and with per-destination classes its class
#: ((v, u, c): alinea.p4 keeps a cell per (port, class), the switch a priority queue and a law per (port, class))
Cell = tuple[Any, ...]
#: The model's steps over a run at most (dt grows to keep to it): its cost before a run is about
#: this many steps of every flow's hops, and the remedy's runs (``smallest_scale``) REMEDY_STEPS
#: each. A fast loop's interval then rounds to whole steps (a few at the least), which the law is
#: told (its a = T / (C L) follows), so the loop the model runs is the one it reports on.
MAX_STEPS = 100_000
#: ... and at most this many steps per second of the run, at least MIN_STEPS: a short run (the random
#: topologies' fraction of a second to a few seconds) is not stepped at a fast loop's eighth of an
#: interval for a cost above the run's own (its interval then rounds to a step or two).
STEPS_PER_SECOND = 2_000
MIN_STEPS = 20_000
REMEDY_STEPS = 20_000
STEPS_PER_INTERVAL = 8
#: Packets the model may lose before it counts as loss: a fluid overflow by a packet or so is
#: within what the model leaves out (docs/background/analysis.md, "The hops together").
LOSS_PKTS = 3.0
NS = 1_000_000_000
#: The model stops early once two consecutive windows of at least SETTLE_MIN_S and SETTLE_INTERVALS
#: report intervals plus loop delays (of the slowest buffer) span the same envelope, within
#: PACKET_TOLERANCE packets of every buffer and RATE_TOLERANCE of every law's link rate, without a loss
#: in the later one, both after the last timed event (``settle_after``): settled, or a limit cycle that repeats its peaks.
#: What is left of the run cannot reach a higher peak than what the model has seen (docs/background/analysis.md,
#: "The hops together").
SETTLE_MIN_S = 0.25
SETTLE_INTERVALS = 40
PACKET_TOLERANCE = 0.5
RATE_TOLERANCE = 0.005


@dataclass(frozen=True)
class NetworkPeak:
    """What the model says of buffer ``(v, u)`` (``v``'s buffer fed by ``u``)."""

    buffer: DirectedLink
    capacity: int
    peak: float  # highest occupancy, fraction of the buffer (at most 1: it drops the rest)
    lost_pkts: float
    first_loss_s: float | None
    # the buffer whose peak this one takes (``_Network.twins``: its flows' paths cannot tell the two apart);
    # None: its own
    twin: DirectedLink | None = None


@dataclass
class _Buffer:
    key: Cell  # (v, u), with classes (v, u, c)
    capacity: int
    interval_steps: int
    report_steps: int  # report -> law
    drain_pps: float | None = None  # a receiver's playout
    ratio: float = 1.0  # units of fluid per packet of its flows (``_Network._ratio``)
    packets: int = 0  # its capacity in packets (``capacity`` is in units)
    index: int = -1  # in the plant (its occupancy, drops and departures are there)


@dataclass
class _Egress:
    """``a``'s egress queue toward ``b`` (its chunks, stamps and counters are in the plant)."""

    a: str
    b: str
    link_pps: float
    cls: int = 0  # with per-destination classes: its priority queue of the port
    held: list[_Leg] = field(default_factory=list)  # per slot: the leg whose packets wait here
    onward: list[_Leg] = field(default_factory=list)  # per slot: the leg they leave on
    index: int = -1  # in the plant


@dataclass
class _Leg:
    """One flow's crossing of link ``a -> b``, and what ``b`` holds of it."""

    a: str
    b: str
    steps: int  # the link's delay and one packet's serialization, in steps
    buffer: _Buffer | None = None  # b's buffer fed by a (None: a receiver without one)
    egress: _Egress | None = None  # b's egress toward the flow's next hop (None: b receives)
    slot: int = 0  # this flow's place in that egress
    active: tuple[float, float] = (0.0, float("inf"))  # a first leg: when its flow sends (start, stop)
    cap_bps: float = float("inf")  # a first leg: its flow's ceiling (r_max), which the host's pacer keeps it under
    # multicast, where b copies the flow to several children (docs/howto/multicast.md): every (egress, slot)
    # a copy joins; b holds a packet until its last copy leaves. Empty where b makes one copy
    # (egress and slot above).
    copies: list[tuple[_Egress, int]] = field(default_factory=list)
    # what a unit of this flow's fluid counts in ``buffer`` (``_Network._weight``): 1 with one frame size
    weight: float = 1.0


def _step_s(topo: Topology, intervals_us: list[int], duration_s: float, max_steps: int = MAX_STEPS) -> float:
    """An eighth of the shortest report interval: the loops' time scale. A link delay shorter than
    that is rounded to whole steps (at most 1/16 of an interval off): stepping at a 0.1 ms link's
    delay under 4 ms reports cost forty times the steps and changed nothing the reports see."""
    shortest = [iv / 1e6 for iv in intervals_us if iv > 0] or [link.delay_ns / 1e9 for link in topo.links
                                                              if link.delay_ns > 0] or [duration_s]
    steps = min(max_steps, max(MIN_STEPS, round(STEPS_PER_SECOND * duration_s)))
    return max(min(shortest) / STEPS_PER_INTERVAL, duration_s / steps)


def network_peaks(topo: Topology, duration_s: float, buffers_scale: float = 1.0,
                  max_steps: int = MAX_STEPS) -> list[NetworkPeak]:
    """Run every law carrying an ALINEA flow together for ``duration_s``; one entry per buffer.

    ``buffers_scale`` multiplies every buffer (the targets kept as fractions).

    Where a law reads its buffer in frames (``_Network.in_frames``: frames of several sizes enter the node), the
    model runs twice, its laws reading their buffers in packets and in frames, and each buffer's entry is the
    worse of the two (``_worse``): the agent reads the buffer in the frames of the smallest size its port
    expects until it has sent, which for a port sending that size is its packets, then in the mean frame it
    sends (controlplane/frame_size.py), and the model's laws run one reading each."""
    network = _Network(topo, duration_s, buffers_scale, max_steps)
    peaks = network.run()
    if not network.in_frames():
        return peaks
    framed = _Network(topo, duration_s, buffers_scale, max_steps, frames=True).run()
    return _worse(peaks, framed)


def _worse(a: list[NetworkPeak], b: list[NetworkPeak]) -> list[NetworkPeak]:
    """Per buffer, the higher peak and loss of two runs of the model, and the earlier first loss."""
    other = {p.buffer: p for p in b}
    out = []
    for p in a:
        q = other.get(p.buffer, p)
        first = [t for t in (p.first_loss_s, q.first_loss_s) if t is not None]
        out.append(NetworkPeak(p.buffer, p.capacity, max(p.peak, q.peak), max(p.lost_pkts, q.lost_pkts),
                               min(first) if first else None, (q if q.peak > p.peak else p).twin))
    return out


def room_at_peak(peak: NetworkPeak) -> float:
    """Packets the buffer still had room for at the model's peak (rounded to 1e-9, as the analysis's room)."""
    return round((1.0 - peak.peak) * peak.capacity, 9)


def overflows(peak: NetworkPeak, packets: float = 1) -> bool:
    """The model loses packets in ``peak``'s buffer: ``LOSS_PKTS`` or more of its fluid, or its peak
    leaves room for fewer than ``packets`` packets: one from each link feeding its queue, or at a receiver one link
    feeds with one frame size, its playout over the link's rate, a part of a packet (``check._single_feed_margin``);
    with none (0: the queue drains faster than its links feed it, no law of the node paces it and one frame size
    enters the node, or a switch's queue one link alone feeds with one frame size, ``check.packet_margin``), its
    peak at full.

    Why the room at the peak: the model leaves packets out, and a packet is what a buffer takes or
    drops, as the analysis's room above the target says of the settled loop (docs/background/analysis.md, "Packets:
    room for each feeding link"). A fluid that fills a buffer to within less than a packet of its
    capacity, in packets, overflows it: H1's 9-packet buffer at S1, which the model filled (1.85
    packets of fluid lost, under ``LOSS_PKTS``), lost 3 in the simulator, and at 12-27 packets, with the
    model's peak still within a packet of full, 1-2; at 36 neither (the model 1.1 packets from full)
    (tests/topo/random_cases/tiny-buffer-fabric.yaml).

    Why none for such a queue: its links hand it no packet the fluid does not already hold (each packet leaves
    before the next can arrive), so only the fluid's own fill is a loss. Not so where frames of several sizes
    enter the node (``check.packet_margin``). ``make fuzz-topo`` seed 23 (400 draws),
    traced per buffer: 15 such buffers, each of one packet, came within a packet of full in the model (peaks
    0.02-0.76 of it) and lost nothing; the warnings they carried were the model's margin, not the run's."""
    room = room_at_peak(peak)
    return peak.lost_pkts >= LOSS_PKTS or (room < packets if packets > 0 else room <= 0)


def smallest_scale(topo: Topology, duration_s: float, limit: int = 6, refine: int = 1,
                   packets: dict[DirectedLink, float] | None = None) -> float | None:
    """About the smallest factor (up to 2^limit) by which every buffer must grow for the model to
    lose nothing (no buffer ``overflows``; ``packets``: the packets each buffer (v, u) must keep room
    for, default 1): doubling until it holds, then ``refine`` bisections (one: to half the last
    doubling, within the remedy's own coarser steps); None if none up to 2^limit.

    Where twice the buffers do not hold, 2^limit is tried next: if it does not hold either, None at once.
    The search takes a larger factor to hold where a smaller one does (the doublings' first that holds is
    the answer, the bisection halves on it), so the doublings between could only fail; a run that fails
    stops at its loss, the later the larger the buffers, and the head-of-line fabric 12 x 4's remedy
    (tests/bench/analysis_cost.py, 60 s) failed at 2, 4, ..., 64 in six runs, 0.27 s of its 1.8 s.
    Where 2^limit holds, the doublings go on from 4 (one run more than before: the one at 2^limit)."""
    need = packets or {}
    framed: list[bool] = []  # some law reads its buffer in frames: each reading must hold (network_peaks)

    def holds(scale: float) -> bool:  # a run stops at its first loss of LOSS_PKTS: it does not hold
        network = _Network(topo, duration_s, scale, REMEDY_STEPS, True)
        if not framed:
            framed.append(network.in_frames())
        if any(overflows(p, need.get(p.buffer, 1)) for p in network.run()):
            return False
        return not framed[0] or not any(overflows(p, need.get(p.buffer, 1)) for p in
                                        _Network(topo, duration_s, scale, REMEDY_STEPS, True, frames=True).run())

    lo, top_held = 1.0, False
    for n in range(1, limit + 1):
        if n == 2 < limit:
            if not holds(2.0 ** limit):
                return None
            top_held = True
        if (top_held and n == limit) or holds(2.0 ** n):
            hi = 2.0 ** n
            break
        lo = 2.0 ** n
    else:
        return None
    for _ in range(refine):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


class _Network:
    #: Twin laws answer a report once (``_report``); False: every law answers its own (the tests' reference).
    share_twins = True

    def __init__(self, topo: Topology, duration_s: float, scale: float, max_steps: int = MAX_STEPS,
                 stop_at_loss: bool = False, frames: bool = False) -> None:
        self.topo = topo
        # the laws read their buffers in frames where the node's buffers are in bytes (``_law_capacity``)
        self.frames = frames
        self._units: dict[tuple[str, str], int] = {}
        # stop once a buffer has lost LOSS_PKTS (what ``smallest_scale`` asks needs no more)
        self.stop_at_loss = stop_at_loss
        self.duration_s = duration_s
        self.fixed = topo.options.queue_model == "bmv2"
        routed = routed_paths(topo)
        # a multicast group is one stream, sent by its lead branch over the group's tree
        alinea = [f for f in topo.flows if f.control == "alinea" and len(f.path) > 1 and f.sends]
        paths = [routed[f.name] for f in alinea]
        trees = [topo.tree_links(f.group) if f.group is not None else _hops(p) for f, p in zip(alinea, paths)]
        self.active = [(f.start_ns / NS, f.stop_ns / NS if f.stop_ns is not None else float("inf")) for f in alinea]
        # per-destination classes (options.classes, docs/howto/fabric.md): a flow's packets are of its destination's
        # class (a group's of none: class 0) in every buffer cell, priority queue and law on its way
        self.classes = topo.options.classes
        dst_class = host_classes(topo) if self.classes > 1 else {}
        flow_class = [0 if f.group is not None else dst_class.get(f.dst, 0) for f in alinea]
        keys = sorted({self._cell(b, a, c) for tree, c in zip(trees, flow_class) for a, b in tree if self._reports(b, a)})
        self.dt = _step_s(topo, [self._port(k).interval_us for k in keys], duration_s, max_steps)
        self.link_bps = {(a, b): topo.link_between(a, b).rate_bps for tree in trees for a, b in tree}
        # The plant's unit of fluid, on every link: the smallest frame of the model's flows. One unit for all
        # links keeps the fluid's bits as it crosses from one link to the next (the plant hands a leg's
        # amount to the next leg as it is); each buffer then holds its packets in units of its flows' mean
        # frame (``_ratio``). With one frame size, unit and frame are the same and nothing converts.
        self.modelled = _modelled_names(topo, alinea)
        sizes = [flow_frame_bytes(f) for f in alinea]
        self.unit_bits = 8 * min(sizes) if sizes else 8 * 1000
        self.bits = {key: self.unit_bits for key in self.link_bps}
        #: per link, the mean frame of the flows crossing it (bits), at their expected shares of it
        self.frame_bits = {key: _mean_frame_bits(topo, *key, self.modelled) for key in self.link_bps}
        self.buffers = {k: self._buffer(k, scale) for k in keys}
        self.egress: dict[Cell, _Egress] = {}
        self.senders: dict[DirectedLink, list[_Leg]] = {}
        self.legs: list[_Leg] = []
        for f, path, tree, active, c in zip(alinea, paths, trees, self.active, flow_class):
            frame = 8 * flow_frame_bytes(f)
            first = self._route(path, active, c, frame) if f.group is None else self._route_tree(tree, active, frame)
            first.cap_bps = f.r_max_bps or float("inf")
        self.controls: dict[Cell, HostControl | SwitchControl] = {}
        for key in keys:
            v, u = key[:2]
            if (u, v) in topo.law and self._law_key(key) not in self.controls:
                self.controls[self._law_key(key)] = self._control(u, v)
        for law_key, control in self.controls.items():  # a port's classes: each law's fair share (SwitchControl)
            if len(law_key) == 3 and isinstance(control, SwitchControl):
                control.siblings = [o for k, o in self.controls.items()
                                    if k[:2] == law_key[:2] and o is not control and isinstance(o, SwitchControl)]
        self.twins = self._twins(alinea, paths, flow_class)
        # per receiver's buffer (drained at its playout rate), the legs of the flows it receives
        self.receivers: list[tuple[_Buffer, list[_Leg]]] = []
        for leg in self.legs:
            if leg.buffer is not None and leg.buffer.drain_pps is not None:
                mine = next((legs for b, legs in self.receivers if b is leg.buffer), None)
                if mine is None:
                    self.receivers.append((leg.buffer, [leg]))
                else:
                    mine.append(leg)
        # by time only, a stable sort: events at one instant apply in the file's order, as the runs apply them
        self.events = sorted(((ev.at_ns / NS, ev.link, ev.rate_bps) for ev in topo.events
                              if ev.kind == "link_rate" and ev.link is not None and ev.rate_bps is not None),
                             key=lambda e: e[0])
        self.stopped_s: float | None = None  # the model settled here, before the end (None: it ran to the end)
        self.steps_run = 0  # steps the last run took (it may stop early: settled, or ``stop_at_loss``)
        self.sample_steps = 1

    # ---- set-up ---------------------------------------------------------------------------------
    def _cell(self, v: str, u: str, c: int) -> Cell:
        """Buffer (v, u)'s cell (or egress queue u -> v's) of class ``c``: the link alone without classes."""
        return (v, u) if self.classes == 1 else (v, u, c)

    def _law_key(self, key: Cell) -> Cell:
        """The law that buffer cell ``key`` reports to: the switch's law of its port and class (the key of its
        egress queue), or a host's one law, whichever class its buffer's cell holds (a host's pacer is one)."""
        v, u = key[:2]
        return (u, v) if len(key) == 2 or not self.topo.nodes[u].is_switch else (u, v, key[2])

    def _reports(self, v: str, u: str) -> bool:
        return (v, u) in self.topo.ports or (v, u) in self.topo.host_buffers

    def _port(self, key: Cell):  # type: ignore[no-untyped-def]
        link = key[:2]
        return self.topo.ports.get(link) or self.topo.host_buffers[link]

    def _bits(self, a: str, b: str) -> int:
        bits = self.bits.get((a, b))
        return self.unit_bits if bits is None else bits

    def _frame(self, a: str, b: str) -> float:
        """The mean frame (bits) of the modelled flows crossing a -> b (``_mean_frame_bits``)."""
        bits = self.frame_bits.get((a, b))
        return _mean_frame_bits(self.topo, a, b, self.modelled) if bits is None else bits

    def _ratio(self, u: str, v: str) -> float:
        """Units of fluid per packet of u -> v's flows (1 with one frame size)."""
        return self._frame(u, v) / self.unit_bits

    def _weight(self, a: str, b: str, frame_bits: float) -> float:
        """What a unit of a flow's fluid counts in b's buffer from a, the flow's frames ``frame_bits``: its packets in
        that buffer's unit (``_ratio(a, b)`` units a packet, a packet being the mean frame of a -> b's flows).

        Why per flow: the data plane admits packets, and a buffer holds a flow's packets for as long as they
        wait in b's egress toward the flow's next hop; where one FIFO keeps one flow's small frames waiting
        and another's large ones pass, the buffer holds the small ones, not the mean. Counted at the mean
        frame, issue 46's small-frames-shared-fifo.yaml held H2's 200 B frames (waiting in S1's FIFO
        toward H4 behind H3's) as 351 B ones, 1.75 times too few packets: the model's S1 buffer from H2 (22
        packets) peaked at 85 % and it did not warn, where the run's held 15-22 from 1.4 s and lost packets.
        With one frame size through the link the weight is 1 and nothing changes."""
        return self._frame(a, b) / frame_bits

    def _route(self, path: tuple[str, ...], active: tuple[float, float] = (0.0, float("inf")), cls: int = 0,
               frame_bits: float = 0.0) -> _Leg:
        legs = []
        for a, b in zip(path, path[1:]):
            delay_s = self.topo.link_between(a, b).delay_ns / 1e9 + self._frame(a, b) / self.link_bps[(a, b)]
            legs.append(_Leg(a, b, max(1, round(delay_s / self.dt)), self.buffers.get(self._cell(b, a, cls)),
                             weight=self._weight(a, b, frame_bits) if frame_bits else 1.0))
        for here, onward in zip(legs, legs[1:]):
            key = self._cell(onward.a, onward.b, cls)
            link = (onward.a, onward.b)
            q = self.egress.get(key) or self.egress.setdefault(key, _Egress(*link, self.link_bps[link] / self._bits(*link),
                                                                            cls))
            here.egress, here.slot = q, len(q.held)
            q.held.append(here)
            q.onward.append(onward)
        legs[0].active = active
        self.senders.setdefault((path[0], path[1]), []).append(legs[0])
        self.legs.extend(legs)
        return legs[0]

    def _route_tree(self, links: list[DirectedLink], active: tuple[float, float], frame_bits: float = 0.0) -> _Leg:
        """A multicast group's legs, one per link of its tree (its root's first): a leg into a node
        that copies the group to several children joins each child's egress (``_Leg.copies``)."""
        legs: dict[DirectedLink, _Leg] = {}
        for a, b in links:
            delay_s = self.topo.link_between(a, b).delay_ns / 1e9 + self._frame(a, b) / self.link_bps[(a, b)]
            legs[(a, b)] = _Leg(a, b, max(1, round(delay_s / self.dt)), self.buffers.get(self._cell(b, a, 0)),
                                weight=self._weight(a, b, frame_bits) if frame_bits else 1.0)
        for here in legs.values():
            onwards = [legs[(x, c)] for x, c in links if x == here.b]
            for onward in onwards:
                key = self._cell(onward.a, onward.b, 0)
                link = (onward.a, onward.b)
                q = self.egress.get(key) or self.egress.setdefault(key, _Egress(*link, self.link_pps(link)))
                if here.egress is None:
                    here.egress, here.slot = q, len(q.held)
                if len(onwards) > 1:
                    here.copies.append((q, len(q.held)))
                q.held.append(here)
                q.onward.append(onward)
        root = legs[links[0]]
        root.active = active
        self.senders.setdefault(links[0], []).append(root)
        self.legs.extend(legs.values())
        return root

    def link_pps(self, key: DirectedLink) -> float:
        return self.link_bps[key] / self._bits(*key)

    def _twins(self, alinea: list[Flow], paths: list[tuple[str, ...]], flow_class: list[int]) -> list[list[Cell]]:
        """The groups of buffer cells that the flows' paths cannot tell apart (two or more each): cells of one
        class whose flows meet, hop for hop over their whole paths, links of the same rate and delay, buffers of
        the same capacity, report interval and playout, the same laws, as many flows of their class in each cell,
        and have the same max-min fair share and stop; each flow at the same hop of its path.

        Why: the model runs one interleaving of such twins' fluid, and which twin's loop swings deepest is decided
        there by which step a chunk joins the FIFO they share downstream (and the flows' drawn starts), where a
        run decides it by its packets. In ``hbh hol --leaves 6 --spines 3`` with per-destination classes the three
        incast flows cross one spine each toward leaf 2's FIFO toward the receiver: at seed 2 the model took leaf
        2's buffer from spine 2 within 1.3 packets of full and spine 1's to 85 %, and the run lost 5 packets in
        spine 1's and none in spine 2's; at seed 1 the model lost fluid in spine 1's and 2's buffers from leaf 1
        and took spine 3's to 94 %, and the run lost 12 there (tests/topo/analysis/test_fluid_classes.py). A flow
        of another class on a twin's links (the victim's, above the incast's on spine 3) counts through the
        max-min shares: it leaves each twin's flows their share. A multicast group's cells have no twins."""
        unicast = [(f, p, c) for f, p, c in zip(alinea, paths, flow_class) if f.group is None]
        hops = {f.name: tuple(_hops(p)) for f, p, _ in unicast}
        share = max_min_shares(self.topo, hops, [f for f, _, _ in unicast])
        held: dict[Cell, list[tuple[Flow, int]]] = {}
        for f, _, c in unicast:
            for j, (a, b) in enumerate(hops[f.name]):
                held.setdefault(self._cell(b, a, c), []).append((f, j))
        groups = {f.group for f in alinea if f.group is not None}
        shared = {self._cell(b, a, 0) for f in alinea if f.group in groups for a, b in self.topo.tree_links(f.group)}

        def hop(f: Flow, c: int, a: str, b: str) -> tuple[Any, ...]:
            link, key = self.topo.link_between(a, b), self._cell(b, a, c)
            buf = self.buffers.get(key)
            kept = None if buf is None else (buf.packets, buf.interval_steps, buf.drain_pps)
            return (link.rate_bps, link.delay_ns, kept, repr(self.topo.law.get((a, b))), len(held.get(key, ())))

        def profile(f: Flow, j: int, c: int) -> tuple[Any, ...]:
            return (j, share[f.name], f.stop_ns, tuple(hop(f, c, a, b) for a, b in hops[f.name]))

        alike: dict[tuple[Any, ...], list[Cell]] = {}
        for key in self.buffers:
            if key in held and key not in shared:
                c = key[2] if len(key) == 3 else 0
                alike.setdefault((c, tuple(sorted((profile(f, j, c) for f, j in held[key]), key=repr))), []).append(key)
        return [cells for cells in alike.values() if len(cells) > 1]

    def _buffer(self, key: Cell, scale: float) -> _Buffer:
        v, u = key[:2]  # with classes each (port, class) cell has the port's capacity (topo/net/plan.py)
        port = self._port(key)
        report_s = self.topo.link_between(v, u).delay_ns / 1e9
        if self.topo.nodes[u].is_switch:
            report_s += self.topo.options.control_latency_ns / 1e9
        node = self.topo.nodes[v]
        drain = None if node.is_switch else (node.playout_bps or 0.0) / self._bits(u, v)
        ratio = self._ratio(u, v)
        return _Buffer(key, max(1, round(port.capacity * scale * ratio)), max(1, round(port.interval_us / 1e6 / self.dt)),
                       round(report_s / self.dt), drain_pps=drain, ratio=ratio, packets=max(1, round(port.capacity * scale)))

    def _law_capacity(self, buf: _Buffer) -> int:
        """Buffer ``buf``'s capacity as its law reads it once its port sends its mean frame, in units: where
        ``v``'s buffers are in bytes (``port_unit_bytes``: of the smallest frame entering ``v``, or a duration's), its packets
        in the law's frames of those bytes (``capacity_in_frames``, as controlplane/agent.py and hosts/sender.py
        read a report), else its capacity.

        Why: the data plane admits ``capacity`` packets whatever their size, and a law toward a buffer fed by
        several frame sizes reads it in bytes of the smallest, so that the ports sharing one of ``v``'s FIFOs
        share it in bits. Read in packets, S2's law toward S5's 313-packet buffer (its 1,000 B frames beside
        another link's 200 B) aimed the model at 250 packets where the run's law aims at 50 of the 63 frames
        it reads: the model's S2 never cut there, and S1 behind it never met the cuts that overflowed S2's
        38-packet buffer from S1 in the run (fuzz seed 2's merge: tests/topo/random_cases/merge-unit-capacity.yaml)."""
        v, u = buf.key[:2]
        unit = self._units.get((u, v))
        if unit is None:
            unit = self._units[(u, v)] = port_unit_bytes(self.topo, u, v)
        frames = capacity_in_frames(buf.packets, unit, round(self._frame(u, v) / 8))
        return buf.capacity if frames == buf.packets else max(1, round(frames * buf.ratio))

    def in_frames(self) -> bool:
        """Some law reads its buffer in fewer frames than its packets (``_law_capacity``)."""
        return any(self._law_capacity(buf) != buf.capacity for buf in self.buffers.values()
                   if self._law_key(buf.key) in self.controls)

    def _control(self, u: str, v: str) -> HostControl | SwitchControl:
        law = self.topo.law[(u, v)]
        ratio = self._ratio(u, v)
        if not self.topo.nodes[u].is_switch:
            return HostControl(law, round(self._frame(u, v) / 8), ratio)
        return SwitchControl(law, round(self._frame(u, v) / 8), self.fixed, ratio)

    # ---- the run --------------------------------------------------------------------------------
    def run(self) -> list[NetworkPeak]:
        """The plant (hbh_engine.FluidPlant, engine/src/analysis/fluid.rs) steps the fluid: each step the links
        deliver, the queues serve, the senders send; between its steps the buffers report, the laws
        here answer, and the model checks whether it has settled (engine/src/analysis/fluid_loop.rs: it hands a
        step's reports to ``LawBatch.answer``, which calls each law's controller, ``SwitchControl.on_report``
        or ``HostControl.on_report``)."""
        window = self._window_steps()
        last_event = max([at for at, _, _ in self.events] + [t for span in self.active for t in span
                                                              if t != float("inf")], default=0.0)
        # both windows the settling compares begin at or after it (a window that began before a flow's start
        # holds the quiet before it: ``settle_after``)
        plant = self.plant = self._plant(window, settle_after(last_event, window, self.dt))
        # The run makes millions of short-lived objects (the laws' reports and answers) and no cycles:
        # the collector's passes over them (and over every object of the process) are a twentieth of it.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run(plant)
        finally:
            if collecting:
                gc.enable()

    def _run(self, plant: FluidPlant) -> list[NetworkPeak]:
        events, dt = self.events, self.dt
        steps = int(self.duration_s / dt)
        k = 0
        while k < steps:
            while events and events[0][0] <= k * dt:
                self._link_rate(*events.pop(0)[1:])
            # the plant and the laws run on their own up to the step of the next event
            until = min(steps, _first_step(events[0][0], dt)) if events else steps
            k, why = plant.drive(k, until)
            if why:  # 1: ``stop_at_loss`` (the answer is known); 2: settled
                if why == 2:
                    self.stopped_s = k * dt
                break
        self.steps_run = min(k + 1, steps)
        cells = {b.key: NetworkPeak(b.key[:2], b.packets, peak, lost / b.ratio, first)
                 for b, (peak, lost, first) in zip(self.buffers.values(), plant.peaks())}
        for twins in self.twins:  # each takes the worst of its twins' (``_twins``)
            worst = max((cells[k] for k in twins), key=lambda p: (p.lost_pkts, p.peak))
            for k in twins:
                if cells[k] is not worst:
                    cells[k] = NetworkPeak(k[:2], cells[k].capacity, worst.peak, worst.lost_pkts, worst.first_loss_s,
                                           worst.buffer)
        peaks = list(cells.values())
        return peaks if self.classes == 1 else _per_buffer(peaks)

    def _plant(self, window: int, last_event: float) -> FluidPlant:
        """The plant of this network: its buffers, legs, queues (a slot per leg that waits in one),
        receivers and senders, in the order the model was built (the order it steps them in); and
        its loop between the steps: the laws, the buffers that report to them, the envelope's
        ``window`` and the ``last_event`` it must have passed to settle."""
        plant = FluidPlant(self.dt, self.fixed, LOSS_PKTS if self.stop_at_loss else None)
        for buf in self.buffers.values():
            buf.index = plant.add_buffer(float(buf.capacity), buf.drain_pps or 0.0)
        legs = {id(leg): plant.add_leg(leg.steps, None if leg.buffer is None else leg.buffer.index, leg.weight)
                for leg in self.legs}
        for q, below in self._queue_order():
            q.index = plant.add_queue(q.link_pps, below)
        for q in self.egress.values():
            for slot, (here, onward) in enumerate(zip(q.held, q.onward)):
                copy = next((j for j, (cq, cs) in enumerate(here.copies) if cq is q and cs == slot), None)
                plant.add_slot(q.index, slot, legs[id(here)], legs[id(onward)], copy)
        for leg in self.legs:
            plant.route_leg(legs[id(leg)], None if leg.egress is None else (leg.egress.index, leg.slot),
                            [(cq.index, cs) for cq, cs in leg.copies])
        for buf, mine in self.receivers:
            plant.add_receiver(buf.index, [legs[id(leg)] for leg in mine])
        self._sender_index = {}
        for key, every in self.senders.items():
            control = self.controls.get(key)
            i = plant.add_sender(self.link_bps[key], float(self._bits(*key)),
                                 [(legs[id(leg)], *leg.active) for leg in every], control is not None,
                                 [leg.cap_bps for leg in every])
            if control is not None:
                plant.set_sender_rate(i, control.rate_bps)
            self._sender_index[key] = i
        # per law (in the order of ``controls``, as ``LawBatch`` holds them): whether a host's, its sender's or
        # queue's index, its buffer's capacity and interval (ns), its twin class; per buffer that
        # reports: its plant index, interval and delay (steps), its law's place
        place = {key: i for i, key in enumerate(self.controls)}
        # twins: laws of one kind and the same parameters start in one class (the same state)
        kinds: dict[str, int] = {}
        # (a law with classes beside it takes its R_max from theirs: it answers its own)
        twin = [kinds.setdefault(repr((type(c), c.law.params, c.bits, c.ratio, getattr(c, "forecast", None) is None,
                                       None if self.share_twins and not getattr(c, "siblings", None) else i)),
                                 len(kinds))
                for i, c in enumerate(self.controls.values())]
        laws: list[tuple | None] = [None] * len(self.controls)  # type: ignore[type-arg]
        reporting = []
        # a switch's buffer is polled as the agents poll the data plane: on BMv2's queues, with report_polls
        polled_switches = self.fixed and self.topo.options.report_polls
        for buf in self.buffers.values():
            v, u = buf.key[:2]
            law_key = self._law_key(buf.key)
            control = self.controls.get(law_key)
            if control is None:
                continue
            host = isinstance(control, HostControl)
            target = self._sender_index[(u, v)] if host else self.egress[law_key].index
            i = place[law_key]
            capacity = self._law_capacity(buf) if self.frames else buf.capacity
            laws[i] = (host, target, capacity, int(buf.interval_steps * self.dt * NS), twin[i])
            polled = polled_switches and buf.drain_pps is None
            reporting.append((buf.index, buf.interval_steps, buf.report_steps, i, polled))
        plant.set_loop(LawBatch(list(self.controls.values())).answer, laws, reporting,
                       [c.rate_bps for c in self.controls.values()], self.sample_steps, window, last_event,
                       PACKET_TOLERANCE, self.stop_at_loss)
        self.plant = plant
        self._rate_unit()
        return plant

    def _queue_order(self) -> list[tuple[_Egress, bool]]:
        """The queues as the plant takes them, each with whether it is below the one before it: with classes
        a port's priority queues one after another, the highest class first (BMv2 serves the highest
        priority first, docs/howto/bmv2.md), each below the one before it on the port's link."""
        if self.classes == 1:
            return [(q, False) for q in self.egress.values()]
        ports: dict[DirectedLink, list[_Egress]] = {}
        for q in self.egress.values():
            ports.setdefault((q.a, q.b), []).append(q)
        return [(q, i > 0) for qs in ports.values() for i, q in enumerate(sorted(qs, key=lambda q: -q.cls))]

    def _window_steps(self) -> int:
        """Steps of one settling window: long enough to hold several periods of any loop's
        oscillation (``SETTLE_INTERVALS`` report intervals and loop delays of the slowest buffer),
        and at least ``SETTLE_MIN_S``; a multiple of the sampling step."""
        longest = max((b.interval_steps + b.report_steps for b in self.buffers.values()), default=1)
        self.sample_steps = max(1, min((b.interval_steps for b in self.buffers.values()), default=1))
        steps = max(SETTLE_INTERVALS * longest, round(SETTLE_MIN_S / self.dt))
        return max(1, steps // self.sample_steps) * self.sample_steps

    def _rate_unit(self) -> None:
        """What each law's rate is divided by in the envelope's state (every buffer's occupancy in
        ``PACKET_TOLERANCE``s, every law's rate in ``RATE_TOLERANCE``s of its link's: what must stop
        moving for the model to have nothing more to say), in the order of ``controls``: worked out
        here, when a link rate changes, not per sample."""
        self.plant.set_rate_units([RATE_TOLERANCE * self.link_bps[key[:2]] for key in self.controls])

    def _link_rate(self, link: DirectedLink, rate_bps: float) -> None:
        self._link_rate_set(link, rate_bps)
        self._rate_unit()

    def _link_rate_set(self, link: DirectedLink, rate_bps: float) -> None:
        for key in (link, link[::-1]):
            if key in self.link_bps:
                self.link_bps[key] = rate_bps
                if key in self._sender_index:
                    self.plant.set_sender_link(self._sender_index[key], rate_bps)
            for q in self.egress.values():  # with classes, each priority queue of the port
                if (q.a, q.b) == key:
                    q.link_pps = rate_bps / self._bits(*key)
                    self.plant.set_queue_link(q.index, q.link_pps)


def settle_after(last_event_s: float, window: int, dt: float) -> float:
    """The time the model's step must have passed to settle (the engine's ``last_event``): two windows after
    the last timed event, so that both windows the settling compares begin at or after it (half a step early:
    a window that begins at the event's step counts).

    Why: the engine stops where the window that ends spans the one before it and its end is past the
    ``last_event`` it was given; given the last event itself, a window that held the quiet before a flow's
    start and a few of its steps matched the quiet window before it. At seed 1 of
    tests/topo/random_cases/slow-descent-tiny-buffer-fabric.yaml f1 starts at 1.236 s and the model
    stopped at 1.243 s, settled, its source's law 7 ms into a climb of ~11 kb/s a report (under the rate
    tolerance's 100 kb/s of H1's 20 Mb/s link in those 7 ms) that ran on to 5.3 Mb/s on the 2 Mb/s path and
    overflowed S1's 5-packet buffer in the run, unwarned; at seed 3 f1 started at 1.264 s, after that window's
    end, and the model, run on, warned."""
    return last_event_s + (2 * window - 0.5) * dt


def _first_step(at_s: float, dt: float) -> int:
    """The first step ``k`` with ``at_s <= k * dt`` (when the run plays an event at ``at_s``)."""
    k = max(0, int(at_s / dt))
    while k * dt < at_s:
        k += 1
    while k > 0 and at_s <= (k - 1) * dt:
        k -= 1
    return k


def _per_buffer(peaks: list[NetworkPeak]) -> list[NetworkPeak]:
    """A port's class cells as one buffer (what the analysis warns of): the highest peak, the losses summed,
    the first loss of any."""
    out: dict[DirectedLink, NetworkPeak] = {}
    for p in peaks:
        was = out.get(p.buffer)
        if was is not None:
            firsts = [t for t in (was.first_loss_s, p.first_loss_s) if t is not None]
            p = NetworkPeak(p.buffer, p.capacity, max(was.peak, p.peak), was.lost_pkts + p.lost_pkts,
                            min(firsts) if firsts else None, (p if p.peak > was.peak else was).twin)
        out[p.buffer] = p
    return list(out.values())


def _modelled_names(topo: Topology, alinea: list[Flow]) -> set[str]:
    """The names of the modelled flows as the links know them: each of ``alinea``'s, and for a multicast group
    (modelled as its lead branch, the one stream its source sends) every branch of it. Why: a link of the tree
    carries the group under one branch's name (:func:`topo.net.plan.streams_over`: a group counted once per
    link), the branch toward the receivers beneath it, not the lead's; ``_mean_frame_bits`` counted only the
    lead's name and gave every link off the lead's path the 1,000-byte default. In fuzz seed 15's tree
    (tests/topo/random_cases/multicast-stamped-starved-receiver.yaml) the group's 200-byte frames from S1 to S3
    and on to H3 were read as 1,000-byte packets: H3's 32-packet receive buffer held 32 kB played out at
    1 Mb/s (0.26 s instead of 0.05 s), S3's law toward it turned its rate into a fifth of the packets, and the
    model's H3 peaked at 37 % while the run lost 19 packets there."""
    groups = topo.groups()
    names: set[str] = set()
    for f in alinea:
        names.add(f.name)
        if f.group is not None:
            names.update(g.name for g in groups.get(f.group, ()))
    return names


def _mean_frame_bits(topo: Topology, u: str, v: str, flows: set[str]) -> float:
    """The mean frame (bits) of the modelled ``flows`` crossing u -> v, each weighted by the packets it sends
    at its expected share of the link (:func:`topo.net.plan.expected_shares`: max-min fair in bits, a flow
    asking for less keeping it): what a buffer fed by u -> v counts per packet of them; the 1,000-byte
    default where none cross. A 200-byte flow beside a 1,000-byte one capped at 2 Mb/s on 100 Mb/s sends 49
    of its packets for each of the other's: 203 bytes a packet, not the 1,000 of the largest."""
    shares = [(flow_frame_bytes(f), bits) for f, bits in expected_shares(topo, u, v) if f.name in flows]
    sizes = {size for size, _ in shares}
    if len(sizes) <= 1:
        return 8.0 * (sizes.pop() if sizes else 1000)
    packets = sum(bits / size for size, bits in shares)
    return 8.0 * sum(bits for _, bits in shares) / packets if packets > 0 else 8.0 * max(sizes)
