"""Semantic types: printing as P4 writes them, equality, widths, substitution."""

from __future__ import annotations

import pytest

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.errors import UNKNOWN_LOC


def decl(cls, name):
    return cls(loc=UNKNOWN_LOC, name=name)


def test_types_print_as_p4_writes_them() -> None:
    h = T.HeaderType("h_t", decl(ast.HeaderDecl, "h_t"), (("a", T.BitType(8)),))
    assert str(T.BitType(8)) == "bit<8>"
    assert str(T.IntType(16)) == "int<16>"
    assert str(T.VarbitType(320)) == "varbit<320>"
    assert str(T.INFINT) == "int" and str(T.BOOL) == "bool" and str(T.ERROR) == "error"
    assert str(h) == "h_t" and str(T.HeaderStackType(h, 4)) == "h_t[4]"
    assert str(T.TupleType((T.BitType(8), T.BOOL))) == "tuple<bit<8>, bool>"
    reg = T.ExternType("register", decl(ast.ExternDecl, "register"), (T.BitType(32),))
    assert str(reg) == "register<bit<32>>"


def test_structural_types_compare_by_structure_nominal_by_declaration() -> None:
    assert T.BitType(8) == T.BitType(8) and T.BitType(8) != T.IntType(8)
    d1, d2 = decl(ast.HeaderDecl, "h_t"), decl(ast.HeaderDecl, "h_t")
    fields = (("a", T.BitType(8)),)
    assert T.HeaderType("h_t", d1, fields) == T.HeaderType("h_t", d1, fields)
    assert T.HeaderType("h_t", d1, fields) != T.HeaderType("h_t", d2, fields)
    assert T.HeaderType("h_t", d1, fields) != T.StructType("h_t", d1, fields)
    assert len({T.HeaderType("h_t", d1, fields), T.HeaderType("h_t", d1, fields)}) == 1
    reg = decl(ast.ExternDecl, "register")
    assert T.ExternType("register", reg, (T.BitType(8),)) != T.ExternType("register", reg, (T.BitType(16),))


def test_width_of_serializable_types() -> None:
    u8 = decl(ast.EnumDecl, "E")
    inner = T.StructType("s", decl(ast.StructDecl, "s"), (("p", T.BitType(3)), ("q", T.BOOL)))
    h = T.HeaderType("h", decl(ast.HeaderDecl, "h"),
                     (("a", T.BitType(8)), ("e", T.EnumType("E", u8, ("X",), T.BitType(4), (("X", 1),))),
                      ("s", inner)))
    assert T.width_of(h) == 8 + 4 + 4
    assert T.width_of(T.HeaderStackType(h, 3)) == 48
    assert T.width_of(T.NewType("p", decl(ast.TypeParam, "p"), T.BitType(9))) == 9
    assert T.width_of(T.ERROR) == 0
    assert T.width_of(T.EnumType("C", decl(ast.EnumDecl, "C"), ("A", "B"))) == 0
    with pytest.raises(ValueError):
        T.width_of(T.INFINT)


def test_fields_and_header_likeness() -> None:
    h = T.HeaderType("h", decl(ast.HeaderDecl, "h"), (("a", T.BitType(8)),))
    u = T.HeaderUnionType("u", decl(ast.HeaderUnionDecl, "u"), (("h", h),))
    s = T.StructType("s", decl(ast.StructDecl, "s"), (("h", h),))
    assert T.is_header_like(h) and T.is_header_like(u) and not T.is_header_like(s)
    assert T.fields_of(s) == (("h", h),) and s.field_type("h") == h and s.field_type("x") is None
    with pytest.raises(ValueError):
        T.fields_of(T.BitType(8))


def test_substitute_replaces_type_variables_everywhere() -> None:
    tv = T.TypeVar("T", decl(ast.TypeParam, "T"))
    other = T.TypeVar("T", decl(ast.TypeParam, "T"))
    t = T.TupleType((tv, T.HeaderStackType(tv, 2), other))
    h = T.HeaderType("h", decl(ast.HeaderDecl, "h"))
    out = T.substitute(t, {tv: h})
    assert out == T.TupleType((h, T.HeaderStackType(h, 2), other))
    assert T.contains_typevar(out) and not T.contains_typevar(T.substitute(out, {other: T.BOOL}))
    fn = T.FunctionType("f", None, (T.Parameter("x", "in", tv),), tv, (tv,))
    sub = T.substitute(fn, {tv: T.BitType(8)})
    assert sub.params[0].type == T.BitType(8) and sub.return_type == T.BitType(8)
