"""The switch agent's core: reports and parameter changes in, queue commands out (sans-I/O).

One agent per switch. For every egress port that faces a reporting neighbour it keeps one
:class:`~controlplane.alinea.AlineaLaw`; each report the switch hands up (packet-in) carries
the occupancy of the neighbour's buffer *and* the law parameters the switch holds for that port
(``MyIngress.report_ingress``), so a parameter written by anyone takes effect at the next report.
The law's rate (bits/s) becomes that port's egress queue rate in packets per second, the unit of
BMv2's ``set_queue_rate``, at the mean size of the frames the port actually sends (at its R_max, of those
queued for it where smaller: BMv2 stamps a departure when the packet is queued): the binding reads each
regulated port's ``MyEgress.tx_routed`` counter (sent) and ``MyIngress.fwd_routed`` counter (queued;
P4Runtime) when :meth:`SwitchAgentCore.counters_due` says, and :meth:`SwitchAgentCore.on_frame_counters`
keeps both means (docs/background/alinea.md, "Bits, not packets").
With one class the port's queue rate also holds the reports this switch sends out of it: the binding reads
``MyIngress.rx`` of those ports too, and :meth:`SwitchAgentCore.on_arrival_counters` keeps the reports/s the
data plane will send there (ReportRate): one per data arrival (every frame in less the neighbour's reports,
which this agent receives), plus the polls' with ``report_polls``, at most one per report interval.

On BMv2's egress queues (``SwitchPlan.fixed_departures``, the default) a rate command reaches
the wire only after the port's queue has drained. There each regulated port starts at its law's
R_max rather than the floor (packets queued at the floor keep their 200 ms spacing whatever
comes later), keeps a :class:`~controlplane.forecast.QueueForecast` fed by the counters every
report's packet-in carries, hands the law its forecast (:class:`~controlplane.alinea.Forecast`)
and never sets a rate whose spacing, given to the packets expected before its next command
(the measured arrival rate), would stamp the queue's schedule more than ``SCHEDULE_BOUND_S``
beyond what the link needs for them and the queued ones (docs/howto/bmv2.md).

With per-destination classes (``SwitchPlan.classes`` > 1, docs/howto/fabric.md) the laws are per
(egress port, class): a report names its class, class ``c``'s law sets priority queue ``c`` of
the port (``SetQueueRate.priority``), and the reports' queue, the top one above every class
(``report_priority``; alinea.p4 recirculates the report clones onto it), is never rate-limited, so
no report budget is added. Each class's R_max is a fair share of the one the switch holds (the
link's rate): the link less what the port's other busy classes are *set* to take, each counted at
most at an equal share, so that under strict priority a class at R_max leaves the lower classes
their share (docs/howto/fabric.md: it brought the classes' p99 slowdown below per-port ALINEA's). Never
below an equal share of the busy classes nor the schedule bound's floor: an R_max cut by the other
classes' measured *drains* (tried first) reached the floor, and on BMv2's queues a floor rate stamps
the class's queued packets seconds ahead, past any later raise.

Nothing here does I/O or reads a clock: :mod:`controlplane.switch_agent` binds the core to a
P4Runtime client, a Thrift queue client and a scheduler, in either binding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.alinea import AlineaLaw, Forecast
from controlplane.forecast import QueueForecast, round_even
from controlplane.frame_size import READ_PERIOD_NS, FrameSizeWindow, capacity_in_frames
from controlplane.params import LawParams, MetadataLaw, PortParams, law_from_metadata
from controlplane.report import FRAME_BYTES as REPORT_FRAME_BYTES
from controlplane.report import Report

__all__ = ["SetQueueRate", "SetQueueDepth", "PollReport", "Command", "Route", "NextHop", "EcmpGroup", "ModelledPort",
           "RegulatedPort", "LinkCeiling", "SwitchPlan", "LawTrace", "SwitchAgentCore", "rate_to_pps", "link_pps",
           "class_priority", "report_priority", "MAX_CLASSES", "class_r_max", "queue_busy"]


#: The span of a port's counters over which the reports it sends are measured (ReportRate): a second,
#: so that a port reporting every few report intervals is read as a rate, not as 0 or 1 per read.
REPORT_WINDOW_NS: Final = 1_000_000_000


#: Classes a port can hold: BMv2 has at most 8 priority queues per port and the top one is the reports'.
MAX_CLASSES = 7


@dataclass
class SetQueueRate:
    """``pps`` for every priority queue of ``port`` (``priority`` None), or for one.

    Not frozen, and with an ``__init__`` of its own: one per rate change (a sixth of the reports),
    compiled (see ``controlplane.report.Report``)."""

    port: int
    pps: int
    priority: int | None = None

    def __init__(self, port: int, pps: int, priority: int | None = None) -> None:
        self.port, self.pps, self.priority = port, pps, priority


@dataclass(frozen=True)
class SetQueueDepth:
    port: int
    depth: int


@dataclass(frozen=True)
class PollReport:
    """Ask the switch to report ``port``'s buffer now if its interval has elapsed (a packet-out
    with ``report_poll = 1``). Reports are otherwise built only when a packet arrives on the port,
    so an upstream neighbour that sends slowly would hear of the buffer only as slowly: on BMv2's
    queues its rate commands would then come late and every packet queued in between would keep
    a slow spacing (docs/howto/bmv2.md)."""

    port: int
    data_class: int = 0  # the class of the port's buffer to report (per-destination classes)


Command = SetQueueRate | SetQueueDepth | PollReport


@dataclass(frozen=True)
class Route:
    prefix: int
    prefix_len: int
    port: int
    dst_mac: int
    src_mac: int


@dataclass(frozen=True)
class NextHop:
    """One member of an equal-cost group: out of ``port``, to ``dst_mac``, from ``src_mac``."""

    port: int
    dst_mac: int
    src_mac: int


@dataclass(frozen=True)
class EcmpGroup:
    """Equal-cost next hops shared by the prefixes routed to it (``MyIngress.ecmp_group``)."""

    group_id: int
    hops: tuple[NextHop, ...]
    prefixes: tuple[tuple[int, int], ...]  # (prefix, prefix_len) routed to this group


@dataclass(frozen=True)
class McastRoute:
    """A multicast group this switch replicates (docs/howto/multicast.md): packets to ``address`` are copied
    to every hop (``MyIngress.mcast_route``, PRE group ``group_id``, ``MyEgress.mcast_next_hop``)."""

    address: int
    group_id: int
    hops: tuple[NextHop, ...]


@dataclass(frozen=True)
class ModelledPort:
    """An ingress port whose buffer the switch models and reports upstream."""

    port: int
    params: PortParams
    port_mac: int
    upstream_mac: int
    # Traffic enters here (a flow's path): on BMv2's queues the agent polls its reports. Never an
    # idle port: its reports would go out through the port's egress queue, whose packets/s budget
    # (BMv2's rate unit) the data in the other direction shares.
    polled: bool = False


@dataclass(frozen=True)
class RegulatedPort:
    """An egress port toward a reporting neighbour: its law's initial parameters."""

    port: int
    law: LawParams
    # the mean frame size the topology expects on the link (topo.net.plan.expected_frame_bytes): without
    # frame_sizes, what converts the law's b/s into the queue's packets/s until the port's counters say
    packet_bytes: int
    # Rate-limit the port from the start (traffic is expected on it); otherwise the queue stays
    # unlimited until the first report, so that reports sent upstream through a port that
    # carries no data are not held back by a floor rate.
    limit_at_start: bool = True
    # With classes: the one class this port carries (toward a host: the host's), whose law the
    # neighbour's reports drive whatever class they name (a host reports class 0); None: every class.
    only_class: int | None = None
    # The neighbour's buffer unit (bytes): its capacity is read as capacity * unit_bytes bytes, so
    # that the ports feeding one FIFO share it in bits (controlplane/frame_size.py); 0: in packets.
    unit_bytes: int = 0
    # The data frame sizes expected through the port (topo.net.plan.frame_sizes_over): while a law sets the
    # port's queue at its R_max, the bits it has not sent go to frames of the smallest (controlplane/frame_size.py,
    # FrameSizeWindow.open_mean); empty: the mean of what it sent, packet_bytes until it has.
    frame_sizes: tuple[int, ...] = ()


