"""Pass 3c: statements, and the bodies of actions, functions, parsers and controls.

Blocks get a scope each and declare their variables as they meet them, so a variable is
only visible after its declaration. Parser states are visible to every transition of
their parser; ``accept`` and ``reject`` are implicit.
"""

from __future__ import annotations

import p4switch.frontend.check.values as V
from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.core import ACCEPT_STATE, REJECT_STATE, UNKNOWN, Core, Ctx, is_unknown
from p4switch.frontend.check.scopes import Scope

_BAD_VAR_TYPES = (T.InfIntType, T.VoidType, T.ExternType, T.BlockType, T.StringType, T.TableType)


class StmtChecker(Core):
    # ------------------------------------------------------------------ statements

    def check_block(self, b: ast.BlockStmt, ctx: Ctx) -> None:
        inner = ctx.with_(scope=Scope(ctx.scope, "block", b, ctx.limit), limit=None)
        for s in b.stmts:
            self.check_stmt(s, inner)

    def check_stmt(self, s: ast.Statement, ctx: Ctx) -> None:
        handler = _STMTS.get(type(s))
        if handler is not None:
            handler(self, s, ctx)
        elif isinstance(s, ast.Declaration):
            self.error(s.loc, f"'{s.name}' cannot be declared inside a block")
        else:
            self.error(s.loc, f"unsupported statement {type(s).__name__}")

    def _assign(self, s: ast.AssignStmt, ctx: Ctx) -> None:
        lt = self.check_expr(s.lhs, ctx)
        if not is_unknown(lt):
            problem = self.lvalue_problem(s.lhs)
            if problem is not None:
                self.error(s.lhs.loc, f"cannot assign to {problem}")
        self.check_expr(s.rhs, ctx, None if is_unknown(lt) else lt, at=s.loc)

    def _call_stmt(self, s: ast.CallStmt, ctx: Ctx) -> None:
        t = self.check_expr(s.call, ctx)
        if s.call.call_kind is None and not is_unknown(t):
            self.error(s.loc, "this expression is not a call")

    def _block_stmt(self, s: ast.BlockStmt, ctx: Ctx) -> None:
        self.check_block(s, ctx)

    def _if(self, s: ast.IfStmt, ctx: Ctx) -> None:
        ct = self.check_expr(s.cond, ctx)
        if not isinstance(ct, T.BoolType) and not is_unknown(ct):
            hint = " (compare it, e.g. x == 1)" if T.is_integer(ct) else ""
            self.error(s.cond.loc, f"condition must be bool, got {ct}{hint}")
        self.check_stmt(s.then, ctx)
        if s.else_ is not None:
            self.check_stmt(s.else_, ctx)

    def _return(self, s: ast.ReturnStmt, ctx: Ctx) -> None:
        if ctx.in_function:
            ret = getattr(self.decl_type(ctx.callable), "return_type", UNKNOWN)
            if s.value is None:
                if not isinstance(ret, T.VoidType) and not is_unknown(ret):
                    self.error(s.loc, f"return needs a value of type {ret}")
            elif isinstance(ret, T.VoidType):
                self.error(s.value.loc, f"function '{ctx.callable.name}' returns void: return takes no value")
            else:
                self.check_expr(s.value, ctx, ret)
            return
        if ctx.in_parser:
            self.error(s.loc, "return is not allowed in a parser")
        elif s.value is not None:
            where = "an action" if ctx.in_action else "a control"
            self.error(s.loc, f"return in {where} cannot have a value")

    def _exit(self, s: ast.ExitStmt, ctx: Ctx) -> None:
        if ctx.in_parser:
            self.error(s.loc, "exit is not allowed in a parser")
        elif ctx.in_function:
            self.error(s.loc, "exit is not allowed in a function")

    def _empty(self, s: ast.Statement, ctx: Ctx) -> None:
        return

    # ------------------------------------------------------------------ loops

    def _loop_ctx(self, s: ast.Statement, ctx: Ctx) -> Ctx | None:
        if ctx.in_parser:
            self.error(s.loc, "a for loop is not allowed in a parser")
            return None
        return ctx.with_(scope=Scope(ctx.scope, "block", s, ctx.limit), limit=None)

    def _for(self, s: ast.ForStmt, ctx: Ctx) -> None:
        """``for (init; cond; updates) body``: init's variables live in the loop's scope;
        cond must be bool; the body may ``break``/``continue``."""
        inner = self._loop_ctx(s, ctx)
        if inner is None:
            return
        for st in s.init:
            self.check_stmt(st, inner)
        if s.cond is not None:
            ct = self.check_expr(s.cond, inner)
            if not isinstance(ct, T.BoolType) and not is_unknown(ct):
                self.error(s.cond.loc, f"loop condition must be bool, got {ct}")
        for st in s.updates:
            self.check_stmt(st, inner)
        self.check_stmt(s.body, inner.with_(in_loop=True))

    def _for_in(self, s: ast.ForInStmt, ctx: Ctx) -> None:
        """``for (T x in lo .. hi)`` (bounds converted to the variable's type) or over the
        elements of a header stack or list (the variable has the element type)."""
        inner = self._loop_ctx(s, ctx)
        if inner is None:
            return
        var_t: T.Type | None = None
        if s.var is not None:
            var_t = self.resolve(s.var.type_ref, inner)
            self.decl_types[s.var] = var_t
        elif s.target is not None:
            var_t = self.check_expr(s.target, inner)
            problem = None if is_unknown(var_t) else self.lvalue_problem(s.target)
            if problem is not None:
                self.error(s.target.loc, f"cannot assign to {problem}")
        rng = s.range
        if isinstance(rng, ast.RangeExpr):
            want = None if var_t is None or is_unknown(var_t) else var_t
            for side in (rng.lo, rng.hi):
                self.check_expr(side, inner, want)
            rng.type = want or rng.lo.type
        else:
            rt = self.check_expr(rng, inner)
            elem = _element_type(rt)
            if elem is None and not is_unknown(rt):
                self.error(rng.loc, f"a for-in loop needs a range (lo .. hi), a header stack or a list, got {rt}")
            elif elem is not None and var_t is not None and not is_unknown(var_t) and elem != var_t:
                self.error(rng.loc, f"the loop variable has type {var_t}, but the elements have type {elem}")
        if s.var is not None:
            self.declare(inner.scope, s.var)
            self.decl_ctx[s.var] = inner
        self.check_stmt(s.body, inner.with_(in_loop=True))

    def _break(self, s: ast.Statement, ctx: Ctx) -> None:
        if not ctx.in_loop:
            word = "break" if isinstance(s, ast.BreakStmt) else "continue"
            self.error(s.loc, f"{word} is only allowed inside a for loop")

    def _var(self, d: ast.VarDecl, ctx: Ctx) -> None:
        self.check_var(d, ctx)
        self.declare(ctx.scope, d)
        self.decl_ctx[d] = ctx

    def check_var(self, d: ast.VarDecl, ctx: Ctx) -> None:
        t = self.resolve(d.type_ref, ctx)
        self.decl_types[d] = t
        if isinstance(t, _BAD_VAR_TYPES):
            self.error(d.type_ref.loc, f"variable '{d.name}' cannot have type {t}")
            self.decl_types[d] = UNKNOWN
            t = UNKNOWN
        if d.init is not None:
            self.check_expr(d.init, ctx, None if is_unknown(t) else t)

    def _const(self, d: ast.ConstDecl, ctx: Ctx) -> None:
        self.decl_ctx[d] = ctx
        self.check_const_decl(d, ctx)
        self.declare(ctx.scope, d)

    def _transition_stmt(self, s: ast.TransitionStmt, ctx: Ctx) -> None:
        self.error(s.loc, "transition must be the last statement of a parser state")

    # ------------------------------------------------------------------ switch

    def _switch(self, s: ast.SwitchStmt, ctx: Ctx) -> None:
        if ctx.in_parser:
            self.error(s.loc, "switch is not allowed in a parser")
        elif ctx.in_action:
            self.error(s.loc, "switch is not allowed in an action")
        t = self.check_expr(s.expr, ctx)
        if isinstance(t, T.ActionEnumType):
            self._action_cases(s, t, ctx)
        elif not is_unknown(t):
            base = T.underlying(t)
            if not isinstance(base, T.BitType | T.IntType | T.EnumType | T.ErrorType):
                self.error(s.expr.loc, f"switch needs a table's action_run or a bit<W>, int<W>, enum or error "
                                       f"value, got {t}")
            else:
                self._value_cases(s, t, ctx)
        seen_default = False
        for case in s.cases:
            if seen_default:
                self.error(case.label.loc, "a switch label cannot follow the 'default' label")
                break
            seen_default = isinstance(case.label, ast.DefaultExpr)
        for i, case in enumerate(s.cases):
            if case.body is not None:
                self.check_block(case.body, ctx)
            elif i == len(s.cases) - 1:
                self.error(case.loc, "the last case of a switch must have a body")

    def _action_cases(self, s: ast.SwitchStmt, t: T.ActionEnumType, ctx: Ctx) -> None:
        table_actions = [d for _, d in self.table_actions.get(t.decl, ())]
        seen: set[object] = set()
        for case in s.cases:
            label = case.label
            if isinstance(label, ast.DefaultExpr):
                key: object = "default"
                label.type = t
            elif isinstance(label, ast.PathExpr):
                found = self.lookup(label.name, ctx, label.global_scope)
                d = next((x for x in found.decls if x in table_actions), None)
                if d is None:
                    self.error(label.loc, f"'{label.name}' is not an action of table '{t.name}'")
                    continue
                label.decl = d
                label.type = t
                key = d
            else:
                self.error(label.loc, f"a case of a switch on action_run must name an action of table '{t.name}'")
                continue
            if key in seen:
                self.error(label.loc, "duplicate switch case")
            seen.add(key)

    def _value_cases(self, s: ast.SwitchStmt, t: T.Type, ctx: Ctx) -> None:
        seen: set[object] = set()
        for case in s.cases:
            label = case.label
            if isinstance(label, ast.DefaultExpr):
                label.type = t
                continue
            self.check_expr(label, ctx, t)
            v = label.const_value
            if v is None:
                if not is_unknown(label.type):
                    self.error(label.loc, "a switch case label must be a compile-time constant")
            elif v in seen:
                self.error(label.loc, "duplicate switch case")
            seen.add(v)

    # ------------------------------------------------------------------ callables

    def check_action(self, a: ast.ActionDecl, block: ast.Declaration | None) -> None:
        ctx = Ctx(self.scope_of[a], block=block, callable=a, prefix=self.block_prefix(block))
        seen_directionless = False
        for p in a.params:
            t = self.decl_type(p)
            if p.direction is None:
                seen_directionless = True
                if isinstance(t, T.InfIntType | T.ExternType | T.BlockType):
                    self.error(p.type_ref.loc, f"action parameter '{p.name}' cannot have type {t}")
            elif seen_directionless:
                self.error(p.loc, f"parameter '{p.name}' of action '{a.name}' has a direction, but follows a "
                                  "directionless (control-plane) parameter")
        self.check_block(a.body, ctx)

    def check_function(self, f: ast.FunctionDecl) -> None:
        ctx = Ctx(self.scope_of[f], callable=f)
        self.params_of(f)
        ret = self.decl_type(f)
        self.check_block(f.body, ctx)
        rt = getattr(ret, "return_type", T.VOID)
        if not isinstance(rt, T.VoidType) and not is_unknown(rt) and not always_returns(f.body):
            self.error(self.name_loc(f), f"function '{f.name}' does not return a value on every path")

    # ------------------------------------------------------------------ parsers

    def check_parser(self, p: ast.ParserDecl) -> None:
        self.params_of(p)
        self.decl_type(p)
        states = self.parser_states.get(p, {})
        ctx = Ctx(self.scope_of[p], block=p, states=states, prefix=self.block_prefix(p))
        for local in p.locals:
            lctx = self.decl_ctx.get(local, ctx)
            if isinstance(local, ast.VarDecl):
                self.check_var(local, lctx)
            elif isinstance(local, ast.ConstDecl):
                self.check_const_decl(local, lctx)
            elif isinstance(local, ast.InstantiationDecl | ast.ValueSetDecl):
                self.decl_type(local)
            else:
                self.error(local.loc, f"'{local.name}' cannot be declared in a parser")
        for st in p.states:
            sctx = ctx.with_(scope=Scope(ctx.scope, "state", st))
            for s in st.stmts:
                self.check_stmt(s, sctx)
            if st.transition is not None:
                self.check_transition(st.transition, sctx)

    def check_transition(self, tr: ast.TransitionStmt, ctx: Ctx) -> None:
        target = tr.target
        if isinstance(target, ast.PathExpr):
            self.resolve_state(target, ctx)
        elif isinstance(target, ast.SelectExpr):
            self.check_select(target, ctx)
        else:
            self.error(target.loc, "a transition goes to a state name or a select expression")

    def resolve_state(self, target: ast.PathExpr, ctx: Ctx) -> None:
        name = target.name
        states = ctx.states or {}
        d = {"accept": ACCEPT_STATE, "reject": REJECT_STATE}.get(name) or states.get(name)
        if d is None:
            self.error(target.loc, f"unknown parser state '{name}'")
            target.type = UNKNOWN
            return
        target.decl = d
        target.type = T.StateType(name, None if d in (ACCEPT_STATE, REJECT_STATE) else d)

    def check_select(self, sel: ast.SelectExpr, ctx: Ctx) -> None:
        types = [self.check_expr(x, ctx) for x in sel.selectors]
        for x, t in zip(sel.selectors, types):
            if isinstance(t, T.InfIntType):
                self.error(x.loc, "a select expression needs a width: cast the int value")
        sel.type = T.StateType("select")
        default_seen = False
        for case in sel.cases:
            self.resolve_state(case.state, ctx)
            if default_seen:
                self.diag.warning(case.loc, "this select case is unreachable (after default)")
            keys = case.keys
            if len(keys) == 1 and isinstance(keys[0], ast.DefaultExpr | ast.DontCareExpr):
                keys[0].type = types[0] if len(types) == 1 else T.TupleType(tuple(types))
                default_seen = True
                continue
            if len(keys) == 1 and len(types) > 1 and isinstance(keys[0], ast.PathExpr) and self._value_set_key(
                    keys[0], T.TupleType(tuple(types)), ctx, True):
                continue  # one value set whose struct elements match the whole selector tuple
            if len(keys) != len(types):
                self.error(case.loc, f"wrong number of keyset expressions: the select has {len(types)} "
                                     f"selector(s), this case has {len(keys)}")
                continue
            for k, t in zip(keys, types):
                if not is_unknown(t):
                    self.check_keyset(k, t, ctx, value_set_ok=True)

    def check_keyset(self, k: ast.Expression, t: T.Type, ctx: Ctx, value_set_ok: bool) -> None:
        """Type one keyset expression against the key (or selector) type ``t``."""
        if isinstance(k, ast.DefaultExpr | ast.DontCareExpr):
            k.type = t
            return
        if isinstance(k, ast.MaskExpr):
            parts = (k.value,) if self._mask_of_enum(k, t, ctx) else (k.value, k.mask)
        elif isinstance(k, ast.RangeExpr):
            parts = (k.lo, k.hi)
        else:
            if isinstance(k, ast.PathExpr) and self._value_set_key(k, t, ctx, value_set_ok):
                return
            parts = (k,)
        for x in parts:
            self.check_expr(x, ctx, t)
            if x.const_value is None and not is_unknown(x.type):
                self.error(x.loc, "keyset expression must be a compile-time constant")
        if k not in parts:
            k.type = t

    def _mask_of_enum(self, k: ast.MaskExpr, t: T.Type, ctx: Ctx) -> bool:
        """The mask of a serializable-enum key may be an int constant (``E.A &&& 0xff00``,
        as p4c accepts); it is typed as the enum so both sides have the key's type."""
        if isinstance(t, T.EnumType) and t.underlying is not None:
            mt = self.check_expr(k.mask, ctx)
            v = k.mask.const_value
            if isinstance(mt, T.InfIntType) and isinstance(v, int) and V.fits(v, t.underlying):
                k.mask.type = t
                return True
        return False

    def _value_set_key(self, k: ast.PathExpr, t: T.Type, ctx: Ctx, ok: bool) -> bool:
        found = self.lookup(k.name, ctx, k.global_scope)
        d = found.decls[0] if found.decls else None
        if not isinstance(d, ast.ValueSetDecl):
            return False
        k.decl = d
        vt = self.decl_type(d)
        k.type = vt
        if not ok:
            self.error(k.loc, f"value set '{k.name}' can only be used in a select case")
        elif isinstance(vt, T.ValueSetType) and not is_unknown(vt.element) and not _value_set_fits(vt.element, t):
            self.error(k.loc, f"value set '{k.name}' holds {vt.element}, but the selector has type {t}")
        return True

    # ------------------------------------------------------------------ controls

    def check_control(self, c: ast.ControlDecl) -> None:
        self.params_of(c)
        self.decl_type(c)
        ctx = Ctx(self.scope_of[c], block=c, prefix=self.block_prefix(c))
        for local in c.locals:
            lctx = self.decl_ctx.get(local, ctx)
            if isinstance(local, ast.ActionDecl):
                self.check_action(local, c)
            elif isinstance(local, ast.TableDecl):
                self.check_table(local, lctx)
            elif isinstance(local, ast.InstantiationDecl):
                self.decl_type(local)
            elif isinstance(local, ast.VarDecl):
                self.check_var(local, lctx)
            elif isinstance(local, ast.ConstDecl):
                self.check_const_decl(local, lctx)
            else:
                self.error(local.loc, f"'{local.name}' cannot be declared in a control")
        self.check_block(c.body, ctx)


