"""The parser accepts every P4_16 construct v1model programs use and builds the right nodes.

The corpus (programs/constructs.p4) is parsed once; each test looks at one construct.
"""

from __future__ import annotations

import pytest

from p4switch.frontend import ast as A
from p4switch.frontend.parser import parse_file
from tests.paths import FRONTEND_PROGRAMS

PROGRAMS = FRONTEND_PROGRAMS


@pytest.fixture(scope="module")
def prog() -> A.Program:
    return parse_file(PROGRAMS / "constructs.p4")


def decl(prog: A.Program, name: str, cls: type = A.Declaration):
    found = [d for d in prog.declarations if d.name == name and isinstance(d, cls)]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def local(parent, name: str):
    for d in parent.locals:
        if d.name == name:
            return d
    raise AssertionError(name)


def find_all(node: A.Node, cls: type) -> list:
    return [n for n in A.walk(node) if isinstance(n, cls)]


def test_every_node_has_a_location_in_the_source_file(prog: A.Program) -> None:
    for node in A.walk(prog):
        assert node.loc.file.endswith("constructs.p4"), node
        assert node.loc.line >= 1 and node.loc.col >= 1, node
        assert (node.loc.end_line, node.loc.end_col) >= (node.loc.line, node.loc.col), node


def test_error_and_match_kind_declarations(prog: A.Program) -> None:
    errors = [d for d in prog.declarations if isinstance(d, A.ErrorDecl)]
    assert [[m.name for m in e.members] for e in errors] == [["NoError", "PacketTooShort"], ["MyError"]]
    mk = next(d for d in prog.declarations if isinstance(d, A.MatchKindDecl))
    assert [m.name for m in mk.members] == ["exact", "ternary", "lpm", "range", "optional"]


def test_extern_object_with_constructor_generic_and_abstract_methods(prog: A.Program) -> None:
    reg = decl(prog, "register", A.ExternDecl)
    assert [p.name for p in reg.type_params] == ["T"]
    ctor, read, write = reg.methods
    assert ctor.is_constructor and ctor.return_type is None and ctor.params[0].name == "size"
    assert read.annotations[0].name == "noSideEffects"
    assert isinstance(read.params[0].type_ref, A.TypeName) and read.params[0].type_ref.name == "T"
    assert read.params[0].direction == "out" and write.params[1].direction == "in"
    virtual = decl(prog, "Virtual", A.ExternDecl)
    assert [m.is_abstract for m in virtual.methods] == [False, True, False]
    pin = decl(prog, "packet_in", A.ExternDecl)
    look = next(m for m in pin.methods if m.name == "lookahead")
    assert [t.name for t in look.type_params] == ["T"]
    assert isinstance(look.return_type, A.TypeName) and look.return_type.name == "T"


def test_extern_functions(prog: A.Program) -> None:
    verify = decl(prog, "verify", A.ExternFunctionDecl)
    assert isinstance(verify.return_type, A.VoidType)
    assert [type(p.type_ref) for p in verify.params] == [A.BoolType, A.ErrorType]
    ck = decl(prog, "checksum_of", A.ExternFunctionDecl)
    assert ck.annotations[0].name == "pure" and [t.name for t in ck.type_params] == ["D"]
    assert isinstance(ck.return_type, A.BitsType)


def test_typedef_newtype_and_constants(prog: A.Program) -> None:
    mac = decl(prog, "mac_t", A.TypedefDecl)
    assert isinstance(mac.type_ref, A.BitsType) and mac.type_ref.width.value == 48
    ip = decl(prog, "ip_addr_t", A.NewTypeDecl)
    assert ip.type_ref.width.value == 32
    cpu = decl(prog, "CPU_PORT", A.ConstDecl)
    assert isinstance(cpu.type_ref, A.TypeName) and cpu.type_ref.name == "port_t"
    assert (cpu.value.value, cpu.value.width, cpu.value.signed) == (255, 9, False)
    neg = decl(prog, "NEG", A.ConstDecl)
    assert isinstance(neg.type_ref, A.BitsType) and neg.type_ref.signed
    assert isinstance(neg.value, A.UnaryExpr) and neg.value.op == "-"
    assert (neg.value.operand.value, neg.value.operand.width, neg.value.operand.signed) == (5, 8, True)
    assert isinstance(decl(prog, "BIG", A.ConstDecl).type_ref, A.InfIntType)
    assert decl(prog, "BIG", A.ConstDecl).value.value == 1000000
    assert decl(prog, "DEBUG", A.ConstDecl).value.value is True
    assert [decl(prog, n, A.ConstDecl).value.value for n in ("BIN", "OCT", "DEC", "TYPE_IPV4")] == [
        0b1010, 0o17, 99, 0x0800]
    width = decl(prog, "COMPUTED_WIDTH", A.ConstDecl).type_ref.width
    assert isinstance(width, A.BinaryExpr) and width.op == "+"


