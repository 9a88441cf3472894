"""Arbitration between clients, packet-out/in and digests on the core's streams."""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import Code, NullDevice, P4RuntimeCore
from tests.p4runtime.helpers import (
    Client,
    FakeScheduler,
    delete,
    error_codes,
    insert,
    modify,
    raises_code,
    setup_core,
)
from tests.p4runtime.p4info_builder import demo_p4info

OK, ALREADY_EXISTS, NOT_FOUND = Code.OK, Code.ALREADY_EXISTS, Code.NOT_FOUND


def new_core():
    return P4RuntimeCore(NullDevice(), device_id=7)


def test_primary_and_backup_notifications():
    core = new_core()
    a, b = Client(core), Client(core)
    a.arbitrate(5)
    assert a.last_status() == OK
    b.arbitrate(3)  # lower: backup; only b is told
    assert b.last_status() == ALREADY_EXISTS and len(a.of("arbitration")) == 1
    upd = b.of("arbitration")[-1]
    assert upd.device_id == 7 and (upd.election_id.high, upd.election_id.low) == (0, 5)
    b.arbitrate(9)  # b takes over: everyone is told
    assert b.last_status() == OK and a.last_status() == ALREADY_EXISTS
    assert a.of("arbitration")[-1].election_id.low == 9


def test_backup_write_is_permission_denied_and_primary_write_works():
    p4info, ids = demo_p4info()
    core = P4RuntimeCore(NullDevice(), device_id=1)
    a, b = Client(core), Client(core)
    a.arbitrate(2)
    b.arbitrate(1)
    raises_code(Code.PERMISSION_DENIED, b.set_pipeline, p4info)
    a.set_pipeline(p4info)
    raises_code(Code.PERMISSION_DENIED, b.write)
    a.write()  # empty batch from the primary: OK
    assert len(b.read(pb.Entity(table_entry=pb.TableEntry()))) == 0  # backups may read


def test_primary_leaving_leaves_no_primary_until_a_higher_id_comes():
    core = new_core()
    a, b = Client(core), Client(core)
    a.arbitrate(5)
    b.arbitrate(3)
    core.close_stream(a.session)
    assert b.last_status() == NOT_FOUND  # no primary now
    assert b.of("arbitration")[-1].election_id.low == 5  # highest ever seen
    b.arbitrate(4)  # still below the highest election id ever seen
    assert b.last_status() == NOT_FOUND
    b.arbitrate(5)
    assert b.last_status() == OK


def test_downgrade_tells_everyone():
    core = new_core()
    a, b = Client(core), Client(core)
    a.arbitrate(5)
    b.arbitrate(3)
    a.arbitrate(4)  # the primary lowers its own id: no primary any more
    assert a.last_status() == NOT_FOUND and b.last_status() == NOT_FOUND


def test_invalid_arbitration_terminates_the_stream():
    core = new_core()
    a, b, c = Client(core), Client(core), Client(core)
    a.arbitrate(5)
    raises_code(Code.INVALID_ARGUMENT, b.arbitrate, 5)  # duplicate election id
    raises_code(Code.NOT_FOUND, c.arbitrate, 1, device_id=8)
    assert b.session.closed and c.session.closed
    raises_code(Code.FAILED_PRECONDITION, a.arbitrate, 6, device_id=8)  # device id changed
    assert core.arbitration.primary is None


def test_client_without_election_id_is_a_backup():
    core = new_core()
    a, b = Client(core), Client(core)
    a.arbitrate(None)
    assert a.last_status() == NOT_FOUND and not a.of("arbitration")[-1].HasField("election_id")
    b.arbitrate(1, high=0)
    assert b.last_status() == OK and a.last_status() == ALREADY_EXISTS


