"""The controllers of the loop analysis's fluid model (topo/analysis/fluid_network.py): one law each, with what
its owner adds per report, and the batch that answers one step's reports in one call.

Why here: what keeps a line of hops lossless is not the law alone but what a switch agent wraps it
in on BMv2's queues (the forecast past its own queue, the measured drain, the schedule's bound)
and the start-up brake of an ALINEA host. A fluid check with the bare law overflows lines the
simulator holds; so the check drives the same pieces the agents and hosts use:
:class:`~controlplane.forecast.QueueForecast` (its ``law_forecast``, ``hold_pps`` and ``brake``, the
one composition :class:`controlplane.agent.SwitchAgentCore` and :class:`hosts.sender.AlineaHostSender`
call too) and :func:`~controlplane.agent.rate_to_pps`. These controllers were topo/analysis/fluid_control.py's;
they are compiled with the control path (controlplane/native.py) because the model asks them most of
its cost: the 12 x 4 head-of-line fabric's 60 s run asks 433,330 answers, and the interpreted wrapper
around each (its attribute reads and calls, then the engine's call into it per answer) was a third
of the analysis (issue 46 bounds it at a tenth of the run or 2 s). The law is the one law
(controlplane/alinea.py): nothing here computes a rate but through it.

The model's fluid is in one unit on every link (topo/analysis/fluid_network.py); a controller built with a
``ratio`` (units per packet of its flows, 1 with one frame size) reads its buffer's occupancy and capacity,
and its queue's counters, in packets, and a switch's answers its queue rate back in units.
"""

from __future__ import annotations

from typing import Final

from controlplane.agent import class_r_max, queue_busy, rate_to_pps
from controlplane.alinea import AlineaLaw
from controlplane.forecast import QueueForecast, round_even
from controlplane.params import LawParams

__all__ = ["HostControl", "SwitchControl", "LawBatch", "CALL_INTS", "fluid_peak_steps"]

#: Integers per call in :meth:`LawBatch.answer`: the law's place, then what its ``on_report`` is told
#: (a host's six, a switch's nine; a host's last three unused).
CALL_INTS: Final = 10


class HostControl:
    """An ALINEA host's law: its rate is its pacer's, its drain forecast feeds the brake."""

    def __init__(self, law: LawParams, packet_bytes: int, ratio: float = 1.0) -> None:
        self.law = AlineaLaw(law)
        self.bits = 8 * packet_bytes
        self.ratio = ratio  # the model's units of fluid per packet (topo/analysis/fluid_network.py)
        self._drain = QueueForecast()

    @property
    def rate_bps(self) -> float:
        return self.law.rate

    def on_report(self, now_ns: int, occupancy: int, capacity: int, overflow: bool, interval_ns: int,
                  sent: int) -> float:
        d = self._drain
        if self.ratio != 1.0:  # the model's units, in packets
            ratio = self.ratio  # (round_even: round() without the builtin's call, controlplane/forecast.py)
            occupancy, capacity, sent = round_even(occupancy / ratio), round_even(capacity / ratio), round_even(sent / ratio)
        d.update(now_ns, occupancy, sent, sent, 0)
        return self.law.on_report(occupancy / capacity, overflow, now_ns, interval_ns, 1 / capacity,
                                  brake=d.brake(capacity, self.bits))


