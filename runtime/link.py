"""Link model: how long a frame occupies a wire, and an in-memory full-duplex link.

Why: in the ``sim`` binding there is no kernel to pace frames, so serialization time (bit
rate) and propagation delay must be modelled; the switch's traffic manager also uses the wire
time so that a port is not served faster than its link (architecture.md, "Traffic manager").

Wire bytes (*choice*, like a real Ethernet wire, configurable): a frame as handed to a port
(destination MAC .. payload, no FCS) is padded to ``min_frame_bytes`` (60, so 64 with FCS) and
``overhead_bytes`` (24 = 7 preamble + 1 SFD + 4 FCS + 12 inter-frame gap) are added. Use
``LinkModel(overhead_bytes=0, min_frame_bytes=0)`` to count frame bytes only.

Times are integer ns. ``LinkModel.wire_time_ns`` rounds up per frame; :class:`Transmitter`
carries the sub-nanosecond remainder while a direction stays busy, so a saturated link delivers
exactly its bit rate over long runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from runtime.sched import Scheduler

__all__ = ["ETHERNET_OVERHEAD_BYTES", "ETHERNET_MIN_FRAME_BYTES", "Endpoint", "LinkModel", "Transmitter", "InMemoryLink", "LinkStats"]

NS_PER_S = 1_000_000_000
ETHERNET_OVERHEAD_BYTES = 24
ETHERNET_MIN_FRAME_BYTES = 60


class Endpoint(Protocol):
    """Something a link delivers frames to (a switch port or a host)."""

    def receive(self, frame: bytes) -> None: ...


def _check_nonneg_int(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an int >= 0, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class LinkModel:
    """Bit rate (bits/s, 0 = infinite) and one-way propagation delay (ns) of a link."""

    bitrate_bps: int = 0
    delay_ns: int = 0
    overhead_bytes: int = ETHERNET_OVERHEAD_BYTES
    min_frame_bytes: int = ETHERNET_MIN_FRAME_BYTES

    def __post_init__(self) -> None:
        _check_nonneg_int(self.bitrate_bps, "link bitrate_bps")
        _check_nonneg_int(self.delay_ns, "link delay_ns")
        _check_nonneg_int(self.overhead_bytes, "link overhead_bytes")
        _check_nonneg_int(self.min_frame_bytes, "link min_frame_bytes")

    def wire_bits(self, nbytes: int) -> int:
        """Bits a frame of ``nbytes`` occupies on the wire (padding and overhead included)."""
        _check_nonneg_int(nbytes, "frame length")
        return 8 * (max(nbytes, self.min_frame_bytes) + self.overhead_bytes)

    def wire_time_ns(self, nbytes: int) -> int:
        """Serialization time of one frame, rounded up to whole ns (0 on an infinite link)."""
        if self.bitrate_bps == 0:
            return 0
        return -(-self.wire_bits(nbytes) * NS_PER_S // self.bitrate_bps)


class Transmitter:
    """One direction of a link: frames are serialized back to back, in order.

    Keeps the exact end of the current transmission as ``free_at_ns`` plus a remainder in
    units of 1/bitrate ns, so no rounding accumulates while the transmitter stays busy.
    """

    def __init__(self, model: LinkModel) -> None:
        self.model = model
        self.free_at_ns = 0
        self._rem = 0  # (bitrate * true_end - free_at_ns * bitrate), in [0, bitrate)

    def transmit(self, now_ns: int, nbytes: int) -> tuple[int, int]:
        """Start a frame at ``max(now, free)``; returns ``(start_ns, end_ns)`` of its serialization."""
        bits = self.model.wire_bits(nbytes)
        if now_ns > self.free_at_ns:
            start, rem = now_ns, 0  # idle wire: a new schedule, no leftover fraction
        else:
            start, rem = self.free_at_ns, self._rem
        rate = self.model.bitrate_bps
        if rate == 0:
            self.free_at_ns, self._rem = start, 0
            return start, start
        total = bits * NS_PER_S - rem  # ns*rate still to go, counted from the rounded-up start
        end = start + -(-total // rate)
        self.free_at_ns, self._rem = end, (end - start) * rate - total
        return start, end


@dataclass(slots=True)
class LinkStats:
    """Frames per direction: sent into the link, delivered out of it, lost by the loss hook."""

    sent: int = 0
    delivered: int = 0
    lost: int = 0
    sent_bytes: int = 0


LossHook = Callable[[bytes, str], bool]
DelayHook = Callable[[bytes, str], int]


class InMemoryLink:
    """A full-duplex link joining two endpoints in one process (virtual-time binding).

    ``send(from_end, frame)`` serializes the frame on that direction's :class:`Transmitter`
    and calls ``other_end.receive(frame)`` at ``end of serialization + delay``. Deliveries of
    one direction happen in sending order (a frame cannot overtake: serialization ends are
    increasing and the scheduler breaks ties by insertion order). ``loss(frame, direction)``,
    if given, returns True to lose a frame in transit (it still occupies the wire); direction
    is ``"a->b"`` or ``"b->a"``. ``extra_delay(frame, direction)``, if given, returns ns added to
    that frame's propagation delay: frames sent after it may then arrive before it (reordering).
    """

    def __init__(
        self,
        sched: Scheduler,
        a_end: Endpoint,
        b_end: Endpoint,
        bitrate: int = 0,
        delay_ns: int = 0,
        loss: LossHook | None = None,
        model: LinkModel | None = None,
        extra_delay: DelayHook | None = None,
    ) -> None:
        self._sched = sched
        self.a_end = a_end
        self.b_end = b_end
        self.model = model if model is not None else LinkModel(bitrate_bps=bitrate, delay_ns=delay_ns)
        self.loss = loss
        self.extra_delay = extra_delay
        self._tx = {"a->b": Transmitter(self.model), "b->a": Transmitter(self.model)}
        self.stats = {"a->b": LinkStats(), "b->a": LinkStats()}

    def direction_from(self, from_end: Endpoint) -> str:
        if from_end is self.a_end:
            return "a->b"
        if from_end is self.b_end:
            return "b->a"
        raise ValueError(f"InMemoryLink.send: {from_end!r} is not an end of this link")

    def send(self, from_end: Endpoint, frame: bytes) -> int:
        """Put ``frame`` on the wire from ``from_end``; returns ns until this side's
        transmitter is free again (what a TM service callback returns as wire time)."""
        direction = self.direction_from(from_end)
        data = bytes(frame)
        now = self._sched.now_ns()
        _start, end = self._tx[direction].transmit(now, len(data))
        stats = self.stats[direction]
        stats.sent += 1
        stats.sent_bytes += len(data)
        if self.loss is not None and self.loss(data, direction):
            stats.lost += 1
        else:
            target = self.b_end if direction == "a->b" else self.a_end
            extra = self.extra_delay(data, direction) if self.extra_delay is not None else 0
            self._sched.call_at(end + self.model.delay_ns + extra, self._deliver, target, data, stats)
        return end - now

    def backlog_ns(self, from_end: Endpoint, now_ns: int) -> int:
        """How long the frames already handed to this side still occupy its transmitter."""
        return max(0, self._tx[self.direction_from(from_end)].free_at_ns - now_ns)

    def set_bitrate(self, bitrate_bps: int) -> None:
        """Change the bit rate of both directions from now on (a frame on the wire finishes at the
        old rate): how a topology's timed link-rate event acts."""
        self.model = replace(self.model, bitrate_bps=bitrate_bps)
        for tx in self._tx.values():
            tx.model = self.model

    def sender(self, from_end: Endpoint) -> Callable[[bytes], int]:
        """A ``send(frame) -> wire ns`` function bound to one end (for a port object)."""
        self.direction_from(from_end)
        return lambda frame: self.send(from_end, frame)

    @staticmethod
    def _deliver(target: Endpoint, data: bytes, stats: LinkStats) -> None:
        stats.delivered += 1
        target.receive(data)
