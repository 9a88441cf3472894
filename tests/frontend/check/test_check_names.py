"""Fully qualified names (P4Info names), scopes, duplicates and the package."""

from __future__ import annotations

from p4switch.frontend.check import qualify
from p4switch.frontend.parser import parse_text
from tests.frontend.check.checkutil import check, errors, one_error, pos

BLOCKS = """
parser P(packet_in pkt, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { transition accept; } }
control V(inout hs_t h, inout m_t m) { apply { } }
control D(packet_out b, in hs_t h) { apply { b.emit(h); } }
"""


def program(ingress: str, extra: str = "") -> str:
    return extra + BLOCKS + ingress + "\nV1Switch(P(), V(), Ing(), E(), V(), D()) main;\n"


EGRESS = "control E(inout hs_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }\n"


def test_fully_qualified_names_follow_p4c() -> None:
    cp = check(program(EGRESS + """
    control Sub(inout m_t m) {
        action inner() { m.x = 1; }
        table st { actions = { inner; } }
        apply { st.apply(); }
    }
    control Ing(inout hs_t h, inout m_t m, inout standard_metadata_t sm) {
        @name("renamed") action a() { }
        @name(".top_level") action b() { }
        @name("tbl") table t { actions = { a; b; glob; NoAction; } }
        counter(4, CounterType.packets) c;
        Sub() s1;
        Sub() s2;
        apply { t.apply(); s1.apply(m); s2.apply(m); }
    }
    """, extra="action glob() { }\nregister<bit<8>>(4) reg;\n"))
    assert {t.fqn for t in cp.tables} == {"Ing.tbl", "Ing.s1.st", "Ing.s2.st"}
    assert {a.fqn for a in cp.actions} >= {"Ing.renamed", "top_level", "glob", "NoAction",
                                           "Ing.s1.inner", "Ing.s2.inner"}
    assert {i.fqn for i in cp.instances} == {"reg", "Ing.c"}
    assert cp.main_args["ig"].decl.name == "Ing"


def test_qualify_rules() -> None:
    prog = parse_text('@name("x") action a() {}\n@name(".y") action b() {}\naction c() {}', preprocess=False)
    a, b, c = prog.declarations
    assert qualify("Ing", a) == "Ing.x" and qualify("Ing", b) == "y" and qualify("Ing", c) == "Ing.c"
    assert qualify(None, a) == "x" and qualify(None, c) == "c"


def test_two_objects_with_one_name_are_an_error() -> None:
    src = program(EGRESS + """
    control Ing(inout hs_t h, inout m_t m, inout standard_metadata_t sm) {
        @name("same") action a() { }
        @name("same") action b() { }
        table t { actions = { a; b; } }
        apply { t.apply(); }
    }""")
    assert "two objects are named 'Ing.same'" in one_error(src).message


def test_duplicate_declarations_point_at_the_second_name() -> None:
    src = "const bit<8> K = 1;\nconst bit<8> K = 2;\n"
    e = one_error(src)
    assert e.message == "duplicate declaration of 'K'" and (e.line, e.col) == pos(src, "K", nth=1)
    src = "header d_t { bit<8> f; bit<8> f; }"
    e = one_error(src)
    assert "duplicate field 'f'" in e.message and (e.line, e.col) == pos(src, "f;", nth=1)
    assert errors("extern void f1(in bit<8> a);\nextern void f1(in bit<8> a, in bit<8> b);") == []


def test_package_arguments_are_checked_against_the_architecture() -> None:
    bad_dir = "control E(inout hs_t h, in m_t m, inout standard_metadata_t sm) { apply { } }\n"
    ing = "control Ing(inout hs_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }"
    e = one_error(program(bad_dir + ing))
    assert "control 'E' is not compatible with Egress<hs_t, m_t>" in e.message
    assert "'m' is in" in e.message
    wrong_h = "control Ing(inout m_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }"
    e = one_error(program(EGRESS + wrong_h))
    assert "parameter 'h' has type m_t, expected hs_t" in e.message
    src = BLOCKS + EGRESS + ing + "\nV1Switch(P(), V(), Ing(), P(), V(), D()) main;\n"
    e = one_error(src)
    assert "must be a control of type Egress<hs_t, m_t>, got parser 'P'" in e.message
    assert (e.line, e.col) == pos(src, "P()", nth=1)
    assert "expected 6, got 2" in one_error(BLOCKS + "V1Switch(P(), V()) main;").message


def test_program_without_main_warns_but_checks() -> None:
    cp = check(BLOCKS)
    assert cp.main is None and any("main" in w.message for w in cp.warnings)
