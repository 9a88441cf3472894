"""Senders as sans-I/O cores: when the next packet is due, and at what rate.

* :class:`Pacer` -- frames at ``rate_bps`` in bits: each is followed by its own bits at the rate
  (``packet_bytes`` frames, the largest, evenly spaced); a rate change takes effect from the last
  packet sent (not from "now"), so pacing has no jumps. It is the
  engine's (per-packet work): it also takes the flows in turn, equal in bits (deficit round-robin
  in bytes: one packet a turn when all are of one size), and sends their frames.
* :class:`AlineaHostSender` -- the paper's end host: its rate toward the first-hop switch is an
  :class:`~controlplane.alinea.AlineaLaw` fed by that switch's reports, the same law module the
  switch agents run, reading the switch's buffer in the frames the host sends (their mean size,
  measured as a switch port's is). Several flows of one host share that rate max-min fair in bits, a flow
  with an ``r_max`` held under it by the pacer.
* :class:`FixedSender` -- one flow at a constant rate (``control: fixed``).

Bindings (``topo/sim/network.py``, and ``topo/netns/host.py`` through it) give each sender's pacer its
flows' frames, bind it to their scheduler and link and ``rearm()`` it after each rate change; the
senders of other modules (CVIHIS, TFRC, LEDBAT) they drive with ``next_send_ns`` and ``take``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import hbh_engine as _engine

from controlplane.alinea import AlineaLaw
from controlplane.forecast import QueueForecast
from controlplane.frame_size import READ_PERIOD_NS, FrameSizeWindow, capacity_in_frames
from controlplane.params import LawParams
from controlplane.report import Report

__all__ = ["Pacer", "SenderFlow", "AlineaHostSender", "FixedSender"]

NS_PER_S = 1_000_000_000


#: ``Pacer(rate_bps, packet_bytes, start_ns=0, stop_at_pacer=False)``: the engine's paced sender
#: (engine/src/hosts/host.rs). As a pacer: ``gap_ns``, ``next_send_ns()``, ``on_sent(now, nbytes=None)``, ``set_rate``;
#: ``taken`` and ``taken_bytes`` count the frames it sent.
#: With its flows (``add_flow``) and bound to a scheduler and a link (``bind``), ``rearm()`` makes it
#: send every packet itself: topo/sim/network.py binds it, the law here only sets its rate.
Pacer = _engine.PacedSender


@dataclass
class SenderFlow:
    """One flow's sending state: its id, sequence numbers and window of activity."""

    flow_id: int
    name: str
    start_ns: int
    stop_ns: int | None
    next_seq: int = 0

    def active(self, now_ns: int) -> bool:
        return now_ns >= self.start_ns and (self.stop_ns is None or now_ns < self.stop_ns)

    def take_seq(self) -> int:
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        return seq


