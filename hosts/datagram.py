"""The data datagram every sender emits: Ethernet / IPv4 / UDP / a 20-byte header / padding.

Why a header of our own: the receiver needs a sequence number (loss, reordering) and the
sender's timestamp (one-way delay; CVIHIS works on OWD differences, so clocks need not agree).

Header (network byte order, right after the UDP header)::

    0  magic   2 bytes  0x4842 ("HB")
    2  version 1 byte   1
    3  kind    1 byte   0 = data, 1 = CVIHIS feedback (its 32 bytes follow the header),
                        2, 3, 4 = the simulator's TCP model: data segment, ACK, SYN (hosts/tcp/wire.py),
                        5 = TFRC report (hosts/tfrc/wire.py), 6 = LEDBAT acknowledgement (hosts/e2e_host.py),
                        7 = GCC receiver report with REMB (hosts/gcc/wire.py),
                        8, 9 = pgmcc data (or repair) and a receiver's ACK or NAK (hosts/pgmcc/wire.py)
    4  flow    2 bytes  flow id
    6  rtt     2 bytes  sender's RTT estimate in units of 100 µs (0 = unknown; CVIHIS)
    8  seq     4 bytes  per flow, 0, 1, 2, ...
   12  ts_ns   8 bytes  sender clock, ns

The whole frame is ``size`` bytes (the topology's packet size, Ethernet header included).
The IPv4 header never changes within a flow, so its checksum is computed once; the UDP checksum
is 0 (allowed for IPv4). Frames are built from a template whose header fields are rewritten per
packet.

The header's one codec is the engine's (engine/src/wire/datagram.rs): :func:`parse` decodes a frame
there (every frame a simulated host receives), :meth:`FrameTemplate.frame` writes the header
there, and the engine's paced sender stamps the same fields. This module keeps the frame's
Ethernet/IPv4/UDP template and names the engine's pieces.
"""

from __future__ import annotations

import struct

import hbh_engine as _engine

__all__ = ["MAGIC", "HEADER_BYTES", "MIN_FRAME_BYTES", "KIND_DATA", "KIND_FEEDBACK", "KIND_TCP_DATA", "KIND_TCP_ACK",
           "KIND_TCP_SYN", "KIND_TFRC_REPORT", "KIND_LEDBAT_ACK", "KIND_GCC_REPORT", "KIND_PGMCC_DATA",
           "KIND_PGMCC_FEEDBACK", "Datagram", "FrameTemplate",
           "parse", "DatagramError"]

MAGIC: int = _engine.DATAGRAM_MAGIC
VERSION: int = _engine.DATAGRAM_VERSION
ETH, IP, UDP = 14, 20, 8
OFFSET: int = _engine.DATAGRAM_OFFSET
HEADER_BYTES: int = _engine.DATAGRAM_HEADER_BYTES
MIN_FRAME_BYTES = OFFSET + HEADER_BYTES
DATA_PORT = 5001

#: Not one of our datagrams (a ``ValueError``).
DatagramError: type[ValueError] = _engine.DatagramError


KIND_DATA = 0
KIND_FEEDBACK = 1
KIND_TCP_DATA, KIND_TCP_ACK, KIND_TCP_SYN = 2, 3, 4
KIND_TFRC_REPORT, KIND_LEDBAT_ACK = 5, 6
KIND_GCC_REPORT = 7
KIND_PGMCC_DATA, KIND_PGMCC_FEEDBACK = 8, 9


#: One received datagram, read-only: ``flow``, ``seq``, ``ts_ns``, ``rtt_100us``, ``size`` (the
#: frame's length), ``src_ip``, ``dst_ip``, ``kind``, ``frame``; ``payload(n)`` is the ``n`` bytes
#: after the header (a feedback message).
Datagram = _engine.Datagram


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class FrameTemplate:
    """The fixed part of one flow's frames; :meth:`frame` fills in the per-packet fields."""

    def __init__(self, *, src_mac: int, dst_mac: int, src_ip: int, dst_ip: int, flow: int, size: int,
                 ttl: int = 64, kind: int = KIND_DATA, dst_port: int = DATA_PORT) -> None:
        if not MIN_FRAME_BYTES <= size <= 9000:
            raise ValueError(f"packet size {size} bytes: must be {MIN_FRAME_BYTES}..9000")
        self.flow = flow
        self.size = size
        self.kind = kind
        eth = dst_mac.to_bytes(6, "big") + src_mac.to_bytes(6, "big") + b"\x08\x00"
        ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, size - ETH, 0, 0x4000, ttl, 17, 0, src_ip, dst_ip))
        struct.pack_into("!H", ip, 10, _checksum(bytes(ip)))
        udp = struct.pack("!HHHH", DATA_PORT + flow % 1000, dst_port, size - ETH - IP, 0)
        self._buf = bytearray(eth + bytes(ip) + udp + bytes(size - OFFSET))

    def frame(self, seq: int, ts_ns: int, rtt_100us: int = 0, payload: bytes = b"") -> bytes:
        _engine.write_datagram_header(self._buf, self.kind, self.flow, rtt_100us, seq, ts_ns)
        if payload:
            start = OFFSET + HEADER_BYTES
            if start + len(payload) > self.size:
                raise ValueError(f"payload of {len(payload)} bytes does not fit a {self.size}-byte frame")
            self._buf[start:start + len(payload)] = payload
        return bytes(self._buf)


#: ``parse(frame) -> Datagram``: the datagram in ``frame`` (bytes, or any buffer); DatagramError
#: if it is not one of ours (not IPv4/UDP, shorter than MIN_FRAME_BYTES, another magic or version).
parse = _engine.parse_datagram
