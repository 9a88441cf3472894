"""Programs p4c rejects, each with a located error: labels after ``default``, varbit
widths, ``@optional`` outside externs, ``@name`` and structured-annotation shapes, and
v1model versions our v1model.p4 does not know."""

from __future__ import annotations

import pytest

from p4switch.frontend.errors import P4Error
from p4switch.frontend.parser import parse_text
from tests.frontend.check.checkutil import errors, in_control, one_error, pos


def test_switch_label_after_default() -> None:
    src = in_control("switch (hdr.h.a) { default: { } 1: { } }")
    e = one_error(src)
    assert "default" in e.message and (e.line, e.col) == pos(src, "1: {")


def test_varbit_width_must_be_positive() -> None:
    assert "positive" in one_error("header v_t { varbit<(-2)> f; }").message


def test_optional_only_on_extern_parameters() -> None:
    assert "@optional" in one_error("bit<8> f(@optional bit<8> a) { return 1; }").message
    assert "@optional" in one_error("control g(in bit<8> t)(@optional bit<8> tt) { apply { } }").message
    assert errors("extern void ef(@optional in bit<8> a);") == []


def test_annotation_shapes() -> None:
    assert "@name takes one string" in one_error("@name(4)\nconst bit<8> k = 1;").message
    assert "only one of its name" in one_error("@d[]\n@d[]\nconst bit<8> k = 1;").message
    assert "only one of its name" in one_error("@n(3)\n@n[]\nconst bit<8> k = 1;").message
    assert "duplicate key" in one_error("@d[a = 1, a = 2]\nconst bit<8> k = 1;").message
    assert "must be a string" in one_error("@d[a = {2, 3}]\nconst bit<8> k = 1;").message


@pytest.mark.parametrize("version", ["-5", "20000101", "20300101"])
def test_unknown_v1model_version_is_an_error_in_v1model_p4(version: str) -> None:
    with pytest.raises(P4Error, match="V1MODEL_VERSION") as exc:
        parse_text(f"#define V1MODEL_VERSION {version}\n#include <v1model.p4>\n", "ver.p4")
    assert exc.value.loc.file.endswith("v1model.p4") and exc.value.loc.line > 0


def test_generic_call_needs_a_width_for_its_type_argument() -> None:
    src = "extern void func<T>(in T x);\n" + in_control("func(5);")
    assert "cannot infer a width" in one_error(src).message
    assert errors("extern void func<T>(in T x);\n" + in_control("func(8w5);")) == []


def test_apply_results_and_action_runs_cannot_be_compared() -> None:
    table = "table tt { key = { hdr.h.a : exact; } actions = { NoAction; } }"
    assert "cannot be compared" in one_error(in_control("if (tt.apply() == tt.apply()) { }", table)).message
    assert "cannot be compared" in one_error(
        in_control("if (tt.apply().action_run == tt.apply().action_run) { }", table)).message


def test_extract_with_and_without_a_size() -> None:
    parser = ("header v_t { bit<8> f; varbit<8> g; }\nstruct vs_t { v_t v; h_t h; }\n"
              "parser Pv(packet_in pk, out vs_t s) { state start { BODY transition accept; } }")
    assert "varbit" in one_error(parser.replace("BODY", "pk.extract(s.v);")).message
    assert "varbit" in one_error(parser.replace("BODY", "pk.extract(s.h, 32w8);")).message
    assert errors(parser.replace("BODY", "pk.extract(s.v, 32w8); pk.extract(s.h);")) == []


def test_entries_after_the_key_and_lpm_masks_are_prefixes() -> None:
    base = "action nop() { }\ntable t { PROPS }"
    src = in_control("t.apply();", base.replace("PROPS", "entries = { 1 : nop(); } key = { hdr.h.a : exact; } "
                                                           "actions = { nop; }"))
    assert "after the key" in one_error(src).message
    lpm = "key = { hdr.h.a : lpm; } actions = { nop; } entries = { 0x11 &&& MASK : nop(); }"
    assert "prefix" in one_error(in_control("t.apply();", base.replace("PROPS", lpm.replace("MASK", "0xE1")))).message
    assert errors(in_control("t.apply();", base.replace("PROPS", lpm.replace("MASK", "0xF0")))) == []


def test_declaration_shapes_p4c_refuses() -> None:
    assert "return type" in one_error("extern X {\n    void X();\n}").message
    assert "new type" in one_error("type tuple<bit<8>> Narrow;").message
    assert errors("type bit<8> Fine;\ntype Fine Finer;") == []
    assert "'main' must be a package" in one_error("extern main { }").message


def test_default_action_after_the_actions() -> None:
    src = in_control("t.apply();", "action nop() { }\ntable t { default_action = nop; actions = { nop; } }")
    assert "after the actions" in one_error(src).message


def test_extern_methods_declared_twice_with_the_same_parameters() -> None:
    src = "extern E2 {\n    E2(bit<8> x);\n    void f(bit<8> a);\n    void f(bit<8> a);\n}"
    e = one_error(src)
    assert "declared twice" in e.message and e.line == 4
    assert errors("extern E3 {\n    E3();\n    void f(bit<8> a);\n    void f(bit<8> a, bit<8> b);\n}") == []


