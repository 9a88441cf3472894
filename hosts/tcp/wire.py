"""The simulator's TCP frames: our datagram header carrying a TCP segment's fields, sized as the
kernel's frames are.

Why the kernel's sizes: the bottleneck's queue counts packets and its link time counts bytes, so
the model's frames must be as long as the kernel's for the two to load the link alike. With TCP
timestamps (Linux's default) a full segment is 14 (Ethernet) + 20 (IPv4) + 32 (TCP) + 1448 bytes
= 1514 bytes, a pure ACK 66 bytes, a SYN 74 bytes (its options are longer).

Fields in the datagram header (hosts/datagram.py): ``seq`` is the segment number (data) or the
cumulative ACK (next segment expected); ``ts_ns`` the timestamp option (TSval on data and SYNs,
TSecr on ACKs and SYN-ACKs). A data frame carries 10 more bytes after the header: the record's
application send time (8) and its payload length (2); an ACK (and a SYN-ACK) carries the receive
window's right edge (4 bytes, a segment number) in the room a pure ACK's 66 bytes leave.

SACK (RFC 2018) as the kernel sends it: a SYN (and a SYN-ACK) permitting it carries the
SACK-permitted option (kind 4, length 2; inside the SYN's 74 bytes, as Linux's SYN holds it beside
MSS, timestamps and window scale); an ACK with n blocks grows by two NOPs, kind 5, length 2 + 8n,
and n pairs of 4-byte edges: 66 + 4 + 8n bytes (78, 86, 94), the same bytes after the window field.
Edges are segment numbers here, not byte sequence numbers.
"""

from __future__ import annotations

import struct

__all__ = ["encode_window", "decode_window", "encode_ack", "decode_ack", "ack_frame_bytes", "SACK_PERMITTED",
           "encode_syn_ack", "decode_syn_ack", "HEADERS_BYTES", "ACK_FRAME_BYTES", "SYN_FRAME_BYTES", "data_frame_bytes", "encode_data", "decode_data",
           "DATA_FIELDS_BYTES"]

HEADERS_BYTES = 14 + 20 + 32
ACK_FRAME_BYTES = HEADERS_BYTES
SYN_FRAME_BYTES = 14 + 20 + 40
_DATA = struct.Struct("!QH")
DATA_FIELDS_BYTES = _DATA.size


def data_frame_bytes(length: int) -> int:
    """A data segment's frame: the headers and ``length`` payload bytes (room for our fields kept)."""
    return HEADERS_BYTES + max(length, DATA_FIELDS_BYTES)


def encode_data(stamp_ns: int, length: int) -> bytes:
    return _DATA.pack(stamp_ns, length)


def decode_data(payload: bytes) -> tuple[int, int]:
    """(application stamp, payload length) of a data frame's fields; ValueError if too short."""
    if len(payload) < DATA_FIELDS_BYTES:
        raise ValueError(f"TCP data fields: {len(payload)} bytes, need {DATA_FIELDS_BYTES}")
    stamp, length = _DATA.unpack_from(payload)
    return stamp, length


_WINDOW = struct.Struct("!I")


def encode_window(window_end: int) -> bytes:
    return _WINDOW.pack(min(window_end, 0xFFFF_FFFF))


def decode_window(payload: bytes) -> int:
    if len(payload) < _WINDOW.size:
        raise ValueError(f"TCP window field: {len(payload)} bytes, need {_WINDOW.size}")
    return _WINDOW.unpack_from(payload)[0]


SACK_PERMITTED = b"\x04\x02"
_SACK_HEAD = struct.Struct("!BBBB")
_EDGES = struct.Struct("!II")


def ack_frame_bytes(blocks: int) -> int:
    """An ACK's frame with ``blocks`` SACK blocks (none: a pure ACK)."""
    return ACK_FRAME_BYTES + (_SACK_HEAD.size + _EDGES.size * blocks if blocks else 0)


def encode_ack(window_end: int, blocks: tuple[tuple[int, int], ...] = ()) -> bytes:
    """The window edge, then the SACK option if there are blocks."""
    out = encode_window(window_end)
    if blocks:
        out += _SACK_HEAD.pack(1, 1, 5, 2 + _EDGES.size * len(blocks))
        out += b"".join(_EDGES.pack(a & 0xFFFF_FFFF, b & 0xFFFF_FFFF) for a, b in blocks)
    return out


def decode_ack(payload: bytes) -> tuple[int, tuple[tuple[int, int], ...]]:
    """(window edge, SACK blocks) of an ACK's fields; ValueError if truncated or malformed."""
    window = decode_window(payload)
    rest = payload[_WINDOW.size:]
    if len(rest) < _SACK_HEAD.size or rest[2] != 5:
        return window, ()
    n, odd = divmod(rest[3] - 2, _EDGES.size)
    if odd or n < 1 or len(rest) < _SACK_HEAD.size + n * _EDGES.size:
        raise ValueError(f"SACK option of length {rest[3]} in a {len(payload)}-byte ACK field")
    return window, tuple(_EDGES.unpack_from(rest, _SACK_HEAD.size + i * _EDGES.size) for i in range(n))


def encode_syn_ack(window_end: int, sack_ok: bool) -> bytes:
    return encode_window(window_end) + (SACK_PERMITTED if sack_ok else b"\x00\x00")


def decode_syn_ack(payload: bytes) -> tuple[int, bool]:
    """(window edge, SACK permitted) of a SYN-ACK's fields."""
    return decode_window(payload), payload[_WINDOW.size:_WINDOW.size + 2] == SACK_PERMITTED
