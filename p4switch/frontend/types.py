"""Semantic types of P4_16, as the checker computes them and later passes read them.

Types are immutable values. Structural types (``bit<8>``, ``tuple<...>``, header stacks)
compare by structure; nominal types (headers, structs, enums, externs, parsers, controls,
type variables) compare by their *declaration* (an AST node, compared by identity) plus,
for generic types, their type arguments -- two headers with the same fields but different
names are different types, as in P4. Every type prints the way P4 writes it
(``str(BitType(8)) == "bit<8>"``), which is what error messages and P4Info type names use.

Class and field names are frozen: the interpreter, P4Info and the runtime rely on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class Type:
    """Base of every semantic type."""

    __slots__ = ()


# --------------------------------------------------------------------------- base types


@dataclass(frozen=True)
class BitType(Type):
    """``bit<width>``: unsigned, fixed width."""

    width: int

    def __str__(self) -> str:
        return f"bit<{self.width}>"


@dataclass(frozen=True)
class IntType(Type):
    """``int<width>``: two's complement signed, fixed width."""

    width: int

    def __str__(self) -> str:
        return f"int<{self.width}>"


@dataclass(frozen=True)
class VarbitType(Type):
    """``varbit<max_width>``: a header field of run-time size up to ``max_width`` bits."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolType(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class InfIntType(Type):
    """``int``: arbitrary-precision integer, compile-time only (literals, constants)."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class StringType(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorType(Type):
    """``error``: the one error type; its members are the union of all ``error {}`` decls."""

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindType(Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class DontCareType(Type):
    """``_`` as a type argument (to be inferred) or the type of a ``_`` expression."""

    def __str__(self) -> str:
        return "_"


BOOL = BoolType()
INFINT = InfIntType()
STRING = StringType()
VOID = VoidType()
ERROR = ErrorType()
MATCH_KIND = MatchKindType()
DONTCARE = DontCareType()


# --------------------------------------------------------------------------- nominal types


@dataclass(frozen=True, eq=False)
class NominalType(Type):
    """A named type whose identity is its declaration (and type arguments, if generic)."""

    name: str
    decl: Any = field(default=None, repr=False)

    def _key(self) -> tuple:
        return (type(self), self.name, id(self.decl) if self.decl is not None else None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NominalType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.name


Field = tuple[str, Type]


@dataclass(frozen=True, eq=False)
class StructLikeType(NominalType):
    """Common shape of headers, header unions and structs: ordered named fields.

    ``type_args`` is non-empty for a specialization of a generic struct/header.
    An anonymous struct (the type of ``{f = e, ...}`` without context) has name "".
    """

    fields: tuple[Field, ...] = field(default=(), repr=False)
    type_args: tuple[Type, ...] = ()

    def _key(self) -> tuple:
        if not self.name:  # anonymous: structural
            return (type(self), "", self.fields)
        return (*super()._key(), self.type_args)

    def field_type(self, name: str) -> Type | None:
        """The type of field ``name``, or None when there is no such field."""
        for fname, ftype in self.fields:
            if fname == name:
                return ftype
        return None

    def field_names(self) -> list[str]:
        return [n for n, _ in self.fields]

    def __str__(self) -> str:
        if not self.name:
            return "{" + ", ".join(f"{t} {n}" for n, t in self.fields) + "}"
        return _with_args(self.name, self.type_args)


@dataclass(frozen=True, eq=False)
class HeaderType(StructLikeType):
    """A ``header``: fields plus a hidden validity bit."""


@dataclass(frozen=True, eq=False)
class HeaderUnionType(StructLikeType):
    """A ``header_union``: every field is a header, at most one valid."""


@dataclass(frozen=True, eq=False)
class StructType(StructLikeType):
    """A ``struct``."""


@dataclass(frozen=True, eq=False)
class EnumType(NominalType):
    """An ``enum``; ``underlying`` (BitType/IntType) only for serializable enums.

    ``members`` lists the member names in declaration order; ``values`` gives each member
    of a serializable enum its integer value (empty for plain enums).
    """

    members: tuple[str, ...] = ()
    underlying: BitType | IntType | None = None
    values: tuple[tuple[str, int], ...] = ()

    def value_of(self, member: str) -> int | None:
        for name, value in self.values:
            if name == member:
                return value
        return None


@dataclass(frozen=True, eq=False)
class NewType(NominalType):
    """``type base name;``: a distinct type represented as ``base``."""

    base: Type = field(default=VOID)


@dataclass(frozen=True, eq=False)
class TypeVar(NominalType):
    """A generic type parameter; ``decl`` is its ``TypeParam`` node."""


def _with_args(name: str, args: tuple[Type, ...]) -> str:
    return f"{name}<{', '.join(str(a) for a in args)}>" if args else name


# --------------------------------------------------------------------------- aggregates


@dataclass(frozen=True)
class HeaderStackType(Type):
    """``element[size]``."""

    element: Type
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(frozen=True)
class TupleType(Type):
    """``tuple<...>``; also the type of ``{e1, e2}`` before it meets a target type."""

    elements: tuple[Type, ...] = ()

    def __str__(self) -> str:
        return f"tuple<{', '.join(str(e) for e in self.elements)}>"


@dataclass(frozen=True)
class ListType(Type):
    """``list<element>`` (P4_16 1.2.2 lists; only as compile-time initializers here)."""

    element: Type

    def __str__(self) -> str:
        return f"list<{self.element}>"


# --------------------------------------------------------------------------- callables


@dataclass(frozen=True)
class Parameter:
    """One parameter of a callable/parser/control/package type.

    ``direction`` is "in", "out", "inout" or None (directionless: action data, constructor
    arguments, compile-time values). ``decl`` is the ``Param`` AST node.
    """

    name: str
    direction: str | None
    type: Type
    has_default: bool = False
    decl: Any = field(default=None, repr=False, compare=False, hash=False)

    def __str__(self) -> str:
        d = f"{self.direction} " if self.direction else ""
        return f"{d}{self.type} {self.name}"


def _params_str(params: tuple[Parameter, ...]) -> str:
    return "(" + ", ".join(str(p) for p in params) + ")"


@dataclass(frozen=True, eq=False)
class CallableType(NominalType):
    """Something callable: ``params``, ``return_type`` and generic ``type_params``."""

    params: tuple[Parameter, ...] = ()
    return_type: Type = field(default=VOID)
    type_params: tuple[TypeVar, ...] = ()

    def __str__(self) -> str:
        tp = _with_args("", self.type_params)
        return f"{self.return_type} {self.name}{tp}{_params_str(self.params)}"


@dataclass(frozen=True, eq=False)
class ActionType(CallableType):
    """An action; directionless parameters are supplied by the control plane."""

    def __str__(self) -> str:
        return f"action {self.name}{_params_str(self.params)}"


@dataclass(frozen=True, eq=False)
class FunctionType(CallableType):
    """A P4 function or an extern function (``decl`` tells which)."""


@dataclass(frozen=True, eq=False)
class MethodType(CallableType):
    """A method of an extern, of ``packet_in``/``packet_out``, of a header or stack;
    ``owner`` is the type it belongs to (None for built-in methods)."""

    owner: Type | None = None

    def _key(self) -> tuple:
        return (*super()._key(), self.owner)


@dataclass(frozen=True, eq=False)
class ExternType(NominalType):
    """An extern object type, possibly specialized: ``register<bit<32>>``."""

    type_args: tuple[Type, ...] = ()

    def _key(self) -> tuple:
        return (*super()._key(), self.type_args)

    def __str__(self) -> str:
        return _with_args(self.name, self.type_args)


@dataclass(frozen=True, eq=False)
class BlockType(NominalType):
    """Common shape of parser, control and package types.

    For a type declaration (``parser Parser<H, M>(...)``) ``type_params`` are its own
    variables and ``type_args`` the arguments of a specialization (``Parser<H, M>`` in a
    package parameter). For a concrete parser/control declaration ``decl`` is the
    ParserDecl/ControlDecl and ``ctor_params`` are its constructor parameters.
    """

    params: tuple[Parameter, ...] = ()
    type_params: tuple[TypeVar, ...] = ()
    type_args: tuple[Type, ...] = ()
    ctor_params: tuple[Parameter, ...] = ()

    def _key(self) -> tuple:
        return (*super()._key(), self.type_args)

    def __str__(self) -> str:
        return _with_args(self.name, self.type_args)


@dataclass(frozen=True, eq=False)
class ParserType(BlockType):
    pass


@dataclass(frozen=True, eq=False)
class ControlType(BlockType):
    pass


@dataclass(frozen=True, eq=False)
class PackageType(BlockType):
    pass


@dataclass(frozen=True, eq=False)
class TableType(NominalType):
    """A table instance; ``name`` is the table's local name, ``decl`` its TableDecl."""

    def __str__(self) -> str:
        return f"table {self.name}"


@dataclass(frozen=True, eq=False)
class ActionEnumType(NominalType):
    """The type of ``t.apply().action_run``: one member per action of table ``name``."""

    actions: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"action_list({self.name})"


@dataclass(frozen=True, eq=False)
class TableApplyResultType(NominalType):
    """The result of ``t.apply()``: a struct of ``hit``, ``miss`` (bool) and ``action_run``."""

    action_run: ActionEnumType | None = None

    def __str__(self) -> str:
        return f"apply_result({self.name})"


@dataclass(frozen=True, eq=False)
class StateType(NominalType):
    """A parser state (the target of ``transition``; ``accept``/``reject`` have decl None)."""

    def __str__(self) -> str:
        return f"state {self.name}"


@dataclass(frozen=True, eq=False)
class ValueSetType(NominalType):
    """A parser ``value_set<element>(size)``; usable as a select keyset."""

    element: Type = field(default=VOID)
    size: int = 0

    def __str__(self) -> str:
        return f"value_set<{self.element}>"


@dataclass(frozen=True, eq=False)
class TypeOfType(NominalType):
    """The 'type' of a name that denotes a type (``HashAlgorithm`` in ``HashAlgorithm.crc16``)."""

    type: Type = field(default=VOID)

    def __str__(self) -> str:
        return f"type {self.type}"


# --------------------------------------------------------------------------- helpers


def is_integer(t: Type) -> bool:
    """bit<w>, int<w> or int."""
    return isinstance(t, BitType | IntType | InfIntType)


def is_fixed_integer(t: Type) -> bool:
    return isinstance(t, BitType | IntType)


def is_header_like(t: Type) -> bool:
    """Types with validity: headers and header unions."""
    return isinstance(t, HeaderType | HeaderUnionType)


def is_struct_like(t: Type) -> bool:
    """Types with named fields: headers, header unions and structs."""
    return isinstance(t, StructLikeType)


def fields_of(t: Type) -> tuple[Field, ...]:
    """The (name, type) fields of a header/union/struct; ValueError for other types."""
    if isinstance(t, StructLikeType):
        return t.fields
    raise ValueError(f"type {t} has no fields")


def width_of(t: Type) -> int:
    """Bits of ``t`` when serialized (packets, digests, field lists, P4Info bitwidths).

    bit<w>/int<w>: w; bool: 1; a serializable enum: its underlying width; a new type: its
    base's; varbit<w>: w (the maximum); header/struct/union: the sum of its fields
    (for a union: the largest member); header stack: size x element. ``error``,
    ``match_kind`` and plain enums have no fixed representation: 0, as P4Info writes them
    (by type name, without a bitwidth). Anything else (int, externs, ...) is a ValueError.
    """
    if isinstance(t, BitType | IntType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, VarbitType):
        return t.max_width
    if isinstance(t, EnumType):
        return t.underlying.width if t.underlying is not None else 0
    if isinstance(t, NewType):
        return width_of(t.base)
    if isinstance(t, ErrorType | MatchKindType):
        return 0
    if isinstance(t, HeaderUnionType):
        return max((width_of(ft) for _, ft in t.fields), default=0)
    if isinstance(t, StructLikeType):
        return sum(width_of(ft) for _, ft in t.fields)
    if isinstance(t, HeaderStackType):
        return t.size * width_of(t.element)
    if isinstance(t, TupleType):
        return sum(width_of(e) for e in t.elements)
    raise ValueError(f"type {t} has no fixed width")


def underlying(t: Type) -> Type:
    """The representation of ``t``: a new type's base (recursively), a serializable enum's
    underlying type; otherwise ``t`` itself."""
    while True:
        if isinstance(t, NewType):
            t = t.base
        elif isinstance(t, EnumType) and t.underlying is not None:
            return t.underlying
        else:
            return t


def substitute(t: Type, mapping: Mapping[TypeVar, Type]) -> Type:
    """``t`` with type variables replaced per ``mapping`` (unmapped ones stay)."""
    if not mapping:
        return t
    return _subst(t, mapping.get, {})


def _subst(t: Type, look: Callable[[TypeVar], Type | None], memo: dict[int, Type]) -> Type:
    key = id(t)
    if key in memo:
        return memo[key]
    out = _subst_uncached(t, look, memo)
    memo[key] = out
    return out


def _subst_params(ps: tuple[Parameter, ...], look: Callable, memo: dict) -> tuple[Parameter, ...]:
    return tuple(
        Parameter(p.name, p.direction, _subst(p.type, look, memo), p.has_default, p.decl) for p in ps
    )


def _subst_uncached(t: Type, look: Callable, memo: dict) -> Type:
    if isinstance(t, TypeVar):
        r = look(t)
        return t if r is None else r
    if isinstance(t, HeaderStackType):
        return HeaderStackType(_subst(t.element, look, memo), t.size)
    if isinstance(t, TupleType):
        return TupleType(tuple(_subst(e, look, memo) for e in t.elements))
    if isinstance(t, ListType):
        return ListType(_subst(t.element, look, memo))
    if isinstance(t, ExternType) and t.type_args:
        return ExternType(t.name, t.decl, tuple(_subst(a, look, memo) for a in t.type_args))
    if isinstance(t, StructLikeType) and t.type_args:
        return type(t)(
            t.name,
            t.decl,
            tuple((n, _subst(ft, look, memo)) for n, ft in t.fields),
            tuple(_subst(a, look, memo) for a in t.type_args),
        )
    if isinstance(t, BlockType):
        return type(t)(
            t.name,
            t.decl,
            _subst_params(t.params, look, memo),
            t.type_params,
            tuple(_subst(a, look, memo) for a in t.type_args),
            _subst_params(t.ctor_params, look, memo),
        )
    if isinstance(t, MethodType):
        return MethodType(
            t.name,
            t.decl,
            _subst_params(t.params, look, memo),
            _subst(t.return_type, look, memo),
            t.type_params,
            t.owner,
        )
    if isinstance(t, CallableType):
        return type(t)(
            t.name, t.decl, _subst_params(t.params, look, memo), _subst(t.return_type, look, memo),
            t.type_params,
        )
    return t


def contains_typevar(t: Type) -> bool:
    """Whether ``t`` still mentions a type variable (i.e. is not fully specialized)."""
    if isinstance(t, TypeVar):
        return True
    if isinstance(t, HeaderStackType | ListType):
        return contains_typevar(t.element)
    if isinstance(t, TupleType):
        return any(contains_typevar(e) for e in t.elements)
    if isinstance(t, ExternType | StructLikeType | BlockType):
        return any(contains_typevar(a) for a in t.type_args)
    return False
