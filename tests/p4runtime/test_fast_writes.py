"""The one-pass table writes (p4switch/p4runtime/fast_writes.py) against the general path.

The same random Write sequences go to two cores, one with ``fast_writes`` and one without:
every Write must end alike (the response, or the same code, message and per-update errors)
and a Read of every table entry must give the same entries after each Write. The updates mix
what the one-pass path takes (exact, LPM, ternary, range and optional entries with direct
actions, decoded by the engine) with everything it must leave to the general path: malformed
values, unknown ids, missing or surplus parameters, entries that exist or are missing, a full
table, wrong priorities, default entries, counter data, idle timeouts, another entity, and
every atomicity.
"""

from __future__ import annotations

import hbh_engine
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import NullDevice, P4RuntimeCore, P4RuntimeError
from p4switch.p4runtime.fast_writes import FastWriter
from tests.p4runtime.helpers import Client, b
from tests.p4runtime.p4info_builder import EXACT, LPM, RANGE, TERNARY, P4InfoBuilder


def _p4info():
    bld = P4InfoBuilder()
    bld.action("NoAction")
    bld.action("drop")
    bld.action("forward", [("port", 9), ("dmac", 48)])
    bld.action("mark", [("tos", 6)])
    bld.table(
        "lpm",
        [("dst", 32, LPM)],
        ["forward", "drop", "NoAction"],
        size=6,
        default=("drop", ()),
        direct_counter="lpm_hits",
        scopes={"NoAction": 2},
    )
    bld.table(
        "exact2",
        [("port", 9, EXACT), ("mac", 48, EXACT)],
        ["forward", "mark", "NoAction"],
        size=8,
        scopes={"mark": 1},
    )
    bld.table("mixed", [("port", 9, EXACT), ("dst", 32, LPM)], ["mark", "drop"], size=8)
    bld.table("acl", [("port", 9, EXACT), ("src", 32, TERNARY), ("dport", 16, RANGE)], ["drop", "NoAction"])
    bld.counter("pkts", 4, unit=2)
    return bld.build(), bld.ids


P4INFO, IDS = _p4info()
TABLES = ("lpm", "exact2", "mixed", "acl")


def _core(fast: bool) -> tuple[P4RuntimeCore, Client]:
    core = P4RuntimeCore(NullDevice(), device_id=1, fast_writes=fast)
    client = Client(core)
    client.arbitrate(10)
    client.set_pipeline(P4INFO)
    return core, client


def _bytes(draw, value: int, width: int) -> bytes:
    """Mostly the shortest string of ``value``; sometimes padded, empty or too wide."""
    how = draw(st.sampled_from(["plain"] * 40 + ["padded", "empty", "wide"]))
    if how == "padded":
        return b"\x00" + b(value)
    if how == "empty":
        return b""
    if how == "wide":
        return b(value | (1 << width))
    return b(value)


@st.composite
def _field(draw, fid: int, kind: int, width: int) -> pb.FieldMatch:
    fm = pb.FieldMatch(field_id=fid)
    wrong = draw(st.integers(0, 59)) == 0  # another kind than the field's
    kind = draw(st.sampled_from([EXACT, LPM, TERNARY])) if wrong else kind
    value = draw(st.sampled_from([0, 1, 2, 0x0A000000, 0x0A010000, 0x0B000000, 0xFF]))
    value &= (1 << width) - 1
    if kind == EXACT:
        fm.exact.value = _bytes(draw, value, width)
    elif kind == LPM:
        plen = draw(st.sampled_from([8, 16, 24, width] * 6 + [0, width + 1]))
        if draw(st.integers(0, 9)) and 0 < plen <= width:
            value &= ((1 << width) - 1) ^ (((1 << width) - 1) >> plen)  # no bits beyond the prefix
        fm.lpm.value = _bytes(draw, value, width)
        fm.lpm.prefix_len = plen
    elif kind == TERNARY:
        fm.ternary.value = b(value & 0xFF)
        fm.ternary.mask = b(draw(st.sampled_from([0xFF, 0])))
    else:
        fm.range.low = b(1)
        fm.range.high = b(draw(st.sampled_from([2, 0])))
    return fm


FIELDS = {
    "lpm": [(1, LPM, 32)],
    "exact2": [(1, EXACT, 9), (2, EXACT, 48)],
    "mixed": [(1, EXACT, 9), (2, LPM, 32)],
    "acl": [(1, EXACT, 9), (2, TERNARY, 32), (3, RANGE, 16)],
}
PARAMS = {"forward": [(1, 9), (2, 48)], "mark": [(1, 6)], "drop": [], "NoAction": []}


ACTIONS = {
    "lpm": ["forward", "drop"],
    "exact2": ["forward", "NoAction"],
    "mixed": ["mark", "drop"],
    "acl": ["drop", "NoAction"],
}


