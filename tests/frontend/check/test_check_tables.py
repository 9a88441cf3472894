"""Tables: keys and match kinds, action lists, default actions, const entries, size and
attached resources; switch on action_run."""

from __future__ import annotations

from tests.frontend.check.checkutil import check, errors, in_control, one_error, one_warning, pos

ACTIONS = """
    action set(bit<8> v) { m.x = v; }
    action with_dir(inout bit<32> q, bit<8> v) { q = (bit<32>)v; }
    action nop() { }
"""


def table(props: str, apply: str = "t.apply();", extra: str = "") -> str:
    return in_control(apply, ACTIONS + extra + f"table t {{ {props} }}")


def test_a_complete_table_checks() -> None:
    cp = check(table("""
        key = { m.x : exact; m.y : ternary; hdr.h.isValid() : exact; }
        actions = { set; with_dir(m.y); @defaultonly nop; }
        default_action = set(3);
        size = 64;
        const entries = {
            (1, 0x10 &&& 0xF0, true) : set(7);
            (2, _, false) : with_dir(9);
        }
    """))
    (t,) = cp.tables
    assert t.fqn == "C.t" and t.size == 64
    assert [(k.name, k.match_kind) for k in t.keys] == [("m.x", "exact"), ("m.y", "ternary"),
                                                        ("hdr.h.$valid$", "exact")]  # p4c: isValid() keys are named $valid$
    assert [(a.action.fqn, a.default_only) for a in t.actions] == [("C.set", False), ("C.with_dir", False),
                                                                   ("C.nop", True)]
    assert t.default_action is not None and t.default_action.args == [3] and not t.default_action.is_const
    assert len(t.entries) == 2 and t.entries_const


def test_unknown_match_kind_and_non_match_kind() -> None:
    src = table("key = { m.x : fuzzy; } actions = { nop; }")
    e = one_error(src)
    assert e.message == "unknown match kind 'fuzzy'" and (e.line, e.col) == pos(src, "fuzzy")
    assert "is not a match kind" in one_error(table("key = { m.x : nop; } actions = { nop; }")).message
    assert "more than one lpm" in one_error(table("key = { m.x : lpm; m.y : lpm; } actions = { nop; }")).message
    assert "cannot have type" in one_error(table("key = { hdr.h : exact; } actions = { nop; }")).message


def test_action_list_entries_must_be_actions_with_directional_arguments() -> None:
    src = table("actions = { nope; }")
    e = one_error(src)
    assert e.message == "unknown action 'nope'" and (e.line, e.col) == pos(src, "nope")
    assert "is not an action" in one_error(table("actions = { r; }", extra="register<bit<8>>(1) r;")).message
    assert "expected 1, got 0" in one_error(table("actions = { with_dir; }")).message
    assert "appears twice" in one_error(table("actions = { nop; nop; }")).message
    assert "no actions property" in one_error(table("size = 4;")).message


def test_default_action_must_be_listed_and_fully_supplied() -> None:
    src = table("actions = { set; } default_action = nop();")
    e = one_error(src)
    line, col = pos(src, "= nop()")
    assert e.message == "'nop' is not an action of table 'C.t'" and (e.line, e.col) == (line, col + 2)
    assert "needs arguments" in one_error(table("actions = { set; } default_action = set;")).message
    assert "expected 1, got 0" in one_error(table("actions = { set; } default_action = set();")).message
    assert "compile-time constant" in one_error(table("actions = { set; } default_action = set(m.x);")).message
    assert errors(table("actions = { nop; } const default_action = nop;")) == []


def test_entries_are_typed_against_the_keys_and_match_kinds() -> None:
    assert "2 key(s)" in one_error(table(
        "key = { m.x : exact; m.y : ternary; } actions = { nop; } const entries = { 1 : nop(); }")).message
    assert "does not fit" in one_warning(table(
        "key = { m.x : exact; } actions = { nop; } const entries = { 300 : nop(); }")).message
    assert "needs a range key" in one_error(table(
        "key = { m.x : exact; } actions = { nop; } const entries = { 1 .. 3 : nop(); }")).message
    assert "ternary or lpm" in one_error(table(
        "key = { m.x : exact; } actions = { nop; } const entries = { 1 &&& 3 : nop(); }")).message
    assert "wildcard" in one_error(table(
        "key = { m.x : exact; } actions = { nop; } const entries = { _ : nop(); }")).message
    assert "not an action of table 'C.t'" in one_error(table(
        "key = { m.x : exact; } actions = { nop; } const entries = { 1 : set(1); }")).message
    assert "compile-time constant" in one_error(table(
        "key = { m.x : exact; } actions = { set; } const entries = { 1 : set(m.x); }")).message
    assert "has entries but no key" in one_error(table(
        "actions = { nop; } const entries = { 1 : nop(); }")).message
    assert errors(table("key = { m.x : range; } actions = { nop; } const entries = { 1 .. 3 : nop(); }")) == []


