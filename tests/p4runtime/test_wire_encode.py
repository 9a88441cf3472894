"""The fast Read encoder (p4switch/p4runtime/wire_encode.py) writes what protobuf would.

Random entries go into the demo pipeline's tables of every match kind; each Read is answered
both ways - ``read`` (protobuf messages, serialised by protobuf) and ``read_wire`` (bytes) - and
the bytes must be identical, whatever the request selects (one table, all tables, the default
entry, direct resources, which take protobuf's path).
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import P4RuntimeError
from p4switch.p4runtime.wire_encode import packet_in_response, varint
from tests.p4runtime.helpers import b, setup_core

CORE, _DEVICE, _PRIMARY, _P4INFO, IDS = setup_core()


def _entry(table: str, draw: st.DataObject) -> pb.TableEntry:
    te = pb.TableEntry(table_id=IDS[table])
    if table == "MyIngress.ipv4_lpm":
        plen = draw.draw(st.integers(1, 32))
        te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(draw.draw(st.integers(1, 255)) << 24),
                                                                prefix_len=plen if plen >= 8 else 8))
        te.action.action.action_id = IDS["MyIngress.forward"]
        te.action.action.params.add(param_id=1, value=b(draw.draw(st.integers(0, 511))))
        te.action.action.params.add(param_id=2, value=b(draw.draw(st.integers(0, (1 << 48) - 1))))
    elif table == "MyIngress.acl":
        te.match.add(field_id=1).exact.value = b(draw.draw(st.integers(0, 511)))
        if draw.draw(st.booleans()):
            te.match.add(field_id=2).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(0x0A000000), mask=b(0xFF000000)))
        low = draw.draw(st.integers(0, 60000))
        te.match.add(field_id=3).range.CopyFrom(pb.FieldMatch.Range(low=b(low), high=b(low + 5)))
        te.priority = draw.draw(st.integers(1, 1 << 20))
        te.action.action.action_id = IDS["MyIngress.set_prio"]
        te.action.action.params.add(param_id=1, value=b(draw.draw(st.integers(0, 7))))
    else:
        if draw.draw(st.booleans()):
            te.match.add(field_id=1).optional.value = b(0x0800)
        te.match.add(field_id=2).exact.value = b(draw.draw(st.integers(0, 511)))
        te.priority = draw.draw(st.integers(1, 100))
        te.action.action.action_id = IDS["MyIngress.drop"]
    te.controller_metadata = draw.draw(st.integers(0, (1 << 64) - 1))
    te.metadata = draw.draw(st.binary(max_size=8))
    return te


def _write(te: pb.TableEntry, kind: int = pb.Update.INSERT) -> None:
    req = pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=10))
    req.updates.add(type=kind).entity.table_entry.CopyFrom(te)
    with contextlib.suppress(P4RuntimeError):  # a duplicate key or a full table: reads still have to agree
        CORE.write(req)


def _both_ways(req: pb.ReadRequest) -> None:
    slow = [r.SerializeToString() for r in CORE.read(req).responses]
    assert CORE.read_wire(req).responses == slow


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_wire_reads_are_byte_for_byte_protobufs(data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 4))):
        _write(_entry(data.draw(st.sampled_from(["MyIngress.ipv4_lpm", "MyIngress.acl", "MyIngress.opt"])), data))
    for table in ("MyIngress.ipv4_lpm", "MyIngress.acl", "MyIngress.opt", "MyIngress.fixed"):
        req = pb.ReadRequest(device_id=1)
        req.entities.add().table_entry.table_id = IDS[table]
        _both_ways(req)
    req = pb.ReadRequest(device_id=1)
    req.entities.add().table_entry.SetInParent()  # every table
    req.entities.add().table_entry.CopyFrom(pb.TableEntry(table_id=IDS["MyIngress.ipv4_lpm"], is_default_action=True))
    lpm = req.entities.add().table_entry
    lpm.table_id = IDS["MyIngress.ipv4_lpm"]
    lpm.counter_data.SetInParent()  # protobuf's path for this one
    _both_ways(req)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1 << 40), st.integers(0, 1 << 40)), max_size=8),
       st.integers(0, 7))
def test_counter_reads_are_byte_for_byte_protobufs(counts: list[tuple[int, int, int]], one: int) -> None:
    """Counter cells (zeros included, a unit that keeps packets only) read one, an array and every
    counter: the fast encoder's bytes are protobuf's."""
    cid = IDS["MyIngress.port_pkts"]
    for index, packets, nbytes in counts:
        ce = pb.CounterEntry(counter_id=cid, index=pb.Index(index=index),
                             data=pb.CounterData(packet_count=packets, byte_count=nbytes))
        req = pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=10))
        req.updates.add(type=pb.Update.MODIFY).entity.counter_entry.CopyFrom(ce)
        CORE.write(req)
    req = pb.ReadRequest(device_id=1)
    req.entities.add().counter_entry.CopyFrom(pb.CounterEntry(counter_id=cid, index=pb.Index(index=one)))
    req.entities.add().counter_entry.counter_id = cid
    req.entities.add().counter_entry.SetInParent()  # every counter
    _both_ways(req)


def test_varint_encodes_negative_values_as_protobuf_does() -> None:
    for n in (-1, -5, -(1 << 63)):
        te = pb.TableEntry(priority=max(n, -(1 << 31)), idle_timeout_ns=n)
        assert te.SerializeToString() == b"\x20" + varint(te.priority) + b"\x48" + varint(n)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.lists(st.tuples(st.integers(0, (1 << 32) - 1), st.binary(max_size=16)), max_size=6))
def test_packet_ins_are_byte_for_byte_protobufs(payload: bytes, metadata: list[tuple[int, bytes]]) -> None:
    """A gRPC stream's packet-in (``P4RuntimeCore.open_stream(wire=True)``) is what protobuf serialises."""
    resp = pb.StreamMessageResponse()
    resp.packet.payload = payload
    for mid, value in metadata:
        resp.packet.metadata.add(metadata_id=mid, value=value)
    assert packet_in_response(payload, metadata) == resp.SerializeToString()


