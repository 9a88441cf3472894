"""A P4Runtime Read gives back exactly the table entries that were written (issue 49, item 7).

Random canonical entries (the form P4Runtime says a server answers with: shortest
bytestrings, no don't-care fields, no bits beyond an LPM prefix or outside a ternary mask)
of every match kind - exact, LPM, ternary, range, optional - with direct actions and their
parameters, controller metadata and metadata, are inserted in random batches, then some
are modified and some deleted; after each step a Read of the table must answer the entries
the writes left, field for field. Run on each of the core's write paths: the engine
decoding the request's bytes (what the compiled front end and the grpcio server use), the
one-pass path from the parsed message, and the general path (``HBH_P4RT=python``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import NullDevice, P4RuntimeCore
from tests.p4runtime.helpers import Client, b
from tests.p4runtime.p4info_builder import EXACT, LPM, OPTIONAL, RANGE, TERNARY, P4InfoBuilder

PARAMS = {"forward": [(1, 9), (2, 48)], "mark": [(1, 6)], "wide": [(1, 128)], "drop": []}
TABLES = {  # name: (fields as (width, kind), actions)
    "exact2": ([(9, EXACT), (48, EXACT)], ["forward", "mark", "drop"]),
    "lpm": ([(32, LPM)], ["forward", "drop"]),
    "mixed": ([(9, EXACT), (128, LPM)], ["mark", "wide"]),
    "acl": ([(9, EXACT), (32, TERNARY), (16, RANGE), (16, OPTIONAL)], ["drop", "forward"]),
}


def _p4info():
    bld = P4InfoBuilder()
    for name, params in PARAMS.items():
        bld.action(name, [(f"p{pid}", width) for pid, width in params])
    for name, (fields, actions) in TABLES.items():
        bld.table(
            name, [(f"f{i}", width, kind) for i, (width, kind) in enumerate(fields, 1)], actions, size=4096
        )
    return bld.build(), bld.ids


P4INFO, IDS = _p4info()
MODES = {"engine decodes the bytes": (True, True), "one pass": (True, False), "general path": (False, False)}


def _bits(width: int) -> st.SearchStrategy[int]:
    return st.integers(0, (1 << width) - 1)


@st.composite
def _key(draw, table: str) -> tuple:
    """A canonical match, as (field id, kind, values...) per field given (don't-cares left out)."""
    out = []
    for fid, (width, kind) in enumerate(TABLES[table][0], 1):
        full = (1 << width) - 1
        if kind == EXACT:
            out.append((fid, kind, draw(_bits(width))))
        elif kind == LPM:
            plen = draw(st.integers(0, width))
            if plen:
                out.append((fid, kind, draw(_bits(width)) & (full ^ (full >> plen)), plen))
        elif kind == TERNARY:
            mask = draw(_bits(width))
            if mask:
                out.append((fid, kind, draw(_bits(width)) & mask, mask))
        elif kind == RANGE:
            low, high = sorted((draw(_bits(width)), draw(_bits(width))))
            if (low, high) != (0, full):
                out.append((fid, kind, low, high))
        elif draw(st.booleans()):
            out.append((fid, kind, draw(_bits(width))))
    priority = draw(st.integers(1, 1000)) if table == "acl" else 0
    return tuple(out), priority


@st.composite
def _action(draw, table: str) -> tuple:
    name = draw(st.sampled_from(TABLES[table][1]))
    return IDS[name], tuple(draw(_bits(width)) for _pid, width in PARAMS[name])


def _entry(table: str, key: tuple, action: tuple | None, cm: int = 0, md: bytes = b"") -> pb.TableEntry:
    te = pb.TableEntry(table_id=IDS[table], priority=key[1], controller_metadata=cm, metadata=md)
    for fid, kind, *vals in key[0]:
        fm = te.match.add(field_id=fid)
        if kind in (EXACT, OPTIONAL):
            (fm.exact if kind == EXACT else fm.optional).value = b(vals[0])
        elif kind == LPM:
            fm.lpm.value, fm.lpm.prefix_len = b(vals[0]), vals[1]
        elif kind == TERNARY:
            fm.ternary.value, fm.ternary.mask = b(vals[0]), b(vals[1])
        else:
            fm.range.low, fm.range.high = b(vals[0]), b(vals[1])
    if action is not None:
        aid, params = action
        te.action.action.action_id = aid
        for pid, value in enumerate(params, 1):
            te.action.action.params.add(param_id=pid, value=b(value))
    return te


@st.composite
def _story(draw) -> tuple:
    """(table, entries as key -> (action, controller metadata, metadata), insert batches,
    modifications, deletions)."""
    table = draw(st.sampled_from(sorted(TABLES)))
    keys = draw(st.lists(_key(table), min_size=1, max_size=30, unique=True))
    entries = {
        k: (draw(_action(table)), draw(st.integers(0, (1 << 64) - 1)), draw(st.binary(max_size=8)))
        for k in keys
    }
    cuts = sorted(draw(st.lists(st.integers(0, len(keys)), max_size=4)))
    batches = [keys[a:c] for a, c in zip([0, *cuts], [*cuts, len(keys)]) if keys[a:c]]
    changed = draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys)))
    modified = {
        k: (draw(_action(table)), draw(st.integers(0, 7)), draw(st.binary(max_size=3))) for k in changed
    }
    deleted = draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys)))
    return table, entries, batches, modified, deleted


def _write(client: Client, wire: bool, kind: int, tes: list[pb.TableEntry]) -> None:
    req = client._stamp(pb.WriteRequest())
    req.updates.extend(pb.Update(type=kind, entity=pb.Entity(table_entry=te)) for te in tes)
    client.core.write(req, raw=req.SerializeToString() if wire else None)


def _read(client: Client, table: str) -> list[bytes]:
    got = client.read(pb.Entity(table_entry=pb.TableEntry(table_id=IDS[table])))
    return sorted(e.table_entry.SerializeToString(deterministic=True) for e in got)


def _expected(table: str, entries: dict) -> list[bytes]:
    return sorted(_entry(table, k, *v).SerializeToString(deterministic=True) for k, v in entries.items())


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(story=_story())
def test_read_back_is_what_was_written(mode: str, story: tuple) -> None:
    fast, wire = MODES[mode]
    core = P4RuntimeCore(NullDevice(), device_id=1, fast_writes=fast)
    client = Client(core)
    client.arbitrate(10)
    client.set_pipeline(P4INFO)
    table, entries, batches, modified, deleted = story
    for batch in batches:
        _write(client, wire, pb.Update.INSERT, [_entry(table, k, *entries[k]) for k in batch])
    assert _read(client, table) == _expected(table, entries)
    if modified:
        _write(client, wire, pb.Update.MODIFY, [_entry(table, k, *v) for k, v in modified.items()])
        entries.update(modified)
        assert _read(client, table) == _expected(table, entries)
    if deleted:
        _write(client, wire, pb.Update.DELETE, [_entry(table, k, None) for k in deleted])
        for k in deleted:
            del entries[k]
        assert _read(client, table) == _expected(table, entries)
