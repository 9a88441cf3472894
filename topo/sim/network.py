"""The simulator backend: a whole topology in virtual time, in one process.

Every switch is a p4switch running ``p4src/alinea.p4``; hosts, switch agents and links share
one :class:`~runtime.sched.VirtualScheduler`. Each agent reaches its switch's P4Runtime core
and Thrift handler in-process through the same client classes the netns backend uses over the
network (:class:`~controlplane.p4runtime_client.InProcessController`,
:func:`controlplane.queues.direct`), with values instead of serialized messages (packet-ins and
queue calls: the same checks and errors, no encoding per report). Everything is deterministic: the only randomness is
one ``random.Random(seed)`` (report loss, start jitter), drawn in event order.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from controlplane import params_io
from controlplane.p4runtime_client import InProcessController
from controlplane.queues import direct
from controlplane.report import decode as decode_report
from controlplane.report import is_report
from controlplane.switch_agent import SwitchAgent
from hosts.cvihis import CvihisParams, Feedback, FeedbackError, decode_feedback, encode_feedback
from hosts.cvihis.wire import FEEDBACK_BYTES
from hosts.cvihis_host import FEEDBACK_FRAME_BYTES, CvihisSink, CvihisSource
from hosts.datagram import (
    DATA_PORT,
    HEADER_BYTES,
    KIND_FEEDBACK,
    KIND_GCC_REPORT,
    KIND_LEDBAT_ACK,
    KIND_PGMCC_FEEDBACK,
    KIND_TFRC_REPORT,
    OFFSET,
    DatagramError,
    FrameTemplate,
    parse,
)
from hosts.e2e_host import GccSink, GccSource, LedbatSink, LedbatSource, TfrcSink, TfrcSource
from hosts.gcc import GccParams
from hosts.pgmcc import FEEDBACK_PORT as PGMCC_FEEDBACK_PORT
from hosts.receiver import FlowRecord, HostReceiver, HostReporter, PlayoutBuffer
from hosts.sender import AlineaHostSender, FixedSender, Pacer, SenderFlow
from hosts.tcp import MODELLED_CC, MSS
from hosts.tcp.wire import data_frame_bytes
from p4switch.device import CompiledProgram, compile_file
from p4switch.switch import Switch, SwitchOptions
from p4switch.thrift_server import in_process_handler
from runtime.link import InMemoryLink, LinkModel
from runtime.sched import DelayedCalls, VirtualScheduler
from topo.net.invariants import (
    EndState,
    FlowEnd,
    Place,
    QueueEnd,
    flow_places,
    max_frame_bytes,
    place_egress,
    place_in,
    place_link,
    place_rx,
    place_tx,
)
from topo.net.model import CVIHIS_CONTROLS, Event, Flow, Link, Node, Topology
from topo.net.plan import (
    expected_frame_bytes,
    neighbour_mac,
    network_mode,
    port_unit_bytes,
    priority_queues,
    switch_plan,
)
from topo.net.record import BufferSample, DropSample, FlowSample, LawRow, LinkSample, Recorder
from topo.net.starts import START_JITTER_NS, drawn_starts
from topo.sim.control_latency import ControlLatency
from topo.sim.pgmcc import PGMCC_KINDS, SimPgmccFlows
from topo.sim.tcp import TCP_KINDS, SimTcpFlows

__all__ = ["reorder_hook", "SimNetwork", "PROGRAM", "START_JITTER_NS", "SAMPLE_NS", "DROP_SAMPLE_NS", "SimUnsupported", "sim_refusal"]

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "alinea.p4"
SAMPLE_NS = 100_000_000  # flows, buffers, links sampled every 100 ms
DROP_SAMPLE_NS = 1_000_000_000  # drop counters read over P4Runtime every second
AGENT_TICK_NS = 10_000_000
HOST_TX_QUEUE = 1000  # packets a host's NIC queue holds (Linux's default txqueuelen)
Paced = TypeVar("Paced", AlineaHostSender, FixedSender)
DROP_COUNTERS = ("drop_parser_error", "drop_bad_checksum", "drop_unsupported", "drop_spoofed_report",
                 "drop_no_route", "drop_ttl_expired", "drop_overflow", "drop_nak_repeat")

_program_cache: dict[str, CompiledProgram] = {}


def alinea_program() -> CompiledProgram:
    key = str(PROGRAM)
    if key not in _program_cache:
        _program_cache[key] = compile_file(PROGRAM)
    return _program_cache[key]


def read_drop_counters(client: Any, ports: list[int]) -> list[tuple[str, int, int]]:
    """(reason, port, packets) of every non-zero drop counter cell of ``ports``, in one Read."""
    cells = [(f"MyIngress.{r}", p) for r in DROP_COUNTERS for p in ports]
    return [(name.removeprefix("MyIngress.drop_"), port, packets)
            for (name, port), (packets, _) in zip(cells, client.read_counters(cells)) if packets]


def fifo_rows(topo: Topology, switch: str, t_ns: int, queues: dict[int, tuple[int, int, int]]) -> list[LawRow]:
    """End-to-end mode's occupancy rows: each output FIFO of ``switch`` as the buffer of its link.

    ``queues`` maps a port to (packets queued, depth limit, tail drops so far). The FIFO of u toward
    v is recorded as buffer ``v<-u``: the buffer of link u->v, which hop-by-hop mode models at v's
    ingress and end-to-end mode keeps at u's egress (docs/howto/compare.md)."""
    rows = []
    for v in topo.neighbours(switch):
        occ, limit, drops = queues.get(topo.port(switch, v), (0, 0, 0))
        rows.append(LawRow(t_ns, switch, v, occ, limit, drops, 0.0, 0.0, 0.0, fifo=True))
    return rows


#: The end-to-end controls bound through hosts/e2e_host.py, and their feedback's (datagram kind, bytes).
E2E_CONTROLS = ("tfrc", "ledbat", "gcc")
E2E_FEEDBACK = {"tfrc": (KIND_TFRC_REPORT, TfrcSource.feedback_bytes),
                "ledbat": (KIND_LEDBAT_ACK, LedbatSource.feedback_bytes),
                "gcc": (KIND_GCC_REPORT, GccSource.feedback_bytes)}


