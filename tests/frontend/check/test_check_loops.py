"""P4_16 v1.2.5 statements: compound assignments (parsed as ``lhs = lhs op rhs``) and
``for`` loops (three-clause and for-in), with break/continue."""

from __future__ import annotations

import pytest

from p4switch.frontend import ast
from p4switch.frontend import types as T
from tests.frontend.check.checkutil import check, errors, in_control, one_error, pos

OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "|+|", "|-|"]


def _assigns(snippet: str) -> list[ast.AssignStmt]:
    checked = check(snippet)
    return [n for n in ast.walk(checked.program) if isinstance(n, ast.AssignStmt)]


@pytest.mark.parametrize("op", OPS)
def test_compound_assignment_is_lhs_equals_lhs_op_rhs(op: str) -> None:
    rhs = "8w2" if op not in ("<<", ">>") else "2"
    (a,) = _assigns(in_control(f"hdr.h.a {op}= {rhs};"))[-1:]
    assert isinstance(a.rhs, ast.BinaryExpr) and a.rhs.op == op
    assert a.rhs.left is not a.lhs  # a copy: every AST node has one parent
    assert isinstance(a.rhs.left, ast.MemberExpr) and a.rhs.left.member == "a"
    assert a.rhs.type == T.BitType(8)


def test_compound_assignment_errors_are_located() -> None:
    src = in_control("hdr.h.a += hdr.h.c;")
    e = one_error(src)
    assert "bit<8>" in e.message and "bit<32>" in e.message
    assert (e.line, e.col) == pos(src, "hdr.h.a +=")


def test_three_clause_for_loop_has_its_own_scope() -> None:
    body = """
    for (bit<8> i = 0; i < hdr.h.a; i = i + 1) {
        if (i == 3) { continue; }
        hdr.h.b = hdr.h.b + 1;
        if (i == 5) { break; }
    }
    for (bit<8> i = 1, bit<8> j = 2; i < j; i += 1, j -= 1) { }
    """
    assert errors(in_control(body)) == []
    src = in_control("for (bit<8> i = 0; i < 4; i = i + 1) { } hdr.h.a = i;")
    e = one_error(src)
    assert "'i'" in e.message
    assert (e.line, e.col) == pos(src, "i;")


def test_for_condition_must_be_bool_and_break_needs_a_loop() -> None:
    assert "must be bool" in one_error(in_control("for (bit<8> i = 0; i; i = i + 1) { }")).message
    src = in_control("break;")
    e = one_error(src)
    assert "break" in e.message and (e.line, e.col) == pos(src, "break")
    assert "continue" in one_error(in_control("continue;")).message


def test_for_in_over_a_range_and_a_header_stack() -> None:
    body = """
    for (bit<8> i in 1 .. 4) { hdr.h.a = hdr.h.a + i; }
    for (h_t x in hdr.st) { hdr.h.b = hdr.h.b + (bit<16>)x.a; }
    """
    assert errors(in_control(body)) == []
    e = one_error(in_control("for (bit<8> x in hdr.st) { }"))
    assert "h_t" in e.message and "bit<8>" in e.message
