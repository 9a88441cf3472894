"""Compile-time values and constant folding with P4's fixed-width arithmetic.

The checker stores the value of every compile-time constant expression in its
``const_value``: a Python ``int`` for integers (already reduced to the range of the
expression's type: ``0 <= v < 2**w`` for ``bit<w>``, two's complement range for
``int<w>``, unbounded for ``int``) and for members of serializable enums, a ``bool``, a
``str`` for string literals, and a :class:`SymbolicValue` for ``error`` members and
members of plain enums (which have no numeric representation in P4).

Limits (one mechanism for every place a compile-time number can grow): a width of
``bit<W>``/``int<W>``/``varbit<W>`` (and of a literal, a slice, a concatenation) is at most
:data:`MAX_WIDTH` bits, as in p4c; a compile-time ``int`` value is at most
:data:`MAX_INT_BITS` bits, and a constant shift amount at most :data:`MAX_WIDTH`. Going
past one raises :class:`LimitError`, which the checker reports at the expression; so no
input can make constant evaluation allocate without bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.frontend import types as T

MAX_WIDTH = 2048
MAX_INT_BITS = 2 * MAX_WIDTH


class LimitError(ValueError):
    """A compile-time width or value beyond p4switch's limits (see the module docstring)."""


def width_problem(width: int, what: str) -> str | None:
    """Why ``width`` cannot be the width of ``what``, or None when it can."""
    if width > MAX_WIDTH:
        return (f"{what} is {_short(width)} bits; p4switch (like p4c) supports bit strings of "
                f"at most {MAX_WIDTH} bits")
    return None


def bounded(value: object) -> object:
    """``value``, after checking that an integer stays within :data:`MAX_INT_BITS`."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise LimitError(f"the value of this constant expression needs {value.bit_length()} bits; "
                         f"p4switch evaluates compile-time integers of at most {MAX_INT_BITS} bits")
    return value


def _short(n: int) -> str:
    """``n`` for a message; never a conversion of a huge number to thousands of digits."""
    return str(n) if n.bit_length() <= 64 else f"about 2**{n.bit_length() - 1}"


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
    if op in ("<<", ">>") and b > MAX_WIDTH:
        raise LimitError(f"shift amount {_short(b)} is larger than {MAX_WIDTH}, the widest bit string "
                         "p4switch (like p4c) supports")
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
    return None if f is None else bounded(wrap(f(), t))


def fold_unary(op: str, a: object, t: T.Type) -> object | None:
    """The value of ``op a`` with result type ``t``; None when not foldable."""
    if op == "!":
        return not a if isinstance(a, bool) else None
    if not isinstance(a, int) or isinstance(a, bool):
        return None
    if op == "-":
        return bounded(wrap(-a, t))
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
