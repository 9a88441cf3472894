"""Kernel TCP flows (``control: tcp``) in a netns host process: sockets, records, TCP_INFO, a tun.

Why the kernel's own TCP and not a model: the point is to compare ALINEA with the congestion
controls real stacks run (reno, cubic, bbr: whatever ``tcp_available_congestion_control`` lists).
The simulator runs a model of reno and cubic instead (``hosts/tcp``, ``topo/sim/tcp.py``; docs/howto/tcp.md).

How a TCP flow's packets travel. A host's ``eth0`` carries no IP address (the host process owns
it through AF_PACKET, docs/howto/netns.md). A host with TCP flows gets a tun device (:class:`TunRelay`,
``tcp0``) holding its address ``10.0.<id>.1/32`` and the route to every host; the kernel's TCP
segments leave through it, and the host process sends each one as a frame on its uplink -- the
link's rate and delay, exactly like its datagrams; frames arriving on ``eth0`` that carry TCP are
written back into the tun. That relay runs in the engine's thread (:class:`runtime.hostrelay.HostRelay`,
bound by :class:`topo.netns.host.RelayUplink`), or on the host's Python loop
(:class:`topo.netns.host.HostUplink`) where a frame needs Python (docs/howto/netns.md). ``eth0`` has strict reverse
path filtering, so the kernel does not also take those frames straight from ``eth0``.

What a sender writes: records of :data:`~topo.net.model.TCP_RECORD_BYTES` (the last one of a sized
flow shorter), each a 20-byte header -- its length, its sequence number, the run time (ns) it was
handed to the socket -- and padding. CLOCK_MONOTONIC is shared by every namespace of the machine,
so the receiver's run time minus the stamp is the record's one-way delay as the application sees
it: socket buffer wait included (kept short with ``TCP_NOTSENT_LOWAT``). The sender samples
``TCP_INFO`` on the run's sampling times (:data:`TCPI_FIELDS` lists the offsets of Linux's
``struct tcp_info`` read here).

Both ends are threads of their own with bounded waits (``poll`` at most ``POLL_S``), ending at
the run's end at the latest, so a TCP flow never blocks the host's event loop. ``poll``, not
``select``: a host of a workload with thousands of flows holds a listener per flow it receives,
and its descriptors pass ``select``'s limit (FD_SETSIZE, 1024).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.realtime import enter_realtime
from topo.net.model import TCP_RECORD_BYTES, Flow
from topo.net.record import TcpSample

__all__ = ["tcp_info", "TcpSender", "TcpReceiver", "TunRelay", "RecordParser",
           "TCPI_FIELDS", "TCP_PORT_BASE", "TUN_NAME", "encode_record"]

TCP_PORT_BASE = 5000  # flow number n listens on TCP_PORT_BASE + n
TUN_NAME = "tcp0"
TUN_MTU = 1500
NOTSENT_LOWAT = 16384  # bytes not yet sent the socket may hold: bounds the records' wait in the socket
POLL_S = 0.05
SAMPLE_NS = 100_000_000  # TCP_INFO samples: the run's sampling period (topo.sim.network.SAMPLE_NS)
HEADER = struct.Struct("!IQQ")  # record length (header included), sequence number, send time (run ns)
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_NOTSENT_LOWAT = getattr(socket, "TCP_NOTSENT_LOWAT", 25)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)  # include/uapi/asm-generic/socket.h
#: Fields of Linux's ``struct tcp_info`` (include/uapi/linux/tcp.h) read here: name -> (byte offset,
#: struct format). Fields beyond the length the kernel returns are left out (older kernels).
#: ``ca_state`` is the congestion-avoidance state machine's (include/net/tcp.h, ``enum tcp_ca_state``: 0 Open,
#: 1 Disorder, 2 CWR, 3 Recovery, 4 Loss): it tells a reduction by loss recovery from one in CWR;
#: ``rwnd_limited_us`` (the time the receive window held the sender back) and the flags byte (bit 0:
#: the last delivery-rate sample was application-limited) tell whether the sender was cwnd-limited.
TCPI_FIELDS = {"ca_state": (1, "B"), "flags": (7, "B"), "rtt_us": (68, "I"), "rttvar_us": (72, "I"),
               "snd_ssthresh": (76, "I"), "snd_cwnd": (80, "I"), "total_retrans": (100, "I"),
               "bytes_acked": (120, "Q"), "min_rtt_us": (148, "I"), "rwnd_limited_us": (176, "Q"),
               "bytes_retrans": (208, "Q")}
TCPI_LEN = 232
TCPI_OPTIONS_OFFSET, TCPI_OPT_SACK = 5, 2  # tcpi_options, and its bit for SACK negotiated
IFF_TUN, IFF_NO_PI, TUNSETIFF = 0x0001, 0x1000, 0x400454CA


def sack_in_use(sock: socket.socket) -> bool:
    """Whether the connection negotiated SACK (TCP_INFO's ``tcpi_options``)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCPI_OPTIONS_OFFSET + 1)
    return len(raw) > TCPI_OPTIONS_OFFSET and bool(raw[TCPI_OPTIONS_OFFSET] & TCPI_OPT_SACK)


def tcp_info(sock: socket.socket) -> dict[str, int]:
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCPI_LEN)
    return {name: struct.unpack_from("=" + fmt, raw, off)[0] for name, (off, fmt) in TCPI_FIELDS.items()
            if off + struct.calcsize(fmt) <= len(raw)}


