"""BMv2 JSON expressions and references as typed P4_16 expressions.

Why widths are chosen here: BMv2 evaluates an expression on unbounded integers, and p4c
writes the masks P4's wrap-around needs (``(a + b) & 0xff``) into the JSON itself. The
translation evaluates every arithmetic operator at one width ``W`` no narrower than 64 bits
and than every field it reads, which gives the unbounded result whenever p4c's mask (at most
the field's width) follows; an assignment then cuts to the destination's width, as BMv2 does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import Bmv2JsonError

KEYWORDS = frozenset(["abstract", "action", "apply", "bit", "bool", "const", "control", "default", "else", "entries", "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in", "inout", "int", "key", "list", "match_kind", "out", "package", "packet_in", "packet_out", "parser", "priority", "return", "select", "size", "state", "string", "struct", "switch", "table", "this", "transition", "true", "tuple", "type", "typedef", "value_set", "varbit", "verify", "void", "actions", "hdr", "meta", "standard_metadata", "packet", "start", "accept", "reject", "NoAction"])


def ident(name: str) -> str:
    """A P4 identifier for a JSON name (``userMetadata.x`` -> ``userMetadata_x``)."""
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit() or s in KEYWORDS:
        s = "_" + s
    return s


def hexint(v: Any, path: str) -> int:
    """A JSON ``hexstr`` (``"0x0800"``, ``"-0x1"``) or int as an int."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            pass
    raise Bmv2JsonError(path, f"not a hexstr: {v!r}")


@dataclass(frozen=True)
class Ex:
    """A translated expression: P4 text, ``kind`` (bits, bool or an untyped int) and width."""

    text: str
    kind: str  # "bits" | "bool" | "int" | "error"
    width: int = 0
    value: int = 0
    as_bool: str = ""  # the bool this 0/1 value came from ($valid$, b2d): d2b gives it back


def bits(e: Ex, w: int) -> str:
    """``e`` as a ``bit<w>`` expression."""
    if e.kind == "error":
        raise Bmv2JsonError("", "standard_metadata.parser_error used as a number (P4 cannot cast an error)")
    if e.kind == "int":
        return f"{w}w{e.value % (1 << w)}"
    if e.kind == "bool":
        return f"(({e.text}) ? {w}w1 : {w}w0)"
    return e.text if e.width == w else f"((bit<{w}>){e.text})"


def boolean(e: Ex) -> str:
    """``e`` as a ``bool`` expression."""
    if e.kind == "bool":
        return e.text
    if e.as_bool:
        return e.as_bool
    if e.kind == "int":
        return "true" if e.value else "false"
    return f"({e.text} != {e.width}w0)"


def exact_width(*es: Ex) -> int:
    """The width holding every operand: enough where the operator cannot carry (``&``,
    comparisons)."""
    w = 1
    for e in es:
        if e.kind == "bits":
            w = max(w, e.width)
        elif e.kind == "int":
            w = max(w, e.value.bit_length() if e.value >= 0 else 64)
    return w


def width_of(*es: Ex) -> int:
    """The width the operator evaluates at (see the module's docstring)."""
    w = 64
    for e in es:
        if e.kind == "bits":
            w = max(w, e.width)
        elif e.kind == "int":
            w = max(w, abs(e.value).bit_length() + 1)
    return w


ARITH = {"+", "-", "*", "&", "|", "^", "<<", ">>"}
COMPARE = {"==", "!=", "<", ">", "<=", ">="}