def test_structured_expression_lists_are_constants() -> None:
    assert errors('@a[1, "x", true]\nconst bit<8> k = 1;') == []
    assert "cannot be compared" in one_error(
        "extern e { e(); }\ne() t;\ne() t1;\n@a[t == t1]\nconst bit<8> k = 1;").message
    with pytest.raises(P4Error, match="structured annotation"):
        parse_text("@a[bar = 4 < ]\nconst bit<8> k = 1;", "sa.p4", preprocess=False)
    assert "@deprecated takes one string" in one_error('@deprecated("a" | "b")\nconst bit<8> k = 1;').message


def test_what_cannot_be_a_value_type() -> None:
    assert "tuple element" in one_error("extern ct { ct(); }\nvoid f(tuple<ct> t) { }").message
    assert "type argument" in one_error("parser pp<t>(in t a);\nstruct s<t> { t field; }\n"
                                        "control c(out s<pp<bit<1>>> v) { apply { } }").message
    table = "table tt { key = { hdr.h.a : exact; } actions = { NoAction; } }"
    assert errors("extern void f<T>(in T a);\n" + in_control("f(tt);", table))


def test_extern_with_abstract_methods_needs_an_initializer() -> None:
    src = "extern g { g(); abstract void h(); }\ncontrol c() { g() inst; apply { } }"
    assert "abstract" in one_error(src).message


def test_parser_that_never_ends() -> None:
    loop = ("parser Pl(packet_in pk, out hs_t hdr) {\n state start { transition next; }\n"
            " state next { transition start; }\n}")
    assert "never reaches accept or reject" in one_error(loop).message
    ends = ("parser Pe(packet_in pk, out hs_t hdr) {\n state start { transition select(hdr.h.a) "
            "{ 1: start; } }\n}")
    assert errors(ends) == []  # no default: an unmatched packet is rejected


def test_division_by_a_negative_constant_is_refused_before_conversion() -> None:
    src = in_control("hdr.h.a = hdr.h.a / -1;")
    e = one_error(src)
    assert "negative numbers" in e.message and (e.line, e.col) == pos(src, "hdr.h.a /")
    assert "negative numbers" in one_error(in_control("hdr.h.a = -5 % hdr.h.a;")).message


def test_run_time_division_is_refused_as_by_p4cs_bmv2_mid_end() -> None:
    src = in_control("hdr.h.a = hdr.h.a / hdr.h.a;")
    e = one_error(src)
    assert "compile time" in e.message and (e.line, e.col) == pos(src, "hdr.h.a / ")
    assert "compile time" in one_error(in_control("hdr.h.a = hdr.h.a % 8w3;")).message
    assert "compile time" in one_error(in_control("hdr.h.a /= hdr.h.a;")).message
    # p4c's strength reduction leaves no division for these
    assert errors(in_control("hdr.h.a = hdr.h.a / 8w4; hdr.h.a = hdr.h.a % 8w8; hdr.h.a = 8w0 / hdr.h.a;")) == []
    assert errors("const bit<8> K = 7 / 2;") == []


def test_generic_arguments_p4c_refuses_once_the_type_is_bound() -> None:
    src = "extern void f<T>(in T data);\n" + in_control('f("hi");')
    e = one_error(src)
    assert "string" in e.message and "direction" in e.message and (e.line, e.col) == pos(src, '"hi"')
    src = "control D() { apply { } }\nvoid g<T>(T t) { }\n" + in_control("g(d);", "D() d;")
    assert "cannot have type" in one_error(src).message
    assert errors("extern void h<T>(T data);\n" + in_control('h("hi");')) == []


def test_a_block_declaration_may_not_shadow_a_parameter() -> None:
    src = in_control("hs_t hdr = hdr;")
    e = one_error(src)
    assert "shadows a parameter 'hdr'" in e.message and (e.line, e.col) == pos(src, "hdr =")
    # a control's own locals named like its parameters only get p4c's warning
    assert not [e for e in errors(in_control("", "bit<8> m = 1;")) if "shadows" in e.message]


def test_lookahead_needs_a_fixed_width_type() -> None:
    parser = ("header v_t { bit<8> f; varbit<8> g; }\n"
              "parser P(packet_in pkt, out hs_t hdr) {\n"
              "    state start { LOOK transition accept; }\n}\n")
    e = one_error(parser.replace("LOOK", "pkt.lookahead<void>();"))
    assert "void" in e.message and (e.line, e.col) == pos(parser, "LOOK")[:1] + (e.col,)
    assert "fixed-width" in one_error(parser.replace("LOOK", "v_t v = pkt.lookahead<v_t>();")).message
    assert errors(parser.replace("LOOK", "h_t v = pkt.lookahead<h_t>();")) == []


def test_match_annotation_names_a_match_kind() -> None:
    e = one_error("struct s_t {\n  @match(1+1) bit<16> f;\n}")
    assert "match_kind" in e.message and e.line == 2
    assert errors("struct s_t {\n  @match(ternary) bit<16> f;\n}") == []
