"""TableState: P4Runtime validation codes, default entries, and lookup semantics."""

from __future__ import annotations

import random

import pytest

from p4switch.state import (
    Code,
    Exact,
    Lpm,
    MeterConfig,
    OptionalMatch,
    Range,
    RuntimeState,
    StateError,
    Ternary,
)
from tests.p4runtime.p4info_builder import EXACT, LPM, RANGE, TERNARY, P4InfoBuilder, demo_p4info


@pytest.fixture()
def demo():
    p4info, ids = demo_p4info()
    return RuntimeState.from_p4info(p4info), ids


def code_of(fn, *args, **kwargs) -> Code:
    with pytest.raises(StateError) as exc:
        fn(*args, **kwargs)
    return exc.value.code


# ------------------------------------------------------------------ lookups


def test_lpm_longest_prefix_wins(demo):
    st, ids = demo
    t = st.tables_by_name["MyIngress.ipv4_lpm"]
    fwd = ids["MyIngress.forward"]
    t.insert({"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, fwd, (1, 1))
    t.insert({"hdr.ipv4.dstAddr": Lpm(0x0A010000, 16)}, fwd, (2, 2))
    t.insert({"hdr.ipv4.dstAddr": Lpm(0x0A010200, 24)}, fwd, (3, 3))
    assert t.lookup((0x0A010203,)).action.params == (3, 3)
    assert t.lookup((0x0A01FF01,)).action.params == (2, 2)
    assert t.lookup((0x0AFF0000,)).action.params == (1, 1)
    assert t.lookup((0x0B000000,)) is None
    t.delete({"hdr.ipv4.dstAddr": Lpm(0x0A010200, 24)})
    assert t.lookup((0x0A010203,)).action.params == (2, 2)


def _brute_lpm(entries, key):
    best = None
    for (value, plen), port in entries.items():
        mask = ((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1)
        if key & mask == value and (best is None or plen > best[0]):
            best = (plen, port)
    return None if best is None else best[1]


def test_lpm_matches_brute_force_on_random_tables():
    b = P4InfoBuilder()
    b.action("fwd", [("port", 9)])
    b.table("t", [("dst", 32, LPM)], ["fwd"], size=0)
    st = RuntimeState.from_p4info(b.build())
    t = st.tables_by_name["t"]
    rng = random.Random(7)
    entries = {}
    for _ in range(300):
        plen = rng.randint(1, 32)
        value = rng.getrandbits(32) & (((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1))
        if (value, plen) in entries:
            continue
        port = rng.randrange(512)
        entries[(value, plen)] = port
        t.insert({"dst": Lpm(value, plen)}, b.ids["fwd"], (port,))
    probes = [rng.getrandbits(32) for _ in range(500)] + [v | rng.getrandbits(32 - p) for (v, p) in entries]
    for key in probes:
        hit = t.lookup((key,))
        assert (None if hit is None else hit.action.params[0]) == _brute_lpm(entries, key)


def _brute_acl(entries, key):
    best = None
    for (port, tv, tm, lo, hi, prio), act in entries:
        if key[0] == port and key[1] & tm == tv and lo <= key[2] <= hi and (best is None or prio > best[0]):
            best = (prio, act)
    return best


def test_ternary_range_priority_matches_brute_force():
    b = P4InfoBuilder()
    b.action("a", [("x", 8)])
    b.table("acl", [("port", 2, EXACT), ("src", 8, TERNARY), ("dport", 8, RANGE)], ["a"], size=0)
    t = RuntimeState.from_p4info(b.build()).tables_by_name["acl"]
    rng = random.Random(11)
    entries = []
    prios = rng.sample(range(1, 10_000), 200)  # distinct priorities: deterministic winner
    for i, prio in enumerate(prios):
        port = rng.randrange(4)
        mask = rng.choice([0xFF, 0xF0, 0x0F, 0x81, 0xFE])
        value = rng.getrandbits(8) & mask
        lo = rng.randrange(256)
        hi = rng.randrange(lo, 256)
        if (lo, hi) == (0, 255):
            hi = 254
        match = {"port": Exact(port), "src": Ternary(value, mask), "dport": Range(lo, hi)}
        t.insert(match, b.ids["a"], (i % 256,), priority=prio)
        entries.append(((port, value, mask, lo, hi, prio), i % 256))
    for _ in range(2000):
        key = (rng.randrange(4), rng.getrandbits(8), rng.getrandbits(8))
        hit = t.lookup(key)
        want = _brute_acl(entries, key)
        assert (None if hit is None else (hit.priority, hit.action.params[0])) == want


def test_dont_care_fields_and_optional(demo):
    st, ids = demo
    acl = st.tables_by_name["MyIngress.acl"]
    drop, noact = ids["MyIngress.drop"], ids["NoAction"]
    acl.insert({"std.ingress_port": 1}, noact, priority=1)  # src and dport: don't care
    acl.insert({"std.ingress_port": 1, "hdr.tcp.dport": Range(80, 80)}, drop, priority=5)
    assert acl.lookup((1, 0x01020304, 80)).action.action_id == drop
    assert acl.lookup((1, 0x01020304, 81)).action.action_id == noact
    assert acl.lookup((2, 0, 80)) is None
    opt = st.tables_by_name["MyIngress.opt"]
    opt.insert({"std.ingress_port": 3, "hdr.eth.type": OptionalMatch(0x0800)}, drop, priority=2)
    opt.insert({"std.ingress_port": 3}, noact, priority=1)
    assert opt.lookup((0x0800, 3)).action.action_id == drop
    assert opt.lookup((0x86DD, 3)).action.action_id == noact


def test_exact_table_lookup_follows_writes():
    b = P4InfoBuilder()
    b.action("a", [("v", 16)])
    b.table("t", [("k1", 8, EXACT), ("k2", 16, EXACT)], ["a"])
    t = RuntimeState.from_p4info(b.build()).tables_by_name["t"]
    t.insert({"k1": 1, "k2": 2}, b.ids["a"], (7,))
    assert t.lookup((1, 2)).action.params == (7,)
    t.modify({"k1": 1, "k2": 2}, action_id=b.ids["a"], params=(9,))
    assert t.lookup((1, 2)).action.params == (9,)
    t.delete({"k1": 1, "k2": 2})
    assert t.lookup((1, 2)) is None


# --------------------------------------------------------------- validation


def test_match_validation_codes(demo):
    st, ids = demo
    lpm = st.tables_by_name["MyIngress.ipv4_lpm"]
    acl = st.tables_by_name["MyIngress.acl"]
    fwd, drop = ids["MyIngress.forward"], ids["MyIngress.drop"]
    inv = Code.INVALID_ARGUMENT
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(0x0A000001, 8)}, fwd, (1, 1)) == inv  # bits past prefix
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(0, 0)}, fwd, (1, 1)) == inv  # don't care not omitted
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(0, 33)}, fwd, (1, 1)) == inv
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(1 << 32, 32)}, fwd, (1, 1)) == inv  # too wide
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Exact(1)}, fwd, (1, 1)) == inv  # wrong kind
    assert code_of(lpm.insert, {"nope": Lpm(0, 8)}, fwd, (1, 1)) == inv
    assert code_of(acl.insert, {"hdr.ipv4.srcAddr": Ternary(1, 1)}, drop, priority=1) == inv  # exact field missing
    base = {"std.ingress_port": 1}
    assert code_of(acl.insert, base | {"hdr.ipv4.srcAddr": Ternary(3, 1)}, drop, priority=1) == inv  # value & ~mask
    assert code_of(acl.insert, base | {"hdr.ipv4.srcAddr": Ternary(0, 0)}, drop, priority=1) == inv  # mask 0
    assert code_of(acl.insert, base | {"hdr.tcp.dport": Range(5, 4)}, drop, priority=1) == inv
    assert code_of(acl.insert, base | {"hdr.tcp.dport": Range(0, 0xFFFF)}, drop, priority=1) == inv  # full range
    assert code_of(acl.insert, base, drop, priority=0) == inv  # ternary table needs a priority
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(0, 8)}, fwd, (1, 1), priority=3) == inv  # and lpm none
    assert len(lpm) == 0 and len(acl) == 0


