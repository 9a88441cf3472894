"""A whole p4switch: scheduler, ports, traffic manager, pipeline, P4Runtime and Thrift.

Why: the pieces (``sched``, ``tm``, ``ports``/``link``, ``pcap``, ``pipeline``, ``state``,
``p4runtime``, ``thrift_server``) are each usable alone; this module wires them the way
``simple_switch_grpc`` is wired, once, for both bindings:

* **sim** - ``Switch(VirtualScheduler())`` with :meth:`Switch.add_link_port` ports on
  in-memory links; the P4Runtime core (``switch.p4rt``) is called in-process.
* **netns** - :meth:`Switch.from_args` (the ``p4switch`` command): a ``RealtimeScheduler``,
  AF_PACKET ports, the gRPC server and the Thrift server on loopback. Every switch callback
  runs on the scheduler's loop thread; the servers hand their work to it (``run_sync``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hbh_engine as _engine

from p4switch.bmv2json import compile_program_file
from p4switch.device import CompiledProgram, P4SwitchDevice, PipelineHolder
from p4switch.p4runtime.core import P4RuntimeCore
from p4switch.pcap import PortCapture
from p4switch.tm import DEFAULT_QUEUE_DEPTH, TrafficManager
from p4switch.v1model_arch import DropCause, V1ModelSwitchCore
from runtime import heap
from runtime.link import ETHERNET_MIN_FRAME_BYTES, ETHERNET_OVERHEAD_BYTES, LinkModel, RealtimeWire
from runtime.ports import LinkPort, PacketSocketPort, Port, PortError
from runtime.sched import RealtimeScheduler, Scheduler, VirtualScheduler

log = logging.getLogger(__name__)

__all__ = ["Switch", "SwitchOptions", "SwitchError", "DEFAULT_CPU_PORT", "DEFAULT_GRPC_ADDR",
           "DEFAULT_THRIFT_PORT"]

DEFAULT_CPU_PORT = 255  # alinea.p4's CPU_PORT; BMv2 itself has no CPU port unless given one
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
DEFAULT_THRIFT_PORT = 9090
PCAP_FLUSH_NS = 200_000_000  # real time only: captures readable while the switch runs
STATS_LOG_NS = 10_000_000_000  # real time only: drop counters logged when they change
# drop causes of the real-time ports, on send (Switch._send_drops)
PORT_TX_DROPPED = "port_tx_dropped"  # socket buffer full, interface down (a NIC queue's drop)
PORT_SEND_ERROR = "port_send_error"  # the kernel refused the frame (longer than the MTU, ...)


class SwitchError(Exception):
    """The switch cannot be assembled as asked; the message says what and why."""


@dataclass
class SwitchOptions:
    """Everything a switch is configured with (the CLI fills it from its options)."""

    device_id: int = 0
    cpu_port: int | None = DEFAULT_CPU_PORT
    interfaces: list[tuple[int, str]] = field(default_factory=list)
    program: str | None = None
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    grpc_addr: str | None = DEFAULT_GRPC_ADDR
    thrift_host: str = "127.0.0.1"
    thrift_port: int | None = DEFAULT_THRIFT_PORT
    pcap_dir: str | None = None
    queue_depth: int = DEFAULT_QUEUE_DEPTH
    queue_rate_pps: int = 0
    priority_queues: int = 1
    queue_model: str = "bmv2"  # p4switch.tm: "bmv2" (departure fixed at enqueue) or "shaper" (rate at dequeue)
    port_bitrate_bps: int = 0  # 0: no wire model on AF_PACKET ports (the veth paces itself)
    port_bitrates: dict[int, int] = field(default_factory=dict)  # per port, overrides port_bitrate_bps
    port_delay_ns: int = 0  # propagation delay modelled on every AF_PACKET port (0: none)
    port_delays: dict[int, int] = field(default_factory=dict)  # per port, overrides port_delay_ns
    port_overhead_bytes: int = ETHERNET_OVERHEAD_BYTES  # link model: bytes added to each frame on the wire
    port_min_frame_bytes: int = ETHERNET_MIN_FRAME_BYTES  # link model: frames padded to this length
    link_loss: dict[int, float] = field(default_factory=dict)  # EtherType -> fraction lost on every port's wire
    control_socket: str | None = None  # p4switch's link-control socket (p4switch.control), None: off
    seed: int | None = None
    #: serve AF_PACKET ports in the engine's loop (hbh_engine.PortServer); False: the Python
    #: loop reads them (in batches, in the engine) and sends each frame through the port
    engine_loop: bool = True
    #: real time: a timer due within this many ns is waited for by spinning (runtime/sched.py's
    #: ``RealtimeScheduler``; 0: never spin)
    spin_ns: int = RealtimeScheduler.SPIN_NS


class Switch:
    """One v1model switch. Build it, add ports, load a program (or let a controller push one)."""

    def __init__(self, sched: Scheduler, options: SwitchOptions | None = None) -> None:
        self.options = opts = options or SwitchOptions()
        self.sched = sched
        self.realtime = isinstance(sched, RealtimeScheduler)
        self.ports: dict[int, Port] = {}
        self._wires: dict[int, RealtimeWire] = {}
        self.holder = PipelineHolder()
        self.tm = TrafficManager(sched, num_priorities=opts.priority_queues, default_depth=opts.queue_depth,
                                 default_rate_pps=opts.queue_rate_pps, queue_model=opts.queue_model)  # served by the core below
        self.device = P4SwitchDevice(self.holder, self.inject, opts.cpu_port, seed=opts.seed,
                                     on_load=heap.settle if self.realtime else None)
        # the walk hands CPU-port frames to the device itself, which splits the header off and
        # gives the core the metadata it split (no checks again: a report every interval per link)
        self.core = V1ModelSwitchCore(sched, self.tm, self.holder, self._emit, self.device.frame_to_cpu,
                                      cpu_port=opts.cpu_port)
        self.p4rt = P4RuntimeCore(self.device, device_id=opts.device_id, scheduler=sched)
        self.device.packet_in_sink = self.p4rt.split_packet_in
        self.capture: PortCapture | None = None
        if opts.pcap_dir:
            epoch = sched.wall_origin_ns if isinstance(sched, RealtimeScheduler) else 0
            self.capture = PortCapture(opts.pcap_dir, sched.now_ns, epoch_ns=epoch)
        # The engine walks the packets (engine/src/v1model/v1walk.rs) in both bindings: a port's frames
        # go to it and it sends on the port itself, or through _emit where the switch has work of
        # its own per frame out (real time: port errors and wire pacing; captures).
        self.walk: Any = self.core.use_engine_walk()
        self.device.packet_in_router = self.walk.route_packet_ins
        self.grpc_server: Any = None
        self.thrift_server: Any = None
        self.control_server: Any = None
        self._loss_rng = random.Random(opts.seed)
        self._stop = threading.Event()
        self._closed = False
        self._flush_handle: Any = None
        self._server: Any = None  # hbh_engine.PortServer, made with the first served port
        self._tx: dict[int, Any] = {}  # port -> hbh_engine.TxPort: the ports that send in the engine
        self._tx_closed: Counter[str] = Counter()  # the send drops of TxPorts closed since
        if self.realtime:
            self.core.extra_drops = self._send_drops

    # ---- construction for the netns binding --------------------------------------------------
    @classmethod
    def from_args(cls, options: SwitchOptions) -> Switch:
        """A real-time switch on real interfaces with its servers started (like simple_switch_grpc).

        Raises PortError (interface), P4Error (program), SwitchError/OSError (addresses); on any
        failure everything already opened is closed again.
        """
        sched = RealtimeScheduler(spin_ns=options.spin_ns)
        switch = cls(sched, options)
        try:
            switch._check_interfaces(options.interfaces)
            if options.program:
                switch.load_program(options.program, options.include_dirs, options.defines)
            sched.start()
            for number, ifname in options.interfaces:
                sched.run_sync(switch.add_interface, number, ifname)
            switch.start_servers()
            heap.settle()  # the servers' objects too
        except BaseException:
            switch.close()
            raise
        return switch

    def _check_interfaces(self, interfaces: Sequence[tuple[int, str]]) -> None:
        seen: dict[int, str] = {}
        names: dict[str, int] = {}
        for number, ifname in interfaces:
            if number == self.options.cpu_port:
                raise SwitchError(f"-i {number}@{ifname}: port {number} is the CPU port (--cpu-port); "
                                  "choose another port number")
            if number in seen:
                raise SwitchError(f"-i {number}@{ifname}: port {number} is already {number}@{seen[number]}")
            if ifname in names:
                raise SwitchError(f"-i {number}@{ifname}: interface {ifname} is already port {names[ifname]}")
            seen[number], names[ifname] = ifname, number

    # ---- ports ----------------------------------------------------------------------------------
    def add_port(self, port: Port) -> Port:
        """Attach a port object (anything with number, name, send(frame) -> ns, on_receive)."""
        if port.number in self.ports:
            raise SwitchError(f"port {port.number} already exists ({self.ports[port.number].name})")
        if port.number == self.options.cpu_port:
            raise SwitchError(f"port {port.number} is the CPU port")
        direct = not self.realtime and self.capture is None
        port.on_receive = self.walk.receive if direct else self._on_receive
        self.walk.set_port(port.number, port.send if direct else functools.partial(self._emit, port.number))
        self.ports[port.number] = port
        if self.capture is not None:
            self.capture.open_port(port.name)
        return port

    def add_link_port(self, number: int, name: str | None = None) -> LinkPort:
        """An in-memory port (sim binding); attach it to an InMemoryLink afterwards."""
        return self.add_port(LinkPort(number, name or f"port{number}"))  # type: ignore[return-value]

    def add_interface(self, number: int, ifname: str) -> PacketSocketPort:
        """An AF_PACKET port on a Linux interface (real time only; on the loop thread)."""
        if not isinstance(self.sched, RealtimeScheduler):
            raise SwitchError("interfaces need a RealtimeScheduler")
        bitrate = self.options.port_bitrates.get(number, self.options.port_bitrate_bps)
        delay = self.options.port_delays.get(number, self.options.port_delay_ns)
        link = LinkModel(bitrate_bps=bitrate, delay_ns=delay, overhead_bytes=self.options.port_overhead_bytes,
                         min_frame_bytes=self.options.port_min_frame_bytes) if bitrate or delay else None
        port = PacketSocketPort(number, ifname, self.sched, link=link)
        # The engine reads the port's socket, several frames per system call, and walks them;
        # run_due between two frames serves what one queued before the next is walked, so TM
        # queues (and enq_qdepth) grow only when egress is the bottleneck, not because ingress
        # ran a whole batch first.
        capture = functools.partial(self.capture.record_in, ifname) if self.capture is not None else None
        port.reader = functools.partial(self.walk.receive_socket, number, capture=capture,
                                        run_due=self.sched.run_due)
        if self.options.link_loss:
            port.loss = self._lose
        try:
            self.add_port(port)
        except SwitchError:
            port.close()
            raise
        if self.options.engine_loop and port.ignores_outgoing:  # else the Python read filters the socket's own frames
            self._serve(port, native_tx=not self.options.link_loss)
        return port

    def _serve(self, port: PacketSocketPort, native_tx: bool) -> None:
        """Port ``port`` is read, walked and (``native_tx``: without ``--link-loss``, which takes a
        Python step per frame) sent in the engine's loop, its ``--port-delay`` held there too."""
        rt = self.sched
        assert isinstance(rt, RealtimeScheduler)
        if self._server is None:
            self._server = _engine.PortServer(self.walk, rt.engine_heap, rt.monotonic_origin_ns, rt.on_error, rt.wake_fd,
                                              rt.MAX_TIMERS_PER_TURN, rt.TURN_BUDGET_NS, port.batch,
                                              self._captured if self.capture is not None else None)
            rt.set_engine_loop(self._server)
        tx = None
        if native_tx:
            model = port.link or LinkModel(overhead_bytes=self.options.port_overhead_bytes,
                                      min_frame_bytes=self.options.port_min_frame_bytes)
            tx = _engine.TxPort(port.name, port.fileno(), port.vnet_hdr, rt.monotonic_origin_ns, model.bitrate_bps,
                                model.overhead_bytes, model.min_frame_bytes, model.delay_ns, rt.engine_heap)
            self.walk.set_port(port.number, tx)
            self._tx[port.number] = tx
        self._server.add_port(port.number, port.fileno(), port.hdr_len, port.slow_frame, port.served, tx)
        port.server = self._server.serve

    def _captured(self, records: list[tuple[int, bool, int, bytes]]) -> None:
        """Frames the engine's loop saw, stamped when it saw them, into the port captures."""
        assert self.capture is not None
        for number, out, t_ns, frame in records:
            port = self.ports.get(number)
            if port is not None:
                self.capture.record_at(port.name, "out" if out else "in", frame, t_ns)

    def _send_drops(self) -> Counter[str]:
        """Frames the ports dropped on send, by cause, for the switch's drop counts: a full socket
        buffer or a downed interface (``port_tx_dropped``: the Python port's ``stats.tx_dropped``
        or the engine's ``TxPort``), a frame the kernel refused (``port_send_error``: the engine's
        ``TxPort``; the Python path counts its own in the core)."""
        out = Counter(self._tx_closed)
        for number, port in self.ports.items():
            if isinstance(port, PacketSocketPort):
                out[PORT_TX_DROPPED] += port.stats.tx_dropped
            tx = self._tx.get(number)
            if tx is not None:
                _sent, dropped, refused = tx.stats()
                out[PORT_TX_DROPPED] += dropped
                out[PORT_SEND_ERROR] += refused
        return out

    def _lose(self, frame: bytes) -> bool:
        fraction = self.options.link_loss.get(int.from_bytes(frame[12:14], "big"))
        return fraction is not None and self._loss_rng.random() < fraction

    # ---- link control (p4switch.control; on the loop thread) ------------------------------------
    def _socket_port(self, port: Any) -> PacketSocketPort:
        p = self.ports.get(port) if isinstance(port, int) and not isinstance(port, bool) else None
        if not isinstance(p, PacketSocketPort):
            known = ", ".join(str(n) for n, q in sorted(self.ports.items()) if isinstance(q, PacketSocketPort))
            raise SwitchError(f"port {port!r} is not an interface port of this switch (ports: {known or 'none'})")
        return p

    def set_port_bitrate(self, port: int, bps: int) -> None:
        """The wire rate of ``port`` from its next frame on (``--port-bitrate`` at run time)."""
        p = self._socket_port(port)
        if p.link is None:
            p.link = LinkModel(overhead_bytes=self.options.port_overhead_bytes,
                               min_frame_bytes=self.options.port_min_frame_bytes)
        p.set_bitrate(bps)
        if port in self._tx:
            self._tx[port].set_bitrate(bps)
        log.info("port %d (%s): wire bit rate set to %d b/s", port, p.name, bps)

    def port_bitrate(self, port: int) -> int:
        p = self._socket_port(port)
        return p.link.bitrate_bps if p.link is not None else 0

    def link_lost(self) -> dict[str, int]:
        """Frames each port's wire lost by ``--link-loss``, since start."""
        return {str(n): p.stats.tx_lost for n, p in sorted(self.ports.items()) if isinstance(p, PacketSocketPort)}

    def queues(self) -> dict[str, list[int]]:
        """Per port: packets queued in the traffic manager, its depth limit, tail drops so far."""
        tm = self.tm
        return {str(n): [tm.port_depth(n), tm.queue_depth_limit(n), tm.stats(n).dropped_full]
                for n in sorted(self.ports)}

    def egress_drops(self) -> dict[str, int]:
        """Frames the traffic manager tail-dropped per port (queue full), since start."""
        return {str(n): self.tm.stats(n).dropped_full for n in sorted(self.ports)}

    def _on_receive(self, number: int, frame: bytes) -> None:
        if self.capture is not None:
            self.capture.record_in(self.ports[number].name, frame)
        self.walk.receive(number, frame)
        if self.realtime:  # as PacketSocketPort.reader does between two frames (add_interface)
            self.sched.run_due()  # type: ignore[union-attr]

    def _emit(self, number: int, frame: bytes) -> int:
        port = self.ports.get(number)
        if port is None:
            self.core.count_drop(DropCause.NO_PORT)
            return 0
        if self.capture is not None:
            self.capture.record_out(port.name, frame)
        try:
            wire_ns = port.send(frame)
        except PortError as exc:
            self.core.count_drop(PORT_SEND_ERROR)
            log.warning("%s", exc)
            return 0
        return self._paced(number, wire_ns) if self.realtime and wire_ns else wire_ns

    def _paced(self, number: int, wire_ns: int) -> int:
        """Busy time of a modelled wire in real time, keeping frames back to back (RealtimeWire)."""
        wire = self._wires.get(number)
        if wire is None:
            wire = self._wires[number] = RealtimeWire()
        return wire.busy_ns(self.sched.now_ns(), wire_ns)

    def inject(self, port: int, frame: bytes) -> None:
        """A frame enters ingress as if received on ``port`` (tests, tools, packet-outs)."""
        self.walk.receive(port, bytes(frame))

    # ---- program ----------------------------------------------------------------------------------
    def load_program(self, path: str | Path, include_dirs: Iterable[str] = (),
                     defines: Iterable[str] = ()) -> CompiledProgram:
        """Compile a .p4 file and run it (what ``p4switch FILE.p4`` does before any controller).

        A controller may later replace it with SetForwardingPipelineConfig; Read/Write work on
        it meanwhile (as with simple_switch_grpc started with a JSON).
        """
        program = compile_program_file(path, include_dirs, defines)
        if self.realtime and self.sched.running:  # type: ignore[union-attr]
            self.sched.run_sync(self.device.install, program, timeout=60)  # type: ignore[union-attr]
        else:
            self.device.install(program)
        return program

    @property
    def state(self) -> Any:
        return self.holder.state

    @property
    def pipeline(self) -> Any:
        return self.holder.pipeline

    # ---- servers (real time) ------------------------------------------------------------------------
    def _run_in_loop(self, fn: Any) -> Any:
        return self.sched.run_sync(fn, timeout=60)  # type: ignore[union-attr]

    def start_servers(self) -> None:
        """Start the P4Runtime gRPC and the Thrift servers (as configured), and pcap flushing."""
        if not isinstance(self.sched, RealtimeScheduler):
            raise SwitchError("servers need a RealtimeScheduler (call the P4Runtime core in-process instead)")
        opts = self.options
        if opts.grpc_addr:
            from p4switch.p4runtime.server import P4RuntimeServer

            server = P4RuntimeServer(self.p4rt, opts.grpc_addr, submit=self.sched.submit,
                                     try_call=self.sched.try_call, try_now=self.sched.try_now)
            try:
                server.start()
            except OSError as exc:  # ServerBindError: the address and why (e.g. already in use)
                raise SwitchError(f"--grpc-server-addr: {exc}") from None
            self.grpc_server = server
            log.info("P4Runtime gRPC server listening on %s", opts.grpc_addr)
        if opts.thrift_port is not None:
            from p4switch.thrift_server import ThriftServer
            from p4switch.thrift_tables import StandardTables

            thrift = ThriftServer(opts.thrift_host, opts.thrift_port, tm=self.tm, run_in_loop=self._run_in_loop,
                                  clock=self.sched.now_ns, epoch_ns=self.sched.wall_origin_ns,
                                  tables=StandardTables(self.holder, self._run_in_loop))
            try:
                thrift.start()
            except OSError as exc:
                raise SwitchError(str(exc.strerror or exc)) from None
            self.thrift_server = thrift
            log.info("Thrift server listening on %s:%d", opts.thrift_host, thrift.port)
        if opts.control_socket:
            from p4switch.control import ControlServer

            ops = {"set_port_bitrate": self.set_port_bitrate, "port_bitrate": self.port_bitrate,
                   "egress_drops": self.egress_drops, "link_lost": self.link_lost, "queues": self.queues}
            control = ControlServer(opts.control_socket, ops, self._run_in_loop, (SwitchError, PortError))
            try:
                control.start()
            except OSError as exc:
                raise SwitchError(f"--control-socket {opts.control_socket}: {exc.strerror or exc}") from None
            self.control_server = control
            log.info("link-control socket at %s", opts.control_socket)
        if self.capture is not None:
            self.sched.call_soon_threadsafe(self._flush_pcaps)
        self.sched.call_soon_threadsafe(self._log_stats, {})

    def _log_stats(self, last: dict[str, int]) -> None:
        """Every STATS_LOG_NS, the drop counters by cause when they changed (real time)."""
        if self._closed:
            return
        drops = self.core.drop_counts()
        if drops != last:
            log.info("drops by cause: %s", ", ".join(f"{k}={v}" for k, v in sorted(drops.items())))
        self.sched.call_later(STATS_LOG_NS, self._log_stats, drops)

    def _flush_pcaps(self) -> None:
        if self.capture is None or self._closed:
            return
        self.capture.flush()
        self._flush_handle = self.sched.call_later(PCAP_FLUSH_NS, self._flush_pcaps)

    # ---- running ------------------------------------------------------------------------------------
    def run_forever(self) -> None:
        """Serve until :meth:`stop` (real time: blocks this thread; virtual: runs all events)."""
        if isinstance(self.sched, VirtualScheduler):
            self.sched.run()
            return
        if not self.sched.running:  # type: ignore[union-attr]
            self.sched.start()  # type: ignore[union-attr]
        while not self._stop.wait(0.5):
            pass

    def stop(self) -> None:
        """Make :meth:`run_forever` return (safe from a signal handler or any thread)."""
        self._stop.set()

    def close(self) -> None:
        """Stop servers, close ports and flush captures (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for server, stop in ((self.grpc_server, "stop"), (self.thrift_server, "stop"), (self.control_server, "stop")):
            if server is not None:
                with contextlib.suppress(Exception):
                    getattr(server, stop)()
        rt = self.sched if isinstance(self.sched, RealtimeScheduler) else None
        for port in list(self.ports.values()):
            closer = getattr(port, "close", None)
            if closer is None:
                continue
            if self._server is not None and isinstance(port, PacketSocketPort):
                closer = functools.partial(self._close_served, port)
            with contextlib.suppress(Exception):
                if rt is not None and rt.running:
                    rt.run_sync(closer)
                else:
                    closer()
        if rt is not None and not rt.closed:
            with contextlib.suppress(Exception):
                rt.stop()
        if self.capture is not None:
            self.capture.close()
        drops = self.core.drop_counts()
        if drops:
            log.info("drops by cause: %s", ", ".join(f"{k}={v}" for k, v in sorted(drops.items())))

    def _close_served(self, port: PacketSocketPort) -> None:
        """Out of the engine's loop first, then the socket closed (on the loop thread)."""
        tx = self._tx.pop(port.number, None)
        if tx is not None:
            tx.close()
            sent, dropped, refused = tx.stats()
            self._tx_closed.update({PORT_TX_DROPPED: dropped, PORT_SEND_ERROR: refused})
            if dropped or refused:
                log.info("port %d (%s): %d frames sent, %d dropped on send (socket buffer full or interface "
                         "down), %d refused (too short or longer than the MTU)", port.number, port.name, sent,
                         dropped, refused)
        if self._server is not None:
            self._server.remove_port(port.fileno())
        port.close()

    def __enter__(self) -> Switch:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
