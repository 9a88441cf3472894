"""Switch ports: the protocol the switch sees, and AF_PACKET ports on real interfaces.

Why: the switch core only needs ``send(frame)`` and a receive callback; in the ``sim``
binding a port is attached to an :class:`~p4switch.link.InMemoryLink`, in the ``netns``
binding to a Linux interface through a raw packet socket read on the
:class:`~p4switch.sched.RealtimeScheduler` loop (no reader threads).

``send`` returns the wire time in ns (how long the port's transmitter is busy with the
frame); the traffic manager waits that long before serving the port again. A
:class:`PacketSocketPort` returns its :class:`~p4switch.link.LinkModel`'s wire time when
given one (the TM then paces the port at that bit rate; a veth pair has no rate of its own),
else 0.

Receive notes: the kernel strips a VLAN tag from received frames into packet auxdata (not
re-inserted here); frames this socket sends are seen again as PACKET_OUTGOING copies and are
ignored (also filtered by PACKET_IGNORE_OUTGOING where the kernel supports it).

Offloads (why a :class:`PacketSocketPort` reads a ``virtio_net_hdr`` with each frame): a host's
kernel hands UDP and TCP to a veth with the transport checksum left to the "hardware"
(CHECKSUM_PARTIAL: the field holds only the pseudo-header sum) and TCP in super-frames of up
to 64 KiB for it to cut (TSO/GSO). A raw socket sees the frame as handed over; forwarded like
that, the receiving host drops it (``UdpInCsumErrors``) or it cannot be sent at all (longer
than the MTU). With PACKET_VNET_HDR (packet(7)) the kernel puts a 10-byte ``struct
virtio_net_hdr`` in front of every received frame saying what is left to do, and the port does
it the way the kernel does for a device without these offloads: ``skb_checksum_help`` (see
:func:`complete_checksum`: no protocol is parsed) and the software GSO of TCP and UDP over
IPv4/IPv6 (see :func:`segment`). So the pipeline, the traffic manager, the counters and the
captures see the frames a wire would carry, and hosts need not turn offloads off. A frame that
cannot be finished is dropped, counted in ``stats.rx_dropped`` by cause and logged (the first
few per port); :class:`OffloadError` names what is wrong. Sent frames get an all-zero header
(no offload asked for). A kernel without PACKET_VNET_HDR (older than 2.6.34) gets a warning and
frames forwarded as received.
"""

from __future__ import annotations

import errno
import logging
import re
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from p4switch.link import InMemoryLink, LinkModel
from p4switch.sched import RealtimeScheduler

log = logging.getLogger(__name__)

__all__ = ["Port", "PortError", "PortStats", "LinkPort", "PacketSocketPort", "parse_interface_spec", "ReceiveFn",
           "OffloadError", "VirtioNetHdr", "complete_checksum", "segment", "crc32c"]

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

# struct virtio_net_hdr (include/uapi/linux/virtio_net.h), in host byte order for a packet socket
VNET_HDR_LEN = 10
VIRTIO_NET_HDR_F_NEEDS_CSUM = 1
VIRTIO_NET_HDR_GSO_NONE = 0
VIRTIO_NET_HDR_GSO_TCPV4 = 1
VIRTIO_NET_HDR_GSO_UDP = 3  # UFO: IP fragmentation, which current kernels no longer report
VIRTIO_NET_HDR_GSO_TCPV6 = 4
VIRTIO_NET_HDR_GSO_UDP_L4 = 5
VIRTIO_NET_HDR_GSO_ACCECN = 0x10
VIRTIO_NET_HDR_GSO_ECN = 0x80
_VNET = struct.Struct("=BBHHHH")  # flags, gso_type, hdr_len, gso_size, csum_start, csum_offset
_NO_OFFLOAD = bytes(VNET_HDR_LEN)

ETH_HLEN = 14
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP = 6, 17, 132
TCP_CSUM_OFFSET, UDP_CSUM_OFFSET, SCTP_CSUM_OFFSET = 16, 6, 8
TCP_FIN, TCP_PSH, TCP_CWR = 0x01, 0x08, 0x80
_DROP_LOG_LIMIT = 10  # per port; later drops are counted only

ReceiveFn = Callable[[int, bytes], None]


class PortError(Exception):
    """A port cannot be created or configured; the message names the port and interface."""