def cvihis_params(topo: Topology, f: Flow) -> CvihisParams:
    """A CVIHIS flow's parameters: the defaults, its packet size, at most its first link's rate
    (or its r_max)."""
    cap = min(f.r_max_bps or math.inf, topo.link_between(f.path[0], f.path[1]).rate_bps)
    base = f.cvihis.apply(CvihisParams())
    return dataclasses.replace(base, packet_size_bytes=f.packet_size, max_rate_bps=cap,
                               initial_rate_bps=min(base.initial_rate_bps, cap),
                               min_rate_bps=min(base.min_rate_bps, cap))


def source_offset(topo: Topology, fid: int) -> int:
    """The clock offset of flow ``fid``'s source (timestamps in records are in true time)."""
    return topo.nodes[topo.flows[fid - 1].src].clock_offset_ns


def new_counts() -> dict[str, int]:
    """The event counters a host or a network keeps (both backends)."""
    return {"receiver_overflow": 0, "reports_lost": 0, "host_tx_queue_full": 0, "bad_feedback": 0}


def reorder_hook(link: Link, seed: int, counts: dict[str, int]) -> Callable[..., int] | None:
    """A link's ``reorder``: each frame but ALINEA reports, with probability ``reorder``, arrives
    ``reorder_delay`` late, so the frames sent meanwhile overtake it. Its own generator, seeded from
    the run's seed and the link, so that turning reordering on changes no other random draw."""
    if link.reorder <= 0:
        return None
    rng = random.Random(f"{seed}:reorder:{link.a}-{link.b}")

    def extra(frame: bytes, *_direction: str) -> int:
        if not is_report(frame) and rng.random() < link.reorder:
            counts["reordered_frames"] = counts.get("reordered_frames", 0) + 1
            return link.reorder_delay_ns
        return 0

    return extra


class SimUnsupported(ValueError):
    """A topology the simulator cannot run (said before the run starts)."""


def sim_refusal(topo: Topology) -> str | None:
    """Why the simulator cannot run ``topo``, or None: the TCP model has reno, cubic and none only (a
    ``cc: bbr`` flow needs the kernel, the netns backend)."""
    for i, f in enumerate(topo.flows):
        if f.control == "tcp" and f.cc not in MODELLED_CC:
            return (f"{topo.source}:{f.line}: flows[{i}].cc: {f.cc} (flow {f.name}) runs in the netns backend only; "
                    f"the simulator's TCP model has {', '.join(MODELLED_CC[:-1])} and {MODELLED_CC[-1]} "
                    "(use --backend netns)")
    return None


