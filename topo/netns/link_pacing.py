"""BMv2's egress queue of a port paced at its emulated link's rate: a slow link's backlog forms in the switch.

Why: BMv2 has no link model; netem or a :mod:`topo.netns.linkemu` process gives a link its rate and delay
outside the switch. Whatever the switch sends faster than the link then waits in the emulator
(netem's ``limit`` of 10,000 frames, the emulator's likewise), where alinea.p4 cannot count it: when
a link's rate falls, the modelled buffer that should fill and report stays at its target while the
delay grows without bound. On p4switch the port *is* the link's serializer, so the backlog forms in
the switch's egress queue, as on a hardware switch. Here BMv2's egress queue of every port whose
link is emulated is given the link's rate as a ceiling, combined with the ALINEA law's rate where a
law regulates the port (the lower of the two), and moved with the link at a timed rate event; the
emulator is left with the wire time and the delay, and at most the frame on its wire (docs/howto/bmv2.md,
"No hidden queue on an emulated link"). The ceiling stays in bits here: the switch's agent turns it
into BMv2's packets/s (``set_queue_rate``) at the mean frame the port sends, measured from its
counters, the same conversion as the law's (``SwitchPlan.link_ceilings``, controlplane/agent.py), so
frames of mixed sizes fill the link rather than being paced as if all were the largest.

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

from controlplane.agent import LinkCeiling
from controlplane.report import FRAME_BYTES as REPORT_FRAME_BYTES
from topo.net.plan import expected_frame_bytes, frame_sizes_over

__all__ = ["PacedWay", "LinkPacing", "paced_ways", "ceilings", "DRAIN_MARGIN", "HIDDEN_BACKLOG_FRAMES",
           "hidden_queue_notice"]

log = logging.getLogger(__name__)

#: how far below its link's rate a port's ceiling is held while its emulator drains frames waiting
DRAIN_MARGIN = 0.05
#: frames waiting in an emulator (behind the one on its wire) beyond which a run says so
HIDDEN_BACKLOG_FRAMES = 4


@dataclass
class PacedWay:
    """One direction of an emulated link that leaves a switch: the switch's port and the emulator's way."""

    switch: str
    port: int
    link: tuple[str, str]  # the topology link (a, b)
    way: str  # the emulator's direction: "a->b" or "b->a"
    control_socket: str | None  # the emulator's (None: netem, whose backlog is not read)
    # the mean data frame expected over it (topo.net.plan.expected_frame_bytes; a report's when no data
    # goes): the agent's conversion until the port's counters measure the mean (controlplane/frame_size.py)
    frame_bytes: int
    report_pps: float = 0.0  # reports this port sends on a way that also carries data

    def ceiling(self, rate_bps: float) -> LinkCeiling:
        """The link's rate as the agent's ceiling for the port, in bits: the agent converts it."""
        return LinkCeiling(self.port, rate_bps, self.frame_bytes, self.report_pps)


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
                                 expected_frame_bytes(topo, u, v) if sizes else REPORT_FRAME_BYTES, reports))
    return ways


def ceilings(topo: Any, ways: list[PacedWay], switch: str) -> tuple[LinkCeiling, ...]:
    """``switch``'s ceilings at the topology's link rates (``SwitchPlan.link_ceilings``)."""
    return tuple(w.ceiling(topo.link_between(*w.link).rate_bps) for w in ways if w.switch == switch)


@dataclass
class LinkPacing:
    """The ceilings of a BMv2 run's emulated links, and the drain of an emulator holding frames.

    ``run_on(switch, fn, *args)`` runs ``fn`` on that switch's agent loop (not waiting; the Thrift
    client under an agent is not thread-safe); ``agents``: each switch's agent, whose
    ``set_link_rate(port, bps)`` converts a link's rate to its queue rate at the mean frame the port
    sends (controlplane/agent.py); ``stats(control_socket)`` reads an emulator's ``stats`` (per way);
    ``link_bps``: each link's rate now (the topology's at start)."""

    ways: list[PacedWay]
    agents: dict[str, Any]
    run_on: Callable[..., None]
    stats: Callable[[str], dict[str, dict[str, int]]]
    link_bps: dict[tuple[str, str], float]
    draining: set[tuple[str, int]] = field(default_factory=set)  # (switch, port) held below its link
    peak: dict[tuple[str, str], int] = field(default_factory=dict)  # (link name, way) -> most frames waiting
    final: dict[tuple[str, str], int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def ceiling_bps(self, w: PacedWay) -> float:
        """The way's ceiling now: its link's rate, :data:`DRAIN_MARGIN` below it while its emulator drains."""
        bps = self.link_bps[w.link]
        return bps * (1 - DRAIN_MARGIN) if (w.switch, w.port) in self.draining else bps

    def set_link_rate(self, link: tuple[str, str], bps: int) -> None:
        """Both switch ends of ``link`` (a host end is the host's own pacing)."""
        self.link_bps[link] = bps
        for w in self.ways:
            if w.link == link:
                self._send(w)

    def _send(self, w: PacedWay) -> None:
        self.run_on(w.switch, self.agents[w.switch].set_link_rate, w.port, self.ceiling_bps(w))

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
                waiting = self.final[key] > 1
                if waiting != ((w.switch, w.port) in self.draining):
                    log.info("%s port %d: %s (%d frames waiting in the %s emulator, %s)", w.switch, w.port,
                             "ceiling lowered to drain" if waiting else "ceiling back at the link's rate",
                             self.final[key], key[0], w.way)
                    if waiting:
                        self.draining.add((w.switch, w.port))
                    else:
                        self.draining.discard((w.switch, w.port))
                    self._send(w)

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
            "the backlog (docs/howto/bmv2.md)")
