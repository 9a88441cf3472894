"""Calls: dispatch on the checker's ``call_kind``; header, union and stack methods;
actions, functions and sub-block applies.

Extern functions/methods, packet methods and table applies are compiled by their own
mixins (``externs``, ``packetio``, ``tables``); this module only routes to them.
"""

from __future__ import annotations

from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T

from .exprs import DynRef, header_storage, union_storage
from .layout import HeaderS, StackS, StructS, UnionS
from .scope import PipelineError, Scope
from .stmts import Callee
from .templates import E, Fn, stmt

CK = ast.CallKind


def method_name(call: ast.CallExpr) -> str:
    m = call.method
    if isinstance(m, ast.MemberExpr):
        return m.member
    if isinstance(m, ast.PathExpr):
        return m.name
    if isinstance(m, ast.TypeMemberExpr):
        return m.member
    return "?"


def method_target(call: ast.CallExpr) -> ast.Expression | None:
    """The object a method is called on (``hdr.ipv4`` in ``hdr.ipv4.isValid()``)."""
    return call.method.expr if isinstance(call.method, ast.MemberExpr) else None


class CallCompiler:
    """Mixin of the pipeline compiler: call dispatch."""

    # ------------------------------------------------------------------ entry points

    def call_stmt(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        kind = self.kind_of(call)
        if kind in (CK.ACTION, CK.FUNCTION):
            return self.invoke(self.callee_of(call, sc), call.args, sc, call.loc)  # type: ignore[attr-defined]
        if kind == CK.HEADER_METHOD:
            return self._header_method_stmt(call, sc)
        if kind == CK.STACK_METHOD:
            return self._stack_method(call, sc)
        if kind == CK.TABLE_APPLY:
            return self.table_apply(call, sc, "none")  # type: ignore[attr-defined]
        if kind in (CK.CONTROL_APPLY, CK.PARSER_APPLY):
            return self._block_apply(call, sc)
        if kind == CK.EXTERN_FUNCTION:
            return self.extern_function(call, sc)  # type: ignore[attr-defined]
        if kind == CK.EXTERN_METHOD:
            return self.extern_method(call, sc)  # type: ignore[attr-defined]
        if kind == CK.PACKET_METHOD:
            return self.packet_method(call, sc, want="none")  # type: ignore[attr-defined]
        if kind in (CK.UNION_METHOD, CK.BUILTIN):
            return None
        raise PipelineError(call.loc, f"pipeline: unsupported call ({kind})")

    def call_value(self, call: ast.CallExpr, sc: Scope) -> E:
        kind = self.kind_of(call)
        if kind == CK.HEADER_METHOD or kind == CK.UNION_METHOD:
            if method_name(call) != "isValid":
                raise PipelineError(call.loc, f"pipeline: {method_name(call)}() has no value")
            return self._is_valid(call, sc)
        if kind == CK.FUNCTION:
            return E.func(self.invoke(self.callee_of(call, sc), call.args, sc, call.loc, want="value"))  # type: ignore[attr-defined]
        if kind == CK.PACKET_METHOD:
            return self.packet_method(call, sc, want="value")  # type: ignore[attr-defined]
        if kind == CK.EXTERN_FUNCTION and method_name(call) == "static_assert":
            return E.const(True)
        if kind in (CK.EXTERN_FUNCTION, CK.EXTERN_METHOD):
            return self.extern_value(call, sc)  # type: ignore[attr-defined]
        if kind == CK.BUILTIN:
            return self._builtin(call, sc)
        raise PipelineError(call.loc, f"pipeline: call ({kind}) has no scalar value here")

    def call_agg(self, call: ast.CallExpr, sc: Scope) -> Fn:
        kind = self.kind_of(call)
        if kind == CK.FUNCTION:
            return self.invoke(self.callee_of(call, sc), call.args, sc, call.loc, want="agg")  # type: ignore[attr-defined]
        if kind == CK.PACKET_METHOD:
            return self.packet_method(call, sc, want="agg")  # type: ignore[attr-defined]
        raise PipelineError(call.loc, f"pipeline: call ({kind}) has no aggregate value here")

    # ------------------------------------------------------------------ helpers

    def kind_of(self, call: ast.CallExpr) -> Any:
        kind = call.call_kind
        if kind is None:
            raise PipelineError(call.loc, "pipeline: call not annotated by the checker (call_kind missing)")
        return kind

    def callee_of(self, call: ast.CallExpr, sc: Scope) -> Callee:
        m = call.method
        decl = getattr(m, "decl", None)
        b = sc.lookup(decl, m)
        if not isinstance(b, Callee):
            b = getattr(b, "callee", None)
        if not isinstance(b, Callee):
            raise PipelineError(call.loc, f"pipeline: '{method_name(call)}' is not an action or function here")
        return b

    def _builtin(self, call: ast.CallExpr, sc: Scope) -> E:
        name = method_name(call)
        target = method_target(call)
        t = target.type if target is not None else (call.args[0].value.type if call.args else None)
        if name in ("minSizeInBits", "maxSizeInBits") and t is not None:
            return E.const(T.width_of(t))
        if name in ("minSizeInBytes", "maxSizeInBytes") and t is not None:
            return E.const((T.width_of(t) + 7) // 8)
        raise PipelineError(call.loc, f"pipeline: unsupported builtin {name}")

    # ------------------------------------------------------------------ headers

    def _header_ref(self, call: ast.CallExpr, sc: Scope) -> Any:
        target = method_target(call)
        if target is None:
            raise PipelineError(call.loc, "pipeline: header method without a header")
        ref = self.ref_of(target, sc)  # type: ignore[attr-defined]
        if ref is None:
            raise PipelineError(target.loc, "pipeline: header methods need a header location")
        return ref

    def _is_valid(self, call: ast.CallExpr, sc: Scope) -> E:
        ref = self._header_ref(call, sc)
        h = header_storage(ref)
        if h is not None:
            if isinstance(ref, DynRef):
                base = ref.base_fn()
                v = h.valid

                def is_valid_dyn(p: list) -> bool:
                    o = base(p)
                    return o >= 0 and p[v + o] == 1

                return E.func(is_valid_dyn)
            return E.slot(h.valid)
        u = union_storage(ref)
        if u is not None and not isinstance(ref, DynRef):
            valids = tuple(x.valid for x in u.headers())
            return E.func(lambda p: any(p[v] for v in valids))
        raise PipelineError(call.loc, "pipeline: isValid() on something that is not a header or union")

    def _header_method_stmt(self, call: ast.CallExpr, sc: Scope) -> Fn | None:
        name = method_name(call)
        if name == "isValid":
            return None
        ref = self._header_ref(call, sc)
        h = header_storage(ref)
        if h is None:
            raise PipelineError(call.loc, f"pipeline: {name}() on something that is not a header")
        value = 1 if name == "setValid" else 0
        if name not in ("setValid", "setInvalid"):
            raise PipelineError(call.loc, f"pipeline: unknown header method {name}")
        siblings = self._union_siblings(call, sc, h) if value else ()
        if isinstance(ref, DynRef):
            base = ref.base_fn()
            vs = h.valid

            def set_dyn(p: list) -> None:
                o = base(p)
                if o >= 0:
                    p[vs + o] = value

            return set_dyn
        if siblings:
            others = tuple(siblings)
            vs = h.valid

            def set_in_union(p: list) -> None:
                for o in others:
                    p[o] = 0
                p[vs] = 1

            return set_in_union
        return stmt("p[{v}] = {x}", v=h.valid, x=value)

    def _union_siblings(self, call: ast.CallExpr, sc: Scope, h: HeaderS) -> list[int]:
        """Validity slots of the other members when ``h`` is a header-union member."""
        target = method_target(call)
        if isinstance(target, ast.MemberExpr):
            parent = self.ref_of(target.expr, sc)  # type: ignore[attr-defined]
            if isinstance(parent, UnionS):
                return [x.valid for x in parent.headers() if x is not h]
        return []

    # ------------------------------------------------------------------ stacks

    def _stack_method(self, call: ast.CallExpr, sc: Scope) -> Fn:
        name = method_name(call)
        target = method_target(call)
        st = self.ref_of(target, sc) if target is not None else None  # type: ignore[attr-defined]
        if not isinstance(st, StackS):
            raise PipelineError(call.loc, f"pipeline: {name}() needs a fixed header stack")
        if not call.args:
            raise PipelineError(call.loc, f"pipeline: {name}() needs a count")
        n = self._int_const(call.args[0].value, sc)  # type: ignore[attr-defined]
        size, stride, start, nxt = st.size, st.stride, st.start, st.next_slot
        valids = [rel for rel in _valid_offsets(st.elems[0])] if st.elems else []
        elem_len = stride
        total = size * stride
        if name == "push_front":
            def push(p: list) -> None:
                k = min(n, size)
                body = p[start:start + total - k * elem_len]
                p[start + k * elem_len:start + total] = body
                for i in range(k):
                    for off in valids:
                        p[start + i * elem_len + off] = 0
                p[nxt] = min(p[nxt] + n, size)

            return push
        if name == "pop_front":
            def pop(p: list) -> None:
                k = min(n, size)
                body = p[start + k * elem_len:start + total]
                p[start:start + total - k * elem_len] = body
                for i in range(size - k, size):
                    for off in valids:
                        p[start + i * elem_len + off] = 0
                p[nxt] = max(p[nxt] - n, 0)

            return pop
        raise PipelineError(call.loc, f"pipeline: unknown stack method {name}")

    # ------------------------------------------------------------------ sub-blocks

    def _block_apply(self, call: ast.CallExpr, sc: Scope) -> Fn:
        target = method_target(call)
        if target is None:
            raise PipelineError(call.loc, "pipeline: apply() without a block")
        decl = getattr(target, "decl", None)
        inst = sc.lookup(decl, target)
        callee = getattr(inst, "callee", None)
        if not isinstance(callee, Callee):
            raise PipelineError(call.loc, "pipeline: apply() on something that is not a parser or control instance")
        return self.invoke(callee, call.args, sc, call.loc)  # type: ignore[attr-defined]


def _valid_offsets(st: Any) -> list[int]:
    """Offsets of header validity slots inside one stack element."""
    if isinstance(st, HeaderS):
        return [0]
    out = []
    if isinstance(st, StructS):
        for h in st.fields.values():
            if isinstance(h, HeaderS):
                out.append(h.valid - st.start)
    return out


__all__ = ["CallCompiler", "method_name", "method_target"]
