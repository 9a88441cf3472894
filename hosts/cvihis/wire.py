"""The CVIHIS feedback message (receiver -> sender) and its 32-byte wire layout.

One message carries both things the sender needs: the rate command the receiver decided
(area, signed step, loss) and an echo of the sender's own timestamp, from which the sender
measures the RTT without synchronised clocks. The layout is in docs/background/cvihis.md.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hosts.cvihis.areas import AREAS, Command

VERSION = 1
FEEDBACK_BYTES = 32
FLAG_LOSS = 0x01
FLAG_RTM = 0x02
_KNOWN_FLAGS = FLAG_LOSS | FLAG_RTM
NO_AREA = 0xFF
U32 = 1 << 32

# version, flags, command, area, step_milli, gradient, reserved, fb_seq, echo_ts_ns,
# echo_delay_ns, lost_total
_LAYOUT = struct.Struct("!BBBBhbBIQQI")
assert _LAYOUT.size == FEEDBACK_BYTES


class FeedbackError(ValueError):
    """Bytes that are not a well-formed CVIHIS feedback message."""


@dataclass(frozen=True)
class Feedback:
    """One receiver decision plus the timestamp echo for the sender's RTT.

    ``step_milli`` is the signed step in thousandths of a packet per sqrt(RTT) (exact on the
    wire); ``echo_delay_ns`` is how long the receiver held the echoed timestamp (receiver
    clock), which the sender subtracts from its RTT sample. ``fb_seq`` and ``lost_total``
    wrap modulo 2**32 on the wire.
    """

    fb_seq: int
    command: Command
    area: int | None
    step_milli: int
    gradient: int
    loss: bool
    rtm: bool
    echo_ts_ns: int
    echo_delay_ns: int
    lost_total: int = 0

    @property
    def step(self) -> float:
        """Signed step in packets per sqrt(RTT)."""
        return self.step_milli / 1000


def encode_feedback(fb: Feedback) -> bytes:
    """The 32-byte network-order form of ``fb``; out-of-range fields raise FeedbackError."""
    _check_range("step_milli", fb.step_milli, -(1 << 15), (1 << 15) - 1)
    _check_range("echo_ts_ns", fb.echo_ts_ns, 0, (1 << 64) - 1)
    _check_range("echo_delay_ns", fb.echo_delay_ns, 0, (1 << 64) - 1)
    if fb.area is not None:
        _check_range("area", fb.area, 0, AREAS - 1)
    _check_range("gradient", fb.gradient, -1, 1)
    flags = (FLAG_LOSS if fb.loss else 0) | (FLAG_RTM if fb.rtm else 0)
    area = NO_AREA if fb.area is None else fb.area
    return _LAYOUT.pack(VERSION, flags, int(fb.command), area, fb.step_milli, fb.gradient, 0,
                        fb.fb_seq % U32, fb.echo_ts_ns, fb.echo_delay_ns, fb.lost_total % U32)


def decode_feedback(data: bytes) -> Feedback:
    """Parse one feedback message; anything malformed raises FeedbackError naming the field."""
    if len(data) != FEEDBACK_BYTES:
        raise FeedbackError(f"CVIHIS feedback: expected {FEEDBACK_BYTES} bytes, got {len(data)}")
    (version, flags, command, area, step_milli, gradient, reserved, fb_seq, echo_ts, echo_delay,
     lost) = _LAYOUT.unpack(data)
    if version != VERSION:
        raise FeedbackError(f"CVIHIS feedback: version {version} unsupported (expected {VERSION})")
    if flags & ~_KNOWN_FLAGS:
        raise FeedbackError(f"CVIHIS feedback: unknown flag bits 0x{flags & ~_KNOWN_FLAGS:02x}")
    if command not in Command._value2member_map_:
        raise FeedbackError(f"CVIHIS feedback: command {command} unknown (0..{max(Command)})")
    if area != NO_AREA and area >= AREAS:
        raise FeedbackError(f"CVIHIS feedback: area {area} out of range (0..{AREAS - 1} or 255)")
    if gradient not in (-1, 0, 1):
        raise FeedbackError(f"CVIHIS feedback: gradient {gradient} not -1, 0 or 1")
    if reserved:
        raise FeedbackError(f"CVIHIS feedback: reserved byte is {reserved}, must be 0")
    loss = bool(flags & FLAG_LOSS)
    if loss != (command == Command.MD):
        raise FeedbackError(f"CVIHIS feedback: loss flag {int(loss)} inconsistent with command {command}")
    return Feedback(fb_seq=fb_seq, command=Command(command), area=None if area == NO_AREA else area,
                    step_milli=step_milli, gradient=gradient, loss=loss, rtm=bool(flags & FLAG_RTM),
                    echo_ts_ns=echo_ts, echo_delay_ns=echo_delay, lost_total=lost)


def _check_range(name: str, value: int, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise FeedbackError(f"CVIHIS feedback: {name} {value!r} out of range [{lo}, {hi}]")