def encode_record(seq: int, length: int, t_ns: int) -> bytes:
    return HEADER.pack(length, seq, t_ns) + bytes(length - HEADER.size)


class RecordParser:
    """The receiver's side of the records: (seq, sent, received) of every complete record."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes, now_ns: int) -> list[tuple[int, int, int]]:
        self.buf += data
        out, pos = [], 0
        while len(self.buf) - pos >= HEADER.size:
            length, seq, sent = HEADER.unpack_from(self.buf, pos)
            if length < HEADER.size:
                raise ValueError(f"corrupt TCP record (length {length})")
            if len(self.buf) - pos < length:
                break
            out.append((seq, sent, now_ns))
            pos += length
        del self.buf[:pos]
        return out


def ready(sock: socket.socket, write: bool, timeout_s: float) -> bool:
    """Whether ``sock`` can be written (``write``) or read -- or has an error or hang-up, which the
    next call reports -- within ``timeout_s``. poll(2): any descriptor number."""
    poller = select.poll()
    poller.register(sock, select.POLLOUT if write else select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def ip_text(address: int) -> str:
    return socket.inet_ntoa(address.to_bytes(4, "big"))


class _Endpoint(threading.Thread):
    """One end of a TCP flow: a thread on the run's clock, ending by ``end_ns`` at the latest."""

    def __init__(self, flow: Flow, fid: int, t0_ns: int, end_ns: int) -> None:
        super().__init__(name=f"tcp-{flow.name}", daemon=True)
        self.flow, self.fid, self.t0_ns, self.end_ns = flow, fid, t0_ns, end_ns
        self.halt = threading.Event()
        self.error: str | None = None
        self.priority = 0  # SCHED_FIFO priority of this thread (0: as created; topo/netns/tcp_ends.py raises it)

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def wait_until(self, t_ns: int) -> bool:
        """Sleep until run time ``t_ns``; False if told to halt first."""
        while (left := t_ns - self.now_ns()) > 0:
            if self.halt.wait(min(left / 1e9, POLL_S)):
                return False
        return not self.halt.is_set()

    def run(self) -> None:
        if self.priority:
            enter_realtime(self.priority)
        try:
            self.work()
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def work(self) -> None:
        raise NotImplementedError


