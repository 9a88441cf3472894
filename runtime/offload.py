"""Finishing a received frame's offloads, the way Linux does for a device without them.

Why: a host's
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

import struct
from dataclasses import dataclass

from runtime.crc import reflected_crc_table

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
VNET_STRUCT = struct.Struct("=BBHHHH")  # flags, gso_type, hdr_len, gso_size, csum_start, csum_offset
NO_OFFLOAD = bytes(VNET_HDR_LEN)

ETH_HLEN = 14
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP = 6, 17, 132
TCP_CSUM_OFFSET, UDP_CSUM_OFFSET, SCTP_CSUM_OFFSET = 16, 6, 8
TCP_FIN, TCP_PSH, TCP_CWR = 0x01, 0x08, 0x80

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
        return cls(*VNET_STRUCT.unpack_from(data, 0))

    def pack(self) -> bytes:
        return VNET_STRUCT.pack(self.flags, self.gso_type, self.hdr_len, self.gso_size, self.csum_start,
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


_CRC32C: list[int] = []


def crc32c(data: bytes | Buffer) -> int:
    """CRC32c (Castagnoli, reflected, as SCTP and iSCSI use it); slow, SCTP frames only."""
    if not _CRC32C:
        _CRC32C.extend(reflected_crc_table(0x82F63B78))
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
