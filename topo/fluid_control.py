"""The controllers of topo/fluid_network.py: one law each, with what its owner adds per report.

Why: what keeps a line of hops lossless is not the law alone but what a switch agent wraps it
in on BMv2's queues (the forecast past its own queue, the measured drain, the schedule's bound)
and the start-up brake of an ALINEA host. A fluid check with the bare law overflows lines the
simulator holds; so the check drives the same pieces the agents and hosts use
(:class:`~controlplane.forecast.QueueForecast`, :func:`~controlplane.forecast.schedule_floor_pps`,
:func:`~controlplane.agent.rate_to_pps`), composed as :class:`controlplane.agent.SwitchAgentCore`
and :class:`hosts.sender.AlineaHostSender` compose them.
"""

from __future__ import annotations

from controlplane.agent import rate_to_pps
from controlplane.alinea import AlineaLaw, Brake, Forecast
from controlplane.forecast import QueueForecast, schedule_floor_pps
from controlplane.params import LawParams

__all__ = ["HostControl", "SwitchControl"]


class HostControl:
    """An ALINEA host's law: its rate is its pacer's, its drain forecast feeds the brake."""

    def __init__(self, law: LawParams, packet_bytes: int) -> None:
        self.law = AlineaLaw(law)
        self.bits = 8 * packet_bytes
        self._drain = QueueForecast()

    @property
    def rate_bps(self) -> float:
        return self.law.rate

    def on_report(self, now_ns: int, occupancy: int, capacity: int, overflow: bool, interval_ns: int,
                  sent: int) -> float:
        d = self._drain
        d.update(now_ns, occupancy, sent, sent, 0)
        brake = Brake(d.drain_pps * self.bits, d.approach_bps(capacity, self.bits))
        return self.law.on_report(occupancy / capacity, overflow, now_ns, interval_ns, 1 / capacity, brake=brake)


class SwitchControl:
    """A switch agent's law for one egress port: on BMv2's queues with its forecast and bound."""

    def __init__(self, law: LawParams, packet_bytes: int, fixed_departures: bool) -> None:
        self.law = AlineaLaw(law, law.r_max if fixed_departures else None)
        self.packet_bytes = packet_bytes
        self.bits = 8 * packet_bytes
        self.forecast = QueueForecast() if fixed_departures else None
        self.pps = 0

    @property
    def rate_bps(self) -> float:
        return self.law.rate

    def on_report(self, now_ns: int, sampled_ns: int, occupancy: int, capacity: int, overflow: bool,
                  interval_ns: int, fwd: int, deq: int, drained: int) -> int:
        """The queue rate (packets/s) after one report."""
        forecast = None
        f = self.forecast
        if f is not None:
            pkts = f.update(sampled_ns, occupancy, fwd, deq, self.pps, now_ns, drained, sampled_ns)
            forecast = Forecast(max(0, round(pkts)) / capacity, f.expected_pps * self.bits,
                                f.approach_bps(capacity, self.bits), f.span_scale(), f.guessed_fall)
        self.law.on_report(occupancy / capacity, overflow, now_ns, interval_ns, 1 / capacity, forecast)
        if f is not None:
            link_pps = self.law.params.r_max / self.bits  # the agent's: the R_max the switch holds
            floor = schedule_floor_pps(f.queued, link_pps, f.horizon_s, f.arrivals_before_next_command())
            self.law.hold_at_least(self.bits * (f.expected_pps if floor is None else floor))
        self.pps = rate_to_pps(self.law.rate, self.packet_bytes)
        return self.pps
