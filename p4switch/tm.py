"""Traffic manager: the egress queues between ingress and egress, as simple_switch's.

Why it exists: the queue in front of each output port is the one buffer of a port (as in a
router); its occupancy is what ALINEA regulates and what ``standard_metadata`` reports. ALINEA
actuates exactly this queue's rate, so its rate limiter must be BMv2's, not a friendlier one.

Model. The default, ``queue_model="bmv2"``, is BMv2's ``QueueingLogicPriRL`` (the egress buffers
of simple_switch; facts from behavioral-model's include/bm/bm_sim/queueing.h and
targets/simple_switch/simple_switch.cpp, restated in docs/bmv2.md):

* Per egress port ``num_priorities`` FIFO queues (default 1). Each has a capacity in packets
  (default 64) and a rate in packets per second (0 = no limit, BMv2's default).
* **Departure is fixed when a packet is pushed.** A full queue (size >= capacity, per priority)
  refuses it: ``enqueue`` returns False and the port's ``dropped_full`` grows. Otherwise its
  departure time is ``max(now, last_sent + interval)`` and becomes the queue's ``last_sent``;
  ``interval`` is ``1/rate`` truncated to whole ns as BMv2's ``duration_cast`` does, 0 at rate 0.
  So ``set_queue_rate`` changes the spacing of packets pushed afterwards only: packets already
  queued keep their times, and ``last_sent`` may run far into the future (a cut to 5 pps stamps
  every packet pushed meanwhile 200 ms after the previous one, whatever the rate is later).
* The port serves the highest priority whose head's departure time has come (higher number
  first). BMv2 shares a time-ordered heap per priority among the ports of one egress thread
  (port mod 4); since each queue's departure times never decrease, that heap pops every
  queue's packets in their FIFO order at their stamped times, as per-port service here does.
  Which thread runs which port changes CPU contention only, nothing a packet carries.
* ``enq_qdepth`` = the size of the packet's priority queue before the push; ``deq_qdepth`` = its
  size after the pop (``egress_buffers.size(port, priority)`` in simple_switch).

``queue_model="shaper"`` is the rate limiter of hardware switches instead (a shaper at dequeue,
e.g. a token bucket per queue): the rate in force at *service* time spaces the packets, so a
rate change applies to what is queued at once. Slot ``k`` after an anchor ``a`` is
``a + ceil(k * 1e9 / pps)`` ns (no drift); a queue that was idle past its slot re-anchors at its
next service (no burst credit). It is an explicit option (``p4switch --queue-model shaper``,
topology ``options.queue_model: shaper``), never the default: BMv2 does not behave so.

Both models:

* Lowering a capacity below the current occupancy keeps the queued packets (only new arrivals
  are refused), as BMv2 does.
* Every priority queue has its own rate limiter: setting a port's rate sets each of its queues.
* After a dequeue the ``service(port, item) -> int`` callback (given at construction) runs egress
  and transmits; it returns the wire time in ns (0 without a link model). The port is not served
  again before ``now + wire time``: the link model (p4switch's stand-in for the link, which BMv2
  leaves to the kernel) holds the packet in this queue while the wire is busy, so the queue stays
  the port's one buffer. Departure stamps are not changed by a busy wire.
* Stamps on :class:`TMItem` (µs = ``now_ns // 1000``): ``enq_timestamp_us`` at enqueue,
  ``deq_timedelta_us`` = dequeue µs minus enqueue µs. Full-width values are kept; the pipeline
  truncates them to their v1model widths (bit<32>, bit<19>).
* Depth limits are at most 2**19 - 1 packets so that ``enq_qdepth`` always fits its bit<19>.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.sched import Handle, Scheduler

__all__ = ["MAX_QUEUE_DEPTH", "DEFAULT_QUEUE_DEPTH", "QUEUE_MODELS", "TMItem", "PortStats", "TrafficManager",
           "bmv2_interval_ns"]

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
    depart_ns: int = 0  # bmv2 model: the departure time fixed at enqueue


@dataclass(slots=True)
class PortStats:
    """Counters of one egress port (all its priority queues together)."""

    enqueued: int = 0
    dequeued: int = 0
    dropped_full: int = 0
    max_depth: int = 0


QUEUE_MODELS = ("bmv2", "shaper")


def bmv2_interval_ns(pps: int) -> int:
    """BMv2's spacing of a queue at ``pps``: ``duration_cast<ns>(duration<double>(1. / pps))``."""
    return int((1.0 / pps) * NS_PER_S) if pps else 0