def test_packet_out_is_decoded_for_the_device_and_checked():
    core, device, c, _, _ = setup_core()
    c.packet_out(b"\x01\x02", egress_port=5, pad=0)
    assert device.packet_outs == [(b"\x01\x02", {"egress_port": 5, "pad": 0})]
    c.packet_out(b"x", egress_port=5)  # pad missing
    c.packet_out(b"x", egress_port=512, pad=0)  # does not fit bit<9>
    errors = c.of("error")
    assert [e.canonical_code for e in errors] == [Code.INVALID_ARGUMENT] * 2
    assert "pad" in errors[0].message and errors[0].packet_out.packet_out.payload == b"x"
    backup = Client(core)
    backup.arbitrate(1)
    backup.packet_out(b"y", egress_port=1, pad=0)
    assert backup.of("error")[0].canonical_code == Code.PERMISSION_DENIED
    assert len(device.packet_outs) == 1


def test_packet_in_goes_to_the_primary_only():
    core, device, primary, _, _ = setup_core()
    backup = Client(core)
    backup.arbitrate(3)
    assert core.packet_in(b"pkt", {"ingress_port": 4, "reason": 1})
    (pin,) = primary.of("packet")
    assert pin.payload == b"pkt"
    st = device.state
    assert {m.metadata_id: m.value for m in pin.metadata} == {
        st.packet_in.by_name["ingress_port"].id: b"\x04", st.packet_in.by_name["reason"].id: b"\x01"}
    assert backup.of("packet") == []
    core.close_stream(primary.session)
    assert not core.packet_in(b"pkt", {"ingress_port": 4, "reason": 1}) and core.dropped_packet_ins == 1


def test_packet_in_as_values_for_an_in_process_primary():
    """A session opened with ``packet_in`` gets (payload, metadata by name), checked the same way,
    and no PacketIn message; a backup still gets nothing."""
    core, _, primary, _, _ = setup_core()
    got: list[tuple[bytes, dict[str, int]]] = []
    fast = Client(core)
    fast.session = core.open_stream(fast.received.append, lambda payload, meta: got.append((payload, meta)))
    fast.arbitrate(20)
    assert core.packet_in(b"pkt", {"reason": 1, "ingress_port": 4})
    assert got == [(b"pkt", {"ingress_port": 4, "reason": 1})] and fast.of("packet") == []
    assert primary.of("packet") == []
    with pytest.raises(ValueError, match="does not fit bit<"):
        core.packet_in(b"pkt", {"ingress_port": 1 << 40, "reason": 1})
    with pytest.raises(ValueError, match="no metadata field 'nope'"):
        core.packet_in(b"pkt", {"nope": 1, "reason": 1, "ingress_port": 4})
    with pytest.raises(ValueError, match="'ingress_port': -1 does not fit bit<"):
        core.packet_in(b"pkt", {"ingress_port": -1, "reason": 1})
    with pytest.raises(ValueError, match="'reason' missing"):
        core.packet_in(b"pkt", {"ingress_port": 4})
    assert len(got) == 1


def test_digests_are_batched_sent_to_primary_and_acked():
    sched = FakeScheduler()
    core, device, c, _, ids = setup_core(scheduler=sched)
    did = ids["learn_t"]
    cfg = pb.DigestEntry.Config(max_timeout_ns=1_000_000, max_list_size=2, ack_timeout_ns=10_000_000)
    c.write(insert(digest_entry=pb.DigestEntry(digest_id=did, config=cfg)))
    buf = device.state.digests[did]
    buf.add((0xAABBCCDDEEFF, 3), sched.now_ns())
    assert c.of("digest") == []
    buf.add((0x112233445566, 4), sched.now_ns())  # list full: sent at once
    (dl,) = c.of("digest")
    assert dl.digest_id == did and len(dl.data) == 2
    assert [m.bitstring for m in dl.data[1].struct.members] == [bytes.fromhex("112233445566"), b"\x04"]
    buf.add((0xAABBCCDDEEFF, 3), 10)  # not acked yet: duplicate dropped
    buf.add((1, 1), 20)
    sched.advance(500_000)
    assert len(c.of("digest")) == 1
    sched.advance(1_000_020)  # max_timeout after the first pending message
    assert [len(d.data) for d in c.of("digest")] == [2, 1]
    ack = pb.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = did, dl.list_id
    core.stream_message(c.session, ack)
    buf.add((0xAABBCCDDEEFF, 3), sched.now_ns())
    sched.advance(sched.now_ns() + 1_000_000)
    assert len(c.of("digest")) == 3  # learnable again after the ack
    (got,) = c.read(pb.Entity(digest_entry=pb.DigestEntry(digest_id=did)))
    assert got.digest_entry.config == cfg
    ack.digest_ack.digest_id = 12345
    core.stream_message(c.session, ack)
    assert c.of("error")[-1].canonical_code == Code.INVALID_ARGUMENT


