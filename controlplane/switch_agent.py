"""A switch agent bound to its switch: P4Runtime for tables and reports, Thrift for queues.

The same class serves both bindings; only what it is given differs:

* sim -- an ``InProcessController`` on the switch's P4Runtime core, ``queues.direct`` (values
  into the switch's Thrift handler), a ``VirtualScheduler``;
* netns / real BMv2 -- a ``GrpcController`` (its stream messages arrive on a reader thread
  and are handed to the scheduler's loop), ``queues.connect``, a ``RealtimeScheduler``.

The agent is the switch's primary controller: it pushes the pipeline, installs what the plan
says (routes, modelled ports with their clone sessions, report ports holding the law
parameters) and then reacts to reports. It uses the project's multi-switch client, never
p4runtime-shell's single global one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from controlplane import dataplane_config as dp
from controlplane.agent import (
    Command,
    LawTrace,
    PollReport,
    SetQueueDepth,
    SetQueueRate,
    SwitchAgentCore,
    SwitchPlan,
    report_priority,
)
from controlplane.p4runtime_client import uint128
from controlplane.queues import QueueClient, QueueError
from controlplane.report import ReportError, decode

log = logging.getLogger(__name__)

__all__ = ["SwitchAgent", "coalesce"]

NOT_FOUND = 5  # google.rpc.Code: arbitration update "there is no primary"
# A report poll's frame (after its packet_out header): an Ethernet header of no known type, so the
# parser reads nothing further; it never leaves the switch.
POLL_FRAME = bytes(12) + b"\x00\x00"
#: The counter of the routed frames each egress port sent (alinea.p4): the agent's mean frame size.
TX_ROUTED = "MyEgress.tx_routed"
#: The counter of the routed frames queued for each egress port (alinea.p4): the frame its queue rate is in.
FWD_ROUTED = "MyIngress.fwd_routed"
#: Every frame each ingress port received: less the neighbour's reports, the data that makes this switch report.
RX = "MyIngress.rx"


class SwitchAgent:
    def __init__(self, plan: SwitchPlan, client: Any, queues: QueueClient, sched: Any, *,
                 tick_ns: int = 10_000_000, on_trace: Callable[[LawTrace], None] | None = None) -> None:
        self.plan = plan
        self.client = client
        self.queues = queues
        self.sched = sched
        self.tick_ns = tick_ns
        self.core = SwitchAgentCore(plan, on_trace)
        self.errors: list[str] = []
        self.bad_reports = 0
        self.control_latencies_ns: list[int] = []  # real time: packet-in read -> queue call returned
        self._tick_handle: Any = None
        # real time: packet-ins read by the client's thread, waiting for the loop (see on_stream_message)
        self._inbox: list[tuple[pb.PacketIn, int]] = []
        self._inbox_lock = threading.Lock()
        self.read_frames = True  # False once the switch could not give its frame counters
        self.read_queued = True  # False once the switch could not give FWD_ROUTED (an older alinea.p4)

    def install(self, p4info: Any, device_config: bytes) -> None:
        """Push the pipeline and everything the plan says; set the queues; start ticking."""
        c = self.client
        c.set_pipeline(p4info, device_config)
        updates = [dp.route_update(c, r.prefix, r.prefix_len, r.port, r.dst_mac, r.src_mac) for r in self.plan.routes]
        for g in self.plan.groups:
            updates += dp.ecmp_updates(c, g.group_id, [(h.port, h.dst_mac, h.src_mac) for h in g.hops], g.prefixes)
        updates += [dp.dst_class_update(c, prefix, plen, cls) for prefix, plen, cls in self.plan.dst_classes]
        updates += dp.multicast_updates(c, [(m.address, m.group_id, [(h.port, h.dst_mac, h.src_mac) for h in m.hops])
                                            for m in self.plan.multicast])
        classes = self.plan.classes > 1
        if classes and self.plan.modelled:
            updates.append(dp.report_path_update(c, report_priority(self.plan.classes)))
        for m in self.plan.modelled:
            updates += dp.model_port_updates(c, m.port, recirculate=classes, capacity_pkts=m.params.capacity,
                                             report_interval_us=m.params.interval_us, node_id=self.plan.node_id,
                                             port_mac=m.port_mac, upstream_mac=m.upstream_mac)
        for reg in self.plan.regulated:
            updates.append(pb.Update(type=pb.Update.INSERT,
                                     entity=pb.Entity(table_entry=dp.report_entry(c, reg.port, reg.law))))
        if updates:
            c.write(*updates)
        self.apply(self.core.start())
        self._tick_handle = self.sched.call_later(self.tick_ns, self._tick)

    # ---- events -----------------------------------------------------------------------------------
    def on_stream_message(self, msg: pb.StreamMessageResponse) -> None:
        """The client's stream callback: a packet-in is handled on the scheduler, not inside the
        switch's pipeline run that produced it."""
        kind = msg.WhichOneof("update")
        if kind == "arbitration" and msg.arbitration.status.code == NOT_FOUND:
            # The primary (e.g. `hbh params set`) left and nobody is primary. P4Runtime promotes no
            # one by itself and only accepts an election id >= the highest it has seen, so the
            # agent asks again above that id (PI and p4switch alike).
            self.client.rearbitrate(above=uint128(msg.arbitration.election_id))
            return
        if kind == "packet":
            soon = getattr(self.sched, "call_soon_threadsafe", None)  # gRPC: from the client's reader thread
            if soon is None:
                self.sched.call_later(0, self.handle_packet_in, msg.packet)
                return
            with self._inbox_lock:
                self._inbox.append((msg.packet, time.monotonic_ns()))
                first = len(self._inbox) == 1
            if first:
                soon(self._handle_inbox)

    def _handle_inbox(self) -> None:
        """Every packet-in waiting, in order, each through the law; then one Thrift call per queue
        whose rate changed, with the batch's last rate.

        Why: a set_queue_rate is a Thrift round trip (0.3-0.7 ms on this machine), and at 32 times
        the paper's rates (a report every 0.3 ms) one call per report fell behind without end: the
        median control latency grew from 0.7 ms to 92 ms (docs/howto/netns.md, "At higher link rates").
        Every report still moves the law; only the rates superseded within a batch, which would
        have held for less than a call's time, are not sent."""
        with self._inbox_lock:
            batch, self._inbox = self._inbox, []
        commands: list[Command] = []
        changed: list[int] = []
        for pin, received_ns in batch:
            cmds = self.report_commands(pin.payload, self.client.names.packet_in_metadata(pin))
            commands += cmds
            if cmds:
                changed.append(received_ns)
        self.apply(coalesce(commands))
        done = time.monotonic_ns()
        self.control_latencies_ns.extend(done - t for t in changed)

    def on_packet_in(self, payload: bytes, meta: dict[str, int]) -> None:
        """An in-process client's packet-in callback (``InProcessController(on_packet_in=...)``):
        handled on the scheduler, as :meth:`on_stream_message` does with a PacketIn message."""
        self.sched.call_later(0, self.handle_report, payload, meta)

    def handle_packet_in(self, pin: pb.PacketIn, received_ns: int | None = None) -> None:
        """``received_ns`` (real time only): when the client read the packet-in; the time from
        there until the queue call returned is kept in ``control_latencies_ns``."""
        self.handle_report(pin.payload, self.client.names.packet_in_metadata(pin), received_ns)

    def handle_report(self, payload: bytes, meta: dict[str, int], received_ns: int | None = None) -> None:
        """One packet-in: its payload (a report) and its controller-header metadata by name."""
        commands = self.report_commands(payload, meta)
        if commands:  # most reports change no rate (a call saved per report in a simulation)
            self.apply(commands)
            if received_ns is not None:
                self.control_latencies_ns.append(time.monotonic_ns() - received_ns)

    def report_commands(self, payload: bytes, meta: dict[str, int]) -> list[Command]:
        """The law's commands for one report (none for a packet-in that is not a report)."""
        try:
            report = decode(payload)
        except ReportError as exc:
            self.bad_reports += 1
            log.warning("%s: packet-in on port %s is not a report: %s", self.plan.name, meta.get("ingress_port"), exc)
            return []
        return self.core.on_report(self.sched.now_ns(), meta["ingress_port"], meta, report)

    def set_link_rate(self, port: int, rate_bps: float) -> None:
        """The emulated link over ``port`` carries ``rate_bps`` now (topo/netns/link_pacing.py, on this agent's
        loop): the port's queues are resent within it, at the mean frame the port sends."""
        self.apply(self.core.set_link_rate(port, rate_bps))

    def _tick(self) -> None:
        now = self.sched.now_ns()
        commands = self.core.on_tick(now)
        ports = self.core.counters_due(now)
        if ports and self.read_frames:
            arrival_ports = self.core.arrival_ports()
            frames, queued, arrivals = self._frame_counters(ports, arrival_ports)
            commands += self.core.on_frame_counters(frames, queued)
            if arrivals:
                commands += self.core.on_arrival_counters(now, arrivals)
        if commands:
            self.apply(commands)
        self._tick_handle = self.sched.call_later(self.tick_ns, self._tick)

    def _frame_counters(self, ports: tuple[int, ...], arrival_ports: tuple[int, ...] = ()
                        ) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]] | None, list[tuple[int, int]]]:
        """(port, packets, bytes) of each of ``ports``' routed frames sent and queued (None: not read), and (port,
        frames received) of each of ``arrival_ports`` (one P4Runtime Read). A switch whose program has no
        ``FWD_ROUTED`` (an older alinea.p4) is read without it from then on: its queue rates are in the frames its
        ports sent. One without the others is told once; its rates keep the topology's sizes and the reports'
        interval rate."""
        queued_cells = [(FWD_ROUTED, p) for p in ports] if self.read_queued else []
        cells = [(TX_ROUTED, p) for p in ports] + [(RX, p) for p in arrival_ports] + queued_cells
        try:
            counts = self.client.read_counters(cells)
        except Exception as exc:  # noqa: BLE001 - a Read's error is the client's or gRPC's, either way the same
            if queued_cells:
                self.read_queued = False
                log.warning("%s: cannot read %s (%s): queue rates in the frames each port sent", self.plan.name,
                            FWD_ROUTED, exc)
                return self._frame_counters(ports, arrival_ports)
            self.read_frames = False
            self.errors.append(f"{self.plan.name}: cannot read {TX_ROUTED}/{RX}: {exc}")
            log.error("%s", self.errors[-1])
            return [], None, []
        n, m = len(ports), len(ports) + len(arrival_ports)
        frames = [(p, packets, nbytes) for p, (packets, nbytes) in zip(ports, counts[:n])]
        queued = [(p, packets, nbytes) for p, (packets, nbytes) in zip(ports, counts[m:])] if queued_cells else None
        return frames, queued, [(p, counts[n + i][0]) for i, p in enumerate(arrival_ports)]

    def apply(self, commands: list[Command]) -> None:
        for cmd in commands:
            try:
                if isinstance(cmd, SetQueueRate):
                    self.queues.set_queue_rate(cmd.port, cmd.pps, cmd.priority)
                elif isinstance(cmd, SetQueueDepth):
                    self.queues.set_queue_depth(cmd.port, cmd.depth)
                elif isinstance(cmd, PollReport):
                    self.client.send_packet_out(POLL_FRAME, egress_port=cmd.port, report_poll=1,
                                                poll_class=cmd.data_class, _pad=0)
            except QueueError as exc:
                self.errors.append(str(exc))
                log.error("%s", exc)

    def stop(self) -> None:
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None


def coalesce(commands: list[Command]) -> list[Command]:
    """``commands`` in order, each queue's rate only once, at its last value, where its first was."""
    last: dict[tuple[int, int | None], int] = {}
    for i, cmd in enumerate(commands):
        if isinstance(cmd, SetQueueRate):
            last[(cmd.port, cmd.priority)] = i
    out: list[Command] = []
    seen: set[tuple[int, int | None]] = set()
    for cmd in commands:
        if not isinstance(cmd, SetQueueRate):
            out.append(cmd)
            continue
        key = (cmd.port, cmd.priority)
        if key not in seen:
            seen.add(key)
            out.append(commands[last[key]])
    return out
