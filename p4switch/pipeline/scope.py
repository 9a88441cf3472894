"""Compile-time name environments and the things names are bound to.

The checker resolves every name use to its declaration node (``.decl``); the compiler
binds declaration nodes to what they mean *in one block instance* -- a PHV storage
location, a constant, an action, a table, an extern instance, a sub-block -- in a chain of
:class:`Scope` objects. The same control instantiated twice gives two scopes over the same
declarations, hence separate slots, tables and externs. Global declarations are bound
lazily in the root scope on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend.check.names import qualify
from p4switch.frontend.errors import UNKNOWN_LOC, P4Error
from p4switch.state.errors import StateError
from p4switch.state.tables import Exact, Lpm, MatchFieldInfo, MatchKind, OptionalMatch, Range, Ternary
from p4switch.state.value_sets import ValueSetState


class PipelineError(P4Error):
    """The pipeline compiler cannot realise a construct (located in the P4 source)."""


# Exceptions that a construct the compiler does not expect can raise while it is compiled;
# turned into a PipelineError at the statement or declaration (never a traceback on load).
UNEXPECTED = (AttributeError, TypeError, KeyError, IndexError, ValueError, AssertionError, NotImplementedError)


@contextmanager
def located(loc: Any, what: str = "this construct") -> Iterator[None]:
    """Errors raised inside get ``loc`` when they have no location of their own, and any
    unexpected exception becomes a PipelineError at ``loc``: the user sees the innermost
    statement or declaration the pipeline could not build."""
    try:
        yield
    except P4Error as err:
        if err.loc is UNKNOWN_LOC and loc is not None:
            err.loc = loc
        raise
    except UNEXPECTED as exc:
        raise PipelineError(loc, f"pipeline: cannot build {what} ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class Const:
    """A compile-time value bound to a name (a runtime int/bool, or an aggregate list)."""

    value: Any


@dataclass(eq=False)
class PacketArg:
    """The ``packet_in``/``packet_out`` parameter of a parser or deparser."""

    kind: str  # "in" or "out"


class ValueSet:
    """A parser ``value_set``, backed by the ``ValueSetState`` the control plane writes.

    ``V1Pipeline.value_sets[name]`` is this object; P4Runtime ``ValueSetEntry`` writes go
    to ``state`` (the RuntimeState's, or a private one for a value set the P4Info does not
    list), so both see the same members. ``widths`` are the components' bit widths.
    """

    def __init__(self, name: str, widths: tuple[int, ...], state: ValueSetState) -> None:
        self.name = name
        self.widths = widths
        self.state = state
        self.size = state.size
        self.matches = state.matches  # key tuple -> bool, per packet

    @classmethod
    def private(cls, name: str, size: int, widths: tuple[int, ...]) -> ValueSet:
        fields = [MatchFieldInfo(i + 1, f"f{i}", w, MatchKind.TERNARY) for i, w in enumerate(widths)]
        return cls(name, widths, ValueSetState(0, name, fields, size))

    @property
    def members(self) -> list:
        return self.state.members

    def add(self, *components: int | tuple[int, int]) -> None:
        """Add a member: one int (exact) or (value, mask) per component; ValueError if refused."""
        if len(components) != len(self.widths):
            raise ValueError(f"value_set {self.name}: {len(self.widths)} component(s) expected")
        match: dict[int | str, Any] = {}
        for f, c in zip(self.state.fields, components):
            m = _component_match(f, c)
            if m is not None:
                match[f.id] = m
        try:
            self.state.add(match)
        except StateError as e:
            raise ValueError(f"value_set {self.name}: {e.message}") from None

    def clear(self) -> None:
        self.state.clear()


def _component_match(f: MatchFieldInfo, c: int | tuple[int, int]) -> Any:
    """The pipeline API's int or (value, mask) as a match of the field's P4Info kind."""
    value, mask = (c, f.full_mask) if isinstance(c, int) else c
    value &= mask & f.full_mask
    mask &= f.full_mask
    if f.kind == MatchKind.TERNARY:
        return Ternary(value, mask) if mask else None
    if mask != f.full_mask:
        raise ValueError(f"value set field '{f.name}' is {f.kind.name.lower()}: a mask is not allowed")
    if f.kind == MatchKind.LPM:
        return Lpm(value, f.bitwidth)
    if f.kind == MatchKind.RANGE:
        return Range(value, value)
    if f.kind == MatchKind.OPTIONAL:
        return OptionalMatch(value)
    return Exact(value)


class Scope:
    """Bindings of declaration nodes for one block instance; ``prefix`` is its P4Info name
    prefix (None at top level)."""

    def __init__(self, parent: Scope | None, prefix: str | None,
                 resolver: Callable[[ast.Node], Any] | None = None) -> None:
        self.parent = parent
        self.prefix = prefix
        self._map: dict[ast.Node, Any] = {}
        self._resolver = resolver  # root only: binds globals on first use
        self.in_parser = False

    def child(self, prefix: str | None) -> Scope:
        return Scope(self.root(), prefix)

    def root(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def bind(self, decl: ast.Node, value: Any) -> None:
        self._map[decl] = value

    def find(self, decl: ast.Node) -> Any | None:
        s: Scope | None = self
        while s is not None:
            v = s._map.get(decl)
            if v is not None:
                return v
            if s.parent is None and s._resolver is not None:
                v = s._resolver(decl)
                if v is not None:
                    s._map[decl] = v
                return v
            s = s.parent
        return None

    def lookup(self, decl: ast.Node, use: ast.Node) -> Any:
        v = self.find(decl) if decl is not None else None
        if v is None:
            name = getattr(decl, "name", None) or getattr(use, "name", "?")
            raise PipelineError(use.loc, f"pipeline: '{name}' is not bound to anything in this block")
        return v

    def fqn(self, decl: ast.Declaration) -> str:
        """The P4Info name of ``decl`` declared in this scope's block."""
        return qualify(self.prefix, decl)
