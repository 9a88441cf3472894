"""CVIHIS parameters: one frozen, validated record shared by sender and receiver.

Every constant of the algorithm lives here so an experiment can name (and vary) it, and so
a bad value is rejected once, at construction, with the parameter and value in the message,
instead of surfacing later as a strange rate. docs/background/cvihis.md gives the reasoning behind
each default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

MS = 1_000_000  # nanoseconds per millisecond
MAX_MD_PER_FILL = 64  # more MDs of 1.10 per fill would only pin the rate at its floor

#: Default edges of the 7 rate-adaptation areas, as fractions of [minDelay, maxDelay].
#: Area 3 (the target) is [0.38, 0.48): strictly below the middle (0.5).
DEFAULT_AREA_EDGES: tuple[float, ...] = (0.08, 0.22, 0.38, 0.48, 0.62, 0.80)


@dataclass(frozen=True)
class CvihisParams:
    """All tunables of CVIHIS; validated in ``__post_init__`` (ValueError names the field)."""

    # Steps, in packets per sqrt(RTT) (see docs/background/cvihis.md, "From step to gap").
    step_strong_decrease: float = 1.0  # --- (area 6)
    step_strong_increase: float = 0.7  # +++ (area 0)
    step_decrease: float = 0.5  # --   (area 5)
    step_increase: float = 0.5  # ++   (area 1)
    step_gradient: float = 0.2  # - / + (areas 2 and 4, and whenever the gradient wins)
    md_factor: float = 1.10  # inter-packet gap multiplier per MD (how many per loss: md_per_fill, md_per_packet)
    pf: float = 1.05  # RTM: minDelay push factor (how often: pf_pushes_per_rtt, pf_per_rtt)
    pf_per_rtt: bool = False  # True: PF once per RTT, spread over its decisions; False: PF at every decision
    pf_pushes_per_rtt: float = 1.25  # > 0: PF this many times per RTT, spread over its decisions (PF^(k/n) each);
    #                                  0: as pf_per_rtt says (the push rate apart from the decision rate)
    # How RTM's areas move when minDelay is pushed (docs/background/cvihis.md, "Readings"; hosts/cvihis/variants.py):
    rtm_shift_areas: bool = False  # True: the areas' top always moves up with the push (keeps their width)
    rtm_shift_until_loss: bool = True  # ... until the first loss, then only minDelay (the top: the loss point)
    rtm_reprobe: bool = True  # ... and a delay past the loss point without a loss puts the top one PF push above it
    md_per_packet: bool = False  # MD once per lost packet (True) or at most once per RTT (False)
    md_per_fill: int = 2  # > 0: one MD per lost packet, up to this many per fill of the queue (from a loss until a
    #                       decision below the target area, at least one RTT later); 0: as md_per_packet says
    md_fill_overload: bool = True  # with md_per_fill: a loss 3 RTTs into a fill whose delay has stayed at its peak
    #                                since its MDs reached the queue is a sustained overload: it starts the next fill
    ewma_weight: float = 0.5  # weight of the newest rate update; history gets 1 - weight
    area_edges: tuple[float, ...] = field(default=DEFAULT_AREA_EDGES)
    max_delay_gain: float = 1.0  # EWMA gain of maxDelay towards the OWD before a loss (1: the newest loss)
    initial_span_ns: int = 50 * MS  # maxDelay - minDelay until the first loss is seen
    min_span_ns: int = 1 * MS  # smallest maxDelay - minDelay the areas are built on
    gradient_deadband_ns: int = 0  # |OWD change| up to this counts as a flat gradient
    reorder_window: int = 3  # a gap is a loss once this many later packets have arrived
    updates_per_rtt: int = 3  # the receiver decides this often per RTT (the sender's hint),
    update_interval_min_ns: int = 10 * MS  # the interval clamped to [min, max];
    update_interval_max_ns: int = 500 * MS  # before any RTT hint: initial
    initial_update_interval_ns: int = 100 * MS
    initial_rtt_ns: int = 100 * MS  # sender's RTT for conversions before the first sample
    rtt_gain: float = 0.125  # sender's smoothed RTT gain (as TCP's SRTT)
    packet_size_bytes: int = 1000
    initial_rate_bps: float = 400_000.0
    min_rate_bps: float = 80_000.0
    max_rate_bps: float = 100_000_000.0

    def __post_init__(self) -> None:
        _check_types(self)
        for name in ("step_strong_decrease", "step_strong_increase", "step_decrease",
                     "step_increase", "step_gradient"):
            _require(name, getattr(self, name), 0 < getattr(self, name) <= 100, "in (0, 100]")
        _require("md_factor", self.md_factor, 1 < self.md_factor <= 10, "in (1, 10]")
        _require("pf", self.pf, 1 < self.pf <= 10, "in (1, 10]")
        _require("pf_pushes_per_rtt", self.pf_pushes_per_rtt, 0 <= self.pf_pushes_per_rtt <= 10, "in [0, 10]")
        _require("pf_pushes_per_rtt", self.pf_pushes_per_rtt, not (self.pf_pushes_per_rtt and self.pf_per_rtt),
                 "0 with pf_per_rtt True (two push rates at once)")
        _require("ewma_weight", self.ewma_weight, 0 < self.ewma_weight <= 1, "in (0, 1]")
        _require("max_delay_gain", self.max_delay_gain, 0 < self.max_delay_gain <= 1, "in (0, 1]")
        _require("rtt_gain", self.rtt_gain, 0 < self.rtt_gain <= 1, "in (0, 1]")
        _check_edges(self.area_edges)
        for name in ("initial_span_ns", "min_span_ns", "update_interval_min_ns",
                     "update_interval_max_ns", "initial_update_interval_ns", "initial_rtt_ns",
                     "packet_size_bytes", "reorder_window", "updates_per_rtt"):
            _require(name, getattr(self, name), getattr(self, name) >= 1, ">= 1")
        _require("md_per_fill", self.md_per_fill, 0 <= self.md_per_fill <= MAX_MD_PER_FILL, f"in 0..{MAX_MD_PER_FILL}")
        _require("md_per_fill", self.md_per_fill, not (self.md_per_fill and self.md_per_packet),
                 "0 with md_per_packet True (two MD rules at once)")
        _require("gradient_deadband_ns", self.gradient_deadband_ns, self.gradient_deadband_ns >= 0, ">= 0")
        _require("initial_span_ns", self.initial_span_ns, self.initial_span_ns >= self.min_span_ns,
                 f">= min_span_ns ({self.min_span_ns})")
        _require("update_interval_max_ns", self.update_interval_max_ns,
                 self.update_interval_max_ns >= self.update_interval_min_ns,
                 f">= update_interval_min_ns ({self.update_interval_min_ns})")
        _require("min_rate_bps", self.min_rate_bps, self.min_rate_bps > 0, "> 0")
        _require("max_rate_bps", self.max_rate_bps, self.max_rate_bps >= self.min_rate_bps,
                 f">= min_rate_bps ({self.min_rate_bps})")
        _require("initial_rate_bps", self.initial_rate_bps,
                 self.min_rate_bps <= self.initial_rate_bps <= self.max_rate_bps,
                 f"in [min_rate_bps, max_rate_bps] = [{self.min_rate_bps}, {self.max_rate_bps}]")

    @property
    def packet_bits(self) -> int:
        """Bits per data packet: converts between packets/s and bits/s."""
        return 8 * self.packet_size_bytes

    @property
    def push_factor(self) -> float:
        """RTM's push of minDelay at one decision: PF (``pf_per_rtt`` False, ``pf_pushes_per_rtt`` 0), PF^(1/n)
        (``pf_per_rtt``: PF once per RTT over its n decisions) or PF^(k/n) (``pf_pushes_per_rtt`` k)."""
        if self.pf_pushes_per_rtt:
            return float(self.pf ** (self.pf_pushes_per_rtt / self.updates_per_rtt))
        return float(self.pf ** (1 / self.updates_per_rtt)) if self.pf_per_rtt else self.pf

    def pps(self, rate_bps: float) -> float:
        """Packets per second at ``rate_bps``."""
        return rate_bps / self.packet_bits


_INT_FIELDS = {"initial_span_ns", "min_span_ns", "gradient_deadband_ns", "reorder_window",
               "updates_per_rtt", "update_interval_min_ns", "update_interval_max_ns", "initial_update_interval_ns",
               "initial_rtt_ns", "packet_size_bytes", "md_per_fill"}


def _check_types(p: CvihisParams) -> None:
    """Reject wrong kinds early: a string or NaN would otherwise pass some comparisons."""
    for f in fields(p):
        value = getattr(p, f.name)
        if f.name == "area_edges":
            if not isinstance(value, tuple):
                raise ValueError(f"CvihisParams.area_edges: expected a tuple of 6 floats, got {value!r}")
            continue
        if f.name in ("rtm_shift_areas", "md_per_packet", "md_fill_overload", "rtm_shift_until_loss", "rtm_reprobe",
                      "pf_per_rtt"):
            if not isinstance(value, bool):
                raise ValueError(f"CvihisParams.{f.name}: expected True or False, got {value!r}")
        elif f.name in _INT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"CvihisParams.{f.name}: expected an integer, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"CvihisParams.{f.name}: expected a finite number, got {value!r}")


def _check_edges(edges: tuple[float, ...]) -> None:
    """Six increasing fractions in (0, 1); the target's upper edge at most the middle."""
    if len(edges) != 6:
        raise ValueError(f"CvihisParams.area_edges: expected 6 edges for 7 areas, got {edges!r}")
    for e in edges:
        if isinstance(e, bool) or not isinstance(e, int | float) or not 0 < e < 1:
            raise ValueError(f"CvihisParams.area_edges: edge {e!r} not a number in (0, 1) in {edges!r}")
    if any(a >= b for a, b in zip(edges, edges[1:])):
        raise ValueError(f"CvihisParams.area_edges: edges must strictly increase, got {edges!r}")
    if edges[3] > 0.5:
        raise ValueError(f"CvihisParams.area_edges: the target area must lie below the middle "
                         f"(upper edge {edges[3]!r} > 0.5) in {edges!r}")


def _require(name: str, value: object, ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"CvihisParams.{name}: {value!r} is not {what}")