class OffloadError(ValueError):
    """A received frame's offload cannot be finished; ``cause`` names its drop counter."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True, slots=True)
class VirtioNetHdr:
    """What the kernel left to do for a received frame (``struct virtio_net_hdr``)."""

    flags: int = 0
    gso_type: int = VIRTIO_NET_HDR_GSO_NONE
    hdr_len: int = 0  # a hint from the kernel (its linear part), not the header length
    gso_size: int = 0
    csum_start: int = 0
    csum_offset: int = 0

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview) -> VirtioNetHdr:
        return cls(*_VNET.unpack_from(data, 0))

    def pack(self) -> bytes:
        return _VNET.pack(self.flags, self.gso_type, self.hdr_len, self.gso_size, self.csum_start,
                          self.csum_offset)

    @property
    def needs_csum(self) -> bool:
        return bool(self.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)


# ---- finishing offloads the way the kernel does without a capable device -------------------------

Buffer = bytearray | memoryview


def complete_checksum(frame: Buffer, csum_start: int, csum_offset: int) -> None:
    """Finish a CHECKSUM_PARTIAL frame in place, as the kernel's ``skb_checksum_help`` does.

    Why no protocol is parsed: the field at ``csum_start + csum_offset`` already holds the
    pseudo-header sum, so the ones' complement sum of everything from ``csum_start`` to the end
    of the frame (that field included), complemented, is the checksum of any protocol using the
    Internet checksum (UDP, TCP, ICMPv6, ... over IPv4 or IPv6). As the kernel does, a result of
    0 is sent as 0xFFFF (``CSUM_MANGLED_0``; for UDP, 0 would mean "no checksum").

    The one exception is SCTP, whose checksum is a CRC32c: the kernel marks it on the skb
    (``csum_not_inet``), but the virtio header cannot say so; a frame whose checksum field is at
    SCTP's offset in an SCTP header right after an IPv4/IPv6 header gets the CRC32c instead
    (``skb_crc32c_csum_help``).

    Arithmetic: 2**16 = 1 (mod 0xFFFF), so the region read as one big-endian integer is, mod
    0xFFFF, the sum of its 16-bit words; a ones' complement sum is never 0 for non-zero data,
    so the folded sum is that remainder, or 0xFFFF when it is 0, and the checksum is
    ``0xFFFF - remainder`` in every case (the mangled 0 included).
    """
    end = len(frame)
    at = csum_start + csum_offset
    if at + 2 > end:
        raise OffloadError("bad_csum_offsets", f"checksum field at {csum_start}+{csum_offset} is not inside the "
                                               f"{end}-byte frame")
    if csum_offset == SCTP_CSUM_OFFSET and _l4_protocol(frame, csum_start) == IPPROTO_SCTP:
        _complete_crc32c(frame, csum_start, at)
        return
    total = int.from_bytes(frame[csum_start:], "big")
    if (end - csum_start) & 1:
        total <<= 8  # the last byte is the high half of a word padded with zero
    struct.pack_into("!H", frame, at, 0xFFFF - total % 0xFFFF)


def _complete_crc32c(frame: Buffer, csum_start: int, at: int) -> None:
    if at + 4 > len(frame):
        raise OffloadError("bad_csum_offsets", f"SCTP checksum at {at} is not inside the {len(frame)}-byte frame")
    struct.pack_into("<I", frame, at, 0)  # the CRC is defined over the packet with the field zero
    struct.pack_into("<I", frame, at, crc32c(frame[csum_start:]))  # RFC 9260 B: sent least significant byte first


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C: list[int] = []


def crc32c(data: bytes | Buffer) -> int:
    """CRC32c (Castagnoli, reflected, as SCTP and iSCSI use it); slow, SCTP frames only."""
    if not _CRC32C:
        _CRC32C.extend(_crc32c_table())
    table, crc = _CRC32C, 0xFFFFFFFF
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _l4_protocol(frame: bytes | Buffer, l4: int) -> int | None:
    """IP protocol of the header at offset ``l4`` if an IPv4/IPv6 header right after the
    Ethernet header leads to it (IPv6: no extension headers), else None."""
    if len(frame) < ETH_HLEN + 20:
        return None
    ethertype = frame[12] << 8 | frame[13]
    if ethertype == ETHERTYPE_IPV4 and frame[14] >> 4 == 4 and ETH_HLEN + (frame[14] & 15) * 4 == l4:
        return frame[23]
    if ethertype == ETHERTYPE_IPV6 and frame[14] >> 4 == 6 and l4 == ETH_HLEN + 40 <= len(frame):
        return frame[20]
    return None


def _ip_header_checksum(header: Buffer) -> int:
    """IPv4 header checksum of ``header`` whose checksum field is zero (as ``ip_send_check``)."""
    return (0xFFFF - int.from_bytes(header, "big") % 0xFFFF) % 0xFFFF


def _pseudo_header_sum(frame: Buffer, l4: int, protocol: int, l4_len: int) -> int:
    """The ones' complement pseudo-header sum (mod 0xFFFF) that a CHECKSUM_PARTIAL field holds."""
    addresses = frame[26:34] if frame[14] >> 4 == 4 else frame[22:54]
    return (int.from_bytes(addresses, "big") + protocol + l4_len) % 0xFFFF


