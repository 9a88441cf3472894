"""Switch ports: the protocol the switch sees, and AF_PACKET ports on real interfaces.

Why: the switch core only needs ``send(frame)`` and a receive callback; in the ``sim``
binding a port is attached to an :class:`~runtime.link.InMemoryLink`, in the ``netns``
binding to a Linux interface through a raw packet socket read on the
:class:`~runtime.sched.RealtimeScheduler` loop (no reader threads).

``send`` returns the wire time in ns (how long the port's transmitter is busy with the
frame); the traffic manager waits that long before serving the port again. A
:class:`PacketSocketPort` returns its :class:`~runtime.link.LinkModel`'s wire time when
given one (the TM then paces the port at that bit rate; a veth pair has no rate of its own),
else 0.

Receive notes: the kernel strips a VLAN tag from received frames into packet auxdata (not
re-inserted here); frames this socket sends are seen again as PACKET_OUTGOING copies and are
ignored (also filtered by PACKET_IGNORE_OUTGOING where the kernel supports it).

Offloads: a :class:`PacketSocketPort` reads a ``virtio_net_hdr`` with each frame and finishes what
the sending host left to the device (checksum, GSO) with :mod:`runtime.offload`, so the pipeline
and the captures see the frames a wire would carry. A frame that cannot be finished is dropped,
counted in ``stats.rx_dropped`` by cause and logged (the first few per port).
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import re
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import hbh_engine as _engine

from runtime.link import LinkModel
from runtime.offload import (
    NO_OFFLOAD,
    VIRTIO_NET_HDR_F_NEEDS_CSUM,
    VIRTIO_NET_HDR_GSO_NONE,
    VNET_HDR_LEN,
    VNET_STRUCT,
    OffloadError,
    VirtioNetHdr,
    complete_checksum,
    segment,
)
from runtime.sched import RealtimeScheduler

log = logging.getLogger(__name__)

__all__ = ["Port", "PortError", "PortStats", "LinkPort", "PacketSocketPort", "parse_interface_spec", "ReceiveFn"]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
MAX_PORT = 510  # 511 is v1model's default drop port
MAX_FRAME = 65536
MIN_FRAME = 14  # an Ethernet header; shorter frames cannot be sent by a raw socket
RX_BUFFER = 1 << 17  # a 64 KiB GSO super-frame with its Ethernet and virtio headers fits

_DROP_LOG_LIMIT = 10  # per port; later drops are counted only

ReceiveFn = Callable[[int, bytes], None]
#: ``reader(fd, max, hdr_len, slow) -> (frames delivered, errno that ended the read or 0)``
Reader = Callable[[int, int, int, Callable[[bytes, int], None]], tuple[int, int]]


class PortError(Exception):
    """A port cannot be created or configured; the message names the port and interface."""


class Port(Protocol):
    """A switch port as the switch core sees it."""

    number: int
    name: str
    on_receive: ReceiveFn | None

    def send(self, frame: bytes) -> int: ...


_SPEC = re.compile(r"^(\d+)@(\S+)$")
_IFNAME_MAX = 15  # IFNAMSIZ - 1


def parse_interface_spec(spec: str) -> tuple[int, str]:
    """Parse a simple_switch ``-i`` value ``<port>@<interface>``, e.g. ``"1@veth1"``."""
    m = _SPEC.match(spec.strip()) if isinstance(spec, str) else None
    if m is None:
        raise PortError(f"bad interface spec {spec!r}: expected <port>@<interface>, e.g. 1@veth1")
    number, ifname = int(m.group(1)), m.group(2)
    if number > MAX_PORT:
        raise PortError(f"bad interface spec {spec!r}: port {number} out of range 0..{MAX_PORT}")
    if len(ifname) > _IFNAME_MAX or "/" in ifname:
        raise PortError(f"bad interface spec {spec!r}: {ifname!r} is not a valid interface name")
    return number, ifname


@dataclass(slots=True)
class PortStats:
    rx_frames: int = 0  # frames handed to on_receive (each GSO segment counts)
    tx_frames: int = 0
    tx_dropped: int = 0
    tx_lost: int = 0  # frames the link model lost on the wire (--link-loss)
    rx_ignored_outgoing: int = 0
    rx_csum_completed: int = 0  # CHECKSUM_PARTIAL frames finished (segments not included)
    rx_gso_frames: int = 0  # GSO super-frames received
    rx_gso_segments: int = 0  # frames they were cut into
    rx_dropped: dict[str, int] = field(default_factory=dict)  # received frames dropped, by cause


class LinkPort(_engine.LinkPort):
    """A switch port on an :class:`~runtime.link.InMemoryLink` (the ``sim`` binding).

    It is the link's endpoint (``receive``) and the switch's port (``send`` returns the
    link's busy time, which the TM waits). Create it (``LinkPort(number, name, on_receive=None)``),
    create the link with it as one end, then ``attach(link)``. ``receive``, ``send`` and
    ``attach`` run in the engine (engine/src/net/linkport.rs): a frame the link delivers reaches the
    switch's walk (``on_receive`` set to ``V1Walk.receive``), and a frame the walk sends reaches
    the link, with no Python frame per packet hop. Override neither in a subclass: the engine
    calls its own.
    """

    @property
    def stats(self) -> PortStats:
        """The port's counters now (a copy: frames received, sent, dropped for want of a link)."""
        rx, tx, dropped = self.counts()
        return PortStats(rx_frames=rx, tx_frames=tx, tx_dropped=dropped)


class PacketSocketPort:
    """A switch port on a Linux interface through an AF_PACKET/SOCK_RAW socket.

    The socket is bound to the interface, set promiscuous (PACKET_ADD_MEMBERSHIP), made
    non-blocking and watched by ``sched.add_reader``; each wake-up reads at most ``batch``
    frames so that one busy port cannot starve the others and the timers. ``on_receive(number,
    frame)`` is called on the loop thread. A full socket send buffer drops the frame (counted
    in ``stats.tx_dropped``), as a NIC queue would.

    With PACKET_VNET_HDR (``self.vnet_hdr``) received frames have their checksum and GSO
    offloads finished before ``on_receive`` (see the module docstring); frames are read into
    one preallocated buffer and copied out once.
    """

    def __init__(
        self,
        number: int,
        ifname: str,
        sched: RealtimeScheduler,
        on_receive: ReceiveFn | None = None,
        batch: int = 64,
        link: LinkModel | None = None,
        rcvbuf: int = 4 << 20,
    ) -> None:
        if batch < 1:
            raise PortError(f"port {number} ({ifname}): batch must be >= 1, got {batch}")
        self.number = number
        self.name = ifname
        self.on_receive = on_receive
        self.batch = batch
        self.link = link
        #: returns True to lose a frame on the wire (it still takes its wire time), as the
        #: simulator's links do with report loss
        self.loss: Callable[[bytes], bool] | None = None
        #: ``reader(fd, max, hdr_len, slow)``: reads and delivers the frames
        #: itself, several per system call (``hbh_engine.V1Walk.receive_socket``), handing
        #: ``slow(buffer, length)`` the frames whose offloads are left to do; None: frames are
        #: read here, one per call, and given to ``on_receive``
        self.reader: Reader | None = None
        #: ``server()``: serves this port with the others, reading, walking and sending in one
        #: engine call (``hbh_engine.PortServer.serve``, which calls :meth:`served` and
        #: :meth:`slow_frame`); takes precedence over ``reader``
        self.server: Callable[[], object] | None = None
        self.stats = PortStats()
        self._sched = sched
        self._closed = False
        self._buf = bytearray(RX_BUFFER)
        self._view = memoryview(self._buf)
        self._sock, self.vnet_hdr, self._ignores_outgoing = self._open(number, ifname, rcvbuf)
        self._hdr_len = VNET_HDR_LEN if self.vnet_hdr else 0
        try:
            sched.add_reader(self._sock.fileno(), self._on_readable)
        except Exception:
            self._sock.close()
            raise

    @staticmethod
    def _open(number: int, ifname: str, rcvbuf: int) -> tuple[socket.socket, bool, bool]:
        try:
            ifindex = socket.if_nametoindex(ifname)
        except OSError:
            raise PortError(f"port {number}: interface {ifname!r} does not exist") from None
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"port {number} ({ifname}): raw packet sockets need root or CAP_NET_RAW") from None
        try:
            vnet = ignores_outgoing = True
            try:
                sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
            except OSError as exc:
                vnet = False
                log.warning("port %d (%s): PACKET_VNET_HDR unavailable (%s): UDP/TCP from hosts with checksum or "
                            "segmentation offload on will be forwarded unfinished; turn them off on the hosts "
                            "(ethtool -K IFACE tx off tso off gso off)", number, ifname, exc.strerror)
            sock.bind((ifname, ETH_P_ALL))
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            except OSError:  # older kernel: _on_readable checks each frame's pkttype
                ignores_outgoing = False
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise PortError(f"port {number} ({ifname}): cannot open packet socket: {exc.strerror}") from None
        return sock, vnet, ignores_outgoing

    def _on_readable(self) -> None:
        if self.server is not None and self._ignores_outgoing:
            self.server()
            return
        if self.reader is not None and self._ignores_outgoing:
            self._read_batched(self.reader)
            return
        sock, buf, view, hdr = self._sock, self._buf, self._view, self._hdr_len
        size = len(buf)
        for _ in range(self.batch):
            try:
                if self._ignores_outgoing:
                    n = sock.recv_into(buf, 0, socket.MSG_TRUNC)
                else:
                    n, addr = sock.recvfrom_into(buf, 0, socket.MSG_TRUNC)
                    if addr[2] == PACKET_OUTGOING:
                        self.stats.rx_ignored_outgoing += 1
                        continue
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno == errno.ENETDOWN:
                    return  # interface went down; frames will come again when it is up
                if exc.errno == errno.EINVAL and hdr:
                    # packet_rcv_vnet: the kernel has no virtio_net_hdr for this frame's offload
                    # (e.g. SCTP or tunnel GSO) and has dropped it
                    self._drop("vnet_refused", "the kernel could not describe the frame's offload in a "
                                               "virtio_net_hdr (a GSO type it has no code for) and dropped it")
                    continue
                raise
            if n > size:
                self._drop("truncated", f"a frame of {n - hdr} bytes is longer than the receive buffer")
                continue
            if hdr and (buf[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM or buf[1]):
                self._finish_offloads(n)
                continue
            self.stats.rx_frames += 1
            if self.on_receive is not None:
                self.on_receive(self.number, bytes(view[hdr:n]))

    def _read_batched(self, reader: Reader) -> None:
        """``_on_readable`` through ``reader``: the same budget, counts and error handling."""
        left = self.batch
        while left > 0:
            walked, err = reader(self._sock.fileno(), left, self._hdr_len, self._slow_frame)
            if not self.served(walked, err):
                return
            left -= walked + 1

    def served(self, walked: int, err: int) -> bool:
        """A reader in the engine walked ``walked`` frames and stopped on ``err`` (0: none):
        counts them and handles the error as :meth:`_on_readable` does; True to read on."""
        self.stats.rx_frames += walked
        if err in (0, errno.EAGAIN, errno.EINTR, errno.ENETDOWN):
            return False  # ENETDOWN: the interface went down; frames will come again when it is up
        if err == errno.EINVAL and self._hdr_len:
            self._drop("vnet_refused", "the kernel could not describe the frame's offload in a "
                                       "virtio_net_hdr (a GSO type it has no code for) and dropped it")
            return True
        raise OSError(err, os.strerror(err))

    def _slow_frame(self, data: bytes, n: int) -> None:
        """A frame the reader passed back (offloads to finish, or too long), as _on_readable takes it."""
        if n > len(self._buf):
            self._drop("truncated", f"a frame of {n - self._hdr_len} bytes is longer than the receive buffer")
            return
        self._buf[:len(data)] = data
        self._finish_offloads(n)

    def _finish_offloads(self, n: int) -> None:
        """The slow path: a frame with its checksum or segmentation left to do."""
        _flags, gso_type, _, _, csum_start, csum_offset = VNET_STRUCT.unpack_from(self._buf, 0)
        frame = self._view[VNET_HDR_LEN:n]
        try:
            if gso_type == VIRTIO_NET_HDR_GSO_NONE:
                complete_checksum(frame, csum_start, csum_offset)
                frames = [bytes(frame)]
                self.stats.rx_csum_completed += 1
            else:
                frames = segment(frame, VirtioNetHdr.unpack(self._buf))
                self.stats.rx_gso_frames += 1
                self.stats.rx_gso_segments += len(frames)
        except OffloadError as exc:
            self._drop(exc.cause, f"{exc} ({len(frame)}-byte frame, {VirtioNetHdr.unpack(self._buf)})")
            return
        for data in frames:
            self.stats.rx_frames += 1
            if self.on_receive is not None:
                self.on_receive(self.number, data)

    def _drop(self, cause: str, why: str) -> None:
        dropped = self.stats.rx_dropped
        dropped[cause] = dropped.get(cause, 0) + 1
        total = sum(dropped.values())
        if total <= _DROP_LOG_LIMIT:
            log.warning("port %d (%s): received frame dropped (%s): %s%s", self.number, self.name, cause, why,
                        "; further drops are only counted" if total == _DROP_LOG_LIMIT else "")

    def send(self, frame: bytes) -> int:
        """Transmit ``frame``; returns the modelled wire time in ns (0 without a link model).

        With a link model that has a propagation delay, the frame is handed to the kernel that
        much later (a timer on the loop; frames keep their order), as the far end of a long wire
        would see it; the transmitter is still only busy for the wire time.
        """
        if len(frame) < MIN_FRAME:
            raise PortError(f"port {self.number} ({self.name}): frame of {len(frame)} bytes is shorter than "
                            f"an Ethernet header ({MIN_FRAME} bytes)")
        link = self.link
        if self.loss is not None and self.loss(frame):
            self.stats.tx_lost += 1
            return link.wire_time_ns(len(frame)) if link is not None else 0
        if link is not None and link.delay_ns:
            self._sched.call_later(link.delay_ns + link.wire_time_ns(len(frame)), self._transmit, frame)
            return link.wire_time_ns(len(frame))
        self._transmit(frame)
        return link.wire_time_ns(len(frame)) if link is not None else 0

    def set_bitrate(self, bitrate_bps: int) -> None:
        """Change the modelled wire's bit rate from the next frame on (0: no rate limit)."""
        if not isinstance(bitrate_bps, int) or isinstance(bitrate_bps, bool) or bitrate_bps < 0:
            raise PortError(f"port {self.number} ({self.name}): bit rate must be an integer >= 0 b/s, "
                            f"got {bitrate_bps!r}")
        self.link = dataclasses.replace(self.link or LinkModel(), bitrate_bps=bitrate_bps)

    def _transmit(self, frame: bytes) -> None:
        """Hand one frame to the kernel; a full socket buffer or a downed interface drops it."""
        if self._closed:
            return
        try:
            self._sock.send(NO_OFFLOAD + frame if self._hdr_len else frame)
            self.stats.tx_frames += 1
        except (BlockingIOError, InterruptedError):
            self.stats.tx_dropped += 1
        except OSError as exc:
            if exc.errno not in (errno.ENETDOWN, errno.ENOBUFS, errno.ENXIO):
                raise PortError(f"port {self.number} ({self.name}): send failed: {exc.strerror}") from None
            self.stats.tx_dropped += 1

    def fileno(self) -> int:
        return self._sock.fileno()

    @property
    def hdr_len(self) -> int:
        """Bytes of virtio_net_hdr before each frame on the socket (0: none)."""
        return self._hdr_len

    @property
    def ignores_outgoing(self) -> bool:
        """The kernel filters the frames this socket sent (PACKET_IGNORE_OUTGOING), so a reader
        outside this object may read it."""
        return self._ignores_outgoing

    @property
    def slow_frame(self) -> Callable[[bytes, int], None]:
        """The offload handling of a frame an engine reader passed back (buffer, length)."""
        return self._slow_frame

    def close(self) -> None:
        """Stop reading and close the socket (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._sched.closed:
                self._sched.remove_reader(self._sock.fileno())
        finally:
            self._sock.close()
        st = self.stats
        if st.rx_csum_completed or st.rx_gso_frames or st.rx_dropped:
            log.info("port %d (%s): checksums completed %d, GSO frames %d cut into %d segments, received frames "
                     "dropped: %s", self.number, self.name, st.rx_csum_completed, st.rx_gso_frames,
                     st.rx_gso_segments, ", ".join(f"{k}={v}" for k, v in sorted(st.rx_dropped.items())) or "none")

    def __repr__(self) -> str:
        return f"<PacketSocketPort {self.number}@{self.name}>"