def test_size_and_attached_resources() -> None:
    assert "positive" in one_error(table("actions = { nop; } size = 0;")).message
    assert "compile-time constant" in one_error(table("actions = { nop; } size = m.y;")).message
    extra = "direct_counter(CounterType.packets) dc; counter(4, CounterType.packets) c;"
    cp = check(table("key = { m.x : exact; } actions = { nop; } counters = dc;", extra=extra))
    assert cp.tables[0].direct_counter is not None and cp.tables[0].direct_counter.fqn == "C.dc"
    assert "must be an instance of direct_counter" in one_error(
        table("actions = { nop; } counters = c;", extra=extra)).message
    two = in_control("", ACTIONS + extra + "table t1 { actions = { nop; } counters = dc; } "
                                           "table t2 { actions = { nop; } counters = dc; }")
    assert "already attached to table 'C.t1'" in one_error(two).message
    cp = check(table("key = { m.x : exact; } actions = { nop; } "
                     "implementation = action_profile(32);"))
    assert cp.tables[0].implementation is not None and cp.tables[0].implementation.args == [32]


def test_duplicate_property() -> None:
    assert "duplicate property 'size'" in one_error(table("actions = { nop; } size = 1; size = 2;")).message


def test_switch_on_action_run_names_the_tables_actions() -> None:
    ok = "switch (t.apply().action_run) { set: { m.x = 1; } nop: default: { } }"
    assert errors(table("actions = { set; nop; }", apply=ok)) == []
    bad = "switch (t.apply().action_run) { with_dir: { } }"
    src = table("actions = { set; nop; }", apply=bad)
    e = one_error(src)
    assert e.message == "'with_dir' is not an action of table 'C.t'" and (e.line, e.col) == pos(src, "with_dir:")
    dup = "switch (t.apply().action_run) { set: { } set: { } }"
    assert "duplicate" in one_error(table("actions = { set; }", apply=dup)).message
    assert "last case" in one_error(table("actions = { set; }",
                                          apply="switch (t.apply().action_run) { set: }")).message


def test_hit_and_miss() -> None:
    assert errors(table("actions = { nop; }", apply="if (t.apply().hit) { m.x = 1; } "
                                                    "else if (t.apply().miss) { m.x = 2; }")) == []
    assert "no member 'hot'" in one_error(table("actions = { nop; }", apply="if (t.apply().hot) { }")).message


def test_entry_rules_p4c_enforces() -> None:
    e = one_error(table("key = { m.x : exact; } actions = { set; @defaultonly nop; } "
                        "const entries = { 1 : nop(); }"))
    assert "@defaultonly" in e.message
    e = one_error(table("key = { m.x : exact; } actions = { nop; } entries = { priority = 3 : 1 : nop(); }"))
    assert "need no priorities" in e.message
    e = one_error(table("key = { m.x : ternary; } actions = { nop; } "
                        "entries = { 1 &&& 3 : nop(); priority = 2 : 2 &&& 3 : nop(); }"))
    assert "needs a priority" in e.message
    assert errors(table("key = { m.x : ternary; } actions = { nop; } "
                        "entries = { priority = 1 : 1 &&& 3 : nop(); priority = 2 : 2 &&& 3 : nop(); }")) == []


def test_complex_key_needs_a_name() -> None:
    src = table("key = { m.x + m.x : exact; } actions = { nop; }")
    e = one_error(src)
    assert "@name" in e.message and (e.line, e.col) == pos(src, "m.x + m.x")
    assert errors(table('key = { m.x + m.x : exact @name("sum"); } actions = { nop; }')) == []
