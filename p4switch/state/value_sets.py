"""Parser value sets: the members a ``select`` case tests, written by the control plane.

P4Runtime writes a value set as a whole (``ValueSetEntry`` MODIFY with every member;
an empty list empties it). Members are matches with one entry per P4Info match field
(``@match(kind)`` of the struct field, exact by default), checked with the same rules
as table entries, kept in the order written for read-write symmetry. A key is in the set
if it matches at least one member (no priorities). The parser calls ``matches`` per
packet, so the members are compiled into a set of exact keys where they are all exact,
otherwise into (mask, value, ranges) tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from p4.config.v1 import p4info_pb2

from .errors import Code, StateError, invalid
from .tables import (
    Exact,
    Lpm,
    Match,
    MatchFieldInfo,
    MatchKind,
    OptionalMatch,
    Range,
    Ternary,
    canonical_match,
)

Member = tuple[Match | None, ...]


class ValueSetState:
    """One ``value_set``: ``fields`` from P4Info, at most ``size`` members (0: no limit)."""

    def __init__(self, vs_id: int, name: str, fields: Sequence[MatchFieldInfo], size: int,
                 unsupported: str | None = None) -> None:
        self.id = vs_id
        self.name = name
        self.fields = tuple(fields)
        self.size = size
        self.unsupported = unsupported  # why the control plane cannot write it (a non-standard match kind)
        self._by_id = {f.id: i for i, f in enumerate(self.fields)}
        self._by_name = {f.name: i for i, f in enumerate(self.fields)}
        self.members: list[Member] = []
        self._exact: set[tuple[int, ...]] | None = set()
        self._tests: list[tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int, int], ...]]] = []

    @classmethod
    def from_p4info(cls, vs: p4info_pb2.ValueSet) -> ValueSetState:
        name = vs.preamble.name
        fields, unsupported = [], None
        for mf in vs.match:
            kind = mf.match_type if mf.WhichOneof("match") == "match_type" else 0
            if kind not in MatchKind._value2member_map_:
                unsupported = f"value set '{name}' field '{mf.name}': match kind " \
                              f"'{mf.other_match_type or kind}' is not supported"
                kind = MatchKind.EXACT
            if mf.bitwidth <= 0:
                raise invalid(f"P4Info value set '{name}' field '{mf.name}': bitwidth {mf.bitwidth} (must be > 0)")
            fields.append(MatchFieldInfo(mf.id, mf.name, mf.bitwidth, MatchKind(kind)))
        if len({f.id for f in fields}) != len(fields):
            raise invalid(f"P4Info value set '{name}': duplicate match field ids")
        if vs.size < 0:
            raise invalid(f"P4Info value set '{name}': negative size {vs.size}")
        return cls(vs.preamble.id, name, fields, vs.size, unsupported)

    # ------------------------------------------------------------ data plane

    def matches(self, key: tuple[int, ...]) -> bool:
        """Is ``key`` (one int per field, P4Info order) in the set?"""
        if self._exact is not None:
            return key in self._exact
        for masks, values, ranges in self._tests:
            if all((k & m) == v for k, m, v in zip(key, masks, values)) and \
                    all(lo <= key[i] <= hi for i, lo, hi in ranges):
                return True
        return False

    # ------------------------------------------------------------ control plane

    def canonical(self, match: Mapping[int | str, Match | int]) -> Member:
        return canonical_match(f"value set '{self.name}'", self.fields, self._by_id, self._by_name, match)

    def set_members(self, members: Sequence[Mapping[int | str, Match | int]]) -> list[Member]:
        """P4Runtime MODIFY: replace every member; returns the previous ones (for an undo)."""
        if self.unsupported:
            raise StateError(Code.UNIMPLEMENTED, self.unsupported)
        canon = [self.canonical(m) for m in members]
        seen: set[Member] = set()
        for m in canon:
            if m in seen:
                raise StateError(Code.ALREADY_EXISTS, f"value set '{self.name}': member {self._fmt(m)} given twice")
            seen.add(m)
        if 0 < self.size < len(canon):
            raise StateError(Code.RESOURCE_EXHAUSTED,
                             f"value set '{self.name}' holds at most {self.size} members, {len(canon)} given")
        old = self.members
        self.restore(canon)
        return old

    def add(self, match: Mapping[int | str, Match | int]) -> Member:
        """Add one member (the pipeline's API; P4Runtime replaces the whole set)."""
        m = self.canonical(match)
        if m in self.members:
            raise StateError(Code.ALREADY_EXISTS, f"value set '{self.name}': member {self._fmt(m)} already there")
        if 0 < self.size <= len(self.members):
            raise StateError(Code.RESOURCE_EXHAUSTED, f"value set '{self.name}' is full ({self.size} members)")
        self.restore(self.members + [m])
        return m

    def clear(self) -> None:
        self.restore([])

    def restore(self, members: list[Member]) -> None:
        """Set the members without checks (after validation, and for rollbacks)."""
        self.members = list(members)
        self._compile()

    # ------------------------------------------------------------ helpers

    def _compile(self) -> None:
        exact_only = all(isinstance(x, Exact | OptionalMatch) for m in self.members for x in m)
        if exact_only:
            self._exact = {tuple(x.value for x in m) for m in self.members}  # type: ignore[union-attr]
            self._tests = []
            return
        self._exact = None
        self._tests = [_test(self.fields, m) for m in self.members]

    def _fmt(self, m: Member) -> str:
        return "{" + ", ".join(f"{f.name or f.id}={x}" for f, x in zip(self.fields, m) if x is not None) + "}"


def _test(fields: Sequence[MatchFieldInfo], member: Member) -> tuple[tuple[int, ...], tuple[int, ...],
                                                                        tuple[tuple[int, int, int], ...]]:
    masks, values, ranges = [], [], []
    for i, (f, x) in enumerate(zip(fields, member)):
        mask = value = 0
        if isinstance(x, Exact | OptionalMatch):
            mask, value = f.full_mask, x.value
        elif isinstance(x, Lpm):
            mask, value = f.full_mask ^ (f.full_mask >> x.prefix_len), x.value
        elif isinstance(x, Ternary):
            mask, value = x.mask, x.value
        elif isinstance(x, Range):
            ranges.append((i, x.low, x.high))
        masks.append(mask)
        values.append(value)
    return tuple(masks), tuple(values), tuple(ranges)


__all__ = ["ValueSetState"]
