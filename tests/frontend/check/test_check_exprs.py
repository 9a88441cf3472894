"""Expressions: implicit int conversion, operator typing, casts, slices, members,
initializers and constant folding -- the P4_16 rules, with the errors they produce."""

from __future__ import annotations

import pytest

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check import SymbolicValue
from tests.frontend.check.checkutil import check, errors, in_control, one_error, one_warning, pos, warnings


def stmts(body: str, locals_: str = "") -> str:
    return in_control(body, locals_)


# ------------------------------------------------------------------ conversions


def test_int_constant_that_does_not_fit_wraps_with_a_warning_as_in_p4c() -> None:
    assert errors(stmts("m.x = 255; m.x = 0;")) == []
    assert warnings(stmts("m.x = 255; m.x = 0;")) == []
    src = stmts("m.x = 256;")
    w = one_warning(src)
    assert "256" in w.message and "bit<8>" in w.message and "does not fit" in w.message
    assert "negative value with unsigned type" in one_warning(stmts("m.x = -1;")).message
    assert errors(stmts("int<8> s = -128; s = 127;")) == []
    assert "does not fit" in one_warning(stmts("int<8> s = 128;")).message
    checked = check(stmts("m.x = -1; m.x = 0 - 1;"))
    assigns = [n for n in ast.walk(checked.program) if isinstance(n, ast.AssignStmt)]
    values = [a.rhs.const_value for a in assigns[-2:]]
    assert values == [255, 255]  # kept modulo 2**8: the IR's constants are in range
    assert all(a.rhs.type == T.BitType(8) for a in assigns[-2:])


def test_no_implicit_conversion_between_widths_or_signedness() -> None:
    src = stmts("m.x = m.y;")
    e = one_error(src)
    assert e.message == "width mismatch: bit<8> and bit<32> (use a cast)"
    assert (e.line, e.col) == pos(src, "m.x = m.y")  # at the assignment statement
    e = one_error(stmts("int<8> s = 1; m.x = s;"))
    assert "bit<8>" in e.message and "int<8>" in e.message and "cast" in e.message
    assert "bool" in one_error(stmts("m.x = m.f;")).message


def test_binary_operands_must_agree_and_int_adapts() -> None:
    assert errors(stmts("m.y = m.y + 1; m.x = 3 + m.x; m.f = m.x < 4;")) == []
    src = stmts("m.f = m.x == m.y;")
    e = one_error(src)
    assert e.message == "width mismatch: bit<8> and bit<32> (use a cast)"
    assert (e.line, e.col) == pos(src, "m.x == m.y")
    assert "does not fit" in one_warning(stmts("m.f = m.x == 300;")).message


def test_logical_and_bitwise_operators_need_their_types() -> None:
    assert "'&&' needs bool" in one_error(stmts("m.f = m.f && m.x;")).message
    assert "'!' needs a bool" in one_error(stmts("m.f = !m.x;")).message
    assert "'~'" in one_error(stmts("m.x = ~5;")).message
    assert errors(stmts("m.x = ~m.x & 8w0x0F | m.x ^ 1;")) == []
    assert "integer operands" in one_error(stmts("m.f = m.f < m.f;")).message


def test_concatenation_sums_widths_and_rejects_int() -> None:
    cp = check(stmts("bit<24> w = hdr.h.a ++ hdr.h.b;"))
    assert cp is not None
    assert "'++'" in one_error(stmts("bit<16> w = hdr.h.a ++ 1;")).message
    e = one_error(stmts("bit<16> w = hdr.h.a ++ hdr.h.b;"))
    assert "bit<16>" in e.message and "bit<24>" in e.message


def test_shifts_need_unsigned_amounts() -> None:
    assert errors(stmts("m.y = m.y << m.x; m.y = m.y >> 3;")) == []
    assert "unsigned" in one_error(stmts("int<8> s = 1; m.y = m.y << s;")).message
    assert "constant shift" in one_error(stmts("m.y = (bit<32>)(1 << m.x);")).message