class SimHostNode(HostReceiver):
    """An end host on one link: ALINEA or fixed senders, a receiver with its buffer and reports.

    ``receive(frame)`` is the engine's (:class:`~hosts.receiver.HostReceiver`): an ordinary data
    packet of a flow with no end-to-end sink here is counted there (record, buffer, the report
    when one is due, sent on ``link``) without Python; every other frame comes to
    :meth:`_receive_python`, which handles any frame the same way (the differential oracle of the
    engine's path, tests/topo/sim/test_host_receive.py)."""

    def __init__(self, net: SimNetwork, node: Node) -> None:
        self.net = net
        self.node = node
        self.sched = net.sched
        topo = net.topo
        (self.switch,) = topo.neighbours(node.name)
        self.link: InMemoryLink | None = None
        self.flow_ids = net.wire_ids  # flow name -> the id on the wire (a group's branches: its lead's)
        self.records: dict[int, FlowRecord] = {}
        # flow id -> its source's clock offset (the net's offset_of_flow), read per data packet
        self._flow_offsets = {fid: net.offset_of_flow(fid) for fid in net.flow_names}
        self._sent: dict[str, int] = {}  # packets of the flows sent from here in Python (CVIHIS, TFRC, LEDBAT)
        self._paced: dict[str, tuple[Pacer, int]] = {}  # the engine's: flow name -> (pacer, flow id)
        self.templates: dict[str, FrameTemplate] = {}
        self.alinea: AlineaHostSender | None = None
        self.fixed: list[FixedSender] = []
        self.cvihis: dict[int, CvihisSource] = {}  # flow id -> source
        self.sinks: dict[int, CvihisSink] = {}  # flow id -> receiver (this host is the destination)
        self._feedback: dict[int, FrameTemplate] = {}
        self._sink_timers: dict[int, Any] = {}
        # TFRC and LEDBAT (hosts/e2e_host.py): flow id -> source here, flow id -> sink here
        self.e2e: dict[int, TfrcSource | LedbatSource | GccSource] = {}
        self.e2e_sinks: dict[int, TfrcSink | LedbatSink | GccSink] = {}
        self._e2e_feedback: dict[int, FrameTemplate] = {}
        self._e2e_timers: dict[int, Any] = {}
        self.offset = node.clock_offset_ns
        self._handles: dict[int, Any] = {}
        self.buffer: PlayoutBuffer | None = None
        self.reporter: HostReporter | None = None
        # the TCP model's flows (the simulator only: in netns the kernel runs them, topo/netns/tcpflow.py)
        tcp = {fid: f for fid, f in enumerate(topo.flows, start=1)
               if f.control == "tcp" and node.name in (f.src, f.dst)} if getattr(net, "tcp_model", False) else {}
        self.tcp = SimTcpFlows(self.sched, node.name, tcp, self._put, self._tcp_template,
                               self._paced_tcp_params) if tcp else None
        self.pgmcc = SimPgmccFlows(self.sched, topo, node.name, self.offset, self._sender_flow, self._put,
                                   self._pgmcc_template, self._sent, self.records, self._admit) \
            if any(f.control == "pgmcc" and node.name in (f.src, f.dst) for f in topo.flows) else None
        self._setup_senders()
        self._setup_receiver()
        self._bind_receive()

    # ---- set-up -----------------------------------------------------------------------------------
    def _sender_flow(self, f: Flow) -> SenderFlow:
        # drawn before the hosts are built: the simulator's at build, a netns host's by its _HostNet (topo/net/starts.py)
        start = self.net.starts[f.name]
        self.templates[f.name] = FrameTemplate(
            src_mac=self.net.topo.mac(self.node.name), dst_mac=neighbour_mac(self.net.topo, self.node.name, self.switch),
            src_ip=self.net.topo.ip(self.node.name),
            dst_ip=self.net.topo.ip(f.dst) if f.group is None else self.net.topo.group_ip(f.group),
            flow=self.flow_ids[f.name], size=f.packet_size)
        self._sent[f.name] = 0
        return SenderFlow(self.flow_ids[f.name], f.name, start, f.stop_ns)

    def _setup_senders(self) -> None:
        mine = [f for f in self.net.topo.flows if f.src == self.node.name and f.sends]
        alinea = [self._sender_flow(f) for f in mine if f.control == "alinea"]
        if alinea:
            law = self.net.topo.law[(self.node.name, self.switch)]
            size = max(f.packet_size for f in mine if f.control == "alinea")
            sizes = {f.packet_size for f in mine if f.control == "alinea"}
            # what the pacer is expected to send before it has: its one size, or the plan's mean
            frame = size if len(sizes) == 1 else expected_frame_bytes(self.net.topo, self.node.name, self.switch)
            self.alinea = self._paced_by(AlineaHostSender(law, size, alinea, port_unit_bytes(self.net.topo, self.node.name, self.switch),
                                                          frame))
        for f in mine:
            if f.control == "fixed":
                self.fixed.append(self._paced_by(FixedSender(self._sender_flow(f), f.rate_bps or 0.0, f.packet_size)))
            elif f.control in E2E_CONTROLS:
                self.e2e[self.flow_ids[f.name]] = self._e2e_source(f)
            elif f.control in CVIHIS_CONTROLS:
                self.cvihis[self.flow_ids[f.name]] = CvihisSource(self._sender_flow(f), self.net.cvihis_params(f),
                                                                  self.offset)
        for f in self.net.topo.flows:
            if f.dst == self.node.name and f.control in E2E_CONTROLS:
                fid = self.flow_ids[f.name]
                self.e2e_sinks[fid] = self._e2e_sink(f)
                kind, size = E2E_FEEDBACK[f.control]
                self._e2e_feedback[fid] = FrameTemplate(
                    src_mac=self.net.topo.mac(self.node.name),
                    dst_mac=neighbour_mac(self.net.topo, self.node.name, self.switch),
                    src_ip=self.net.topo.ip(self.node.name), dst_ip=self.net.topo.ip(f.src), flow=fid,
                    size=OFFSET + HEADER_BYTES + size, kind=kind)
            if f.dst == self.node.name and f.control in CVIHIS_CONTROLS:
                fid = self.flow_ids[f.name]
                self.sinks[fid] = CvihisSink(self.net.cvihis_params(f), f.control.removeprefix("cvihis-"), self.offset)
                self._feedback[fid] = FrameTemplate(
                    src_mac=self.net.topo.mac(self.node.name),
                    dst_mac=neighbour_mac(self.net.topo, self.node.name, self.switch),
                    src_ip=self.net.topo.ip(self.node.name), dst_ip=self.net.topo.ip(f.src), flow=fid,
                    size=FEEDBACK_FRAME_BYTES, kind=KIND_FEEDBACK)

    def _paced_by(self, sender: Paced) -> Paced:
        """``sender``'s flows sent by its pacer in the engine (per packet: no Python)."""
        caps = {f.name: f.r_max_bps for f in self.net.topo.flows if f.control == "alinea"}
        for flow in sender.flows:
            sender.pacer.add_flow(flow.flow_id, flow.start_ns, flow.stop_ns, self.templates[flow.name].frame(0, 0),
                                  caps.get(flow.name))
            self._paced[flow.name] = (sender.pacer, flow.flow_id)
        return sender

    @property
    def sent(self) -> dict[str, int]:
        """Packets handed to the NIC so far, per flow name (those of the NIC queue's drops included)."""
        return {name: self._paced[name][0].sent(self._paced[name][1]) if name in self._paced else n
                for name, n in self._sent.items()}

    def _e2e_source(self, f: Flow) -> TfrcSource | LedbatSource | GccSource:
        """A TFRC source capped at its first link's rate (or its r_max), a LEDBAT source, or a GCC
        source whose max_rate is at most its first link's rate (or its r_max when the file gives no
        max_rate)."""
        flow = self._sender_flow(f)
        cap = min(f.r_max_bps or math.inf, self.net.topo.link_between(f.path[0], f.path[1]).rate_bps)
        if f.control == "tfrc":
            return TfrcSource(flow, f.packet_size, cap, self.offset)
        if f.control == "gcc":
            return GccSource(flow, f.packet_size, (f.gcc or GccParams()).capped(cap), self.offset)
        return LedbatSource(flow, f.packet_size, f.target_ns or LedbatSource.target_ns, self.offset)

    def _e2e_sink(self, f: Flow) -> TfrcSink | LedbatSink | GccSink:
        if f.control == "tfrc":
            return TfrcSink(f.packet_size, self.offset)
        if f.control == "gcc":
            p = f.gcc or GccParams()
            return GccSink(p.filter, self.offset, p.gains)
        return LedbatSink(self.offset)

    def _setup_receiver(self) -> None:
        topo = self.net.topo
        if self.node.receive_buffer is None or self.node.playout_bps is None:
            return
        size = max((f.packet_size for f in topo.flows if f.dst == self.node.name), default=1000)
        self.buffer = PlayoutBuffer(self.node.receive_buffer, self.node.playout_bps, size)
        port = topo.host_buffers[(self.node.name, self.switch)]
        self.reporter = HostReporter(node_id=self.node.index, capacity=self.node.receive_buffer,
                                     interval_us=port.interval_us, src_mac=topo.mac(self.node.name),
                                     dst_mac=neighbour_mac(topo, self.node.name, self.switch))

    def _bind_receive(self) -> None:
        """The engine accounts the data of every flow whose end-to-end sink (CVIHIS, TFRC, LEDBAT,
        all control logic per packet) is not at this host; their records go into ``records``."""
        self.bind_receive(self.sched, self.records, self.buffer, self.reporter, self.net.counts)
        for fid in self.net.flow_names:
            if fid not in self.sinks and fid not in self.e2e_sinks and (self.pgmcc is None or fid not in self.pgmcc.sinks):
                self.receive_flow(fid, self.net.topo.local_flow(self.node.name, fid), self._flow_offsets[fid])

    def paced_senders(self) -> list[AlineaHostSender | FixedSender]:
        """The senders whose every packet the engine's pacer sends (no control logic per packet)."""
        return ([self.alinea] if self.alinea else []) + list(self.fixed)

    def start(self) -> None:
        for paced in self.paced_senders():
            paced.pacer.bind(self.sched, self.link, self, self.offset, HOST_TX_QUEUE, self.net.counts)
            paced.pacer.rearm()
        for sender in list(self.cvihis.values()) + list(self.e2e.values()):
            self._arm(sender)
        if self.alinea is not None:
            self.sched.call_later(AGENT_TICK_NS, self._tick)
        if self.tcp is not None:
            self.tcp.start()
        if self.pgmcc is not None:
            self.pgmcc.start()

    def _paced_tcp_params(self, f: Flow) -> CvihisParams:
        """A cvihis-rtm TCP flow's CVIHIS parameters: a CVIHIS flow's, its packets full segments."""
        return dataclasses.replace(self.net.cvihis_params(f), packet_size_bytes=data_frame_bytes(MSS))

    def _tcp_template(self, fid: int, size: int, kind: int, toward: str) -> FrameTemplate:
        topo = self.net.topo
        return FrameTemplate(src_mac=topo.mac(self.node.name), dst_mac=neighbour_mac(topo, self.node.name, self.switch),
                             src_ip=topo.ip(self.node.name), dst_ip=topo.ip(toward), flow=fid, size=size, kind=kind)

    def _pgmcc_template(self, kind: int, size: int, dst_ip: int, wire_id: int) -> FrameTemplate:
        """A pgmcc frame's template; feedback goes to its own UDP port (the switches' NAK aggregation)."""
        topo = self.net.topo
        return FrameTemplate(src_mac=topo.mac(self.node.name), dst_mac=neighbour_mac(topo, self.node.name, self.switch),
                             src_ip=topo.ip(self.node.name), dst_ip=dst_ip, flow=wire_id, size=size, kind=kind,
                             dst_port=PGMCC_FEEDBACK_PORT if kind == KIND_PGMCC_FEEDBACK else DATA_PORT)

    def _admit(self, now: int, fid: int, size: int) -> bool:
        """A pgmcc packet into the receive buffer, if the host has one (refused: counted as an overflow)."""
        if self.buffer is not None and not self.buffer.on_arrival(now, fid, size):
            self.net.counts["receiver_overflow"] += 1
            return False
        return True

    def _put(self, frame: bytes) -> None:
        """A frame onto the host's link through its NIC queue (full: dropped and counted)."""
        if self.link is None:
            return
        if self.link.backlog_ns(self, self.sched.now_ns()) > HOST_TX_QUEUE * self.link.model.wire_time_ns(len(frame)):
            self.net.counts["host_tx_queue_full"] += 1
        else:
            self.link.send(self, frame)

    # ---- sending ----------------------------------------------------------------------------------
    def _arm(self, sender: Any) -> None:
        old = self._handles.pop(id(sender), None)
        if old is not None:
            old.cancel()
        now = self.sched.now_ns()
        t = sender.next_send_ns(now)
        if t is not None:
            self._handles[id(sender)] = self.sched.call_at(max(t, now), self._send, sender)

    def _send(self, sender: CvihisSource | TfrcSource | LedbatSource | GccSource) -> None:
        """A packet of a sender whose stamp is control logic (the paced ones send in the engine)."""
        self._handles.pop(id(sender), None)
        now = self.sched.now_ns()
        flow = sender.take(now)
        if flow is not None and self.link is not None:
            seq, ts, rtt = sender.stamp(now)
            frame = self.templates[flow.name].frame(seq, ts, rtt)
            self._sent[flow.name] += 1
            if self.link.backlog_ns(self, now) > HOST_TX_QUEUE * self.link.model.wire_time_ns(len(frame)):
                self.net.counts["host_tx_queue_full"] += 1  # a sender faster than its NIC: like a full qdisc
            else:
                self.link.send(self, frame)
        self._arm(sender)

    def _tick(self) -> None:
        assert self.alinea is not None
        before = self.alinea.pacer.rate_bps
        self.alinea.tick(self.sched.now_ns())
        if self.alinea.pacer.rate_bps != before:
            self.alinea.pacer.rearm()
        self.sched.call_later(AGENT_TICK_NS, self._tick)

    # ---- receiving --------------------------------------------------------------------------------
    def _receive_python(self, frame: bytes) -> None:
        """A frame the engine's ``receive`` leaves to Python (any frame: see the class)."""
        now = self.sched.now_ns()
        if is_report(frame):
            self._on_report(now, frame)
            return
        try:
            d = parse(frame)
        except DatagramError:
            return
        if d.kind == KIND_FEEDBACK:
            self._on_feedback(now, d)
            return
        if d.kind in (KIND_TFRC_REPORT, KIND_LEDBAT_ACK, KIND_GCC_REPORT):
            self._on_e2e_feedback(now, d)
            return
        if d.kind in TCP_KINDS:
            if self.tcp is not None:
                self.tcp.receive(now, d)
            return
        if d.kind in PGMCC_KINDS:
            if self.pgmcc is None or not self.pgmcc.receive(now, d):
                self.net.counts["unknown_flow"] = self.net.counts.get("unknown_flow", 0) + 1
            self.report(now)
            return
        if d.flow not in self._flow_offsets:  # a datagram of no flow of this network: counted, not a crash
            self.net.counts["unknown_flow"] = self.net.counts.get("unknown_flow", 0) + 1
            return
        rec = self.records.get(d.flow)
        if rec is None:
            rec = self.records[d.flow] = FlowRecord(self.net.topo.local_flow(self.node.name, d.flow))
        if self.buffer is not None and not self.buffer.on_arrival(now, d.flow, d.size):
            self.net.counts["receiver_overflow"] += 1
        else:
            rec.on_packet(d.seq, d.ts_ns - self._flow_offsets[d.flow], now, d.size)
            e2e_sink = self.e2e_sinks.get(d.flow)
            if e2e_sink is not None:
                self._send_e2e_feedback(d.flow, e2e_sink.on_data(now, d.seq, d.ts_ns, d.size, d.rtt_100us))
            sink = self.sinks.get(d.flow)
            if sink is not None:
                self._send_feedback(d.flow, sink.on_data(now, d.seq, d.ts_ns, d.size, d.rtt_100us))
        self.report(now)  # the engine's: the reporter's report of the buffer, when one is due, out on the link

    # ---- CVIHIS ---------------------------------------------------------------------------------------
    def _send_feedback(self, fid: int, feedbacks: list[Feedback]) -> None:
        now = self.sched.now_ns()
        for fb in feedbacks:
            if self.link is not None:
                self.link.send(self, self._feedback[fid].frame(fb.fb_seq, now + self.offset, 0, encode_feedback(fb)))
        self._arm_sink(fid)

    # ---- TFRC and LEDBAT -------------------------------------------------------------------------------
    def control_stats(self) -> dict[str, dict[str, object]]:
        """Per TFRC / LEDBAT / GCC flow, what this host's end of it saw (the summary's ``control`` block)."""
        out: dict[str, dict[str, object]] = {}
        for fid, src in self.e2e.items():
            out.setdefault(self.net.flow_names[fid], {}).update(src.stats())
        for fid, sink in self.e2e_sinks.items():
            out.setdefault(self.net.flow_names[fid], {}).update(sink.stats())
        if self.pgmcc is not None:
            for name, st in self.pgmcc.control_stats().items():
                out.setdefault(name, {}).update(st)
        return out

    def _send_e2e_feedback(self, fid: int, payloads: list[bytes]) -> None:
        now = self.sched.now_ns()
        for p in payloads:
            if self.link is not None:
                self.link.send(self, self._e2e_feedback[fid].frame(0, now + self.offset, 0, p))
        old = self._e2e_timers.pop(fid, None)
        if old is not None:
            old.cancel()
        t = self.e2e_sinks[fid].next_timer_ns()
        if t is not None:
            self._e2e_timers[fid] = self.sched.call_at(max(t, now), self._e2e_sink_timer, fid)

    def _e2e_sink_timer(self, fid: int) -> None:
        self._e2e_timers.pop(fid, None)
        self._send_e2e_feedback(fid, self.e2e_sinks[fid].on_timer(self.sched.now_ns()))

    def _on_e2e_feedback(self, now: int, d: Any) -> None:
        source = self.e2e.get(d.flow)
        if source is None or d.kind != source.feedback_kind:
            return
        try:
            source.on_feedback(now, d.payload(source.feedback_bytes))
        except ValueError:
            self.net.counts["bad_feedback"] += 1
            return
        self._arm(source)

    def _arm_sink(self, fid: int) -> None:
        t = self.sinks[fid].next_timer_ns()
        old = self._sink_timers.pop(fid, None)
        if old is not None:
            old.cancel()
        if t is not None:
            self._sink_timers[fid] = self.sched.call_at(max(t, self.sched.now_ns()), self._sink_timer, fid)

    def _sink_timer(self, fid: int) -> None:
        self._sink_timers.pop(fid, None)
        self._send_feedback(fid, self.sinks[fid].on_timer(self.sched.now_ns()))

    def _on_feedback(self, now: int, d: Any) -> None:
        source = self.cvihis.get(d.flow)
        try:
            if source is None:  # a cvihis-rtm flow of the TCP model, or none of this host's
                if self.tcp is not None:
                    self.tcp.receive_feedback(now, d)
                return
            fb = decode_feedback(d.payload(FEEDBACK_BYTES))
        except FeedbackError:
            self.net.counts["bad_feedback"] += 1
            return
        source.on_feedback(now, fb)
        self._arm(source)

    def _on_report(self, now: int, frame: bytes) -> None:
        report = decode_report(frame)
        if self.alinea is None:  # no law here: the report is kept as a measurement (rate 0)
            self.net.recorder.laws.append(LawRow(now, self.node.name, self.switch, report.occupancy,
                                                 report.capacity, report.drops, 0.0, 0.0, 0.0))
            return
        alinea = self.alinea
        rate = alinea.on_report(now, report)
        law = alinea.law
        # by position (forecast, drain, newest, class, port, pps none): a compiled class parses keywords slower
        self.net.recorder.laws.append(LawRow(now, self.node.name, self.switch, report.occupancy, alinea.capacity,
                                             report.drops, rate, law.o, law.w, None, None, None, 0, 0, 0,
                                             law.params.o_max))
        alinea.pacer.rearm()