class ExprTranslator:
    """Expressions over a program's references; ``refs`` resolves fields, headers, runtime data."""

    def __init__(self, refs: Any) -> None:
        self.refs = refs

    def expr(self, e: Any, path: str, params: list[tuple[str, int]] | None = None) -> Ex:
        """Translate a typed JSON value (``{"type": ..., "value": ...}``)."""
        if not isinstance(e, dict) or "type" not in e:
            raise Bmv2JsonError(path, f"not a typed value: {str(e)[:60]}")
        t, v = e["type"], e.get("value")
        if t == "expression":
            if isinstance(v, dict) and "type" in v:
                return self.expr(v, path + ".value", params)
            return self.op(v, path + ".value", params)
        if t == "hexstr":
            return Ex("", "int", 0, hexint(v, path + ".value"))
        if t == "bool":
            return Ex("true" if v else "false", "bool")
        if t == "field":
            return self.refs.field(v, path + ".value")
        if t == "stack_field":
            return self.refs.stack_field(v, path + ".value")
        if t == "runtime_data":
            if params is None or not isinstance(v, int) or not 0 <= v < len(params):
                raise Bmv2JsonError(path, f"runtime_data {v!r} outside an action's parameters")
            return Ex(params[v][0], "bits", params[v][1])
        if t == "local":
            if params is None or not isinstance(v, int) or not 0 <= v < len(params):
                raise Bmv2JsonError(path, f"local {v!r} outside an action's parameters")
            return Ex(params[v][0], "bits", params[v][1])
        if t == "lookahead":
            off, w = self.refs.lookahead(v, path)
            return Ex(f"packet.lookahead<bit<{off + w}>>()[{w - 1}:0]", "bits", w)
        raise Bmv2JsonError(path + ".type", f"a value of type {t!r} is not supported here")

    def mod(self, e: Any, w: int, path: str, params: list[tuple[str, int]] | None = None) -> str:
        """``e`` modulo ``2**w`` as a ``bit<w>`` expression: what assigning it to a ``w``-bit
        field keeps. ``+ - * << & | ^ ~`` keep low bits from low bits, so they are computed at
        ``w`` itself (p4c's ``(ttl + 0xff) & 0xff`` becomes one 8-bit add); anything else is
        evaluated whole and cut."""
        v = e.get("value") if isinstance(e, dict) else None
        if isinstance(e, dict) and e.get("type") == "expression" and isinstance(v, dict):
            if "type" in v:
                return self.mod(v, w, path + ".value", params)
            op = v.get("op")
            full = (1 << w) - 1
            if op == "&" and v.get("left") is not None and v.get("right") is not None:
                for keep, other in (("left", "right"), ("right", "left")):
                    c = v[other]
                    if isinstance(c, dict) and c.get("type") == "hexstr" and hexint(c.get("value"), path) & full == full:
                        return self.mod(v[keep], w, f"{path}.value.{keep}", params)  # p4c's mask: no-op here
            if op == "<<" and isinstance(v.get("right"), dict) and v["right"].get("type") == "hexstr" \
                    and v.get("left") is not None:
                k = hexint(v["right"].get("value"), path + ".value.right.value")
                if 0 <= k < w:
                    return f"({self.mod(v['left'], w, path + '.value.left', params)} << {k})"
                if k >= w:
                    return f"{w}w0"
            if op in ("+", "-", "*", "&", "|", "^") and v.get("left") is not None and v.get("right") is not None:
                a = self.mod(v["left"], w, path + ".value.left", params)
                b = self.mod(v["right"], w, path + ".value.right", params)
                return f"({a} {op} {b})"
            if op == "~" and v.get("right") is not None:
                return f"(~{self.mod(v['right'], w, path + '.value.right', params)})"
        return bits(self.expr(e, path, params), w)

    def _error(self, e: Ex, path: str) -> str:
        """``e`` as a value of P4's ``error`` type (``parser_error`` is one in v1model)."""
        if e.kind == "error":
            return e.text
        if e.kind == "int" and e.value in self.refs.errors:
            return f"error.{self.refs.errors[e.value]}"
        raise Bmv2JsonError(path, "parser_error compared with something other than an error code")

    def op(self, v: Any, path: str, params: list[tuple[str, int]] | None) -> Ex:
        """One ``{"op", "left", "right"}`` node."""
        if not isinstance(v, dict) or "op" not in v:
            raise Bmv2JsonError(path, "an expression needs 'op'")
        op = v["op"]

        def sub(side: str) -> Ex:
            if v.get(side) is None:
                raise Bmv2JsonError(path + "." + side, f"operator {op!r} needs its {side} operand")
            return self.expr(v[side], path + "." + side, params)

        if op in ("&", "|", "^"):  # no carry: the operands' width is enough
            a, b = sub("left"), sub("right")
            for x, c in ((a, b), (b, a)):  # p4c's mask over a field already that narrow: the field
                if op == "&" and x.kind == "bits" and c.kind == "int" and c.value >= 0 \
                        and c.value & ((1 << x.width) - 1) == (1 << x.width) - 1:
                    return x
            w = exact_width(a, b)
            return Ex(f"({bits(a, w)} {op} {bits(b, w)})", "bits", w)
        if op in ARITH:
            a, b = sub("left"), sub("right")
            w = width_of(a, b)
            return Ex(f"({bits(a, w)} {op} {bits(b, w)})", "bits", w)
        if op in COMPARE:
            a, b = sub("left"), sub("right")
            if "error" in (a.kind, b.kind):
                return Ex(f"({self._error(a, path)} {op} {self._error(b, path)})", "bool")
            if a.kind == b.kind == "bool" and op in ("==", "!="):
                return Ex(f"({a.text} {op} {b.text})", "bool")
            w = exact_width(a, b)
            return Ex(f"({bits(a, w)} {op} {bits(b, w)})", "bool")
        if op in ("and", "or"):
            a, b = sub("left"), sub("right")
            return Ex(f"({boolean(a)} {'&&' if op == 'and' else '||'} {boolean(b)})", "bool")
        if op == "not":
            return Ex(f"(!{boolean(sub('right'))})", "bool")
        if op == "~":
            a = sub("right")
            w = width_of(a)
            return Ex(f"(~{bits(a, w)})", "bits", w)
        if op == "d2b":
            return Ex(boolean(sub("right")), "bool")
        if op == "b2d":
            c = boolean(sub("right"))
            return Ex(f"(({c}) ? 1w1 : 1w0)", "bits", 1, as_bool=c)
        if op == "valid":
            r = v.get("right")
            if not isinstance(r, dict) or r.get("type") != "header":
                raise Bmv2JsonError(path + ".right", "'valid' takes a header")
            return Ex(f"{self.refs.header(r.get('value'), path + '.right.value')}.isValid()", "bool")
        if op == "?":
            if v.get("cond") is None:
                raise Bmv2JsonError(path + ".cond", "'?' needs a condition")
            c = boolean(self.expr(v["cond"], path + ".cond", params))
            a, b = sub("left"), sub("right")
            if a.kind == b.kind == "bool":
                return Ex(f"({c} ? {a.text} : {b.text})", "bool")
            w = width_of(a, b)
            return Ex(f"({c} ? {bits(a, w)} : {bits(b, w)})", "bits", w)
        raise Bmv2JsonError(path + ".op", f"operator {op!r} is not supported by the loader")


ALGOS = {"crc16", "crc32", "csum16", "identity", "xor16", "random"}


def calc_fields(calc: dict, path: str, ex: ExprTranslator) -> tuple[str, list[str], bool]:
    """A calculation's algorithm, its input fields (P4 text) and whether the payload follows."""
    algo = calc.get("algo")
    if algo not in ALGOS:
        raise Bmv2JsonError(path + ".algo", f"hash algorithm {algo!r} is not supported by the loader")
    fields, payload = [], False
    for k, el in enumerate(calc.get("input") or []):
        p = f"{path}.input[{k}]"
        if payload:
            raise Bmv2JsonError(p, "only the payload may follow the payload")
        if isinstance(el, dict) and el.get("type") == "payload":
            payload = True
            continue
        if not isinstance(el, dict) or el.get("type") != "field":
            raise Bmv2JsonError(p, "calculation inputs must be fields (or the payload)")
        fields.append(ex.expr(el, p).text)
    return algo, fields, payload
