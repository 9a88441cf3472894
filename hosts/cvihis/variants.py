"""Named readings of CVIHIS: the choices the sources leave open, as a topology file selects them.

The papers fix the step sizes, MD = 1.10, PF = 1.05 and the 7 areas, but not how the areas move
when RTM pushes minDelay, how often a decision is taken per RTT (and so whether PF applies per
decision or per RTT), whether an MD applies per loss event or per lost packet (or, ``md: two-per-fill``, per lost packet up to
two per fill of the queue, and ``two-per-fill-overload`` the same with a fill held at its loss point an RTT after its
MDs counted as the next: docs/background/cvihis.md, "How the default was chosen"), nor whether maxDelay
is the newest loss's delay or an average. Each
choice is one key of a ``cvihis:`` mapping in a topology file (``cvihis: {variant: shifted}``,
``cvihis: {md: per-packet}``); a ``variant`` names a whole reading at once, and keys given beside
it change that reading one choice at a time. The default, ``reprobe-overload``, is the reading that
reproduces the most of the published results (docs/background/cvihis.md, "How the default was chosen", has the
measurements behind it); the other readings stay here so that a researcher can run them side by side. ``probe`` was
the default until issue 48 under the name ``published``: a file naming ``published`` is refused in one line that
names ``probe`` (``RENAMED``), rather than silently running another reading. ``reprobe-slow``, the default before
``reprobe-fill`` (the same reading with one MD per loss event), and ``reprobe-fill``, the default before
``reprobe-overload`` (a fill ends only when the queue drains, a capacity drop's sustained overload included), keep
their names and run as they did.

Why a table of overrides on :class:`CvihisParams` rather than code paths: a reading is a set of
parameter values, so every reading is validated by the same ``CvihisParams`` checks, runs the
same cores and is reproducible from its name alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from hosts.cvihis.params import CvihisParams

__all__ = ["AREAS", "CHOICE_KEYS", "DEFAULT_VARIANT", "MAX_DECISIONS_PER_RTT", "MAX_DELAY", "MAX_PUSHES_PER_RTT", "MD",
           "PUSH", "RENAMED", "RUN_KEYS", "VARIANTS", "CvihisReading", "ReadingError", "push_values"]

DEFAULT_VARIANT = "reprobe-overload"
MAX_DECISIONS_PER_RTT = 10

#: how RTM's areas move when minDelay is pushed (``areas:``)
AREAS: Mapping[str, Mapping[str, object]] = MappingProxyType({
    # the areas' top moves up with the push until the first loss, then only minDelay is pushed
    "probe": MappingProxyType({"rtm_shift_areas": False, "rtm_shift_until_loss": True, "rtm_reprobe": False}),
    # as probe, and a delay past the loss point without a loss shows the loss point is higher: the top one push of
    # PF above the highest such delay (RTM probes for the loss point again, one push at a time)
    "reprobe": MappingProxyType({"rtm_shift_areas": False, "rtm_shift_until_loss": True, "rtm_reprobe": True}),
    # only minDelay is pushed, from the start: the areas squeeze onto maxDelay (the literal wording)
    "squeeze": MappingProxyType({"rtm_shift_areas": False, "rtm_shift_until_loss": False, "rtm_reprobe": False}),
    # the whole delay space moves up with the push, keeping the width learned from losses
    "shift": MappingProxyType({"rtm_shift_areas": True, "rtm_shift_until_loss": False, "rtm_reprobe": False}),
})
#: what an MD applies to (``md:``)
MD: Mapping[str, Mapping[str, object]] = MappingProxyType({
    # one per loss event: at most once per RTT
    "per-rtt": MappingProxyType({"md_per_packet": False, "md_per_fill": 0, "md_fill_overload": False}),
    # one per lost packet
    "per-packet": MappingProxyType({"md_per_packet": True, "md_per_fill": 0, "md_fill_overload": False}),
    # one per lost packet, up to two per fill of the queue: from a loss until the delay is back below the target area
    "two-per-fill": MappingProxyType({"md_per_packet": False, "md_per_fill": 2, "md_fill_overload": False}),
    # as two-per-fill, and a fill whose delay stays at the loss point an RTT after its MDs reached the queue, losses
    # still coming, is a sustained overload (a capacity drop): that loss starts the next fill
    "two-per-fill-overload": MappingProxyType({"md_per_packet": False, "md_per_fill": 2, "md_fill_overload": True}),
})
#: how often PF pushes RTM's minDelay (``push:``); a number k instead of a name: PF k times per RTT, spread over its
#: decisions (PF^(k/n) at each of n), a push rate apart from the decision rate (``push_values``)
PUSH: Mapping[str, Mapping[str, object]] = MappingProxyType({
    "per-decision": MappingProxyType({"pf_per_rtt": False, "pf_pushes_per_rtt": 0.0}),  # PF at every decision
    "per-rtt": MappingProxyType({"pf_per_rtt": True, "pf_pushes_per_rtt": 0.0}),  # PF once per RTT, spread over it
})
MAX_PUSHES_PER_RTT = 10
#: what maxDelay follows (``max_delay:``)
MAX_DELAY: Mapping[str, Mapping[str, object]] = MappingProxyType({
    "last-loss": MappingProxyType({"max_delay_gain": 1.0}),  # the OWD before the newest loss
    "ewma": MappingProxyType({"max_delay_gain": 0.5}),  # an EWMA of it (gain 0.5)
})

#: the named readings: each a choice for every key (``variant:``)
VARIANTS: Mapping[str, Mapping[str, object]] = MappingProxyType({
    # the default (docs/background/cvihis.md, "How the default was chosen"): the top re-probed past a loss point the
    # delay has passed without a loss, PF pushing minDelay 1.25 times per RTT (PF^(1.25/3) at each of 3 decisions),
    # and one MD per lost packet up to two per fill of the queue, a fill held at its loss point counted as the next
    "reprobe-overload": MappingProxyType({"areas": "reprobe", "decisions_per_rtt": 3, "push": 1.25,
                                          "md": "two-per-fill-overload", "max_delay": "last-loss"}),
    # the default before reprobe-overload (issue 48): a fill ends only when the queue drains, so a sustained
    # overload (a capacity drop) is one fill with two MDs
    "reprobe-fill": MappingProxyType({"areas": "reprobe", "decisions_per_rtt": 3, "push": 1.25, "md": "two-per-fill",
                                      "max_delay": "last-loss"}),
    # the default before reprobe-fill (issue 48): the same reading with one MD per loss event (at most one per RTT)
    "reprobe-slow": MappingProxyType({"areas": "reprobe", "decisions_per_rtt": 3, "push": 1.25, "md": "per-rtt",
                                      "max_delay": "last-loss"}),
    # the default until issue 48 (then named ``published``): the areas probe until the first loss, PF at every decision
    "probe": MappingProxyType({"areas": "probe", "decisions_per_rtt": 3, "push": "per-decision",
                               "md": "per-rtt", "max_delay": "last-loss"}),
    "shifted": MappingProxyType({"areas": "shift", "decisions_per_rtt": 3, "push": "per-decision", "md": "per-rtt",
                                 "max_delay": "ewma"}),
    "squeezed": MappingProxyType({"areas": "squeeze", "decisions_per_rtt": 3, "push": "per-decision",
                                  "md": "per-rtt", "max_delay": "ewma"}),
    # as reprobe-slow, but a decision every half RTT with PF at each (so PF pushes minDelay twice per RTT): the
    # TCP-friendliest against reno at the paper's starting rate, its BLM yielding more slowly
    "reprobe": MappingProxyType({"areas": "reprobe", "decisions_per_rtt": 2, "push": "per-decision",
                                 "md": "per-rtt", "max_delay": "last-loss"}),
    # as reprobe-slow, but maxDelay an EWMA of the losses' delays (the paper: "an EWMA may be used"): it meets the
    # two-bottleneck row 6 reprobe-slow and the default miss, not the starts at half the capacity and at the capacity
    # (docs/background/cvihis.md, "How the default was chosen")
    "reprobe-ewma": MappingProxyType({"areas": "reprobe", "decisions_per_rtt": 3, "push": 1.25, "md": "per-rtt",
                                      "max_delay": "ewma"}),
})
#: variants that were renamed: the old name, refused in one line naming the new one
RENAMED: Mapping[str, str] = MappingProxyType({"published": "probe"})
CHOICE_KEYS = ("areas", "decisions_per_rtt", "push", "md", "max_delay")
#: keys of a ``cvihis:`` mapping that set up one run rather than read the paper: ``start_rate`` (b/s), the rate
#: the sender starts at (the paper's TCP-friendliness tests varied it); no variant sets them
RUN_KEYS = ("start_rate",)
_TABLES: Mapping[str, Mapping[str, Mapping[str, object]]] = MappingProxyType(
    {"areas": AREAS, "push": PUSH, "md": MD, "max_delay": MAX_DELAY})


class ReadingError(ValueError):
    """A reading's name or choice that does not exist; the message names the key and the choices."""


