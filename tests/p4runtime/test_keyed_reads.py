"""Keyed Reads answered by the engine's entry store against the Python path.

``P4RuntimeCore.read_keyed_wire`` (``TableWritePlan.read_keyed``, engine/src/p4rt/p4rtwrite.rs)
answers a Read of one entry of a plain table by its whole key without Python; it must give the
bytes ``read_wire`` gives for the same request, byte for byte, and leave every other Read (and
every error) to it. Random Write sequences (exact, LPM, ternary, range and optional keys,
priorities, metadata, batches that fail half-way and so take the Python one-pass or general
path) are followed by Reads of every kind: the entries written (as the bench reads them, with
their action), keys alone, keys with filters that match or not, keys of missing entries,
matches without their priority, default entries, wildcard Reads, malformed keys, another
device or role, direct resources. Each Read goes to the engine first, while the entries it
changed may still wait in the store for the Python state, then to the Python path.
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import NullDevice, P4RuntimeCore, P4RuntimeError
from p4switch.p4runtime.server import P4RuntimeServer
from tests.p4runtime.helpers import Client, b
from tests.p4runtime.p4info_builder import EXACT, LPM, OPTIONAL, RANGE, TERNARY, P4InfoBuilder


def _p4info():
    bld = P4InfoBuilder()
    bld.action("NoAction")
    bld.action("drop")
    bld.action("forward", [("port", 9), ("dmac", 48)])
    bld.action("mark", [("tos", 6)])
    bld.table("lpm", [("dst", 32, LPM)], ["forward", "drop"], size=64, default=("drop", ()))
    bld.table("exact2", [("port", 9, EXACT), ("mac", 48, EXACT)], ["forward", "mark", "NoAction"], size=64)
    bld.table("mixed", [("port", 9, EXACT), ("dst", 32, LPM)], ["mark", "drop"], size=64)
    bld.table(
        "acl", [("port", 9, EXACT), ("src", 32, TERNARY), ("dport", 16, RANGE)], ["drop", "NoAction", "mark"]
    )
    bld.table("opt", [("proto", 8, OPTIONAL), ("port", 9, EXACT)], ["drop", "forward"], size=64)
    bld.table("counted", [("dst", 32, LPM)], ["forward", "drop"], direct_counter="counted_hits")
    bld.counter("pkts", 4, unit=2)
    return bld.build(), bld.ids


P4INFO, IDS = _p4info()
FIELDS = {
    "lpm": [(1, LPM, 32)],
    "exact2": [(1, EXACT, 9), (2, EXACT, 48)],
    "mixed": [(1, EXACT, 9), (2, LPM, 32)],
    "acl": [(1, EXACT, 9), (2, TERNARY, 32), (3, RANGE, 16)],
    "opt": [(1, OPTIONAL, 8), (2, EXACT, 9)],
    "counted": [(1, LPM, 32)],
}
ACTIONS = {
    "lpm": ["forward", "drop"],
    "exact2": ["forward", "mark", "NoAction"],
    "mixed": ["mark", "drop"],
    "acl": ["drop", "NoAction", "mark"],
    "opt": ["drop", "forward"],
    "counted": ["forward", "drop"],
}
PARAMS = {"forward": [(1, 9), (2, 48)], "mark": [(1, 6)], "drop": [], "NoAction": []}
TABLES = tuple(FIELDS)
PRIORITY = {"acl", "opt"}


def _core() -> tuple[P4RuntimeCore, Client]:
    core = P4RuntimeCore(NullDevice(), device_id=1, fast_writes=True)
    client = Client(core)
    client.arbitrate(10)
    client.set_pipeline(P4INFO)
    return core, client


@st.composite
def _field(draw, fid: int, kind: int, width: int) -> pb.FieldMatch:
    """A field's match from a small set of values (so that keys repeat), now and then malformed."""
    fm = pb.FieldMatch(field_id=fid)
    value = draw(st.sampled_from([0, 1, 2, 5, 0x0A000000, 0x0A010000, 0xFF])) & ((1 << width) - 1)
    bad = draw(st.integers(0, 39)) == 0
    if kind == EXACT:
        fm.exact.value = b(value | (1 << width)) if bad else b(value)
    elif kind == OPTIONAL:
        fm.optional.value = b"\x00" + b(value) if bad else b(value)
    elif kind == LPM:
        plen = draw(st.sampled_from([8, 16, 24, width]))
        value &= ((1 << width) - 1) ^ (((1 << width) - 1) >> plen)
        fm.lpm.value = b(value)
        fm.lpm.prefix_len = 0 if bad else plen
    elif kind == TERNARY:
        mask = draw(st.sampled_from([0xFF, 0xFF00, 0xFFFFFFFF]))
        fm.ternary.value = b(value & mask)
        fm.ternary.mask = b(0) if bad else b(mask)
    else:
        low = draw(st.sampled_from([0, 1, 80]))
        fm.range.low = b(low)
        fm.range.high = b(draw(st.sampled_from([80, 443, 0xFFFE])) if not bad else 0)
    return fm


