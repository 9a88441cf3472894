"""Calls: argument counts and names, directions and l-values, read-only parameters,
generic extern functions/methods with inferred type arguments, where calls may appear."""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend import types as T
from tests.frontend.check.checkutil import check, errors, in_control, one_error, one_warning, pos

ACTIONS = """
    register<bit<32>>(16) r;
    action set(bit<8> v) { m.x = v; }
    action both(inout bit<8> q, bit<8> v) { q = v; }
"""


def calls(cp, kind=None):
    return [n for n in ast.walk(cp.program) if isinstance(n, ast.CallExpr)
            and (kind is None or n.call_kind == kind)]


def test_argument_count_is_checked_at_the_call() -> None:
    src = in_control("set(1, 2);", ACTIONS)
    e = one_error(src)
    assert e.message == "wrong number of arguments to 'set': expected 1, got 2"
    assert (e.line, e.col) == pos(src, "set(1, 2)")
    assert "expected 2, got 1" in one_error(in_control("r.write(1);", ACTIONS)).message


def test_named_arguments() -> None:
    assert errors(in_control("both(v = 1, q = m.x);", ACTIONS)) == []
    assert "no parameter named 'w'" in one_error(in_control("set(w = 1);", ACTIONS)).message
    assert "all or none" in one_error(in_control("both(m.x, v = 1);", ACTIONS)).message


def test_bound_args_follow_parameter_order() -> None:
    cp = check(in_control("both(v = 7, q = m.x);", ACTIONS))
    (call,) = [c for c in calls(cp, ast.CallKind.ACTION)]
    assert [(p.name, p.direction) for p, _ in call.bound_args] == [("q", "inout"), ("v", None)]
    assert call.bound_args[1][1].const_value == 7


def test_out_and_inout_arguments_must_be_writable() -> None:
    src = "control C2(inout m_t m, in bit<8> k) {\n" + ACTIONS + "apply { both(k, 1); r.read(5, 1); } }"
    errs = errors(src)
    assert [e.message for e in errs] == [
        "cannot pass read-only parameter 'k' to inout parameter 'q' of 'both'",
        "argument 'result' of 'register.read': type mismatch: expected bit<32>, got int",
    ]
    assert (errs[0].line, errs[0].col) == pos(src, "k, 1")


def test_assignments_to_read_only_things() -> None:
    src = "control C2(inout m_t m, in bit<8> k) { action a(bit<8> p) { p = 1; } apply { k = 1; } }"
    msgs = [e.message for e in errors(src)]
    assert msgs == ["cannot assign to read-only parameter 'p'", "cannot assign to read-only parameter 'k'"]
    assert "not an l-value" in one_error(in_control("hdr.st.size = 1;")).message


def test_out_arguments_take_no_implicit_conversion() -> None:
    e = one_error(in_control("bit<16> v; r.read(v, 0);", ACTIONS))
    assert e.message == "argument 'result' of 'register.read': width mismatch: bit<32> and bit<16> (use a cast)"


def test_generic_externs_infer_type_arguments() -> None:
    cp = check(in_control("""
        hash(m.y, HashAlgorithm.crc16, 32w0, {hdr.h.a, hdr.h.b}, 32w1024);
        random(m.x, 0, 100);
        digest<m_t>(1, m);
        digest(2, {hdr.h.a, sm.ingress_port});
        bit<32> v; r.read(v, 2); r.write(2, v + 1);
    """, ACTIONS))
    by_name = {c.method.decl.name: c for c in calls(cp) if isinstance(c.method, ast.PathExpr)}
    h = by_name["hash"]
    assert [str(t) for t in h.type_arg_types] == ["bit<32>", "bit<32>", "tuple<bit<8>, bit<16>>", "bit<32>"]
    rnd = by_name["random"]
    assert [str(t) for t in rnd.type_arg_types] == ["bit<8>"]
    assert all(a.type == T.BitType(8) for _, a in rnd.bound_args)  # the int constants became bit<8>
    assert [d.name for d in cp.digests] == ["m_t", "tuple<bit<8>, bit<9>>"]
    reads = [c for c in calls(cp, ast.CallKind.EXTERN_METHOD) if c.method.member == "read"]
    assert reads and reads[0].bound_args[0][0].type == T.BitType(32)


def test_generic_argument_mismatch_and_uninferable_type_argument() -> None:
    e = one_error(in_control("random(m.x, 8w0, 16w100);"))
    assert e.message == "argument 'hi' of 'random': width mismatch: bit<8> and bit<16> (use a cast)"
    e = one_error("""
    parser P(packet_in pkt, out hs_t hdr) { state start { pkt.lookahead(); transition accept; } }""")
    assert "cannot infer type argument T" in e.message


def test_overloads_are_chosen_by_argument_count() -> None:
    cp = check(in_control("mark_to_drop(sm); mark_to_drop(); log_msg(\"x\"); log_msg(\"{}\", {m.x});"))
    decls = [c.method.decl for c in calls(cp, ast.CallKind.EXTERN_FUNCTION)]
    assert [len(d.params) for d in decls] == [1, 0, 1, 2]