@dataclass(frozen=True)
class CvihisReading:
    """One reading: a ``variant`` and the choices changed beside it (key, value pairs)."""

    variant: str = DEFAULT_VARIANT
    changes: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if self.variant in RENAMED:
            raise ReadingError(f"variant: {self.variant!r} was the default until issue 48 and is now named "
                               f"{RENAMED[self.variant]!r}; the default is now {DEFAULT_VARIANT!r}")
        if self.variant not in VARIANTS:
            raise ReadingError(f"variant: {self.variant!r} is not one of {', '.join(VARIANTS)}")
        for key, value in self.changes:
            _check_choice(key, value)

    def choices(self) -> dict[str, object]:
        """Every key's choice: the variant's, with ``changes`` on top."""
        return {**VARIANTS[self.variant], **dict(self.changes)}

    def apply(self, params: CvihisParams) -> CvihisParams:
        """``params`` with this reading's values (everything else, e.g. rates and sizes, kept)."""
        values: dict[str, object] = {}
        for key, value in self.choices().items():
            if key == "decisions_per_rtt":
                values["updates_per_rtt"] = value
            elif key == "start_rate":
                values["initial_rate_bps"] = float(value)  # type: ignore[arg-type]
            elif key == "push":
                values.update(push_values(value))
            else:
                values.update(_TABLES[key][str(value)])
        return dataclasses.replace(params, **values)

    def describe(self) -> str:
        """``variant`` or ``variant (key value, ...)``: how a report names the reading."""
        if not self.changes:
            return self.variant
        return f"{self.variant} ({', '.join(f'{k} {v}' for k, v in self.changes)})"


