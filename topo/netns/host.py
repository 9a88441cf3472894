"""One end host of a netns run, as a process inside the host's network namespace.

    ip netns exec NS python -m topo.netns.host --topology T.pkl --host H1 --seed 1 \\
        --duration-ns N --out H1.pkl --prefix hbhXXXXX [--ifname eth0]

Why a process of its own: in the netns backend every host is a real machine on a real (veth)
link. It runs the SAME host code as the simulator (:class:`topo.sim.network.SimHostNode`: ALINEA or
fixed senders, receiver with its playout buffer and reports, all sans-I/O) on a
:class:`~runtime.sched.RealtimeScheduler`, and sends and receives real frames on an AF_PACKET
socket (:class:`~runtime.ports.PacketSocketPort`). The host->switch direction of its link
(bit rate and propagation delay) is modelled here with the link's own
:class:`~runtime.link.Transmitter`, exactly as the simulator's in-memory link does.

Protocol with the runner, on stdin/stdout (one line each, all waits bounded by the runner):
the host prints ``ready`` once its socket is open; the runner writes ``start T0`` where ``T0``
is the run's time 0 on CLOCK_MONOTONIC (shared by all namespaces); the host runs until
``T0 + duration``, samples every ``SAMPLE_NS`` on the same nominal times as the simulator,
writes its results (a pickle the runner merges) to ``--out`` and prints ``done``. SIGTERM or
SIGINT ends it early, results written all the same.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from controlplane.report import is_report
from runtime.hostrelay import HostRelay
from runtime.link import LinkModel, Transmitter
from runtime.offload import VNET_HDR_LEN
from runtime.ports import PacketSocketPort, PortStats
from runtime.sched import RealtimeScheduler
from topo.net.model import Event, Topology
from topo.net.plan import neighbour_mac
from topo.net.record import BufferSample, Recorder
from topo.net.starts import host_rng, host_starts
from topo.netns.loop_trace import LoopTrace
from topo.netns.pace import KERNEL_CC, TRAILER_BYTES, KernelPacedFlows
from topo.netns.tcp_ends import TcpEnds, TcpEndsProcess, open_tcp_ends
from topo.netns.tcpflow import TCP_PORT_BASE, TUN_MTU, TunRelay
from topo.sim.network import (
    HOST_TX_QUEUE,
    SAMPLE_NS,
    SimHostNode,
    cvihis_params,
    new_counts,
    reorder_hook,
    source_offset,
)

__all__ = ["main", "RunClock", "HostUplink", "RelayUplink", "python_loop_reason"]

READY, DONE = "ready", "done"
RELAY_ENV = "HBH_HOST_RELAY"


class RunClock:
    """The run's clock: a RealtimeScheduler seen with its 0 at the run's ``T0``.

    Why: the host core asks a scheduler for ``now_ns()``; in a netns run that must be the
    run's time (flows start at their ``start`` after T0, samples and records line up with the
    runner's), not the time since this process started.
    """

    def __init__(self, sched: RealtimeScheduler, t0_monotonic_ns: int) -> None:
        self.sched = sched
        self.offset = t0_monotonic_ns - (time.monotonic_ns() - sched.now_ns())

    def now_ns(self) -> int:
        return self.sched.now_ns() - self.offset

    def call_at(self, t_ns: int, fn: Any, *args: Any) -> Any:
        return self.sched.call_at(t_ns + self.offset, fn, *args)

    def call_later(self, dt_ns: int, fn: Any, *args: Any) -> Any:
        return self.sched.call_later(dt_ns, fn, *args)


class HostUplink:
    """The host->switch direction of the host's link: serialization at the link's rate, then
    the propagation delay, then the real socket (the switch->host direction is the switch's).

    Frames handed over while the wire is busy wait (the NIC queue) and a rate change re-times
    them (``set_bitrate``), as the simulator's link does (engine/src/net/link.rs, ``Nic``)."""

    def __init__(self, clock: RunClock, port: PacketSocketPort, model: LinkModel) -> None:
        self.clock = clock
        self.port = port
        self.tx = Transmitter(model)
        self.model = model
        self.delay_ns = model.delay_ns
        self.sent_bytes = 0
        self.loss: Callable[[bytes], bool] | None = None  # True: lose the frame on the wire
        self.trace: LoopTrace | None = None  # HBH_LOOP_TRACE (topo/netns/loop_trace.py)
        self.extra_delay: Callable[..., int] | None = None  # the link's reorder (topo.sim.network.reorder_hook)
        # [handed over at, start, end, extra delay (None: lost), frame, its handle], oldest first,
        # from the last frame that may still be on the wire: what set_bitrate re-times
        self._timeline: deque[list[Any]] = deque()

    def backlog_ns(self, _endpoint: Any, now_ns: int) -> int:
        """How long frames already handed over still occupy the uplink (the host's NIC queue)."""
        return max(0, self.tx.free_at_ns - now_ns)

    def send(self, _endpoint: Any, frame: bytes) -> int:
        now = self.clock.now_ns()
        start, end = self.tx.transmit(now, len(frame))
        self.sent_bytes += len(frame)
        extra = None
        handle = None
        if self.loss is None or not self.loss(frame):  # a lost frame still took its wire time
            extra = self.extra_delay(frame, "up") if self.extra_delay is not None else 0
            handle = self._schedule(frame, end + self.delay_ns + extra)
        timeline = self._timeline
        while timeline and timeline[0][2] <= now:
            timeline.popleft()
        timeline.append([now, start, end, extra, frame, handle])
        return end - start

    def _schedule(self, frame: bytes, due: int) -> Any:
        if self.trace is None:
            return self.clock.call_at(due, self.port.send, frame)
        return self.clock.call_at(due, self._traced_send, frame, due)

    def _traced_send(self, frame: bytes, due: int) -> None:
        self.trace.on_out(frame, self.clock.now_ns() - due)  # type: ignore[union-attr]
        self.port.send(frame)

    def set_bitrate(self, bitrate_bps: int) -> None:
        """A ``link_rate`` event on this host's link: the frame on the wire finishes at the old
        rate, the frames waiting for the wire (not started yet) leave at the new one."""
        self.model = dataclasses.replace(self.model, bitrate_bps=bitrate_bps)
        self.tx.model = self.model
        now = self.clock.now_ns()
        timeline = self._timeline
        waiting = [entry for entry in timeline if entry[1] > now]
        if not waiting:
            return
        before = len(timeline) - len(waiting)
        self.tx.free_at_ns = timeline[before - 1][2] if before else 0
        for entry in waiting:
            at, _start, _end, extra, frame, handle = entry
            entry[1], entry[2] = self.tx.transmit(at, len(frame))
            if handle is not None:
                handle.cancel()
                entry[5] = self._schedule(frame, entry[2] + self.delay_ns + extra)


class RelayUplink:
    """The host->switch direction of the host's link in the engine's relay thread
    (:class:`runtime.hostrelay.HostRelay`, engine/src/hosts/hostrelay.rs): the same model as :class:`HostUplink`,
    but the kernel's TCP segments never enter Python, and neither do the timers that hold every
    frame for its wire time and delay. Python's own frames (datagrams, reports) are handed in here."""

    def __init__(self, clock: RunClock, relay: HostRelay, model: LinkModel) -> None:
        self.clock = clock
        self.relay = relay
        self.model = model
        self.delay_ns = model.delay_ns
        self.loss: Callable[[bytes], bool] | None = None  # True: lose the frame on the wire
        self.trace: LoopTrace | None = None  # never set: the relay is not used with HBH_LOOP_TRACE
        self.extra_delay: Callable[..., int] | None = None  # the link's reorder (topo.sim.network.reorder_hook)

    @property
    def sent_bytes(self) -> int:
        return int(self.relay.stats()["uplink_bytes"])

    def backlog_ns(self, _endpoint: Any, now_ns: int) -> int:
        return int(self.relay.backlog_ns(now_ns))

    def send(self, _endpoint: Any, frame: bytes) -> int:
        lost = self.loss is not None and self.loss(frame)
        extra = self.extra_delay(frame, "up") if self.extra_delay is not None and not lost else 0
        start, end = self.relay.send(self.clock.now_ns(), frame, extra, lost)
        return int(end - start)

    def set_bitrate(self, bitrate_bps: int) -> None:
        """As :meth:`HostUplink.set_bitrate`, in the relay (``Uplink::retime``)."""
        self.model = dataclasses.replace(self.model, bitrate_bps=bitrate_bps)
        self.relay.set_bitrate(bitrate_bps, self.clock.now_ns())


class _HostNet:
    """What :class:`SimHostNode` reads from its network, for one host alone."""

    def __init__(self, topo: Topology, seed: int, host: str, clock: RunClock) -> None:
        self.topo = topo
        self.rng = host_rng(seed, host)
        # this host's starts, its generator's first draws (topo/net/starts.py: the analysis draws them alike)
        self.starts = host_starts(topo, host, self.rng)
        self.sched = clock
        self.recorder = Recorder()
        self.flow_names = {i + 1: f.name for i, f in enumerate(topo.flows)}
        self.wire_ids = topo.wire_ids()  # flow name -> the id on the wire (a group's branches: its lead's)
        self.counts: dict[str, int] = new_counts()

    def cvihis_params(self, f: Any) -> Any:
        return cvihis_params(self.topo, f)

    def offset_of_flow(self, fid: int) -> int:
        return source_offset(self.topo, fid)


class NetnsHost:
    """A :class:`SimHostNode` on a real interface, sampled on the simulator's nominal times."""

    def __init__(self, topo: Topology, name: str, seed: int, ifname: str) -> None:
        self.topo = topo
        self.name = name
        self.sched = RealtimeScheduler()
        self.ifname = ifname
        self.seed = seed
        self.port: PacketSocketPort | None = None
        self.node: SimHostNode | None = None
        self.net: _HostNet | None = None
        self.samples: list[dict[str, Any]] = []
        self.finished = threading.Event()
        self._lock = threading.Lock()
        # kernel TCP flows (topo/netns/tcpflow.py): flow id -> flow, for the flows this host sends or receives
        self.tcp_flows = {i + 1: f for i, f in enumerate(topo.flows) if f.control == "tcp" and name in (f.src, f.dst)}
        self.tun: TunRelay | None = None
        self.tcp: TcpEnds | TcpEndsProcess | None = None  # the sockets' threads, or their process (topo/netns/tcp_ends.py)
        self._eth_header = b""
        self.paced: KernelPacedFlows | None = None  # cc: cvihis-rtm flows (topo/netns/pace.py)
        # a paced flow's sender carries a CVIHIS stamp after each segment: its tun's MTU leaves room for it
        self.tun_mtu = TUN_MTU - TRAILER_BYTES if any(f.cc in KERNEL_CC and f.src == name
                                                      for f in self.tcp_flows.values()) else TUN_MTU
        self.trace = LoopTrace.from_env()  # the frame loop's timeline, for topo/netns/loop_trace.py
        self.relay: HostRelay | None = None  # the frame relay in the engine (engine/src/hosts/hostrelay.rs)

    def open(self) -> None:
        relay_mode()  # a bad HBH_HOST_RELAY is said before anything opens
        self.sched.start()
        self.port = self.sched.run_sync(
            lambda: PacketSocketPort(1, self.ifname, self.sched, on_receive=self._on_frame))
        if self.tcp_flows:
            self._open_tcp()

    def _open_tcp(self) -> None:
        """The tun carrying this host's TCP, and a listening socket per TCP flow it receives (so
        every listener is up before time 0)."""
        topo, me = self.topo, self.name
        (switch,) = topo.neighbours(me)
        self._eth_header = (neighbour_mac(topo, me, switch).to_bytes(6, "big") + topo.mac(me).to_bytes(6, "big")
                            + b"\x08\x00")
        self.tun = TunRelay(topo.ip(me), sack=all(f.sack for f in self.tcp_flows.values()), mtu=self.tun_mtu)
        kernel_cc = {fid: KERNEL_CC.get(f.cc or "") for fid, f in self.tcp_flows.items()}
        self.tcp = open_tcp_ends(topo, me, self.tcp_flows, kernel_cc)  # listeners bound now

    def start(self, t0_monotonic_ns: int, duration_ns: int) -> None:
        self.sched.run_sync(self._start, t0_monotonic_ns, duration_ns)

    def _start(self, t0: int, duration_ns: int) -> None:
        clock = RunClock(self.sched, t0)
        self.net = _HostNet(self.topo, self.seed, self.name, clock)
        node = SimHostNode(self.net, self.topo.nodes[self.name])  # type: ignore[arg-type]
        link = self.topo.link_between(self.name, node.switch)
        assert self.port is not None
        model = LinkModel(bitrate_bps=round(link.rate_bps), delay_ns=link.delay_ns, overhead_bytes=0,
                          min_frame_bytes=0)
        node.link = self._uplink(clock, t0, model, link)  # type: ignore[assignment]
        node.link.loss = self._report_loss(self.net)  # type: ignore[union-attr]
        node.link.trace = self.trace  # type: ignore[union-attr]
        # reordering on this host's sending direction (the switch's direction is p4switch's own port)
        node.link.extra_delay = reorder_hook(link, self.seed, self.net.counts)  # type: ignore[union-attr]
        self.node = node
        node.start()
        if self.relay is not None:  # their packets from the relay's thread, not this loop
            for paced in node.paced_senders():
                self.relay.pace(paced.pacer, node.offset)
        for ev in self.topo.events:
            if ev.kind == "alinea":
                clock.call_at(ev.at_ns, self._apply_event, ev)
            elif ev.kind == "link_rate" and ev.link is not None and self.name in ev.link:
                clock.call_at(ev.at_ns, self._set_link_rate, round(ev.rate_bps))
            elif ev.kind == "mode":  # a CVIHIS receiver switching BLM/RTM, as the simulator does it
                fid = next(i + 1 for i, f in enumerate(self.topo.flows) if f.name == ev.flow)
                if self.topo.flows[fid - 1].dst == self.name:
                    clock.call_at(ev.at_ns, lambda fid=fid, mode=ev.mode: node.sinks[fid].core.set_mode(mode))
        self._start_tcp(t0, duration_ns)
        k_last = duration_ns // SAMPLE_NS
        for k in range(k_last + 1):
            clock.call_at(k * SAMPLE_NS, self._sample, k * SAMPLE_NS)
        clock.call_at(duration_ns, self._end, duration_ns)

    def _uplink(self, clock: RunClock, t0: int, model: LinkModel, link: Any) -> HostUplink | RelayUplink:
        """The uplink in the engine's relay thread, or (:func:`python_loop_reason`) in this loop."""
        assert self.port is not None
        why = python_loop_reason(self.tcp_flows.values(), link, self.trace is not None,
                                 self.port._ignores_outgoing)
        if why is not None:
            print(f"netns_host {self.name}: frame loop in Python ({why})", file=sys.stderr, flush=True)
            if self.tun is not None:
                self.sched.add_reader(self.tun.fd, self._from_tun)
            return HostUplink(clock, self.port, model)
        self.sched.remove_reader(self.port.fileno())  # the relay reads the socket from now on
        hdr = VNET_HDR_LEN if self.port.vnet_hdr else 0
        self.relay = HostRelay(self.tun.fd if self.tun is not None else -1, self.port.fileno(), hdr,
                               self._eth_header or bytes(14), model.bitrate_bps, model.delay_ns, t0,
                               HOST_TX_QUEUE)
        self.sched.add_reader(self.relay.notify_fd, self._from_relay)
        return RelayUplink(clock, self.relay, model)

    def _from_relay(self) -> None:
        """The frames the relay hands to Python: everything but the kernel's TCP, each with the
        time it reached the host (the kernel's stamp), which its receive counts it at."""
        assert self.relay is not None and self.port is not None
        with contextlib.suppress(BlockingIOError):
            os.read(self.relay.notify_fd, 8)
        port = self.port
        for frame, wire_len, at_ns in self.relay.take():
            if wire_len:  # offloads to finish, or too long: the port's own slow path
                port._slow_frame(frame, wire_len)
            else:
                self._on_frame(port.number, frame, at_ns)

    def _start_tcp(self, t0: int, duration_ns: int) -> None:
        node = self.node
        assert node is not None and node.link is not None
        link = node.link
        if any(f.cc in KERNEL_CC for f in self.tcp_flows.values()):
            self.paced = KernelPacedFlows(self.topo, self.name, self.tcp_flows, link.clock,
                                          lambda frame: link.send(node, frame), lambda fid: TCP_PORT_BASE + fid,
                                          self.tun_mtu, self._eth_header)
        if self.tcp is None:
            return
        tcp = self.tcp
        pacing = {fid: self.paced.attach(fid, lambda rate, fid=fid: tcp.set_pacing(fid, rate))
                  for fid in (self.paced.senders if self.paced is not None else ())}
        tcp.start(t0, duration_ns, pacing, trace=self.trace is not None)

    def _from_tun(self) -> None:
        """Segments the kernel's TCP sent: frames on the uplink, through the host's NIC queue."""
        assert self.tun is not None
        node = self.node
        packets = self.tun.read()
        if self.trace is not None:
            self.trace.on_read(packets)
        for packet in packets:
            if node is None or node.link is None:
                continue  # before time 0: nothing of ours is running yet
            frame = self._eth_header + packet
            if self.paced is not None:
                frame += self.paced.stamp(packet)
            link = node.link
            if link.backlog_ns(node, node.sched.now_ns()) > HOST_TX_QUEUE * link.model.wire_time_ns(len(frame)):
                node.net.counts["host_tx_queue_full"] += 1
            else:
                link.send(node, frame)

    def _report_loss(self, net: _HostNet) -> Callable[[bytes], bool] | None:
        """``options.report_loss`` on this host's uplink, as the simulator's links lose reports."""
        p = self.topo.options.report_loss
        if p <= 0:
            return None

        def lose(frame: bytes) -> bool:
            if is_report(frame) and net.rng.random() < p:
                net.counts["reports_lost"] += 1
                return True
            return False

        return lose

    def _on_frame(self, _number: int, frame: bytes, at_ns: int | None = None) -> None:
        if self.tun is not None and frame[12:14] == b"\x08\x00" and len(frame) > 23 and frame[23] == 6:
            if self.trace is not None:
                self.trace.on_ack()
            self.tun.write(frame[14:] if self.paced is None else self.paced.strip(frame))  # TCP: the kernel's
            return
        if self.paced is not None and self.paced.on_feedback(frame):
            return
        if self.node is not None:
            self.node.receive(frame, at_ns)

    def _set_link_rate(self, bps: int) -> None:
        """A ``link_rate`` event on this host's link: its wire, and its law's r_max (AlineaHostSender)."""
        node = self.node
        assert node is not None and node.link is not None
        node.link.set_bitrate(bps)
        if node.alinea is not None:
            node.alinea.set_link_rate(bps)

    def _apply_event(self, ev: Event) -> None:
        """The parts of an ALINEA event that concern this host (the runner does the switches')."""
        node = self.node
        assert node is not None
        for u, v in ev.targets:
            if u == self.name and node.alinea is not None:
                node.alinea.set_params(node.alinea.law_params.with_changes(**dict(ev.law_changes)))
            if v == self.name and ev.interval_us is not None and node.reporter is not None:
                node.reporter.interval_us = ev.interval_us

    def _sample(self, t_ns: int) -> None:
        node = self.node
        assert node is not None
        buf, played = None, None
        # the counts are those at the wake-up, which may come late: the sample says when it read them
        read = node.sched.now_ns()
        if node.buffer is not None:
            node.buffer.drain(read)
            b = node.buffer
            buf = BufferSample(t_ns, self.name, b.occupancy, b.capacity, b.played, b.dropped)
            played = b.played_by_flow  # flow id -> packets the application took (docs/reference/metrics.md, goodput)
            # not before its last play (a frame the kernel stamped a hair ahead of this clock may have
            # moved it); no packet taken later plays before it: the buffer's clock never runs back
            # (engine PlayoutBuffer), so its counts are exact at each sample's read time
            read = max(read, b.last_played_ns)
        sent = dict(node.sent)
        received = {fid: (r.received, r.owd_sum_ns) for fid, r in node.records.items()}
        if self.tcp is not None:
            sent |= self.tcp.sent()
            received |= self.tcp.received()
        pgmcc = node.pgmcc.sample(t_ns) if node.pgmcc is not None else []  # the sources' state (pgmcc.csv)
        self.samples.append({"t_ns": t_ns, "sent": sent, "received": received, "buffer": buf, "played": played,
                             "pgmcc": pgmcc, "read_ns": read})

    def _end(self, t_ns: int) -> None:
        self._sample(t_ns)
        self.finished.set()

    def results(self) -> dict[str, Any]:
        """Everything the runner merges: samples, law rows, per-packet records, counters."""
        ends = self.tcp.results() if self.tcp is not None else None  # waits for the endpoints' process

        def collect() -> dict[str, Any]:
            node, net = self.node, self.net
            if node is None or net is None:
                return {"host": self.name, "samples": [], "laws": [], "packets": {}, "counts": {}, "uplink_bytes": 0}
            tcp = self._tcp_results(ends)
            relay = dict(self.relay.stats()) if self.relay is not None else None
            return {"host": self.name, "samples": list(self.samples), "laws": list(net.recorder.laws),
                    "packets": {r.name: r.packets for r in node.records.values()} | tcp.pop("rows"),
                    "counts": self._counts(net, relay), "tcp": tcp,
                    "control_stats": node.control_stats(),
                    "pgmcc_switches": node.pgmcc.switches() if node.pgmcc is not None else [],
                    "uplink_bytes": node.link.sent_bytes if node.link is not None else 0,  # type: ignore[union-attr]
                    "port_stats": self._port_stats(relay), "host_relay": relay}

        return self.sched.run_sync(collect, timeout=10)

    @staticmethod
    def _counts(net: _HostNet, relay: dict[str, int] | None) -> dict[str, int]:
        counts = dict(net.counts)
        if relay is not None:
            counts["host_tx_queue_full"] = counts.get("host_tx_queue_full", 0) + relay["host_tx_queue_full"]
            if relay["to_python_dropped"]:
                counts["host_relay_to_python_dropped"] = relay["to_python_dropped"]
        return counts

    def _port_stats(self, relay: dict[str, int] | None) -> PortStats | None:
        """The socket's counters, the relay's frames included (it reads and writes the socket itself)."""
        if self.port is None or relay is None:
            return self.port.stats if self.port is not None else None
        st = self.port.stats
        return dataclasses.replace(st, rx_frames=st.rx_frames + relay["rx_frames"],
                                   tx_frames=st.tx_frames + relay["tx_frames"],
                                   tx_dropped=st.tx_dropped + relay["tx_dropped"])

    def _tcp_results(self, ends: dict[str, Any] | None) -> dict[str, Any]:
        """Per TCP flow: this end's totals, and (sender) its TCP_INFO samples."""
        if ends is None:
            return {"flows": {}, "samples": [], "rows": {}, "tun_write_errors": 0}
        flows: dict[str, dict[str, Any]] = {name: dict(r) for name, r in ends["flows"].items()}
        for name, pace in (self.paced.results() if self.paced is not None else {}).items():
            flows.setdefault(name, {}).update(pace)
        if self.trace is not None:
            self.trace.send.extend(ends["send_times"])
        return {"flows": flows, "samples": list(ends["samples"]), "rows": dict(ends["rows"]),
                "tun_write_errors": (self.tun.dropped if self.tun is not None else 0)
                + (self.relay.stats()["tun_write_errors"] if self.relay is not None else 0)}

    def _unwatch(self, fd: int) -> None:
        """Stop the loop watching ``fd`` before it is closed."""
        if not self.sched.closed:
            self._without_answer(self.sched.remove_reader, fd)

    def _without_answer(self, fn: Callable[..., Any], *args: Any) -> None:
        """Closing steps that wait for the loop thread: on a starved machine it may not answer in
        run_sync's time (seen at a load of 22: a fabric of 16 hosts on 2 cores). The results are
        written by then, so closing goes on and says so, instead of turning a finished run into a
        failed one."""
        try:
            fn(*args)
        except TimeoutError as exc:
            print(f"netns_host {self.name}: closing without the loop's answer ({exc})", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.relay is not None:  # first: its thread uses the tun's and the socket's descriptors
            self._unwatch(self.relay.notify_fd)
            self.relay.close()
        if self.tcp is not None:
            self.tcp.close()
        if self.trace is not None:
            print(f"netns_host {self.name}: loop trace in {self.trace.write(self.name)}", file=sys.stderr, flush=True)
        if self.tun is not None:
            self._unwatch(self.tun.fd)
            print(f"netns_host {self.name}: {self.tun.drops()}", file=sys.stderr, flush=True)  # (logs/<host>.log)
            self.tun.close()
        if self.port is not None and not self.sched.closed:
            self._without_answer(self.sched.run_sync, self.port.close)
        self._without_answer(self.sched.stop)


def relay_mode() -> str:
    """``HBH_HOST_RELAY``: "engine" (the default) or "python"; anything else is refused by name."""
    mode = os.environ.get(RELAY_ENV, "engine")
    if mode not in ("engine", "python"):
        raise ValueError(f"{RELAY_ENV}={mode!r}: expected 'engine' or 'python'")
    return mode


def python_loop_reason(flows: Iterable[Any], link: Any, traced: bool, ignores_outgoing: bool) -> str | None:
    """Why this host's frames must stay on the Python loop, or None: the engine's relay carries them.

    The relay has no per-frame Python: a paced kernel flow (its CVIHIS stamp on every segment,
    topo/netns/pace.py), reordering on the host's link (its seeded draws per frame), the loop trace
    (per-frame timestamps) and a kernel without PACKET_IGNORE_OUTGOING need it. ``HBH_HOST_RELAY=python``
    keeps the Python loop, for comparison (docs/howto/netns.md)."""
    mode = relay_mode()
    reasons = [why for why, yes in (
        (f"{RELAY_ENV}=python", mode == "python"),
        ("a paced kernel flow", any(f.cc in KERNEL_CC for f in flows)),
        ("reordering on the host's link", link.reorder > 0),
        ("HBH_LOOP_TRACE", traced),
        ("no PACKET_IGNORE_OUTGOING", not ignores_outgoing)) if yes]
    return ", ".join(reasons) or None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m topo.netns.host", description=__doc__.split("\n\n")[0])
    p.add_argument("--topology", required=True, help="the run's topology (pickle written by the runner)")
    p.add_argument("--host", required=True, help="this host's node name")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration-ns", type=int, required=True)
    p.add_argument("--out", required=True, help="where to write the results (pickle)")
    p.add_argument("--prefix", required=True, help="the run's name prefix (lets `hbh clean` find this process)")
    p.add_argument("--ifname", default="eth0")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    topo: Topology = pickle.loads(Path(args.topology).read_bytes())
    if args.host not in topo.nodes or topo.nodes[args.host].is_switch:
        print(f"netns_host: --host {args.host!r}: not a host of topology {topo.name}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, lambda *_: stop.set())
    host = NetnsHost(ending_with_run(topo, args.duration_ns), args.host, args.seed, args.ifname)
    try:
        try:
            host.open()
        except (RuntimeError, ValueError) as exc:  # the TCP ends (topo/netns/tcp_ends.py): said, not traced
            print(f"netns_host {args.host}: {exc}", file=sys.stderr, flush=True)
            return 1
        print(READY, flush=True)
        line = _read_line(stop)
        if line is None or not line.startswith("start "):
            return 1
        host.start(int(line.split()[1]), args.duration_ns)
        deadline = time.monotonic() + args.duration_ns / 1e9 + 60
        while not stop.is_set() and not host.finished.is_set() and time.monotonic() < deadline:
            host.finished.wait(0.1)
        tmp = Path(args.out + ".tmp")
        tmp.write_bytes(pickle.dumps(host.results()))
        tmp.rename(args.out)
        print(DONE, flush=True)
        return 0
    finally:
        host.close()


def ending_with_run(topo: Topology, duration_ns: int) -> Topology:
    """``topo`` with every flow stopped by the run's end (a flow without a stop time sends "until
    the end of the run").

    Why: the simulator's run ends at its duration and nothing follows. A host process lives on
    until the runner has its results (the receiver's records take tens of ms to hand back), and a
    paced flow went on sending meanwhile, while the receiver's loop, busy with its results, sent no
    report: the switch's law saw silence, halved its rate, and the sender's last packets overflowed
    its buffer after the run had ended. Those drops counted as the run's losses (paper-1router at
    256 Mb/s, derived: 2-17 packets in half the runs, none of them before the end)."""
    flows = [dataclasses.replace(f, stop_ns=duration_ns if f.stop_ns is None else min(f.stop_ns, duration_ns))
             for f in topo.flows]
    return dataclasses.replace(topo, flows=flows)


def _read_line(stop: threading.Event) -> str | None:
    """The runner's next line on stdin (None at EOF or when told to stop)."""
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(sys.stdin.readline()), daemon=True)
    t.start()
    while t.is_alive() and not stop.is_set():
        t.join(0.1)
    return box[0].strip() if box and box[0] else None


if __name__ == "__main__":
    sys.exit(main())
