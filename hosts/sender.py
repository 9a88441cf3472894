"""Senders as sans-I/O cores: when the next packet is due, and at what rate.

* :class:`Pacer` -- packets of ``packet_bytes`` at ``rate_bps``, evenly spaced; a rate change
  takes effect from the last packet sent (not from "now"), so pacing has no jumps.
* :class:`AlineaHostSender` -- the paper's end host: its rate toward the first-hop switch is an
  :class:`~controlplane.alinea.AlineaLaw` fed by that switch's reports, the same law module the
  switch agents run. Several flows of one host share that rate, round-robin.
* :class:`FixedSender` -- one flow at a constant rate (``control: fixed``).

Bindings (``topo/simnet.py``, and ``topo/netns_host.py`` through it) ask :meth:`next_send_ns`, send at that
time and call :meth:`on_sent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controlplane.alinea import AlineaLaw, Brake
from controlplane.forecast import QueueForecast
from controlplane.params import LawParams
from controlplane.report import Report

__all__ = ["Pacer", "SenderFlow", "AlineaHostSender", "FixedSender"]

NS_PER_S = 1_000_000_000


class Pacer:
    def __init__(self, rate_bps: float, packet_bytes: int, start_ns: int = 0) -> None:
        if rate_bps <= 0:
            raise ValueError(f"sending rate must be > 0 b/s, got {rate_bps}")
        self.rate_bps = rate_bps
        self.packet_bytes = packet_bytes
        self.last_ns: int | None = None
        self.start_ns = start_ns

    @property
    def gap_ns(self) -> int:
        return max(1, round(self.packet_bytes * 8 * NS_PER_S / self.rate_bps))

    def next_send_ns(self) -> int:
        return self.start_ns if self.last_ns is None else max(self.start_ns, self.last_ns + self.gap_ns)

    def on_sent(self, now_ns: int) -> None:
        self.last_ns = now_ns

    def set_rate(self, rate_bps: float) -> None:
        self.rate_bps = rate_bps


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
    """A host whose rate into the network follows its first-hop switch's reports."""

    law_params: LawParams
    packet_bytes: int
    flows: list[SenderFlow]
    law: AlineaLaw = field(init=False)
    pacer: Pacer = field(init=False)
    _turn: int = 0
    _sent: int = 0
    _drain: QueueForecast = field(init=False, default_factory=QueueForecast)

    def __post_init__(self) -> None:
        self.law = AlineaLaw(self.law_params)
        start = min(f.start_ns for f in self.flows)
        self.pacer = Pacer(self.law.rate, self.packet_bytes, start)

    def on_report(self, now_ns: int, report: Report) -> float:
        # the first hop's drain of our packets: what we sent (nothing waits here: the pacer spaces
        # packets onto the wire) less the buffer's growth; it feeds the start-up brake
        d = self._drain
        d.update(now_ns, report.occupancy, self._sent, self._sent, 0)
        bits = 8 * self.packet_bytes
        brake = Brake(d.drain_pps * bits, d.approach_bps(report.capacity, bits)) if report.capacity else None
        rate = self.law.on_report(report.fraction, report.drops > 0, now_ns, report.interval_us * 1000,
                                  1 / report.capacity if report.capacity else 0.0, brake=brake)
        self.pacer.set_rate(rate)
        return rate

    def tick(self, now_ns: int) -> None:
        if self.law.tick(now_ns):
            self.pacer.set_rate(self.law.rate)

    def next_send_ns(self, now_ns: int) -> int | None:
        """When the next packet goes out (None: every flow has stopped)."""
        pending = [f for f in self.flows if f.stop_ns is None or f.stop_ns > now_ns]
        if not pending:
            return None
        earliest_start = min(f.start_ns for f in pending)
        return max(self.pacer.next_send_ns(), earliest_start)

    def take(self, now_ns: int) -> SenderFlow | None:
        """The flow whose packet goes now (round-robin over active flows), marking it sent."""
        active = [f for f in self.flows if f.active(now_ns)]
        if not active:
            return None
        flow = active[self._turn % len(active)]
        self._turn += 1
        self._sent += 1
        self.pacer.on_sent(now_ns)
        return flow


@dataclass
class FixedSender:
    """One flow at a constant rate."""

    flow: SenderFlow
    rate_bps: float
    packet_bytes: int
    pacer: Pacer = field(init=False)

    def __post_init__(self) -> None:
        self.pacer = Pacer(self.rate_bps, self.packet_bytes, self.flow.start_ns)

    def next_send_ns(self, now_ns: int) -> int | None:
        t = self.pacer.next_send_ns()
        return None if self.flow.stop_ns is not None and t >= self.flow.stop_ns else t

    def take(self, now_ns: int) -> SenderFlow | None:
        if not self.flow.active(now_ns):
            return None
        self.pacer.on_sent(now_ns)
        return self.flow