def test_division_rules() -> None:
    assert "division by zero" in one_error(stmts("m.x = m.x / 0;")).message
    assert "signed" in one_error(stmts("int<8> s = 4; s = s / 2;")).message


# ------------------------------------------------------------------ casts, slices


@pytest.mark.parametrize("decl,expr", [
    ("bit<16>", "(bit<16>)m.x"), ("int<8>", "(int<8>)m.x"), ("bit<1>", "(bit<1>)m.f"),
    ("bool", "(bool)1w1"), ("bit<8>", "(bit<8>)5"), ("bit<4>", "(bit<4>)(int<4>)3"),
    ("int<32>", "(int<32>)(int<8>)m.x"),
])
def test_valid_casts(decl: str, expr: str) -> None:
    assert errors(stmts(f"{decl} v = {expr};")) == []


@pytest.mark.parametrize("expr,msg", [
    ("(bit<8>)m.f", "cannot cast bool to bit<8>"),
    ("(int<16>)m.x", "cannot cast bit<8> to int<16>"),
    ("(bool)m.x", "cannot cast bit<8> to bool"),
    ("(bit<8>)hdr.h", "cannot cast h_t to bit<8>"),
])
def test_invalid_casts(expr: str, msg: str) -> None:
    src = stmts(f"bit<8> v = {expr};")
    e = one_error(src)
    assert e.message == msg and (e.line, e.col) == pos(src, expr)


def test_slices_have_constant_in_range_bounds() -> None:
    cp = check(stmts("bit<4> n = hdr.h.a[7:4];"))
    assert cp is not None
    assert "out of range" in one_error(stmts("bit<4> n = hdr.h.a[8:5];")).message
    assert "out of range" in one_error(stmts("bit<4> n = hdr.h.a[2:5];")).message
    assert "constant" in one_error(stmts("bit<1> n = hdr.h.a[m.x:0];")).message
    assert "width mismatch" in one_error(stmts("bit<3> n = hdr.h.a[7:4];")).message
    assert errors(stmts("hdr.h.a[3:0] = 4w1;")) == []


# ------------------------------------------------------------------ members


def test_unknown_members_name_the_member_and_point_at_the_expression() -> None:
    src = stmts("m.x = hdr.h.nope;")
    e = one_error(src)
    assert "'nope'" in e.message and (e.line, e.col) == pos(src, "hdr.h.nope")
    assert "'zz'" in one_error(stmts("m.x = m.zz;")).message


def test_header_stack_members_and_indices() -> None:
    assert errors(stmts("m.x = hdr.st[1].a; m.y = hdr.st.size; "
                        "hdr.st.push_front(1); hdr.st.pop_front(2); m.x = hdr.st[m.x].a;")) == []
    for member in ("last.a", "lastIndex", "next.a"):  # p4c: only in a parser
        assert "only be used in a parser" in one_error(stmts(f"m.x = (bit<8>)hdr.st.{member};")).message
    assert "out of range" in one_error(stmts("m.x = hdr.st[4].a;")).message
    assert "'.next'" in one_error(stmts("m.x = hdr.st.next.a;")).message


def test_enum_and_error_members() -> None:
    src = """
    enum Color { RED, GREEN }
    enum bit<8> Op { ADD = 1, SUB = 0x20 }
    """ + stmts("Color c = Color.RED; Op o = Op.SUB; bit<8> v = (bit<8>)o; o = (Op)v; "
                "if (sm.parser_error == error.NoMatch) { c = Color.GREEN; }")
    cp = check(src)
    consts = {n.member: n.const_value for n in ast.walk(cp.program)
              if isinstance(n, ast.MemberExpr | ast.TypeMemberExpr) and n.member in ("RED", "SUB", "NoMatch")}
    assert consts == {"RED": SymbolicValue("Color", "RED"), "SUB": 0x20, "NoMatch": SymbolicValue("error", "NoMatch")}
    assert "'BLUE'" in one_error("enum Color { RED }\n" + stmts("Color c = Color.BLUE;")).message
    assert "error.Nope" in one_error(stmts("bool b = sm.parser_error == error.Nope;")).message
    assert "does not fit" in one_warning("enum bit<4> E { A = 16 }").message


