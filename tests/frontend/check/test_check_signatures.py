"""Signature rules p4c enforces: directions on extern/string parameters, defaults of out
parameters, one namespace for a block's (type) parameters, blocks as parameters, what
``main`` and top-level instances may be, and header fields of struct type."""

from __future__ import annotations

from tests.frontend.check.checkutil import errors, one_error, pos


def test_extern_or_string_parameter_cannot_have_a_direction() -> None:
    src = "extern X {}\ncontrol c(in X x) { apply { } }"
    e = one_error(src)
    assert "direction" in e.message and (e.line, e.col) == pos(src, "X x")
    assert "direction" in one_error("extern void f(in string s);").message
    assert errors("extern X2 {}\ncontrol c2()(X2 x) { apply { } }") == []


def test_out_parameter_cannot_have_a_default() -> None:
    src = "extern void f(out bit<32> x = 0);"
    e = one_error(src)
    assert "default" in e.message and (e.line, e.col) == pos(src, "0)")


def test_signature_names_are_unique() -> None:
    assert "declared twice" in one_error("control C<p>(inout bit<32> p) { apply { } }").message
    assert "duplicate" in one_error("control C(inout bit<32> x)(bit<32> x) { apply { } }").message


def test_blocks_as_parameters() -> None:
    e = one_error("parser Q();\nparser MyP(Q q);")
    assert "constructor parameters" in e.message
    e = one_error("control A() { apply { } }\ncontrol C()(A a) { apply { } }")
    assert "declaration, not a type" in e.message
    assert errors("control X();\ncontrol B()(X x) { apply { } }") == []


def test_control_instantiated_at_top_level_and_applied_is_an_error() -> None:
    src = "control A() { apply { } }\nA() a;\ncontrol B() { apply { a.apply(); } }"
    e = one_error(src)
    assert "top level" in e.message and (e.line, e.col) == pos(src, "A() a")
    # p4switch's extension: one only passed to a package is accepted (docs/reference/p4switch.md)
    ok = "control A() { apply { } }\ncontrol P_t();\npackage Pk(P_t p);\nA() a;\nPk(a) main;"
    assert errors(ok) == []


def test_header_fields_may_be_structs_of_bit_strings_nested() -> None:
    ok = "struct in_t { bit<4> x; }\nstruct row_t { in_t a; bit<4> b; }\nheader hh_t { row_t r; bit<8> c; }"
    assert errors(ok) == []
    bad = "struct s_t { bit<4> x; h_t[2] st; }\nheader hh_t { s_t r; }"
    assert "cannot have type" in one_error(bad).message


def test_table_without_default_needs_noaction() -> None:
    from p4switch.frontend.check import CheckErrors, check_program
    from p4switch.frontend.parser import parse_text

    src = ("match_kind { exact }\ncontrol c(inout bit<8> k) {\n  action a() { }\n"
           "  table t { key = { k : exact; } actions = { a; } }\n  apply { t.apply(); }\n}\n")
    try:
        check_program(parse_text(src, "nocore.p4"))
    except CheckErrors as exc:
        (err,) = exc.errors
        assert "NoAction" in err.message and (err.loc.line, err.loc.col) == (4, 3)
    else:
        raise AssertionError("accepted a table with no default and no NoAction")
