"""Statements, actions and functions -> closures over the PHV.

Control flow: ``exit`` raises :class:`~.packet.ExitSignal` (caught by the top-level block
runner) and ``return`` raises :class:`~.packet.ReturnSignal` (caught by the action,
function or control that contains it; the ``try`` is only compiled in where a ``return``
occurs). Exceptions cost nothing on the straight path, where status codes would cost a
test after every statement.

Calls follow P4's copy-in/copy-out: every action and function has its own parameter
slots; a call evaluates its arguments into them, runs the body, and copies ``out`` and
``inout`` parameters back. A table invoking an action writes the entry's action data
straight into the action's (contiguous) data-parameter slots: ``p[a:b] = params``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T

from .exprs import DynRef, SliceRef, is_aggregate, mask_of
from .layout import ScalarS, SlotAllocator, Storage, VarbitS, iter_headers, scalar_info
from .packet import EXIT, ExitSignal, ReturnSignal
from .scope import Const, PipelineError, Scope, located
from .templates import E, Fn, expr, seq, stmt

RETURN = ReturnSignal()


def contains(node: ast.Node, kind: type) -> bool:
    return any(isinstance(n, kind) for n in ast.walk(node))


@dataclass(eq=False)
class ParamSlot:
    """A parameter and its storage (None for a packet_in/packet_out parameter)."""

    decl: ast.Param
    storage: Storage | None
    direction: str | None


@dataclass(eq=False)
class Callee:
    """A compiled action or function: parameter storage and body."""

    name: str
    params: list[ParamSlot]
    body: Fn | None
    decl: ast.Declaration
    ret_type: T.Type | None = None
    data_range: tuple[int, int] | None = None  # contiguous slots of directionless params
    data_fix: Callable[[tuple], tuple] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def run(self, p: list) -> None:
        if self.body is not None:
            self.body(p)


class StmtCompiler:
    """Mixin of the pipeline compiler: statements, actions, functions."""

    alloc: SlotAllocator

    # ------------------------------------------------------------------ blocks

    def block(self, stmts: list[ast.Statement], sc: Scope) -> Fn | None:
        return seq([self.statement(s, sc) for s in stmts])

    def statement(self, s: ast.Statement, sc: Scope) -> Fn | None:
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            raise PipelineError(s.loc, f"pipeline: unsupported statement {type(s).__name__}")
        with located(s.loc, "this statement"):
            fn = method(s, sc)
            # The engine emitter runs a statement it cannot translate through this closure.
            self.stmt_fns[(id(s), id(sc))] = fn  # type: ignore[attr-defined]
            return fn
        return None  # not reached: located() re-raises

    def _s_BlockStmt(self, s: ast.BlockStmt, sc: Scope) -> Fn | None:
        return self.block(s.stmts, sc)

    def _s_EmptyStmt(self, s: ast.EmptyStmt, sc: Scope) -> Fn | None:
        return None

    def _s_ExitStmt(self, s: ast.ExitStmt, sc: Scope) -> Fn | None:
        def do_exit(p: list) -> None:
            raise EXIT.with_traceback(None)

        return do_exit

    def _s_ReturnStmt(self, s: ast.ReturnStmt, sc: Scope) -> Fn | None:
        if s.value is None:
            def do_return(p: list) -> None:
                raise RETURN.with_traceback(None)

            return do_return
        if is_aggregate(s.value.type):
            fa = self.agg(s.value, sc)  # type: ignore[attr-defined]

            def ret_agg(p: list) -> None:
                raise ReturnSignal(fa(p))

            return ret_agg
        f = self.scalar(s.value, sc).fn()  # type: ignore[attr-defined]

        def ret(p: list) -> None:
            raise ReturnSignal(f(p))

        return ret

    def _s_ConstDecl(self, s: ast.ConstDecl, sc: Scope) -> Fn | None:
        if is_aggregate(s.type_ref.type):
            fa = self.agg(s.value, sc, s.type_ref.type)  # type: ignore[attr-defined]
            sc.bind(s, Const(fa(None)))
        else:
            v = self.scalar(s.value, sc)  # type: ignore[attr-defined]
            if not v.is_const:
                raise PipelineError(s.loc, f"pipeline: constant '{s.name}' is not a compile-time value")
            sc.bind(s, Const(self.runtime_const(v.val, s.type_ref.type, s.loc)))  # type: ignore[attr-defined]
        return None

    def _s_VarDecl(self, s: ast.VarDecl, sc: Scope) -> Fn | None:
        st = self.alloc.allocate(s.type_ref.type, f"{sc.prefix or ''}.{s.name}".lstrip("."))
        sc.bind(s, st)
        if s.init is not None:
            return self.assign_to(st, s.init, sc, s.loc)
        headers = [h.valid for h in iter_headers(st)]
        if not headers:
            return None
        hs = tuple(headers)

        def invalidate(p: list) -> None:
            for v in hs:
                p[v] = 0

        return invalidate

    def _s_IfStmt(self, s: ast.IfStmt, sc: Scope) -> Fn | None:
        c = self.scalar(s.cond, sc)  # type: ignore[attr-defined]
        then = self.statement(s.then, sc)
        other = self.statement(s.else_, sc) if s.else_ is not None else None
        if c.is_const:
            return then if c.val else other
        if then is None and other is None:
            return None
        if then is None:
            return stmt("if not {c}:\n    {e}", c=c, e=E.func(other))
        if other is None:
            return stmt("if {c}:\n    {t}", c=c, t=E.func(then))
        return stmt("if {c}:\n    {t}\nelse:\n    {e}", c=c, t=E.func(then), e=E.func(other))

    # ------------------------------------------------------------------ loops
    # (the node types come from a front end with P4_16 1.2.5 loops; matched by name)

    def _s_BreakStmt(self, s: Any, sc: Scope) -> Fn | None:
        def do_break(p: list) -> None:
            raise BREAK.with_traceback(None)

        return do_break

    def _s_ContinueStmt(self, s: Any, sc: Scope) -> Fn | None:
        def do_continue(p: list) -> None:
            raise CONTINUE.with_traceback(None)

        return do_continue

    def _s_ForStmt(self, s: Any, sc: Scope) -> Fn | None:
        """``for (init; cond; updates) body``; the loop's variables live in its own scope."""
        lsc = Scope(sc, sc.prefix)
        lsc.in_parser = sc.in_parser
        init = seq([self.statement(x, lsc) for x in s.init])
        cond = self.scalar(s.cond, lsc).fn() if s.cond is not None else (lambda p: True)  # type: ignore[attr-defined]
        updates = seq([self.statement(x, lsc) for x in s.updates]) or _noop
        body = self.statement(s.body, lsc) or _noop
        return _loop(init, cond, body, updates, s.loc)

    def _s_ForInStmt(self, s: Any, sc: Scope) -> Fn | None:
        """``for ([T] x in lo .. hi) body``: ``lo`` and ``hi`` evaluated once, ``x`` set to
        each value in turn (none when ``lo > hi``)."""
        rng = s.range
        if not isinstance(rng, ast.RangeExpr):
            raise PipelineError(rng.loc, "pipeline: for-in over a header stack or list is not supported "
                                         "(iterate over an index range instead)")
        lsc = Scope(sc, sc.prefix)
        lsc.in_parser = sc.in_parser
        if s.var is not None:
            self.statement(s.var, lsc)
            target = lsc.find(s.var)
        else:
            target = self.ref_of(s.target, lsc)  # type: ignore[attr-defined]
        if target is None:
            raise PipelineError(s.loc, "pipeline: the loop variable is not a location")
        t = s.var.type_ref.type if s.var is not None else s.target.type
        lo, hi = self.rhs_scalar(rng.lo, lsc, t).fn(), self.rhs_scalar(rng.hi, lsc, t).fn()
        bounds = self.alloc.allocate(T.BitType(64), f"$for.{id(s)}.hi")
        cur = self.alloc.allocate(t, f"$for.{id(s)}.cur")
        set_var = self.store_scalar(target, E.slot(cur.start), s.loc)
        c, h = cur.start, bounds.start

        def init(p: list) -> None:
            p[c] = lo(p)
            p[h] = hi(p)

        def cond(p: list) -> bool:
            return p[c] <= p[h]

        def step(p: list) -> None:
            p[c] += 1

        body = seq([set_var, self.statement(s.body, lsc)]) or _noop
        return _loop(init, cond, body, step, s.loc)

    def _s_AssignStmt(self, s: ast.AssignStmt, sc: Scope) -> Fn | None:
        pairs = compound_index_pairs(s)
        if pairs:
            return self._compound_assign(s, sc, pairs)
        ref = self.ref_of(s.lhs, sc)  # type: ignore[attr-defined]
        if ref is None:
            raise PipelineError(s.lhs.loc, "pipeline: cannot assign to this expression")
        return self.assign_to(ref, s.rhs, sc, s.loc, s.lhs.type)

    def _compound_assign(self, s: ast.AssignStmt, sc: Scope,
                         pairs: list[tuple[ast.Expression, ast.Expression]]) -> Fn | None:
        """``a[i()] op= b`` (the front end writes ``a[i()] = a[i()] op b``): every run-time
        index of ``a`` is evaluated once, before the right side, and both copies use it.

        Why: P4 evaluates the left-hand side of a compound assignment once; evaluating the
        copy again would run ``i()``'s side effects twice (p4c's opassign2-bmv2).
        """
        pins: dict[int, E] = getattr(self, "pinned_indexes", None) or {}
        self.pinned_indexes = pins
        pre: list[Fn | None] = []
        for lhs_idx, rhs_idx in pairs:
            st = self.alloc.allocate(lhs_idx.type or T.BitType(32), f"$opassign_index.{id(lhs_idx)}")
            slot = E.slot(st.start)
            pre.append(stmt("p[{t}] = {v}", t=st.start, v=self.scalar(lhs_idx, sc)))  # type: ignore[attr-defined]
            pins[id(lhs_idx)] = pins[id(rhs_idx)] = slot
        try:
            ref = self.ref_of(s.lhs, sc)  # type: ignore[attr-defined]
            if ref is None:
                raise PipelineError(s.lhs.loc, "pipeline: cannot assign to this expression")
            body = self.assign_to(ref, s.rhs, sc, s.loc, s.lhs.type)
        finally:
            for lhs_idx, rhs_idx in pairs:
                pins.pop(id(lhs_idx), None)
                pins.pop(id(rhs_idx), None)
        return seq([*pre, body])

    def _s_CallStmt(self, s: ast.CallStmt, sc: Scope) -> Fn | None:
        return self.call_stmt(s.call, sc)  # type: ignore[attr-defined]

    def _s_SwitchStmt(self, s: ast.SwitchStmt, sc: Scope) -> Fn | None:
        e = s.expr
        if isinstance(e, ast.MemberExpr) and e.member == "action_run" and isinstance(e.expr, ast.CallExpr):
            key, label_value = self.table_action_run(e.expr, sc)  # type: ignore[attr-defined]
        else:
            key = self.scalar(e, sc)  # type: ignore[attr-defined]

            def label_value(lab: ast.Expression) -> Any:
                v = self.scalar(lab, sc)  # type: ignore[attr-defined]
                if not v.is_const:
                    raise PipelineError(lab.loc, "pipeline: switch labels must be constants")
                return v.val

        cases: dict[Any, Fn | None] = {}
        default: Fn | None = None
        has_default = False
        pending: list[ast.Expression] = []
        for case in s.cases:
            pending.append(case.label)
            if case.body is None:
                continue
            body = self.statement(case.body, sc)
            for lab in pending:
                if isinstance(lab, ast.DefaultExpr):
                    default, has_default = body, True
                else:
                    cases.setdefault(label_value(lab), body)
            pending = []
        for lab in pending:  # trailing fall-through labels do nothing
            if isinstance(lab, ast.DefaultExpr):
                has_default = True
        table = {k: v for k, v in cases.items() if v is not None}
        if has_default:
            for k in cases:
                if cases[k] is None:
                    table[k] = _noop
        kf = key.fn()
        dflt = default
        if dflt is None:
            def run_switch(p: list) -> None:
                f = table.get(kf(p))
                if f is not None:
                    f(p)
        else:
            def run_switch(p: list) -> None:
                table.get(kf(p), dflt)(p)  # type: ignore[misc]

        return run_switch

    # ------------------------------------------------------------------ assignment

    def assign_to(self, ref: Any, rhs: ast.Expression, sc: Scope, loc: Any,
                  lhs_type: T.Type | None = None) -> Fn:
        t = lhs_type if lhs_type is not None else getattr(ref, "type", None)
        if isinstance(ref, Storage) and not isinstance(ref, ScalarS | VarbitS):
            fa = self.agg(rhs, sc, ref.type)  # type: ignore[attr-defined]
            a, b = ref.start, ref.end
            return stmt("p[{a}:{b}] = {f}", a=a, b=b, f=E.func(fa))
        if isinstance(ref, VarbitS):
            src = self.ref_of(rhs, sc)  # type: ignore[attr-defined]
            if not isinstance(src, VarbitS):
                raise PipelineError(loc, "pipeline: varbit fields can only be assigned from varbit fields")
            return stmt("p[{a}:{a2}] = p[{b}:{b2}]", a=ref.start, a2=ref.end, b=src.start, b2=src.end)
        if isinstance(ref, DynRef) and is_aggregate(ref.rel.type):
            fa = self.agg(rhs, sc, ref.rel.type)  # type: ignore[attr-defined]
            base = ref.base_fn()
            a, n = ref.rel.start, ref.rel.end - ref.rel.start

            def store_dyn_agg(p: list) -> None:
                o = base(p)  # the target's index first: P4 evaluates left to right
                vals = fa(p)
                if o >= 0:
                    p[a + o:a + o + n] = vals

            return store_dyn_agg
        v = self.rhs_scalar(rhs, sc, t)
        return self.store_scalar(ref, v, loc)

    def rhs_scalar(self, rhs: ast.Expression, sc: Scope, t: T.Type | None) -> E:
        """The right-hand side in the representation of the target type ``t``."""
        v = self.scalar(rhs, sc)  # type: ignore[attr-defined]
        if v.is_const:
            return E.const(self.runtime_const(v.val, t, rhs.loc))  # type: ignore[attr-defined]
        src = rhs.type
        if t is not None and src is not None and not isinstance(src, T.InfIntType):
            sw, ss = scalar_info(src)
            tw, ts = scalar_info(t)
            if (sw, ss) != (tw, ts) and tw:
                return self.cast(v, src, t, rhs.loc)  # type: ignore[attr-defined]
        return v

    def store_scalar(self, ref: Any, v: E, loc: Any) -> Fn:
        """``ref = v`` for a scalar location."""
        if isinstance(ref, ScalarS):
            return stmt("p[{d}] = {v}", d=ref.slot, v=v)
        if isinstance(ref, DynRef):
            base = ref.base_fn()
            s = ref.rel.start
            f = v.fn()

            def store_dyn(p: list) -> None:
                o = base(p)  # the target's index first: P4 evaluates left to right
                x = f(p)
                if o >= 0:
                    p[s + o] = x

            return store_dyn
        if isinstance(ref, SliceRef):
            width, signed = scalar_info(ref.base.type) if not isinstance(ref.base, DynRef) \
                else scalar_info(ref.base.rel.type)
            m = mask_of(ref.hi - ref.lo + 1)
            hole = mask_of(width) ^ (m << ref.lo)
            cur = self.read_ref(ref.base, loc)  # type: ignore[attr-defined]
            new = expr("({c} & {h}) | (({v} & {m}) << {lo})", c=cur, v=v, h=hole, m=m, lo=ref.lo)
            if signed:
                new = self.wrap_signed(new, width)  # type: ignore[attr-defined]
            return self.store_scalar(ref.base, new, loc)
        raise PipelineError(loc, "pipeline: cannot assign to this location")

    # ------------------------------------------------------------------ callees

    def compile_callee(self, decl: ast.ActionDecl | ast.FunctionDecl, sc: Scope, name: str) -> Callee:
        """Parameter slots and body of an action or function, in a scope below ``sc``."""
        csc = Scope(sc, sc.prefix)
        csc.in_parser = sc.in_parser
        params = []
        for prm in decl.params:
            with located(prm.loc, f"parameter '{prm.name}'"):
                st = self.alloc.allocate(prm.type_ref.type, f"{name}.{prm.name}")
            csc.bind(prm, st)
            params.append(ParamSlot(prm, st, prm.direction))
        stmts = decl.body.stmts
        tail: Fn | None = None
        if (isinstance(decl, ast.FunctionDecl) and stmts and isinstance(stmts[-1], ast.ReturnStmt)
                and stmts[-1].value is not None
                and not any(contains(x, ast.ReturnStmt) for x in stmts[:-1])):
            # the common `...; return e;` shape: no exception per call
            value = stmts[-1].value
            stmts = stmts[:-1]
        else:
            value = None
        body = self.block(stmts, csc)
        if value is not None:
            tail = self.agg(value, csc) if is_aggregate(value.type) else self.scalar(value, csc).fn()  # type: ignore[attr-defined]
        ret_type = getattr(decl, "return_type", None)
        ret_t = ret_type.type if ret_type is not None else None
        if body is not None and contains(decl.body, ast.ReturnStmt) and not isinstance(decl, ast.FunctionDecl):
            body = catch_return(body)
        callee = Callee(name, params, body, decl, ret_t)
        callee.extra["scope"] = csc  # where the body's statements were compiled (the engine emitter's too)
        if tail is not None:
            callee.extra["tail"] = tail
        data = [ps for ps in params if ps.direction is None]
        if data and all(isinstance(ps.storage, ScalarS) for ps in data):
            starts = [ps.storage.start for ps in data]
            if starts == list(range(starts[0], starts[0] + len(starts))):
                callee.data_range = (starts[0], starts[0] + len(starts))
            fixes = [(i, ps.storage.width) for i, ps in enumerate(data)
                     if ps.storage.signed or isinstance(T.underlying(ps.storage.type), T.BoolType)]
            if fixes:
                callee.data_fix = _param_fixer(fixes, [ps.storage for ps in data])
        return callee

    def invoke(self, callee: Callee, args: list[ast.Argument], sc: Scope, loc: Any,
               want: str = "none") -> Fn:
        """A call of ``callee`` with P4 copy-in/copy-out. ``want``: "none" (statement),
        "value" (scalar result) or "agg" (aggregate result)."""
        bound = bind_arguments([ps.decl for ps in callee.params], args, loc)
        copy_in: list[Fn | None] = []
        copy_out: list[Fn | None] = []
        for ps, arg in zip(callee.params, bound):
            if ps.storage is None:  # the packet: shared, nothing to copy
                continue
            if arg is None:
                if ps.decl.default is not None:
                    copy_in.append(self.assign_to(ps.storage, ps.decl.default, sc, loc))
                continue
            if isinstance(arg, ast.DontCareExpr):
                continue
            if ps.direction in (None, "in", "inout"):
                copy_in.append(self.assign_to(ps.storage, arg, sc, loc))
            elif ps.direction == "out":
                copy_in.append(_invalidate_headers(ps.storage))
            if ps.direction in ("out", "inout"):
                copy_out.append(self.copy_back(arg, ps.storage, sc, loc))
        pre = seq(copy_in)
        post = seq(copy_out)
        body = copy_out_on_exit(callee.body, post)
        if want == "none":
            if callee.extra.get("tail") is not None:  # evaluated for its side effects, if any
                return seq([pre, body, callee.extra["tail"], post]) or _noop
            if isinstance(callee.decl, ast.FunctionDecl) and body is not None and contains(
                    callee.decl.body, ast.ReturnStmt):
                body = catch_return(body)
            return seq([pre, body, post]) or _noop
        run_body = body or _noop
        tail = callee.extra.get("tail")
        if tail is not None:
            def call_with_tail(p: list) -> Any:
                if pre is not None:
                    pre(p)
                run_body(p)
                result = tail(p)
                if post is not None:
                    post(p)
                return result

            return call_with_tail

        def call_with_result(p: list) -> Any:
            if pre is not None:
                pre(p)
            try:
                run_body(p)
                result = None
            except ReturnSignal as r:
                result = r.value
            if post is not None:
                post(p)
            return result

        return call_with_result

    def copy_back(self, arg: ast.Expression, st: Storage, sc: Scope, loc: Any) -> Fn:
        """``arg = <parameter storage>`` after a call."""
        ref = self.ref_of(arg, sc)  # type: ignore[attr-defined]
        if ref is None:
            raise PipelineError(arg.loc, "pipeline: an out/inout argument must be an l-value")
        if isinstance(st, ScalarS):
            v = E.slot(st.slot)
            if arg.type is not None and st.type is not None and scalar_info(arg.type) != scalar_info(st.type):
                v = self.cast(v, st.type, arg.type, loc)  # type: ignore[attr-defined]
            return self.store_scalar(ref, v, loc)
        a, b = st.start, st.end
        if isinstance(ref, Storage):
            c, d = ref.start, ref.end
            return stmt("p[{c}:{d}] = p[{a}:{b}]", a=a, b=b, c=c, d=d)
        if isinstance(ref, DynRef):
            base = ref.base_fn()
            r0, n = ref.rel.start, ref.rel.end - ref.rel.start

            def back(p: list) -> None:
                o = base(p)
                if o >= 0:
                    p[r0 + o:r0 + o + n] = p[a:b]

            return back
        raise PipelineError(arg.loc, "pipeline: unsupported out argument")