def always_returns(s: ast.Statement | None) -> bool:
    """Whether every path through ``s`` ends in ``return`` or ``exit``."""
    if isinstance(s, ast.ReturnStmt | ast.ExitStmt):
        return True
    if isinstance(s, ast.BlockStmt):
        return any(always_returns(x) for x in s.stmts)
    if isinstance(s, ast.IfStmt):
        return s.else_ is not None and always_returns(s.then) and always_returns(s.else_)
    if isinstance(s, ast.SwitchStmt):
        has_default = any(isinstance(c.label, ast.DefaultExpr) for c in s.cases)
        return has_default and all(c.body is None or always_returns(c.body) for c in s.cases)
    return False


_STMTS = {
    ast.AssignStmt: StmtChecker._assign,
    ast.CallStmt: StmtChecker._call_stmt,
    ast.BlockStmt: StmtChecker._block_stmt,
    ast.IfStmt: StmtChecker._if,
    ast.SwitchStmt: StmtChecker._switch,
    ast.ReturnStmt: StmtChecker._return,
    ast.ExitStmt: StmtChecker._exit,
    ast.EmptyStmt: StmtChecker._empty,
    ast.VarDecl: StmtChecker._var,
    ast.ConstDecl: StmtChecker._const,
    ast.TransitionStmt: StmtChecker._transition_stmt,
    ast.ForStmt: StmtChecker._for,
    ast.ForInStmt: StmtChecker._for_in,
    ast.BreakStmt: StmtChecker._break,
    ast.ContinueStmt: StmtChecker._break,
}


def _element_type(t: T.Type) -> T.Type | None:
    """The element type a for-in loop iterates over, or None."""
    if isinstance(t, T.HeaderStackType):
        return t.element
    if isinstance(t, T.ListType | T.TupleType):
        elems = getattr(t, "elements", None)
        if elems is not None:
            return elems[0] if elems and all(e == elems[0] for e in elems) else None
        return getattr(t, "element", None)
    return None


def _value_set_fits(element: T.Type, selector: T.Type) -> bool:
    """A value set matches a selector of its element type, or a struct whose fields (e.g. with
    ``@match`` kinds) have the selector's component types in order (one selector or a tuple)."""
    if element == selector:
        return True
    if not isinstance(element, T.StructType):
        return False
    wanted = selector.elements if isinstance(selector, T.TupleType) else (selector,)
    return tuple(ft for _, ft in element.fields) == tuple(wanted)
