"""Packet groups and their inter-group delay variation (draft-ietf-rmcat-gcc-02, 5.1 and 5.2).

Why groups and not packets: a sender's pacer sends its packets in bursts, and the queue a burst
meets says nothing about the path's trend; the draft compares whole groups instead:

* the packets sent within ``burst_time`` (5 ms) of a group's first packet form that group;
* a packet whose arrival follows the group's last by less than ``burst_time`` and whose delay
  variation against it is negative (it caught up: a burst released after a channel outage) joins
  the current group although it was sent later (5.2's pre-filtering).

For two consecutive groups, with ``T`` a group's last send time (sender's clock) and ``t`` its last
arrival (receiver's clock)::

    d(i) = t(i) - t(i-1) - (T(i) - T(i-1))

Only differences of one clock's readings appear, so the two hosts' clocks need not agree.
Reordered packets (sent before the current group's first) are ignored, as the draft's groups are
in send order.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PacketGroups", "GroupDelta", "BURST_TIME_NS"]

BURST_TIME_NS = 5_000_000


@dataclass(frozen=True, slots=True)
class GroupDelta:
    """The step from one complete group to the next (all in ns)."""

    send_delta_ns: int  # T(i) - T(i-1)
    arrival_delta_ns: int  # t(i) - t(i-1)
    arrival_ns: int  # t(i), the receiver's clock
    size_bytes: int  # bytes in group i

    @property
    def delay_variation_ms(self) -> float:
        """d(i) in ms (the unit of the draft's thresholds)."""
        return (self.arrival_delta_ns - self.send_delta_ns) / 1e6


@dataclass(slots=True)
class _Group:
    first_send: int
    last_send: int
    last_arrival: int
    size: int


class PacketGroups:
    def __init__(self, burst_time_ns: int = BURST_TIME_NS) -> None:
        if burst_time_ns <= 0:
            raise ValueError(f"burst_time {burst_time_ns} ns: must be > 0")
        self.burst_time_ns = burst_time_ns
        self.current: _Group | None = None
        self.previous: _Group | None = None

    def on_packet(self, send_ns: int, arrival_ns: int, size: int) -> GroupDelta | None:
        """One packet; the delta between the two groups before it when it closes a group."""
        g = self.current
        if g is None:
            self.current = _Group(send_ns, send_ns, arrival_ns, size)
            return None
        if send_ns < g.first_send:
            return None  # reordered: belongs to a group already passed
        if send_ns - g.first_send <= self.burst_time_ns or self._caught_up(g, send_ns, arrival_ns):
            g.last_send = max(g.last_send, send_ns)
            g.last_arrival = max(g.last_arrival, arrival_ns)
            g.size += size
            return None
        done, before = g, self.previous
        self.previous = done
        self.current = _Group(send_ns, send_ns, arrival_ns, size)
        if before is None:
            return None
        return GroupDelta(done.last_send - before.last_send, done.last_arrival - before.last_arrival,
                          done.last_arrival, done.size)

    def _caught_up(self, g: _Group, send_ns: int, arrival_ns: int) -> bool:
        """5.2: arrived within burst_time of the group's last packet, and with a negative delay
        variation against it (queued behind it and released together)."""
        gap = arrival_ns - g.last_arrival
        return 0 <= gap < self.burst_time_ns and gap - (send_ns - g.last_send) < 0