def test_reads_without_the_engines_writer_are_the_same(monkeypatch) -> None:
    """Without ``hbh_engine.TableEntityWriter`` every entry is written in Python: the same bytes."""
    from p4switch.p4runtime import reads

    req = pb.ReadRequest(device_id=1)
    req.entities.add().table_entry.SetInParent()  # every table
    with_engine = CORE.read_wire(req).responses
    monkeypatch.setattr(reads, "_ENGINE_WRITER", None)
    monkeypatch.setattr(reads, "_WRITERS", reads.weakref.WeakKeyDictionary())
    assert CORE.read_wire(req).responses == with_engine == [r.SerializeToString() for r in CORE.read(req).responses]


def test_the_engines_writer_hands_back_what_it_cannot_write() -> None:
    """Values over 128 bits, actions that are not ActionCalls, objects of other types: None, for
    the caller to write; everything else as ``wire_encode.table_entity`` writes it."""
    from types import SimpleNamespace

    import pytest

    from p4switch.p4runtime.reads import _WRITTEN_CLASSES
    from p4switch.p4runtime.wire_encode import table_entity
    from p4switch.state.actions import ActionCall
    from p4switch.state.tables import Exact, Lpm, MatchFieldInfo, MatchKind, TableEntry

    engine = pytest.importorskip("hbh_engine")
    fields = (MatchFieldInfo(1, "a", 200, MatchKind.EXACT), MatchFieldInfo(2, "b", 32, MatchKind.LPM))
    writer = engine.TableEntityWriter(7, [(f.id, int(f.kind)) for f in fields], {3: [1, 2]}, _WRITTEN_CLASSES)
    # what table_entity looks up in a RuntimeState: the action's parameters
    state = SimpleNamespace(actions={3: SimpleNamespace(params=(SimpleNamespace(id=1), SimpleNamespace(id=2)))})

    def entry(a: int, action: object, b_match: object = None) -> TableEntry:
        e = TableEntry(7, (Exact(a), b_match), 0, action)
        e.controller_metadata, e.metadata, e.idle_timeout_ns, e.is_const = 5, b"\x00md", 9, True
        return e

    plain = entry(1 << 127, ActionCall(3, (0, (1 << 128) - 1)), Lpm(0x0A000000, 8))
    no_action = entry(0, None)
    wide = entry(1 << 128, ActionCall(3, (1, 2)))
    wide_param = entry(1, ActionCall(3, (1, 1 << 128)))
    indirect = entry(1, SimpleNamespace(action_id=3, params=(1, 2)))
    got = writer.entities([plain, no_action, wide, wide_param, indirect, "not an entry"])
    assert got == [table_entity(state, 7, fields, plain), table_entity(state, 7, fields, no_action),
                   None, None, None, None]
    import gc

    assert set(map(id, gc.get_referents(writer))) >= set(map(id, _WRITTEN_CLASSES))  # shown to the collector
