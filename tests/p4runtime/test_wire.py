"""The fast WriteRequest decoder (p4switch/p4runtime/wire.py) agrees with protobuf.

Every request here is applied twice to fresh cores - once parsed by protobuf, once by the
fast decoder - and the outcomes (codes of every update, entries read back) must be equal.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import P4RuntimeError
from p4switch.p4runtime.wire import WriteRequest, _write_request, parse_write_request
from tests.p4runtime.helpers import b, setup_core


def _requests(ids) -> list[pb.WriteRequest]:  # noqa: ANN001
    def lpm(value: bytes, plen: int, port: bytes, prio: int = 0, **extra) -> pb.Update:
        u = pb.Update(type=extra.pop("kind", pb.Update.INSERT))
        te = u.entity.table_entry
        te.table_id = extra.pop("table_id", ids["MyIngress.ipv4_lpm"])
        te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=value, prefix_len=plen))
        te.action.action.action_id = ids["MyIngress.forward"]
        te.action.action.params.add(param_id=1, value=port)
        te.action.action.params.add(param_id=2, value=b(0xAABB))
        te.priority = prio
        for k, v in extra.items():
            setattr(te, k, v)
        return u

    def req(*updates: pb.Update, atomicity: int = 0, low: int = 10) -> pb.WriteRequest:
        return pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=low), updates=updates, atomicity=atomicity)

    acl = pb.Update(type=pb.Update.INSERT)
    te = acl.entity.table_entry
    te.table_id = ids["MyIngress.acl"]
    te.match.add(field_id=1).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(5), mask=b(0xFF)))
    te.priority = 7
    te.action.action.action_id = ids["MyIngress.drop"]
    counter = pb.Update(type=pb.Update.MODIFY)
    counter.entity.counter_entry.counter_id = ids["MyIngress.port_pkts"]
    return [
        req(lpm(b"\x0a\x00\x00\x00", 8, b"\x01")),
        req(lpm(b"\x0a\x00\x00\x00", 8, b"\x01"), lpm(b"\x0a\x00\x00\x01", 8, b"\x01"),
            lpm(b"\x0b\x00\x00\x00", 8, b"\x02\x00\x00")),  # bits beyond the prefix, port too wide
        req(lpm(b"\x0c\x00\x00\x00", 8, b"\x03", controller_metadata=(1 << 64) - 1, idle_timeout_ns=-5,
                metadata=b"m")),
        req(lpm(b"\x0d\x00\x00\x00", 8, b"\x03", kind=pb.Update.MODIFY)),  # no such entry
        req(lpm(b"\x0a\x00\x00\x00", 8, b"\x04", kind=pb.Update.DELETE), atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR),
        req(lpm(b"\x0e\x00\x00\x00", 8, b"\x01", table_id=0x7777)),  # unknown table
        req(lpm(b"\x0e\x00\x00\x00", 8, b"\x01"), low=3),  # not the primary
        req(acl, counter),  # a counter entry: protobuf parses this one
    ]


def _outcome(core, request) -> tuple:  # noqa: ANN001
    try:
        core.write(request)
        codes: list[int] = []
    except P4RuntimeError as e:
        codes = [int(e.code), *[d.canonical_code for d in e.details]]
    return tuple(codes)


def test_fast_decoder_gives_the_same_outcomes_as_protobuf() -> None:
    slow, _, _, _, ids = setup_core()
    fast, _, _, _, _ = setup_core()
    fast_used = 0
    for request in _requests(ids):
        data = request.SerializeToString()
        parsed = parse_write_request(data)
        fast_used += isinstance(parsed, WriteRequest)
        assert _outcome(slow, pb.WriteRequest.FromString(data)) == _outcome(fast, parsed)
    assert fast_used == 7  # all but the counter entry took the fast path
    table = ids["MyIngress.ipv4_lpm"]
    read = pb.ReadRequest(device_id=1)
    read.entities.add().table_entry.table_id = table
    assert slow.read(read).responses == fast.read(read).responses


@pytest.mark.parametrize("data", [b"\xff", b"\x22\x05\x0a"])
def test_malformed_bytes_are_left_to_protobuf(data: bytes) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - protobuf's own DecodeError, as before
        pb.WriteRequest.FromString(data)
    with pytest.raises(Exception):  # noqa: B017, PT011
        parse_write_request(data)


def _match_value(m) -> tuple:  # noqa: ANN001 - a protobuf FieldMatch or the fast view
    kind = m.WhichOneof("field_match_type")
    v = getattr(m, kind)
    fields = {"lpm": ("value", "prefix_len"), "ternary": ("value", "mask"), "range": ("low", "high")}
    return (m.field_id, kind, *(getattr(v, f) for f in fields.get(kind, ("value",))))


def _summary(req) -> tuple:  # noqa: ANN001
    """Everything writes.py reads of a request, the same way for both parsers' results."""
    def entry(te) -> tuple:  # noqa: ANN001
        action = None
        if te.HasField("action"):
            a = te.action.action
            action = (a.action_id, [(p.param_id, p.value) for p in a.params])
        return (te.table_id, te.priority, te.controller_metadata, te.is_default_action, te.idle_timeout_ns,
                te.metadata, te.is_const, [_match_value(m) for m in te.match], action)

    return (req.device_id, req.role_id, req.role, req.atomicity, req.HasField("election_id"),
            req.election_id.high, req.election_id.low,
            [(u.type, u.entity.WhichOneof("entity"), entry(u.entity.table_entry)) for u in req.updates])


def _parsed(parse, data: bytes):  # noqa: ANN001, ANN202
    try:
        return parse(data)
    except Exception:  # noqa: BLE001 - either parser refusing the bytes
        return None


_SEEDS = [r.SerializeToString() for r in _requests({"MyIngress.ipv4_lpm": 3, "MyIngress.forward": 4,
                                                       "MyIngress.acl": 5, "MyIngress.drop": 6,
                                                       "MyIngress.port_pkts": 7})[:7]]


# bytes that matter to a varint or a key: continuation bits, wire types 0-7, lengths 0/1
_BYTES = st.one_of(st.sampled_from([0x00, 0x01, 0x02, 0x05, 0x7F, 0x80, 0x81, 0xFF]), st.integers(0, 255))


@settings(max_examples=1500, deadline=None)
@given(seed=st.sampled_from(_SEEDS), edits=st.lists(st.tuples(st.sampled_from(["cut", "set", "insert", "xor"]),
                                                            st.integers(0, 200), _BYTES), min_size=1, max_size=3))
def test_what_the_fast_decoder_accepts_protobuf_reads_the_same(seed: bytes, edits: list) -> None:
    """Damaged requests (cut short, a byte changed, flipped or added): the fast decoder either
    gives up, leaving them to protobuf, or reads exactly what protobuf reads."""
    data = bytearray(seed)
    for op, at, byte in edits:
        at %= len(data) + 1
        if op == "cut":
            del data[at:]
        elif op == "insert":
            data.insert(at, byte)
        elif at < len(data):
            data[at] = byte if op == "set" else data[at] ^ (byte & 0x87)  # xor: wire type and continuation
    fast = _parsed(_write_request, bytes(data))
    if fast is not None:
        slow = _parsed(pb.WriteRequest.FromString, bytes(data))
        assert slow is not None, "the fast decoder accepted bytes protobuf refuses"
        assert _summary(fast) == _summary(slow)
