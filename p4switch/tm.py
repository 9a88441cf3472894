"""Traffic manager: the egress queues between ingress and egress, like simple_switch's.

Why it exists: the queue in front of each output port is the one buffer of a port (as in a
router); its occupancy is what ALINEA regulates and what ``standard_metadata`` reports.

Model (choices where BMv2's docs are silent are marked *choice*):

* Per egress port ``num_priorities`` FIFO queues (default 1). Depth limit in packets per queue
  (default 64, as BMv2); a packet arriving at a full queue is refused: ``enqueue`` returns
  False and the port's ``dropped_full`` counter grows - the caller (the switch) decides what else
  to do. Lowering a depth below the current occupancy keeps the queued packets (*choice*; only
  new arrivals are refused).
* Service rate in packets per second per queue; 0 means unlimited, which is BMv2's default and
  BMv2's meaning of 0 (its rate-to-delay conversion maps 0 pps to no delay). There is no
  "paused" port. As in BMv2, every priority queue has its own rate limiter: setting a port's
  rate sets each of its queues, so with several priorities busy the port may send up to the
  sum (the wire time still bounds the port as a whole).
* Strict priority, higher number first (as simple_switch with priority queues). A queue whose
  rate slot has not come yet is skipped, so a lower priority queue may send meanwhile
  (work-conserving, *choice*).
* After a dequeue the ``service(port, item) -> int`` callback (given at construction) runs egress
  and transmits; it returns the wire time in ns (0 without a link model). The port is not served
  again before ``max(rate slot, now + wire time)``.
* Rates are exact over long runs: slot ``k`` after an anchor time ``a`` is
  ``a + ceil(k * 1e9 / pps)`` in integer ns, so fractional nanoseconds are carried, never
  lost. While a queue stays backlogged the slots keep their schedule even when one service runs
  late (loop lateness, a busy wire) by less than one interval; after a longer delay, or when a
  queue becomes non-empty after its slot passed, the schedule re-anchors at the service time:
  an idle queue earns no burst credit (*choice*).
* Stamps on the :class:`TMItem` (BMv2 semantics, µs = ``now_ns // 1000``):
  ``enq_timestamp_us`` at enqueue; ``enq_qdepth`` = packets already queued for that egress port
  (all its priority queues, as BMv2 counts), i.e. the depth *before* this packet is added -
  BMv2 reads the size of the port's buffer before pushing; ``deq_qdepth`` = packets still queued
  for the port after this one is removed; ``deq_timedelta_us`` = dequeue µs minus enqueue µs.
  The full-width values are kept; the pipeline truncates them to their v1model widths
  (bit<32>, bit<19>).
* Depth limits are at most 2**19 - 1 packets so that ``enq_qdepth`` always fits its bit<19>.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.sched import Handle, Scheduler

__all__ = ["MAX_QUEUE_DEPTH", "DEFAULT_QUEUE_DEPTH", "TMItem", "PortStats", "TrafficManager"]

NS_PER_S = 1_000_000_000
DEFAULT_QUEUE_DEPTH = 64
MAX_QUEUE_DEPTH = (1 << 19) - 1

ServiceFn = Callable[[int, "TMItem"], int]


@dataclass(slots=True)
class TMItem:
    """One queued packet and the queueing metadata the TM stamps on it."""

    packet: Any
    port: int = -1
    prio: int = 0
    enq_ns: int = 0
    deq_ns: int = 0
    enq_timestamp_us: int = 0
    enq_qdepth: int = 0
    deq_timedelta_us: int = 0
    deq_qdepth: int = 0


@dataclass(slots=True)
class PortStats:
    """Counters of one egress port (all its priority queues together)."""

    enqueued: int = 0
    dequeued: int = 0
    dropped_full: int = 0
    max_depth: int = 0


class _Queue:
    """One FIFO with its depth limit and its rate schedule (see the module docstring)."""

    __slots__ = ("items", "limit", "pps", "anchor_ns", "k", "fresh")

    def __init__(self, limit: int, pps: int) -> None:
        self.items: deque[TMItem] = deque()
        self.limit = limit
        self.pps = pps
        self.anchor_ns = 0
        self.k = 0
        self.fresh = True  # no slot yet: the next service anchors the schedule

    def slot(self, k: int) -> int:
        return self.anchor_ns + -(-k * NS_PER_S // self.pps)

    def next_allowed(self) -> int | None:
        """Earliest service time allowed by the rate, None when there is no constraint."""
        if self.pps == 0 or self.fresh:
            return None
        return self.slot(self.k + 1)

    def on_serve(self, t_ns: int) -> None:
        if self.pps == 0:
            return
        if self.fresh:
            self._anchor(t_ns)
            return
        interval = -(-NS_PER_S // self.pps)
        if t_ns - self.slot(self.k + 1) >= interval:
            self._anchor(t_ns)  # more than a slot late: no catching up in a burst
            return
        self.k += 1
        if self.k == self.pps:  # exactly one second later: keep the integers small
            self.anchor_ns += NS_PER_S
            self.k = 0

    def on_becomes_busy(self, t_ns: int) -> None:
        """First packet after idleness: if its slot already passed, start a new schedule."""
        nxt = self.next_allowed()
        if nxt is not None and nxt < t_ns:
            self.fresh = True

    def set_rate(self, pps: int) -> None:
        if pps == self.pps:
            return
        if self.pps and not self.fresh and pps:
            self.anchor_ns = self.slot(self.k)  # the last service keeps its time; new spacing after it
            self.k = 0
        else:
            self.fresh = True
        self.pps = pps

    def _anchor(self, t_ns: int) -> None:
        self.anchor_ns = t_ns
        self.k = 0
        self.fresh = False


class _Port:
    __slots__ = ("queues", "wire_free_ns", "wake", "wake_at", "stats", "occupancy")

    def __init__(self, num_priorities: int, limit: int, pps: int) -> None:
        self.queues = [_Queue(limit, pps) for _ in range(num_priorities)]
        self.wire_free_ns = 0
        self.wake: Handle | None = None
        self.wake_at = 0
        self.stats = PortStats()
        self.occupancy = 0


class TrafficManager:
    """Egress queues of a switch, served on an injected scheduler.

    ``service(port, item) -> int`` is called on the scheduler for every dequeued item and
    returns how long (ns) the port's transmitter is busy with it. It may be bound later with
    :meth:`bind_service` (a switch builds its TM before the core that serves it), but before
    the first packet is served.
    """

    def __init__(
        self,
        sched: Scheduler,
        service: ServiceFn | None = None,
        num_ports: int = 512,
        num_priorities: int = 1,
        default_depth: int = DEFAULT_QUEUE_DEPTH,
        default_rate_pps: int = 0,
    ) -> None:
        if num_ports < 1:
            raise ValueError(f"num_ports must be >= 1, got {num_ports}")
        if not 1 <= num_priorities <= 8:
            raise ValueError(f"num_priorities must be in 1..8, got {num_priorities}")
        self._sched = sched
        self._service: ServiceFn | None = service
        self.num_ports = num_ports
        self.num_priorities = num_priorities
        self._default_depth = self._check_depth(default_depth)
        self._default_pps = self._check_rate(default_rate_pps)
        self._ports: dict[int, _Port] = {}

    def bind_service(self, service: ServiceFn) -> None:
        """Set the service callback (called directly per packet: no wrapper in between)."""
        self._service = service

    # ---- configuration (simple_switch's set_queue_depth / set_queue_rate) ---------------
    def set_queue_depth(self, port: int, depth: int, prio: int | None = None) -> None:
        """Depth limit (packets) of one port's queue ``prio``, or of all its queues (None)."""
        self._check_depth(depth)
        for q in self._selected(port, prio):
            q.limit = depth

    def set_all_queue_depths(self, depth: int) -> None:
        """Depth limit of every queue of every port (also the default for ports used later)."""
        self._default_depth = self._check_depth(depth)
        for p in self._ports.values():
            for q in p.queues:
                q.limit = depth

    def set_queue_rate(self, port: int, pps: int, prio: int | None = None) -> None:
        """Service rate (packets/s, 0 = unlimited) of one port's queue ``prio`` or all (None)."""
        self._check_rate(pps)
        for q in self._selected(port, prio):
            q.set_rate(pps)
        self._schedule(port)

    def set_all_queue_rates(self, pps: int) -> None:
        """Service rate of every queue of every port (also the default for ports used later)."""
        self._default_pps = self._check_rate(pps)
        for number, p in self._ports.items():
            for q in p.queues:
                q.set_rate(pps)
            self._schedule(number)

    # ---- inspection --------------------------------------------------------------------
    def depth(self, port: int, prio: int = 0) -> int:
        """Current occupancy (packets) of queue ``prio`` of ``port``."""
        self._check_prio(prio)
        p = self._ports.get(self._check_port(port))
        return len(p.queues[prio].items) if p else 0

    def port_depth(self, port: int) -> int:
        """Current occupancy of all queues of ``port`` (what ``enq_qdepth`` counts)."""
        p = self._ports.get(self._check_port(port))
        return p.occupancy if p else 0

    def queue_depth_limit(self, port: int, prio: int = 0) -> int:
        self._check_prio(prio)
        p = self._ports.get(self._check_port(port))
        return p.queues[prio].limit if p else self._default_depth

    def queue_rate(self, port: int, prio: int = 0) -> int:
        self._check_prio(prio)
        p = self._ports.get(self._check_port(port))
        return p.queues[prio].pps if p else self._default_pps

    def stats(self, port: int) -> PortStats:
        """Counters of ``port`` (a copy)."""
        p = self._ports.get(self._check_port(port))
        if p is None:
            return PortStats()
        s = p.stats
        return PortStats(s.enqueued, s.dequeued, s.dropped_full, s.max_depth)

    # ---- data path ---------------------------------------------------------------------
    # Runs per packet: argument checks take a fast path for the common valid case and only
    # fall back to the _check_* helpers (which build the error message) when it fails.
    def enqueue(self, port: int, item: TMItem, prio: int = 0) -> bool:
        """Queue ``item`` for ``port``; False (and counted) when that queue is full."""
        if not isinstance(item, TMItem):
            raise TypeError(f"TrafficManager.enqueue expects a TMItem, got {type(item).__name__}")
        if type(prio) is not int or not 0 <= prio < self.num_priorities:  # noqa: E721
            self._check_prio(prio)
        p = self._ports.get(port) or self._port(port)
        q = p.queues[prio]
        items = q.items
        if len(items) >= q.limit:
            p.stats.dropped_full += 1
            return False
        now = self._sched.now_ns()
        item.port, item.prio = port, prio
        item.enq_ns = now
        item.enq_timestamp_us = now // 1000
        item.enq_qdepth = p.occupancy
        if not items and q.pps:
            q.on_becomes_busy(now)
        items.append(item)
        p.occupancy += 1
        stats = p.stats
        stats.enqueued += 1
        if p.occupancy > stats.max_depth:
            stats.max_depth = p.occupancy
        self._arm(port, p, now)
        return True

    def _serve(self, port: int) -> None:
        p = self._ports[port]
        p.wake = None
        now = self._sched.now_ns()
        q = self._eligible(p, now)
        if q is None:
            self._arm(port, p)
            return
        item = q.items.popleft()
        p.occupancy -= 1
        p.stats.dequeued += 1
        if q.pps:
            q.on_serve(now)
        item.deq_ns = now
        item.deq_timedelta_us = now // 1000 - item.enq_timestamp_us
        item.deq_qdepth = p.occupancy
        p.wire_free_ns = now
        try:
            wire_ns = self._service(port, item)
            if type(wire_ns) is not int or wire_ns < 0:  # noqa: E721 - fast path of the full check
                wire_ns = self._check_wire_ns(wire_ns)
            p.wire_free_ns = now + wire_ns
        finally:
            self._arm(port, p)

    @staticmethod
    def _check_wire_ns(wire_ns: Any) -> int:
        if isinstance(wire_ns, bool) or not isinstance(wire_ns, int) or wire_ns < 0:
            raise ValueError(f"TM service callback must return a wire time in int ns >= 0, got {wire_ns!r}")
        return wire_ns

    def _eligible(self, p: _Port, now: int) -> _Queue | None:
        if p.wire_free_ns > now:
            return None
        for q in reversed(p.queues):  # strict priority: highest number first
            if q.items:
                if not q.pps:
                    return q
                nxt = q.next_allowed()
                if nxt is None or nxt <= now:
                    return q
        return None

    def _schedule(self, port: int) -> None:
        """(Re)arm the wake-up of ``port`` if it exists (after a configuration change)."""
        p = self._ports.get(port)
        if p is not None:
            self._arm(port, p)

    def _arm(self, port: int, p: _Port, now: int | None = None) -> None:
        """(Re)arm the port's single wake-up at the earliest time a queue may be served
        (``now``: the caller's reading of the clock in this callback, if it has one)."""
        t = None
        for q in p.queues:
            if q.items:
                ready = p.wire_free_ns
                if q.pps:
                    nxt = q.next_allowed()
                    if nxt is not None and nxt > ready:
                        ready = nxt
                if t is None or ready < t:
                    t = ready
        wake = p.wake
        if t is None:
            if wake is not None:
                wake.cancel()
                p.wake = None
            return
        if now is None:
            now = self._sched.now_ns()
        if t < now:
            t = now
        if wake is not None:
            if p.wake_at <= t:
                return
            wake.cancel()
        p.wake_at = t
        p.wake = self._sched.call_at(t, self._serve, port)

    # ---- helpers -----------------------------------------------------------------------
    def _port(self, port: int) -> _Port:
        p = self._ports.get(port)
        if p is None:
            self._check_port(port)
            p = self._ports[port] = _Port(self.num_priorities, self._default_depth, self._default_pps)
        return p

    def _selected(self, port: int, prio: int | None) -> list[_Queue]:
        p = self._port(port)
        if prio is None:
            return p.queues
        self._check_prio(prio)
        return [p.queues[prio]]

    def _check_port(self, port: int) -> int:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < self.num_ports:
            raise ValueError(f"egress port {port!r} out of range 0..{self.num_ports - 1}")
        return port

    def _check_prio(self, prio: int) -> int:
        if isinstance(prio, bool) or not isinstance(prio, int) or not 0 <= prio < self.num_priorities:
            raise ValueError(f"queue priority {prio!r} out of range 0..{self.num_priorities - 1}")
        return prio

    @staticmethod
    def _check_depth(depth: int) -> int:
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= MAX_QUEUE_DEPTH:
            raise ValueError(f"queue depth {depth!r} must be an int in 0..{MAX_QUEUE_DEPTH} packets")
        return depth

    @staticmethod
    def _check_rate(pps: int) -> int:
        if isinstance(pps, bool) or not isinstance(pps, int) or pps < 0:
            raise ValueError(f"queue rate {pps!r} must be an int >= 0 packets/s (0 = unlimited)")
        return pps