def test_extern_constructor_and_directionless_arguments_are_constants() -> None:
    src = in_control("", "register<bit<8>>(m.y) r2;")
    assert one_error(src).message == "argument 'size' of 'register' must be a compile-time constant"
    e = one_error(in_control("clone_preserving_field_list(CloneType.I2E, 5, m.x);"))
    assert e.message == "argument 'index' of 'clone_preserving_field_list' must be a compile-time constant"
    assert "expected 2, got 1" in one_error(in_control("", "counter(4) c;")).message
    assert "no constructor" in one_error(in_control("", "packet_out() po;")).message


def test_call_kinds() -> None:
    cp = check("""
    control Sub(inout m_t m) { apply { } }
    parser P(packet_in pkt, out hs_t hdr) {
        state start { pkt.extract(hdr.h); pkt.extract(hdr.st.next); transition accept; } }
    """ + in_control("""
        set(1); r.write(0, 1); hdr.h.setValid(); hdr.st.push_front(1); t.apply(); s.apply(m);
        m.y = hdr.h.minSizeInBits();
    """, ACTIONS + "table t { actions = { set; } } Sub() s;"))
    kinds = {c.call_kind for c in calls(cp)}
    assert {ast.CallKind.ACTION, ast.CallKind.EXTERN_METHOD, ast.CallKind.HEADER_METHOD,
            ast.CallKind.STACK_METHOD, ast.CallKind.TABLE_APPLY, ast.CallKind.CONTROL_APPLY,
            ast.CallKind.PACKET_METHOD, ast.CallKind.BUILTIN} <= kinds
    (size,) = [c for c in calls(cp, ast.CallKind.BUILTIN)]
    assert size.const_value == 56


def test_where_calls_may_appear() -> None:
    assert "cannot be applied inside an action" in one_error(in_control(
        "", "action b() {} table t { actions = { b; } } action a() { t.apply(); }")).message
    assert "verify() can only be called in a parser" in one_error(in_control(
        "verify(true, error.NoMatch);")).message
    assert "can only be applied in a control" in one_error("""
    control Sub(inout m_t m) { apply { } }
    parser P(packet_in pkt, out hs_t hdr, inout m_t m) { Sub() s; state start { s.apply(m); transition accept; } }
    """).message
    assert "use 't.apply()'" in one_error(in_control("t();", "action a() {} table t { actions = { a; } }")).message


def test_header_methods_need_writable_headers() -> None:
    src = "control C2(in hs_t hdr) { apply { hdr.h.setValid(); } }"
    assert one_error(src).message == "cannot call setValid() on read-only parameter 'hdr'"
    assert "no field or method 'setValidity'" in one_error(in_control("hdr.h.setValidity();")).message


def test_extract_needs_a_header_and_exit_return_rules() -> None:
    assert "extract() needs a header" in one_error("""
    parser P(packet_in pkt, out hs_t hdr) { state start { pkt.extract(hdr); transition accept; } }
    """).message
    src = in_control("", "action a() { return 1; }")
    e = one_error(src)
    assert e.message == "return in an action cannot have a value" and (e.line, e.col) == pos(src, "return")
    assert "does not return a value" in one_error("bit<8> f(in bit<8> x) { if (x == 0) { return 1; } }").message
    assert errors("bit<8> f(in bit<8> x) { if (x == 0) { return 1; } else { return x; } }") == []
    assert "returns void" in one_error("void g() { return 1; }").message


def test_serialized_data_needs_widths() -> None:
    e = one_error(in_control("hash(m.y, HashAlgorithm.crc16, 32w0, {hdr.h.a, 5}, 32w1024);"))
    assert "has type int" in e.message and "argument 'data' of 'hash'" in e.message
    src = in_control("hash(m.y, HashAlgorithm.crc16, 32w0, {hdr.h.a, 5}, 32w1024);")
    assert (e.line, e.col) == pos(src, "5}")


def test_instances_carry_their_type() -> None:
    cp = check(in_control("", ACTIONS))
    (inst,) = [d for d in cp.program.declarations[-1].locals if isinstance(d, ast.InstantiationDecl)]
    assert inst.instance_type == cp.instance("C.r").type and str(inst.instance_type) == "register<bit<32>>"


def test_static_assert_is_evaluated_by_the_checker() -> None:
    assert errors("const bit<8> K = 3;\nconst bool ok = static_assert(K == 3, \"K is 3\");") == []
    e = one_error("const bit<8> K = 3;\nconst bool ok = static_assert(K == 4, \"K must be 4\");")
    assert e.message == "static assertion failed: K must be 4"
    assert "compile-time constant" in one_error(in_control("static_assert(m.f);")).message


def test_default_parameter_values() -> None:
    cp = check("bit<8> f(in bit<8> a, in bit<8> b = 7) { return a + b; }\n" + in_control("m.x = f(1); m.x = f(1, 2);"))
    (f1, f2) = [c for c in calls(cp, ast.CallKind.FUNCTION)]
    assert f1.bound_args[1][1] is None and f1.bound_args[1][0].has_default
    default = f1.bound_args[1][0].decl.default
    assert default.type == T.BitType(8) and default.const_value == 7
    assert "does not fit" in one_warning("bit<8> g(in bit<8> a = 300) { return a; }").message
    assert "expected 1 to 2, got 3" in one_error(
        "bit<8> f(in bit<8> a, in bit<8> b = 7) { return a + b; }\n" + in_control("m.x = f(1, 2, 3);")).message