@dataclass(frozen=True)
class LinkCeiling:
    """An emulated link's rate over an egress port (BMv2 with netem or :mod:`topo.netns.linkemu`:
    topo/netns/link_pacing.py): the port's queue never gets a rate above it. In bits/s, because the agent
    converts it to BMv2's packets/s at the mean frame the port sends, as it converts the law's rate."""

    port: int
    rate_bps: float
    # the mean frame expected on the port until its counters say (a report's where no data goes)
    frame_bytes: int
    # reports this port sends on a way that also carries data: their share of the link at their own size
    report_pps: float = 0.0


@dataclass(frozen=True)
class SwitchPlan:
    """Everything an agent installs on its switch, derived from the topology."""

    name: str
    node_id: int
    routes: tuple[Route, ...] = ()
    groups: tuple[EcmpGroup, ...] = ()  # multipath routes (options.ecmp); none in single-path topologies
    modelled: tuple[ModelledPort, ...] = ()
    regulated: tuple[RegulatedPort, ...] = ()
    queue_depths: tuple[tuple[int, int], ...] = ()  # (port, depth in packets)
    # False: end-to-end mode -- reports are still received and traced (measurement), but no
    # queue rate is ever set: the queues are served at the links' rates.
    actuate: bool = True
    # True: the egress queues fix each packet's departure when it is queued (BMv2, and p4switch's
    # default queue model); False: a shaper at dequeue (p4switch --queue-model shaper).
    fixed_departures: bool = True
    # On fixed departures: poll the reports of the modelled ports traffic enters by (PollReport).
    report_polls: bool = False
    # Per-destination classes (docs/howto/fabric.md): 1 = one law per port, data and reports on priority 0;
    # N > 1: class c of each port on priority queue c with a law of its own, reports on N (the top).
    classes: int = 1
    dst_classes: tuple[tuple[int, int, int], ...] = ()  # (prefix, prefix_len, class): MyIngress.dst_class
    neighbours: tuple[tuple[int, str], ...] = ()  # (port, the node on its other end): what traces name
    multicast: tuple[McastRoute, ...] = ()  # the multicast groups this switch replicates
    # BMv2 with emulated links: each such port's egress held to its link's rate (topo/netns/link_pacing.py)
    link_ceilings: tuple[LinkCeiling, ...] = ()