class LoopSignal(Exception):
    """``break``/``continue``: raised by the statement, caught by the innermost loop."""


BREAK = LoopSignal("break")
CONTINUE = LoopSignal("continue")
MAX_LOOP_ITERATIONS = 1 << 20  # a loop still running after this many turns is a pipeline error


def _loop(init: Fn | None, cond: Fn, body: Fn, step: Fn, loc: Any) -> Fn:
    """The loop closure: init; while cond: body (break/continue); step."""
    where = f"{loc.file}:{loc.line}" if loc is not None else "a loop"

    def run_loop(p: list) -> None:
        if init is not None:
            init(p)
        turns = 0
        while cond(p):
            try:
                body(p)
            except LoopSignal as sig:
                sig.__traceback__ = None  # preallocated: must not keep the packet's frames alive
                if sig is BREAK:
                    break
            step(p)
            turns += 1
            if turns >= MAX_LOOP_ITERATIONS:
                raise RuntimeError(f"the loop at {where} ran {turns} times without ending")

    return run_loop


def copy_out_on_exit(body: Fn | None, post: Fn | None) -> Fn | None:
    """``body`` that still copies out its out/inout parameters when an ``exit`` leaves it.

    Why: P4_16 (and p4c/BMv2) copy out the directional parameters of every call on the way
    out, ``exit`` included; the normal path's ``post`` runs after the body, so only the exit
    path needs this. A try costs nothing in CPython 3.11 until something is raised.
    """
    if body is None or post is None:
        return body

    def run(p: list) -> None:
        try:
            body(p)
        except ExitSignal:
            post(p)
            raise

    return run


