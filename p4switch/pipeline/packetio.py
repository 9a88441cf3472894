"""Bits on the wire: ``extract``, ``lookahead``, ``advance``, ``length`` and ``emit``.

Every fixed-size header gets, at load time, an extractor and an emitter generated for
its exact layout: extracting is one ``int.from_bytes`` over the header's bytes followed
by one ``(v >> shift) & mask`` store per field into precomputed slots; emitting is one
shift-or expression over the field slots and one ``to_bytes``. Headers extracted into a
header stack's ``.next`` use the same code with a run-time slot offset.

Parser errors (``PacketTooShort``, ``HeaderTooShort``, ``StackOutOfBounds``) raise
:class:`~.packet.ParserReject`; the header being extracted stays invalid and the cursor
does not move, as in BMv2. Headers must be a whole number of bytes (as p4c requires for
BMv2); the cursor itself may be unaligned after an ``advance``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T

from .calls import method_name
from .exprs import DynRef, flat_size, header_storage
from .layout import (
    SLOT_CURSOR,
    SLOT_DATA,
    SLOT_OUT,
    HeaderS,
    ScalarS,
    StackS,
    Storage,
    StructS,
    UnionS,
    VarbitS,
)
from .packet import ParserReject
from .scope import PipelineError, Scope
from .templates import E, Fn, expr

_codec_cache: dict[tuple, Callable] = {}


def read_bits(data: bytes, cursor: int, nbits: int) -> int:
    """``nbits`` bits of ``data`` starting at bit ``cursor`` (caller checked the length)."""
    b0 = cursor >> 3
    b1 = (cursor + nbits + 7) >> 3
    x = int.from_bytes(data[b0:b1], "big")
    return (x >> (b1 * 8 - cursor - nbits)) & ((1 << nbits) - 1)


def _sx(x: int, w: int) -> int:
    return x - (1 << w) if x >> (w - 1) else x


def _field_specs(h: HeaderS) -> list[tuple[int, int, bool]]:
    """(slot offset from the header's validity slot, width, signed) per field."""
    out = []
    for f in h.leaf_fields():
        if not isinstance(f, ScalarS):
            raise ValueError("varbit")
        out.append((f.slot - h.valid, f.width, f.signed))
    return out


def make_extractor(h: HeaderS, too_short: ParserReject, dynamic: bool) -> Callable:
    """``extract(p)`` (static) or ``extract(p, o)`` (slot offset ``o``) for a fixed header."""
    specs = _field_specs(h)
    width = sum(w for _, w, _ in specs)
    nbytes = width // 8
    key = ("x", tuple(specs), h.valid if not dynamic else None, dynamic)
    fac = _codec_cache.get(key)
    if fac is None:
        off = " + o" if dynamic else ""
        base = 0 if dynamic else h.valid
        lines = []
        shift = width
        for rel, w, signed in specs:
            shift -= w
            val = "v"
            if shift:
                val = f"(v >> {shift})"
            if shift + w < width:
                val = f"({val} & {(1 << w) - 1})"
            if signed:
                val = f"_sx({val}, {w})"
            lines.append(f"        p[{base + rel}{off}] = {val}")
        args = "p, o" if dynamic else "p"
        src = (
            "def _factory(PTS):\n"
            f"    def extract({args}):\n"
            f"        c = p[{SLOT_CURSOR}]\n"
            f"        d = p[{SLOT_DATA}]\n"
            f"        if c + {width} > len(d) * 8:\n"
            "            raise PTS.with_traceback(None)\n"
            "        if c & 7:\n"
            f"            v = _read_bits(d, c, {width})\n"
            "        else:\n"
            "            b = c >> 3\n"
            f"            v = int.from_bytes(d[b:b + {nbytes}], 'big')\n"
            + "\n".join(lines) + "\n"
            f"        p[{base}{off}] = 1\n"
            f"        p[{SLOT_CURSOR}] = c + {width}\n"
            "    return extract\n"
        )
        env: dict[str, Any] = {"_read_bits": read_bits, "_sx": _sx}
        exec(src, env)  # noqa: S102
        fac = _codec_cache[key] = env["_factory"]
    return fac(too_short)


def make_emitter(h: HeaderS) -> Fn:
    """``emit(p)``: append the header's bytes to the output when it is valid."""
    specs = _field_specs(h)
    width = sum(w for _, w, _ in specs)
    key = ("e", tuple(specs), h.valid)
    fac = _codec_cache.get(key)
    if fac is None:
        terms = []
        shift = width
        for rel, w, signed in specs:
            shift -= w
            v = f"p[{h.valid + rel}]"
            if signed:
                v = f"({v} & {(1 << w) - 1})"
            terms.append(f"({v} << {shift})" if shift else v)
        value = " | ".join(terms) if terms else "0"
        src = (
            "def _factory():\n"
            "    def emit(p):\n"
            f"        if p[{h.valid}]:\n"
            f"            p[{SLOT_OUT}].append(({value}).to_bytes({width // 8}, 'big'))\n"
            "    return emit\n"
        )
        env: dict[str, Any] = {}
        exec(src, env)  # noqa: S102
        fac = _codec_cache[key] = env["_factory"]
    return fac()


def header_bits(h: HeaderS, p: list, o: int = 0) -> tuple[int, int]:
    """(value, width) of a header's current contents (varbit fields at their length)."""
    acc, n = 0, 0
    for f in h.leaf_fields():
        if isinstance(f, VarbitS):
            w = p[f.len_slot + o]
            acc = (acc << w) | (p[f.slot + o] & ((1 << w) - 1))
        else:
            w = f.width
            acc = (acc << w) | (p[f.slot + o] & ((1 << w) - 1))
        n += w
    return acc, n


class PacketIOCompiler:
    """Mixin of the pipeline compiler: packet_in/packet_out methods."""

    def too_short(self) -> ParserReject:
        return ParserReject(self.error_code("PacketTooShort"))  # type: ignore[attr-defined]

    def packet_method(self, call: ast.CallExpr, sc: Scope, want: str) -> Any:
        name = method_name(call)
        if name == "extract":
            return self._extract(call, sc)
        if name == "emit":
            return self._emit(call.args[0].value, sc)
        if name == "advance":
            return self._advance(call, sc)
        if name == "length":
            return expr("len({d})", d=E.slot(SLOT_DATA))
        if name == "lookahead":
            return self._lookahead(call, sc, want)
        raise PipelineError(call.loc, f"pipeline: unsupported packet method {name}")

    # ------------------------------------------------------------------ extract

    def _extract(self, call: ast.CallExpr, sc: Scope) -> Fn:
        target = call.args[0].value
        if isinstance(target, ast.DontCareExpr):
            return self._extract_nowhere(call)
        ref = self.ref_of(target, sc)  # type: ignore[attr-defined]
        h = header_storage(ref) if ref is not None else None
        if h is None:
            raise PipelineError(target.loc, "pipeline: extract() needs a header")
        siblings = self._union_siblings_of(target, sc, h)
        if len(call.args) > 1 or h.has_varbit:
            size = self.scalar(call.args[1].value, sc) if len(call.args) > 1 else E.const(0)  # type: ignore[attr-defined]
            if isinstance(ref, DynRef):
                return self._extract_varbit_stack(h, size, call, ref)
            return _with_siblings(self._extract_varbit(h, size, call), siblings)
        if h.fixed_width % 8:
            raise PipelineError(target.loc, f"pipeline: header {h.type} is {h.fixed_width} bits, not whole bytes")
        pts = self.too_short()
        if isinstance(ref, DynRef):
            ex = make_extractor(h, pts, dynamic=True)
            stack = ref.stack
            is_next = ref.index.kind == "s" and ref.index.val == stack.next_slot
            base = ref.base_fn()
            valid0 = h.valid  # validity slot of the header in element 0
            nxt = stack.next_slot

            def extract_stack(p: list) -> None:
                o = base(p)  # raises StackOutOfBounds for .next on a full stack
                if o < 0:
                    return
                ex(p, valid0 + o)
                if is_next:
                    p[nxt] += 1

            return extract_stack
        return _with_siblings(make_extractor(h, pts, dynamic=False), siblings)

    def _extract_nowhere(self, call: ast.CallExpr) -> Fn:
        """``extract<T>(_)``: the bits of a ``T`` are consumed and dropped (PacketTooShort
        as for a real extract); nothing is stored."""
        t = call.type_args[0].type if call.type_args and call.type_args[0].type is not None else None
        u = T.underlying(t) if t is not None else None
        if not isinstance(u, T.HeaderType) or len(call.args) > 1:
            raise PipelineError(call.loc, "pipeline: extract<T>(_) needs a fixed-width header type T")
        if any(isinstance(T.underlying(ft), T.VarbitType) for _, ft in u.fields):
            raise PipelineError(call.loc, f"pipeline: extract<{t}>(_): a header with a varbit field has no fixed width")
        width = T.width_of(t)
        if width % 8:
            raise PipelineError(call.loc, f"pipeline: header {t} is {width} bits, not whole bytes")
        pts = self.too_short()

        def extract_nowhere(p: list) -> None:
            c = p[SLOT_CURSOR] + width
            if c > len(p[SLOT_DATA]) * 8:
                raise pts.with_traceback(None)
            p[SLOT_CURSOR] = c

        return extract_nowhere

    def _union_siblings_of(self, target: ast.Expression, sc: Scope, h: HeaderS) -> list[int]:
        if isinstance(target, ast.MemberExpr):
            parent = self.ref_of(target.expr, sc)  # type: ignore[attr-defined]
            if isinstance(parent, UnionS):
                return [x.valid for x in parent.headers() if x is not h]
        return []

    def _extract_varbit_stack(self, h: HeaderS, size: E, call: ast.CallExpr, ref: DynRef) -> Fn:
        """``extract(stack.next / stack[i], n)`` of a header with a varbit field: the
        element's slots are element 0's plus the element offset."""
        ex = self._extract_varbit(h, size, call)
        base = ref.base_fn()
        stack = ref.stack
        is_next = ref.index.kind == "s" and ref.index.val == stack.next_slot
        nxt = stack.next_slot

        def extract_varbit_stack(p: list) -> None:
            o = base(p)  # raises StackOutOfBounds for .next on a full stack
            if o < 0:
                return
            ex(p, o)
            if is_next:
                p[nxt] += 1

        return extract_varbit_stack

    def _extract_varbit(self, h: HeaderS, size: E, call: ast.CallExpr) -> Any:
        pts = self.too_short()
        hts = ParserReject(self.error_code("HeaderTooShort"))  # type: ignore[attr-defined]
        bad = ParserReject(self.error_code("ParserInvalidArgument"))  # type: ignore[attr-defined]
        fixed = h.fixed_width
        fields = h.leaf_fields()
        maxw = sum(f.max_width for f in fields if isinstance(f, VarbitS))
        sizef = size.fn()
        valid = h.valid

        def extract_varbit(p: list, o: int = 0) -> None:
            n = sizef(p)
            if n % 8:  # BMv2 extracts whole bytes only: a size like 7 bits is an invalid argument
                raise bad.with_traceback(None)
            if n > maxw:
                raise hts.with_traceback(None)
            c = p[SLOT_CURSOR]
            d = p[SLOT_DATA]
            total = fixed + n
            if c + total > len(d) * 8:
                raise pts.with_traceback(None)
            v = read_bits(d, c, total)
            shift = total
            for f in fields:
                w = n if isinstance(f, VarbitS) else f.width
                shift -= w
                x = (v >> shift) & ((1 << w) - 1)
                if isinstance(f, VarbitS):
                    p[f.len_slot + o] = w
                elif f.signed:
                    x = _sx(x, w)
                p[f.slot + o] = x
            p[valid + o] = 1
            p[SLOT_CURSOR] = c + total

        return extract_varbit

    # ------------------------------------------------------------------ lookahead/advance

    def _advance(self, call: ast.CallExpr, sc: Scope) -> Fn:
        n = self.scalar(call.args[0].value, sc).fn()  # type: ignore[attr-defined]
        pts = self.too_short()

        def advance(p: list) -> None:
            c = p[SLOT_CURSOR] + n(p)
            if c > len(p[SLOT_DATA]) * 8:
                raise pts.with_traceback(None)
            p[SLOT_CURSOR] = c

        return advance

    def _lookahead(self, call: ast.CallExpr, sc: Scope, want: str) -> Any:
        t = call.type
        if call.type_args and call.type_args[0].type is not None:
            t = call.type_args[0].type
        width = T.width_of(t)
        pts = self.too_short()

        def peek(p: list) -> int:
            c = p[SLOT_CURSOR]
            d = p[SLOT_DATA]
            if c + width > len(d) * 8:
                raise pts.with_traceback(None)
            return read_bits(d, c, width)

        u = T.underlying(t)
        if isinstance(u, T.BitType):
            return E.func(peek)
        if isinstance(u, T.IntType):
            return E.func(lambda p: _sx(peek(p), width))
        if isinstance(u, T.BoolType):
            return E.func(lambda p: peek(p) == 1)
        split = _splitter(t)
        if want == "none":
            return lambda p: peek(p) and None
        if want == "value":
            raise PipelineError(call.loc, f"pipeline: lookahead<{t}> is not a scalar")
        return lambda p: split(peek(p), width)

    def lookahead_field(self, call: ast.CallExpr, path: list[str], sc: Scope) -> E:
        """``pkt.lookahead<T>().f``: the bits of field ``f`` of ``T`` ahead of the cursor.

        Why not via the whole ``T`` value: a scalar context needs one field. The packet must
        still hold all of ``T`` (else PacketTooShort), as on BMv2, where p4c peeks the whole
        ``T`` into a temporary and reads the field from it.
        """
        t = call.type_args[0].type if call.type_args and call.type_args[0].type is not None else call.type
        offset, ft = 0, t
        for name in path:
            u = T.underlying(ft)
            while isinstance(u, T.NewType):
                u = u.base
            if not isinstance(u, T.StructLikeType):
                raise PipelineError(call.loc, f"pipeline: lookahead<{t}>(): '{name}' of a non-struct type")
            for fname, ftype in u.fields:
                if fname == name:
                    ft = ftype
                    break
                offset += T.width_of(ftype)
            else:
                raise PipelineError(call.loc, f"pipeline: lookahead<{t}>() has no field '{name}'")
        width = T.width_of(ft)
        end = T.width_of(t)
        pts = self.too_short()
        mask = (1 << width) - 1
        signed = isinstance(T.underlying(ft), T.IntType)
        is_bool = isinstance(T.underlying(ft), T.BoolType)

        def peek_field(p: list) -> Any:
            c = p[SLOT_CURSOR]
            d = p[SLOT_DATA]
            if c + end > len(d) * 8:
                raise pts.with_traceback(None)
            v = read_bits(d, c + offset, width) & mask
            if signed:
                return _sx(v, width)
            return v == 1 if is_bool else v

        return E.func(peek_field)

    # ------------------------------------------------------------------ emit

    def _emit(self, e: ast.Expression, sc: Scope) -> Fn | None:
        ref = self.ref_of(e, sc)  # type: ignore[attr-defined]
        if not isinstance(ref, Storage):
            raise PipelineError(e.loc, "pipeline: emit() needs a fixed header, stack, union or struct")
        from .templates import seq

        return seq([self._emitter(h, e) for h in _emit_order(ref)])

    def _emitter(self, h: HeaderS, e: ast.Expression) -> Fn:
        if h.has_varbit:
            def emit_varbit(p: list) -> None:
                if p[h.valid]:
                    v, n = header_bits(h, p)
                    p[SLOT_OUT].append(v.to_bytes((n + 7) // 8, "big"))

            return emit_varbit
        if h.fixed_width % 8:
            raise PipelineError(e.loc, f"pipeline: header {h.type} is {h.fixed_width} bits, not whole bytes")
        return make_emitter(h)


def _emit_order(st: Storage) -> list[HeaderS]:
    if isinstance(st, HeaderS):
        return [st]
    if isinstance(st, StackS):
        out: list[HeaderS] = []
        for el in st.elems:
            out += _emit_order(el)
        return out
    if isinstance(st, StructS):
        out = []
        for f in st.fields.values():
            out += _emit_order(f)
        return out
    return []


def _with_siblings(fn: Fn, siblings: list[int]) -> Fn:
    if not siblings:
        return fn
    sib = tuple(siblings)

    def extract_union_member(p: list) -> None:
        fn(p)
        for s in sib:
            p[s] = 0

    return extract_union_member


def _splitter(t: T.Type) -> Callable[[int, int], list]:
    """Bits -> the flattened value of a header/struct of fixed-width fields."""
    u = t
    while isinstance(u, T.NewType):
        u = u.base
    leaves: list[tuple[int, bool, bool]] = []  # (width, signed, is_validity)

    def walk(x: T.Type) -> None:
        while isinstance(x, T.NewType):
            x = x.base
        if isinstance(x, T.HeaderType):
            leaves.append((0, False, True))
            for _, ft in x.fields:
                walk(ft)
        elif isinstance(x, T.StructLikeType):
            for _, ft in x.fields:
                walk(ft)
        elif isinstance(x, T.BitType | T.IntType | T.BoolType):
            w = 1 if isinstance(x, T.BoolType) else x.width
            leaves.append((w, isinstance(x, T.IntType), False))
        else:
            raise PipelineError(None, f"pipeline: lookahead of {t} is not supported")

    walk(u)
    n_slots = flat_size(u)
    assert n_slots == len(leaves)

    def split(v: int, width: int) -> list:
        out = []
        shift = width
        for w, signed, is_valid in leaves:
            if is_valid:
                out.append(1)
                continue
            shift -= w
            x = (v >> shift) & ((1 << w) - 1)
            out.append(_sx(x, w) if signed else x)
        return out

    return split
