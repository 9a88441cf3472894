"""The packet header vector (PHV): one flat list of slots per packet, laid out at load time.

Every storage location a P4 program can name -- header fields, header validity bits,
header stack ``nextIndex`` counters, metadata and ``standard_metadata`` fields, local
variables, action and function parameters -- gets a fixed slot index once, when the
program is loaded. A packet's state is then ``template[:]`` (one list copy) and every
field access is ``phv[i]``: no dictionaries, no attribute lookups, no objects per header.

Aggregates are flattened *depth-first in declaration order*, so every aggregate occupies
one contiguous slot range ``[start, end)``:

* header: ``valid`` then its fields (a ``varbit`` field takes two slots: value, bit length);
* struct: its fields in order;
* header union: its member headers in order (each with its own validity slot);
* header stack: its elements (equal strides, so ``stack[i]`` at run time is
  ``elem0_slot + i * stride``), then ``nextIndex``.

Copying an aggregate is one slice assignment, its value is one slice. The first
:data:`RESERVED` slots hold per-packet context (see :data:`SLOT_PKT` ...), so that every
compiled closure takes a single argument, the PHV.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from p4switch.frontend import types as T
from p4switch.frontend.errors import P4Error

# Per-packet context kept in the PHV itself (closures take only the PHV).
SLOT_PKT = 0  # the Packet object while a block runs (externs record clone/digest/... requests on it)
SLOT_DATA = 1  # the received bytes being parsed
SLOT_CURSOR = 2  # parser cursor, in bits from the start of SLOT_DATA
SLOT_OUT = 3  # deparser output: list of byte strings
RESERVED = 4


class LayoutError(P4Error):
    """A type the PHV cannot hold (e.g. a generic left unspecialised).

    A P4Error without a location: whoever allocates the storage (a parameter, a local, a
    statement) puts its own location on it (``scope.located``).
    """

    def __init__(self, message: str) -> None:
        super().__init__(None, f"pipeline: {message}")


@dataclass(eq=False)
class Storage:
    """A named storage location occupying slots ``[start, end)``; ``type`` is its P4 type."""

    type: T.Type
    start: int
    end: int

    def slots(self) -> range:
        return range(self.start, self.end)


@dataclass(eq=False)
class ScalarS(Storage):
    """One slot: bit<w>, int<w> (held signed), bool (0/1), error and enums (ints)."""

    width: int = 0
    signed: bool = False

    @property
    def slot(self) -> int:
        return self.start


@dataclass(eq=False)
class VarbitS(Storage):
    """A varbit field: value slot, then its current length in bits."""

    max_width: int = 0

    @property
    def slot(self) -> int:
        return self.start

    @property
    def len_slot(self) -> int:
        return self.start + 1


@dataclass(eq=False)
class StructS(Storage):
    """A struct (or the fields part of anything with named fields)."""

    fields: dict[str, Storage] = field(default_factory=dict)


@dataclass(eq=False)
class HeaderS(StructS):
    """A header: validity slot at ``start``, then its fields."""

    @property
    def valid(self) -> int:
        return self.start

    def leaf_fields(self) -> list[ScalarS | VarbitS]:
        """The header's fields on the wire, in order: a field of struct type is its own
        fields, depth first (P4_16 allows structs of bit fields in headers)."""
        return list(iter_scalars(self))

    @property
    def fixed_width(self) -> int:
        """Bits of the header without varbit contents (its size when every varbit is empty)."""
        return sum(f.width for f in self.leaf_fields() if isinstance(f, ScalarS))

    @property
    def has_varbit(self) -> bool:
        return any(isinstance(f, VarbitS) for f in self.leaf_fields())


@dataclass(eq=False)
class UnionS(StructS):
    """A header union: its member headers (``fields`` values are HeaderS)."""

    def headers(self) -> list[HeaderS]:
        return [h for h in self.fields.values() if isinstance(h, HeaderS)]


@dataclass(eq=False)
class StackS(Storage):
    """A header stack: ``size`` elements of ``stride`` slots, then ``nextIndex``."""

    elems: list[Storage] = field(default_factory=list)
    size: int = 0
    stride: int = 0

    @property
    def next_slot(self) -> int:
        return self.end - 1


def scalar_info(t: T.Type) -> tuple[int, bool]:
    """(width, signed) of a scalar type's representation; width 0 when it has none."""
    u = T.underlying(t)
    if isinstance(u, T.BitType):
        return u.width, False
    if isinstance(u, T.IntType):
        return u.width, True
    if isinstance(u, T.BoolType):
        return 1, False
    return 0, False