def catch_return(body: Fn) -> Fn:
    def run(p: list) -> None:
        try:  # noqa: SIM105 - cheaper than contextlib.suppress per call
            body(p)
        except ReturnSignal:
            pass

    return run


def _noop(p: list) -> None:
    return None


def _invalidate_headers(st: Storage) -> Fn | None:
    hs = tuple(h.valid for h in iter_headers(st))
    if not hs:
        return None

    def inv(p: list) -> None:
        for v in hs:
            p[v] = 0

    return inv


def _param_fixer(fixes: list[tuple[int, int]], storages: list[Storage]) -> Callable[[tuple], tuple]:
    """Unsigned control-plane values -> signed/bool representation for such parameters."""
    kinds = []
    for i, width in fixes:
        st = storages[i]
        kinds.append((i, width, isinstance(T.underlying(st.type), T.BoolType)))

    def fix(params: tuple) -> tuple:
        out = list(params)
        for i, width, is_bool in kinds:
            v = out[i]
            if is_bool:
                out[i] = bool(v)
            elif v >> (width - 1):
                out[i] = v - (1 << width)
        return tuple(out)

    return fix


def bind_arguments(params: list[ast.Param], args: list[ast.Argument], loc: Any) -> list[ast.Expression | None]:
    """Arguments in parameter order (named or positional); None for a missing optional one."""
    out: list[ast.Expression | None] = [None] * len(params)
    index = {p.name: i for i, p in enumerate(params)}
    pos = 0
    for a in args:
        if a.name is not None:
            i = index.get(a.name)
            if i is None:
                raise PipelineError(a.loc, f"pipeline: no parameter named '{a.name}'")
            out[i] = a.value
        else:
            if pos >= len(params):
                raise PipelineError(a.loc, "pipeline: too many arguments")
            out[pos] = a.value
            pos += 1
    return out