def test_digest_entry_insert_modify_delete_codes():
    core, device, c, _, ids = setup_core()
    did = ids["learn_t"]
    cfg = pb.DigestEntry.Config(max_timeout_ns=0, max_list_size=1, ack_timeout_ns=0)
    err = raises_code(Code.UNKNOWN, c.write, modify(digest_entry=pb.DigestEntry(digest_id=did, config=cfg)),
                      insert(digest_entry=pb.DigestEntry(digest_id=did, config=cfg)),
                      insert(digest_entry=pb.DigestEntry(digest_id=did, config=cfg)),
                      delete(digest_entry=pb.DigestEntry(digest_id=did)),
                      delete(digest_entry=pb.DigestEntry(digest_id=did)))
    assert error_codes(err) == [Code.NOT_FOUND, Code.OK, Code.ALREADY_EXISTS, Code.OK, Code.NOT_FOUND]
    assert not device.state.digests[did].add((1, 1), 0)  # disabled again


def test_zero_election_id_is_valid_and_differs_from_unset():
    core = new_core()
    a, b = Client(core), Client(core)
    a.arbitrate(None)
    b.arbitrate(0)  # {high: 0, low: 0} is a real election id (spec: unlike an unset one)
    assert b.last_status() == OK and a.last_status() == ALREADY_EXISTS
    raises_code(Code.INVALID_ARGUMENT, Client(core).arbitrate, 0)  # but it is taken


def test_only_the_default_role_is_served():
    core = new_core()
    c = Client(core)
    req = pb.StreamMessageRequest()
    req.arbitration.device_id = 7
    req.arbitration.role.name = "monitor"
    raises_code(Code.NOT_FOUND, core.stream_message, c.session, req)
    core2, _, primary, _, _ = setup_core()
    w = pb.WriteRequest(device_id=1, role="monitor", election_id=pb.Uint128(low=10))
    raises_code(Code.NOT_FOUND, core2.write, w)


def test_device_failing_on_packet_out_reports_but_keeps_the_session():
    core, device, c, _, _ = setup_core()

    def broken(payload, metadata):
        raise RuntimeError("boom")
    device.packet_out = broken
    c.packet_out(b"x", egress_port=1, pad=0)
    assert c.of("error")[-1].canonical_code == Code.INTERNAL and "boom" in c.of("error")[-1].message
    assert not c.session.closed and core.arbitration.primary is c.session


def test_pipeline_loaded_by_other_means_is_served():
    p4info, ids = demo_p4info()
    device = NullDevice()
    device.load_pipeline(p4info, b"")  # e.g. the switch started with a program
    sched = FakeScheduler()
    core = P4RuntimeCore(device, device_id=1, scheduler=sched)
    c = Client(core)
    c.arbitrate(1)
    got = core.get_forwarding_pipeline_config(pb.GetForwardingPipelineConfigRequest(device_id=1))
    assert got.config.p4info == p4info and not got.config.HasField("cookie")
    cfg = pb.DigestEntry.Config(max_timeout_ns=0, max_list_size=1)
    c.write(insert(digest_entry=pb.DigestEntry(digest_id=ids["learn_t"], config=cfg)))
    device.state.digests[ids["learn_t"]].add((1, 2), 0)
    assert len(c.of("digest")) == 1
