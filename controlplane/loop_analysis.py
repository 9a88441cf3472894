"""The ALINEA loop with its delay: stability, overshoot and the buffer it needs (docs/alinea.md).

Why: the gains of docs/alinea.md were argued from a delay-free characteristic equation, and
what decides whether a hop loses packets is what that leaves out: the loop delay in report
intervals (both propagation delays, the report's sampling, the control plane's latency, and on
BMv2's queues the regulated queue's own sojourn) and the packets a link moves in one interval
against the buffer. This module is pure arithmetic on one loop; ``topo.analysis`` builds the
loops of a topology and the warnings ``hbh run`` prints.

The loop of one law (node U regulating its rate R toward D, whose buffer of C packets of L bits
drains at mu), sampled at the report interval T, the command reaching D's occupancy d
intervals after it was computed::

    x(k+1) = x(k) + a * (R(k-d) - mu),           a = T / (C * L)      (fraction of the buffer)
    R(k)   = R(k-1) + W * (O - x(k)) - K * (x(k) - x(k-1))           (once O = O_max)

Eliminating R gives the characteristic polynomial (z - 1)^2 z^d + a(W + K) z - aK: the loop is
stable when all its roots lie inside the unit circle. ``d = 0`` is docs/alinea.md's equation.
The start-up (adaptive O and W, the floor, R_max) and a capacity drop are not linear: their
overshoot is measured by running the law itself (:class:`~controlplane.alinea.AlineaLaw`)
against the fluid buffer above (:func:`fluid_peak`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from controlplane.alinea import AlineaLaw
from controlplane.params import LawParams

__all__ = ["Loop", "delay_intervals", "characteristic_roots", "spectral_radius", "max_stable_scale", "fluid_peak",
           "min_buffer", "Verdict", "assess"]


@dataclass(frozen=True)
class Loop:
    """One law and the plant it regulates."""

    law: LawParams
    buffer_pkts: int  # C: the downstream buffer
    packet_bits: int  # L
    interval_s: float  # T: the downstream's report interval
    delay_s: float  # command computed -> its effect on the reported occupancy (without T/2 sampling)
    drain_bps: float  # mu: what D forwards at equilibrium (the flows' bottleneck behind D)
    drop_to_bps: float | None = None  # a capacity drop of D's drain to this rate (None: none)

    @property
    def a(self) -> float:
        return self.interval_s / (self.buffer_pkts * self.packet_bits)


def delay_intervals(loop: Loop) -> int:
    """d: the loop delay in whole report intervals, the report's sampling (T/2 on average) included."""
    return max(0, math.ceil((loop.delay_s + loop.interval_s / 2) / loop.interval_s - 1e-9))


def characteristic_roots(a: float, w: float, k: float, d: int) -> np.ndarray:
    """Roots of (z - 1)^2 z^d + a(w + k) z - a k."""
    poly = np.zeros(d + 3)
    poly[0:3] = (1.0, -2.0, 1.0)  # (z-1)^2 z^d, highest power first
    poly[-2] += a * (w + k)
    poly[-1] -= a * k
    return np.roots(poly)


def spectral_radius(a: float, w: float, k: float, d: int) -> float:
    """The largest root modulus: below 1 the loop settles, the closer to 1 the slower."""
    return float(max(abs(characteristic_roots(a, w, k, d))))


def max_stable_scale(a: float, w: float, k: float, d: int) -> float:
    """The largest s in (0, 1] for which k_p * s and w_min * s^2 give a stable loop (0.0: none found).

    For a long delay it is the gains' size and ratio that decide, not the buffer: near z = 1 the
    damping aK/2 has to beat the phase the delay adds (about d*aW), and aK itself must stay
    below about pi/(2d). Scaling K by s and W by s^2 keeps the integral time proportional to the
    proportional one, as the usual tuning rules for an integrating plant with dead time do."""
    if spectral_radius(a, w, k, d) < 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if spectral_radius(a, w * mid * mid, k * mid, d) < 1.0:
            lo = mid
        else:
            hi = mid
    return lo


def fluid_peak(loop: Loop, duration_s: float = 60.0, drop_at_s: float | None = None) -> float:
    """Peak occupancy (fraction of the buffer, unclipped above 1) of the law driving a fluid
    buffer with the loop's delay, from an empty buffer and the law's start; with
    ``loop.drop_to_bps``, D's drain falls to it at ``drop_at_s`` (default: half-way)."""
    t_step = loop.interval_s
    d = delay_intervals(loop)
    law = AlineaLaw(loop.law)
    applied = [law.rate] * (d + 1)  # rates computed but not yet seen by the buffer
    x = 0.0  # packets
    peak = 0.0
    drop_at = duration_s / 2 if drop_at_s is None else drop_at_s
    packets_per_bit = 1 / loop.packet_bits
    for k in range(int(duration_s / t_step)):
        t = k * t_step
        mu = loop.drain_bps if loop.drop_to_bps is None or t < drop_at else loop.drop_to_bps
        x = max(0.0, x + (applied[0] - mu) * t_step * packets_per_bit)
        peak = max(peak, x)
        rate = law.on_report(x / loop.buffer_pkts, False, int(t * 1e9), int(t_step * 1e9), 1 / loop.buffer_pkts)
        applied = applied[1:] + [rate]
    return peak / loop.buffer_pkts


def min_buffer(loop: Loop, duration_s: float = 60.0, drop_at_s: float | None = None,
               limit_pkts: int = 1 << 19) -> int | None:
    """The smallest buffer (packets, the targets kept as fractions) whose settled loop is stable
    and whose fluid peak stays below full; None if none up to ``limit_pkts``. Larger buffers slow the loop (a = T / (C L)), so
    the search tries doubling sizes, then bisects between the last failing and first passing."""
    d = delay_intervals(loop)

    def ok(c: int) -> bool:
        trial = replace(loop, buffer_pkts=c)
        return (spectral_radius(trial.a, loop.law.w_min, loop.law.k_p, d) < 1.0
                and fluid_peak(trial, duration_s, drop_at_s) < 1.0)

    lo, hi = 1, loop.buffer_pkts
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > limit_pkts:
            return None
    if hi == loop.buffer_pkts and ok(max(1, hi // 2)):
        lo = 1
    while hi - lo > max(1, hi // 50):  # within 2 %
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Verdict:
    """What the analysis says of one loop."""

    delay_intervals: int
    radius_settled: float  # spectral radius with W_min and k_p (the settled loop)
    peak: float  # fluid peak occupancy (fraction), start-up and the drop if any
    needed_buffer_pkts: int | None  # None: computed only when the loop loses

    @property
    def lossless(self) -> bool:
        return self.radius_settled < 1.0 and self.peak < 1.0


def assess(loop: Loop, duration_s: float = 60.0, drop_at_s: float | None = None) -> Verdict:
    """Stability of the settled loop, the fluid peak, and (when it loses) the buffer it needs."""
    d = delay_intervals(loop)
    radius = spectral_radius(loop.a, loop.law.w_min, loop.law.k_p, d)
    peak = fluid_peak(loop, duration_s, drop_at_s)
    needed = None if peak < 1.0 and radius < 1.0 else min_buffer(loop, duration_s, drop_at_s)
    return Verdict(d, radius, peak, needed)