@st.composite
def _entry(draw, table: str) -> pb.TableEntry:
    te = pb.TableEntry(table_id=IDS[table])
    for fid, kind, width in FIELDS[table]:
        if kind not in (EXACT,) and draw(st.integers(0, 3)) == 0:
            continue  # don't care
        te.match.append(draw(_field(fid, kind, width)))
    if table in PRIORITY:
        te.priority = draw(st.sampled_from([1, 2, 7]))
    name = draw(st.sampled_from(ACTIONS[table]))
    a = te.action.action
    a.action_id = IDS[name]
    for pid, width in PARAMS[name]:
        a.params.add(param_id=pid, value=b(draw(st.sampled_from([1, 2, 7])) & ((1 << width) - 1)))
    te.controller_metadata = draw(st.sampled_from([0, 0, 7, 9]))
    te.metadata = draw(st.sampled_from([b"", b"", b"m", b"\x00x"]))
    return te


@st.composite
def _write(draw) -> tuple[list[pb.Update], int, str]:
    """A batch of updates, its atomicity and how it is sent: its bytes to the engine's store
    first (``write_wire``, as the compiled front end) or as a message (``write``)."""
    updates = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from([pb.Update.INSERT] * 5 + [pb.Update.MODIFY] * 2 + [pb.Update.DELETE] * 2))
        te = draw(_entry(draw(st.sampled_from(TABLES))))
        updates.append(pb.Update(type=kind, entity=pb.Entity(table_entry=te)))
    atomicity = draw(st.sampled_from([pb.WriteRequest.CONTINUE_ON_ERROR, pb.WriteRequest.ROLLBACK_ON_ERROR]))
    return updates, atomicity, draw(st.sampled_from(["wire", "message"]))


def _variant(draw, te: pb.TableEntry) -> pb.TableEntry:
    """A Read's TableEntry made of a written (or random) one."""
    out = pb.TableEntry()
    out.CopyFrom(te)
    how = draw(
        st.sampled_from(
            ["as written"] * 4
            + ["key"] * 4
            + ["other action", "action id only", "profile member", "cm", "other cm", "md", "other md"]
            + ["no priority", "other priority", "default", "wildcard", "all tables", "counter data"]
            + ["time since hit", "wide value", "unknown field", "no match", "idle timeout"]
        )
    )
    if how != "as written":
        out.ClearField("action")
        out.controller_metadata = 0
        out.metadata = b""
    if how == "other action":
        out.action.action.action_id = (
            IDS["NoAction"] if te.action.action.action_id != IDS["NoAction"] else IDS["drop"]
        )
    elif how == "action id only":
        out.action.action.action_id = te.action.action.action_id
    elif how == "profile member":
        out.action.action_profile_member_id = 1
    elif how == "cm":
        out.controller_metadata = te.controller_metadata
    elif how == "other cm":
        out.controller_metadata = te.controller_metadata + 1
    elif how == "md":
        out.metadata = te.metadata
    elif how == "other md":
        out.metadata = te.metadata + b"?"
    elif how == "no priority":
        out.priority = 0
    elif how == "other priority":
        out.priority = te.priority + 1
    elif how == "default":
        del out.match[:]
        out.priority = 0
        out.is_default_action = True
    elif how == "wildcard":
        del out.match[:]
        out.priority = 0
    elif how == "all tables":
        out.Clear()
    elif how == "counter data":
        out.counter_data.SetInParent()
    elif how == "time since hit":
        out.time_since_last_hit.SetInParent()
    elif how == "wide value" and out.match:
        out.match[0].exact.value = b(1 << 60) if out.match[0].HasField("exact") else out.match[0].exact.value
    elif how == "unknown field":
        out.match.add(field_id=9).exact.value = b(1)
    elif how == "no match":
        del out.match[:]
    elif how == "idle timeout":
        out.idle_timeout_ns = 5
    return out


