"""Pass 1: declaration collection -- one :class:`Scope` per block that declares names.

P4 names must be declared before they are used (parser states excepted). Instead of
re-walking the program per use, every scope records the ordinal of each declaration,
and a nested scope remembers the ordinal of the declaration that owns it (its
``limit``): a lookup that climbs from the nested scope into the parent only sees the
parent's declarations that come before that owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from p4switch.frontend import ast
from p4switch.frontend.errors import DiagnosticBag, Note, SourceLoc

#: declarations that may share a name when their parameter counts differ
OVERLOADABLE = (ast.ExternFunctionDecl, ast.FunctionDecl, ast.MethodDecl)


@dataclass
class Lookup:
    """The result of a name lookup: what is visible, and what was hidden by ordering."""

    decls: list[ast.Declaration]
    later: ast.Declaration | None = None  # declared in scope, but after the use


class Scope:
    """Names declared in one block, in order; ``parent``/``limit`` link it outward."""

    __slots__ = ("parent", "limit", "kind", "owner", "names", "order", "count")

    def __init__(self, parent: Scope | None, kind: str, owner: ast.Node | None = None,
                 limit: int | None = None) -> None:
        self.parent = parent
        self.kind = kind
        self.owner = owner
        self.limit = limit
        self.names: dict[str, list[ast.Declaration]] = {}
        self.order: dict[int, int] = {}
        self.count = 0

    def declare(self, decl: ast.Declaration, diag: DiagnosticBag, name: str | None = None,
                where: Callable[[ast.Declaration], SourceLoc] | None = None) -> int:
        """Add ``decl`` (under ``name``, default its own); report a duplicate. Returns its ordinal."""
        key = decl.name if name is None else name
        if name is None:
            self._shadowed_parameter(key, decl, diag, where)
        ordinal = self.count
        self.count += 1
        self.order[id(decl)] = ordinal
        existing = self.names.get(key)
        if existing:
            clash = _clash(existing, decl)
            if clash is not None:
                at = where or (lambda d: d.loc)
                diag.error(at(decl), f"duplicate declaration of '{key}'",
                           [Note("previous declaration here", at(clash))])
                return ordinal
            existing.append(decl)
        else:
            self.names[key] = [decl]
        return ordinal

    def _shadowed_parameter(self, key: str, decl: ast.Declaration, diag: DiagnosticBag,
                            where: Callable[[ast.Declaration], SourceLoc] | None) -> None:
        """p4c (ResolveReferences::checkShadowing) refuses a declaration in a statement block
        or parser state named like a parameter of an enclosing block: ``Headers h = h;`` in an
        apply block (a control's own locals that do so only get a warning there)."""
        if isinstance(decl, ast.Param) or self.parent is None or self.kind not in ("block", "state"):
            return
        param = next((d for d in self.parent.lookup(key, self.limit).decls if isinstance(d, ast.Param)), None)
        if param is not None:
            at = where or (lambda d: d.loc)
            diag.error(at(decl), f"declaration of '{key}' shadows a parameter '{key}'",
                       [Note("the parameter", param.loc)])

    def ordinal(self, decl: ast.Declaration) -> int | None:
        return self.order.get(id(decl))

    def lookup(self, name: str, limit: int | None = None) -> Lookup:
        """Visible declarations of ``name`` from this scope outward; ``limit`` bounds this
        scope's own ordinals (None: all)."""
        scope: Scope | None = self
        later: ast.Declaration | None = None
        while scope is not None:
            found = scope.names.get(name)
            if found:
                if limit is None:
                    return Lookup(found, later)
                visible = [d for d in found if scope.order.get(id(d), -1) < limit]
                if visible:
                    return Lookup(visible, later)
                later = later or found[0]
            limit = scope.limit
            scope = scope.parent
        return Lookup([], later)

    def local(self, name: str) -> list[ast.Declaration]:
        return self.names.get(name, [])


def _nparams(d: ast.Declaration) -> int:
    return len(getattr(d, "params", ()))


def _clash(existing: Iterable[ast.Declaration], decl: ast.Declaration) -> ast.Declaration | None:
    """The earlier declaration ``decl`` conflicts with, or None when overloading is legal."""
    for e in existing:
        if not (isinstance(e, OVERLOADABLE) and isinstance(decl, OVERLOADABLE)):
            return e
        if _nparams(e) == _nparams(decl) and not (
            isinstance(e, ast.MethodDecl) and e.is_constructor != getattr(decl, "is_constructor", False)
        ):
            return e
    return None
