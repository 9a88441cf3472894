"""ALINEA parameters: one definition, one validation, one fixed-point encoding.

Why one module: the parameters reach a switch three ways (the topology file, its timed
events, ``hbh params set``) and leave it one way (every report's packet-in carries the
parameters of the port it arrived on). All of them go through :func:`validate` and the
encoders here, so a value refused in one path is refused in all, and what the switch holds
decodes to exactly what was written.

Units (docs/background/alinea.md, docs/reference/dataplane.md):

* ``o_min``, ``o_max`` -- fractions of the downstream buffer in (0, 1]; on the switch, parts
  per million (``bit<32>``).
* ``w_max``, ``w_min`` -- the law's weight W, in bits/s of rate change per unit (100 %) of
  occupancy error; ``k_p`` -- the optional PI-ALINEA damping gain, same unit, 0 = the paper's
  law. On the switch, whole b/s (``bit<48>``).
* ``r_max``, ``r_floor`` -- bits/s (``bit<48>``).
* per modelled ingress port: ``capacity`` (packets, ``bit<32>``) and ``interval`` (report
  interval, integer µs on the switch; 0 = a report at every arrival).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from operator import itemgetter
from typing import Any

from mypy_extensions import mypyc_attr

__all__ = ["ParamError", "LawParams", "PortParams", "LAW_FIELDS", "PORT_FIELDS", "validate_law", "validate_port",
           "law_to_action", "law_from_metadata", "PPM", "MAX_48", "MAX_32"]

PPM = 1_000_000
MAX_32 = (1 << 32) - 1
MAX_48 = (1 << 48) - 1


class ParamError(ValueError):
    """An ALINEA parameter is out of range; the message names it and its value."""


@mypyc_attr(native_class=False)  # compiled, it could be neither copied nor pickled (Ray, ``scaled``)
@dataclass(frozen=True)
class LawParams:
    """What one ALINEA law instance runs with (per node, per downstream neighbour)."""

    o_min: float = 0.15
    o_max: float = 0.8
    w_max: float = 4.0e6
    w_min: float = 3.0e5
    r_max: float = 2.0e6
    r_floor: float = 4.0e4
    k_p: float = 0.0

    def with_changes(self, **changes: Any) -> LawParams:
        """A copy with some fields changed, validated as a whole."""
        return validate_law(replace(self, **changes))


@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class PortParams:
    """The buffer model of one modelled ingress port."""

    capacity: int = 200
    interval_us: int = 10_000


LAW_FIELDS = tuple(f.name for f in fields(LawParams))
PORT_FIELDS = tuple(f.name for f in fields(PortParams))


def _fmt(value: float) -> str:
    return f"{value:g}"


def validate_law(p: LawParams) -> LawParams:
    """Return ``p`` if every value is in range and consistent; else raise ParamError."""
    for name in ("o_min", "o_max"):
        value = getattr(p, name)
        if not 0 < value <= 1:
            raise ParamError(f"{name} = {_fmt(value)}: a fraction must be in (0, 1] (e.g. 70% or 0.7)")
    if p.o_min > p.o_max:
        raise ParamError(f"o_min = {_fmt(p.o_min)} is above o_max = {_fmt(p.o_max)}")
    for name in ("w_max", "w_min", "r_max", "r_floor"):
        value = getattr(p, name)
        if not value > 0:
            raise ParamError(f"{name} = {_fmt(value)}: must be > 0")
        if value > MAX_48:
            raise ParamError(f"{name} = {_fmt(value)}: above the switch's 48-bit limit")
    if p.w_min > p.w_max:
        raise ParamError(f"w_min = {_fmt(p.w_min)} is above w_max = {_fmt(p.w_max)}")
    if p.r_floor > p.r_max:
        raise ParamError(f"r_floor = {_fmt(p.r_floor)} is above r_max = {_fmt(p.r_max)}")
    if not 0 <= p.k_p <= MAX_48:
        raise ParamError(f"k_p = {_fmt(p.k_p)}: must be >= 0 (0 = the paper's law)")
    return p


def validate_port(p: PortParams) -> PortParams:
    if isinstance(p.capacity, bool) or not isinstance(p.capacity, int) or not 1 <= p.capacity <= MAX_32:
        raise ParamError(f"capacity = {p.capacity!r}: must be a whole number of packets >= 1")
    if isinstance(p.interval_us, bool) or not isinstance(p.interval_us, int) or not 0 <= p.interval_us <= MAX_32:
        raise ParamError(f"interval = {p.interval_us!r} us: must be >= 0 and fit 32 bits of µs")
    return p


# ---- the switch's encoding: MyIngress.report_to_cpu's parameters = packet_in's fields ---------------

#: P4Runtime parameter (and packet_in metadata) name -> (LawParams field, scale).
_WIRE = {
    "o_min_ppm": ("o_min", PPM),
    "o_max_ppm": ("o_max", PPM),
    "w_max_bps": ("w_max", 1),
    "w_min_bps": ("w_min", 1),
    "k_p_bps": ("k_p", 1),
    "r_max_bps": ("r_max", 1),
    "r_floor_bps": ("r_floor", 1),
}


def law_to_action(p: LawParams) -> dict[str, int]:
    """``MyIngress.report_to_cpu`` action parameters for ``p`` (validated first)."""
    validate_law(p)
    return {wire: round(getattr(p, name) * scale) for wire, (name, scale) in _WIRE.items()}


def law_from_metadata(values: dict[str, int]) -> LawParams:
    """The parameters a packet-in (or a read-back table entry) carries.

    Raises ParamError when the switch holds something invalid (e.g. an entry written by
    hand with o_min above o_max): the agent then keeps its previous parameters.
    """
    try:
        kwargs = {name: values[wire] / scale for wire, (name, scale) in _WIRE.items()}
    except KeyError as exc:
        raise ParamError(f"the switch did not send ALINEA parameter {exc.args[0]!r}") from None
    return validate_law(LawParams(**kwargs))


_WIRE_VALUES = itemgetter(*_WIRE)


class MetadataLaw:
    """:func:`law_from_metadata` for one port's packet-ins, remembering the last values it read.

    Why: the parameters come with every report (one packet-in each) and change only when someone
    writes them; decoding and validating them anew took a tenth of the agent's time. The same
    values give the same (validated) object back; other values are decoded as by the function,
    which raises ParamError for invalid or missing ones each time they come."""

    __slots__ = ("_values", "_law")

    def __init__(self) -> None:
        self._values: tuple[int, ...] | None = None
        self._law: LawParams | None = None

    def __call__(self, values: dict[str, int]) -> LawParams:
        try:
            wire = _WIRE_VALUES(values)
        except KeyError:
            return law_from_metadata(values)  # raises, naming the missing parameter
        if wire != self._values or self._law is None:
            self._law = law_from_metadata(values)
            self._values = wire
        return self._law
