"""Forecast of a downstream buffer for a hop whose rate reaches the wire late (BMv2's queues).

BMv2 fixes a packet's departure when it is queued: ``max(now, last_sent + 1/rate)``. A rate the
agent sets now therefore spaces only the packets queued from now on, and they leave after every
packet already queued: the rate reaches the downstream buffer after the horizon
``h = last_sent − now`` (about ``Q / r``, 0.6-1 s at the paper's targets). Until then the
downstream buffer receives exactly the ``Q`` packets already queued, whatever the agent does. So
the occupancy it will have when a rate set now arrives there is forecast as (a Smith predictor
on the known part of the future)::

    Ô = O(k) + Q − μ·h

with ``μ`` the buffer's drain of this hop's packets. Everything comes from what the agent can know
on BMv2:

* ``Q`` and this hop's departures: two wrapping counters that alinea.p4 keeps per egress port and
  copies into the packet-in of every report arriving on that port (``fwd_pkts``: IPv4 packets
  routed to the port; ``deq_pkts``: those that have left its queue; docs/wire-format.md);
* ``h``: ``last_sent`` rebuilt as BMv2 builds it, from the packets queued between two reports
  (the growth of ``fwd_pkts``) and the rate the agent had set meanwhile;
* ``μ``: the downstream buffer's departures of this hop's packets, ``Δdeq_pkts − ΔO(k)`` between
  reports, over the last ``h`` (at most ``DRAIN_WINDOW_S``, at least ``DRAIN_WINDOW_MIN_S``);
  when the last ``DRAIN_SHORT_S`` differ from that by more than ``DRAIN_SHIFT_PPS`` (a capacity
  change downstream, not noise) the short window is used.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["QueueForecast", "DRAIN_WINDOW_S", "DRAIN_WINDOW_MIN_S", "DRAIN_SHORT_S", "DRAIN_SHIFT_PPS",
           "SCHEDULE_BOUND_S", "schedule_floor_pps"]

COUNTER_MASK = (1 << 32) - 1
NS = 1_000_000_000
#: Longest window of the drain estimate, s (and the shortest).
DRAIN_WINDOW_S = 1.0
DRAIN_WINDOW_MIN_S = 0.1
#: The short window, s, and the difference from the long one, packets/s, that makes it the estimate.
DRAIN_SHORT_S = 0.2
DRAIN_SHIFT_PPS = 8.0
#: No rate command may stamp more than this much schedule beyond what the link itself would take
#: to send the queued packets (s): a cut cannot be undone on BMv2, so it must not freeze the queue.
SCHEDULE_BOUND_S = 4.0


def schedule_floor_pps(queued: int, link_pps: float, bound_s: float = SCHEDULE_BOUND_S) -> float:
    """Lowest rate (packets/s) whose spacing keeps ``queued + 1`` packets within ``(queued + 1) /
    link_pps + bound_s`` seconds."""
    if link_pps <= 0:
        return 0.0
    return 1.0 / (1.0 / link_pps + bound_s / (queued + 1))


@dataclass
class QueueForecast:
    """One regulated egress port: its queue's horizon and the downstream buffer's forecast."""

    t_ns: int | None = None
    fwd: int = 0
    deq: int = 0
    occupancy: int = 0
    queued: int = 0  # Q, packets
    last_sent_ns: int = 0  # BMv2's last_sent, as rebuilt
    horizon_s: float = 0.0  # h
    drain_pps: float = 0.0  # μ
    forecast_pkts: float = 0.0  # Ô, packets
    _drained: int = 0  # cumulative departures of this hop's packets from the downstream buffer
    _hist: deque[tuple[int, int]] = field(default_factory=deque)

    def update(self, now_ns: int, occupancy: int, fwd: int, deq: int, pps: int) -> float:
        """One report: the downstream ``occupancy`` (packets), the packet-in's counters and the
        queue rate in force since the previous report (0: unlimited). Returns Ô in packets."""
        queued = (fwd - deq) & COUNTER_MASK
        spacing = NS / pps if pps > 0 else 0.0
        if self.t_ns is None:  # what is queued already was spaced at the rate in force, as far as we know
            self.last_sent_ns = int(now_ns + queued * spacing)
        else:
            arrivals = (fwd - self.fwd) & COUNTER_MASK
            departed = (deq - self.deq) & COUNTER_MASK
            self.last_sent_ns = now_ns if queued == 0 else int(max(self.last_sent_ns, self.t_ns) + arrivals * spacing)
            self._drained += departed - (occupancy - self.occupancy)
        self.t_ns, self.fwd, self.deq, self.occupancy, self.queued = now_ns, fwd, deq, occupancy, queued
        self.horizon_s = max(0, self.last_sent_ns - now_ns) / NS
        hist = self._hist
        hist.append((now_ns, self._drained))
        window_ns = min(DRAIN_WINDOW_S, max(self.horizon_s, DRAIN_WINDOW_MIN_S)) * NS
        while len(hist) > 2 and now_ns - hist[1][0] >= window_ns:
            hist.popleft()
        self.drain_pps = self._rate_since(hist[0])
        j = len(hist) - 1
        while j > 0 and now_ns - hist[j][0] < DRAIN_SHORT_S * NS:
            j -= 1
        short = self._rate_since(hist[j])
        if (now_ns - hist[j][0]) / NS > 0.05 and abs(short - self.drain_pps) > DRAIN_SHIFT_PPS:
            self.drain_pps = short
        self.forecast_pkts = occupancy + queued - self.drain_pps * self.horizon_s
        return self.forecast_pkts

    def _rate_since(self, then: tuple[int, int]) -> float:
        t0, d0 = then
        span = (self.t_ns - t0) / NS  # type: ignore[operator]
        return (self._drained - d0) / span if span > 0.05 else 0.0
