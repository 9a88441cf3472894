"""The data datagram every sender emits: Ethernet / IPv4 / UDP / a 20-byte header / padding.

Why a header of our own: the receiver needs a sequence number (loss, reordering) and the
sender's timestamp (one-way delay; CVIHIS works on OWD differences, so clocks need not agree).

Header (network byte order, right after the UDP header)::

    0  magic   2 bytes  0x4842 ("HB")
    2  version 1 byte   1
    3  kind    1 byte   0 = data, 1 = CVIHIS feedback (its 32 bytes follow the header),
                        2, 3, 4 = the simulator's TCP model: data segment, ACK, SYN (hosts/tcp/wire.py),
                        5 = TFRC report (hosts/tfrc/wire.py), 6 = LEDBAT acknowledgement (hosts/e2e_host.py)
    4  flow    2 bytes  flow id
    6  rtt     2 bytes  sender's RTT estimate in units of 100 µs (0 = unknown; CVIHIS)
    8  seq     4 bytes  per flow, 0, 1, 2, ...
   12  ts_ns   8 bytes  sender clock, ns

The whole frame is ``size`` bytes (the topology's packet size, Ethernet header included).
The IPv4 header never changes within a flow, so its checksum is computed once; the UDP checksum
is 0 (allowed for IPv4). Frames are built from a template with one ``struct.pack_into``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["MAGIC", "HEADER_BYTES", "MIN_FRAME_BYTES", "KIND_DATA", "KIND_FEEDBACK", "KIND_TCP_DATA", "KIND_TCP_ACK",
           "KIND_TCP_SYN", "KIND_TFRC_REPORT", "KIND_LEDBAT_ACK", "Datagram", "FrameTemplate", "parse",
           "DatagramError"]

MAGIC = 0x4842
VERSION = 1
ETH, IP, UDP = 14, 20, 8
OFFSET = ETH + IP + UDP
_HDR = struct.Struct("!HBBHHIQ")
HEADER_BYTES = _HDR.size
MIN_FRAME_BYTES = OFFSET + HEADER_BYTES
DATA_PORT = 5001


class DatagramError(ValueError):
    """Not one of our datagrams."""


KIND_DATA = 0
KIND_FEEDBACK = 1
KIND_TCP_DATA, KIND_TCP_ACK, KIND_TCP_SYN = 2, 3, 4
KIND_TFRC_REPORT, KIND_LEDBAT_ACK = 5, 6


@dataclass(frozen=True, slots=True)
class Datagram:
    flow: int
    seq: int
    ts_ns: int
    rtt_100us: int
    size: int
    src_ip: int
    dst_ip: int
    kind: int = KIND_DATA
    frame: bytes = b""

    def payload(self, n: int) -> bytes:
        """The ``n`` bytes after the header (a feedback message)."""
        return self.frame[OFFSET + HEADER_BYTES:OFFSET + HEADER_BYTES + n]


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class FrameTemplate:
    """The fixed part of one flow's frames; :meth:`frame` fills in the per-packet fields."""

    def __init__(self, *, src_mac: int, dst_mac: int, src_ip: int, dst_ip: int, flow: int, size: int,
                 ttl: int = 64, kind: int = KIND_DATA) -> None:
        if not MIN_FRAME_BYTES <= size <= 9000:
            raise ValueError(f"packet size {size} bytes: must be {MIN_FRAME_BYTES}..9000")
        self.flow = flow
        self.size = size
        self.kind = kind
        eth = dst_mac.to_bytes(6, "big") + src_mac.to_bytes(6, "big") + b"\x08\x00"
        ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, size - ETH, 0, 0x4000, ttl, 17, 0, src_ip, dst_ip))
        struct.pack_into("!H", ip, 10, _checksum(bytes(ip)))
        udp = struct.pack("!HHHH", DATA_PORT + flow % 1000, DATA_PORT, size - ETH - IP, 0)
        self._buf = bytearray(eth + bytes(ip) + udp + bytes(size - OFFSET))

    def frame(self, seq: int, ts_ns: int, rtt_100us: int = 0, payload: bytes = b"") -> bytes:
        _HDR.pack_into(self._buf, OFFSET, MAGIC, VERSION, self.kind, self.flow, min(rtt_100us, 0xFFFF),
                       seq & 0xFFFF_FFFF, ts_ns & 0xFFFF_FFFF_FFFF_FFFF)
        if payload:
            start = OFFSET + HEADER_BYTES
            if start + len(payload) > self.size:
                raise ValueError(f"payload of {len(payload)} bytes does not fit a {self.size}-byte frame")
            self._buf[start:start + len(payload)] = payload
        return bytes(self._buf)


def parse(frame: bytes) -> Datagram:
    """The datagram in ``frame``; DatagramError if it is not one of ours."""
    if len(frame) < MIN_FRAME_BYTES or frame[12:14] != b"\x08\x00" or frame[ETH + 9] != 17:
        raise DatagramError("not an IPv4/UDP frame")
    magic, version, kind, flow, rtt, seq, ts = _HDR.unpack_from(frame, OFFSET)
    if magic != MAGIC or version != VERSION:
        raise DatagramError("no hbh datagram header")
    src_ip, dst_ip = struct.unpack_from("!II", frame, ETH + 12)
    return Datagram(flow, seq, ts, rtt, len(frame), src_ip, dst_ip, kind, frame)
