"""Parsers: states and transitions, select cases against the selector types (masks,
ranges, default, `_`, value sets), parser-only statements."""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend.check import ACCEPT_STATE, REJECT_STATE
from tests.frontend.check.checkutil import check, errors, one_error, one_warning, pos


def parser(states: str, locals_: str = "") -> str:
    return ("parser P(packet_in pkt, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {\n"
            f"{locals_}\n{states}\n}}\n")


def test_selects_with_every_kind_of_keyset() -> None:
    cp = check(parser("""
        state start {
            pkt.extract(hdr.h);
            transition select(hdr.h.a, hdr.h.b) {
                (1, 2): s2;
                (vs, 0x0 &&& 0xF): s2;
                (1 .. 3, _): accept;
                default: reject;
            }
        }
        state s2 { verify(hdr.h.a == 1, error.NoMatch); transition select(hdr.h.a) { vs: accept; _: s2; } }
    """, "value_set<bit<8>>(4) vs;"))
    targets = [n for n in ast.walk(cp.program) if isinstance(n, ast.SelectCase)]
    decls = [c.state.decl for c in targets]
    assert decls[2] is ACCEPT_STATE and decls[3] is REJECT_STATE
    assert decls[0].name == "s2" and isinstance(decls[0], ast.ParserState)
    (vs,) = cp.value_sets
    assert vs.fqn == "P.vs" and vs.size == 4 and str(vs.element) == "bit<8>"


def test_select_case_errors() -> None:
    src = parser("state start { transition select(hdr.h.a) { true: accept; } }")
    e = one_error(src)
    assert "bool" in e.message and (e.line, e.col) == pos(src, "true")
    assert "does not fit" in one_warning(parser("state start { transition select(hdr.h.a) { 300: accept; } }")).message
    assert "keyset expressions" in one_error(parser(
        "state start { transition select(hdr.h.a, hdr.h.b) { (1, 2, 3): accept; } }")).message
    assert "compile-time constant" in one_error(parser(
        "state start { transition select(hdr.h.a) { m.x: accept; } }")).message
    assert "holds bit<16>" in one_error(parser(
        "state start { transition select(hdr.h.a) { vs: accept; } }", "value_set<bit<16>>(2) vs;")).message


def test_transition_targets_must_exist() -> None:
    src = parser("state start { transition nowhere; }")
    e = one_error(src)
    assert e.message == "unknown parser state 'nowhere'" and (e.line, e.col) == pos(src, "nowhere")
    assert "no 'start' state" in one_error(parser("state s { transition accept; }")).message
    assert "duplicate parser state 'start'" in one_error(parser(
        "state start { transition accept; } state start { transition reject; }")).message
    assert "implicit" in one_error(parser("state start { transition accept; } state accept { }")).message


def test_parser_statements() -> None:
    assert errors(parser("""
        state start {
            pkt.extract(hdr.st.next);
            m.x = pkt.lookahead<bit<8>>();
            pkt.advance(32);
            bit<8> local = hdr.st.last.a;
            transition accept;
        }""")) == []
    assert "extract() needs a header" in one_error(parser(
        "state start { pkt.extract(m); transition accept; }")).message


def test_sub_parsers() -> None:
    cp = check("""
    parser Sub(packet_in p, inout hs_t h) { state start { p.extract(h.h); transition accept; } }
    """ + parser("state start { sub.apply(pkt, hdr); transition accept; }", "Sub() sub;"))
    calls = [n for n in ast.walk(cp.program) if isinstance(n, ast.CallExpr)
             and n.call_kind == ast.CallKind.PARSER_APPLY]
    assert len(calls) == 1
    assert "expected 2, got 1" in one_error("""
    parser Sub(packet_in p, inout hs_t h) { state start { transition accept; } }
    """ + parser("state start { sub.apply(pkt); transition accept; }", "Sub() sub;")).message