class TcpSender(_Endpoint):
    """Writes records into a TCP socket with the flow's congestion control, samples TCP_INFO."""

    def __init__(self, flow: Flow, fid: int, dst_ip: int, t0_ns: int, end_ns: int, kernel_cc: str | None = None) -> None:
        super().__init__(flow, fid, t0_ns, end_ns)
        self.address = (ip_text(dst_ip), TCP_PORT_BASE + fid)
        self.records_sent = 0
        self.bytes_sent = 0
        self.samples: list[TcpSample] = []
        self.connected_ns: int | None = None
        #: the connection's source port (the kernel's choice): with the destination port, what the
        #: switches' ECMP hash reads of it (topo/results/spine_balance.py)
        self.local_port: int | None = None
        self.sack: bool | None = None  # negotiated, as TCP_INFO says
        #: the flow's kernel congestion control (a paced flow's is its window under the pace, topo/netns/pace.py)
        self.kernel_cc = kernel_cc or flow.cc or ""
        #: ``cc: cvihis-rtm``: the socket's SO_MAX_PACING_RATE (bytes/s), set by the host's loop thread
        self.max_pacing_rate: int | None = None
        self._sock: socket.socket | None = None
        self._sock_lock = threading.Lock()
        self.on_record: Callable[[], None] | None = None  # called for each record written (topo/netns/loop_trace.py)

    def set_max_pacing_rate(self, bytes_per_s: int) -> None:
        """The kernel paces the socket at this rate from its next segment on (any thread)."""
        with self._sock_lock:
            self.max_pacing_rate = bytes_per_s
            if self._sock is not None:
                with contextlib.suppress(OSError):
                    self._sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, min(bytes_per_s, 0xFFFFFFFE))

    def _connect(self, stop_ns: int) -> socket.socket | None:
        while self.now_ns() < stop_ns and not self.halt.is_set():
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, self.kernel_cc.encode())
            sock.setsockopt(socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT, NOTSENT_LOWAT)
            with self._sock_lock:
                self._sock = sock
            if self.max_pacing_rate is not None:  # paced from the first data segment on
                self.set_max_pacing_rate(self.max_pacing_rate)
            sock.settimeout(1.0)
            try:
                sock.connect(self.address)
            except OSError:  # the receiver's listener is up before time 0: only a lossy start lands here
                with self._sock_lock:
                    self._sock = None
                sock.close()
                self.halt.wait(0.1)
                continue
            self.connected_ns = self.now_ns()
            self.local_port = sock.getsockname()[1]
            sock.setblocking(False)
            return sock
        return None

    def work(self) -> None:
        f = self.flow
        stop_ns = min(f.stop_ns if f.stop_ns is not None else self.end_ns, self.end_ns)
        if not self.wait_until(f.start_ns):
            return
        sock = self._connect(stop_ns)
        if sock is None:
            self.error = f"could not connect to {self.address[0]}:{self.address[1]} before {stop_ns / 1e9:g} s"
            return
        acked = False
        try:
            acked = self._send_all(sock, stop_ns)
        finally:
            self._sample(self.now_ns(), sock)
            if not acked:  # at the run's end: no FIN handshake to wait for
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with self._sock_lock:
                self._sock = None
                sock.close()

    def _send_all(self, sock: socket.socket, stop_ns: int) -> bool:
        """Write the flow's records until its size or its stop; True if it ended because the peer
        acknowledged every byte of a sized flow. Such a sender's thread ends there rather than at the
        run's end: a workload of thousands of short flows (docs/howto/fabric.md, "Spine balance") would
        otherwise keep every flow it ever started sampling its socket until the end, a load that grows
        with the run. A flow without a size, or not all acknowledged, is sampled to the end as before."""
        size = self.flow.size_bytes
        pending = b""
        next_sample = -(-self.now_ns() // SAMPLE_NS) * SAMPLE_NS
        shut = False
        while not self.halt.is_set() and (now := self.now_ns()) < self.end_ns:
            if now >= next_sample:
                self._sample(next_sample, sock)
                next_sample += SAMPLE_NS
            wait = min(POLL_S, max(0.0, (next_sample - now) / 1e9))
            done = now >= stop_ns or (size is not None and self.bytes_sent >= size and not pending)
            if done:
                if not shut:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_WR)  # what the socket holds is still delivered
                    shut = True
                if size is not None and self._all_acked(sock):
                    return True
                self.halt.wait(wait)
                continue
            if not ready(sock, True, wait):
                continue
            if not pending:
                queued = self.bytes_sent
                length = TCP_RECORD_BYTES if size is None else min(TCP_RECORD_BYTES, size - queued)
                pending = encode_record(self.records_sent, max(length, HEADER.size), self.now_ns())
            try:
                n = sock.send(pending)
            except BlockingIOError:
                continue
            self.bytes_sent += n
            pending = pending[n:]
            if not pending:
                self.records_sent += 1
                if self.on_record is not None:
                    self.on_record()
        return False

    def _all_acked(self, sock: socket.socket) -> bool:
        try:
            return tcp_info(sock).get("bytes_acked", -1) >= self.bytes_sent
        except OSError:
            return False

    def _sample(self, t_ns: int, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            self.samples.append(TcpSample(t_ns, self.flow.name, self.bytes_sent, tuple(tcp_info(sock).items())))
            self.sack = sack_in_use(sock)

    def result(self) -> dict[str, Any]:
        return {"cc": self.flow.cc, "bytes_sent": self.bytes_sent, "records_sent": self.records_sent,
                "connected_ns": self.connected_ns, "local_port": self.local_port, "sack": self.sack,
                "sender_error": self.error}


class TcpReceiver(_Endpoint):
    """Accepts the flow's connection on a socket listening since before time 0, parses the records."""

    def __init__(self, flow: Flow, fid: int, address: int, t0_ns: int, end_ns: int) -> None:
        super().__init__(flow, fid, t0_ns, end_ns)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((ip_text(address), TCP_PORT_BASE + fid))
        self.listener.listen(1)
        self.records = 0
        self.owd_sum_ns = 0
        self.bytes_received = 0
        self.rows: list[tuple[int, int, int]] = []
        self.completed_ns: int | None = None
        self.parser = RecordParser()
        self.on_rows: Callable[[], None] | None = None  # called after each read's records (topo/netns/tcp_ends.py)

    def work(self) -> None:
        try:
            conn = self._accept()
            if conn is not None:
                with conn:
                    self._receive(conn)
        finally:
            self.listener.close()

    def _accept(self) -> socket.socket | None:
        while not self.halt.is_set() and self.now_ns() < self.end_ns:
            if ready(self.listener, False, POLL_S):
                conn, _peer = self.listener.accept()
                conn.setblocking(False)
                return conn
        return None

    def _receive(self, conn: socket.socket) -> None:
        while not self.halt.is_set() and self.now_ns() < self.end_ns:
            if not ready(conn, False, POLL_S):
                continue
            try:
                data = conn.recv(1 << 16)
            except BlockingIOError:
                continue
            now = self.now_ns()
            if not data:  # the sender shut down its side: everything it wrote has arrived
                if self.flow.size_bytes is not None and self.bytes_received >= self.flow.size_bytes:
                    self.completed_ns = self.rows[-1][2] if self.rows else now
                return
            self.bytes_received += len(data)
            for seq, sent, recv in self.parser.feed(data, now):
                self.rows.append((seq, sent, recv))
                self.records += 1
                self.owd_sum_ns += recv - sent
            if self.on_rows is not None:
                self.on_rows()

    def result(self) -> dict[str, Any]:
        return {"bytes_received": self.bytes_received, "records_received": self.records,
                "completed_ns": self.completed_ns, "receiver_error": self.error}


class TunRelay:
    """The host's TCP/IP interface: a tun device with the host's address; the host process carries
    its packets over the emulated link (``read`` what the kernel sends, ``write`` what arrived)."""

    def __init__(self, address: int, sack: bool = True, mtu: int = TUN_MTU) -> None:
        self.address = ip_text(address)
        self.sack = sack
        self.mtu = mtu
        self.fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        try:
            fcntl.ioctl(self.fd, TUNSETIFF, struct.pack("16sH", TUN_NAME.encode(), IFF_TUN | IFF_NO_PI))
            self._configure()
        except BaseException:
            os.close(self.fd)
            raise
        self.dropped = 0

    def _configure(self) -> None:
        for path, value in ((f"/proc/sys/net/ipv6/conf/{TUN_NAME}/disable_ipv6", "1"),
                            ("/proc/sys/net/ipv4/conf/all/rp_filter", "1"),
                            ("/proc/sys/net/ipv4/conf/eth0/rp_filter", "1"),
                            # per namespace (this host's only): a flow with sack: false turns SACK off
                            ("/proc/sys/net/ipv4/tcp_sack", "1" if self.sack else "0")):
            with contextlib.suppress(OSError):
                Path(path).write_text(value)
        # the qdisc the model assumes whatever the machine's net.core.default_qdisc: fq would pace
        # reno and cubic, fq_codel could drop in the sender's own queue (docs/howto/tcp.md, "Not modelled")
        for cmd in (["tc", "qdisc", "replace", "dev", TUN_NAME, "root", "pfifo_fast"],
                    ["ip", "link", "set", TUN_NAME, "mtu", str(self.mtu), "up"],
                    ["ip", "addr", "add", f"{self.address}/32", "dev", TUN_NAME],
                    ["ip", "route", "add", "10.0.0.0/16", "dev", TUN_NAME, "src", self.address]):
            subprocess.run(cmd, check=True, capture_output=True, timeout=10)

    def read(self, limit: int = 64) -> list[bytes]:
        """Up to ``limit`` IPv4 packets the kernel has sent (IPv6 is off on the tun; anything else is skipped)."""
        out = []
        for _ in range(limit):
            try:
                packet = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if packet and packet[0] >> 4 == 4:
                out.append(packet)
        return out

    def write(self, packet: bytes) -> None:
        try:
            os.write(self.fd, packet)
        except OSError:
            self.dropped += 1

    def drops(self) -> str:
        """What the sender's own device dropped: the tun's ring (``tx_dropped``, a silent loss to TCP)
        and its qdisc (a refusal TCP sees, NET_XMIT_DROP: ``tcp_enter_cwr`` in ``__tcp_transmit_skb``)."""
        try:
            link = subprocess.run(["ip", "-s", "-j", "link", "show", TUN_NAME], capture_output=True, text=True,
                                  timeout=10, check=True).stdout
            qdisc = subprocess.run(["tc", "-s", "-j", "qdisc", "show", "dev", TUN_NAME], capture_output=True,
                                   text=True, timeout=10, check=True).stdout
            tx = json.loads(link)[0]["stats64"]["tx"]
            q = json.loads(qdisc)[0]
        except (OSError, subprocess.SubprocessError, ValueError, LookupError) as exc:
            return f"tun {TUN_NAME}: no statistics ({exc})"
        return (f"tun {TUN_NAME}: {tx['packets']} packets sent, {tx['dropped']} dropped in its ring; qdisc "
                f"{q.get('kind')}: {q.get('drops')} dropped, {q.get('requeues')} requeued, "
                f"{q.get('overlimits')} overlimits")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
