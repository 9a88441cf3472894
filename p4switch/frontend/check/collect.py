"""Pass 1: build the scope tree and report duplicate declarations.

Top-level declarations, extern methods, type parameters, parameters and the locals of
parsers and controls are declared here, before any type is looked at, so that later
passes can resolve any name from any position. Block-local variables are declared by
the statement pass as it meets them (their order is their position).
"""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend.check.core import Core, Ctx
from p4switch.frontend.check.scopes import Scope

_IMPLICIT_STATES = ("accept", "reject")
_SIGNATURES = (ast.FunctionDecl, ast.ExternFunctionDecl, ast.ParserTypeDecl, ast.ControlTypeDecl,
               ast.PackageTypeDecl)


class Collector(Core):
    def collect(self) -> None:
        g = self.global_scope
        for decl in self.program.declarations:
            if isinstance(decl, ast.ErrorDecl):
                self._collect_ids(decl.members, self.error_members, "error")
                continue
            if isinstance(decl, ast.MatchKindDecl):
                for m in decl.members:
                    self.match_kinds.setdefault(m.name, m)
                    self.decl_ctx[m] = Ctx(g, self.declare(g, m))
                continue
            ordinal = self.declare(g, decl)
            ctx = Ctx(g, ordinal)
            self.decl_ctx[decl] = ctx
            self.block_of[decl] = None
            self._collect_decl(decl, g, ordinal, None)

    def _collect_ids(self, members: list[ast.IdDecl], into: dict[str, ast.IdDecl], what: str) -> None:
        for m in members:
            if m.name in into:
                self.error(self.name_loc(m), f"duplicate {what} member '{m.name}'")
            else:
                into[m.name] = m

    def _type_param_scope(self, owner: ast.Declaration, params: list[ast.TypeParam],
                          parent: Scope, limit: int | None) -> Scope:
        s = Scope(parent, "type_params", owner, limit)
        for tp in params:
            self.declare(s, tp)
            self.decl_ctx[tp] = Ctx(s)
        return s

    def _param_scope(self, owner: ast.Declaration, params: list[ast.Param], parent: Scope,
                     limit: int | None = None) -> Scope:
        s = Scope(parent, "params", owner, limit)
        for p in params:
            self.declare(s, p)
            self.decl_ctx[p] = Ctx(s)
        self.scope_of[owner] = s
        return s

    def _collect_decl(self, decl: ast.Declaration, parent: Scope, ordinal: int,
                      block: ast.Declaration | None) -> None:
        """Create the scopes a declaration owns (declared at ``ordinal`` in ``parent``)."""
        tps = getattr(decl, "type_params", None)
        if isinstance(decl, ast.ExternDecl):
            s = self._type_param_scope(decl, decl.type_params, parent, ordinal)
            self.scope_of[decl] = s
            for m in decl.methods:
                self.extern_of_method[m] = decl
                ms = self._type_param_scope(m, m.type_params, s, None)
                self._param_scope(m, m.params, ms)
                self.decl_ctx[m] = Ctx(ms)
            self._check_methods(decl)
        elif isinstance(decl, ast.ParserDecl | ast.ControlDecl):
            ts = self._type_param_scope(decl, decl.type_params, parent, ordinal)
            ps = self._param_scope(decl, [*decl.params, *decl.ctor_params], ts)
            locals_ = Scope(ps, "locals", decl)
            self.scope_of[decl] = locals_
            for local in decl.locals:
                n = self.declare(locals_, local)
                self.decl_ctx[local] = Ctx(locals_, n, block=decl)
                self.block_of[local] = decl
                self._collect_decl(local, locals_, n, decl)
            if isinstance(decl, ast.ParserDecl):
                self._collect_states(decl)
        elif isinstance(decl, ast.ActionDecl):
            self._param_scope(decl, decl.params, parent, ordinal)
        elif isinstance(decl, _SIGNATURES):
            ts = self._type_param_scope(decl, decl.type_params, parent, ordinal)
            self._param_scope(decl, decl.params, ts)
        elif isinstance(decl, ast.StructLikeDecl):
            self.scope_of[decl] = self._type_param_scope(decl, decl.type_params, parent, ordinal)
        elif isinstance(decl, ast.EnumDecl):
            for m in decl.members:
                self.enum_of_member[m] = decl
        elif tps:
            self.scope_of[decl] = self._type_param_scope(decl, tps, parent, ordinal)

    def _check_methods(self, decl: ast.ExternDecl) -> None:
        for m in decl.methods:
            if m.is_constructor and m.name != decl.name:
                self.error(m.loc, f"constructor of extern '{decl.name}' must be named '{decl.name}'")

    def _collect_states(self, parser: ast.ParserDecl) -> None:
        states: dict[str, ast.ParserState] = {}
        for st in parser.states:
            self.block_of[st] = parser
            if st.name in _IMPLICIT_STATES:
                self.error(self.name_loc(st), f"state '{st.name}' is implicit and cannot be declared")
            elif st.name in states:
                self.error(self.name_loc(st), f"duplicate parser state '{st.name}' in parser '{parser.name}'")
            else:
                states[st.name] = st
        if "start" not in states:
            self.error(self.name_loc(parser), f"parser '{parser.name}' has no 'start' state")
        self.parser_states[parser] = states
