"""P4Info after the rewrites p4c's front end makes before it writes P4Info: the implicit
``NoAction`` default action, and tables that no apply block applies left out."""

from __future__ import annotations

from pathlib import Path

from p4.config.v1 import p4info_pb2

from p4switch.frontend.p4info import build_p4info
from p4switch.frontend.passes import compile_file
from tests.frontend.p4info.test_p4info_programs import SKELETON

REF = p4info_pb2.ActionRef


def _info(tmp_path: Path, body: str) -> tuple[p4info_pb2.P4Info, object]:
    src = tmp_path / "prog.p4"
    src.write_text("#include <core.p4>\n#include <v1model.p4>\n" + SKELETON.replace("BODY", body))
    checked = compile_file(src)
    return build_p4info(checked), checked


def _by_name(items):
    return {x.preamble.name: x for x in items}


def test_table_without_default_action_gets_noaction_as_p4c_adds_it(tmp_path):
    body = """
    action set(bit<8> v) { hdr.h.f = v; }
    table t { key = { hdr.h.f : exact; } actions = { set; } }
    apply { t.apply(); }
    """
    info, checked = _info(tmp_path, body)
    actions = _by_name(info.actions)
    noaction = actions["NoAction"]
    assert list(noaction.preamble.annotations) == ['@noWarn("unused")']
    t = _by_name(info.tables)["I.t"]
    refs = {r.id: (r.scope, list(r.annotations)) for r in t.action_refs}
    assert refs == {actions["I.set"].preamble.id: (REF.TABLE_AND_DEFAULT, []),
                    noaction.preamble.id: (REF.DEFAULT_ONLY, ["@defaultonly"])}
    assert t.initial_default_action.action_id == noaction.preamble.id
    assert t.const_default_action_id == 0  # p4c's implicit default is not const
    (table,) = checked.tables  # the IR the pipeline reads has it too
    assert table.default_action is not None and table.default_action.action.fqn == "NoAction"
    assert not table.default_action.is_const


def test_table_listing_noaction_gets_no_second_ref(tmp_path):
    body = """
    table t { key = { hdr.h.f : exact; } actions = { NoAction; } }
    apply { t.apply(); }
    """
    info, _ = _info(tmp_path, body)
    (t,) = info.tables
    (ref,) = t.action_refs
    assert (ref.scope, list(ref.annotations)) == (REF.TABLE_AND_DEFAULT, [])
    assert t.initial_default_action.action_id == ref.id


def test_written_default_action_is_kept(tmp_path):
    body = """
    action set(bit<8> v) { hdr.h.f = v; }
    table t { key = { hdr.h.f : exact; } actions = { set; } default_action = set(3); }
    apply { t.apply(); }
    """
    info, _ = _info(tmp_path, body)
    assert set(_by_name(info.actions)) == {"I.set"}
    (t,) = info.tables
    assert len(t.action_refs) == 1


def test_table_no_apply_block_applies_is_not_in_p4info(tmp_path):
    body = """
    action only_unused(bit<8> v) { hdr.h.f = v; }
    action used(bit<8> v) { hdr.h.f = v; }
    table unused_t { key = { hdr.h.f : exact; } actions = { only_unused; } }
    table used_t { key = { hdr.h.f : exact; } actions = { used; } }
    apply { used_t.apply(); }
    """
    info, _ = _info(tmp_path, body)
    assert set(_by_name(info.tables)) == {"I.used_t"}
    assert set(_by_name(info.actions)) == {"I.used", "NoAction"}


def test_key_names_follow_p4c_table_key_names(tmp_path):
    extra_field = SKELETON.replace("header h_t { bit<8> f; }",
                                   'header h_t { bit<8> f; @name("renamed") bit<8> g; }')
    src = tmp_path / "keys.p4"
    body = """
    table t {
        key = { hdr.h.isValid() : exact; hdr.h.g : exact; hdr.h.f & 0x0F : ternary; hdr.h.f[3:0] : exact; }
        actions = { NoAction; }
    }
    apply { t.apply(); }
    """
    src.write_text("#include <core.p4>\n#include <v1model.p4>\n" + extra_field.replace("BODY", body))
    (t,) = build_p4info(compile_file(src)).tables
    assert [m.name for m in t.match_fields] == ["hdr.h.$valid$", "hdr.h.renamed", "hdr.h.f & 0xf", "hdr.h.f[3:0]"]


def test_program_without_main_has_an_empty_p4info(tmp_path):
    src = tmp_path / "nomain.p4"
    src.write_text("#include <core.p4>\n#include <v1model.p4>\n"
                   + SKELETON.replace("BODY", "apply { }").replace("V1Switch(P(), VC(), I(), E(), C(), D()) main;", ""))
    checked = compile_file(src)
    assert any("main" in w.message for w in checked.warnings)
    assert build_p4info(checked) == p4info_pb2.P4Info()


def test_a_control_instantiated_twice_has_two_registers_with_unique_aliases(tmp_path):
    extra = """
    control Sub(inout bit<8> x)(bool flag) {
        register<bit<16>>(8) r;
        apply { if (flag) { r.write(0, (bit<16>)x); } }
    }
    """
    body = """
    Sub(true) c1;
    Sub(false) c2;
    apply { c1.apply(hdr.h.f); c2.apply(hdr.h.f); }
    """
    src = tmp_path / "twice.p4"
    text = SKELETON.replace("BODY", body).replace("control VC", extra + "control VC")
    src.write_text("#include <core.p4>\n#include <v1model.p4>\n" + text)
    info = build_p4info(compile_file(src))
    assert {(r.preamble.name, r.preamble.alias) for r in info.registers} == {
        ("I.c1.r", "c1.r"), ("I.c2.r", "c2.r")}