_NOT_STRUCTURE = {"loc", "type", "decl", "const_value", "call_kind", "bound_args", "annotations"}


def _same_tree(a: Any, b: Any) -> bool:
    """Two expressions written the same (locations and checker annotations aside)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b))
    if not isinstance(a, ast.Node):
        return a == b
    return all(_same_tree(getattr(a, f.name, None), getattr(b, f.name, None))
               for f in dataclasses.fields(a) if f.name not in _NOT_STRUCTURE)


def compound_index_pairs(s: ast.AssignStmt) -> list[tuple[ast.Expression, ast.Expression]]:
    """For ``lhs = lhs' op rhs`` made from a compound assignment (``lhs op= rhs``), the
    run-time index expressions of ``lhs`` paired with their copies in ``lhs'``; else [].

    The front end marks the statement with ``compound_op`` or, as p4c's RemoveOpAssign,
    builds the operation at the statement's own location from a copy of the left side.
    """
    rhs = s.rhs
    if not isinstance(rhs, ast.BinaryExpr):
        return []
    marked = getattr(s, "compound_op", None) is not None or rhs.loc == s.loc
    if not marked or not _same_tree(s.lhs, rhs.left):
        return []
    pairs: list[tuple[ast.Expression, ast.Expression]] = []
    a, b = s.lhs, rhs.left
    while isinstance(a, ast.MemberExpr | ast.IndexExpr | ast.SliceExpr):
        if isinstance(a, ast.IndexExpr) and getattr(a.index, "const_value", None) is None \
                and not isinstance(a.index, ast.IntLiteral):
            pairs.append((a.index, b.index))  # type: ignore[union-attr]
        a, b = a.expr, b.expr  # type: ignore[union-attr]
    return pairs
