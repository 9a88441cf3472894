"""The ALINEA loop with its delay: stability, overshoot and the buffer it needs (docs/background/analysis.md).

Why: the gains of docs/background/alinea.md were argued from a delay-free characteristic equation, and
what decides whether a hop loses packets is what that leaves out: the loop delay in report
intervals (both propagation delays, the report's sampling, the control plane's latency, and a
queue a rate command waits behind unless the agent forecasts past it) and the packets a link moves in one interval
against the buffer. This module is pure arithmetic on one loop; ``topo.analysis.check`` builds the
loops of a topology and the warnings ``hbh run`` prints.

The loop of one law (node U regulating its rate R toward D, whose buffer of C packets of L bits
drains at mu), sampled at the report interval T, the command reaching D's occupancy d
intervals after it was computed::

    x(k+1) = x(k) + a * (R(k-d) - mu),           a = T / (C * L)      (fraction of the buffer)
    R(k)   = R(k-1) + W * (O - x(k)) - K * (x(k) - x(k-1))           (once O = O_max)

Eliminating R gives the characteristic polynomial (z - 1)^2 z^d + a(W + K) z - aK: the loop is
stable when all its roots lie inside the unit circle. ``d = 0`` is docs/background/alinea.md's equation.
The start-up (adaptive O and W, the floor, R_max) and a capacity drop are not linear: their
overshoot is measured by running the law itself (:class:`~controlplane.alinea.AlineaLaw`)
against the fluid buffer above (:func:`fluid_peak`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from controlplane.alinea import AlineaLaw
from controlplane.fluid_laws import fluid_peak_steps
from controlplane.params import LawParams

__all__ = ["Loop", "delay_intervals", "characteristic_roots", "spectral_radius", "max_stable_scale", "fluid_peak",
           "min_buffer", "Verdict", "assess", "r_max_with_margin"]


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
    """The largest root modulus: below 1 the loop settles, the closer to 1 the slower.

    It depends on the loop gains aW and aK only, so it is cached on them (rounded to 12
    significant digits): a topology's laws share few distinct (aW, aK, d)."""
    aw, ak = a * w, a * k
    if d > MAX_EXACT_DELAY:  # coarse-grained: m intervals as one step (aW m^2, aK m, d/m); the
        m = math.ceil(d / MAX_EXACT_DELAY)  # stability verdict holds, the modulus is per m intervals
        aw, ak, d = aw * m * m, ak * m, math.ceil(d / m)
    return _radius(float(f"{aw:.12g}"), float(f"{ak:.12g}"), d)


#: Above this delay (report intervals) the polynomial's degree makes exact roots slow.
MAX_EXACT_DELAY = 96


@functools.lru_cache(maxsize=4096)
def _radius(aw: float, ak: float, d: int) -> float:
    return float(max(abs(characteristic_roots(1.0, aw, ak, d))))


def max_stable_scale(a: float, w: float, k: float, d: int) -> float:
    """The largest s in (0, 1] for which k_p * s and w_min * s^2 give a stable loop (0.0: none found).

    For a long delay it is the gains' size and ratio that decide, not the buffer: near z = 1 the
    damping aK/2 has to beat the phase the delay adds (about d*aW), and aK itself must stay
    below about pi/(2d). Scaling K by s and W by s^2 keeps the integral time proportional to the
    proportional one, as the usual tuning rules for an integrating plant with dead time do."""
    if spectral_radius(a, w, k, d) < 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(16):  # to 1/65536 of the gains
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
    # rates computed but not yet seen by the buffer: a ring of d + 1, ``applied[at]`` the oldest (the one the buffer
    # sees now), replaced by the newest (a list shifted by one each step cost a copy of it per step: the loop
    # analysis runs this over ~45,000 steps per distinct loop, issue 46)
    applied = [law.rate] * (d + 1)
    drop_at = duration_s / 2 if drop_at_s is None else drop_at_s
    packets_per_bit = 1 / loop.packet_bits
    drain, drop_to, buffer_pkts = loop.drain_bps, loop.drop_to_bps, loop.buffer_pkts
    interval_ns, unit = int(t_step * 1e9), 1 / buffer_pkts
    # the steps, compiled (controlplane/fluid_laws.py): the same floats as this loop interpreted, which was ~15 %
    # of a fabric's loop analysis (issue 46); every value handed over a float as the loop read it (an int's
    # conversion is exact below 2**53, as Python's mixed arithmetic converts it)
    peak = fluid_peak_steps(law, applied, int(duration_s / t_step), float(t_step), float(drain),
                            None if drop_to is None else float(drop_to), float(drop_at), float(packets_per_bit),
                            float(buffer_pkts), interval_ns, float(unit))
    return peak / buffer_pkts


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