# ------------------------------------------------------------------ initializers


def test_list_and_structure_initializers() -> None:
    assert errors(stmts("hdr.h = {1, 2, 3}; hdr.h = {a = 1, b = 2, c = 3}; m = {x = 1, y = 2, f = true}; "
                        "hdr.h = (h_t){#}; tuple<bit<8>, bool> t = {1, false}; m.x = t[0];")) == []
    assert "needs 3" in one_error(stmts("hdr.h = {1, 2};")).message
    assert "missing field(s) c" in one_error(stmts("hdr.h = {a = 1, b = 2};")).message
    assert "no field 'd'" in one_error(stmts("hdr.h = {a = 1, b = 2, c = 3, d = 4};")).message
    assert "does not fit" in one_warning(stmts("hdr.h = {256, 2, 3};")).message


def test_conditional_expressions() -> None:
    assert errors(stmts("m.x = m.f ? 8w1 : 2; m.x = m.f ? 1 : 2;")) == []
    assert "width" in one_error(stmts("bit<8> v = 8w1; m.y = m.f ? m.y : v;")).message
    assert "condition of '?:'" in one_error(stmts("m.x = m.x ? 1 : 2;")).message


# ------------------------------------------------------------------ constants


def test_constant_folding_of_declarations_casts_and_operators() -> None:
    cp = check("""
    const int KA = 3 * 4 + (1 << 4);
    const bit<8> KB = (bit<8>)KA + 8w250;
    const bit<4> KC = KB[7:4];
    const bool KD = KB == 6 && !false;
    const bit<16> KE = 8w1 ++ 8w2;
    const int<8> KF = -8s3 - 126;
    const bit<8> KG = 8w200 |+| 8w100;
    const bit<32> KH = KA / 5 + KA % 5;
    """ + stmts(""))
    assert {k: cp.constants["K" + k] for k in "ABCDEFGH"} == {
        "A": 28, "B": 22, "C": 1, "D": False, "E": 0x0102, "F": 127, "G": 255, "H": 8}


def test_constants_must_be_constant_and_read_only() -> None:
    e = one_error(stmts("", "const bit<8> K = m.x;"))
    assert "compile-time constant" in e.message
    src = "const bit<8> K = 1;\n" + stmts("K = 2;")
    e = one_error(src)
    assert e.message == "cannot assign to constant 'K'" and (e.line, e.col) == pos(src, "K = 2")


def test_width_expressions_use_constants() -> None:
    cp = check("const int W = 12;\nheader w_t { bit<(W)> a; bit<(W * 2)> b; }\n" + stmts(""))
    assert T.width_of(cp.type("w_t")) == 36
    assert "constant" in one_error("header bad_t { bit<(true)> a; }").message


def test_names_must_be_declared_before_use() -> None:
    e = one_error(stmts("m.x = LATER;") + "const bit<8> LATER = 1;")
    assert "used before its declaration" in e.message
    e = one_error(stmts("m.x = v; bit<8> v = 1;"))
    assert e.message == "unknown identifier 'v'"


def test_numeric_annotation_arguments_are_folded() -> None:
    cp = check("const bit<8> FL = 3;\nstruct fl_t { @field_list(FL, 1 + 1) bit<8> a; }\n" + stmts(""))
    (s,) = [d for d in cp.program.declarations if isinstance(d, ast.StructDecl) and d.name == "fl_t"]
    assert [a.const_value for a in s.fields[0].annotations[0].args] == [3, 2]
    assert one_error("struct fl2_t { @field_list(nope) bit<8> a; }").message == "unknown identifier 'nope'"
    assert "must be a compile-time constant" in one_error("struct fl3_t { @field_list(true) bit<8> a; }").message
