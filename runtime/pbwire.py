"""Protobuf's wire format read by hand: the varint, and the exception that hands a message back.

Why: the messages a switch or an agent reads per packet or per report (a Write's table entries,
p4switch/p4runtime/wire.py; an agent's packet-ins, controlplane/stream_decode.py) are parsed in
pure Python by protobuf 3.20 (p4runtime-shell pins it), several times slower than reading their
few fields directly. Each reader takes the common shape only and raises :class:`NotCommon` for
anything else, which protobuf then reads.
"""

from __future__ import annotations

__all__ = ["NotCommon", "varint"]


class NotCommon(Exception):
    """Not the common case: parse with protobuf instead."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``buf[pos:]`` and the position after it (:class:`NotCommon` if cut short)."""
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise NotCommon
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos  # a 10th byte above 1 overflows: protobuf drops it
        shift += 7