#: the cyclic collector's thresholds while the event loop runs (gen0 allocations, then gen1 and gen2
#: in collections of the generation below). A young collection's cost grows slower than its
#: threshold: at 200,000 the collector took 1.8-1.9 % of a run's CPU time at x1 and x50, 2.4 %
#: at 1 Gb/s (x500, reports every 20 µs), against 2.7-3.1 % and 6 % at 10,000 (``gc.callbacks``
#: timing; paper-5router x1 over 300 s, x50 over 8 s, x500 over 2 s: the same peak memory)
RUN_GC_THRESHOLDS = (200_000, 20, 10)


@contextmanager
def _collector_spared() -> Iterator[None]:
    """Python's cyclic collector, spared the objects that exist when a run starts, and run less often.

    A run allocates objects by the million (the rows it records, a report's objects) and leaves no
    cycles behind (paper-5router over 300 s: none collected), yet each of the collector's passes
    over the old generation walked every row recorded so far: a seventh of the CPU time of a long
    run (docs/background/engine.md, "The collector"). Frozen objects are thawed after the run, so a network
    dropped later (a sweep's worker runs many) is collected as before; results do not change."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


class DelayedQueues:
    """A switch's Thrift queue calls that take effect after the control latency ``latency``."""

    def __init__(self, queues: Any, sched: VirtualScheduler, latency: ControlLatency) -> None:
        self._queues, self._sched, self._latency = queues, sched, latency
        rate = latency.calls(sched, queues.set_queue_rate)
        if rate is not None:  # a fixed latency: the engine's channel, no Python step per rate call
            self.set_queue_rate = rate  # type: ignore[method-assign]

    def set_queue_rate(self, port: int, pps: int, priority: int | None = None) -> None:
        args = (port, pps) if priority is None else (port, pps, priority)  # forwarded as the caller made it
        self._sched.call_later(self._latency.delay(self._sched.now_ns()), self._queues.set_queue_rate, *args)

    def set_queue_depth(self, port: int, depth: int) -> None:
        self._sched.call_later(self._latency.delay(self._sched.now_ns()), self._queues.set_queue_depth, port, depth)


