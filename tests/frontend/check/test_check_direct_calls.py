"""Direct invocation ``C.apply(...)`` of a control/parser type: an instance named after
the type is declared in the caller (``C``, then ``C_0``...), as p4c's
InstantiateDirectCalls does, so names and the IR are those of an ordinary instance."""

from __future__ import annotations

from p4switch.frontend import ast
from tests.frontend.check.checkutil import check, errors

CALLEE = """
control Sub(inout bit<8> x) {
    action set() { x = 1; }
    table t { key = { x : exact; } actions = { set; } }
    apply { t.apply(); }
}
"""


def _caller(body: str) -> str:
    return CALLEE + "control C(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {\n" \
        f"apply {{\n{body}\n}}\n}}\n"


def test_direct_call_becomes_an_instance_named_after_the_type() -> None:
    checked = check(_caller("Sub.apply(m.x);"))
    c = next(d for d in checked.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "C")
    (inst,) = [d for d in c.locals if isinstance(d, ast.InstantiationDecl)]
    assert inst.name == "Sub"
    calls = [n for n in ast.walk(c.body) if isinstance(n, ast.CallExpr)]
    assert [n.call_kind for n in calls] == [ast.CallKind.CONTROL_APPLY]
    assert calls[0].method.expr.decl is inst


def test_two_direct_calls_get_two_instances() -> None:
    checked = check(_caller("Sub.apply(m.x);\nSub.apply(m.x);"))
    c = next(d for d in checked.program.declarations if isinstance(d, ast.ControlDecl) and d.name == "C")
    assert [d.name for d in c.locals if isinstance(d, ast.InstantiationDecl)] == ["Sub", "Sub_0"]


def test_direct_call_arguments_are_checked() -> None:
    errs = errors(_caller("Sub.apply(m.y);"))
    assert len(errs) == 1 and "bit<8>" in errs[0].message
