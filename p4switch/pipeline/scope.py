"""Compile-time name environments and the things names are bound to.

The checker resolves every name use to its declaration node (``.decl``); the compiler
binds declaration nodes to what they mean *in one block instance* -- a PHV storage
location, a constant, an action, a table, an extern instance, a sub-block -- in a chain of
:class:`Scope` objects. The same control instantiated twice gives two scopes over the same
declarations, hence separate slots, tables and externs. Global declarations are bound
lazily in the root scope on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend.check.names import qualify
from p4switch.frontend.errors import P4Error


class PipelineError(P4Error):
    """The pipeline compiler cannot realise a construct (located in the P4 source)."""


@dataclass(frozen=True)
class Const:
    """A compile-time value bound to a name (a runtime int/bool, or an aggregate list)."""

    value: Any


@dataclass(eq=False)
class PacketArg:
    """The ``packet_in``/``packet_out`` parameter of a parser or deparser."""

    kind: str  # "in" or "out"


@dataclass(eq=False)
class ValueSet:
    """A parser ``value_set``: members are tuples of (value, mask) per component.

    Filled by the control plane through ``V1Pipeline.value_sets[name]``.
    """

    name: str
    size: int
    widths: tuple[int, ...]
    members: list[tuple[tuple[int, int], ...]] = field(default_factory=list)

    def add(self, *components: int | tuple[int, int]) -> None:
        """Add a member: one int (exact) or (value, mask) per component."""
        if len(components) != len(self.widths):
            raise ValueError(f"value_set {self.name}: {len(self.widths)} component(s) expected")
        if self.size and len(self.members) >= self.size:
            raise ValueError(f"value_set {self.name} is full ({self.size})")
        member = []
        for c, w in zip(components, self.widths):
            value, mask = (c, (1 << w) - 1) if isinstance(c, int) else c
            member.append((value & mask, mask))
        self.members.append(tuple(member))

    def clear(self) -> None:
        self.members.clear()

    def matches(self, key: tuple[int, ...]) -> bool:
        return any(all((k & m) == v for k, (v, m) in zip(key, member)) for member in self.members)


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
