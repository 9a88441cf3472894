"""Conversions and calls p4c accepts: serializable enums to their underlying type (and
int constants to serializable enums), a control declaration for a control-type
parameter, stack indices of a ``type`` over bit<W>, and actions calling global actions."""

from __future__ import annotations

import pytest

from p4switch.frontend.errors import P4Error
from p4switch.frontend.parser import parse_text
from tests.frontend.check.checkutil import errors, in_control, one_error

ENUM = "enum bit<8> E { A = 1, B = 2 }\n"


def test_serializable_enum_converts_to_its_underlying_type() -> None:
    assert errors(ENUM + in_control("hdr.h.a = E.A; if (hdr.h.a == E.B) { } if (E.B == hdr.h.a) { }")) == []
    assert "E" in one_error(ENUM + in_control("hdr.h.b = E.A;")).message  # bit<16> is not its type


def test_int_constant_is_a_serializable_enum_mask_only() -> None:
    table = ("action nop() { }\ntable t { key = { k : ternary; } actions = { nop; } "
             "const entries = { E.A &&& 0xff : nop(); } }")
    assert errors(ENUM + in_control("t.apply();", "E k = E.A;\n" + table)) == []
    assert "expected E, got int" in one_error(ENUM + in_control("E e = 2;")).message


def test_control_declaration_fits_a_control_type_parameter() -> None:
    src = """
    control proto_t(inout bit<8> x);
    control Impl(inout bit<8> x) { apply { x = 1; } }
    control User(inout bit<8> y)(proto_t p) { apply { p.apply(y); } }
    control Top(inout bit<8> z) { User(Impl()) u; apply { u.apply(z); } }
    """
    assert errors(src) == []
    bad = """
    control proto_t(inout bit<8> x);
    control Impl2(in bit<8> x) { apply { } }
    control User(inout bit<8> y)(proto_t p) { apply { p.apply(y); } }
    control Top(inout bit<8> z) { User(Impl2()) u; apply { u.apply(z); } }
    """
    assert "proto_t" in one_error(bad).message


def test_header_stack_index_of_a_new_type() -> None:
    assert errors("type bit<32> Index_t;\n" + in_control("Index_t i = (Index_t)1; hdr.st[i].a = 1;")) == []


def test_global_action_may_call_a_global_action() -> None:
    src = "action inner(inout bit<8> v) { v = 2; }\naction outer(inout bit<8> w) { inner(w); }\n"
    assert errors(src + in_control("outer(hdr.h.a);")) == []


def test_int_constructor_parameter_converts_where_a_constant_would() -> None:
    src = "control C1(inout bit<8> b)(int a) { apply { if (b == a) { b = a + 8w1; } else { b = 1 + a; } } }"
    assert errors(src) == []


def test_table_and_action_may_share_a_name() -> None:
    src = in_control("t.apply();", 'action t_a() { } @name("same") action a() { }\n'
                     '@name("same") table t { key = { hdr.h.a : exact; } actions = { a; t_a; } }')
    assert errors(src) == []


def test_free_form_annotation_body_may_hold_any_text() -> None:
    assert errors("@text(\n it's free text, isn't it?\n)\nconst bit<8> k = 1;") == []
    with pytest.raises(P4Error, match="character"):
        parse_text("const bit<8> k = 'a';", "chars.p4", preprocess=False)


def test_constant_aggregates_and_aggregate_defaults() -> None:
    src = "struct p_t { bit<9> v; }\nconst p_t CPU = { 9w192 };\nconst p_t CPU2 = { v = 9w1 };\n"
    assert errors(src) == []
    assert errors("struct p_t { bit<9> v; }\ncontrol C2(inout bit<8> h, in p_t meta = { 0 }) { apply { } }") == []
    assert "compile-time" in one_error(in_control("", "const bit<8> k = hdr.h.a;")).message


def test_struct_may_hold_several_varbit_fields_a_header_not() -> None:
    assert errors("struct v_t { varbit<8> a; varbit<16> b; }") == []
    assert "more than one varbit" in one_error("header v_t { varbit<8> a; varbit<16> b; }").message