def test_named_inline_action_profile_keeps_its_name_as_written(tmp_path):
    body = """
    action set(bit<8> v) { hdr.h.f = v; }
    table t {
        key = { hdr.h.f : exact; }
        actions = { set; }
        @name("ap") implementation = action_profile(32w128);
    }
    apply { t.apply(); }
    """
    info, _ = _info(tmp_path, body)
    (ap,) = info.action_profiles
    assert ap.preamble.name == "ap"
    assert info.tables[0].implementation_id == ap.preamble.id


def test_serializable_enum_fields_have_no_type_name_and_defaults_are_padded(tmp_path):
    extra = "enum bit<8> Kind { A = 1, B = 2 }\n"
    body = """
    action set(Kind k, bit<16> v) { hdr.h.f = (bit<8>)k; }
    table t { key = { hdr.h.f : exact; } actions = { set; } default_action = set(Kind.B, 5); }
    apply { t.apply(); }
    """
    src = tmp_path / "enum.p4"
    src.write_text("#include <core.p4>\n#include <v1model.p4>\n" + extra + SKELETON.replace("BODY", body))
    info = build_p4info(compile_file(src))
    (action,) = [a for a in info.actions if a.preamble.name == "I.set"]
    assert [(p.name, p.bitwidth, p.type_name.name) for p in action.params] == [("k", 8, ""), ("v", 16, "")]
    assert "Kind" in info.type_info.serializable_enums
    (t,) = info.tables
    assert [a.value for a in t.initial_default_action.arguments] == [b"\x02", b"\x00\x05"]


def test_unused_instances_and_empty_entries(tmp_path):
    body = """
    register<bit<8>>(4) unused_r;
    register<bit<8>>(4) used_r;
    action set(bit<8> v) { used_r.write(0, v); }
    table t { key = { hdr.h.f : exact; } actions = { set; } const entries = { } }
    apply { t.apply(); }
    """
    info, _ = _info(tmp_path, body)
    # p4c's RemoveUnusedDeclarations keeps extern instances nothing refers to
    assert sorted(r.preamble.name for r in info.registers) == ["I.unused_r", "I.used_r"]
    (t,) = info.tables
    assert t.is_const_table and not t.has_initial_entries


def test_actions_called_directly_have_no_control_plane_parameters(tmp_path):
    """p4c's RemoveActionParameters binds a direct call's arguments inside the action."""
    body = """
    action both(bit<8> v) { hdr.h.f = v; }
    action direct(bit<8> v) { hdr.h.f = v; }
    table t { key = { hdr.h.f : exact; } actions = { both; } }
    apply { t.apply(); direct(8w1); direct(8w2); }
    """
    info, _ = _info(tmp_path, body)
    params = {a.preamble.name: [p.name for p in a.params] for a in info.actions}
    assert params["I.both"] == ["v"] and params["I.direct"] == []


def test_folded_branches_apply_and_call_nothing(tmp_path):
    """A table or action used only under a constant-false condition is gone, as in p4c."""
    body = """
    action gone() { hdr.h.f = 1; }
    table dead { key = { hdr.h.f : exact; } actions = { gone; } }
    table live { key = { hdr.h.f : exact; } actions = { NoAction; } }
    apply {
        if (true) { live.apply(); } else { gone(); }
        hdr.h.f = false ? (dead.apply().hit ? 8w1 : 8w2) : 8w3;
    }
    """
    info, _ = _info(tmp_path, body)
    assert [t.preamble.name for t in info.tables] == ["I.live"]
    assert "I.gone" not in {a.preamble.name for a in info.actions}


def test_a_table_applied_in_another_tables_key_is_kept(tmp_path):
    body = """
    table sub { key = { hdr.h.f : exact; } actions = { NoAction; } }
    table top { key = { sub.apply().hit : exact @name("sub_hit"); } actions = { NoAction; } }
    apply { top.apply(); }
    """
    info, _ = _info(tmp_path, body)
    assert sorted(t.preamble.name for t in info.tables) == ["I.sub", "I.top"]


def test_selector_size_annotations_as_p4c_reads_them(tmp_path):
    body = """
    table t {
        key = { hdr.h.f : selector; }
        actions = { NoAction; }
        @name("sel") @max_group_size(200) @selector_size_semantics("sum_of_members") @max_member_weight(40)
        implementation = action_selector(HashAlgorithm.identity, 32w1024, 32w10);
    }
    table p {
        key = { hdr.h.f : exact; }
        actions = { NoAction; }
        @name("prof") @max_group_size(200)
        implementation = action_profile(32w128);
    }
    apply { t.apply(); p.apply(); }
    """
    info, _ = _info(tmp_path, body)
    by = {a.preamble.name: a for a in info.action_profiles}
    sel, prof = by["sel"], by["prof"]
    assert (sel.max_group_size, sel.sum_of_members.max_member_weight) == (200, 40)
    assert not sel.preamble.annotations
    assert prof.max_group_size == 0 and not prof.HasField("sum_of_weights")


def test_platform_properties_from_the_package_annotation(tmp_path):
    src = tmp_path / "prog.p4"
    program = SKELETON.replace("BODY", "apply { }")
    program = program.replace("V1Switch(", "@platform_property(multicast_group_table_size = 10)\nV1Switch(", 1)
    src.write_text("#include <core.p4>\n#include <v1model.p4>\n" + program)
    info = build_p4info(compile_file(src))
    assert info.pkg_info.platform_properties.multicast_group_table_size == 10