class SlotAllocator:
    """Hands out slots and remembers a name per slot (for debugging and ``Packet.get``)."""

    def __init__(self) -> None:
        self.names: list[str] = ["<pkt>", "<data>", "<cursor>", "<out>"]
        self.initial: list[object] = [None, b"", 0, None]

    @property
    def size(self) -> int:
        return len(self.names)

    def _take(self, name: str, init: object = 0) -> int:
        self.names.append(name)
        self.initial.append(init)
        return len(self.names) - 1

    def allocate(self, t: T.Type, name: str) -> Storage:
        """Storage for a value of type ``t``, its slots named after ``name``."""
        u = t
        while isinstance(u, T.NewType):
            u = u.base
        if isinstance(u, T.HeaderType):
            start = self._take(f"{name}.$valid")
            fields = {fn: self._allocate_field(ft, f"{name}.{fn}") for fn, ft in u.fields}
            return HeaderS(t, start, self.size, fields)
        if isinstance(u, T.HeaderUnionType):
            start = self.size
            fields = {fn: self.allocate(ft, f"{name}.{fn}") for fn, ft in u.fields}
            return UnionS(t, start, self.size, fields)
        if isinstance(u, T.StructType):
            start = self.size
            fields = {fn: self.allocate(ft, f"{name}.{fn}") for fn, ft in u.fields}
            return StructS(t, start, self.size, fields)
        if isinstance(u, T.HeaderStackType):
            start = self.size
            elems = [self.allocate(u.element, f"{name}[{i}]") for i in range(u.size)]
            self._take(f"{name}.$nextIndex")
            stride = (elems[0].end - elems[0].start) if elems else 0
            return StackS(t, start, self.size, elems, u.size, stride)
        if isinstance(u, T.TupleType):
            start = self.size
            fields = {str(i): self.allocate(et, f"{name}.{i}") for i, et in enumerate(u.elements)}
            return StructS(t, start, self.size, fields)
        if isinstance(u, T.VarbitType):
            start = self._take(name)
            self._take(f"{name}.$len")
            return VarbitS(t, start, self.size, u.max_width)
        if isinstance(u, T.BitType | T.IntType | T.BoolType | T.EnumType | T.ErrorType | T.InfIntType
                      | T.MatchKindType | T.ActionEnumType):
            width, signed = scalar_info(u)
            slot = self._take(name, False if isinstance(u, T.BoolType) else 0)
            return ScalarS(t, slot, slot + 1, width, signed)
        raise LayoutError(f"cannot hold a value of type {t} ({name}) in the packet header vector")

    def _allocate_field(self, t: T.Type, name: str) -> Storage:
        st = self.allocate(t, name)
        if isinstance(st, StructS) and not isinstance(st, HeaderS | UnionS) and all(
                isinstance(x, ScalarS) for x in iter_scalars(st)) and not _holds_headers(st):
            return st  # a struct of bit/int/bool fields: flattened on the wire
        if not isinstance(st, ScalarS | VarbitS):
            raise LayoutError(f"header field {name} has type {t}: only bit/int/bool/varbit fields are supported")
        return st


def iter_scalars(st: Storage) -> Iterator[ScalarS | VarbitS]:
    """Leaf fields of ``st`` in layout order (validity and nextIndex slots excluded)."""
    if isinstance(st, ScalarS | VarbitS):
        yield st
    elif isinstance(st, StructS):
        for f in st.fields.values():
            yield from iter_scalars(f)
    elif isinstance(st, StackS):
        for e in st.elems:
            yield from iter_scalars(e)


def iter_headers(st: Storage) -> Iterator[HeaderS]:
    """Every header inside ``st`` (itself included), in layout order."""
    if isinstance(st, HeaderS):
        yield st
    elif isinstance(st, StructS):
        for f in st.fields.values():
            yield from iter_headers(f)
    elif isinstance(st, StackS):
        for e in st.elems:
            yield from iter_headers(e)


def relative_path(st: Storage, sub: Storage) -> int:
    """Offset of ``sub``'s first slot inside ``st`` (for stack element addressing)."""
    return sub.start - st.start


def find_path(st: Storage, path: str) -> Storage:
    """The storage at a dotted path below ``st`` (``"ipv4.ttl"``, ``"vlan[1].vid"``)."""
    cur = st
    for part in path.split("."):
        if not part:
            continue
        name, _, rest = part.partition("[")
        if name:
            if not isinstance(cur, StructS) or name not in cur.fields:
                raise KeyError(f"no field '{name}' in {cur.type}")
            cur = cur.fields[name]
        while rest:
            idx, _, rest = rest.partition("]")
            rest = rest.lstrip("[")
            if not isinstance(cur, StackS) or not 0 <= int(idx) < cur.size:
                raise KeyError(f"no element [{idx}] in {cur.type}")
            cur = cur.elems[int(idx)]
    return cur


def _holds_headers(st: StructS) -> bool:
    return any(isinstance(f, HeaderS | UnionS | StackS) or (isinstance(f, StructS) and _holds_headers(f))
               for f in st.fields.values())
