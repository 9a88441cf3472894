"""Type-name feedback, contextual keywords and annotation bodies."""

from __future__ import annotations

import pytest

from p4switch.frontend import ast as A
from p4switch.frontend.errors import P4Error
from p4switch.frontend.parser import parse_text


def parse(text: str) -> A.Program:
    return parse_text(text, "n.p4", preprocess=False)


def test_type_parameters_are_types_only_inside_their_declaration() -> None:
    prog = parse(
        "extern E<T> { E(); T get(); }\n"
        "extern void f<D>(in D d);\n"
        "const bit<8> T = 1;\n"  # outside E, T is an ordinary name ...
        "const bit<8> D = T + 1;\n"  # ... usable in expressions
    )
    ext, fn, t_const, d_const = prog.declarations
    assert isinstance(ext.methods[1].return_type, A.TypeName)
    assert isinstance(fn.params[0].type_ref, A.TypeName) and fn.params[0].type_ref.name == "D"
    assert t_const.name == "T" and isinstance(d_const.value.left, A.PathExpr)


def test_type_names_can_be_used_before_their_declaration_line() -> None:
    # the pre-scan sees the whole token stream, like the declare-before-use check later will
    prog = parse("struct s { later_t x; }\nheader later_t { bit<8> a; }\n")
    assert prog.declarations[0].fields[0].type_ref.name == "later_t"


def test_contextual_keywords_are_usable_as_names() -> None:
    prog = parse(
        "header h_t { bit<16> type; bit<8> key; bit<8> state; bit<8> priority; }\n"
        "struct s_t { h_t h; }\n"
        "control C(inout s_t s) {\n"
        "  table t { key = { s.h.type: exact; } actions = {} }\n"
        "  apply {\n"
        "    bit<8> key = s.h.key;\n"
        "    key = key + s.h.state;\n"
        "    if (t.apply().hit) { s.h.priority = key; }\n"
        "  }\n"
        "}\n"
    )
    header = prog.declarations[0]
    assert [f.name for f in header.fields] == ["type", "key", "state", "priority"]
    body = prog.declarations[2].body
    assert isinstance(body.stmts[1], A.AssignStmt) and body.stmts[1].lhs.name == "key"
    cond = body.stmts[2].cond
    assert cond.member == "hit" and cond.expr.method.member == "apply"


def test_fields_named_like_types_and_variables_of_those_types() -> None:
    prog = parse(
        "header ethernet { bit<48> dst; }\n"
        "struct headers { ethernet ethernet; }\n"
        "control C(inout headers hdr) { apply { hdr.ethernet.dst = 1; } }\n"
    )
    field = prog.declarations[1].fields[0]
    assert field.name == "ethernet" and field.type_ref.name == "ethernet"
    lhs = prog.declarations[2].body.stmts[0].lhs
    assert lhs.member == "dst" and lhs.expr.member == "ethernet"


def test_nested_type_arguments_close_with_shift_token() -> None:
    prog = parse(
        "extern R<T> { R(bit<32> n); }\n"
        "typedef tuple<bit<8>, bit<16>> pair_t;\n"
        "R<bit<32>>(4) r;\n"
        "R<R<bit<8>>>(1) rr;\n"
        "const bit<8> S = 8 >> 1;\n"
    )
    pair = prog.declarations[1].type_ref
    assert [t.width.value for t in pair.elements] == [8, 16]
    rr = prog.declarations[3].type_ref
    assert rr.args[0].base.name == "R" and rr.args[0].args[0].width.value == 8
    shift = prog.declarations[4].value
    assert isinstance(shift, A.BinaryExpr) and shift.op == ">>"


def test_separated_greater_than_signs_are_not_a_shift() -> None:
    with pytest.raises(P4Error):
        parse("const bit<8> S = 8 > > 1;\n")


def test_annotation_bodies() -> None:
    prog = parse(
        '@name("n") @empty() @flag @free(a b ! c) @kv[k = 1, s = "x"] @two(1, "b")\n'
        "const bit<8> X = 1;\n"
    )
    anns = {a.name: a for a in prog.declarations[0].annotations}
    assert anns["name"].string_arg() == "n" and anns["name"].tokens == ['"n"']
    assert anns["empty"].args == [] and anns["flag"].args is None and anns["flag"].tokens == []
    assert anns["free"].args is None and anns["free"].tokens == ["a", "b", "!", "c"]
    assert anns["free"].body == "a b ! c"
    assert anns["kv"].args is None and [(kv.name, type(kv.value)) for kv in anns["kv"].kv] == [
        ("k", A.IntLiteral), ("s", A.StringLiteral)]
    assert [type(a) for a in anns["two"].args] == [A.IntLiteral, A.StringLiteral]
    assert A.find_annotation(prog.declarations[0].annotations, "two") is anns["two"]
    assert anns["name"].loc.line == 1 and anns["name"].loc.col == 1


def test_annotations_on_params_fields_entries_and_statements() -> None:
    prog = parse(
        "control C(@optional in bit<8> a) {\n"
        "  action act(@name(\"p\") bit<8> p) {}\n"
        "  table t { key = { a: exact @name(\"k\"); } actions = { @tableonly act; }\n"
        "            const entries = { 1: @prio(1) act(2) @note; } }\n"
        "  apply { @atomic { } }\n"
        "}\n"
    )
    ctrl = prog.declarations[0]
    assert ctrl.params[0].annotations[0].name == "optional"
    assert ctrl.locals[0].params[0].annotations[0].string_arg() == "p"
    table = ctrl.locals[1]
    assert table.key.elements[0].annotations[0].string_arg() == "k"
    assert table.actions.actions[0].annotations[0].name == "tableonly"
    entry = table.entries.entries[0]
    assert entry.annotations[0].name == "note" and entry.action.annotations[0].name == "prio"
    assert ctrl.body.stmts[0].annotations[0].name == "atomic"


def test_this_and_direct_type_application() -> None:
    prog = parse(
        "control Sub(inout bit<8> x) { apply { x = 1; } }\n"
        "control C(inout bit<8> y) { apply { Sub.apply(y); } }\n"
        "extern V { V(); abstract void f(); }\n"
        "control D() { V() v = { void f() { this.g(); } }; apply {} }\n"
    )
    call = prog.declarations[1].body.stmts[0].call
    assert isinstance(call.method, A.TypeMemberExpr) and call.method.type_ref.name == "Sub"
    init_fn = prog.declarations[3].locals[0].initializer[0]
    inner = init_fn.body.stmts[0].call.method
    assert isinstance(inner.expr, A.ThisExpr) and inner.member == "g"


def test_empty_declarations_and_trailing_commas() -> None:
    prog = parse(";\nenum E { A, B, }\n;\nerror { X, }\n")
    assert [type(d) for d in prog.declarations] == [A.EnumDecl, A.ErrorDecl]