@dataclass
class _SwitchNode:
    switch: Switch
    agent: SwitchAgent
    client: InProcessController


class SimNetwork:
    """Build with :meth:`build`, then :meth:`run_until`; results in ``recorder``."""

    def __init__(self, topo: Topology, seed: int = 1, program: CompiledProgram | None = None) -> None:
        if (why := sim_refusal(topo)) is not None:
            raise SimUnsupported(why)
        self.topo = topo
        self.seed = seed
        self.rng = random.Random(seed)
        self._hop_by_hop = network_mode(topo) == "hop-by-hop"
        self.sched = VirtualScheduler()
        self.program = program or alinea_program()
        self.recorder = Recorder()
        self.flow_names = {i + 1: f.name for i, f in enumerate(topo.flows)}
        self.wire_ids = topo.wire_ids()
        self.counts: dict[str, int] = new_counts()
        self.switches: dict[str, _SwitchNode] = {}
        self.hosts: dict[str, SimHostNode] = {}
        self.links: dict[tuple[str, str], InMemoryLink] = {}
        self._ends: dict[tuple[str, str], Any] = {}
        self.tcp_model = True  # SimHostNode runs the TCP model's flows (the netns host leaves them to the kernel)
        self.link_lost: dict[tuple[str, str], int] = {}  # frames a link's ``loss`` lost, per direction

    def cvihis_params(self, f: Flow) -> CvihisParams:
        return cvihis_params(self.topo, f)

    def offset_of_flow(self, fid: int) -> int:
        return source_offset(self.topo, fid)

    # ---- construction ------------------------------------------------------------------------------
    def build(self) -> SimNetwork:
        topo = self.topo
        for node in topo.switches:
            sw = Switch(self.sched, SwitchOptions(seed=self.seed, grpc_addr=None, thrift_port=None,
                                                 queue_model=topo.options.queue_model,
                                                 priority_queues=priority_queues(topo.options.classes)))
            for nb in topo.neighbours(node.name):
                port = topo.port(node.name, nb)
                self._ends[(node.name, nb)] = sw.add_link_port(port, f"{node.name}-eth{port}")
            self.switches[node.name] = _SwitchNode(sw, None, None)  # type: ignore[arg-type]
        # every flow's start, drawn from the seed before anything else draws (the loop analysis draws them alike)
        self.starts = drawn_starts(topo, self.rng)
        for node in topo.hosts:
            host = self.hosts[node.name] = SimHostNode(self, node)
            self._ends[(node.name, host.switch)] = host
        for link in topo.links:
            a, b = self._ends[(link.a, link.b)], self._ends[(link.b, link.a)]
            model = LinkModel(bitrate_bps=round(link.rate_bps), delay_ns=link.delay_ns, overhead_bytes=0,
                              min_frame_bytes=0)
            mem = InMemoryLink(self.sched, a, b, model=model, loss=self._loss_hook(link),
                               extra_delay=reorder_hook(link, self.seed, self.counts))
            for end in (a, b):
                if isinstance(end, SimHostNode):
                    end.link = mem
                else:
                    end.attach(mem)
            self.links[(link.a, link.b)] = self.links[(link.b, link.a)] = mem
        for node in topo.switches:
            self._start_agent(node.name)
            self._nak_aggregation(node.name)
        for ev in topo.events:
            self.sched.call_at(ev.at_ns, self._apply_event, ev)
        for host in self.hosts.values():
            host.start()
        self.sched.call_at(0, self._sample)
        self.sched.call_at(0, self._sample_drops)
        return self

    def _loss_hook(self, link: Link) -> Callable[[bytes, str], bool] | None:
        """The link's losses: ALINEA reports with ``options.report_loss`` (drawn from the run's
        generator, as always) and every other frame with the link's ``loss`` (its own generator,
        seeded from the run's seed and the link, so a lossy link changes no other draw; counted per
        direction in ``link_lost``, which the run's end reads as that link's drops)."""
        p = self.topo.options.report_loss
        if p <= 0 and link.loss <= 0:
            return None
        rng = random.Random(f"{self.seed}:loss:{link.a}-{link.b}")
        ends = {"a->b": (link.a, link.b), "b->a": (link.b, link.a)}

        def lose(frame: bytes, direction: str) -> bool:
            if is_report(frame):
                if p > 0 and self.rng.random() < p:
                    self.counts["reports_lost"] += 1
                    return True
                return False
            if link.loss > 0 and rng.random() < link.loss:
                self.counts["link_lost_frames"] = self.counts.get("link_lost_frames", 0) + 1
                key = ends[direction]
                self.link_lost[key] = self.link_lost.get(key, 0) + 1
                return True
            return False

        return lose

    def _start_agent(self, name: str) -> None:
        node = self.switches[name]
        plan = switch_plan(self.topo, name)
        agent_box: list[SwitchAgent] = []
        opts = self.topo.options
        half = opts.control_latency_ns // 2
        p99_half = None if opts.control_latency_p99_ns is None else opts.control_latency_p99_ns // 2
        rng = random.Random(f"{self.seed}/control/{name}")
        to_agent = ControlLatency(half, p99_half, rng)
        sink = self._packet_in_sink(agent_box, to_agent)
        client = InProcessController(
            node.switch.p4rt, on_message=lambda m: agent_box and self._to_agent(agent_box[0], m, to_agent),
            on_packet_in=sink)
        queues = direct(in_process_handler(node.switch.tm, node.switch.sched.now_ns), name)
        agent = SwitchAgent(plan, client, queues, self.sched, tick_ns=AGENT_TICK_NS,
                            on_trace=self.recorder.laws.append)  # the agent's traces are the rows
        agent_box.append(agent)
        if isinstance(sink, DelayedCalls):
            sink.connect(agent.handle_report)
        node.agent, node.client = agent, client
        agent.install(self.program.p4info, self.program.device_config)
        if half:  # set-up is instant; from now on the agent's queue calls reach the switch late
            rest = opts.control_latency_ns - half
            agent.queues = DelayedQueues(queues, self.sched, ControlLatency(
                rest, None if opts.control_latency_p99_ns is None else opts.control_latency_p99_ns - p99_half, rng))

    def _nak_aggregation(self, name: str) -> None:
        """``options.nak_aggregation``: the switch's nak_aggregation entries, one per pgmcc session (its
        wire id), written at set-up as the control plane would (alinea.p4; docs/howto/multicast.md)."""
        hold = self.topo.options.nak_aggregation_ns
        if not hold:
            return
        for wire in sorted({self.wire_ids[f.name] for f in self.topo.flows if f.control == "pgmcc"}):
            self.switches[name].client.insert_entry("MyIngress.nak_aggregation", {"hdr.datagram.flow": wire},
                                                    "MyIngress.set_nak_hold", {"hold_us": max(1, hold // 1000)})

    def _to_agent(self, agent: SwitchAgent, msg: Any, latency: ControlLatency) -> None:
        """A packet-in reaches the agent after the control latency."""
        if latency.median_ns and msg.WhichOneof("update") == "packet":
            self.sched.call_later(latency.delay(self.sched.now_ns()), agent.on_stream_message, msg)
        else:
            agent.on_stream_message(msg)

    def _packet_in_sink(self, agent_box: list[SwitchAgent],
                        latency: ControlLatency) -> Callable[[bytes, dict[str, int]], None]:
        """The same for a packet-in handed over as values (``InProcessController(on_packet_in=...)``):
        ``sink(payload, meta)``, which ignores packet-ins before the agent is in ``agent_box``. One
        closure per switch, called for every report: the scheduler's methods are looked up once.

        After the latency the agent's ``on_packet_in`` is due, which schedules ``handle_report`` at
        delay 0 (behind whatever is due then); that event is the scheduler's own ``call_later`` with
        those arguments: the same two events, in the same order, without a Python frame between.
        With a fixed latency the sink is the engine's (``ControlLatency.calls``, connected to the
        agent once it exists): no Python step per report at all."""
        calls = latency.calls(self.sched, agent_box[0].handle_report if agent_box else None, behind=True) \
            if latency.median_ns else None
        if calls is not None:
            return calls
        now_ns, call_later = self.sched.now_ns, self.sched.call_later

        def sink(payload: bytes, meta: dict[str, int]) -> None:
            if not agent_box:
                return
            if latency.median_ns:
                call_later(latency.delay(now_ns()), call_later, 0, agent_box[0].handle_report, payload, meta)
            else:
                agent_box[0].on_packet_in(payload, meta)

        return sink

    def summary_extra(self) -> dict[str, Any]:
        opts = self.topo.options
        return {"control_latency": {"modelled_ms": opts.control_latency_ns / 1e6,
                                    "modelled_p99_ms": None if opts.control_latency_p99_ns is None
                                    else opts.control_latency_p99_ns / 1e6}}

    # ---- events -------------------------------------------------------------------------------------
    def _apply_event(self, ev: Event) -> None:
        if ev.kind == "link_rate" and ev.link is not None and ev.rate_bps is not None:
            self.links[ev.link].set_bitrate(round(ev.rate_bps))
            for end in ev.link:  # a host's law keeps r_max at its own link's rate (AlineaHostSender)
                host = self.hosts.get(end)
                if host is not None and host.alinea is not None:
                    host.alinea.set_link_rate(ev.rate_bps)
                    host.alinea.pacer.rearm()
            return
        if ev.kind == "mode" and ev.flow is not None and ev.mode is not None:
            flow = next(f for f in self.topo.flows if f.name == ev.flow)
            self.hosts[flow.dst].sinks[self.topo.flows.index(flow) + 1].core.set_mode(ev.mode)
            return
        for u, v in ev.targets:
            if u in self.switches:
                params_io.apply_law_changes(self.switches[u].client, self.topo.port(u, v), dict(ev.law_changes))
            elif self.hosts[u].alinea is not None:
                sender = self.hosts[u].alinea
                sender.set_params(sender.law_params.with_changes(**dict(ev.law_changes)))
                sender.pacer.rearm()
            if ev.interval_us is not None and v in self.switches:
                params_io.apply_port_changes(self.switches[v].client, self.topo.port(v, u),
                                                {"interval_us": ev.interval_us})
            elif ev.interval_us is not None and self.hosts[v].reporter is not None:
                self.hosts[v].reporter.interval_us = ev.interval_us

    # ---- sampling -----------------------------------------------------------------------------------
    def _sample(self) -> None:
        now = self.sched.now_ns()
        rec = self.recorder
        self._sample_flows(now, self._played(now), tcp=True)
        for host in self.hosts.values():
            if host.pgmcc is not None:
                rec.pgmcc.extend(host.pgmcc.sample(now))
        for name, host in self.hosts.items():
            if host.buffer is not None:
                b = host.buffer
                rec.buffers.append(BufferSample(now, name, b.occupancy, b.capacity, b.played, b.dropped))
        if not self._hop_by_hop:
            for name, node in self.switches.items():
                tm = node.switch.tm
                queues = {p: (tm.port_depth(p), tm.queue_depth_limit(p), tm.stats(p).dropped_full)
                          for p in node.switch.ports}
                rec.laws.extend(fifo_rows(self.topo, name, now, queues))
        for link in self.topo.links:
            for u, v in ((link.a, link.b), (link.b, link.a)):
                rec.links.append(LinkSample(now, u, v, self._carried_bytes(u, v, now), self.links[(u, v)].model.bitrate_bps))
        self.sched.call_later(SAMPLE_NS, self._sample)

    def _sample_flows(self, now: int, played: dict[str, dict[int, int]], tcp: bool) -> None:
        """Each flow's counters at ``now`` into flows.csv (and its sender's TCP_INFO, ``tcp``)."""
        for f in self.topo.flows:
            src, dst = self.hosts[f.src], self.hosts[f.dst]
            fid = src.flow_ids[f.name]
            if f.control == "tcp" and src.tcp is not None and dst.tcp is not None:
                r, sent = dst.tcp.records[fid], src.tcp.senders[fid].written
                if tcp:
                    self.recorder.tcp.append(src.tcp.sample(now, fid))
                took = None  # TCP's application reads its socket, not the playout buffer
            else:
                r, sent = dst.records.get(fid), src.sent.get(self.topo.sender_name(f), 0)
                took = played[f.dst].get(fid, 0) if f.dst in played else None
            self.recorder.flows.append(FlowSample(now, f.name, sent, r.received if r else 0,
                                                  r.owd_sum_ns if r else 0, f.packet_size, took))

    def sample_flows_at(self, t_ns: int) -> None:
        """The flows' counters also at ``t_ns`` (the runner: the run window's start, when it is off the
        100 ms grid -- an event at 2.05 s, half of a 2.5 s run): a flow's sent count over the run window
        is then read there, not interpolated between the samples around it (docs/reference/metrics.md,
        `send_bps`); its received and played counts too. Nothing else is sampled: the buffers' and
        links' rows stay on the grid."""
        if t_ns > 0 and t_ns % SAMPLE_NS:
            self.sched.call_at(t_ns, self._sample_flows_now)

    def _sample_flows_now(self) -> None:
        now = self.sched.now_ns()
        self._sample_flows(now, self._played(now), tcp=False)

    def _played(self, now: int) -> dict[str, dict[int, int]]:
        """Host -> flow id -> packets its application took by ``now`` (a shared buffer, per flow); a
        drain plays what is due by then, its play times independent of when it is called."""
        played = {}
        for name, host in self.hosts.items():
            if host.buffer is not None:
                host.buffer.drain(now)
                played[name] = host.buffer.played_by_flow
        return played

    def _carried_bytes(self, u: str, v: str, now: int) -> int:
        """Bytes link u->v has serialized by ``now``: those handed to it less the backlog still
        waiting for the wire (a host's NIC queue holds up to HOST_TX_QUEUE frames; counted at
        hand-over, a sender faster than its link read as more than the link's rate)."""
        mem, end = self.links[(u, v)], self._ends[(u, v)]
        sent = mem.stats[mem.direction_from(end)].sent_bytes
        return sent - mem.backlog_ns(end, now) * mem.model.bitrate_bps // 8_000_000_000

    def _sample_drops(self) -> None:
        now = self.sched.now_ns()
        for name, node in self.switches.items():
            for reason, port, packets in read_drop_counters(node.client, sorted(node.switch.ports)):
                self.recorder.drops.append(DropSample(now, name, port, reason, packets))
            tm_full = sum(node.switch.tm.stats(p).dropped_full for p in node.switch.ports)
            if tm_full:
                self.recorder.drops.append(DropSample(now, name, 0, "egress_queue_full", tm_full))
        self.sched.call_later(DROP_SAMPLE_NS, self._sample_drops)

    # ---- the end -----------------------------------------------------------------------------------
    def end_state(self) -> EndState:
        """What the network holds and has dropped when the run stops, per flow and per place
        (topo/net/invariants.py): every count is read at the same virtual instant, so what a flow
        misses must be in its path's drops or frames held (queued, or still on a wire)."""
        topo = self.topo
        places: dict[str, Place] = {place_tx(): Place(dropped=self.counts.get("host_tx_queue_full", 0))}
        delivered: dict[tuple[str, str], int] = {}
        handed: dict[tuple[str, str], int] = {}
        for link in topo.links:
            for u, v in ((link.a, link.b), (link.b, link.a)):
                mem = self.links[(u, v)]
                st = mem.stats[mem.direction_from(self._ends[(u, v)])]
                # report_loss loses ALINEA reports (no flow's frame); a link's ``loss`` any other frame
                places[place_link(u, v)] = Place(dropped=self.link_lost.get((u, v), 0),
                                                 held=st.sent - st.delivered - st.lost)
                delivered[(u, v)] = st.delivered
                handed[(u, v)] = st.sent
        # with datagrams that have no feedback (alinea, fixed), every frame an ingress port drops is
        # a flow's data packet (reports are taken at ingress, and only spoofed ones are dropped)
        data_only = all(f.control in ("alinea", "fixed") for f in topo.flows)
        queues: dict[str, QueueEnd] = {}
        for name, node in self.switches.items():
            tm = node.switch.tm
            ingress = {p: 0 for p in node.switch.ports}
            for reason, port, packets in read_drop_counters(node.client, sorted(node.switch.ports)):
                if reason != "spoofed_report":  # a report that came in, not a frame any flow sent
                    ingress[port] = ingress.get(port, 0) + packets
            for port in sorted(node.switch.ports):
                st = tm.stats(port)
                queues[f"{name} port {port}"] = QueueEnd(st.enqueued, st.dequeued, st.dropped_full, tm.port_depth(port))
                places[place_egress(name, port)] = Place(dropped=st.dropped_full, held=tm.port_depth(port))
                places[place_in(name, port)] = Place(dropped=ingress[port], data_only=data_only)
        for name, host in self.hosts.items():
            if host.buffer is not None:
                places[place_rx(name)] = Place(dropped=host.buffer.dropped, data_only=True)
        flows: dict[str, FlowEnd] = {}
        for f in topo.flows:
            src, dst, fid = self.hosts[f.src], self.hosts[f.dst], self.wire_ids[f.name]
            if f.control == "tcp":
                if src.tcp is None or dst.tcp is None:
                    continue
                flows[f.name] = FlowEnd(src.tcp.segments_out.get(fid, 0), dst.tcp.segments_in.get(fid, 0),
                                        "segments", flow_places(topo, f))
            else:
                rec = dst.records.get(fid)
                flows[f.name] = FlowEnd(src.sent.get(topo.sender_name(f), 0), rec.received if rec else 0, "packets",
                                        flow_places(topo, f))
        return EndState("sim", flows, places, queues, receiver_overflow=self.counts.get("receiver_overflow", 0),
                        max_frame_bytes=max_frame_bytes(topo), link_delivered=delivered, link_sent=handed)

    # ---- running ------------------------------------------------------------------------------------
    def run_until(self, t_ns: int) -> None:
        with _collector_spared():
            self.sched.run_until(t_ns)

    def finish(self) -> None:
        """Final samples at the current time, and per-packet records into the recorder."""
        self._sample()
        self._sample_drops()
        for host in self.hosts.values():
            for rec in host.records.values():
                self.recorder.packets[rec.name] = rec.packets
            for name, stats in host.control_stats().items():
                self.recorder.control_stats.setdefault(name, {}).update(stats)
            if host.pgmcc is not None:
                self.recorder.pgmcc_switches.extend(host.pgmcc.switches())
            if host.tcp is not None:
                for fid, rec in host.tcp.records.items():
                    self.recorder.packets[rec.name] = rec.packets
                    self.recorder.tcp_flows.setdefault(rec.name, {}).update(host.tcp.receiver_totals(fid))
                for fid in host.tcp.senders:
                    name = self.flow_names[fid]
                    self.recorder.tcp_flows.setdefault(name, {}).update(host.tcp.sender_totals(fid))
