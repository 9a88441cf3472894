"""Compiled values and shape-specialised closure factories.

A compiled scalar expression is an :class:`E`: a compile-time constant (``"c"``), a plain
PHV slot read (``"s"``), or a closure ``f(phv)`` (``"f"``). Operators combine their
operands through :func:`expr`/:func:`stmt`, which render a one-line template for the
operands' *shapes* -- ``p[a]`` for a slot, ``a`` for a constant, ``a(p)`` for a closure --
and build (once per template and shape combination, cached) a factory that returns the
specialised closure. So ``hdr.ipv4.ttl - 1`` becomes the single closure
``lambda p: (p[a] - b) & m`` with ``a``, ``b``, ``m`` bound as cell variables: one Python
call per operator tree level instead of one per AST node, and no per-packet dispatch on
node kinds. This is where the interpreter's speed comes from; everything is still built
once, at load time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Fn = Callable[[list], Any]

_MISSING = object()


class E:
    """A compiled scalar expression (see module docstring)."""

    __slots__ = ("kind", "val")

    def __init__(self, kind: str, val: Any) -> None:
        self.kind = kind
        self.val = val

    @staticmethod
    def const(value: Any) -> E:
        return E("c", value)

    @staticmethod
    def slot(index: int) -> E:
        return E("s", index)

    @staticmethod
    def func(fn: Fn) -> E:
        return E("f", fn)

    @property
    def is_const(self) -> bool:
        return self.kind == "c"

    def fn(self) -> Fn:
        """This expression as a closure ``f(phv)``."""
        if self.kind == "f":
            return self.val
        if self.kind == "s":
            return _slot_reader(self.val)
        return _const_fn(self.val)

    def __repr__(self) -> str:
        return f"E({self.kind}, {self.val!r})"


def _slot_reader(i: int) -> Fn:
    return lambda p: p[i]


def _const_fn(v: Any) -> Fn:
    return lambda p: v


_CODE = {"s": "p[{}]", "c": "{}", "f": "{}(p)"}
_expr_cache: dict[tuple, Callable] = {}
_stmt_cache: dict[tuple, Callable] = {}


def _render(src: str, ops: dict[str, Any]) -> tuple[tuple, list[str], list[Any], str]:
    names = sorted(ops)
    shapes = []
    code = {}
    values = []
    for n in names:
        v = ops[n]
        if isinstance(v, E):
            shapes.append(v.kind)
            code[n] = "(" + _CODE[v.kind].format(n) + ")"
            values.append(v.val)
        else:
            shapes.append("k")
            code[n] = n
            values.append(v)
    return tuple(shapes), names, values, src.format(**code)


def expr(src: str, **ops: Any) -> E:
    """A closure evaluating the template ``src`` (``{name}`` marks an operand).

    Operands that are :class:`E` are rendered by shape; any other value is bound as a
    constant. If every operand is constant and none is callable (a callable operand may
    be impure: a register read, a random draw), the template is evaluated now (folding).
    """
    shapes, names, values, body = _render(src, ops)
    key = (src, tuple(names), shapes)
    fac = _expr_cache.get(key)
    if fac is None:
        fac = eval(f"lambda {', '.join(names) or '_'}: lambda p: {body}", dict(_HELPERS))  # noqa: S307
        _expr_cache[key] = fac
    fn = fac(*values) if names else fac(None)
    if all(s == "c" or (s == "k" and not callable(v)) for s, v in zip(shapes, values)):
        return E.const(fn(None))
    return E.func(fn)


def stmt(src: str, **ops: Any) -> Fn:
    """A statement closure ``f(phv)`` whose body is the (possibly multi-line) template."""
    shapes, names, values, body = _render(src, ops)
    key = (src, tuple(names), shapes)
    fac = _stmt_cache.get(key)
    if fac is None:
        lines = "\n".join("        " + line for line in body.splitlines())
        text = f"def _factory({', '.join(names)}):\n    def _stmt(p):\n{lines}\n    return _stmt\n"
        env = dict(_HELPERS)
        exec(text, env)  # noqa: S102
        fac = env["_factory"]
        _stmt_cache[key] = fac
    return fac(*values)


def seq(fns: list[Fn | None]) -> Fn | None:
    """One closure running ``fns`` in order (None entries are no-ops)."""
    fs = [f for f in fns if f is not None]
    if not fs:
        return None
    if len(fs) == 1:
        return fs[0]
    if len(fs) <= 8:
        ops = {f"f{i}": E.func(f) for i, f in enumerate(fs)}
        return stmt("\n".join(f"{{f{i}}}" for i in range(len(fs))), **ops)
    fs_t = tuple(fs)

    def run(p: list) -> None:
        for f in fs_t:
            f(p)

    return run


def _div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int:
    if b == 0:
        return 0
    return a - _div(a, b) * b


_HELPERS: dict[str, Any] = {"_div": _div, "_mod": _mod, "min": min, "max": max, "bool": bool}
