"""Parser states -> closures; ``select`` -> dict lookups where it can.

Each state compiles to ``run(phv) -> next state`` (None for ``accept``); the parser is
a loop over states. ``select`` with constant keysets only (and at most a trailing
``default``) is one dict lookup on the key (a tuple for several selectors); otherwise the
cases are tested in order with precomputed (value, mask) / range / value-set tests.
``verify``, extraction errors and ``select`` without a match raise
:class:`~.packet.ParserReject`, which the top-level runner turns into
``standard_metadata.parser_error`` (the packet then continues into ingress, as in BMv2).
An explicit ``transition reject`` leaves ``parser_error`` as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4switch.frontend import ast

from .packet import ParserReject
from .scope import PipelineError, Scope, ValueSet, located
from .templates import Fn, expr

MAX_PARSER_STEPS = 4096  # state visits before ParserTimeout


class State:
    """A compiled parser state (``run`` is filled in once every state exists)."""

    __slots__ = ("name", "run")

    def __init__(self, name: str) -> None:
        self.name = name
        self.run: Callable[[list], State | None] = _unset


def _unset(p: list) -> State | None:
    raise RuntimeError("parser state used before compilation")


class ParserCompiler:
    """Mixin of the pipeline compiler: parser declarations."""

    def parser_body(self, decl: ast.ParserDecl, sc: Scope, inits: Fn | None) -> Fn:
        """The closure running ``decl``'s state machine from ``start``."""
        states = {s.name: State(s.name) for s in decl.states}
        reject = State("reject")

        def do_reject(p: list) -> State | None:
            raise ParserReject(None)

        reject.run = do_reject
        for s in decl.states:
            with located(s.loc, f"parser state '{s.name}'"):
                states[s.name].run = self._state(s, sc, states, reject)
        start = states.get("start")
        if start is None:
            raise PipelineError(decl.loc, f"pipeline: parser {decl.name} has no start state")
        timeout = ParserReject(self.error_code("ParserTimeout"))  # type: ignore[attr-defined]

        def parse(p: list) -> None:
            if inits is not None:
                inits(p)
            st: State | None = start
            steps = 0
            while st is not None:
                st = st.run(p)
                steps += 1
                if steps > MAX_PARSER_STEPS:
                    raise timeout.with_traceback(None)

        return parse

    def _state(self, s: ast.ParserState, sc: Scope, states: dict[str, State], reject: State) -> Callable:
        body = self.block(s.stmts, sc)  # type: ignore[attr-defined]
        trans = self._transition(s, sc, states, reject)
        if body is None:
            return trans
        if isinstance(trans, _Fixed):
            nxt = trans.target

            def run_fixed(p: list) -> State | None:
                body(p)
                return nxt

            return run_fixed

        def run(p: list) -> State | None:
            body(p)
            return trans(p)

        return run

    def _target(self, e: ast.Expression, states: dict[str, State], reject: State) -> State | None:
        name = getattr(e, "name", None)
        if name == "accept":
            return None
        if name == "reject":
            return reject
        if name in states:
            return states[name]
        raise PipelineError(e.loc, f"pipeline: unknown parser state '{name}'")

    def _transition(self, s: ast.ParserState, sc: Scope, states: dict[str, State], reject: State) -> Callable:
        t = s.transition
        if t is None:
            return _Fixed(reject)
        if isinstance(t.target, ast.SelectExpr):
            return self._select(t.target, sc, states, reject)
        return _Fixed(self._target(t.target, states, reject))

    # ------------------------------------------------------------------ select

    def _select(self, sel: ast.SelectExpr, sc: Scope, states: dict[str, State], reject: State) -> Callable:
        keys = [self.scalar(x, sc) for x in sel.selectors]  # type: ignore[attr-defined]
        n = len(keys)
        nomatch = ParserReject(self.error_code("NoMatch"))  # type: ignore[attr-defined]
        cases: list[tuple[list[tuple], State | None]] = []
        for case in sel.cases:
            ks = case_keysets(case, n)
            if len(ks) == 1 and n > 1 and isinstance(ks[0], ast.PathExpr):
                vs = sc.find(ks[0].decl) if ks[0].decl is not None else None
                if isinstance(vs, ValueSet):  # one value set of structs against the whole tuple
                    cases.append(([("vs_tuple", vs)], self._target(case.state, states, reject)))
                    continue
            if len(ks) != n:
                raise PipelineError(case.loc, f"pipeline: keyset has {len(ks)} components, select has {n}")
            tests = [self._keyset(k, sel.selectors[i], sc) for i, k in enumerate(ks)]
            cases.append((tests, self._target(case.state, states, reject)))
        if n == 1:
            key = keys[0]
        else:
            key = expr("(" + ", ".join(f"{{k{i}}}" for i in range(n)) + ",)",
                       **{f"k{i}": k for i, k in enumerate(keys)})
        if key.is_const:
            kv = key.val
            kt = kv if n > 1 else (kv,)
            for tests, target in cases:
                if _matches(tests, kt):
                    return _Fixed(target)
            return _Fixed(_raising(nomatch))
        keyf = key.fn()
        table = _as_dict(cases, n)
        if table is not None:
            lookup, default, has_default = table
            if has_default:
                return lambda p: lookup.get(keyf(p), default)

            def select_dict(p: list) -> State | None:
                k = keyf(p)
                if k in lookup:
                    return lookup[k]
                raise nomatch.with_traceback(None)

            return select_dict
        single = n == 1

        def select_general(p: list) -> State | None:
            k = keyf(p)
            kt = (k,) if single else k
            for tests, target in cases:
                if _matches(tests, kt):
                    return target
            raise nomatch.with_traceback(None)

        return select_general

    def _keyset(self, k: ast.Expression, selector: ast.Expression, sc: Scope) -> tuple:
        if isinstance(k, ast.DefaultExpr | ast.DontCareExpr):
            return ("any",)
        if isinstance(k, ast.MaskExpr):
            v, m = self._const(k.value, sc, selector), self._const(k.mask, sc, selector)
            return ("mask", v & m, m)
        if isinstance(k, ast.RangeExpr):
            return ("range", self._const(k.lo, sc, selector), self._const(k.hi, sc, selector))
        if isinstance(k, ast.PathExpr):
            b = sc.find(k.decl) if k.decl is not None else None
            if isinstance(b, ValueSet):
                return ("vs", b)
        return ("exact", self._const(k, sc, selector))

    def _const(self, e: ast.Expression, sc: Scope, selector: ast.Expression) -> Any:
        v = self.scalar(e, sc)  # type: ignore[attr-defined]
        if not v.is_const:
            raise PipelineError(e.loc, "pipeline: select keysets must be compile-time constants")
        return self.runtime_const(v.val, selector.type, e.loc)  # type: ignore[attr-defined]


