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
"""

from __future__ import annotations

import struct

__all__ = ["encode_window", "decode_window", "HEADERS_BYTES", "ACK_FRAME_BYTES", "SYN_FRAME_BYTES", "data_frame_bytes", "encode_data", "decode_data",
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