def segment(frame: bytes | Buffer, vnet: VirtioNetHdr) -> list[bytes]:
    """Cut a GSO super-frame into the frames the kernel's software GSO would send.

    Why: a host's TCP (and UDP with UDP_SEGMENT) hands a veth up to 64 KiB at once for the
    device to cut; a switch port must see, queue and count the frames a wire would carry.
    Follows ``inet_gso_segment``/``ipv6_gso_segment`` with ``tcp_gso_segment`` and
    ``__udp_gso_segment``: the payload after the transport header is cut into ``gso_size``
    pieces, each with a copy of the headers; IPv4 total length, identification (+1 per
    segment) and header checksum, IPv6 payload length; TCP sequence number (+ bytes before),
    FIN and PSH only on the last segment, CWR only on the first (kept on all with AccECN); UDP
    length; and each segment's transport checksum completed (:func:`complete_checksum` on
    its pseudo-header sum, as if it were CHECKSUM_PARTIAL and met a device without offload).

    Only TCPv4, TCPv6 and UDP (L4) over an IPv4/IPv6 header right after the Ethernet header
    (no IPv6 extension headers, no tunnel) are cut; anything else raises :class:`OffloadError`.
    """
    kind = vnet.gso_type & ~(VIRTIO_NET_HDR_GSO_ECN | VIRTIO_NET_HDR_GSO_ACCECN)
    versions = {VIRTIO_NET_HDR_GSO_TCPV4: (4,), VIRTIO_NET_HDR_GSO_TCPV6: (6,),
                VIRTIO_NET_HDR_GSO_UDP_L4: (4, 6)}.get(kind)
    if versions is None:
        raise OffloadError("gso_unsupported", f"GSO type {vnet.gso_type:#04x} is not segmented here "
                                              "(TCPv4, TCPv6 and UDP L4 are)")
    if vnet.gso_size == 0:
        raise OffloadError("bad_gso", "GSO frame with gso_size 0")
    tcp = kind != VIRTIO_NET_HDR_GSO_UDP_L4
    proto = IPPROTO_TCP if tcp else IPPROTO_UDP
    version = frame[14] >> 4 if len(frame) > ETH_HLEN else 0
    l4 = ETH_HLEN + (frame[14] & 15) * 4 if version == 4 else ETH_HLEN + 40
    if version not in versions or _l4_protocol(frame, l4) != proto:
        raise OffloadError("gso_unsupported", f"GSO type {vnet.gso_type:#04x} frame without a {'TCP' if tcp else 'UDP'}"
                                              " header right after an IPv4/IPv6 header")
    if vnet.needs_csum and (vnet.csum_start, vnet.csum_offset) != (l4, TCP_CSUM_OFFSET if tcp else UDP_CSUM_OFFSET):
        raise OffloadError("gso_unsupported", f"GSO frame whose checksum ({vnet.csum_start}+{vnet.csum_offset}) is "
                                              f"not the {'TCP' if tcp else 'UDP'} header's at {l4} (a tunnel?)")
    thlen = ((frame[l4 + 12] >> 4) * 4 if len(frame) > l4 + 12 else 0) if tcp else 8
    header_end = l4 + thlen
    if thlen < (20 if tcp else 8) or header_end > len(frame):
        raise OffloadError("bad_gso", f"GSO frame of {len(frame)} bytes with a truncated or bad transport header")
    return _cut(frame, header_end, l4, tcp, vnet)