@dataclass
class AlineaHostSender:
    """A host whose rate into the network follows its first-hop switch's reports; its flows share
    the pacer max-min fair in bits, each under its ``r_max``.

    Its law reads the switch's buffer in the frames it sends, of the mean size a
    :class:`~controlplane.frame_size.FrameSizeWindow` measures from the pacer's frames (read every
    ``READ_PERIOD_NS`` at a report), as a switch's law does from its port's counters: the largest
    frame would make a buffer of small frames look fuller than it is (docs/background/alinea.md, "Bits, not
    packets")."""

    law_params: LawParams
    packet_bytes: int
    flows: list[SenderFlow]
    # the first hop's buffer unit (bytes; 0: packets): the law reads that buffer in bytes, as a
    # switch's does (controlplane/frame_size.py), so that hosts of several sizes share it in bits
    unit_bytes: int = 0
    # the frame the host is expected to send before its pacer has (0: ``packet_bytes``)
    frame_bytes: int = 0
    law: AlineaLaw = field(init=False)
    pacer: Pacer = field(init=False)
    _drain: QueueForecast = field(init=False, default_factory=QueueForecast)
    frames: FrameSizeWindow = field(init=False)
    _next_read_ns: int = field(init=False, default=0)
    # the first hop's buffer in this host's frames at the last report (controlplane.frame_size.capacity_in_frames)
    capacity: int = field(init=False, default=0)
    # its own link's rate now (b/s): the law's r_max is held at or below it (set_link_rate)
    _link_bps: float = field(init=False, default=math.inf)

    def __post_init__(self) -> None:
        self.law = AlineaLaw(self.law_params)
        self.frames = FrameSizeWindow(self.frame_bytes or self.packet_bytes)
        start = min(f.start_ns for f in self.flows)
        self.pacer = Pacer(self.law.rate, self.packet_bytes, start)

    def on_report(self, now_ns: int, report: Report) -> float:
        """One report of the first hop's buffer: the law's new rate, set on the pacer. ``capacity``
        keeps that buffer in this host's frames, as the law read it (the binding records it)."""
        # the first hop's drain of our packets: what we sent (nothing waits here: the pacer spaces
        # packets onto the wire) less the buffer's growth; it feeds the start-up brake
        d, pacer, frames = self._drain, self.pacer, self.frames
        sent = pacer.taken
        occupancy = report.occupancy
        d.update(now_ns, occupancy, sent, sent, 0)
        if now_ns >= self._next_read_ns:
            frames.update(sent, pacer.taken_bytes)
            self._next_read_ns = now_ns + READ_PERIOD_NS
        mean = frames.mean
        capacity = self.capacity = capacity_in_frames(report.capacity, self.unit_bytes, mean)
        # the law's arguments by position (forecast None): a host reports every interval, and
        # keywords cost the compiled call a parse of its arguments by name
        if capacity:
            rate = self.law.on_report(occupancy / capacity, report.drops > 0, now_ns, report.interval_us * 1000,
                                      1 / capacity, None, d.brake(capacity, 8 * mean))
        else:
            rate = self.law.on_report(0.0, report.drops > 0, now_ns, report.interval_us * 1000, 0.0, None, None)
        pacer.set_rate(rate)
        return rate

    def set_params(self, params: LawParams) -> None:
        """The law's parameters as the file or an event sets them; r_max no higher than the link."""
        self.law_params = params
        self._apply_link_cap()

    def set_link_rate(self, bps: float) -> None:
        """A ``link_rate`` event on this host's own link.

        Why: the host is the one node that knows its own link's rate, and a pacer faster than its
        NIC only fills the NIC's queue, which no switch reports and no law sees: when the link
        falls, the first hop's buffer empties, its reports ask for more, and the transmit queue
        overflows (found by the random topologies: 1526 frames lost behind a 200 to 1 Mb/s fall).
        So r_max follows min(its configured value, the link's rate), as a switch's egress rate is
        the link's where a law does not ask for less; the law then clamps its rate at once."""
        self._link_bps = float(bps)
        self._apply_link_cap()

    def _apply_link_cap(self) -> None:
        p = self.law_params
        cap = min(p.r_max, self._link_bps)  # the floor with it: a floor above the link is a queue too
        self.law.set_params(p if cap == p.r_max else p.with_changes(r_max=cap, r_floor=min(p.r_floor, cap)))
        self.pacer.set_rate(self.law.rate)

    def tick(self, now_ns: int) -> None:
        if self.law.tick(now_ns):
            self.pacer.set_rate(self.law.rate)


@dataclass
class FixedSender:
    """One flow at a constant rate."""

    flow: SenderFlow
    rate_bps: float
    packet_bytes: int
    pacer: Pacer = field(init=False)

    def __post_init__(self) -> None:
        self.pacer = Pacer(self.rate_bps, self.packet_bytes, self.flow.start_ns, stop_at_pacer=True)

    @property
    def flows(self) -> list[SenderFlow]:
        return [self.flow]
