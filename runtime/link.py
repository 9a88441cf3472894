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

import hbh_engine as _engine

from runtime.sched import Scheduler

__all__ = ["ETHERNET_OVERHEAD_BYTES", "ETHERNET_MIN_FRAME_BYTES", "Endpoint", "LinkModel", "Transmitter", "InMemoryLink", "LinkStats",
           "RealtimeWire", "DATE_BACK_MAX_NS"]

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
        return _engine.wire_bits(nbytes, self.min_frame_bytes, self.overhead_bytes)

    def wire_time_ns(self, nbytes: int) -> int:
        """Serialization time of one frame, rounded up to whole ns (0 on an infinite link)."""
        _check_nonneg_int(nbytes, "frame length")
        return _engine.wire_time_ns(nbytes, self.bitrate_bps, self.min_frame_bytes, self.overhead_bytes)


# One direction of a link (``Transmitter(model)``, ``transmit(now_ns, nbytes) -> (start, end)``,
# ``free_at_ns``, ``model`` settable) and the per-direction counters are the engine's
# (engine/src/net/link.rs). The transmitter keeps the exact end of the current transmission plus a
# remainder in units of 1/bitrate ns, so no rounding accumulates while it stays busy.
Transmitter = _engine.Transmitter
#: frames per direction: ``sent``, ``delivered``, ``lost`` (by the loss hook), ``sent_bytes``
LinkStats = _engine.LinkStats
LossHook = Callable[[bytes, str], bool]
DelayHook = Callable[[bytes, str], int]


class InMemoryLink(_engine.InMemoryLink):
    """A full-duplex link joining two endpoints in one process (virtual-time binding).

    ``send(from_end, frame)`` serializes the frame on that direction's :class:`Transmitter`
    and calls ``other_end.receive(frame)`` at ``end of serialization + delay``. Deliveries of
    one direction happen in sending order (a frame cannot overtake: serialization ends are
    increasing and the scheduler breaks ties by insertion order). ``loss(frame, direction)``,
    if given, returns True to lose a frame in transit (it still occupies the wire); direction
    is ``"a->b"`` or ``"b->a"``. ``extra_delay(frame, direction)``, if given, returns ns added to
    that frame's propagation delay: frames sent after it may then arrive before it (reordering).
    ``send``, ``backlog_ns`` and ``direction_from`` run in the engine (engine/src/net/link.rs); on
    the engine's scheduler a delivery needs no Python frame until the far end's ``receive``.

    A frame handed over while its direction's wire is busy waits in a FIFO (the qdisc in front of
    a NIC) and is serialized at the rate in force when it reaches the wire; ``waiting(from_end)``
    gives ``(frames, bytes)`` waiting, ``backlog_ns`` how long until all are serialized. Its
    propagation delay is the one in force at hand-over (netem's too). The queue has no bound of
    its own: a host refuses a data frame while the backlog exceeds ``HOST_TX_QUEUE`` frames'
    wire time (topo/sim/network.py).
    """

    def __new__(
        cls,
        sched: Scheduler,
        a_end: Endpoint,
        b_end: Endpoint,
        bitrate: int = 0,
        delay_ns: int = 0,
        loss: LossHook | None = None,
        model: LinkModel | None = None,
        extra_delay: DelayHook | None = None,
    ) -> InMemoryLink:
        model = model if model is not None else LinkModel(bitrate_bps=bitrate, delay_ns=delay_ns)
        return super().__new__(cls, sched, a_end, b_end, model, loss, extra_delay)

    def set_bitrate(self, bitrate_bps: int) -> None:
        """Change the bit rate of both directions from now on (a frame on the wire finishes at the
        old rate, the frames waiting for the wire leave at the new one): how a topology's timed
        link-rate event acts."""
        self.model = replace(self.model, bitrate_bps=bitrate_bps)

    def sender(self, from_end: Endpoint) -> Callable[[bytes], int]:
        """A ``send(frame) -> wire ns`` function bound to one end (for a port object)."""
        self.direction_from(from_end)
        return lambda frame: self.send(from_end, frame)


# A modelled wire in real time (``RealtimeWire()``, ``busy_ns(now_ns, wire_ns)``, ``free_ns``,
# ``last_wire_ns``) is the engine's (engine/src/realtime/rtloop.rs), which the engine's own transmitter
# (``TxPort``) uses too: one implementation of the rule below. It says when each frame starts,
# given when it was served.
#
# Why: the TM's wake-up for a port comes late by the kernel's wake-up latency (tens of µs) or by
# the rest of a busy loop turn, and a wire that restarted at every late wake-up would lose that
# time per frame (measured: a 20 Mb/s port of 1000-byte frames carried 12 % less). While the wire
# stays busy, a frame served less than one frame time after the previous one ended is taken to
# have started when it ended (as the TM keeps its rate slots), so the port carries its bit rate
# on average. One frame time is the *previous* frame's: the TM was waiting for that frame's end.
# Measured with the new frame's time, a fall of the bit rate lengthened the window past the idle
# gaps the TM's own spacing leaves: after capacity-drop's R3-R4 fall from 3 to 1 Mb/s, the next
# three frames, served 6.7 ms apart on the queue's schedule, were each dated back to the end of
# the one before, and the fall reached the wire 26 ms late (docs/howto/bmv2.md).
#
# A frame the engine's TM served comes with the time its model served it (``TMItem.due_ns``: queued,
# its rate slot come, the wire free), and starts then however late the loop got to it, up to
# ``DATE_BACK_MAX_NS`` (``busy_due_ns``): a wake-up 15-25 µs late, longer than a 1000-byte frame's
# 16 µs at 500 Mb/s, cost a port served at 250 Mb/s a tenth of its rate under the rule above, and
# the TM's own spacing is never taken for lateness since the model's time already includes it.
RealtimeWire = _engine.RealtimeWire
#: How late a frame the TM's model served may be put on the wire and still start when the model
#: served it (``RealtimeWire.busy_due_ns``); a later one starts when it is put there.
DATE_BACK_MAX_NS: int = _engine.REALTIME_DATE_BACK_MAX_NS