@st.composite
def _read(draw, written: list[pb.TableEntry]) -> pb.ReadRequest:
    if written and draw(st.integers(0, 4)):
        te = draw(st.sampled_from(written))
    else:
        te = draw(_entry(draw(st.sampled_from(TABLES))))
    req = pb.ReadRequest(device_id=1)
    req.entities.add().table_entry.CopyFrom(_variant(draw, te))
    rare = draw(st.integers(0, 29))
    if rare == 0:
        req.device_id = 2
    elif rare == 1:
        req.role = "other"
    elif rare == 2:
        req.entities.add().table_entry.CopyFrom(te)  # two entities
    elif rare == 3:
        req.entities.add().counter_entry.counter_id = IDS["pkts"]
    return req


def _python_answer(core: P4RuntimeCore, req: pb.ReadRequest) -> tuple:
    try:
        result = core.read_wire(req)
    except P4RuntimeError as e:
        return ("raised", int(e.code), e.message)
    err = result.error
    return ("ok", result.responses, None if err is None else (int(err.code), err.message))


def _send(core: P4RuntimeCore, client: Client, updates: list[pb.Update], atomicity: int, how: str) -> None:
    req = client._stamp(pb.WriteRequest(atomicity=atomicity))
    req.updates.extend(updates)
    raw = req.SerializeToString()
    if how == "wire" and core.write_wire(raw) is not None:
        return
    with contextlib.suppress(P4RuntimeError):  # refused in part or whole: the Reads see what it left
        core.write(req, raw if how == "wire" else None)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_keyed_reads_give_the_python_paths_bytes(data) -> None:
    core, client = _core()
    written: list[pb.TableEntry] = []
    for _ in range(data.draw(st.integers(1, 12))):
        updates, atomicity, how = data.draw(_write())
        _send(core, client, updates, atomicity, how)
        written += [u.entity.table_entry for u in updates]
        for _ in range(data.draw(st.integers(1, 6))):
            req = data.draw(_read(written))
            fast = core.read_keyed_wire(req.SerializeToString())  # first: updates may wait in the store
            expected = _python_answer(core, req)
            if fast is not None:
                assert expected == ("ok", [fast], None)


def _insert(table: str, te: pb.TableEntry) -> pb.Update:
    return pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te))


def _plain_entries() -> dict[str, pb.TableEntry]:
    def entry(table: str, matches: list[pb.FieldMatch], action: str, params: list[int], priority: int = 0):
        te = pb.TableEntry(table_id=IDS[table], priority=priority, controller_metadata=3, metadata=b"md")
        te.match.extend(matches)
        te.action.action.action_id = IDS[action]
        for (pid, _), v in zip(PARAMS[action], params):
            te.action.action.params.add(param_id=pid, value=b(v))
        return te

    def fm(fid: int, **kind) -> pb.FieldMatch:
        out = pb.FieldMatch(field_id=fid)
        ((name, value),) = kind.items()
        getattr(out, name).CopyFrom(value)
        return out

    return {
        "lpm": entry(
            "lpm", [fm(1, lpm=pb.FieldMatch.LPM(value=b(0x0A010000), prefix_len=16))], "forward", [3, 0xAB]
        ),
        "exact2": entry(
            "exact2",
            [fm(1, exact=pb.FieldMatch.Exact(value=b(2))), fm(2, exact=pb.FieldMatch.Exact(value=b(0x0203)))],
            "mark",
            [5],
        ),
        "acl": entry(
            "acl",
            [
                fm(1, exact=pb.FieldMatch.Exact(value=b(1))),
                fm(2, ternary=pb.FieldMatch.Ternary(value=b(0x0A00), mask=b(0xFF00))),
                fm(3, range=pb.FieldMatch.Range(low=b(80), high=b(443))),
            ],
            "drop",
            [],
            priority=9,
        ),
        "opt": entry(
            "opt",
            [
                fm(1, optional=pb.FieldMatch.Optional(value=b(6))),
                fm(2, exact=pb.FieldMatch.Exact(value=b(1))),
            ],
            "forward",
            [1, 2],
            priority=3,
        ),
    }


