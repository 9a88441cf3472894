"""The fast WriteRequest decoder (p4switch/p4runtime/wire.py) agrees with protobuf.

Every request here is applied twice to fresh cores - once parsed by protobuf, once by the
fast decoder - and the outcomes (codes of every update, entries read back) must be equal.
"""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import P4RuntimeError
from p4switch.p4runtime.wire import WriteRequest, parse_write_request
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
