"""Quantities with units, as users write them: ``2Mbps``, ``3ms``, ``80%``, ``1000B``.

One parser for the topology files, their timed events and ``hbh params`` keeps the three
ways in from drifting apart. Every function raises :class:`UnitError` with a message that
shows the text and what was expected; callers add *where* (file:line, option name).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["UnitError", "parse_rate", "parse_duration_ns", "parse_fraction", "parse_bytes", "format_rate",
           "format_duration", "OfCapacity", "parse_rate_or_share", "resolve_rate"]


class UnitError(ValueError):
    """A quantity could not be read; the message says what was expected."""


_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?"
_RATE_UNITS = {"bps": 1, "b/s": 1, "kbps": 1e3, "kb/s": 1e3, "mbps": 1e6, "mb/s": 1e6, "gbps": 1e9, "gb/s": 1e9}
_TIME_UNITS = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_BYTE_UNITS = {"b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}


def _split(text: object, what: str, example: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise UnitError(f"{what}: expected e.g. {example}, got {text!r}")
    if isinstance(text, int | float):
        if not math.isfinite(text):
            raise UnitError(f"{what}: expected a finite number, got {text!r}")
        return float(text), ""
    if not isinstance(text, str):
        raise UnitError(f"{what}: expected e.g. {example}, got {text!r}")
    m = re.fullmatch(rf"\s*{_NUMBER}\s*([A-Za-zµ/%]*)\s*", text)
    if m is None:
        raise UnitError(f"{what}: expected e.g. {example}, got {text!r}")
    try:
        value = float(m.group(1)) * (10 ** int(m.group(2)) if m.group(2) else 1)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise UnitError(f"{what}: {text!r} is too large")
    return value, m.group(3)


def parse_rate(text: object, what: str = "rate") -> float:
    """Bits per second from ``2Mbps``, ``500kbps``, ``1.8 Mb/s`` or a bare number of b/s."""
    value, unit = _split(text, what, "2Mbps, 500kbps or 1.8e6")
    if unit == "":
        return value
    scale = _RATE_UNITS.get(unit.lower())
    if scale is None:
        raise UnitError(f"{what}: unknown rate unit {unit!r} in {text!r} (use bps, kbps, Mbps, Gbps)")
    return value * scale


@dataclass(frozen=True)
class OfCapacity:
    """A rate (or an ALINEA gain, in b/s per unit of occupancy) written as a multiple of the
    regulated link's capacity, ``0.25C``: it keeps its meaning when the link's rate changes, since
    occupancy is already a fraction of the neighbour's buffer (docs/background/analysis.md, "Relative gains")."""

    multiple: float

    def of(self, capacity_bps: float) -> float:
        return self.multiple * capacity_bps

    def __str__(self) -> str:
        return f"{self.multiple:g}C"


def parse_rate_or_share(text: object, what: str = "rate") -> float | OfCapacity:
    """``parse_rate``, or ``0.25C`` (a multiple of the regulated link's capacity)."""
    if isinstance(text, str) and text.strip().endswith("C"):
        value, unit = _split(text, what, "0.25C (times the link's capacity)")
        if unit != "C":
            raise UnitError(f"{what}: expected a multiple of the link's capacity like 0.25C, got {text!r}")
        return OfCapacity(value)
    return parse_rate(text, what)


def resolve_rate(value: float | OfCapacity, capacity_bps: float | None, what: str) -> float:
    """b/s: an absolute value as is, a multiple of the capacity once the capacity is known."""
    if isinstance(value, OfCapacity):
        if capacity_bps is None:
            raise UnitError(f"{what} = {value}: a multiple of the link's capacity needs the link's rate")
        return value.of(capacity_bps)
    return value


#: the longest duration accepted, in ns (about 146 years): the simulator's clock is signed 64-bit
#: nanoseconds, and a time must leave room for the delays added to it. Beyond it ``--duration 1e30s``
#: ran without end and a flow's ``start: 1e30s`` stopped the run with a traceback.
MAX_DURATION_NS = 2**62


def parse_duration_ns(text: object, what: str = "duration") -> int:
    """Integer nanoseconds from ``3ms``, ``60s``, ``250us``; a bare number is seconds."""
    value, unit = _split(text, what, "3ms, 60s or 250us")
    scale = 1e9 if unit == "" else _TIME_UNITS.get(unit)
    if scale is None:
        raise UnitError(f"{what}: unknown time unit {unit!r} in {text!r} (use ns, us, ms, s)")
    if abs(value * scale) > MAX_DURATION_NS:
        raise UnitError(f"{what}: {text!r} is too long (at most {MAX_DURATION_NS / 1e9:.3g} s: the simulator's "
                        "clock counts 64-bit nanoseconds)")
    return round(value * scale)


def parse_fraction(text: object, what: str = "fraction") -> float:
    """A fraction from ``80%`` or ``0.8``."""
    value, unit = _split(text, what, "80% or 0.8")
    if unit == "%":
        return value / 100
    if unit:
        raise UnitError(f"{what}: expected a fraction like 80% or 0.8, got {text!r}")
    return value


def parse_bytes(text: object, what: str = "size") -> int:
    """Whole bytes from ``1000B``, ``1.5kB`` or a bare number."""
    value, unit = _split(text, what, "1000B")
    scale = 1 if unit == "" else _BYTE_UNITS.get(unit.lower())
    if scale is None:
        raise UnitError(f"{what}: unknown size unit {unit!r} in {text!r} (use B, kB, KiB, MB, MiB, GB, GiB)")
    n = value * scale
    if n != int(n):
        raise UnitError(f"{what}: {text!r} is not a whole number of bytes")
    return int(n)


def format_rate(bps: float) -> str:
    for unit, scale in (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}bps"


def format_duration(ns: int) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:g}{unit}"
    return f"{ns}ns"