@st.composite
def _action(draw, table: str) -> pb.TableAction:
    ta = pb.TableAction()
    if draw(st.integers(0, 29)) == 0:
        ta.action_profile_member_id = 1
        return ta
    name = draw(st.sampled_from(ACTIONS[table] * 10 + list(PARAMS) + ["unknown"]))
    a = ta.action
    a.action_id = IDS.get(name, 0x01FFFFFF)
    for pid, width in PARAMS.get(name, [(1, 8)]):
        if draw(st.integers(0, 39)) == 0:
            continue  # missing
        a.params.add(param_id=pid, value=_bytes(draw, draw(st.sampled_from([1, 2, 7])), width))
        if draw(st.integers(0, 29)) == 0:
            a.params.add(param_id=pid, value=b(1))  # given twice
    if draw(st.integers(0, 29)) == 0:
        a.params.add(param_id=9, value=b(1))  # unknown
    return ta


@st.composite
def _update(draw) -> pb.Update:
    table = draw(st.sampled_from(TABLES[:3] * 3 + TABLES))
    kind = draw(
        st.sampled_from(
            [pb.Update.INSERT] * 4 + [pb.Update.MODIFY] * 2 + [pb.Update.DELETE] * 2 + [pb.Update.UNSPECIFIED]
        )
    )
    upd = pb.Update(type=kind)
    if draw(st.integers(0, 24)) == 0:
        upd.entity.counter_entry.counter_id = IDS["pkts"]
        upd.entity.counter_entry.index.index = 1
        upd.entity.counter_entry.data.packet_count = 5
        return upd
    te = upd.entity.table_entry
    te.table_id = IDS[table] if draw(st.integers(0, 29)) else 0x02FFFFFF
    for fid, fkind, width in FIELDS[table]:
        if fkind != EXACT and draw(st.booleans()):
            continue  # don't care
        if draw(st.integers(0, 59)) == 0:
            continue  # a missing exact field
        te.match.append(draw(_field(fid, fkind, width)))
    if draw(st.integers(0, 29)) == 0:
        te.match.append(draw(_field(1, FIELDS[table][0][1], FIELDS[table][0][2])))  # given twice
    if draw(st.integers(0, 29)) == 0:
        te.match.add(field_id=7).exact.value = b(1)  # unknown field
    if table == "acl" or draw(st.integers(0, 29)) == 0:
        te.priority = draw(st.sampled_from([1, 2, 5]))
    if (kind != pb.Update.DELETE or draw(st.booleans())) and draw(st.integers(0, 9)):
        te.action.CopyFrom(draw(_action(table)))
    rare = draw(st.integers(0, 79))
    if rare == 0:
        te.is_default_action = True
        del te.match[:]
    elif rare == 1:
        te.counter_data.packet_count = 3
    elif rare == 2:
        te.idle_timeout_ns = 1000
    elif rare == 3:
        te.is_const = True
    te.controller_metadata = draw(st.sampled_from([0, 0, 7]))
    te.metadata = draw(st.sampled_from([b"", b"", b"m"]))
    return upd


_WRITES = st.lists(
    st.tuples(
        st.lists(_update(), min_size=1, max_size=6),
        st.sampled_from(
            [
                pb.WriteRequest.CONTINUE_ON_ERROR,
                pb.WriteRequest.ROLLBACK_ON_ERROR,
                pb.WriteRequest.DATAPLANE_ATOMIC,
            ]
        ),
    ),
    min_size=1,
    max_size=8,
)


def _outcome(client: Client, updates: list[pb.Update], atomicity: int, wire: bool = False) -> tuple:
    """The Write's answer; ``wire``: with its bytes, which the engine decodes (TableWritePlan)."""
    req = client._stamp(pb.WriteRequest(atomicity=atomicity))
    req.updates.extend(updates)
    try:
        return (
            "ok",
            client.core.write(req, raw=req.SerializeToString() if wire else None).SerializeToString(),
        )
    except P4RuntimeError as e:
        return ("error", int(e.code), e.message, [(d.canonical_code, d.message) for d in e.details])


def _entries(client: Client) -> list[bytes]:
    """Every table entry (with its direct counter data), as sorted wire bytes: P4Runtime gives
    Read no order, and an update the one-pass path undid may come back later in a dict."""
    found = []
    for name in TABLES:
        for ent in client.read(pb.Entity(table_entry=pb.TableEntry(table_id=IDS[name]))):
            found.append(ent.SerializeToString(deterministic=True))
        default = pb.Entity(table_entry=pb.TableEntry(table_id=IDS[name], is_default_action=True))
        found.extend(e.SerializeToString(deterministic=True) for e in client.read(default))
    return sorted(found)


PROBES = {
    "lpm": [(k,) for k in (0, 1, 0x0A000000, 0x0A0100FF, 0x0A01FFFF, 0x0B000001, 0xFF)],
    "exact2": [(p, m) for p in (0, 1, 2, 7) for m in (0, 1, 2, 0xFF)],
    "mixed": [(p, k) for p in (0, 1, 2) for k in (0, 1, 0x0A000000, 0x0A010001, 0x0B000000)],
}