def test_action_validation_codes(demo):
    st, ids = demo
    lpm = st.tables_by_name["MyIngress.ipv4_lpm"]
    m = {"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}
    fwd = ids["MyIngress.forward"]
    assert code_of(lpm.insert, m, ids["MyIngress.set_prio"], (1,)) == Code.INVALID_ARGUMENT  # not in table
    assert code_of(lpm.insert, m, fwd, (1,)) == Code.INVALID_ARGUMENT  # missing param
    assert code_of(lpm.insert, m, fwd, (512, 1)) == Code.INVALID_ARGUMENT  # port is bit<9>
    assert code_of(lpm.insert, m, ids["NoAction"]) == Code.PERMISSION_DENIED  # @defaultonly here
    assert code_of(lpm.set_default, fwd, (1,)) == Code.INVALID_ARGUMENT


def test_duplicates_missing_size_and_const(demo):
    st, ids = demo
    lpm = st.tables_by_name["MyIngress.ipv4_lpm"]  # size 4
    fwd = ids["MyIngress.forward"]
    for i in range(4):
        lpm.insert({"hdr.ipv4.dstAddr": Lpm(i << 24, 8)}, fwd, (i, 0))
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(0, 8)}, fwd, (9, 9)) == Code.ALREADY_EXISTS
    assert lpm.lookup((0x00000001,)).action.params == (0, 0)  # unchanged by the refused insert
    assert code_of(lpm.insert, {"hdr.ipv4.dstAddr": Lpm(9 << 24, 8)}, fwd, (9, 9)) == Code.RESOURCE_EXHAUSTED
    assert code_of(lpm.delete, {"hdr.ipv4.dstAddr": Lpm(9 << 24, 8)}) == Code.NOT_FOUND
    assert code_of(lpm.modify, {"hdr.ipv4.dstAddr": Lpm(9 << 24, 8)}) == Code.NOT_FOUND
    fixed = st.tables_by_name["MyIngress.fixed"]
    drop = ids["MyIngress.drop"]
    assert code_of(fixed.insert, {"std.ingress_port": 1}, drop) == Code.PERMISSION_DENIED
    fixed.install_const_entry({"std.ingress_port": 1}, drop)
    assert fixed.lookup((1,)).action.action_id == drop
    assert code_of(fixed.delete, {"std.ingress_port": 1}) == Code.PERMISSION_DENIED
    assert code_of(fixed.modify, {"std.ingress_port": 1}, action_id=drop) == Code.PERMISSION_DENIED
    assert code_of(fixed.set_default, drop) == Code.PERMISSION_DENIED  # const default_action