class SwitchControl:
    """A switch agent's law for one egress port: on BMv2's queues with its forecast and bound."""

    def __init__(self, law: LawParams, packet_bytes: int, fixed_departures: bool, ratio: float = 1.0) -> None:
        self.law = AlineaLaw(law, law.r_max if fixed_departures else None)
        self.ratio = ratio  # the model's units of fluid per packet (topo/analysis/fluid_network.py)
        self.packet_bytes = packet_bytes
        self.bits = 8 * packet_bytes
        self.forecast: QueueForecast | None = QueueForecast(follows_trend=False, counts_stamps=False) if fixed_departures else None
        self.pps = 0
        self._r_max_pps = self.law.params.r_max / self.bits  # the R_max the switch holds, packets/s
        self.params = law
        # per-destination classes: the laws of the port's other classes (their queues above or below this
        # one's on the port's link), whose set rates cut this one's R_max (``_fair_share``)
        self.siblings: list[SwitchControl] = []

    @property
    def rate_bps(self) -> float:
        return self.law.rate

    def on_report(self, now_ns: int, sampled_ns: int, occupancy: int, capacity: int, overflow: bool,
                  interval_ns: int, fwd: int, deq: int, drained: int) -> float:
        """The queue rate (packets/s) after one report."""
        law, f = self.law, self.forecast
        ratio = self.ratio
        if ratio != 1.0:  # the model's units, in packets; the answer back in units
            occupancy, capacity = round_even(occupancy / ratio), round_even(capacity / ratio)
            fwd, deq, drained = round_even(fwd / ratio), round_even(deq / ratio), round_even(drained / ratio)
        if f is None:
            law.on_report(occupancy / capacity, overflow, now_ns, interval_ns, 1 / capacity, None)
        else:
            pkts = f.update(sampled_ns, occupancy, fwd, deq, self.pps, now_ns, drained, sampled_ns)
            if self.siblings:
                law.set_params(self._fair_share(f))
            law.on_report(occupancy / capacity, overflow, now_ns, interval_ns, 1 / capacity,
                          f.law_forecast(pkts, capacity, self.bits))
            law.hold_at_least(self.bits * f.hold_pps(self._r_max_pps))  # at the R_max the switch holds, as the agent's
        pps = self.pps = rate_to_pps(law.rate, self.packet_bytes)
        return float(pps) if ratio == 1.0 else pps * ratio

    def _fair_share(self, f: QueueForecast) -> LawParams:
        """The R_max a switch agent gives this class's law (controlplane/agent.py, ``class_r_max``), the
        port's other classes busy as their forecasts last read."""
        busy = [o.law.rate for o in self.siblings if queue_busy(o.forecast)]
        if not busy:
            return self.params
        return class_r_max(self.params, busy, self.bits * (f.floor_pps(self._r_max_pps) or 0.0))


class LawBatch:
    """The model's laws, answering one step's reports in one call (engine/src/analysis/fluid_loop.rs calls
    :meth:`answer` once a step with every report its laws must answer, in the order they arrived)."""

    def __init__(self, controls: list[HostControl | SwitchControl]) -> None:
        self.controls = controls

    def answer(self, calls: list[int]) -> list[float]:
        """``calls``: ``CALL_INTS`` integers per report (the law's place in ``controls``, then what its
        ``on_report`` is told, overflow as 0 or 1), answered one after another in that order; per report,
        the law's rate after it (b/s) and what it sets: a host's rate (b/s), a switch's queue rate
        (units/s)."""
        controls = self.controls
        out: list[float] = []
        for j in range(0, len(calls), CALL_INTS):
            c = controls[calls[j]]
            if isinstance(c, SwitchControl):
                value = c.on_report(calls[j + 1], calls[j + 2], calls[j + 3], calls[j + 4], calls[j + 5] != 0,
                                    calls[j + 6], calls[j + 7], calls[j + 8], calls[j + 9])
                out.append(c.law.rate)
                out.append(value)
            else:
                c.on_report(calls[j + 1], calls[j + 2], calls[j + 3], calls[j + 4] != 0, calls[j + 5], calls[j + 6])
                rate = c.law.rate
                out.append(rate)
                out.append(rate)
        return out


def fluid_peak_steps(law: AlineaLaw, applied: list[float], steps: int, t_step: float, drain: float,
                     drop_to: float | None, drop_at: float, packets_per_bit: float, buffer_pkts: float,
                     interval_ns: int, unit: float) -> float:
    """The steps of ``controlplane.loop_analysis.fluid_peak`` (its peak occupancy, packets): the law driving a fluid
    buffer through the ring ``applied`` of the rates it computed and the buffer has not seen yet (``applied[0]``
    the oldest), the buffer draining ``drain`` b/s, ``drop_to`` from ``drop_at`` s on.

    Why here: the same expressions in the same order as its loop there (the same floats: C doubles either way),
    compiled with the law; interpreted, that loop was ~15 % of the 12 x 4 head-of-line fabric's loop analysis
    (32 runs of up to 45,000 steps, each a call into the compiled law; issue 46)."""
    d = len(applied) - 1
    at = 0
    x = 0.0  # packets
    peak = 0.0
    for k in range(steps):
        t = k * t_step
        mu = drain if drop_to is None or t < drop_at else drop_to
        # max(0.0, ...) and max(peak, x) written out (the same floats: the first on a tie)
        x = x + (applied[at] - mu) * t_step * packets_per_bit
        x = x if x > 0.0 else 0.0
        peak = x if x > peak else peak
        applied[at] = law.on_report(x / buffer_pkts, False, int(t * 1e9), interval_ns, unit)
        at = at + 1 if at < d else 0
    return peak