def _hits(core: P4RuntimeCore) -> list:
    """What packets with the probe keys hit in the Python index (built from the same index
    fields the engine's copy gets)."""
    st = core.device.state
    out = []
    for name, keys in PROBES.items():
        table = st.tables[IDS[name]]
        for key in keys:
            e = table.lookup(key)
            out.append(None if e is None else (e.match, e.action, e._masks, e._masked, e._rank))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_WRITES)
def test_same_outcomes_and_reads(writes) -> None:
    (fast_core, fast), (slow_core, slow), (wire_core, wire) = _core(True), _core(False), _core(True)
    for updates, atomicity in writes:
        expected = _outcome(slow, updates, atomicity)
        assert _outcome(fast, updates, atomicity) == expected
        assert _outcome(wire, updates, atomicity, wire=True) == expected
        assert _entries(fast) == _entries(slow) == _entries(wire)
        assert _hits(fast_core) == _hits(slow_core) == _hits(wire_core)
    assert fast_core.fast_writes and not slow_core.fast_writes


def _lpm_insert(i: int) -> pb.Update:
    te = pb.TableEntry(table_id=IDS["lpm"])
    te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(0x0A000000 | i << 8), prefix_len=24))
    te.action.action.action_id = IDS["forward"]
    te.action.action.params.add(param_id=1, value=b(2))
    te.action.action.params.add(param_id=2, value=b(0xAABB))
    return pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te))


def test_plain_writes_take_the_one_pass_path(monkeypatch) -> None:
    """A batch of LPM inserts never reaches the general path (its apply_update)."""
    core, client = _core(True)
    import p4switch.p4runtime.core as core_mod

    monkeypatch.setattr(
        core_mod, "apply_update", lambda *a: (_ for _ in ()).throw(AssertionError("general path"))
    )
    client.write(*[_lpm_insert(i) for i in range(4)])
    assert len(client.read(pb.Entity(table_entry=pb.TableEntry(table_id=IDS["lpm"])))) == 4


def _acl_insert(i: int) -> pb.Update:
    te = pb.TableEntry(table_id=IDS["acl"], priority=5)
    te.match.add(field_id=1).exact.value = b(i)
    te.match.add(field_id=2).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(0x0A000000), mask=b(0xFF000000)))
    te.match.add(field_id=3).range.CopyFrom(pb.FieldMatch.Range(low=b(80), high=b(90)))
    te.action.action.action_id = IDS["drop"]
    return pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te))


def test_ternary_and_range_writes_take_the_one_pass_path(monkeypatch) -> None:
    core, client = _core(True)
    import p4switch.p4runtime.core as core_mod

    monkeypatch.setattr(
        core_mod, "apply_update", lambda *a: (_ for _ in ()).throw(AssertionError("general path"))
    )
    client.write(*[_acl_insert(i) for i in range(3)])
    assert len(client.read(pb.Entity(table_entry=pb.TableEntry(table_id=IDS["acl"])))) == 3
    hit = core.device.state.tables[IDS["acl"]].lookup((1, 0x0A010203, 85))
    assert hit is not None and hit.priority == 5 and hit._ranges == ((2, 80, 90),)


@pytest.mark.skipif(
    not hasattr(hbh_engine, "DecodedWrite"), reason="an engine without DecodedWrite (make engine)"
)
def test_engine_decodes_plain_requests() -> None:
    """The engine's decoder takes a plain request, and leaves to the general path what it does
    not know."""
    core, client = _core(True)
    ups = [_lpm_insert(i) for i in range(3)] + [_acl_insert(1)]
    req = client._stamp(pb.WriteRequest(updates=ups))
    wire = FastWriter(core.device.state)
    decoded = wire.decode(req)
    assert decoded is not None and len(decoded) == 4
    assert decoded.update(0)[:8] == (
        pb.Update.INSERT,
        IDS["lpm"],
        ((3, 0x0A000000, 24),),
        (0xFFFFFF00,),
        (0x0A000000,),
        (),
        24,
        0,
    )
    assert decoded.update(0)[8] == (IDS["forward"], (2, 0xAABB))
    acl = decoded.update(3)
    assert acl[2] == ((2, 1, 0), (4, 0x0A000000, 0xFF000000), (5, 80, 90))
    assert acl[5:8] == (((2, 80, 90),), 5, 5)
    with pytest.raises(IndexError):
        decoded.update(4)
    ups[1].entity.table_entry.counter_data.packet_count = 1  # left to the general path
    assert wire.decode(pb.WriteRequest(updates=ups)) is None
    assert wire.decode(req, b"\xff\xff") is None


def test_python_only_env_turns_it_off(monkeypatch) -> None:
    monkeypatch.setenv("HBH_P4RT", "python")
    assert not P4RuntimeCore(NullDevice()).fast_writes
    monkeypatch.delenv("HBH_P4RT")
    assert P4RuntimeCore(NullDevice()).fast_writes