def test_default_entry_set_and_reset(demo):
    st, ids = demo
    lpm = st.tables_by_name["MyIngress.ipv4_lpm"]
    drop, fwd = ids["MyIngress.drop"], ids["MyIngress.forward"]
    assert lpm.default_entry.action.action_id == drop  # initial_default_action from P4Info
    lpm.set_default(ids["NoAction"])  # @defaultonly allowed as default
    assert lpm.default_entry.action.action_id == ids["NoAction"]
    lpm.set_default(fwd, (5, 6))
    assert lpm.default_entry.action.params == (5, 6)
    lpm.reset_default()
    assert lpm.default_entry.action.action_id == drop


def test_modify_keeps_counter_and_resets_unset_meter(demo):
    st, ids = demo
    acl = st.tables_by_name["MyIngress.acl"]
    drop, noact = ids["MyIngress.drop"], ids["NoAction"]
    m = {"std.ingress_port": 4}
    cfg = MeterConfig(cir=100, cburst=10, pir=200, pburst=20)
    e = acl.insert(m, drop, priority=1, meter_config=cfg)
    assert e.direct_meter.config == cfg and e.direct_counter is None
    assert code_of(acl.modify, m, 1, counter_data=(1, 1)) == Code.INVALID_ARGUMENT  # no direct counter
    acl.modify(m, 1, action_id=noact)
    assert e.action.action_id == noact and e.direct_meter.config is None  # unset meter_config -> default
    lpm = st.tables_by_name["MyIngress.ipv4_lpm"]
    e2 = lpm.insert({"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, ids["MyIngress.forward"], (1, 1))
    e2.direct_counter.count(100)
    lpm.modify({"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, action_id=drop)
    assert e2.direct_counter.snapshot() == (1, 100)


def test_bad_p4info_is_rejected_with_a_clear_error():
    b = P4InfoBuilder()
    b.action("a")
    b.table("t", [("k", 8, EXACT)], ["a"])
    p = b.build()
    p.tables[0].action_refs.add(id=0x01FFFFFF)
    with pytest.raises(StateError) as exc:
        RuntimeState.from_p4info(p)
    assert exc.value.code == Code.INVALID_ARGUMENT and "'t'" in exc.value.message
    p = b.build()
    p.actions.add().preamble.id = p.tables[0].preamble.id
    with pytest.raises(StateError, match="used by both"):
        RuntimeState.from_p4info(p)
