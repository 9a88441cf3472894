"""Shared state of the checker passes: diagnostics, scopes, the checking context.

The passes are mixins over one :class:`Core` (see ``driver.py``) so that each concern
lives in its own module while they share the scopes, memo tables and diagnostics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.scopes import Lookup, Scope
from p4switch.frontend.errors import UNKNOWN_LOC, DiagnosticBag, SourceLoc


class UnknownType(T.Type):
    """The type of an expression that already produced an error: accepted everywhere so
    that one mistake is reported once, not once per enclosing expression. Never seen
    outside the checker (a program with errors raises)."""

    __slots__ = ()

    def __str__(self) -> str:
        return "<error>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnknownType)

    def __hash__(self) -> int:
        return 0


UNKNOWN = UnknownType()


@dataclass(frozen=True, eq=False)
class InvalidHeaderType(T.Type):
    """The type of ``{#}`` before it meets a header/union target."""

    def __str__(self) -> str:
        return "{#}"


INVALID_HEADER = InvalidHeaderType()

#: synthetic declarations of the implicit parser states (PathExpr.decl of accept/reject)
ACCEPT_STATE = ast.ParserState(loc=UNKNOWN_LOC, name="accept")
REJECT_STATE = ast.ParserState(loc=UNKNOWN_LOC, name="reject")


@dataclass(frozen=True)
class Ctx:
    """Where an expression or statement is being checked."""

    scope: Scope
    limit: int | None = None  # ordinal bound in ``scope`` (declare-before-use)
    block: ast.Declaration | None = None  # enclosing ParserDecl / ControlDecl
    callable: ast.Declaration | None = None  # enclosing ActionDecl / FunctionDecl
    prefix: str | None = None  # FQN prefix of the enclosing block
    states: dict[str, ast.ParserState] | None = None  # parser states (parsers only)
    in_loop: bool = False  # inside the body of a for loop (break/continue allowed)

    def with_(self, **changes: object) -> Ctx:
        return replace(self, **changes)

    @property
    def in_parser(self) -> bool:
        return isinstance(self.block, ast.ParserDecl)

    @property
    def in_control(self) -> bool:
        return isinstance(self.block, ast.ControlDecl)

    @property
    def in_action(self) -> bool:
        return isinstance(self.callable, ast.ActionDecl)

    @property
    def in_function(self) -> bool:
        return isinstance(self.callable, ast.FunctionDecl)


def is_unknown(*ts: T.Type | None) -> bool:
    return any(isinstance(t, UnknownType) for t in ts)


def describe_decl(d: ast.Node) -> str:
    """A short phrase naming what a declaration is ("table 't'", "action 'a'")."""
    kinds = {
        ast.ActionDecl: "action", ast.TableDecl: "table", ast.FunctionDecl: "function",
        ast.ExternFunctionDecl: "extern function", ast.ExternDecl: "extern",
        ast.HeaderDecl: "header type", ast.StructDecl: "struct type",
        ast.HeaderUnionDecl: "header union type", ast.EnumDecl: "enum type",
        ast.TypedefDecl: "typedef", ast.NewTypeDecl: "type", ast.ParserDecl: "parser",
        ast.ControlDecl: "control", ast.ParserTypeDecl: "parser type",
        ast.ControlTypeDecl: "control type", ast.PackageTypeDecl: "package type",
        ast.InstantiationDecl: "instance", ast.ValueSetDecl: "value set",
        ast.ConstDecl: "constant", ast.VarDecl: "variable", ast.Param: "parameter",
        ast.TypeParam: "type parameter", ast.ParserState: "parser state",
        ast.IdDecl: "match kind", ast.MethodDecl: "method",
    }
    name = getattr(d, "name", "?")
    return f"{kinds.get(type(d), 'declaration')} '{name}'"


TYPE_DECLS = (
    ast.TypedefDecl, ast.NewTypeDecl, ast.HeaderDecl, ast.HeaderUnionDecl, ast.StructDecl,
    ast.EnumDecl, ast.ExternDecl, ast.ParserTypeDecl, ast.ControlTypeDecl,
    ast.PackageTypeDecl, ast.ParserDecl, ast.ControlDecl, ast.TypeParam,
)


class Core:
    """State shared by all passes."""

    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.diag = DiagnosticBag(limit=200)
        self.global_scope = Scope(None, "global")
        self.scope_of: dict[ast.Node, Scope] = {}
        self.decl_ctx: dict[ast.Node, Ctx] = {}
        self.decl_types: dict[ast.Node, T.Type] = {}
        self.resolving: set[ast.Node] = set()
        self.error_members: dict[str, ast.IdDecl] = {}
        self.match_kinds: dict[str, ast.IdDecl] = {}
        self.enum_of_member: dict[ast.EnumMember, ast.EnumDecl] = {}
        self.extern_of_method: dict[ast.MethodDecl, ast.ExternDecl] = {}
        self.block_of: dict[ast.Node, ast.Declaration | None] = {}  # local decl -> block
        self.const_done: set[ast.ConstDecl] = set()
        self.table_actions: dict[ast.TableDecl, list[tuple[ast.ActionRef, ast.ActionDecl]]] = {}
        self.checked_tables: set[ast.TableDecl] = set()
        self.checked_instances: set[ast.InstantiationDecl] = set()
        self.digest_calls: list[ast.CallExpr] = []
        self.table_facts: dict = {}  # TableDecl -> tables.TableFacts
        self.direct_owner: dict[ast.Node, str] = {}
        self.main: ast.InstantiationDecl | None = None
        self.parser_states: dict[ast.ParserDecl, dict[str, ast.ParserState]] = {}
        self.action_calls: dict[ast.ActionDecl, list[tuple[ast.CallExpr, ast.Declaration | None]]] = {}

    # ------------------------------------------------------------------ reporting

    def error(self, loc: SourceLoc | None, message: str) -> None:
        self.diag.error(loc, message)

    def declare(self, scope: Scope, decl: ast.Declaration) -> int:
        """Declare ``decl`` in ``scope``; a duplicate is reported at its name."""
        return scope.declare(decl, self.diag, where=self.name_loc)

    def name_loc(self, decl: ast.Declaration) -> SourceLoc:
        """The location of ``decl``'s name token (the AST only spans the whole
        declaration): the first whole-word occurrence of the name, outside string
        literals, from the declaration's start; the declaration's start if not found."""
        loc = decl.loc
        pp = getattr(self.program, "preprocessed", None)
        lines = pp.source_lines(loc.file) if pp is not None and loc.line > 0 else None
        if not lines:
            return loc
        pattern = re.compile(rf"(?<![\w\"]){re.escape(decl.name)}(?![\w\"])")
        last = loc.end_line if loc.end_line >= loc.line else loc.line
        for line in range(loc.line, min(last, len(lines)) + 1):
            start = loc.col - 1 if line == loc.line else 0
            m = pattern.search(lines[line - 1], start)
            if m is not None:
                return SourceLoc(loc.file, line, m.start() + 1, line, m.end())
        return loc

    # ------------------------------------------------------------------ names

    def lookup(self, name: str, ctx: Ctx, global_scope: bool = False) -> Lookup:
        if global_scope:
            limit = ctx.limit if ctx.scope is self.global_scope else self._global_limit(ctx)
            return self.global_scope.lookup(name, limit)
        return ctx.scope.lookup(name, ctx.limit)

    def _global_limit(self, ctx: Ctx) -> int | None:
        scope, limit = ctx.scope, ctx.limit
        while scope.parent is not None:
            limit = scope.limit
            scope = scope.parent
        return limit

    def report_unknown(self, name: str, loc: SourceLoc, found: Lookup, what: str = "identifier") -> None:
        if found.later is not None:
            self.error(loc, f"'{name}' is used before its declaration")
        else:
            self.error(loc, f"unknown {what} '{name}'")

    def block_prefix(self, block: ast.Declaration | None) -> str | None:
        """FQN prefix of a block for messages: the block declaration's name."""
        return None if block is None else block.name

    def fqn_for_message(self, decl: ast.Declaration) -> str:
        from p4switch.frontend.check.names import qualify

        return qualify(self.block_prefix(self.block_of.get(decl)), decl)
