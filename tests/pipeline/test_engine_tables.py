"""The engine's copy of the table state (p4switch/state/dataplane.py, engine/src/p4/p4tables.rs)
against the differential oracle's lookups in the P4Runtime core's own index: the same
writes (insert, modify, delete, defaults, undo, members, groups) into both runtime states,
then the same frames through both, on every kind of match and an action selector."""

from __future__ import annotations

import gc
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4switch.state import Lpm, OptionalMatch, Range, Ternary
from p4switch.state.errors import StateError
from p4switch.state.profiles import GroupRef, MemberRef

from .helpers import Loaded
from .test_engine_oracle import pair, run_both

pytest.importorskip("hbh_engine")

TABLES = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<32> c; bit<8> d; }
struct hs { h_t h; }
struct m_t { bit<8> o1; bit<8> o2; bit<8> o3; bit<8> o4; }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    action a1(bit<8> v) { m.o1 = v; }
    action a2(bit<8> v) { m.o2 = v; }
    action a3(bit<8> v) { m.o3 = v; }
    action fwd(bit<9> port, bit<8> v) { sm.egress_spec = port; m.o4 = v; }
    action nop() { }
    table t_exact { key = { hdr.h.a : exact; hdr.h.b : exact; } actions = { a1; nop; } default_action = nop(); }
    table t_lpm { key = { hdr.h.c : lpm; } actions = { a2; nop; } default_action = nop(); }
    table t_tern {
        key = { hdr.h.a : ternary; hdr.h.b : range; hdr.h.d : optional; }
        actions = { a3; nop; }
        default_action = nop();
    }
    action_selector(HashAlgorithm.crc16, 16, 8) sel;
    table t_sel {
        key = { hdr.h.a : exact; hdr.h.b : selector; hdr.h.c : selector; hdr.h.d : selector; }
        actions = { fwd; nop; }
        implementation = sel;
    }
    apply {
        switch (t_exact.apply().action_run) { a1: { hdr.h.d = hdr.h.d + 1; } }
        t_lpm.apply();
        t_tern.apply();
        t_sel.apply();
    }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

PREFIXES = [0x0A000000, 0x0A010000, 0x0A010100, 0x0A010101, 0x0B000000]


def _prefix(base: int, plen: int) -> Lpm:
    return Lpm(base & (0xFFFFFFFF ^ (0xFFFFFFFF >> plen)), plen)


small = st.integers(0, 3)
byte = st.integers(0, 255)
exact_match = st.fixed_dictionaries({"hdr.h.a": small, "hdr.h.b": small})
lpm_match = st.builds(lambda b, n: {"hdr.h.c": _prefix(b, n)}, st.sampled_from(PREFIXES),
                      st.sampled_from([8, 16, 24, 32]))


@st.composite
def tern_match(draw: st.DrawFn) -> dict:
    m: dict = {}
    if draw(st.booleans()):
        mask = draw(st.sampled_from([0x01, 0x02, 0x03, 0xFF]))
        m["hdr.h.a"] = Ternary(draw(small) & mask, mask)
    if draw(st.booleans()):
        lo = draw(small)
        m["hdr.h.b"] = Range(lo, lo + draw(small))
    if draw(st.booleans()):
        m["hdr.h.d"] = OptionalMatch(draw(small))
    return m


ops = st.one_of(
    st.tuples(st.just("insert"), st.just("t_exact"), exact_match, st.just(0), byte),
    st.tuples(st.just("insert"), st.just("t_lpm"), lpm_match, st.just(0), byte),
    st.tuples(st.just("insert"), st.just("t_tern"), tern_match(), st.integers(1, 3), byte),
    st.tuples(st.sampled_from(["modify", "delete", "delete_undo", "modify_undo"]),
              st.just("t_exact"), exact_match, st.just(0), byte),
    st.tuples(st.sampled_from(["modify", "delete", "delete_undo", "modify_undo"]),
              st.just("t_lpm"), lpm_match, st.just(0), byte),
    st.tuples(st.sampled_from(["modify", "delete", "delete_undo"]), st.just("t_tern"), tern_match(),
              st.integers(1, 3), byte),
    st.tuples(st.sampled_from(["default", "reset_default"]), st.sampled_from(["t_exact", "t_lpm", "t_tern"]),
              st.just({}), st.just(0), byte),
    st.tuples(st.sampled_from(["member", "member_modify", "member_delete"]), st.integers(1, 4), st.just({}),
              st.integers(1, 3), byte),
    st.tuples(st.sampled_from(["group", "group_modify", "group_delete"]), st.integers(1, 2),
              st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3)), max_size=3, unique_by=lambda x: x[0]),
              st.just(0), byte),
    st.tuples(st.sampled_from(["sel_member", "sel_group", "sel_delete"]), small, st.just({}),
              st.integers(1, 4), byte),
)


