"""pgmcc sessions in the simulator (``control: pgmcc``): the sans-I/O cores of hosts/pgmcc bound to a
host's link and scheduler.

The source's core sends to the group (a multicast flow's ``topo.group_ip``; a unicast pgmcc flow is a
session of one receiver) with the group's wire id; every receiving host runs a receiver core on the
copies the switches replicate and sends its ACKs and NAKs back to the source's unicast address with
the same wire id (docs/howto/multicast.md). Each receiver records the packets it receives under its own
branch's name (``m1@H3``): the transmission number is the record's sequence number, so the summary's
loss is the network's, not the repairs'.

Why a module of its own beside topo/sim/network.py: like the TCP model's flows (topo/sim/tcp.py), a pgmcc
packet is control logic at both ends (the window, the ACK of the acker, the NAKs), so its frames are
handled here in Python, away from the engine's per-packet path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hosts.datagram import HEADER_BYTES, KIND_PGMCC_DATA, KIND_PGMCC_FEEDBACK, OFFSET, Datagram, FrameTemplate
from hosts.pgmcc import (
    DATA_BYTES,
    FEEDBACK_BYTES,
    PgmccParams,
    PgmccReceiver,
    PgmccSender,
    decode_data,
    decode_feedback,
    encode_data,
    encode_feedback,
)
from hosts.receiver import FlowRecord
from hosts.sender import SenderFlow
from topo.net.model import Flow, Topology
from topo.net.record import PgmccSample, PgmccSwitch

__all__ = ["SimPgmccFlows", "PGMCC_KINDS", "FEEDBACK_FRAME_BYTES", "RTT_UNIT_NS"]

PGMCC_KINDS = frozenset({KIND_PGMCC_DATA, KIND_PGMCC_FEEDBACK})
FEEDBACK_FRAME_BYTES = OFFSET + HEADER_BYTES + FEEDBACK_BYTES
RTT_UNIT_NS = 100_000  # the datagram header's RTT field


@dataclass
class _Source:
    flow: SenderFlow
    core: PgmccSender
    template: FrameTemplate
    timer: Any = None
    start: Any = None


@dataclass
class _Sink:
    name: str  # this host's branch
    core: PgmccReceiver
    template: FrameTemplate
    record: FlowRecord
    timer: Any = None


class SimPgmccFlows:
    """A host's ends of the pgmcc sessions: the source of those it sends, a receiver of those it receives.

    ``sender_flow(f)`` is the host's SenderFlow for a flow it sends (start jitter drawn, its sent count
    registered), ``put(frame)`` a frame onto its link through its NIC queue, ``template(kind, size, dst_ip,
    wire_id)`` a frame template from this host, ``sent`` the host's sent counts by flow name and
    ``records`` its flow records by wire id (the summary reads both)."""

    def __init__(self, sched: Any, topo: Topology, host: str, offset_ns: int,
                 sender_flow: Callable[[Flow], SenderFlow], put: Callable[[bytes], None],
                 template: Callable[[int, int, int, int], FrameTemplate], sent: dict[str, int],
                 records: dict[int, FlowRecord], admit: Callable[[int, int, int], bool] | None = None) -> None:
        self.sched, self.topo, self.host, self.offset = sched, topo, host, offset_ns
        self._put, self._sent, self._admit = put, sent, admit
        self.records = records
        ids = topo.wire_ids()
        self.sources: dict[int, _Source] = {}
        self.sinks: dict[int, _Sink] = {}
        self.bad_feedback = 0
        for f in topo.flows:
            if f.control != "pgmcc":
                continue
            wire = ids[f.name]
            params = f.pgmcc or PgmccParams()
            if f.src == host and f.sends:
                dst_ip = topo.ip(f.dst) if f.group is None else topo.group_ip(f.group)
                self.sources[wire] = _Source(sender_flow(f), PgmccSender(params),
                                             template(KIND_PGMCC_DATA, f.packet_size, dst_ip, wire))
            if f.dst == host:
                rid = topo.nodes[host].index
                self.sinks[wire] = _Sink(f.name, PgmccReceiver(rid, params),
                                         template(KIND_PGMCC_FEEDBACK, FEEDBACK_FRAME_BYTES, topo.ip(f.src), wire),
                                         FlowRecord(f.name))
                records[wire] = self.sinks[wire].record

    def start(self) -> None:
        for wire, src in self.sources.items():
            src.start = self.sched.call_at(max(src.flow.start_ns, self.sched.now_ns()), self._pump, wire)

    # ---- the source ---------------------------------------------------------------------------------
    def _pump(self, wire: int) -> None:
        """Send what the window allows now, then (re)arm the timeout."""
        src = self.sources[wire]
        now = self.sched.now_ns()
        clock = now + self.offset
        while src.flow.active(now) and src.core.can_send():
            tx = src.core.take(clock)
            rtt = -(-tx.rtt_hint_ns // RTT_UNIT_NS)
            self._put(src.template.frame(tx.tx_seq, clock, min(rtt, 0xFFFF), encode_data(tx.tag)))
            self._sent[src.flow.name] = self._sent.get(src.flow.name, 0) + 1
        self._arm_source(wire)

    def _arm_source(self, wire: int) -> None:
        src = self.sources[wire]
        if src.timer is not None:
            src.timer.cancel()
            src.timer = None
        t = src.core.next_timer_ns()
        if t is not None:
            src.timer = self.sched.call_at(max(t - self.offset, self.sched.now_ns()), self._timeout, wire)

    def _timeout(self, wire: int) -> None:
        src = self.sources[wire]
        src.timer = None
        src.core.on_timer(self.sched.now_ns() + self.offset)
        self._pump(wire)

    # ---- frames in ------------------------------------------------------------------------------------
    def receive(self, now: int, d: Datagram) -> bool:
        """A pgmcc frame (True), or not one of this host's sessions (False: the caller counts it)."""
        if d.kind == KIND_PGMCC_FEEDBACK:
            src = self.sources.get(d.flow)
            if src is None:
                return False
            try:
                fb = decode_feedback(d.payload(FEEDBACK_BYTES))
            except ValueError:
                self.bad_feedback += 1
                return True
            src.core.on_feedback(now + self.offset, fb)
            self._pump(d.flow)
            return True
        sink = self.sinks.get(d.flow)
        if sink is None:
            return False
        if self._admit is not None and not self._admit(now, d.flow, d.size):
            return True  # the receive buffer refused it (the host counts it)
        tag = decode_data(d.payload(DATA_BYTES))
        sink.record.on_packet(d.seq, d.ts_ns - self.topo.nodes[self.topo.flows[d.flow - 1].src].clock_offset_ns,
                              now, d.size)
        self._feedback(d.flow, sink.core.on_data(now, d.seq, tag.data_seq, tag.acker, d.ts_ns,
                                                 d.rtt_100us * RTT_UNIT_NS))
        return True

    def _feedback(self, wire: int, fbs: list[Any]) -> None:
        sink = self.sinks[wire]
        now = self.sched.now_ns()
        for fb in fbs:
            self._put(sink.template.frame(0, now, 0, encode_feedback(fb)))
        if sink.timer is not None:
            sink.timer.cancel()
            sink.timer = None
        t = sink.core.next_timer_ns()
        if t is not None:
            sink.timer = self.sched.call_at(max(t, now), self._sink_timer, wire)

    def _sink_timer(self, wire: int) -> None:
        sink = self.sinks[wire]
        sink.timer = None
        self._feedback(wire, sink.core.on_timer(self.sched.now_ns()))

    # ---- what the run reports ---------------------------------------------------------------------------
    def control_stats(self) -> dict[str, dict[str, object]]:
        """The source's state under its lead branch's name, each receiver's under its own branch."""
        out: dict[str, dict[str, object]] = {}
        for src in self.sources.values():
            st = src.core.stats()
            st["acker"] = self._name(src.core.acker)
            out[src.flow.name] = st
        for sink in self.sinks.values():
            out.setdefault(sink.name, {}).update(sink.core.stats())
        return out

    def _name(self, rid: int) -> str:
        return next((n.name for n in self.topo.hosts if n.index == rid), "-")

    def sample(self, t_ns: int) -> list[PgmccSample]:
        """Each source's state now."""
        return [PgmccSample(t_ns, s.flow.name, self._name(s.core.acker), s.core.window.cwnd, s.core.next_data,
                            s.core.repairs_sent, s.core.timeouts) for s in self.sources.values()]

    def switches(self) -> list[PgmccSwitch]:
        """Every election and switch of each source, in true time."""
        return [PgmccSwitch(sw.t_ns - self.offset, s.flow.name, self._name(sw.old), self._name(sw.new), sw.t_old,
                            sw.t_new) for s in self.sources.values() for sw in s.core.switches]