def test_enums_plain_and_serializable(prog: A.Program) -> None:
    color = decl(prog, "Color", A.EnumDecl)
    assert color.underlying is None and [m.name for m in color.members] == ["RED", "GREEN", "BLUE"]
    assert all(m.value is None for m in color.members)
    proto = decl(prog, "Proto", A.EnumDecl)
    assert isinstance(proto.underlying, A.BitsType) and proto.underlying.width.value == 8
    assert [(m.name, m.value.value) for m in proto.members] == [("TCP", 6), ("UDP", 17), ("ICMP", 1)]


def test_headers_unions_stacks_structs_and_tuples(prog: A.Program) -> None:
    eth = decl(prog, "ethernet_h", A.HeaderDecl)
    assert [f.name for f in eth.fields] == ["dst", "src", "type"]  # `type` is a usable field name
    cpu = decl(prog, "packet_in_h", A.HeaderDecl)
    assert cpu.annotations[0].name == "controller_header"
    assert cpu.annotations[0].string_arg() == "packet_in"
    label = decl(prog, "label_h", A.HeaderDecl)
    bos = next(f for f in label.fields if f.name == "bos")
    assert isinstance(bos.type_ref, A.BitsType) and bos.type_ref.width.value == 1  # plain `bit`
    opt = decl(prog, "opt_h", A.HeaderDecl)
    assert isinstance(opt.fields[1].type_ref, A.VarbitType) and opt.fields[1].type_ref.width.value == 320
    union = decl(prog, "l4_u", A.HeaderUnionDecl)
    assert [f.name for f in union.fields] == ["tcp", "udp"]
    hdrs = decl(prog, "headers_t", A.StructDecl)
    stack = next(f for f in hdrs.fields if f.name == "labels").type_ref
    assert isinstance(stack, A.HeaderStackType) and stack.element.name == "label_h" and stack.size.value == 4
    meta = decl(prog, "meta_t", A.StructDecl)
    fl = meta.fields[0].annotations[0]
    assert fl.name == "field_list" and fl.args[0].value == 1
    pair = next(f for f in meta.fields if f.name == "pair").type_ref
    assert isinstance(pair, A.TupleType) and [type(t) for t in pair.elements] == [A.BitsType, A.BoolType]
    generic = decl(prog, "pair_s", A.StructDecl)
    assert [t.name for t in generic.type_params] == ["T"] and generic.fields[0].type_ref.name == "T"


def test_parser_control_and_package_types(prog: A.Program) -> None:
    ptype = decl(prog, "Parser", A.ParserTypeDecl)
    assert [t.name for t in ptype.type_params] == ["H", "M"]
    assert [p.direction for p in ptype.params] == [None, "out", "inout"]
    pkg = decl(prog, "Switch", A.PackageTypeDecl)
    first = pkg.params[0].type_ref
    assert isinstance(first, A.SpecializedType) and first.base.name == "Parser"
    assert [a.name for a in first.args] == ["H", "M"]


def test_parser_locals_and_states(prog: A.Program) -> None:
    p = decl(prog, "MyParser", A.ParserDecl)
    assert [type(d) for d in p.locals] == [A.ConstDecl, A.VarDecl, A.ValueSetDecl, A.InstantiationDecl]
    vs = local(p, "custom_types")
    assert vs.element_type.width.value == 16 and vs.size.value == 4
    assert [s.name for s in p.states] == ["start", "parse_label", "parse_ipv4", "parse_tcp", "parse_udp"]
    start = p.states[0]
    assert start.annotations[0].name == "name" and start.annotations[0].string_arg() == ".start"
    sel = start.transition.target
    assert isinstance(sel, A.SelectExpr) and len(sel.selectors) == 1
    kinds = [type(c.keys[0]) for c in sel.cases]
    assert kinds == [A.PathExpr, A.MaskExpr, A.RangeExpr, A.PathExpr, A.DefaultExpr]
    assert [c.state.name for c in sel.cases] == ["parse_ipv4", "parse_label", "reject", "parse_ipv4", "accept"]