def apply_op(sw: Loaded, op: tuple) -> None:
    """One write into ``sw``'s runtime state; a write P4Runtime refuses changes nothing."""
    kind, what, match, prio, v = op
    ids = sw.state.actions_by_name
    a_of = {"t_exact": "I.a1", "t_lpm": "I.a2", "t_tern": "I.a3"}
    prof = sw.state.action_profiles_by_name["I.sel"]
    try:
        if kind in ("member", "member_modify", "member_delete"):
            fwd = ids["I.fwd"].id
            if kind == "member":
                prof.insert_member(what, fwd, (prio, v))
            elif kind == "member_modify":
                prof.modify_member(what, fwd, (prio, v))
            else:
                prof.delete_member(what)
            return
        if kind in ("group", "group_modify", "group_delete"):
            if kind == "group":
                prof.insert_group(what, match)
            elif kind == "group_modify":
                prof.modify_group(what, match)
            else:
                prof.delete_group(what)
            return
        if kind.startswith("sel_"):
            t = sw.table("I.t_sel")
            key = {"hdr.h.a": what}
            if kind == "sel_delete":
                t.delete(key)
            else:
                ref = MemberRef(prio) if kind == "sel_member" else GroupRef(1 + prio % 2)
                (t.modify(key, action_id=ref) if t.get(key) is not None else t.insert(key, ref))
            return
        t = sw.table(f"I.{what}")
        aid = ids[a_of[what]].id
        if kind == "insert":
            t.insert(match, aid, (v,), prio)
        elif kind == "modify":
            t.modify(match, prio, action_id=aid, params=(v,))
        elif kind == "modify_undo":
            e = t.get(match, prio)
            snap = e.snapshot() if e is not None else None
            e = t.modify(match, prio, action_id=aid, params=(v,))
            t.restore_snapshot(e, snap)
        elif kind == "delete":
            t.delete(match, prio)
        elif kind == "delete_undo":
            t.restore(t.delete(match, prio))
        elif kind == "default":
            t.set_default(aid, (v,))
        else:
            t.reset_default()
    except StateError:
        pass


frames = st.builds(lambda a, b, c, d: struct.pack("!BHIB", a, b, c, d), small, small,
                   st.sampled_from([p | x for p in PREFIXES for x in (0, 1, 0x101)]), small)


@pytest.fixture(scope="module")
def tables_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Loaded, Loaded]:
    path = tmp_path_factory.mktemp("engine") / "tables.p4"
    path.write_text(TABLES)
    return pair(str(path))


def _reset(sw: Loaded) -> None:
    for name in ("I.t_exact", "I.t_lpm", "I.t_tern", "I.t_sel"):
        t = sw.table(name)
        t.clear()
        if name != "I.t_sel":
            t.reset_default()
    prof = sw.state.action_profiles_by_name["I.sel"]
    for gid in list(prof.groups):
        prof.delete_group(gid)
    for mid in list(prof.members):
        prof.delete_member(mid)


