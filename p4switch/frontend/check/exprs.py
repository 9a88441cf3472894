"""Pass 3a: expression typing with the P4_16 rules.

Implicit conversions only turn an ``int`` compile-time constant into a ``bit<w>`` /
``int<w>`` it fits in; everything else needs a cast. Operands of binary operators must
have the same type after that conversion (``++`` and shifts excepted). Compile-time
constants are folded into ``const_value`` as they are typed, so widths, sizes, enum
values and table sizes can use constant expressions.
"""

from __future__ import annotations

from collections.abc import Callable

import p4switch.frontend.check.values as V
from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.core import (
    INVALID_HEADER,
    TYPE_DECLS,
    UNKNOWN,
    Core,
    Ctx,
    InvalidHeaderType,
    describe_decl,
    is_unknown,
)
from p4switch.frontend.errors import SourceLoc

HEADER_METHODS = ("isValid", "setValid", "setInvalid")
SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")
STACK_METHODS = ("push_front", "pop_front")
BIT32 = T.BitType(32)

_ARITH = ("+", "-", "*", "/", "%", "|+|", "|-|")
_COMPARE = ("<", "<=", ">", ">=")


def _block_fits(src: T.Type, target: T.Type) -> bool:
    """A parser/control declaration matches a (non-generic) parser/control type with the
    same parameter directions and types."""
    if not (isinstance(src, T.ParserType | T.ControlType) and type(src) is type(target)):
        return False
    assert isinstance(target, T.BlockType)
    if target.type_params or len(src.params) != len(target.params):
        return False
    return all(a.direction == b.direction and a.type == b.type for a, b in zip(src.params, target.params))


def constant_aggregate(e: ast.Expression) -> bool:
    """A struct/list/tuple initializer whose every element is a compile-time constant (its
    own ``const_value`` stays None: values in ``values.py`` are scalars)."""
    if isinstance(e, ast.ListExpr):
        return all(x.const_value is not None or constant_aggregate(x) for x in e.elements)
    if isinstance(e, ast.StructExpr):
        return all(f.value.const_value is not None or constant_aggregate(f.value) for f in e.fields)
    return False


def _known_at_instantiation(e: ast.Expression) -> bool:
    """An ``int`` expression made of constants and directionless (constructor) parameters:
    its value is known when the block is instantiated, not when it is checked."""
    if e.const_value is not None:
        return True
    if isinstance(e, ast.PathExpr):
        return isinstance(e.decl, ast.Param) and e.decl.direction is None
    if isinstance(e, ast.BinaryExpr):
        return _known_at_instantiation(e.left) and _known_at_instantiation(e.right)
    if isinstance(e, ast.UnaryExpr):
        return _known_at_instantiation(e.operand)
    return False


def _serializable(t: T.Type) -> bool:
    return isinstance(t, T.EnumType) and t.underlying is not None


def _fixed(t: T.Type) -> bool:
    return isinstance(t, T.BitType | T.IntType)


def builtin_method(name: str, owner: T.Type, params: tuple[T.Parameter, ...] = (),
                   ret: T.Type = T.VOID) -> T.MethodType:
    return T.MethodType(name, None, params, ret, (), owner)