def test_each_match_kind_is_answered_by_the_engine_before_and_after_the_state_takes_it_in() -> None:
    """Exact, LPM, ternary, range and optional keys: the engine answers each entry while it waits
    in the store, then from the entry object the Python state built, then after a MODIFY."""
    core, client = _core()
    entries = _plain_entries()
    req = client._stamp(pb.WriteRequest())
    req.updates.extend(_insert(t, te) for t, te in entries.items())
    assert core.write_wire(req.SerializeToString()) == b""  # all in the engine's store

    def read(te: pb.TableEntry) -> tuple[bytes | None, tuple]:
        r = pb.ReadRequest(device_id=1, entities=[pb.Entity(table_entry=te)])
        return core.read_keyed_wire(r.SerializeToString()), _python_answer(core, r)

    for te in entries.values():
        fast, expected = read(te)  # waiting in the store
        assert fast is not None and expected == ("ok", [fast], None)
        assert pb.ReadResponse.FromString(fast).entities[0].table_entry == te
        fast, expected = read(te)  # the Python state took it in
        assert fast is not None and expected == ("ok", [fast], None)
    lpm = entries["lpm"]
    lpm.action.action.params[0].value = b(4)
    lpm.controller_metadata = 0
    lpm.metadata = b""
    client.write(pb.Update(type=pb.Update.MODIFY, entity=pb.Entity(table_entry=lpm)))
    fast, expected = read(lpm)
    assert fast is not None and expected == ("ok", [fast], None)
    assert pb.ReadResponse.FromString(fast).entities[0].table_entry == lpm
    client.write(pb.Update(type=pb.Update.DELETE, entity=pb.Entity(table_entry=lpm)))
    fast, expected = read(lpm)
    assert fast == b"" and expected == ("ok", [b""], None)  # gone: one empty response


def test_reads_the_engine_leaves_to_python() -> None:
    """Default entries, wildcard Reads, a table with direct counters, direct resources asked
    for and a match without its priority are the Python path's."""
    core, client = _core()
    entries = _plain_entries()
    client.write(*[_insert(t, te) for t, te in entries.items()])
    leave = [
        pb.TableEntry(table_id=IDS["lpm"], is_default_action=True),
        pb.TableEntry(table_id=IDS["lpm"]),
        pb.TableEntry(),
        pb.TableEntry(table_id=IDS["counted"], match=entries["lpm"].match),
        pb.TableEntry(table_id=IDS["acl"], match=entries["acl"].match),  # every priority
    ]
    with_counter = pb.TableEntry()
    with_counter.CopyFrom(entries["lpm"])
    with_counter.counter_data.SetInParent()
    leave.append(with_counter)
    for te in leave:
        r = pb.ReadRequest(device_id=1, entities=[pb.Entity(table_entry=te)])
        assert core.read_keyed_wire(r.SerializeToString()) is None
        assert _python_answer(core, r)[0] == "ok"


def test_the_servers_keyed_read_is_the_engines_answer() -> None:
    """``P4RuntimeServer.read_now`` (the compiled front end's first try) answers from the store
    with the bytes its full path (``read_bytes``) gives."""
    core, client = _core()
    entries = _plain_entries()
    client.write(*[_insert(t, te) for t, te in entries.items()])
    srv = P4RuntimeServer(core, try_now=lambda fn: fn())
    calls = []
    keyed = core.read_keyed_wire
    core.read_keyed_wire = lambda raw: calls.append(raw) or keyed(raw)  # type: ignore[method-assign]
    for te in entries.values():
        raw = pb.ReadRequest(device_id=1, entities=[pb.Entity(table_entry=te)]).SerializeToString()
        assert srv.read_now(raw) == srv.read_bytes(raw)
        assert srv.read_now(raw)[0][0]
    assert len(calls) == 2 * len(entries)