def test_every_table_applies_in_the_engine(tables_pair: tuple[Loaded, Loaded]) -> None:
    engine, _ = tables_pair
    assert engine.pipeline.engine_called.get("ingress") is None
    assert sorted(engine.pipeline.engine.table_ids()) == sorted(
        engine.table(f"I.{n}").id for n in ("t_exact", "t_lpm", "t_tern", "t_sel"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(ops, max_size=30), batch=st.lists(frames, min_size=1, max_size=6))
def test_table_writes_engine_matches_the_oracle(tables_pair: tuple[Loaded, Loaded], writes: list,
                                                batch: list) -> None:
    engine, oracle = tables_pair
    for sw in (engine, oracle):
        _reset(sw)
    for op in writes:
        for sw in (engine, oracle):
            apply_op(sw, op)
        for name in ("I.t_exact", "I.t_lpm", "I.t_tern", "I.t_sel"):
            assert engine.pipeline.engine.table_len(engine.table(name).id) == len(engine.table(name))
    for frame in batch:
        run_both(engine, oracle, frame, 1, 1000)


tern_ops = st.tuples(st.sampled_from(["insert", "insert", "delete", "modify"]), st.just("t_tern"), tern_match(),
                     st.integers(1, 2), byte)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(tern_ops, min_size=2, max_size=12))
def test_overlapping_ternary_entries_engine_matches_the_oracle(tables_pair: tuple[Loaded, Loaded],
                                                               writes: list) -> None:
    """Overlapping ternary/range/optional entries of equal priorities: the same entry wins
    (ties go to the entry written first) for every key of the small domain."""
    engine, oracle = tables_pair
    for sw in (engine, oracle):
        _reset(sw)
        for op in writes:
            apply_op(sw, op)
    for a in range(4):
        for b in range(4):
            for d in range(4):
                run_both(engine, oracle, struct.pack("!BHIB", a, b, 0, d), 1, 1000)


def test_a_group_spreads_flows_over_its_members_as_the_oracle(tables_pair: tuple[Loaded, Loaded]) -> None:
    """A selector group of three members: flows differing only in selector fields go to
    every member, each flow to the same one on the engine and the oracle."""
    engine, oracle = tables_pair
    for sw in (engine, oracle):
        _reset(sw)
        for op in [("member", m, {}, m, 10 * m) for m in (1, 2, 3)] + [("group", 1, [(1, 1), (2, 1), (3, 2)], 0, 0),
                                                                        ("sel_group", 0, {}, 0, 0)]:
            apply_op(sw, op)
    seen = set()
    for c in range(64):
        frame = struct.pack("!BHIB", 0, c, 0x0A000000 | c, c & 3)
        run_both(engine, oracle, frame, 1, 1000)
        pkt = engine.pipeline.new_packet(frame, 1, 1000)
        engine.pipeline.run_ingress(pkt)
        seen.add(pkt.get("meta.o4"))
    assert seen == {10, 20, 30}


@pytest.mark.parametrize("algo", ["crc32", "csum16"])
def test_other_selector_hashes_match_the_oracle(tmp_path_factory: pytest.TempPathFactory, algo: str) -> None:
    """The engine computes the selector's other hash algorithms as the closures do."""
    path = tmp_path_factory.mktemp("engine") / f"tables_{algo}.p4"
    path.write_text(TABLES.replace("HashAlgorithm.crc16", f"HashAlgorithm.{algo}"))
    engine, oracle = pair(str(path))
    assert engine.pipeline.engine_called.get("ingress") is None
    for sw in (engine, oracle):
        for op in [("member", m, {}, m, 10 * m) for m in (1, 2, 3)] + [("group", 1, [(1, 1), (2, 2), (3, 3)], 0, 0),
                                                                        ("sel_group", 0, {}, 0, 0)]:
            apply_op(sw, op)
    for c in range(64):
        run_both(engine, oracle, struct.pack("!BHIB", 0, c * 7, 0x0A000000 | c, c & 3), 1, 1000)


def test_writes_reach_only_live_programs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A dropped pipeline stops receiving its state's writes (the state holds it weakly)."""
    path = tmp_path_factory.mktemp("engine") / "tables.p4"
    path.write_text(TABLES)
    engine, _ = pair(str(path))
    t = engine.table("I.t_exact")
    sinks = t._sinks
    assert sinks
    del engine
    gc.collect()
    t.insert({"hdr.h.a": 1, "hdr.h.b": 1}, t.info.initial_default.action_id)
    assert not sinks