class ExprChecker(Core):
    # ------------------------------------------------------------------ entry points

    def check_expr(self, e: ast.Expression, ctx: Ctx, expected: T.Type | None = None,
                   at: SourceLoc | None = None, context: str = "") -> T.Type:
        """Type ``e`` (setting ``e.type``/``e.const_value``), then convert it to ``expected``;
        a failed conversion is reported at ``at`` (default: ``e``), its message prefixed
        with ``context``."""
        handler = _HANDLERS.get(type(e))
        if handler is None:
            self.error(e.loc, f"unsupported expression {type(e).__name__}")
            t: T.Type = UNKNOWN
        else:
            t = handler(self, e, ctx, expected)
        e.type = t
        if expected is not None and not is_unknown(t):
            self.coerce(e, expected, at, context)
        return e.type

    def const_int(self, e: ast.Expression, ctx: Ctx, what: str) -> int | None:
        """The value of an integer compile-time constant, or None (error reported)."""
        t = self.check_expr(e, ctx)
        v = e.const_value
        if isinstance(v, int) and not isinstance(v, bool) and T.is_integer(T.underlying(t)):
            return v
        if not is_unknown(t):
            self.error(e.loc, f"{what} must be a compile-time constant integer")
        return None

    def coerce(self, e: ast.Expression, target: T.Type, at: SourceLoc | None = None,
               context: str = "") -> bool:
        """Convert ``e`` (already typed) to ``target`` where P4 converts implicitly."""
        loc = at or e.loc
        src = e.type
        if is_unknown(src, target) or src == target:
            return True
        if isinstance(target, T.TypeVar | T.DontCareType):
            return True
        if isinstance(src, T.InfIntType) and _fixed(target):
            v = e.const_value
            if not isinstance(v, int) and _known_at_instantiation(e):
                e.type = target  # built from constructor parameters: a constant once instantiated
                return True
            if not isinstance(v, int):
                self.error(loc, f"{context}an int value must be a compile-time constant to convert to {target}")
                return False
            if not V.fits(v, target):
                # p4c warns and keeps the value modulo 2**W (a negative value in a bit<W>
                # context, a too-large mask): so do we, and const_value stays in range.
                why = "negative value with unsigned type" if v < 0 and isinstance(target, T.BitType) \
                    else "value does not fit"
                self.diag.warning(loc, f"{context}{why}: {v} becomes {V.wrap(v, target)} in {target}")
                e.const_value = V.wrap(v, target)
            e.type = target
            return True
        if _block_fits(src, target):
            return True  # a parser/control instance for a prototype-typed parameter: it keeps its type
        if _serializable(src) and src.underlying == target:
            # a serializable enum converts implicitly to its underlying type (as in p4c)
            e.type = target
            return True
        if isinstance(e, ast.ListExpr) and self._list_target(target, len(e.elements)):
            return self._init_list(e, target)
        if isinstance(e, ast.StructExpr) and isinstance(target, T.StructType | T.HeaderType):
            return self._init_struct(e, target)
        if isinstance(src, InvalidHeaderType) and T.is_header_like(target):
            e.type = target
            return True
        if isinstance(e, ast.ConditionalExpr) and isinstance(src, T.InfIntType):
            ok = self.coerce(e.if_true, target, at, context) and self.coerce(e.if_false, target, at, context)
            if ok:
                e.type = target
            return ok
        self.error(loc, context + self.mismatch_message(target, src, expected=True))
        return False

    def mismatch_message(self, a: T.Type, b: T.Type, expected: bool = False) -> str:
        if _fixed(a) and _fixed(b):
            if type(a) is type(b):
                return f"width mismatch: {a} and {b} (use a cast)"
            return f"signedness mismatch: {a} and {b} (use a cast)"
        if expected:
            return f"type mismatch: expected {a}, got {b}"
        return f"type mismatch: {a} and {b}"

    # ------------------------------------------------------------------ literals, names

    def _int(self, e: ast.IntLiteral, ctx: Ctx, expected: T.Type | None) -> T.Type:
        if e.width is None:
            e.const_value = e.value
            return T.INFINT
        problem = V.width_problem(e.width, "the width of this literal")
        if problem is not None:
            self.error(e.loc, problem)
            return UNKNOWN
        t: T.Type = T.IntType(e.width) if e.signed else T.BitType(e.width)
        if e.signed and e.width < 1:
            self.error(e.loc, "a signed literal needs a width of at least 1")
            return UNKNOWN
        if not V.fits(e.value, t):
            self.diag.warning(e.loc, f"value {e.value} does not fit in {t}; it is truncated")
        e.const_value = V.wrap(e.value, t)
        return t

    def _bool(self, e: ast.BoolLiteral, ctx: Ctx, expected: T.Type | None) -> T.Type:
        e.const_value = e.value
        return T.BOOL

    def _string(self, e: ast.StringLiteral, ctx: Ctx, expected: T.Type | None) -> T.Type:
        e.const_value = e.value
        return T.STRING

    def _path(self, e: ast.PathExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        found = self.lookup(e.name, ctx, e.global_scope)
        if not found.decls:
            self.report_unknown(e.name, e.loc, found)
            return UNKNOWN
        d = found.decls[0]
        e.decl = d
        return self.value_of_decl(e, d)

    def value_of_decl(self, e: ast.Expression, d: ast.Node) -> T.Type:
        """The type of a name that denotes ``d`` (and its constant value, if any)."""
        if isinstance(d, ast.ConstDecl):
            self.check_const_decl(d)
            e.const_value = d.value.const_value
            return self.decl_type(d)
        if isinstance(d, ast.IdDecl):
            e.const_value = V.SymbolicValue("match_kind", d.name)
            return T.MATCH_KIND
        if isinstance(d, TYPE_DECLS):
            return T.TypeOfType(d.name, d, self.decl_type(d))
        return self.decl_type(d)

    def check_const_decl(self, d: ast.ConstDecl, ctx: Ctx | None = None) -> None:
        if d in self.const_done:
            return
        self.const_done.add(d)
        ctx = ctx or self.decl_ctx.get(d) or Ctx(self.global_scope)
        t = self.decl_type(d)
        self.check_expr(d.value, ctx, t)
        if d.value.const_value is None and not is_unknown(d.value.type) and not constant_aggregate(d.value):
            self.error(d.value.loc, f"value of constant '{d.name}' must be a compile-time constant")

    # ------------------------------------------------------------------ members

    def _member(self, e: ast.MemberExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        base = self.check_expr(e.expr, ctx)
        if is_unknown(base):
            return UNKNOWN
        if isinstance(base, T.TypeOfType):
            return self.type_member(e, base.type)
        return self.value_member(e, base, ctx)

    def _type_member_expr(self, e: ast.TypeMemberExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        t = self.resolve(e.type_ref, ctx)
        if is_unknown(t):
            return UNKNOWN
        return self.type_member(e, t)

    def type_member(self, e: ast.MemberExpr | ast.TypeMemberExpr, t: T.Type) -> T.Type:
        m = e.member
        if isinstance(t, T.ErrorType):
            d = self.error_members.get(m)
            if d is None:
                self.error(e.loc, f"unknown error 'error.{m}' (not declared in any error {{...}})")
                return UNKNOWN
            e.decl = d
            e.const_value = V.SymbolicValue("error", m)
            return T.ERROR
        if isinstance(t, T.EnumType):
            if m not in t.members:
                self.error(e.loc, f"enum '{t.name}' has no member '{m}'")
                return UNKNOWN
            e.decl = next(x for x in t.decl.members if x.name == m)
            v = t.value_of(m)
            e.const_value = v if t.underlying is not None else V.SymbolicValue(t.name, m)
            return t
        self.error(e.loc, f"type {t} has no member '{m}'")
        return UNKNOWN

    def value_member(self, e: ast.MemberExpr, base: T.Type, ctx: Ctx, called: bool = False) -> T.Type:
        m = e.member
        if isinstance(base, T.StructLikeType):
            ft = base.field_type(m)
            if ft is not None:
                e.decl = next((f for f in getattr(base.decl, "fields", ()) if f.name == m), None)
                return ft
            if m in HEADER_METHODS and T.is_header_like(base):
                if isinstance(base, T.HeaderUnionType) and m != "isValid":
                    self.error(e.loc, f"header union '{base}' has no method '{m}'")
                    return UNKNOWN
                return builtin_method(m, base, ret=T.BOOL if m == "isValid" else T.VOID)
            if m in SIZE_METHODS:
                return builtin_method(m, base, ret=T.INFINT)
            kind = {T.HeaderType: "header", T.HeaderUnionType: "header union"}.get(type(base), "struct")
            what = "field or method" if called else "field"
            self.error(e.loc, f"{kind} '{base}' has no {what} '{m}'")
            return UNKNOWN
        if isinstance(base, T.HeaderStackType):
            return self._stack_member(e, base, ctx)
        if isinstance(base, T.ExternType):
            return self._extern_member(e, base)
        if isinstance(base, T.TableType) and m == "apply":
            return builtin_method("apply", base, ret=self.apply_result(base.decl))
        if isinstance(base, T.TableApplyResultType):
            if m in ("hit", "miss"):
                return T.BOOL
            if m == "action_run":
                return base.action_run or UNKNOWN
        if isinstance(base, T.ParserType | T.ControlType) and m == "apply":
            return builtin_method("apply", base, base.params)
        self.error(e.loc, f"{self._what(base)} has no member '{m}'")
        return UNKNOWN

    def _what(self, t: T.Type) -> str:
        if isinstance(t, T.TableType):
            return f"table '{t.name}'"
        if isinstance(t, T.ParserType | T.ControlType):
            return f"instance of {t.name}"
        return f"type {t}"

    def _stack_member(self, e: ast.MemberExpr, base: T.HeaderStackType, ctx: Ctx) -> T.Type:
        m = e.member
        if m in ("next", "last", "lastIndex") and not ctx.in_parser:
            # as in p4c: these follow the parser's extraction cursor
            self.error(e.loc, f"'.{m}' of a header stack can only be used in a parser")
            return UNKNOWN
        if m in ("next", "last"):
            return base.element
        if m in ("lastIndex", "nextIndex"):
            return BIT32
        if m == "size":
            e.const_value = base.size
            return BIT32
        if m in STACK_METHODS:
            return builtin_method(m, base, (T.Parameter("count", "in", T.INFINT),))
        if m in SIZE_METHODS:
            return builtin_method(m, base, ret=T.INFINT)
        self.error(e.loc, f"header stack {base} has no member '{m}'")
        return UNKNOWN

    def _extern_member(self, e: ast.MemberExpr, base: T.ExternType) -> T.Type:
        methods = [x for x in base.decl.methods if x.name == e.member and not x.is_constructor]
        if not methods:
            self.error(e.loc, f"extern '{base.name}' has no method '{e.member}'")
            return UNKNOWN
        e.decl = methods[0]
        return self.decl_type(methods[0])

    def apply_result(self, table: ast.TableDecl) -> T.Type:
        fqn = self.fqn_for_message(table)
        names = tuple(self.action_label(d) for _, d in self.table_actions.get(table, ()))
        run = T.ActionEnumType(fqn, table, names)
        return T.TableApplyResultType(fqn, table, run)

    def action_label(self, d: ast.ActionDecl) -> str:
        return d.name

    # ------------------------------------------------------------------ index, slice, cast

    def _index(self, e: ast.IndexExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        base = self.check_expr(e.expr, ctx)
        it = self.check_expr(e.index, ctx)
        if is_unknown(base, it):
            return UNKNOWN
        v = e.index.const_value
        if isinstance(base, T.HeaderStackType):
            if not T.is_integer(T.underlying(it)):
                self.error(e.index.loc, f"header stack index must be an integer, got {it}")
                return UNKNOWN
            if isinstance(v, int) and not 0 <= v < base.size:
                self.error(e.index.loc, f"index {v} is out of range for header stack {base}")
                return UNKNOWN
            if isinstance(it, T.InfIntType):
                e.index.type = BIT32
            return base.element
        if isinstance(base, T.TupleType):
            if not isinstance(v, int) or not 0 <= v < len(base.elements):
                self.error(e.index.loc, f"tuple index must be a constant in [0, {len(base.elements)})")
                return UNKNOWN
            return base.elements[v]
        self.error(e.loc, f"cannot index a value of type {base}")
        return UNKNOWN

    def _slice(self, e: ast.SliceExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        base = self.check_expr(e.expr, ctx)
        hi = self.const_int(e.hi, ctx, "slice bound")
        lo = self.const_int(e.lo, ctx, "slice bound")
        if is_unknown(base) or hi is None or lo is None:
            return UNKNOWN
        b = T.underlying(base)
        if not T.is_integer(b):
            self.error(e.expr.loc, f"cannot slice a value of type {base}")
            return UNKNOWN
        width = b.width if _fixed(b) else None
        if lo < 0 or hi < lo or (width is not None and hi >= width):
            self.error(e.loc, f"slice [{hi}:{lo}] is out of range for {base}")
            return UNKNOWN
        problem = V.width_problem(hi - lo + 1, "this slice")
        if problem is not None:
            self.error(e.loc, problem)
            return UNKNOWN
        v = e.expr.const_value
        if isinstance(v, int) and not isinstance(v, bool):
            e.const_value = (v >> lo) & ((1 << (hi - lo + 1)) - 1)
        return T.BitType(hi - lo + 1)

    def _cast(self, e: ast.CastExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        target = self.resolve(e.type_ref, ctx)
        if isinstance(e.expr, ast.ListExpr | ast.StructExpr | ast.InvalidHeaderExpr):
            self.check_expr(e.expr, ctx, target)
            return target
        src = self.check_expr(e.expr, ctx)
        if is_unknown(src, target):
            return UNKNOWN
        if not self.cast_ok(src, target, e.expr.const_value):
            self.error(e.loc, f"cannot cast {src} to {target}")
            return UNKNOWN
        if e.expr.const_value is not None:
            e.const_value = V.fold_cast(e.expr.const_value, src, target)
        return target

    def cast_ok(self, s: T.Type, d: T.Type, value: object = None) -> bool:
        if s == d:
            return True
        if isinstance(s, T.NewType):
            return self.cast_ok(s.base, d, value)
        if isinstance(d, T.NewType):
            return self.cast_ok(s, d.base, value)
        if isinstance(s, T.EnumType) and s.underlying is not None:
            return self.cast_ok(s.underlying, d, value)
        if isinstance(d, T.EnumType) and d.underlying is not None:
            return self.cast_ok(s, d.underlying, value)
        if isinstance(s, T.InfIntType):
            return _fixed(d) or (isinstance(d, T.BoolType) and value in (0, 1))
        if isinstance(s, T.BitType):
            return (isinstance(d, T.BitType) or (isinstance(d, T.IntType) and d.width == s.width)
                    or (isinstance(d, T.BoolType) and s.width == 1))
        if isinstance(s, T.IntType):
            return isinstance(d, T.IntType) or (isinstance(d, T.BitType) and d.width == s.width)
        if isinstance(s, T.BoolType):
            return isinstance(d, T.BitType) and d.width == 1
        return False

    # ------------------------------------------------------------------ operators

    def _unary(self, e: ast.UnaryExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        t = self.check_expr(e.operand, ctx)
        if is_unknown(t):
            return UNKNOWN
        op = e.op
        if op == "!":
            if not isinstance(t, T.BoolType):
                self.error(e.operand.loc, f"'!' needs a bool operand, got {t}")
                return UNKNOWN
        elif op == "~":
            if not _fixed(t):
                hint = " (give the value a width, e.g. 8w5)" if isinstance(t, T.InfIntType) else ""
                self.error(e.operand.loc, f"'~' needs a bit<W> or int<W> operand, got {t}{hint}")
                return UNKNOWN
        elif not T.is_integer(t):
            self.error(e.operand.loc, f"unary '{op}' needs an integer operand, got {t}")
            return UNKNOWN
        if e.operand.const_value is not None and not self.fold(e, V.fold_unary, op, e.operand.const_value, t):
            return UNKNOWN
        return t

    def _binary(self, e: ast.BinaryExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        op = e.op
        if op in ("&&", "||"):
            return self._logical(e, ctx)
        lt = self.check_expr(e.left, ctx)
        rt = self.check_expr(e.right, ctx)
        if is_unknown(lt, rt):
            return UNKNOWN
        if op == "++":
            t = self._concat(e, lt, rt)
        elif op in ("<<", ">>"):
            t = self._shift(e, lt, rt)
        else:
            if op in ("/", "%") and not self._non_negative_operands(e, lt, rt):
                return UNKNOWN
            t = self._same_operands(e, lt, rt)
            if t is not None:
                t = self._check_operator(e, t)
        if t is None:
            return UNKNOWN
        a, b = e.left.const_value, e.right.const_value
        if a is not None and b is not None and not self.fold(e, V.fold_binary, op, a, b, t, e.left.type):
            return UNKNOWN
        if op in ("/", "%") and e.const_value is None and not _strength_reduced(a, b):
            # p4c's BMv2 (and p4test) mid end: StrengthReduction turns x / 2^k into a shift and
            # x % 2^k into a mask, then CompileTimeOperations refuses any '/' or '%' left
            self.error(e.loc, f"'{op}' could not be evaluated at compile time (BMv2 has no run-time "
                              f"division; only by a constant power of two, which becomes a shift or mask)")
            return UNKNOWN
        return t

    def _non_negative_operands(self, e: ast.BinaryExpr, lt: T.Type, rt: T.Type) -> bool:
        """p4c refuses '/' and '%' with a negative constant operand before any conversion:
        ``a / -1`` on bit<8> is an error, not a division by 255."""
        for side, t in ((e.left, lt), (e.right, rt)):
            v = side.const_value
            if isinstance(t, T.InfIntType) and isinstance(v, int) and not isinstance(v, bool) and v < 0:
                self.error(e.loc, f"'{e.op}' is not defined on negative numbers ({v})")
                return False
        return True

    def fold(self, e: ast.Expression, fn: Callable[..., object], *args: object) -> bool:
        """Set ``e.const_value`` to ``fn(*args)``; a value beyond the limits of ``values.py``
        is reported at ``e`` (False: the caller makes ``e`` unknown, so no error follows)."""
        try:
            e.const_value = fn(*args)
        except V.LimitError as exc:
            self.error(e.loc, str(exc))
            e.const_value = None
            return False
        return True

    def _logical(self, e: ast.BinaryExpr, ctx: Ctx) -> T.Type:
        ok = True
        for side in (e.left, e.right):
            t = self.check_expr(side, ctx)
            if not isinstance(t, T.BoolType) and not is_unknown(t):
                self.error(side.loc, f"'{e.op}' needs bool operands, got {t}")
                ok = False
        if not ok or is_unknown(e.left.type, e.right.type):
            return UNKNOWN
        a, b = e.left.const_value, e.right.const_value
        if isinstance(a, bool) and (isinstance(b, bool) or (a is False and e.op == "&&")
                                    or (a is True and e.op == "||")):
            e.const_value = V.fold_binary(e.op, a, b, T.BOOL, T.BOOL)
        return T.BOOL

    def _concat(self, e: ast.BinaryExpr, lt: T.Type, rt: T.Type) -> T.Type | None:
        for side, t in ((e.left, lt), (e.right, rt)):
            if not _fixed(t):
                hint = " (cast the int value to a width)" if isinstance(t, T.InfIntType) else ""
                self.error(side.loc, f"'++' needs bit<W> or int<W> operands, got {t}{hint}")
                return None
        w = lt.width + rt.width  # type: ignore[attr-defined]
        problem = V.width_problem(w, "the concatenation")
        if problem is not None:
            self.error(e.loc, problem)
            return None
        return T.IntType(w) if isinstance(lt, T.IntType) else T.BitType(w)

    def _shift(self, e: ast.BinaryExpr, lt: T.Type, rt: T.Type) -> T.Type | None:
        if not T.is_integer(lt):
            self.error(e.left.loc, f"'{e.op}' needs an integer left operand, got {lt}")
            return None
        if isinstance(rt, T.IntType) or not T.is_integer(rt):
            self.error(e.right.loc, f"shift amount must be unsigned (bit<W> or a non-negative constant), got {rt}")
            return None
        amount = e.right.const_value
        if isinstance(rt, T.InfIntType) and isinstance(amount, int) and amount < 0:
            self.error(e.right.loc, f"shift amount must not be negative, got {amount}")
            return None
        if isinstance(lt, T.InfIntType) and e.right.const_value is None:
            self.error(e.left.loc, "shifting an int value needs a constant shift amount; give the value a width")
            return None
        return lt

    def _same_operands(self, e: ast.BinaryExpr, lt: T.Type, rt: T.Type) -> T.Type | None:
        if lt == rt:
            return lt
        if _serializable(lt) and lt.underlying == rt:
            e.left.type = rt  # a serializable enum operand converts to its underlying type
            return rt
        if _serializable(rt) and rt.underlying == lt:
            e.right.type = lt
            return lt
        if isinstance(lt, T.InfIntType) and _fixed(rt):
            return rt if self.coerce(e.left, rt) else None
        if isinstance(rt, T.InfIntType) and _fixed(lt):
            return lt if self.coerce(e.right, lt) else None
        if isinstance(lt, InvalidHeaderType) and T.is_header_like(rt):
            e.left.type = rt
            return rt
        if isinstance(rt, InvalidHeaderType) and T.is_header_like(lt):
            e.right.type = lt
            return lt
        self.error(e.loc, self.mismatch_message(lt, rt))
        return None

    def _check_operator(self, e: ast.BinaryExpr, t: T.Type) -> T.Type | None:
        op = e.op
        if op in ("==", "!="):
            if isinstance(t, T.ExternType | T.BlockType | T.TableType | T.VoidType | T.TypeOfType
                          | T.TableApplyResultType | T.ActionEnumType | T.TypeVar):
                self.error(e.loc, f"values of type {t} cannot be compared")
                return None
            return T.BOOL
        if not T.is_integer(t):
            self.error(e.loc, f"'{op}' needs integer operands, got {t}")
            return None
        if op in _COMPARE:
            return T.BOOL
        if op in ("|+|", "|-|") and isinstance(t, T.InfIntType):
            self.error(e.loc, f"'{op}' needs operands of a fixed width, got int")
            return None
        if op in ("/", "%"):
            return self._division(e, t)
        return t

    def _division(self, e: ast.BinaryExpr, t: T.Type) -> T.Type | None:
        if isinstance(t, T.IntType):
            self.error(e.loc, f"'{e.op}' is not defined on signed int<W> values")
            return None
        b = e.right.const_value
        if b == 0:
            self.error(e.right.loc, "division by zero")
            return None
        a = e.left.const_value
        if isinstance(t, T.InfIntType) and ((isinstance(a, int) and a < 0) or (isinstance(b, int) and b < 0)):
            self.error(e.loc, f"'{e.op}' of negative int values is not defined")
            return None
        if isinstance(b, int) and b < 0:
            self.error(e.right.loc, f"'{e.op}' by a negative value is not defined")
            return None
        return t

    def _conditional(self, e: ast.ConditionalExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        ct = self.check_expr(e.cond, ctx)
        if not isinstance(ct, T.BoolType) and not is_unknown(ct):
            self.error(e.cond.loc, f"condition of '?:' must be bool, got {ct}")
        want = expected if expected is not None and not isinstance(expected, T.TypeVar) else None
        before = len(self.diag.errors)
        at = self.check_expr(e.if_true, ctx, want)
        bt = self.check_expr(e.if_false, ctx, want)
        if is_unknown(ct, at, bt) or len(self.diag.errors) > before:
            return UNKNOWN
        cast = ast.BinaryExpr(loc=e.loc, op="?:", left=e.if_true, right=e.if_false)
        t = self._same_operands(cast, at, bt)
        if t is None:
            return UNKNOWN
        c = e.cond.const_value
        if isinstance(c, bool):
            e.const_value = (e.if_true if c else e.if_false).const_value
        elif isinstance(t, T.InfIntType):
            self.error(e.loc, "the branches of '?:' need a width when the condition is not constant "
                              "(cast them, e.g. (bit<8>)1)")
            return UNKNOWN
        return t

    # ------------------------------------------------------------------ aggregates

    def _list_target(self, t: T.Type, n: int) -> bool:
        return isinstance(t, T.StructType | T.HeaderType | T.TupleType | T.HeaderStackType | T.ListType)

    def _element_types(self, t: T.Type) -> list[T.Type] | None:
        if isinstance(t, T.StructType | T.HeaderType):
            return [ft for _, ft in t.fields]
        if isinstance(t, T.TupleType):
            return list(t.elements)
        if isinstance(t, T.HeaderStackType):
            return [t.element] * t.size
        return None

    def _list(self, e: ast.ListExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        if expected is not None and self._list_target(expected, len(e.elements)):
            if isinstance(expected, T.ListType):
                for x in e.elements:
                    self.check_expr(x, ctx, expected.element)
                return expected
            want = self._element_types(expected) or []
            if len(want) != len(e.elements):
                self.error(e.loc, f"initializer for {expected} has {len(e.elements)} elements, "
                                  f"but {expected} needs {len(want)}")
                for x in e.elements:
                    self.check_expr(x, ctx)
                return UNKNOWN
            for x, wt in zip(e.elements, want):
                self.check_expr(x, ctx, wt)
            return expected
        return T.TupleType(tuple(self.check_expr(x, ctx) for x in e.elements))

    def _init_list(self, e: ast.ListExpr, target: T.Type) -> bool:
        if isinstance(target, T.ListType):
            ok = all(self.coerce(x, target.element) for x in e.elements)
        else:
            want = self._element_types(target) or []
            if len(want) != len(e.elements):
                self.error(e.loc, f"initializer for {target} has {len(e.elements)} elements, "
                                  f"but {target} needs {len(want)}")
                return False
            ok = all([self.coerce(x, wt) for x, wt in zip(e.elements, want)])
        if ok:
            e.type = target
        return ok

    def _struct_expr(self, e: ast.StructExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        if e.type_ref is not None:
            expected = self.resolve(e.type_ref, ctx)
        if isinstance(expected, T.StructType | T.HeaderType):
            return expected if self._struct_fields(e, expected, ctx) else UNKNOWN
        fields = []
        seen: set[str] = set()
        for kv in e.fields:
            if kv.name in seen:
                self.error(kv.loc, f"duplicate field '{kv.name}' in structure expression")
            seen.add(kv.name)
            fields.append((kv.name, self.check_expr(kv.value, ctx)))
        return T.StructType("", None, tuple(fields))

    def _struct_fields(self, e: ast.StructExpr, target: T.StructLikeType, ctx: Ctx | None) -> bool:
        ok = True
        given: set[str] = set()
        for kv in e.fields:
            ft = target.field_type(kv.name)
            if ft is None or kv.name in given:
                msg = (f"duplicate field '{kv.name}'" if kv.name in given
                       else f"{target} has no field '{kv.name}'")
                self.error(kv.loc, msg)
                ok = False
                continue
            given.add(kv.name)
            if ctx is not None:
                self.check_expr(kv.value, ctx, ft)
            else:
                ok = self.coerce(kv.value, ft) and ok
        missing = [n for n in target.field_names() if n not in given]
        if missing:
            self.error(e.loc, f"initializer for {target} is missing field(s) {', '.join(missing)}")
            ok = False
        return ok

    def _init_struct(self, e: ast.StructExpr, target: T.StructLikeType) -> bool:
        ok = self._struct_fields(e, target, None)
        if ok:
            e.type = target
        return ok

    def _invalid_header(self, e: ast.InvalidHeaderExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        if expected is not None and T.is_header_like(expected):
            return expected
        return INVALID_HEADER

    def _keyset_only(self, e: ast.Expression, ctx: Ctx, expected: T.Type | None) -> T.Type:
        what = {ast.MaskExpr: "'&&&'", ast.RangeExpr: "'..'", ast.DefaultExpr: "'default'"}[type(e)]
        self.error(e.loc, f"{what} is only allowed in a select case or a table entry")
        return UNKNOWN

    def _dont_care(self, e: ast.DontCareExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        return expected if expected is not None else T.DONTCARE

    def _select(self, e: ast.SelectExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        self.error(e.loc, "select is only allowed as the target of a transition")
        return UNKNOWN

    def _this(self, e: ast.ThisExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        self.error(e.loc, "'this' is not supported by this compiler")
        return UNKNOWN

    def _call(self, e: ast.CallExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        return self.check_call(e, ctx, expected)

    def _ctor_call(self, e: ast.ConstructorCallExpr, ctx: Ctx, expected: T.Type | None) -> T.Type:
        return self.check_constructor_call(e, ctx)

    # ------------------------------------------------------------------ l-values

    def lvalue_problem(self, e: ast.Expression) -> str | None:
        """Why ``e`` cannot be written (a phrase for "cannot assign to ..."), or None."""
        if isinstance(e, ast.PathExpr):
            d = e.decl
            if isinstance(d, ast.VarDecl):
                return None
            if isinstance(d, ast.Param):
                if d.direction in ("out", "inout"):
                    return None
                return f"read-only parameter '{d.name}'"
            if isinstance(d, ast.ConstDecl):
                return f"constant '{d.name}'"
            return None if d is None else describe_decl(d)
        if isinstance(e, ast.MemberExpr):
            bt = e.expr.type
            if isinstance(bt, T.StructLikeType) and bt.field_type(e.member) is not None:
                return self.lvalue_problem(e.expr)
            if isinstance(bt, T.HeaderStackType) and e.member in ("next", "last"):
                return self.lvalue_problem(e.expr)
            return f"'{_render(e)}', which is not an l-value"
        if isinstance(e, ast.IndexExpr | ast.SliceExpr):
            return self.lvalue_problem(e.expr)
        if isinstance(e, ast.DontCareExpr):
            return None
        return "an expression that is not an l-value"


def _render(e: ast.Expression) -> str:
    if isinstance(e, ast.PathExpr):
        return e.name
    if isinstance(e, ast.MemberExpr):
        return f"{_render(e.expr)}.{e.member}"
    return "expression"


_HANDLERS: dict[type, Callable[..., T.Type]] = {
    ast.IntLiteral: ExprChecker._int,
    ast.BoolLiteral: ExprChecker._bool,
    ast.StringLiteral: ExprChecker._string,
    ast.PathExpr: ExprChecker._path,
    ast.MemberExpr: ExprChecker._member,
    ast.TypeMemberExpr: ExprChecker._type_member_expr,
    ast.IndexExpr: ExprChecker._index,
    ast.SliceExpr: ExprChecker._slice,
    ast.CastExpr: ExprChecker._cast,
    ast.UnaryExpr: ExprChecker._unary,
    ast.BinaryExpr: ExprChecker._binary,
    ast.ConditionalExpr: ExprChecker._conditional,
    ast.ListExpr: ExprChecker._list,
    ast.StructExpr: ExprChecker._struct_expr,
    ast.InvalidHeaderExpr: ExprChecker._invalid_header,
    ast.MaskExpr: ExprChecker._keyset_only,
    ast.RangeExpr: ExprChecker._keyset_only,
    ast.DefaultExpr: ExprChecker._keyset_only,
    ast.DontCareExpr: ExprChecker._dont_care,
    ast.SelectExpr: ExprChecker._select,
    ast.ThisExpr: ExprChecker._this,
    ast.CallExpr: ExprChecker._call,
    ast.ConstructorCallExpr: ExprChecker._ctor_call,
}


def _strength_reduced(a: object, b: object) -> bool:
    """p4c rewrites ``x / 2^k``, ``x % 2^k`` and ``0 / x``, ``0 % x`` without a division."""
    if isinstance(b, int) and not isinstance(b, bool) and b > 0 and b & (b - 1) == 0:
        return True
    return isinstance(a, int) and not isinstance(a, bool) and a == 0
