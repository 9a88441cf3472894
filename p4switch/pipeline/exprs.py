"""Expressions -> closures over the PHV.

Representation of run-time values (chosen once, everywhere):

* ``bit<w>``: a Python int in ``[0, 2**w)``; every operator masks its result;
* ``int<w>``: a Python int in the two's complement range (held *signed*, so comparisons
  and ``>>`` are Python's; ``+ - * <<`` wrap with ``((x + h) & m) - h``);
* ``bool``: a Python bool (0/1 in PHV slots is equivalent: ``bool`` is an ``int``);
* ``error`` and enums: ints (``error`` numbered in declaration order, ``NoError`` = 0;
  plain enum members by position; serializable enums by their value);
* aggregates (headers, structs, unions, stacks, tuples): the list of their slot values in
  PHV layout order (header: validity first).

Scalar expressions compile to :class:`~.templates.E`; aggregate expressions to a closure
returning the flattened list; l-values to :class:`LValue`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.values import SymbolicValue

from .layout import HeaderS, ScalarS, StackS, Storage, StructS, UnionS, VarbitS, scalar_info
from .packet import ParserReject
from .scope import Const, PipelineError, Scope
from .templates import E, Fn, expr

# --------------------------------------------------------------------------- l-values


@dataclass(eq=False)
class DynRef:
    """``stack[i]...`` with a run-time index: ``rel`` is the addressed storage inside
    element 0; element ``i`` is at ``rel.start + i * stack.stride``. ``oob`` is the error
    code raised for an index out of bounds (``.next``/``.last``), or None to ignore it."""

    stack: StackS
    index: E
    rel: Storage
    oob: int | None = None

    def base_fn(self) -> Fn:
        """A closure giving the slot offset of the addressed element (or raising)."""
        idx = self.index.fn()
        stride, n, oob = self.stack.stride, self.stack.size, self.oob

        def base(p: list) -> int:
            i = idx(p)
            if 0 <= i < n:
                return i * stride
            if oob is not None:
                raise ParserReject(oob)
            return -1

        return base


@dataclass(eq=False)
class SliceRef:
    """``x[hi:lo]`` as an assignment target."""

    base: Storage | DynRef
    hi: int
    lo: int


Ref = Storage | DynRef | SliceRef


def flat_size(t: T.Type) -> int:
    """Number of PHV slots a value of type ``t`` takes (see ``layout``)."""
    u = t
    while isinstance(u, T.NewType):
        u = u.base
    if isinstance(u, T.HeaderType):
        return 1 + sum(flat_size(ft) for _, ft in u.fields)
    if isinstance(u, T.StructLikeType):
        return sum(flat_size(ft) for _, ft in u.fields)
    if isinstance(u, T.HeaderStackType):
        return u.size * flat_size(u.element) + 1
    if isinstance(u, T.TupleType):
        return sum(flat_size(et) for et in u.elements)
    if isinstance(u, T.VarbitType):
        return 2
    return 1


def is_aggregate(t: T.Type | None) -> bool:
    u = t
    while isinstance(u, T.NewType):
        u = u.base
    return isinstance(u, T.StructLikeType | T.HeaderStackType | T.TupleType)


def header_segments(t: T.Type, base: int = 0) -> list[tuple[int, int]]:
    """(offset, length) of every header inside a flattened value of type ``t``."""
    u = t
    while isinstance(u, T.NewType):
        u = u.base
    if isinstance(u, T.HeaderType):
        return [(base, flat_size(u))]
    out: list[tuple[int, int]] = []
    if isinstance(u, T.StructLikeType):
        for _, ft in u.fields:
            out += header_segments(ft, base)
            base += flat_size(ft)
    elif isinstance(u, T.HeaderStackType):
        for _ in range(u.size):
            out += header_segments(u.element, base)
            base += flat_size(u.element)
    elif isinstance(u, T.TupleType):
        for et in u.elements:
            out += header_segments(et, base)
            base += flat_size(et)
    return out


def next_index_offsets(t: T.Type, base: int = 0) -> list[int]:
    """Offsets of the ``nextIndex`` slots of the header stacks inside a flattened value of
    type ``t``: parser bookkeeping, not part of the value (``==`` ignores them)."""
    u = t
    while isinstance(u, T.NewType):
        u = u.base
    out: list[int] = []
    if isinstance(u, T.HeaderStackType):
        step = flat_size(u.element)
        for i in range(u.size):
            out += next_index_offsets(u.element, base + i * step)
        out.append(base + u.size * step)
    elif isinstance(u, T.StructLikeType | T.TupleType):
        types = [ft for _, ft in u.fields] if isinstance(u, T.StructLikeType) else list(u.elements)
        for ft in types:
            out += next_index_offsets(ft, base)
            base += flat_size(ft)
    return out


def mask_of(width: int) -> int:
    return (1 << width) - 1


class ExprCompiler:
    """Mixin of the pipeline compiler: expressions and l-values."""

    # provided by the compiler
    error_codes: dict[str, int]

    # ------------------------------------------------------------------ constants

    def runtime_const(self, value: Any, t: T.Type | None, loc: Any = None) -> Any:
        """A checker ``const_value`` in its run-time representation."""
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            width, signed = scalar_info(t) if t is not None else (0, False)
            if width:
                v = value & mask_of(width)
                if signed and v >> (width - 1):
                    v -= 1 << width
                return v
            return value
        if isinstance(value, SymbolicValue):
            return self.symbolic_code(value, t, loc)
        return value

    def symbolic_code(self, value: SymbolicValue, t: T.Type | None, loc: Any = None) -> int:
        if value.type_name == "error":
            return self.error_code(value.member, loc)
        if isinstance(t, T.EnumType):
            v = t.value_of(value.member)
            if v is not None:
                return v
            if value.member in t.members:
                return t.members.index(value.member)
        raise PipelineError(loc, f"pipeline: no run-time value for {value}")

    def error_code(self, member: str, loc: Any = None) -> int:
        code = self.error_codes.get(member)
        if code is None:
            raise PipelineError(loc, f"pipeline: unknown error member error.{member}")
        return code

    # ------------------------------------------------------------------ l-values

    def ref_of(self, e: ast.Expression, sc: Scope) -> Ref | None:
        """Where ``e`` lives, if it is an l-value-like expression (else None)."""
        if isinstance(e, ast.PathExpr):
            b = sc.find(e.decl) if e.decl is not None else None
            return b if isinstance(b, Storage) else None
        if isinstance(e, ast.MemberExpr):
            base = self.ref_of(e.expr, sc)
            if base is None:
                return None
            return self._member_ref(base, e)
        if isinstance(e, ast.IndexExpr):
            base = self.ref_of(e.expr, sc)
            if base is None:
                return None
            return self._index_ref(base, e, sc)
        if isinstance(e, ast.SliceExpr):
            base = self.ref_of(e.expr, sc)
            if base is None:
                return None
            hi, lo = int(self._int_const(e.hi, sc)), int(self._int_const(e.lo, sc))
            if isinstance(base, SliceRef):  # x[a:b][c:d] is x[b+c:b+d]: one slice of the field
                return SliceRef(base.base, base.lo + hi, base.lo + lo)
            return SliceRef(base, hi, lo)
        return None

    def _member_ref(self, base: Ref, e: ast.MemberExpr) -> Ref | None:
        m = e.member
        if isinstance(base, DynRef):
            rel = base.rel
            if isinstance(rel, StructS) and m in rel.fields:
                return DynRef(base.stack, base.index, rel.fields[m], base.oob)
            return None
        if isinstance(base, StructS):
            return base.fields.get(m)
        if isinstance(base, StackS):
            if not base.elems:
                return None
            if m == "next":
                return DynRef(base, E.slot(base.next_slot), base.elems[0], self.error_code("StackOutOfBounds", e.loc))
            if m == "last":
                idx = expr("{a} - 1", a=E.slot(base.next_slot))
                return DynRef(base, idx, base.elems[0], self.error_code("StackOutOfBounds", e.loc))
        return None

    def _index_ref(self, base: Ref, e: ast.IndexExpr, sc: Scope) -> Ref | None:
        if isinstance(base, StackS):
            pinned = getattr(self, "pinned_indexes", {}).get(id(e.index))
            idx = pinned if pinned is not None else self.scalar(e.index, sc)
            if idx.is_const:
                i = idx.val
                if not 0 <= i < base.size:
                    raise PipelineError(e.loc, f"pipeline: index {i} out of bounds of a stack of {base.size}")
                return base.elems[i]
            return DynRef(base, idx, base.elems[0])
        if isinstance(base, StructS):  # tuple
            i = self._int_const(e.index, sc)
            return base.fields.get(str(i))
        return None

    def _int_const(self, e: ast.Expression, sc: Scope) -> int:
        v = self.scalar(e, sc)
        if not v.is_const:
            raise PipelineError(e.loc, "pipeline: a compile-time constant is required here")
        return int(v.val)

    def storage(self, e: ast.Expression, sc: Scope) -> Storage:
        """The static storage ``e`` denotes, or a clear error."""
        r = self.ref_of(e, sc)
        if not isinstance(r, Storage):
            raise PipelineError(e.loc, "pipeline: expected a fixed header/struct/field location here")
        return r

    # ------------------------------------------------------------------ reads

    def read_ref(self, r: Ref, loc: Any) -> E:
        """Scalar read of a location."""
        if isinstance(r, ScalarS):
            return E.slot(r.slot)
        if isinstance(r, VarbitS):
            return E.slot(r.slot)
        if isinstance(r, DynRef):
            if not isinstance(r.rel, ScalarS | VarbitS):
                raise PipelineError(loc, "pipeline: not a scalar")
            base = r.base_fn()
            s = r.rel.start

            def rd(p: list) -> Any:
                b = base(p)
                return p[s + b] if b >= 0 else 0

            return E.func(rd)
        if isinstance(r, SliceRef):
            width = r.hi - r.lo + 1
            return expr("({a} >> {lo}) & {m}", a=self.read_ref(r.base, loc), lo=r.lo, m=mask_of(width))
        raise PipelineError(loc, "pipeline: not a scalar location")

    def read_agg_ref(self, r: Ref, loc: Any) -> Fn:
        """The flattened value of an aggregate location."""
        if isinstance(r, Storage):
            a, b = r.start, r.end
            return lambda p: p[a:b]
        if isinstance(r, DynRef):
            base = r.base_fn()
            a, n = r.rel.start, r.rel.end - r.rel.start

            def rd(p: list) -> list:
                o = base(p)
                return p[a + o:a + o + n] if o >= 0 else [0] * n

            return rd
        raise PipelineError(loc, "pipeline: not an aggregate location")

    # ------------------------------------------------------------------ scalar

    def scalar(self, e: ast.Expression, sc: Scope) -> E:
        """Compile a scalar-valued expression."""
        cv = e.const_value
        if cv is not None and not isinstance(cv, str | list | tuple):
            return E.const(self.runtime_const(cv, e.type, e.loc))
        method = getattr(self, "_x_" + type(e).__name__, None)
        if method is None:
            raise PipelineError(e.loc, f"pipeline: unsupported expression {type(e).__name__}")
        return method(e, sc)

    def _x_IntLiteral(self, e: ast.IntLiteral, sc: Scope) -> E:
        return E.const(self.runtime_const(e.value, e.type, e.loc))

    def _x_BoolLiteral(self, e: ast.BoolLiteral, sc: Scope) -> E:
        return E.const(bool(e.value))

    def _x_StringLiteral(self, e: ast.StringLiteral, sc: Scope) -> E:
        return E.const(e.value)

    def _x_PathExpr(self, e: ast.PathExpr, sc: Scope) -> E:
        b = sc.find(e.decl) if e.decl is not None else None
        if isinstance(b, Storage):
            return self.read_ref(b, e.loc)
        if isinstance(b, Const):
            return E.const(b.value)
        decl = e.decl
        if isinstance(decl, ast.ConstDecl):
            return self.scalar(decl.value, sc)
        raise PipelineError(e.loc, f"pipeline: '{e.name}' has no run-time value here")

    def _x_TypeMemberExpr(self, e: ast.TypeMemberExpr, sc: Scope) -> E:
        t = e.type
        if isinstance(t, T.ErrorType):
            return E.const(self.error_code(e.member, e.loc))
        if isinstance(t, T.EnumType):
            return E.const(self.symbolic_code(SymbolicValue(t.name, e.member), t, e.loc))
        raise PipelineError(e.loc, f"pipeline: no run-time value for {e.member}")

    def _x_MemberExpr(self, e: ast.MemberExpr, sc: Scope) -> E:
        r = self.ref_of(e, sc)
        if r is not None:
            return self.read_ref(r, e.loc)
        m = e.member
        look = _lookahead_path(e)
        if look is not None:  # pkt.lookahead<T>().f[.g]: the field's bits, nothing extracted
            return self.lookahead_field(look[0], look[1], sc)  # type: ignore[attr-defined]
        if isinstance(e.expr, ast.CallExpr) and m in ("hit", "miss"):
            return self.table_apply_result(e.expr, sc, m)  # type: ignore[attr-defined]
        base_t = e.expr.type
        if isinstance(base_t, T.HeaderStackType):
            st = self.ref_of(e.expr, sc)
            if m == "size":
                return E.const(base_t.size)
            if isinstance(st, StackS) and m == "lastIndex":
                return expr("({a} - 1) & 0xFFFFFFFF", a=E.slot(st.next_slot))
            if isinstance(st, StackS) and m == "nextIndex":
                return E.slot(st.next_slot)
        if isinstance(base_t, T.ErrorType | T.TypeOfType) or isinstance(e.type, T.ErrorType | T.EnumType):
            if isinstance(e.type, T.ErrorType):
                return E.const(self.error_code(m, e.loc))
            if isinstance(e.type, T.EnumType):
                return E.const(self.symbolic_code(SymbolicValue(e.type.name, m), e.type, e.loc))
        raise PipelineError(e.loc, f"pipeline: cannot evaluate member '{m}' here")

    def _x_IndexExpr(self, e: ast.IndexExpr, sc: Scope) -> E:
        r = self.ref_of(e, sc)
        if r is None:
            raise PipelineError(e.loc, "pipeline: unsupported index expression")
        return self.read_ref(r, e.loc)

    def _x_SliceExpr(self, e: ast.SliceExpr, sc: Scope) -> E:
        hi, lo = self._int_const(e.hi, sc), self._int_const(e.lo, sc)
        a = self.scalar(e.expr, sc)
        if lo == 0:
            return expr("{a} & {m}", a=a, m=mask_of(hi - lo + 1))
        return expr("({a} >> {lo}) & {m}", a=a, lo=lo, m=mask_of(hi - lo + 1))

    def _x_CastExpr(self, e: ast.CastExpr, sc: Scope) -> E:
        return self.cast(self.scalar(e.expr, sc), e.expr.type, e.type, e.loc)

    def cast(self, a: E, src: T.Type, dst: T.Type, loc: Any = None) -> E:
        """``(dst) a`` for scalar types."""
        su, du = T.underlying(src), T.underlying(dst)
        if isinstance(du, T.BoolType):
            if isinstance(su, T.BoolType):
                return a
            return expr("{a} != 0", a=a)
        if isinstance(du, T.BitType):
            if isinstance(su, T.BoolType):
                return expr("1 if {a} else 0", a=a)
            if isinstance(su, T.BitType) and su.width <= du.width:
                return a
            return expr("{a} & {m}", a=a, m=mask_of(du.width))
        if isinstance(du, T.IntType):
            if isinstance(su, T.BoolType):
                a = expr("1 if {a} else 0", a=a)
            elif isinstance(su, T.IntType) and su.width <= du.width:
                return a
            return self.wrap_signed(a, du.width)
        return a

    def wrap_signed(self, a: E, width: int) -> E:
        h = 1 << (width - 1)
        return expr("(({a} + {h}) & {m}) - {h}", a=a, h=h, m=mask_of(width))

    def _x_UnaryExpr(self, e: ast.UnaryExpr, sc: Scope) -> E:
        a = self.scalar(e.operand, sc)
        width, signed = scalar_info(e.type)
        op = e.op
        if op == "!":
            return expr("not {a}", a=a)
        if op == "+":
            return a
        if op == "~":
            if signed or not width:
                return expr("~{a}", a=a)
            return expr("{a} ^ {m}", a=a, m=mask_of(width))
        if op == "-":
            if not width:
                return expr("-{a}", a=a)
            if signed:
                return self.wrap_signed(expr("-{a}", a=a), width)
            return expr("(-{a}) & {m}", a=a, m=mask_of(width))
        raise PipelineError(e.loc, f"pipeline: unsupported unary operator {op}")

    def _x_ConditionalExpr(self, e: ast.ConditionalExpr, sc: Scope) -> E:
        c = self.scalar(e.cond, sc)
        a, b = self.scalar(e.if_true, sc), self.scalar(e.if_false, sc)
        if c.is_const:
            return a if c.val else b
        return expr("{a} if {c} else {b}", a=a, b=b, c=c)

    def _x_BinaryExpr(self, e: ast.BinaryExpr, sc: Scope) -> E:
        op = e.op
        if op in ("==", "!=") and is_aggregate(e.left.type):
            return self._agg_equal(e, sc)
        a, b = self.scalar(e.left, sc), self.scalar(e.right, sc)
        if op == "&&":
            if a.is_const:
                return b if a.val else E.const(False)
            return expr("{a} and {b}", a=a, b=b)
        if op == "||":
            if a.is_const:
                return E.const(True) if a.val else b
            return expr("{a} or {b}", a=a, b=b)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return expr("{a} " + op + " {b}", a=a, b=b)
        width, signed = scalar_info(e.type)
        if op == "++":
            return self._concat(a, b, e)
        return self.arith(op, a, b, width, signed, e.loc)

    def arith(self, op: str, a: E, b: E, width: int, signed: bool, loc: Any = None) -> E:
        """``a op b`` in ``bit<width>``/``int<width>`` (width 0: unbounded ``int``)."""
        m = mask_of(width) if width else 0
        if op in ("&", "|", "^"):
            return expr("{a} " + op + " {b}", a=a, b=b)
        if op == ">>":
            if b.is_const and not signed and width and b.val >= width:
                return E.const(0)
            return expr("{a} >> {b}", a=a, b=b)
        if op == "/":
            return expr("_div({a}, {b})", a=a, b=b)
        if op == "%":
            return expr("_mod({a}, {b})", a=a, b=b)
        if op in ("|+|", "|-|"):
            py = "+" if op == "|+|" else "-"
            if signed:
                h = 1 << (width - 1)
                return expr("min(max({a} " + py + " {b}, {lo}), {hi})", a=a, b=b, lo=-h, hi=h - 1)
            if op == "|+|":
                return expr("min({a} + {b}, {m})", a=a, b=b, m=m)
            return expr("max({a} - {b}, 0)", a=a, b=b)
        if op == "<<":
            if width and b.is_const and b.val >= width:
                return E.const(0)
            if width and not b.is_const:
                b = expr("{b} if {b} < {w} else {w}", b=b, w=width) if b.kind == "s" else \
                    expr("min({b}, {w})", b=b, w=width)
        if op not in ("+", "-", "*", "<<"):
            raise PipelineError(loc, f"pipeline: unsupported operator {op}")
        if not width:
            return expr("{a} " + op + " {b}", a=a, b=b)
        if signed:
            return self.wrap_signed(expr("{a} " + op + " {b}", a=a, b=b), width)
        return expr("({a} " + op + " {b}) & {m}", a=a, b=b, m=m)

    def _concat(self, a: E, b: E, e: ast.BinaryExpr) -> E:
        wl, sl = scalar_info(e.left.type)
        wr, sr = scalar_info(e.right.type)
        if sl:
            a = expr("{a} & {m}", a=a, m=mask_of(wl))
        if sr:
            b = expr("{b} & {m}", b=b, m=mask_of(wr))
        out = expr("({a} << {w}) | {b}", a=a, b=b, w=wr)
        width, signed = scalar_info(e.type)
        return self.wrap_signed(out, width) if signed else out

    def _agg_equal(self, e: ast.BinaryExpr, sc: Scope) -> E:
        fa = self.agg(e.left, sc, e.left.type)
        fb = self.agg(e.right, sc, e.left.type)
        segs = header_segments(e.left.type)
        nexts = next_index_offsets(e.left.type)

        def norm(vals: list) -> list:
            for off, n in segs:
                if not vals[off]:
                    vals[off:off + n] = [0] * n
            for off in nexts:
                vals[off] = 0
            return vals

        if e.op == "==":
            return E.func(lambda p: norm(fa(p)) == norm(fb(p)))
        return E.func(lambda p: norm(fa(p)) != norm(fb(p)))

    def _x_CallExpr(self, e: ast.CallExpr, sc: Scope) -> E:
        return self.call_value(e, sc)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ aggregates

    def agg(self, e: ast.Expression, sc: Scope, t: T.Type | None = None) -> Fn:
        """Compile an aggregate-valued expression to ``f(phv) -> list`` (layout order of
        ``t``, default ``e.type``)."""
        t = t if t is not None else e.type
        if isinstance(e, ast.ListExpr | ast.StructExpr):
            return self._agg_initializer(e, sc, t)
        if isinstance(e, ast.InvalidHeaderExpr):
            n = flat_size(t)
            return lambda p: [0] * n
        if isinstance(e, ast.ConditionalExpr):
            c = self.scalar(e.cond, sc).fn()
            fa, fb = self.agg(e.if_true, sc, t), self.agg(e.if_false, sc, t)
            return lambda p: fa(p) if c(p) else fb(p)
        if isinstance(e, ast.CallExpr):
            return self.call_agg(e, sc)  # type: ignore[attr-defined]
        if isinstance(e, ast.PathExpr):
            b = sc.find(e.decl) if e.decl is not None else None
            if isinstance(b, Const) and isinstance(b.value, list):
                vals = b.value
                return lambda p: list(vals)
            if b is None and isinstance(e.decl, ast.ConstDecl):
                return self.agg(e.decl.value, sc, t)
        r = self.ref_of(e, sc)
        if r is not None:
            return self.read_agg_ref(r, e.loc)
        raise PipelineError(e.loc, f"pipeline: unsupported aggregate expression {type(e).__name__}")

    def _agg_initializer(self, e: ast.ListExpr | ast.StructExpr, sc: Scope, t: T.Type) -> Fn:
        u = t
        while isinstance(u, T.NewType):
            u = u.base
        if isinstance(u, T.StructLikeType):
            ftypes = list(u.fields)
        elif isinstance(u, T.TupleType):
            ftypes = [(str(i), et) for i, et in enumerate(u.elements)]
        elif isinstance(u, T.HeaderStackType):
            ftypes = [(str(i), u.element) for i in range(u.size)]
        else:
            raise PipelineError(e.loc, f"pipeline: cannot initialise a {t} from a list")
        if isinstance(e, ast.StructExpr):
            by_name = {kv.name: kv.value for kv in e.fields}
            values = [by_name.get(n) for n, _ in ftypes]
        else:
            values = list(e.elements)
        if len(values) != len(ftypes) or any(v is None for v in values):
            raise PipelineError(e.loc, f"pipeline: initializer does not match the fields of {t}")
        parts: list[Callable[[list], list]] = []
        for v, (_, ft) in zip(values, ftypes):
            parts.append(self.value_list(v, sc, ft))  # type: ignore[arg-type]
        prefix = [1] if isinstance(u, T.HeaderType) else []
        suffix = [0] if isinstance(u, T.HeaderStackType) else []
        if isinstance(u, T.HeaderUnionType):
            raise PipelineError(e.loc, "pipeline: header unions cannot be initialised from a list")
        parts_t = tuple(parts)

        def build(p: list) -> list:
            out = list(prefix)
            for f in parts_t:
                out += f(p)
            out += suffix
            return out

        return build

    def value_list(self, e: ast.Expression, sc: Scope, t: T.Type) -> Fn:
        """Any expression as ``f(phv) -> list`` of its flattened slots (scalars: 1 value;
        varbit: value and length)."""
        if is_aggregate(t):
            return self.agg(e, sc, t)
        if isinstance(T.underlying(t), T.VarbitType):
            r = self.ref_of(e, sc)
            if isinstance(r, VarbitS):
                a = r.start
                return lambda p: p[a:a + 2]
            raise PipelineError(e.loc, "pipeline: varbit values can only be copied between varbit fields")
        v = self.scalar(e, sc)
        if e.type is not None and t is not None and e.type != t and not isinstance(e.type, T.InfIntType):
            v = self.cast(v, e.type, t, e.loc)
        elif v.is_const:
            v = E.const(self.runtime_const(v.val, t, e.loc))
        f = v.fn()
        return lambda p: [f(p)]


def header_storage(st: Storage | DynRef) -> HeaderS | None:
    rel = st.rel if isinstance(st, DynRef) else st
    return rel if isinstance(rel, HeaderS) else None


def union_storage(st: Storage | DynRef) -> UnionS | None:
    rel = st.rel if isinstance(st, DynRef) else st
    return rel if isinstance(rel, UnionS) else None


def _lookahead_path(e: ast.MemberExpr) -> tuple[ast.CallExpr, list[str]] | None:
    """(the lookahead call, member names) for ``pkt.lookahead<T>().a.b``, else None."""
    path: list[str] = []
    x: ast.Expression = e
    while isinstance(x, ast.MemberExpr):
        path.insert(0, x.member)
        x = x.expr
    if (isinstance(x, ast.CallExpr) and x.call_kind == ast.CallKind.PACKET_METHOD
            and isinstance(x.method, ast.MemberExpr) and x.method.member == "lookahead"):
        return x, path
    return None
