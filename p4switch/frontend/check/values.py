"""Compile-time values and constant folding with P4's fixed-width arithmetic.

The checker stores the value of every compile-time constant expression in its
``const_value``: a Python ``int`` for integers (already reduced to the range of the
expression's type: ``0 <= v < 2**w`` for ``bit<w>``, two's complement range for
``int<w>``, unbounded for ``int``) and for members of serializable enums, a ``bool``, a
``str`` for string literals, and a :class:`SymbolicValue` for ``error`` members and
members of plain enums (which have no numeric representation in P4).
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.frontend import types as T


@dataclass(frozen=True)
class SymbolicValue:
    """A member of ``error`` or of a non-serializable enum: ``type_name`` is "error" or
    the enum's name."""

    type_name: str
    member: str

    def __str__(self) -> str:
        return f"{self.type_name}.{self.member}"


def fits(value: int, t: T.Type) -> bool:
    """Whether the integer ``value`` is representable in ``t`` (bit<w>/int<w>/int)."""
    if isinstance(t, T.BitType):
        return 0 <= value < (1 << t.width)
    if isinstance(t, T.IntType):
        half = 1 << (t.width - 1) if t.width > 0 else 0
        return -half <= value < half
    return True


def wrap(value: int, t: T.Type) -> int:
    """``value`` reduced modulo 2**w into the range of ``t`` (a cast's semantics)."""
    if isinstance(t, T.BitType):
        return value & ((1 << t.width) - 1)
    if isinstance(t, T.IntType):
        if t.width == 0:
            return 0
        v = value & ((1 << t.width) - 1)
        return v - (1 << t.width) if v >> (t.width - 1) else v
    return value


def _saturate(value: int, t: T.Type) -> int:
    if isinstance(t, T.BitType):
        return min(max(value, 0), (1 << t.width) - 1)
    if isinstance(t, T.IntType):
        half = 1 << (t.width - 1)
        return min(max(value, -half), half - 1)
    return value


def fold_binary(op: str, a: object, b: object, t: T.Type, left_t: T.Type) -> object | None:
    """The value of ``a op b`` with result type ``t`` (``left_t`` is the left operand's
    type, which shifts and concatenation need); None when not foldable."""
    if op in ("&&", "||"):
        return (a and b) if op == "&&" else (a or b)
    if op in ("==", "!="):
        return (a == b) if op == "==" else (a != b)
    if not isinstance(a, int) or not isinstance(b, int) or isinstance(a, bool) or isinstance(b, bool):
        return None
    if op in ("<", "<=", ">", ">="):
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "++":
        rw = T.width_of(t) - T.width_of(left_t)
        return wrap((a << rw) | (b & ((1 << rw) - 1)), t)
    if op in ("|+|", "|-|"):
        return _saturate(a + b if op == "|+|" else a - b, t)
    if op in ("/", "%"):
        if b == 0:
            return None
        return wrap(a // b if op == "/" else a % b, t)
    if op == ">>":
        return wrap(a >> b, t)
    simple = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << b,
        "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
    }
    f = simple.get(op)
    return None if f is None else wrap(f(), t)


def fold_unary(op: str, a: object, t: T.Type) -> object | None:
    """The value of ``op a`` with result type ``t``; None when not foldable."""
    if op == "!":
        return not a if isinstance(a, bool) else None
    if not isinstance(a, int) or isinstance(a, bool):
        return None
    if op == "-":
        return wrap(-a, t)
    if op == "+":
        return a
    if op == "~":
        return wrap(~a, t)
    return None


def fold_cast(value: object, src: T.Type, dst: T.Type) -> object | None:
    """The value of ``(dst) value``; None when the cast does not give a constant."""
    base = T.underlying(dst)
    if isinstance(base, T.BoolType):
        if isinstance(value, bool):
            return value
        return bool(value) if isinstance(value, int) else None
    if isinstance(base, T.BitType | T.IntType):
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return wrap(value, base)
        return None
    if isinstance(base, T.InfIntType) and isinstance(value, int):
        return value
    return value if src == dst else None
