"""BMv2's egress queue of a port paced at its emulated link's rate: a slow link's backlog forms in the switch.

Why: BMv2 has no link model; netem or a :mod:`topo.linkemu` process gives a link its rate and delay
outside the switch. Whatever the switch sends faster than the link then waits in the emulator
(netem's ``limit`` of 10,000 frames, the emulator's likewise), where alinea.p4 cannot count it: when
a link's rate falls, the modelled buffer that should fill and report stays at its target while the
delay grows without bound. On p4switch the port *is* the link's serializer, so the backlog forms in
the switch's egress queue, as on a hardware switch. Here BMv2's egress queue of every port whose
link is emulated is given the link's rate as a ceiling (``set_queue_rate``, packets/s), combined
with the ALINEA law's rate where a law regulates the port (the lower of the two), and moved with
the link at a timed rate event; the emulator is left with the wire time and the delay, and at most
the frame on its wire (docs/bmv2.md, "No hidden queue on an emulated link").

BMv2 fixes a packet's departure when the packet is queued (``QueueingLogicPriRL``: ``max(now,
last + 1/rate)``), so a new rate does not reach the packets already queued: after a link's rate
falls, those leave at the old one and the emulator gets ``N (1 - new/old)`` frames more than its
wire carries, which a ceiling *at* the link's rate would never drain. So while an emulator reports
frames waiting on a way, :class:`LinkPacing` holds that port's ceiling :data:`DRAIN_MARGIN` below
the link until the emulator is empty again: the excess goes back into the switch's queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.queues import QueueClient
from controlplane.report import FRAME_BYTES as REPORT_FRAME_BYTES
from topo.plan import frame_sizes_over

__all__ = ["link_pps", "LinkPacedQueues", "PacedWay", "LinkPacing", "paced_ways", "ceilings", "DRAIN_MARGIN", "HIDDEN_BACKLOG_FRAMES",
           "hidden_queue_notice"]

log = logging.getLogger(__name__)

#: how far below its link's rate a port's ceiling is held while its emulator drains frames waiting
DRAIN_MARGIN = 0.05
#: frames waiting in an emulator (behind the one on its wire) beyond which a run says so
HIDDEN_BACKLOG_FRAMES = 4


def link_pps(rate_bps: float, frame_bytes: int) -> int:
    """The link's rate as a BMv2 queue rate: frames of ``frame_bytes`` per second, rounded down.

    Why down and why the largest frame: BMv2 counts packets, a link bits. A ceiling from the
    largest data frame that crosses the port never lets the switch send faster than the link
    carries, whatever the mix; smaller frames leave part of the link unused, which is what they
    would do in a queue whose rate counts packets. A port that carries no data carries reports
    only: its ceiling counts report frames, so that it never holds them back. Where a port carries
    both, :meth:`PacedWay.ceiling` gives the reports their share at their own size. (The agent
    converts the *law's* rate with its own function, controlplane/agent.py; this module is the one
    place the *link's* rate is converted.)"""
    if frame_bytes <= 0:
        raise ValueError(f"frame_bytes must be > 0, got {frame_bytes}")
    pps = int(rate_bps // (8 * frame_bytes))
    return pps if pps > 1 else 1


class LinkPacedQueues(QueueClient):
    """A switch's queue client whose ports never get a rate above their link's ceiling.

    The agent calls it as it calls any :class:`~controlplane.queues.QueueClient`; each
    ``set_queue_rate`` (the law's rate) is remembered and sent as ``min(law, ceiling)`` (a law's
    0, no limit, sends the ceiling). :meth:`set_ceiling` and :meth:`set_draining` resend every
    queue of the port. Every call must come from the one thread that owns the agent (its loop):
    the Thrift client under it is not thread-safe."""

    def __init__(self, inner: QueueClient, ceilings: dict[int, int]) -> None:
        super().__init__(inner, inner.where)
        self.inner = inner
        self.ceilings = dict(ceilings)  # port -> the link's pps
        self.draining: set[int] = set()
        self.law: dict[tuple[int, int | None], int] = {}  # (port, priority) -> the law's pps
        self.sent: dict[tuple[int, int | None], int] = {}  # (port, priority) -> what the switch has

    def ceiling(self, port: int) -> int | None:
        c = self.ceilings.get(port)
        if c is None or port not in self.draining:
            return c
        return max(1, int(c * (1 - DRAIN_MARGIN)))

    def effective(self, port: int, pps: int) -> int:
        c = self.ceiling(port)
        if c is None:
            return pps
        return c if pps <= 0 else min(pps, c)

    def set_queue_rate(self, port: int, pps: int, priority: int | None = None) -> None:
        self.law[(port, priority)] = pps
        self._send(port, priority)

    def set_queue_depth(self, port: int, depth: int, priority: int | None = None) -> None:
        self.inner.set_queue_depth(port, depth, priority)

    def start(self) -> None:
        """The ceiling on every paced port no law has set yet (a law's port gets it with the law's rate)."""
        for port in sorted(self.ceilings):
            if not any(p == port for p, _ in self.law):
                self._send(port, None)

    def set_ceiling(self, port: int, pps: int) -> None:
        """The port's link changed rate (a timed ``link_rate`` event)."""
        if pps < 1:
            raise ValueError(f"port {port}: a ceiling is at least 1 packet/s, got {pps}")
        self.ceilings[port] = pps
        self._resend(port)

    def set_draining(self, port: int, on: bool) -> None:
        if (port in self.draining) == on or port not in self.ceilings:
            return
        if on:
            self.draining.add(port)
        else:
            self.draining.discard(port)
        self._resend(port)

    def _resend(self, port: int) -> None:
        """The whole port first (it sets every priority queue), then each queue set on its own."""
        keys = {k for k in (*self.law, *self.sent) if k[0] == port} or {(port, None)}
        for _, priority in sorted(keys, key=lambda k: -1 if k[1] is None else k[1]):
            self._send(port, priority)

    def _send(self, port: int, priority: int | None) -> None:
        pps = self.effective(port, self.law.get((port, priority), 0))
        self.inner.set_queue_rate(port, pps, priority)
        self.sent[(port, priority)] = pps

    def close(self) -> None:
        self.inner.close()


@dataclass
class PacedWay:
    """One direction of an emulated link that leaves a switch: the switch's port and the emulator's way."""

    switch: str
    port: int
    link: tuple[str, str]  # the topology link (a, b)
    way: str  # the emulator's direction: "a->b" or "b->a"
    control_socket: str | None  # the emulator's (None: netem, whose backlog is not read)
    frame_bytes: int  # the largest data frame that crosses it (a report's when no data does)
    report_pps: float = 0.0  # reports this port sends on a way that also carries data

    def ceiling(self, rate_bps: float) -> int:
        """The link's rate as a queue rate: the reports' share at their size, the rest in data frames."""
        if not self.report_pps:
            return link_pps(rate_bps, self.frame_bytes)
        left = rate_bps - self.report_pps * 8 * REPORT_FRAME_BYTES
        return (link_pps(left, self.frame_bytes) if left > 0 else 0) + max(1, int(self.report_pps))


def paced_ways(topo: Any, emulators: dict[tuple[str, str], str | None]) -> list[PacedWay]:
    """Every way of an emulated link that leaves a switch. ``emulators``: topology link (a, b) ->
    its emulator's control socket (None under netem). An emulator's ``a->b`` carries what the
    link's first switch sends (a host link's: what its switch sends; the host paces its uplink)."""
    ways = []
    for link in topo.links:
        sock = emulators.get((link.a, link.b))
        ends = [(u, v) for u, v in ((link.a, link.b), (link.b, link.a)) if topo.nodes[u].is_switch]
        both = all(topo.nodes[n].is_switch for n in (link.a, link.b))
        for u, v in ends:
            way = ("a->b" if u == link.a else "b->a") if both else "a->b"
            sizes = frame_sizes_over(topo, u, v)
            # u reports its buffer fed by v back to v, one report per interval while v's data arrives
            params = topo.ports.get((u, v))
            reports = 1e6 / params.interval_us if sizes and params is not None and frame_sizes_over(topo, v, u) else 0.0
            ways.append(PacedWay(u, topo.port(u, v), (link.a, link.b), way, sock,
                                 max(sizes) if sizes else REPORT_FRAME_BYTES, reports))
    return ways


def ceilings(topo: Any, ways: list[PacedWay], switch: str) -> dict[int, int]:
    """``switch``'s ports -> their links' rates as queue rates (at the topology's rates)."""
    return {w.port: w.ceiling(topo.link_between(*w.link).rate_bps) for w in ways if w.switch == switch}


@dataclass
class LinkPacing:
    """The ceilings of a BMv2 run's emulated links, and the drain of an emulator holding frames.

    ``run_on(switch, fn, *args)`` runs ``fn`` on that switch's agent loop (not waiting);
    ``stats(control_socket)`` reads an emulator's ``stats`` (per way)."""

    ways: list[PacedWay]
    queues: dict[str, LinkPacedQueues]
    run_on: Callable[..., None]
    stats: Callable[[str], dict[str, dict[str, int]]]
    peak: dict[tuple[str, str], int] = field(default_factory=dict)  # (link name, way) -> most frames waiting
    final: dict[tuple[str, str], int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def set_link_rate(self, link: tuple[str, str], bps: int) -> None:
        """Both switch ends of ``link`` (a host end is the host's own pacing)."""
        for w in self.ways:
            if w.link == link:
                self.run_on(w.switch, self.queues[w.switch].set_ceiling, w.port, w.ceiling(bps))

    def check(self) -> None:
        """One look at every emulator: a way with frames waiting drains (its ceiling lowered) until empty."""
        for sock, ways in self._by_emulator().items():
            try:
                stats = self.stats(sock)
            except Exception as exc:  # noqa: BLE001 - an emulator that stopped answering: keep running, say so
                self.unreadable.append(f"{sock}: {exc}")
                continue
            for w in ways:
                s = stats.get(w.way)
                if s is None:
                    continue
                key = (f"{w.link[0]}-{w.link[1]}", w.way)
                self.peak[key] = max(self.peak.get(key, 0), int(s.get("peak_backlog", 0)))
                self.final[key] = int(s.get("backlog", 0))
                q = self.queues[w.switch]
                waiting = self.final[key] > 1
                if waiting != (w.port in q.draining):
                    log.info("%s port %d: %s (%d frames waiting in the %s emulator, %s)", w.switch, w.port,
                             "ceiling lowered to drain" if waiting else "ceiling back at the link's rate",
                             self.final[key], key[0], w.way)
                    self.run_on(w.switch, q.set_draining, w.port, waiting)

    def _by_emulator(self) -> dict[str, list[PacedWay]]:
        out: dict[str, list[PacedWay]] = {}
        for w in self.ways:
            if w.control_socket is not None:
                out.setdefault(w.control_socket, []).append(w)
        return out

    def summary(self) -> dict[str, Any]:
        """For summary.json: per emulated way, the most frames that waited and those left at the end."""
        return {"peak_backlog": {f"{k[0]} {k[1]}": v for k, v in sorted(self.peak.items())},
                "final_backlog": {f"{k[0]} {k[1]}": v for k, v in sorted(self.final.items())},
                "hidden_queue": any(v > HIDDEN_BACKLOG_FRAMES for v in (*self.peak.values(), *self.final.values())),
                "threshold_frames": HIDDEN_BACKLOG_FRAMES}


def hidden_queue_notice(summary: dict[str, Any]) -> str | None:
    """One line when some emulator held more than a few frames outside the switch, else None."""
    over = {k: v for k, v in summary.get("peak_backlog", {}).items() if v > HIDDEN_BACKLOG_FRAMES}
    left = {k: v for k, v in summary.get("final_backlog", {}).items() if v > HIDDEN_BACKLOG_FRAMES}
    if not over and not left:
        return None
    worst = max((*over.items(), *left.items()), key=lambda kv: kv[1])
    return (f"warning: link emulators held frames outside the switch, where the data plane does not count "
            f"them (more than {HIDDEN_BACKLOG_FRAMES} waiting on {len(set(over) | set(left))} way(s); most: "
            f"{worst[1]} on {worst[0]}, {sum(left.values())} left at the end): this run's buffers understate "
            "the backlog (docs/bmv2.md)")