def push_values(push: object) -> Mapping[str, object]:
    """The parameters of a ``push:`` choice: a name of ``PUSH``, or k pushes of PF per RTT (a number)."""
    if isinstance(push, str):
        return PUSH[push]
    return {"pf_per_rtt": False, "pf_pushes_per_rtt": float(push)}  # type: ignore[arg-type]


def _check_choice(key: str, value: object) -> None:
    if key == "start_rate":
        lo, hi = CvihisParams().min_rate_bps, CvihisParams().max_rate_bps
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise ReadingError(f"start_rate: {value!r} b/s is not in {lo:g}..{hi:g} b/s (CVIHIS's floor and ceiling)")
        return
    if key == "decisions_per_rtt":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DECISIONS_PER_RTT:
            raise ReadingError(f"decisions_per_rtt: {value!r} is not an integer in 1..{MAX_DECISIONS_PER_RTT}")
        return
    if key == "push" and not (isinstance(value, str) and value in PUSH):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_PUSHES_PER_RTT:
            raise ReadingError(f"push: {value!r} is not one of {', '.join(PUSH)} or a number of pushes per RTT in "
                               f"(0, {MAX_PUSHES_PER_RTT}]")
        return
    if key not in _TABLES:
        raise ReadingError(f"{key}: unknown choice (use {', '.join(('variant', *CHOICE_KEYS, *RUN_KEYS))})")
    if value not in _TABLES[key]:
        raise ReadingError(f"{key}: {value!r} is not one of {', '.join(_TABLES[key])}")