@dataclass
class LawTrace:
    """One report a law applied, as the agent applied it: the agent's trace and the recorder's row
    (``topo.net.record.LawRow``, one line of laws.csv; end-to-end mode records each FIFO's samples as rows too).

    The agent fills in ``node`` (its switch) and ``toward`` (the neighbour on ``port``, from its
    plan), so a binding records the trace as it comes (``on_trace=recorder.laws.append``): a
    Python frame and a second object per report were a tenth of a simulation's CPU time. Not
    frozen, though nobody changes one, and with an ``__init__`` of its own: the one ``dataclass``
    writes is Python even in the compiled module (see ``controlplane.report.Report``)."""

    t_ns: int
    node: str
    toward: str
    occupancy: int
    capacity: int
    drops: int
    rate_bps: float
    o: float
    w: float
    # on BMv2's queues: the forecast the law ran on (fraction of the buffer) and the drain (b/s)
    forecast: float | None = None
    drain_bps: float | None = None
    # ... and the newest drain it read (b/s; None: none), which the settled law follows when it has
    # clearly fallen (controlplane/alinea.py, settled_base)
    newest_bps: float | None = None
    data_class: int = 0  # per-destination classes: the class whose law this is (not in laws.csv)
    port: int = 0  # the port the report came in on (toward ``toward``)
    pps: int = 0  # the queue rate set (packets/s)
    # the law's O_max in force when it applied this report (None: no law): the target the summary
    # compares the buffer with, so that a live or timed change moves it from its time on (docs/reference/metrics.md)
    o_max: float | None = None
    # an end-to-end run's sample of an output FIFO (topo.sim.network.fifo_rows), not a report: the FIFO of
    # u toward v and v's own receive buffer are both "v<-u", and a summary must not mix them
    fifo: bool = False

    def __init__(self, t_ns: int, node: str, toward: str, occupancy: int, capacity: int, drops: int,
                 rate_bps: float, o: float, w: float, forecast: float | None = None, drain_bps: float | None = None,
                 newest_bps: float | None = None, data_class: int = 0, port: int = 0, pps: int = 0,
                 o_max: float | None = None, fifo: bool = False) -> None:
        self.t_ns, self.node, self.toward, self.occupancy, self.capacity = t_ns, node, toward, occupancy, capacity
        self.drops, self.rate_bps, self.o, self.w = drops, rate_bps, o, w
        self.forecast, self.drain_bps, self.newest_bps, self.data_class = forecast, drain_bps, newest_bps, data_class
        self.port, self.pps, self.o_max, self.fifo = port, pps, o_max, fifo

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its fields (a host's rows cross processes in netns; compiled, it has no dict)."""
        return (LawTrace, (self.t_ns, self.node, self.toward, self.occupancy, self.capacity, self.drops,
                           self.rate_bps, self.o, self.w, self.forecast, self.drain_bps, self.newest_bps,
                           self.data_class, self.port, self.pps, self.o_max, self.fifo))

    @property
    def fraction(self) -> float:
        return self.occupancy / self.capacity if self.capacity else 0.0


def rate_to_pps(rate_bps: float, packet_bytes: int) -> int:
    """Queue rate for ``rate_bps`` of ``packet_bytes`` packets; never 0 (BMv2: 0 = unlimited)."""
    pps = round_even(rate_bps / (8 * packet_bytes))  # round(), without the builtin's call (controlplane/forecast.py)
    return pps if pps > 1 else 1


def link_pps(rate_bps: float, frame_bytes: int, report_pps: float = 0.0) -> int:
    """A link's rate as a queue rate: its reports' share (``report_pps`` frames of a report's size)
    plus the rest in frames of ``frame_bytes``, rounded down; at least 1.

    Why down: the ceiling is there so that the switch never sends faster than the link carries
    (docs/howto/bmv2.md, "No hidden queue on an emulated link"). ``frame_bytes`` is the mean frame the
    port sends (:class:`~controlplane.frame_size.FrameSizeWindow`): at that mean the queue fills
    the link in bits, where the largest frame would leave smaller ones part of it unused."""
    if frame_bytes <= 0:
        raise ValueError(f"frame_bytes must be > 0, got {frame_bytes}")
    if report_pps <= 0:
        pps = int(rate_bps // (8 * frame_bytes))
        return pps if pps > 1 else 1
    left = rate_bps - report_pps * 8 * REPORT_FRAME_BYTES
    return (int(left // (8 * frame_bytes)) if left > 0 else 0) + max(1, int(report_pps))


class ReportRate:
    """The reports/s one port will send, from the data arriving on it (``MyIngress.rx`` less the neighbour's
    reports, which this agent receives as packet-ins).

    The data plane reports a port at a data arrival on it once an interval has passed since its last report,
    or at a poll (``report_polls``) once two have and the port has seen an arrival lately: at most
    ``1 / interval`` reports/s, and fewer when the neighbour sends slowly (one per arrival) and no poll comes.
    A port's queue rate holds these reports beside the data (BMv2 counts its rate in packets of any size):
    reserving the interval's rate where far fewer go out hands the unused slots to the data, above what the
    law set (docs/howto/bmv2.md). Arrivals, not the reports the port sent: those wait in the same queue, so
    a reserve read from them would be held down by the reserve itself."""

    def __init__(self, interval_pps: float) -> None:
        self.interval_pps = interval_pps
        self.samples: list[tuple[int, int]] = []  # (t_ns, data arrivals so far), the last REPORT_WINDOW_NS

    def update(self, now_ns: int, arrivals: int, poll_pps: float) -> float | None:
        """The reports/s over the last ``REPORT_WINDOW_NS``: one per arrival, plus ``poll_pps`` while data
        arrives (an upper bound: a report at an arrival puts the next poll's off), at most the interval's
        (None until the counters span that long; a counter that went back, a pipeline pushed again, starts over)."""
        if self.samples and arrivals < self.samples[-1][1]:
            self.samples.clear()
        self.samples.append((now_ns, arrivals))
        while len(self.samples) > 2 and self.samples[1][0] <= now_ns - REPORT_WINDOW_NS:
            self.samples.pop(0)
        t0, a0 = self.samples[0]
        if now_ns - t0 < REPORT_WINDOW_NS:
            return None
        rate = (arrivals - a0) * 1e9 / (now_ns - t0)
        return min(self.interval_pps, rate + poll_pps if rate > 0 else 0.0)


def report_reserve(rate_pps: float, interval_pps: float) -> float:
    """The packets/s a port's queue holds for its reports at ``rate_pps``: whole packets, rounded up, and one
    more, so that the queue is never exactly loaded by its law and its reports (a packet above the law's
    rounded rate would otherwise wait, and the reports behind it); never more than the interval's rate (the
    most the data plane sends, and what a busy port holds from the start)."""
    return min(interval_pps, float(math.ceil(rate_pps - 1e-9) + 1))


@dataclass
class _PortLaw:
    law: AlineaLaw
    packet_bytes: int
    pps: int
    rejected_params: int = 0
    forecast: QueueForecast | None = None
    link_bps: float = 0.0  # the R_max the switch holds (the link's rate), before a class's fair share
    held: MetadataLaw = field(default_factory=MetadataLaw)  # the law parameters its reports carry


Queue = tuple[int, int]  # (egress port, class): one law each


def _link_pps(pl: _PortLaw, frame_bytes: int) -> float:
    """The port's packets/s at the R_max the switch holds (the link's rate), in the queue's frames
    (``SwitchAgentCore._queue_frame``): a queue rate, like the schedule floor it bounds."""
    return (pl.link_bps or pl.law.params.r_max) / (8 * frame_bytes)


def _busy(pl: _PortLaw) -> bool:
    """A class with packets waiting in its queue of the port, or still arriving there."""
    return queue_busy(pl.forecast)


def queue_busy(forecast: QueueForecast | None) -> bool:
    """A queue (one class of a port) with packets waiting, or still arriving, as its forecast last read."""
    return forecast is not None and (forecast.queued > 0 or forecast.arrival_pps > 0)


def class_r_max(law: LawParams, busy_rates: list[float], floor_bps: float) -> LawParams:
    """With classes: R_max less what the port's other busy classes are set to take (``busy_rates``),
    each counted at most at an equal share, so that under strict priority a class at R_max leaves the
    classes below it their share. Set rates, not drains (a drain reaches the floor when the others fill
    the link), and never below an equal share of the busy classes, ``floor_bps`` (the schedule bound's
    floor) nor the law's floor (docs/howto/fabric.md). One rule for the agents and the loop analysis's
    model of them (topo/analysis/fluid_control.py)."""
    share = law.r_max / (len(busy_rates) + 1)
    cap = max(share, law.r_max - sum(min(rate, share) for rate in busy_rates), floor_bps)
    return law if cap >= law.r_max else law.with_changes(r_max=max(cap, law.r_floor))


def _trace_forecast(forecast: Forecast | None) -> tuple[float | None, float | None, float | None]:
    """A trace's forecast occupancy, drain and newest drain (None without a forecast; no newest drain
    when it read none)."""
    if forecast is None:
        return None, None, None
    return forecast.occupancy, forecast.drain_bps, forecast.newest_bps or None


def class_priority(data_class: int, classes: int) -> int | None:
    """The egress priority queue of a class: None (every queue of the port) with one class."""
    return None if classes == 1 else data_class


def report_priority(classes: int) -> int:
    """The reports' egress priority queue: above every class's, so that strict priority serves a
    report before any class's data (0, shared with the data, with one class)."""
    return 0 if classes == 1 else classes


@dataclass
class SwitchAgentCore:
    plan: SwitchPlan
    on_trace: Callable[[LawTrace], None] | None = None
    ports: dict[Queue, _PortLaw] = field(default_factory=dict)
    # Reports/s this switch sends out of each port (about the buffer that port's traffic enters):
    # they share the port's egress queue, whose rate BMv2 counts in packets of any size.
    report_pps: dict[int, float] = field(default_factory=dict)
    report_rates: dict[int, ReportRate] = field(default_factory=dict)  # port -> its reports (on_arrival_counters)
    reports_in: dict[int, int] = field(default_factory=dict)  # port -> reports received on it (in MyIngress.rx)
    last_tick_ns: int = -1
    tick_period_ns: int = 0  # the binding's tick, measured: a report poll's period
    only_class: dict[int, int] = field(default_factory=dict)  # port -> RegulatedPort.only_class
    towards: dict[int, str] = field(default_factory=dict)  # port -> the neighbour on it (SwitchPlan.neighbours)
    # The mean size of the frames each regulated port sends, from its counters (on_frame_counters),
    # and the unit of its neighbour's buffer (RegulatedPort.unit_bytes; absent: packets).
    frame_sizes: dict[int, FrameSizeWindow] = field(default_factory=dict)
    # The mean size of the frames queued for each of those ports (MyIngress.fwd_routed, on_frame_counters): the
    # frames its queue stamps departures for at the rate set now (_queue_frame, at the R_max)
    queued_sizes: dict[int, FrameSizeWindow] = field(default_factory=dict)
    unit_bytes: dict[int, int] = field(default_factory=dict)
    next_read_ns: int = 0
    read_ns: int = 0  # when counters_due last named the ports: the time of the counters' read
    # BMv2 with emulated links (SwitchPlan.link_ceilings): port -> the link's rate now (b/s, lowered
    # while its emulator drains), its reports/s, and the queue rate sent to a port no law limits
    ceiling_bps: dict[int, float] = field(default_factory=dict)
    ceiling_reports: dict[int, float] = field(default_factory=dict)
    ceiling_sent: dict[int, int] = field(default_factory=dict)

    def _toward(self, port: int) -> str:
        """The neighbour on ``port`` (the port's number as text if the plan names none)."""
        name = self.towards.get(port)
        if name is None:
            name = self.towards[port] = dict(self.plan.neighbours).get(port, str(port))
        return name

    def start(self) -> list[Command]:
        """The commands that set up the queues: depths, then each regulated port's initial rate."""
        cmds: list[Command] = [SetQueueDepth(p, d) for p, d in self.plan.queue_depths]
        if self.plan.classes == 1:  # with classes the reports have a queue of their own
            self.report_pps = {m.port: 1e6 / m.params.interval_us for m in self.plan.modelled
                               if m.polled and m.params.interval_us > 0}
            self.report_rates = {p: ReportRate(pps) for p, pps in self.report_pps.items()}
        self.only_class = {r.port: r.only_class for r in self.plan.regulated if r.only_class is not None}
        self.frame_sizes = {r.port: FrameSizeWindow(r.packet_bytes, r.frame_sizes) for r in self.plan.regulated}
        self.queued_sizes = {r.port: FrameSizeWindow(r.packet_bytes, r.frame_sizes) for r in self.plan.regulated}
        self.unit_bytes = {r.port: r.unit_bytes for r in self.plan.regulated if r.unit_bytes > 0}
        for lc in self.plan.link_ceilings:
            self.ceiling_bps[lc.port] = lc.rate_bps
            self.ceiling_reports[lc.port] = lc.report_pps
            if lc.port not in self.frame_sizes:
                self.frame_sizes[lc.port] = FrameSizeWindow(lc.frame_bytes)
                self.queued_sizes[lc.port] = FrameSizeWindow(lc.frame_bytes)
        for reg in self.plan.regulated:
            for c in range(self.plan.classes) if reg.only_class is None else (reg.only_class,):
                law = AlineaLaw(reg.law, reg.law.r_max if self.plan.fixed_departures else None)
                pl = self.ports[(reg.port, c)] = _PortLaw(law, self.frame_sizes[reg.port].mean, 0)
                if reg.limit_at_start and self.plan.actuate:
                    pl.pps = self._queue_pps(reg.port, law.rate, self._queue_frame(reg.port, pl))
                    cmds.append(SetQueueRate(reg.port, pl.pps, class_priority(c, self.plan.classes)))
        for lc in self.plan.link_ceilings:
            cmds += self._ceiling_only(lc.port)
        return cmds

    def _queue_pps(self, port: int, rate_bps: float, packet_bytes: int) -> int:
        """The queue rate that gives the data ``rate_bps`` beside this switch's own reports, never above
        the port's link (:class:`LinkCeiling`): the one place a rate in bits becomes BMv2's packets/s,
        both at ``packet_bytes``, the mean frame the port sends."""
        pps = rate_to_pps(rate_bps, packet_bytes) + round(self.report_pps.get(port, 0.0))
        link_bps = self.ceiling_bps.get(port)
        if link_bps is None:
            return pps
        return min(pps, link_pps(link_bps, packet_bytes, self.ceiling_reports.get(port, 0.0)))

    def _queue_frame(self, port: int, pl: _PortLaw) -> int:
        """The frame every queue rate of the port is in: what turns a law's b/s into BMv2's packets/s, and a
        packets/s the queue must hold (the schedule bound's floor, the link's packets/s) back into b/s.

        While the law is below its R_max it holds the port, and the port sends the frames it sent:
        ``_sent_frame``, the frame its drain is read in, so that a law that sets its rate to the drain in bits
        sets its queue to the drain in packets (the mean while the drain is no faster than the reads saw the
        port send). At its R_max (nothing downstream holds it back), ``FrameSizeWindow.open_frame`` at the rate
        its queues may send now (``_sendable_bps``): the bits of that rate the port did not send count as frames
        of flows it has not seen, so that a flow that starts is not sent slower than its bits until a read sees
        it; and never above the mean frame queued for the port (``_queued_mean``, ``MyIngress.fwd_routed``):
        BMv2 stamps a packet's departure when it is queued, at the rate set then, so a backlog of small frames
        queued behind large ones the port sent is stamped at the small frames' packets/s, the law's bits, not
        at the sent mean's (issue 46: mix-dip-fifo-wait.yaml lost 127 at seed 3 at the sent mean, none now).
        Not the open frame below the R_max: there the bits the port did not send are not frames it sends, and a
        backlog of the frames it does send would leave at several times the law's bits (the open frame at any
        rate, tried for issue 46: stamped-mixed-backlog.yaml lost 716 / 139 / 19 at seeds 1-3, unwarned at 1 and
        3, where it loses 0 / 0 / 0). Nor the queued frame below the R_max: the BMv2 forecast counts this queue's
        packets/s against the neighbour's drain in packets of the frames the port sent, and reads the small
        frames' higher packets/s as a fill (stamped-mixed-backlog.yaml's goodput fell from 60 / 44 / 48 to
        34 / 9 / 13 Mb/s at seeds 1-3, lagging-mean-brake-tree.yaml lost 20 unwarned at seed 1). Without a
        window: ``packet_bytes``."""
        window = self.frame_sizes.get(port)
        if window is None:
            return pl.packet_bytes
        if pl.law.rate < pl.law.params.r_max:
            return self._sent_frame(port, pl)
        return self._within_queued(port, window.open_frame(self._sendable_bps(port)))

    def _sent_frame(self, port: int, pl: _PortLaw) -> int:
        """The frame every reading of what the port sent is in: the neighbour's buffer (its capacity in this port's
        frames, the packets in it), the drain of this port's packets from it and the drains derived from that, all
        read in packets and turned into b/s here: the packets that drained are frames of the window's mean as
        many per second as the port's reads saw it send, the rest frames of flows the reads have not seen
        (``FrameSizeWindow.sent_frame`` at the drain). Why not the mean alone: the drain's packets left the port
        at the rate its queue was set to, and at the R_max that is ``_queue_frame``'s open frame, counting flows
        not seen yet; at the mean of what the reads saw (S6 toward S3 in lagging-mean-brake-tree.yaml: f3's
        1500 B frames until the next read, while f2's 200 B frames joined at 30,000/s), S3's drain of S6's packets
        read 130-330 Mb/s, above S6's 100 Mb/s R_max, and S6's law never cut while S3's 79-packet buffer
        overflowed. Without a forecast (no drain) or a window: ``packet_bytes``, the mean."""
        window = self.frame_sizes.get(port)
        if window is None or pl.forecast is None:
            return pl.packet_bytes
        return window.sent_frame(pl.forecast.drain_pps)

    def _held_frame(self, port: int, pl: _PortLaw, frame: int) -> int:
        """The frame of the packets the neighbour's buffer holds, which a buffer read in bytes is counted in (its
        capacity in them, so that the occupancy is read as a share of its bytes): the port's newest departures, at the
        rate it sent them over the newest report gap (``FrameSizeWindow.sent_frame`` at ``QueueForecast.sent_pps``),
        never above ``frame``, the frame of the drain's packets (a buffer gains only while it is fed faster than it
        drains: its packets came at no fewer packets/s than the drain's). With one frame size, that size. The drains
        stay in ``frame``, the frame the queue turns b/s back into packets/s at; the start-up brake's room is the
        buffer's bytes over its approach time, as before (its capacity in these frames at their bits:
        ``QueueForecast.law_forecast``'s ``held_bits``). Not for a buffer in packets (no unit): its room is packets.

        Why not the drain's frame: the drain's window lags a flow of small frames that joins, and the buffer fills with
        them first. lagging-mean-brake-tree.yaml at seed 1: f2's 200 B frames joined f3's 1500 B ones at S6 at
        ~30,000/s; read in the drain's frame (~1,100 B), S3's buffer from S6 (79 packets of 200 B) held 26 packets of
        14 frames, 186 %, and S6's law cut from 21 Mb/s to its 2 Mb/s floor, a cut BMv2's queue stamped for ~80 ms
        while S3 starved; read in the frame of what S6 sent (~410 B), 26 of 39, and S6 cut 100 -> 85 -> 44 Mb/s."""
        window = self.frame_sizes.get(port)
        if window is None or pl.forecast is None:
            return frame
        held = window.sent_frame(pl.forecast.sent_pps)
        return held if held < frame else frame

    def _ceiling_only(self, port: int) -> list[Command]:
        """A port with a link ceiling and no law limiting it yet: every queue of it at the link's rate."""
        if port not in self.ceiling_bps or any(p == port and pl.pps for (p, _), pl in self.ports.items()):
            return []
        frame = self._within_queued(port, self.frame_sizes[port].mean)  # as a law at its R_max: _queue_frame
        pps = link_pps(self.ceiling_bps[port], frame, self.ceiling_reports.get(port, 0.0))
        if self.ceiling_sent.get(port) == pps:
            return []
        self.ceiling_sent[port] = pps
        return [SetQueueRate(port, pps)]

    def set_link_rate(self, port: int, rate_bps: float) -> list[Command]:
        """The port's link now carries ``rate_bps`` (a timed ``link_rate`` event, or the ceiling lowered
        while the link's emulator drains): every queue of the port resent within it."""
        if port not in self.ceiling_bps:
            raise ValueError(f"{self.plan.name}: port {port} has no emulated link (SwitchPlan.link_ceilings)")
        if rate_bps <= 0:
            raise ValueError(f"{self.plan.name} port {port}: a link rate must be > 0 b/s, got {rate_bps}")
        self.ceiling_bps[port] = rate_bps
        return self._requeue(port)

    def _requeue(self, port: int) -> list[Command]:
        """Every queue of ``port`` whose rate changed (its law's, within the link's ceiling)."""
        cmds: list[Command] = []
        for (p, c), pl in self.ports.items():
            if p == port and pl.pps and self.plan.actuate:  # a port not limited yet stays so until its first report
                pps = self._queue_pps(p, pl.law.rate, self._queue_frame(p, pl))
                if pps != pl.pps:
                    pl.pps = pps
                    cmds.append(SetQueueRate(p, pps, class_priority(c, self.plan.classes)))
        return cmds + self._ceiling_only(port)

    def on_report(self, now_ns: int, port: int, metadata: dict[str, int], report: Report) -> list[Command]:
        """A report arrived on ``port`` with the packet-in ``metadata`` (law parameters)."""
        if not self.plan.actuate:  # end-to-end mode: a measurement, no law
            if self.on_trace is not None:
                self.on_trace(LawTrace(now_ns, self.plan.name, self._toward(port), report.occupancy, report.capacity,
                                        report.drops, 0.0, 0.0, 0.0, port=port))
            return []
        self.reports_in[port] = self.reports_in.get(port, 0) + 1
        data_class = report.data_class
        key = (port, self.only_class.get(port, data_class if data_class < self.plan.classes else 0))
        pl = self.ports.get(key)
        if pl is None:  # a port the plan did not regulate: regulate it with what the switch holds
            window = self.frame_sizes.get(port)
            pl = self.ports[key] = _PortLaw(AlineaLaw(law_from_metadata(metadata)),
                                            window.mean if window is not None else self._default_bytes(), 0)
        pkts = self._forecast_pkts(now_ns, port, pl, metadata, report)
        frame = self._sent_frame(port, pl)
        # the buffer in this port's frames: its capacity, or fewer when it is read in bytes (frame_size.py), then in
        # the frames it holds (_held_frame)
        unit = self.unit_bytes.get(port, 0)
        held = self._held_frame(port, pl, frame) if unit else frame
        capacity = capacity_in_frames(report.capacity, unit, held)
        forecast = (None if pkts is None or pl.forecast is None
                    else pl.forecast.law_forecast(pkts, capacity, 8 * frame, 8 * held))
        try:
            params = pl.held(metadata)
            pl.law.set_params(self._fair_share(key, pl, params))
            pl.link_bps = params.r_max
        except ValueError:
            pl.rejected_params += 1  # the switch holds something invalid: keep the last good parameters
        pl.law.on_report(report.occupancy / capacity if capacity else 0.0, report.drops > 0, now_ns,
                         report.interval_us * 1000, 1 / capacity if capacity else 0.0, forecast)
        cmds = self._actuate(key, pl)
        if self.on_trace is not None:  # the rate applied, after the BMv2 schedule bound of _actuate
            occupancy, drain_bps, newest_bps = _trace_forecast(forecast)
            self.on_trace(LawTrace(now_ns, self.plan.name, self._toward(port), report.occupancy, capacity,
                                   report.drops, pl.law.rate, pl.law.o, pl.law.w, occupancy, drain_bps, newest_bps,
                                   key[1], port, pl.pps, pl.law.params.o_max))
        return cmds

    def _fair_share(self, key: Queue, pl: _PortLaw, law: LawParams) -> LawParams:
        """With classes: R_max cut by what the port's other busy classes are set to take (``class_r_max``)."""
        if self.plan.classes == 1 or pl.forecast is None:
            return law
        port, c = key
        busy = [o.law.rate for (p, k), o in self.ports.items() if p == port and k != c and _busy(o)]
        if not busy:
            return law
        frame = self._queue_frame(port, pl)
        return class_r_max(law, busy, 8 * frame * (self._schedule_floor_pps(pl, frame) or 0.0))

    def _schedule_floor_pps(self, pl: _PortLaw, frame_bytes: int) -> float | None:
        """The lowest queue rate that keeps the BMv2 schedule within its bound (None: already past it), with
        the queue's frames ``frame_bytes``."""
        assert pl.forecast is not None
        return pl.forecast.floor_pps(_link_pps(pl, frame_bytes))

    def on_tick(self, now_ns: int) -> list[Command]:
        """Called periodically: lets laws whose reports stopped decay their rate, and, on BMv2's
        queues with ``report_polls``, polls every modelled port that traffic enters by (the data
        plane reports it only if two intervals have passed since its last report).

        Not a law with a forecast (BMv2's queues): there a decay is stamped on every packet queued
        during the silence, and the schedule bound cannot hold it, since the queue's counters come
        only with reports. Such a law holds its rate until the next report; silence there is most
        often a report queued behind the neighbour's own stamped schedule, or an idle port
        (docs/howto/bmv2.md, "Silence on BMv2's queues")."""
        cmds: list[Command] = []
        if self.last_tick_ns >= 0:
            self.tick_period_ns = now_ns - self.last_tick_ns
        self.last_tick_ns = now_ns
        if self.plan.fixed_departures and self.plan.report_polls:
            cmds.extend(PollReport(m.port, c) for m in self.plan.modelled if m.polled for c in range(self.plan.classes))
        for key, pl in self.ports.items():
            if self.plan.actuate and pl.forecast is None and pl.law.tick(now_ns):
                cmds.extend(self._actuate(key, pl))
        return cmds

    def _forecast_pkts(self, now_ns: int, port: int, pl: _PortLaw, metadata: dict[str, int],
                       report: Report) -> float | None:
        """The forecast occupancy (packets) on BMv2's queues, the report fed to the port's forecast (None on a
        shaper, without the counters, or for a buffer of no capacity)."""
        if not self.plan.fixed_departures or "fwd_pkts" not in metadata or not report.capacity:
            return None
        if pl.forecast is None:
            pl.forecast = QueueForecast()
        # On the reporter's clock: reports are built at a steady pace there, while the control
        # channel delivers them with jitter (a bunch after a slow call), which would make the
        # drain over a short window as noisy as the jitter (seen with a 60 ms p99 latency).
        t_ns = report.timestamp_us * 1000 if report.timestamp_us else now_ns
        data_pps = pl.pps - round(self.report_pps.get(port, 0.0))
        return pl.forecast.update(t_ns, report.occupancy, metadata["fwd_pkts"], metadata["deq_pkts"],
                                  data_pps if data_pps > 0 else 0, now_ns, report.drained,
                                  report.drained_ts_us * 1000)

    def counters_due(self, now_ns: int) -> tuple[int, ...]:
        """The regulated ports whose ``MyEgress.tx_routed`` counters the binding is to read now and hand
        to :meth:`on_frame_counters`: every ``READ_PERIOD_NS`` (none in end-to-end mode: no queue rate)."""
        if (not self.plan.actuate and not self.ceiling_bps) or not self.frame_sizes or now_ns < self.next_read_ns:
            return ()
        self.read_ns = now_ns
        self.next_read_ns = now_ns + READ_PERIOD_NS
        return tuple(self.frame_sizes)

    def on_frame_counters(self, counts: list[tuple[int, int, int]],
                          queued: list[tuple[int, int, int]] | None = None) -> list[Command]:
        """(port, packets, bytes) of each port's routed frames sent so far, and of those queued for it so far
        (``queued``; None: the switch has no such counter): the mean size of what each port sends becomes its laws'
        frame size, the mean of what is queued for it the frame a law at its R_max converts at where smaller
        (``_queue_frame``), and the queue rates follow them (the law's b/s unchanged)."""
        cmds: list[Command] = []
        entered = {port: (packets, nbytes) for port, packets, nbytes in queued or ()}
        for port, packets, nbytes in counts:
            window = self.frame_sizes.get(port)
            if window is None:
                continue
            before = window.mean, window.open_mean, self._queued_mean(port)
            window.update(packets, nbytes, self.read_ns, self._sendable_bps(port))
            if port in entered and port in self.queued_sizes:
                self.queued_sizes[port].update(*entered[port], self.read_ns)
            if (window.mean, window.open_mean, self._queued_mean(port)) == before:
                continue
            for (p, _), pl in self.ports.items():
                if p == port:
                    pl.packet_bytes = window.mean
            cmds += self._requeue(port)
        return cmds

    def _within_queued(self, port: int, frame: int) -> int:
        """``frame``, or the mean frame queued for the port where that is smaller: the frames its queue stamps
        departures for at the rate set now (a law at its R_max, a link ceiling)."""
        queued = self._queued_mean(port)
        return queued if 0 < queued < frame else frame

    def _queued_mean(self, port: int) -> int:
        """The mean frame queued for the port over the last reads of ``MyIngress.fwd_routed``, the frames a rate set
        now is stamped on (0: not read, as on a switch whose program has no such counter, an older alinea.p4)."""
        queued = self.queued_sizes.get(port)
        return queued.mean if queued is not None and queued.has_read else 0

    def _sendable_bps(self, port: int) -> float:
        """The bits/s the port's queues may send now: its laws' rates (those limiting it; with classes, their
        sum), within the R_max the switch holds (the link's rate) and its link's ceiling."""
        rate = link = 0.0
        for (p, _), pl in self.ports.items():
            if p == port and pl.pps:
                rate += pl.law.rate
                link = max(link, pl.link_bps or pl.law.params.r_max)
        ceiling = self.ceiling_bps.get(port)
        return min(rate, link) if ceiling is None else min(rate, link, ceiling)

    def arrival_ports(self) -> tuple[int, ...]:
        """The ports whose ``MyIngress.rx`` counters the binding reads with the frame counters (whenever
        :meth:`counters_due` names ports) and hands to :meth:`on_arrival_counters`."""
        return tuple(self.report_rates) if self.plan.actuate else ()

    def _poll_pps(self, interval_pps: float) -> float:
        """Reports/s the polls add on a port with traffic: a poll reports once two intervals have passed
        since the last report, at the tick's granularity (0 without ``report_polls``)."""
        if not (self.plan.fixed_departures and self.plan.report_polls) or self.tick_period_ns <= 0:
            return 0.0
        two_ns = 2e9 / interval_pps
        return 1e9 / (math.ceil(two_ns / self.tick_period_ns - 1e-9) * self.tick_period_ns)

    def on_arrival_counters(self, now_ns: int, counts: list[tuple[int, int]]) -> list[Command]:
        """(port, frames received so far): each port's queue holds the reports its data arrivals (and polls)
        make over the last ``REPORT_WINDOW_NS`` (ReportRate, report_reserve), and its rates follow."""
        cmds: list[Command] = []
        for port, frames in counts:
            rr = self.report_rates.get(port)
            if rr is None:
                continue
            rate = rr.update(now_ns, frames - self.reports_in.get(port, 0), self._poll_pps(rr.interval_pps))
            if rate is None:
                continue
            reserve = report_reserve(rate, rr.interval_pps)
            if reserve != self.report_pps.get(port):
                self.report_pps[port] = reserve
                cmds += self._requeue(port)
        return cmds

    def _actuate(self, key: Queue, pl: _PortLaw) -> list[Command]:
        port, c = key
        if pl.forecast is not None:  # BMv2: a cut must not stamp a far-future schedule
            # a queue rate (packets/s), held in b/s at the frame _queue_pps turns the rate back into packets/s at
            frame = self._queue_frame(port, pl)
            pl.law.hold_at_least(8 * frame * pl.forecast.hold_pps(_link_pps(pl, frame)))
        pps = self._queue_pps(port, pl.law.rate, self._queue_frame(port, pl))
        if pps == pl.pps or not self.plan.actuate:
            return []
        pl.pps = pps
        return [SetQueueRate(port, pps, class_priority(c, self.plan.classes))]

    def _default_bytes(self) -> int:
        return self.plan.regulated[0].packet_bytes if self.plan.regulated else 1000