def test_tuple_keysets_with_dont_care_and_default(prog: A.Program) -> None:
    state = decl(prog, "MyParser", A.ParserDecl).states[1]
    sel = state.transition.target
    assert len(sel.selectors) == 2
    keys = [[type(k) for k in c.keys] for c in sel.cases]
    assert keys == [[A.IntLiteral, A.DontCareExpr], [A.IntLiteral, A.PathExpr], [A.DontCareExpr, A.DefaultExpr]]
    assert isinstance(state.stmts[2], A.BlockStmt) and isinstance(state.stmts[2].stmts[0], A.VarDecl)


def test_header_stack_operations(prog: A.Program) -> None:
    state = decl(prog, "MyParser", A.ParserDecl).states[1]
    arg = state.stmts[0].call.args[0].value
    assert isinstance(arg, A.MemberExpr) and arg.member == "next"
    ctrl = decl(prog, "MyIngress", A.ControlDecl)
    methods = [c.method.member for c in find_all(ctrl.body, A.CallExpr) if isinstance(c.method, A.MemberExpr)]
    assert {"push_front", "pop_front", "setValid"} <= set(methods)
    members = {m.member for m in find_all(ctrl.body, A.MemberExpr)}
    assert {"lastIndex", "size"} <= members
    assert any(isinstance(i.expr, A.MemberExpr) and i.expr.member == "labels"
               for i in find_all(ctrl.body, A.IndexExpr))


def test_parser_statements_lookahead_verify_and_sub_parser(prog: A.Program) -> None:
    state = decl(prog, "MyParser", A.ParserDecl).states[2]
    verify = state.stmts[1].call
    err = verify.args[1].value
    assert isinstance(err, A.TypeMemberExpr) and isinstance(err.type_ref, A.ErrorType) and err.member == "MyError"
    look = state.stmts[2].init
    assert isinstance(look, A.CallExpr) and look.method.member == "lookahead"
    assert isinstance(look.type_args[0], A.BitsType) and look.type_args[0].width.value == 8
    assert isinstance(state.stmts[3], A.IfStmt)
    sub = state.stmts[4].call
    assert sub.method.member == "apply" and sub.method.expr.name == "sub"
    cases = state.transition.target.cases
    assert isinstance(cases[0].keys[0], A.TypeMemberExpr) and cases[0].keys[0].type_ref.name == "Proto"


def test_functions_including_generic(prog: A.Program) -> None:
    f = decl(prog, "add_one", A.FunctionDecl)
    assert isinstance(f.body.stmts[0], A.ReturnStmt) and isinstance(f.body.stmts[0].value, A.BinaryExpr)
    g = decl(prog, "pick", A.FunctionDecl)
    assert [t.name for t in g.type_params] == ["T"] and g.return_type.name == "T"
    assert isinstance(g.body.stmts[0].else_, A.BlockStmt)


def test_control_constructor_params_locals_and_instantiations(prog: A.Program) -> None:
    c = decl(prog, "MyIngress", A.ControlDecl)
    assert [p.name for p in c.ctor_params] == ["table_size"]
    regs = local(c, "regs")
    assert isinstance(regs, A.InstantiationDecl) and isinstance(regs.type_ref, A.SpecializedType)
    assert regs.type_ref.base.name == "register" and regs.type_ref.args[0].width.value == 32
    assert regs.args[0].value.value == 512
    pkts = local(c, "pkts")
    assert isinstance(pkts.type_ref, A.TypeName) and isinstance(pkts.args[1].value, A.TypeMemberExpr)
    v = local(c, "v")
    assert v.initializer is not None and isinstance(v.initializer[0], A.FunctionDecl)
    assert isinstance(local(c, "tmp"), A.VarDecl) and isinstance(local(c, "LIMIT"), A.ConstDecl)


def test_actions_with_directionless_and_directional_params(prog: A.Program) -> None:
    c = decl(prog, "MyIngress", A.ControlDecl)
    assert isinstance(local(c, "drop").body.stmts[0], A.ExitStmt)
    fwd = local(c, "forward")
    assert [(p.name, p.direction) for p in fwd.params] == [("port", None), ("dst", None)]
    color = local(c, "set_color")
    assert color.annotations[0].string_arg() == "ingress.set_color"
    assert [p.direction for p in color.params] == ["in", None]


