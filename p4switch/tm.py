"""Traffic manager: the egress queues between ingress and egress, as simple_switch's.

Why it exists: the queue in front of each output port is the one buffer of a port (as in a
router); its occupancy is what ALINEA regulates and what ``standard_metadata`` reports. ALINEA
actuates exactly this queue's rate, so its rate limiter must be BMv2's, not a friendlier one.

Model. The default, ``queue_model="bmv2"``, is BMv2's ``QueueingLogicPriRL`` (the egress buffers
of simple_switch; facts from behavioral-model's include/bm/bm_sim/queueing.h and
targets/simple_switch/simple_switch.cpp, restated in docs/howto/bmv2.md):

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
  the port's one buffer. Departure stamps are not changed by a busy wire. Each item also carries
  ``due_ns``, when this model served it (queued, its departure come, the wire free), which a
  real-time port's wire dates the frame from when the loop served it late; such a port may return
  a negative wire time (its frame's wire time ended before now) and the next service is dated
  from that end (runtime/link.py, ``RealtimeWire``).
* Stamps on :class:`TMItem` (µs = ``now_ns // 1000``): ``enq_timestamp_us`` at enqueue,
  ``deq_timedelta_us`` = dequeue µs minus enqueue µs. Full-width values are kept; the pipeline
  truncates them to their v1model widths (bit<32>, bit<19>).
* Depth limits are at most 2**19 - 1 packets so that ``enq_qdepth`` always fits its bit<19>.
"""

from __future__ import annotations

from collections.abc import Callable

import hbh_engine as _engine

__all__ = ["MAX_QUEUE_DEPTH", "DEFAULT_QUEUE_DEPTH", "QUEUE_MODELS", "TMItem", "PortStats", "TrafficManager",
           "bmv2_interval_ns"]

DEFAULT_QUEUE_DEPTH: int = _engine.DEFAULT_QUEUE_DEPTH
MAX_QUEUE_DEPTH: int = _engine.MAX_QUEUE_DEPTH
QUEUE_MODELS = ("bmv2", "shaper")

# The queues run in the engine (engine/src/v1model/tm.rs), the model above unchanged. ``TMItem`` is one
# queued packet (``packet`` and the stamps: ``port``, ``prio``, ``enq_ns``, ``deq_ns``,
# ``enq_timestamp_us``, ``enq_qdepth``, ``deq_timedelta_us``, ``deq_qdepth``, ``depart_ns``); a
# target subclasses it for its per-copy facts. ``PortStats``: ``enqueued``, ``dequeued``,
# ``dropped_full``, ``max_depth`` of one port. ``TrafficManager(sched, service=None, num_ports=512,
# num_priorities=1, default_depth=64, default_rate_pps=0, queue_model="bmv2")`` with
# ``bind_service``, ``set_queue_depth``, ``set_all_queue_depths``, ``set_queue_rate``,
# ``set_all_queue_rates``, ``depth``, ``port_depth``, ``queue_depth_limit``, ``queue_rate``,
# ``stats`` and ``enqueue(port, item, prio=0) -> bool``. On the engine's ``VirtualScheduler`` the
# TM arms its timers without a Python call; on any other scheduler through ``call_at``.
TMItem = _engine.TMItem
PortStats = _engine.PortStats
TrafficManager = _engine.TrafficManager
#: BMv2's spacing of a queue at ``pps``: ``duration_cast<ns>(duration<double>(1. / pps))``
bmv2_interval_ns: Callable[[int], int] = _engine.bmv2_interval_ns