def _cut(frame: bytes | Buffer, header_end: int, l4: int, tcp: bool, vnet: VirtioNetHdr) -> list[bytes]:
    header = bytes(frame[:header_end])
    payload = memoryview(frame)[header_end:]
    mss, v4 = vnet.gso_size, header[14] >> 4 == 4
    proto, csum_offset = (IPPROTO_TCP, TCP_CSUM_OFFSET) if tcp else (IPPROTO_UDP, UDP_CSUM_OFFSET)
    ip_id = int.from_bytes(header[18:20], "big")
    seq, flags = (int.from_bytes(header[l4 + 4:l4 + 8], "big"), header[l4 + 13]) if tcp else (0, 0)
    keep_cwr = bool(vnet.gso_type & VIRTIO_NET_HDR_GSO_ACCECN)
    count = max(1, -(-len(payload) // mss))
    out = []
    for i in range(count):
        seg = bytearray(header)
        seg += payload[i * mss:(i + 1) * mss]
        l4_len = len(seg) - l4
        if v4:
            struct.pack_into("!HH", seg, 16, len(seg) - ETH_HLEN, (ip_id + i) & 0xFFFF)
            struct.pack_into("!H", seg, 24, 0)
            struct.pack_into("!H", seg, 24, _ip_header_checksum(memoryview(seg)[ETH_HLEN:l4]))
        else:
            struct.pack_into("!H", seg, 18, len(seg) - ETH_HLEN - 40)
        if tcp:
            struct.pack_into("!I", seg, l4 + 4, (seq + i * mss) & 0xFFFFFFFF)
            f = flags if i == count - 1 else flags & ~(TCP_FIN | TCP_PSH)
            seg[l4 + 13] = f if i == 0 or keep_cwr else f & ~TCP_CWR
        else:
            struct.pack_into("!H", seg, l4 + 4, l4_len)
        struct.pack_into("!H", seg, l4 + csum_offset, _pseudo_header_sum(seg, l4, proto, l4_len))
        complete_checksum(seg, l4, csum_offset)
        out.append(bytes(seg))
    return out


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
    rx_ignored_outgoing: int = 0
    rx_csum_completed: int = 0  # CHECKSUM_PARTIAL frames finished (segments not included)
    rx_gso_frames: int = 0  # GSO super-frames received
    rx_gso_segments: int = 0  # frames they were cut into
    rx_dropped: dict[str, int] = field(default_factory=dict)  # received frames dropped, by cause


class LinkPort:
    """A switch port on an :class:`~p4switch.link.InMemoryLink` (the ``sim`` binding).

    It is the link's endpoint (``receive``) and the switch's port (``send`` returns the
    link's busy time, which the TM waits). Create it, create the link with it as one end,
    then ``attach(link)``.
    """

    def __init__(self, number: int, name: str, on_receive: ReceiveFn | None = None) -> None:
        self.number = number
        self.name = name
        self.on_receive = on_receive
        self.link: InMemoryLink | None = None
        self.stats = PortStats()

    def attach(self, link: InMemoryLink) -> None:
        link.direction_from(self)  # raises unless this port is an end of that link
        self.link = link

    def receive(self, frame: bytes) -> None:
        self.stats.rx_frames += 1
        if self.on_receive is not None:
            self.on_receive(self.number, frame)

    def send(self, frame: bytes) -> int:
        if self.link is None:
            self.stats.tx_dropped += 1  # an unconnected port, like a cable-less NIC
            return 0
        self.stats.tx_frames += 1
        return self.link.send(self, frame)

    def __repr__(self) -> str:
        return f"<LinkPort {self.number} {self.name}>"


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

    def _finish_offloads(self, n: int) -> None:
        """The slow path: a frame with its checksum or segmentation left to do."""
        _flags, gso_type, _, _, csum_start, csum_offset = _VNET.unpack_from(self._buf, 0)
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
        """Transmit ``frame``; returns the modelled wire time in ns (0 without a link model)."""
        if len(frame) < MIN_FRAME:
            raise PortError(f"port {self.number} ({self.name}): frame of {len(frame)} bytes is shorter than "
                            f"an Ethernet header ({MIN_FRAME} bytes)")
        try:
            self._sock.send(_NO_OFFLOAD + frame if self._hdr_len else frame)
            self.stats.tx_frames += 1
        except (BlockingIOError, InterruptedError):
            self.stats.tx_dropped += 1
        except OSError as exc:
            if exc.errno not in (errno.ENETDOWN, errno.ENOBUFS, errno.ENXIO):
                raise PortError(f"port {self.number} ({self.name}): send failed: {exc.strerror}") from None
            self.stats.tx_dropped += 1
        return self.link.wire_time_ns(len(frame)) if self.link is not None else 0

    def fileno(self) -> int:
        return self._sock.fileno()

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