#: The loop gains docs/background/alinea.md chose for the paper's delay (a*W_min, a*k_p), kept when a law's
#: gains are derived, scaled down when its delay asks for it (max_stable_scale, with a margin).
LOOP_GAIN_W_MIN = 0.003
LOOP_GAIN_K_P = 0.15
W_MAX_HALVINGS = 4  # W_max = 2^4 * W_min, as docs/background/alinea.md's start-up ramp
FLOOR_OF_R_MAX = 0.02
STABILITY_MARGIN = 0.8
MIN_INTERVAL_S = 100e-6
HEADROOM_SHARE = 0.25  # the fluid start-up may use this share of the headroom above O_max
PACKETS_PER_INTERVAL = 2.5
#: Report intervals per loop delay: a hop learns of a capacity drop downstream at the first report
#: after it (with the report's exact drain), so the interval is most of its reaction time.
INTERVALS_PER_DELAY = 2


def derived_interval_s(delay_s: float, rate_bps: float, packet_bits: int) -> float:
    """A report interval of half the loop's delay (so d stays 2-3 intervals, a loop the gains'
    derivation keeps stable) and never shorter than 2.5 packets at the link's rate (a report should
    see a change) nor than 100 µs."""
    return max(delay_s / INTERVALS_PER_DELAY, PACKETS_PER_INTERVAL * packet_bits / rate_bps, MIN_INTERVAL_S)


def r_max_with_margin(caps_bps: float, link_bps: float, packet_bits: int, interval_s: float) -> float:
    """A switch's law's R_max when its flows' caps sum to ``caps_bps`` below the link: one frame per
    report interval above them, at most the caps again and the link.

    Why: at R_max = the caps' sum the port serves its flows at exactly their largest mean arrival
    rate, a queue at load 1: a burst that an upstream FIFO sends (the capped flow's packets queued
    behind others, released at the upstream law's rate) is never drained, it stays in the buffer the
    upstream law reads, which can take it back only by cutting every flow it carries (make fuzz-topo
    seed 5: a 2 Mb/s group's branch held f1 to 2.7 Mb/s of 200 Mb/s). The law acts once per report
    interval T and moves whole frames of L bits: a margin below L/T moves no extra frame in an
    interval, so L/T is the least margin the loop can act with; with it the port sends one frame
    more per interval than its flows bring, and a backlog of n frames drains in n intervals.
    Bounded by the caps: T is at least 2.5 frames at the link's rate (``derived_interval_s``), so on a
    fast link L/T reaches 0.4 x the link, many times a small cap; where the caps bring less than a
    frame per interval their own frames are the loop's quantum, and R_max stays within twice what the
    flows can use (its floor, 2 % of R_max, within 4 % of the caps). A host's law gets none
    (topo/analysis/derive.py): its pacers send no burst."""
    return min(link_bps, caps_bps + min(packet_bits / interval_s, caps_bps))


def derive_gains(loop: Loop, have: dict[str, float], duration_s: float = 20.0) -> dict[str, float]:
    """The law's missing values (``w_min``, ``k_p``, ``w_max``, ``r_floor``) for ``loop``; ``have``
    holds those the user gave, which are kept. The settled gains keep docs/background/alinea.md's loop gains
    (a*W_min = 0.003, a*k_p = 0.15) where the delay allows, else the stable scale times 0.8; W_max
    starts at 16 W_min and is halved while the fluid start-up overshoots past a quarter of the
    headroom above O_max: a quarter, because the hops of a line add overshoots that one law's
    fluid model does not see (docs/background/analysis.md, "Derived parameters")."""
    d = delay_intervals(loop)
    w0, k0 = LOOP_GAIN_W_MIN / loop.a, LOOP_GAIN_K_P / loop.a
    scale = max_stable_scale(loop.a, w0, k0, d)
    scale = 1.0 if scale >= 1.0 else scale * STABILITY_MARGIN
    law = loop.law
    out = {"w_min": have.get("w_min", w0 * scale * scale), "k_p": have.get("k_p", k0 * scale),
           "r_floor": have.get("r_floor", max(1.0, FLOOR_OF_R_MAX * law.r_max))}
    if "w_max" in have:
        return {**out, "w_max": have["w_max"]}
    w_max = out["w_min"] * 2 ** W_MAX_HALVINGS
    limit = law.o_max + (1 - law.o_max) * HEADROOM_SHARE
    while True:
        trial = replace(law, w_min=out["w_min"], k_p=out["k_p"], r_floor=min(out["r_floor"], law.r_max),
                        w_max=max(w_max, out["w_min"]))
        if w_max <= out["w_min"] or fluid_peak(replace(loop, law=trial), duration_s) < limit:
            return {**out, "w_max": trial.w_max}
        w_max /= 2
