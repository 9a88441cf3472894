"""pgmcc's messages after the datagram header (hosts/datagram.py).

Data (ODATA and RDATA), 8 bytes after the header, whose own ``seq`` is the *transmission* number
(every packet sent, new or repair, gets the next one: the window and the ACK bitmask count
transmissions)::

    0 data_seq 4   the data packet's number (a repair repeats the lost packet's)
    4 acker    2   the receiver that must ACK this packet (0: none elected yet)
    6 flags    1   bit 0: repair
    7 pad      1

Feedback (an ACK from the acker or a NAK from any receiver), 32 bytes; ``nak_seq`` sits at a fixed
offset (4) so that a switch can read (session = the header's flow, sequence) for NAK aggregation::

    0  type     1   1 = ACK, 2 = NAK
    1  flags    1   0
    2  rid      2   the receiver's id
    4  nak_seq  4   NAK: the missing data_seq (0xFFFFFFFF: a report without a request, a join)
    8  rx_max   4   the highest transmission number received
    12 mask     4   ACK: bit i set when transmission rx_max - 1 - i was received
    16 p        4   the receiver's loss estimate, in units of 2^-32
    20 ts_echo  8   the sender's timestamp of the packet that triggered this message
    28 hold_us  4   how long the receiver held that timestamp before sending (µs)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["FEEDBACK_PORT", "DATA_BYTES", "FEEDBACK_BYTES", "ACK", "NAK", "NO_SEQ", "DataTag", "Feedback", "encode_data",
           "decode_data", "encode_feedback", "decode_feedback", "NAK_SEQ_OFFSET"]

#: The UDP port pgmcc feedback goes to: the one frame alinea.p4 parses past UDP (its NAK aggregation).
FEEDBACK_PORT = 5002
_DATA = struct.Struct("!IHBx")
_FB = struct.Struct("!BBHIIIIqI")
DATA_BYTES = _DATA.size
FEEDBACK_BYTES = _FB.size
NAK_SEQ_OFFSET = 4
ACK, NAK = 1, 2
NO_SEQ = 0xFFFF_FFFF
_P_SCALE = 1 << 32


@dataclass(frozen=True)
class DataTag:
    data_seq: int
    acker: int
    repair: bool


@dataclass(frozen=True)
class Feedback:
    """An ACK or a NAK; ``p`` the receiver's loss estimate in [0, 1]."""

    type: int
    rid: int
    rx_max: int
    p: float
    ts_echo_ns: int
    hold_ns: int
    nak_seq: int = NO_SEQ
    mask: int = 0

    @property
    def is_ack(self) -> bool:
        return self.type == ACK


def encode_data(tag: DataTag) -> bytes:
    return _DATA.pack(tag.data_seq & 0xFFFF_FFFF, tag.acker, 1 if tag.repair else 0)


def decode_data(data: bytes) -> DataTag:
    if len(data) < DATA_BYTES:
        raise ValueError(f"pgmcc data tag: {len(data)} bytes, need {DATA_BYTES}")
    seq, acker, flags = _DATA.unpack_from(data)
    return DataTag(seq, acker, bool(flags & 1))


def encode_feedback(fb: Feedback) -> bytes:
    p = min(_P_SCALE - 1, max(0, round(fb.p * _P_SCALE)))
    hold_us = min(0xFFFF_FFFF, max(0, fb.hold_ns // 1000))
    return _FB.pack(fb.type, 0, fb.rid, fb.nak_seq & 0xFFFF_FFFF, fb.rx_max & 0xFFFF_FFFF, fb.mask & 0xFFFF_FFFF,
                    p, fb.ts_echo_ns, hold_us)


def decode_feedback(data: bytes) -> Feedback:
    """ValueError on a short message or an unknown type (a binding counts it as bad feedback)."""
    if len(data) < FEEDBACK_BYTES:
        raise ValueError(f"pgmcc feedback: {len(data)} bytes, need {FEEDBACK_BYTES}")
    typ, _flags, rid, nak_seq, rx_max, mask, p, ts, hold_us = _FB.unpack_from(data)
    if typ not in (ACK, NAK):
        raise ValueError(f"pgmcc feedback: type {typ} (ACK is {ACK}, NAK {NAK})")
    return Feedback(typ, rid, rx_max, p / _P_SCALE, ts, hold_us * 1000, nak_seq, mask)