def test_table_properties(prog: A.Program) -> None:
    t = local(decl(prog, "MyIngress", A.ControlDecl), "ipv4_lpm")
    assert isinstance(t, A.TableDecl)
    keys = t.key.elements
    assert [k.match_kind.name for k in keys] == ["lpm", "exact", "ternary"]
    assert keys[0].annotations[0].string_arg() == "dst"
    assert isinstance(keys[1].expr, A.CallExpr) and isinstance(keys[2].expr, A.SliceExpr)
    acts = t.actions.actions
    assert [a.name.name for a in acts] == ["forward", "drop", "set_color"]
    assert acts[1].annotations[0].name == "defaultonly" and not acts[1].has_parens
    assert acts[2].has_parens and isinstance(acts[2].args[0].value, A.TypeMemberExpr)
    assert t.prop("size").value.value == 1024
    da = t.default_action
    assert da.is_const and isinstance(da.value, A.CallExpr) and da.value.method.name == "drop"
    assert t.prop("counters").value.name == "hits"
    impl = t.prop("implementation").value
    assert isinstance(impl, A.ConstructorCallExpr) and impl.type_ref.name == "action_profile"
    custom = t.prop("custom_property")
    assert custom.annotations[0].name == "my_annotation" and custom.value.value == 5


def test_const_entries_and_priorities(prog: A.Program) -> None:
    c = decl(prog, "MyIngress", A.ControlDecl)
    fixed = local(c, "fixed")
    assert fixed.entries.is_const
    e0, e1, e2 = fixed.entries.entries
    assert isinstance(e0.keys[1], A.RangeExpr) and e0.action.name.name == "forward"
    assert [a.value.value for a in e0.action.args] == [1, 0xAABBCCDDEEFF]
    assert isinstance(e1.keys[1], A.DontCareExpr) and e1.action.has_parens and e1.action.args == []
    assert isinstance(e2.keys[1], A.DefaultExpr) and not e2.action.has_parens
    assert isinstance(fixed.default_action.value, A.CallExpr) and not fixed.default_action.is_const
    prio = local(c, "prioritized")
    assert not prio.entries.is_const
    p0, p1 = prio.entries.entries
    assert (p0.is_const, p0.priority.value, p1.is_const, p1.priority.value) == (True, 10, False, 20)
    assert isinstance(p0.keys[0], A.MaskExpr)


def test_switch_on_action_run_and_on_values(prog: A.Program) -> None:
    body = decl(prog, "MyIngress", A.ControlDecl).body
    switches = find_all(body, A.SwitchStmt)
    assert len(switches) == 2
    on_table, on_value = switches
    sel = on_table.expr
    assert isinstance(sel, A.MemberExpr) and sel.member == "action_run"
    assert isinstance(sel.expr, A.CallExpr) and sel.expr.method.member == "apply"
    labels = [c.label.name if isinstance(c.label, A.PathExpr) else type(c.label) for c in on_table.cases]
    assert labels == ["forward", "drop", "set_color", A.DefaultExpr]
    assert on_table.cases[1].body is None  # fall-through
    assert [type(c.label) for c in on_value.cases] == [A.TypeMemberExpr] * 3
    assert on_value.cases[1].body is None


def test_hit_miss_atomic_block_and_empty_statement(prog: A.Program) -> None:
    body = decl(prog, "MyIngress", A.ControlDecl).body
    members = {m.member for m in find_all(body, A.MemberExpr)}
    assert {"hit", "miss"} <= members
    atomic = [b for b in find_all(body, A.BlockStmt) if b.annotations]
    assert len(atomic) == 1 and atomic[0].annotations[0].name == "atomic"
    assert any(isinstance(s, A.EmptyStmt) for s in body.stmts)
    assert any(isinstance(s, A.ReturnStmt) for s in find_all(body, A.ReturnStmt))


def test_calls_named_args_type_args_and_struct_expressions(prog: A.Program) -> None:
    body = decl(prog, "MyIngress", A.ControlDecl).body
    calls = {c.method.name: c for c in find_all(body, A.CallExpr) if isinstance(c.method, A.PathExpr)}
    dg = calls["digest"]
    assert isinstance(dg.type_args[0], A.TypeName) and dg.type_args[0].name == "digest_t"
    assert isinstance(dg.args[1].value, A.ListExpr) and len(dg.args[1].value.elements) == 2
    assert calls["add_one"].args[0].name == "x"
    assert isinstance(calls["pick"].type_args[0], A.BitsType)
    assert isinstance(calls["log_msg"].args[0].value, A.StringLiteral)
    structs = find_all(body, A.StructExpr)
    assert [f.name for f in structs[0].fields] == ["first", "second"]
    assert len(find_all(body, A.InvalidHeaderExpr)) == 1


def test_package_instantiation(prog: A.Program) -> None:
    main = decl(prog, "main", A.InstantiationDecl)
    assert main.type_ref.name == "Switch"
    ctors = [a.value for a in main.args]
    assert all(isinstance(c, A.ConstructorCallExpr) for c in ctors)
    assert [c.type_ref.name for c in ctors] == ["MyParser", "MyIngress", "MyDeparser"]
    assert ctors[1].args[0].value.value == 1024
