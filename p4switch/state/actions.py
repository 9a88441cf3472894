"""Actions as P4Info describes them, and an action call with integer arguments.

Table entries, default entries and constant entries all bind an action id to
argument values; the pipeline only needs ``(action_id, params)`` with params as
ints in P4Info parameter order (= declaration order), so that is what is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from p4.config.v1 import p4info_pb2

from .bytestrings import fits_unsigned
from .errors import invalid


class Scope(IntEnum):
    """``p4.config.v1.ActionRef.Scope``: where a table may use an action (its entries, its
    default, or both); a table says it of each of its actions, and an action profile checks
    a member's action against every table it implements."""

    TABLE_AND_DEFAULT = 0
    TABLE_ONLY = 1
    DEFAULT_ONLY = 2


@dataclass(frozen=True, slots=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True, slots=True)
class ActionInfo:
    id: int
    name: str
    params: tuple[ParamInfo, ...]

    @classmethod
    def from_p4info(cls, action: p4info_pb2.Action) -> ActionInfo:
        params = tuple(ParamInfo(p.id, p.name, p.bitwidth) for p in action.params)
        return cls(action.preamble.id, action.preamble.name, params)

    def param_index(self, param_id: int) -> int | None:
        for i, p in enumerate(self.params):
            if p.id == param_id:
                return i
        return None

    def check_params(self, params: Sequence[int]) -> tuple[int, ...]:
        """Validate argument count and widths; returns them as a tuple."""
        if len(params) != len(self.params):
            raise invalid(
                f"action '{self.name}' takes {len(self.params)} parameter(s), {len(params)} given"
            )
        for p, value in zip(self.params, params):
            if not isinstance(value, int) or not fits_unsigned(value, p.bitwidth):
                raise invalid(f"action '{self.name}' parameter '{p.name}': {value!r} does not fit bit<{p.bitwidth}>")
        return tuple(params)

    def params_from_mapping(self, values: Mapping[int | str, int]) -> tuple[int, ...]:
        """Arguments given by parameter id or name, in P4Info order; all required."""
        out = []
        known = {p.id for p in self.params} | {p.name for p in self.params}
        for key in values:
            if key not in known:
                raise invalid(f"action '{self.name}' has no parameter {key!r}")
        for p in self.params:
            if p.id in values and p.name in values:
                raise invalid(f"action '{self.name}' parameter '{p.name}' given twice")
            if p.id in values:
                out.append(values[p.id])
            elif p.name in values:
                out.append(values[p.name])
            else:
                raise invalid(f"action '{self.name}' parameter '{p.name}' missing")
        return self.check_params(out)


@dataclass(frozen=True, slots=True)
class ActionCall:
    """An action id with its arguments (ints, P4Info parameter order)."""

    action_id: int
    params: tuple[int, ...] = ()