class _Queue:
    """One FIFO with its capacity and a rate limiter; subclasses are the two models."""

    __slots__ = ("items", "limit", "pps")

    def __init__(self, limit: int, pps: int, now: int) -> None:
        self.items: deque[TMItem] = deque()
        self.limit = limit
        self.pps = pps

    def push(self, item: TMItem, now: int) -> None:
        self.items.append(item)

    def ready_at(self) -> int | None:
        """Earliest time the head may leave (the queue is not empty); None: no constraint."""
        raise NotImplementedError

    def on_serve(self, t_ns: int) -> None:
        """The head left at ``t_ns``."""

    def set_rate(self, pps: int) -> None:
        self.pps = pps


class _StampedQueue(_Queue):
    """BMv2: each packet's departure time is fixed when it is pushed (see the module docstring)."""

    __slots__ = ("interval_ns", "last_sent")

    def __init__(self, limit: int, pps: int, now: int) -> None:
        super().__init__(limit, pps, now)
        self.interval_ns = bmv2_interval_ns(pps)
        self.last_sent = now  # BMv2: the queue's creation time (its first set_* call or push)

    def push(self, item: TMItem, now: int) -> None:
        t = self.last_sent + self.interval_ns
        self.last_sent = item.depart_ns = now if now > t else t
        self.items.append(item)

    def ready_at(self) -> int | None:
        return self.items[0].depart_ns

    def set_rate(self, pps: int) -> None:
        self.pps = pps
        self.interval_ns = bmv2_interval_ns(pps)


class _ShapedQueue(_Queue):
    """A shaper at dequeue: the rate in force when the queue is served spaces its packets."""

    __slots__ = ("anchor_ns", "k", "fresh")

    def __init__(self, limit: int, pps: int, now: int) -> None:
        super().__init__(limit, pps, now)
        self.anchor_ns = 0
        self.k = 0
        self.fresh = True  # no slot yet: the next service anchors the schedule

    def push(self, item: TMItem, now: int) -> None:
        if not self.items and self.pps:
            nxt = self.ready_at()
            if nxt is not None and nxt < now:
                self.fresh = True  # idle past its slot: start a new schedule, no burst credit
        self.items.append(item)

    def slot(self, k: int) -> int:
        return self.anchor_ns + -(-k * NS_PER_S // self.pps)

    def ready_at(self) -> int | None:
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


_QUEUE_CLASSES: dict[str, type[_Queue]] = {"bmv2": _StampedQueue, "shaper": _ShapedQueue}


class _Port:
    __slots__ = ("queues", "wire_free_ns", "wake", "wake_at", "stats", "occupancy")

    def __init__(self, queue_cls: type[_Queue], num_priorities: int, limit: int, pps: int, now: int) -> None:
        self.queues = [queue_cls(limit, pps, now) for _ in range(num_priorities)]
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
        queue_model: str = "bmv2",
    ) -> None:
        if num_ports < 1:
            raise ValueError(f"num_ports must be >= 1, got {num_ports}")
        if not 1 <= num_priorities <= 8:
            raise ValueError(f"num_priorities must be in 1..8, got {num_priorities}")
        if queue_model not in _QUEUE_CLASSES:
            raise ValueError(f"queue model {queue_model!r}: expected one of {', '.join(QUEUE_MODELS)}")
        self.queue_model = queue_model
        self._queue_cls = _QUEUE_CLASSES[queue_model]
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
        """Current occupancy of all queues of ``port``."""
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
        item.enq_qdepth = len(items)
        q.push(item, now)
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
        q.on_serve(now)
        item.deq_ns = now
        item.deq_timedelta_us = now // 1000 - item.enq_timestamp_us
        item.deq_qdepth = len(q.items)
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
                nxt = q.ready_at()
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
                nxt = q.ready_at()
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
            p = self._ports[port] = _Port(self._queue_cls, self.num_priorities, self._default_depth,
                                          self._default_pps, self._sched.now_ns())
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