def case_keysets(case: ast.SelectCase, n: int) -> list[ast.Expression]:
    """A select case's keysets for ``n`` selectors: a tuple keyset unpacked, a lone
    ``default``/``_`` standing for every component (the engine emitter reads them the same way)."""
    ks = list(case.keys)
    if len(ks) == 1 and n > 1 and isinstance(ks[0], ast.ListExpr):
        ks = list(ks[0].elements)
    if len(ks) == 1 and n > 1 and isinstance(ks[0], ast.DefaultExpr | ast.DontCareExpr):
        ks = ks * n
    return ks


class _Fixed:
    """A transition to a known state (callable like any transition)."""

    __slots__ = ("target",)

    def __init__(self, target: State | None) -> None:
        self.target = target

    def __call__(self, p: list) -> State | None:
        return self.target


def _raising(exc: ParserReject) -> State:
    st = State("nomatch")

    def run(p: list) -> State | None:
        raise exc.with_traceback(None)

    st.run = run
    return st


def _matches(tests: list[tuple], key: tuple) -> bool:
    if tests[0][0] == "vs_tuple":
        return tests[0][1].matches(key)
    for t, k in zip(tests, key):
        kind = t[0]
        if kind == "any":
            continue
        if kind == "exact":
            if k != t[1]:
                return False
        elif kind == "mask":
            if (k & t[2]) != t[1]:
                return False
        elif kind == "range":
            if not t[1] <= k <= t[2]:
                return False
        elif kind == "vs" and not t[1].matches((k,)):
            return False
    return True


def _as_dict(cases: list[tuple[list[tuple], State | None]], n: int) -> tuple[dict, Any, bool] | None:
    """Exact-only cases (plus an all-wildcard case, which ends the select) as a dict."""
    lookup: dict = {}
    for tests, target in cases:
        if all(t[0] == "any" for t in tests):
            return lookup, target, True
        if not all(t[0] == "exact" for t in tests):
            return None
        key = tests[0][1] if n == 1 else tuple(t[1] for t in tests)
        lookup.setdefault(key, target)
    return lookup, None, False


__all__ = ["ParserCompiler", "State", "case_keysets"]
