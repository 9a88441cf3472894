"""P4RuntimeCore Write/Read over protobufs: codes, details, symmetry, wildcards, externs."""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2 as pb

from controlplane.p4runtime_client import ClientError, InProcessController, _ClientBase
from p4switch.p4runtime import Code, NullDevice, P4RuntimeCore
from p4switch.p4runtime.errors import P4RuntimeError
from tests.p4runtime.helpers import (
    Client,
    b,
    delete,
    error_codes,
    insert,
    modify,
    raises_code,
    setup_core,
)
from tests.p4runtime.p4info_builder import demo_p4info


def lpm_entry(ids, prefix: int, plen: int, port: int, dmac: int = 0xAABB) -> pb.TableEntry:
    te = pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])
    te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(prefix), prefix_len=plen))
    te.action.action.action_id = ids["MyIngress.forward"]
    te.action.action.params.add(param_id=1, value=b(port))
    te.action.action.params.add(param_id=2, value=b(dmac))
    return te


def acl_entry(ids, port: int, prio: int, src: tuple[int, int] | None = None,
              dport: tuple[int, int] | None = None) -> pb.TableEntry:
    te = pb.TableEntry(table_id=ids["MyIngress.acl"], priority=prio)
    te.match.add(field_id=1).exact.value = b(port)
    if src is not None:
        te.match.add(field_id=2).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(src[0]), mask=b(src[1])))
    if dport is not None:
        te.match.add(field_id=3).range.CopyFrom(pb.FieldMatch.Range(low=b(dport[0]), high=b(dport[1])))
    te.action.action.action_id = ids["MyIngress.drop"]
    return te


def test_no_pipeline_is_failed_precondition():
    core = P4RuntimeCore(NullDevice(), device_id=1)
    c = Client(core)
    c.arbitrate(1)
    raises_code(Code.FAILED_PRECONDITION, c.write)
    raises_code(Code.FAILED_PRECONDITION, c.read, pb.Entity(table_entry=pb.TableEntry()))
    assert not core.get_forwarding_pipeline_config(pb.GetForwardingPipelineConfigRequest(device_id=1)).HasField("config")


def test_wrong_device_id_is_not_found():
    core, _, c, _, _ = setup_core()
    raises_code(Code.NOT_FOUND, core.read, pb.ReadRequest(device_id=2))
    raises_code(Code.NOT_FOUND, core.write, pb.WriteRequest(device_id=2))


def test_insert_read_back_is_symmetric_and_canonical():
    core, device, c, _, ids = setup_core()
    te = lpm_entry(ids, 0x0A000000, 8, 3)
    te.action.action.params[1].value = b"\x00\x00\x00\x00\xaa\xbb"  # padded: accepted
    c.write(insert(table_entry=te))
    (got,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])))
    assert got.table_entry == lpm_entry(ids, 0x0A000000, 8, 3)  # answered canonical (shortest)
    hit = device.state.tables[ids["MyIngress.ipv4_lpm"]].lookup((0x0A010101,))
    assert hit.action.params == (3, 0xAABB)


def test_batch_errors_are_packed_per_update_in_order():
    core, device, c, _, ids = setup_core()
    good = lpm_entry(ids, 0x0A000000, 8, 1)
    bad_prefix = lpm_entry(ids, 0x0A000001, 8, 1)  # bits beyond the prefix
    too_wide = lpm_entry(ids, 0x0B000000, 8, 512)  # port is bit<9>
    err = raises_code(Code.UNKNOWN, c.write, insert(table_entry=good), insert(table_entry=bad_prefix),
                      insert(table_entry=good), insert(table_entry=too_wide))
    assert error_codes(err) == [Code.OK, Code.INVALID_ARGUMENT, Code.ALREADY_EXISTS, Code.INVALID_ARGUMENT]
    assert "beyond" in err.details[1].message
    assert len(device.state.tables[ids["MyIngress.ipv4_lpm"]]) == 1  # CONTINUE_ON_ERROR kept the good one


def test_rollback_on_error_restores_everything():
    core, device, c, _, ids = setup_core()
    table = device.state.tables[ids["MyIngress.ipv4_lpm"]]
    c.write(insert(table_entry=lpm_entry(ids, 0x0A000000, 8, 1)))
    batch = [modify(table_entry=lpm_entry(ids, 0x0A000000, 8, 2)),
             insert(table_entry=lpm_entry(ids, 0x0B000000, 8, 3)),
             delete(table_entry=lpm_entry(ids, 0x0A000000, 8, 0)),
             insert(table_entry=lpm_entry(ids, 0x0C000000, 8, 4)),
             delete(table_entry=lpm_entry(ids, 0x0D000000, 8, 0))]  # NOT_FOUND
    err = raises_code(Code.UNKNOWN, c.write, *batch, atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert error_codes(err) == [Code.ABORTED] * 4 + [Code.NOT_FOUND]
    assert len(table) == 1 and table.lookup((0x0A000001,)).action.params == (1, 0xAABB)


def test_entry_lifecycle_and_wildcard_reads():
    core, device, c, _, ids = setup_core()
    c.write(insert(table_entry=lpm_entry(ids, 0x0A000000, 8, 1)), insert(table_entry=acl_entry(ids, 1, 10, src=(0x0A000000, 0xFF000000))),
            insert(table_entry=acl_entry(ids, 2, 20, dport=(80, 90))))
    everything = c.read(pb.Entity(table_entry=pb.TableEntry()))
    assert len(everything) == 3
    acl_id = ids["MyIngress.acl"]
    by_prio = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=acl_id, priority=20)))
    assert [e.table_entry.priority for e in by_prio] == [20]
    one = c.read(pb.Entity(table_entry=acl_entry(ids, 2, 20, dport=(80, 90))))
    assert len(one) == 1 and one[0].table_entry.match[1].range.low == b(80)
    c.write(modify(table_entry=lpm_entry(ids, 0x0A000000, 8, 7)))
    (got,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])))
    assert got.table_entry.action.action.params[0].value == b(7)
    c.write(delete(table_entry=lpm_entry(ids, 0x0A000000, 8, 0)))
    assert c.read(pb.Entity(table_entry=pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"]))) == []
    raises_code(Code.UNKNOWN, c.read, pb.Entity(table_entry=pb.TableEntry(priority=3)))  # table 0 + filter


def test_default_entry_writes_and_reads():
    core, device, c, _, ids = setup_core()
    lpm_id = ids["MyIngress.ipv4_lpm"]
    te = pb.TableEntry(table_id=lpm_id, is_default_action=True)
    te.action.action.action_id = ids["NoAction"]
    c.write(modify(table_entry=te))
    (got,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=lpm_id, is_default_action=True)))
    assert got.table_entry.is_default_action and got.table_entry.action.action.action_id == ids["NoAction"]
    c.write(modify(table_entry=pb.TableEntry(table_id=lpm_id, is_default_action=True)))  # reset
    assert device.state.tables[lpm_id].default_entry.action.action_id == ids["MyIngress.drop"]
    err = raises_code(Code.UNKNOWN, c.write, insert(table_entry=te), delete(table_entry=te))
    assert error_codes(err) == [Code.INVALID_ARGUMENT, Code.INVALID_ARGUMENT]
    fixed = pb.TableEntry(table_id=ids["MyIngress.fixed"], is_default_action=True)
    fixed.action.action.action_id = ids["MyIngress.drop"]
    assert error_codes(raises_code(Code.UNKNOWN, c.write, modify(table_entry=fixed))) == [Code.PERMISSION_DENIED]


def test_const_table_entries_are_read_only_but_readable():
    core, device, c, _, ids = setup_core()
    fixed_id = ids["MyIngress.fixed"]
    device.state.tables[fixed_id].install_const_entry({1: 5}, ids["MyIngress.drop"])
    (got,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=fixed_id)))
    assert got.table_entry.is_const
    te = pb.TableEntry(table_id=fixed_id)
    te.match.add(field_id=1).exact.value = b(5)
    err = raises_code(Code.UNKNOWN, c.write, delete(table_entry=te))
    assert error_codes(err) == [Code.PERMISSION_DENIED]
    te.is_const = True
    assert error_codes(raises_code(Code.UNKNOWN, c.write, modify(table_entry=te))) == [Code.INVALID_ARGUMENT]


def test_counters_indexed_and_direct():
    core, device, c, _, ids = setup_core()
    cid = ids["MyIngress.port_pkts"]  # PACKETS unit, size 8
    device.state.counters[cid].count(3, 100)
    cells = c.read(pb.Entity(counter_entry=pb.CounterEntry(counter_id=cid)))
    assert len(cells) == 8
    assert cells[3].counter_entry.data == pb.CounterData(packet_count=1)  # bytes not kept by a PACKETS counter
    ce = pb.CounterEntry(counter_id=cid, index=pb.Index(index=2), data=pb.CounterData(packet_count=9))
    c.write(modify(counter_entry=ce))
    assert device.state.counters[cid].read(2)[0] == 9
    err = raises_code(Code.UNKNOWN, c.write, insert(counter_entry=ce),
                      modify(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=8))))
    assert error_codes(err) == [Code.INVALID_ARGUMENT, Code.OUT_OF_RANGE]
    c.write(insert(table_entry=lpm_entry(ids, 0x0A000000, 8, 1)))
    entry = device.state.tables[ids["MyIngress.ipv4_lpm"]].lookup((0x0A000001,))
    entry.direct_counter.count(60)
    entry.direct_counter.count(40)
    dce = pb.DirectCounterEntry(table_entry=pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"]))
    (got,) = c.read(pb.Entity(direct_counter_entry=dce))
    assert got.direct_counter_entry.data == pb.CounterData(packet_count=2, byte_count=100)
    want = lpm_entry(ids, 0x0A000000, 8, 1)
    want.counter_data.SetInParent()
    (te,) = c.read(pb.Entity(table_entry=want))
    assert te.table_entry.counter_data.byte_count == 100
    target = lpm_entry(ids, 0x0A000000, 8, 1)
    target.ClearField("action")
    c.write(modify(direct_counter_entry=pb.DirectCounterEntry(table_entry=target, data=pb.CounterData())))
    assert entry.direct_counter.snapshot() == (0, 0)
    missing = lpm_entry(ids, 0x0B000000, 8, 1)
    err = raises_code(Code.UNKNOWN, c.read, pb.Entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=missing)))
    assert error_codes(err) == [Code.NOT_FOUND]


def test_meters_and_direct_meters():
    core, device, c, _, ids = setup_core()
    mid = ids["MyIngress.port_meter"]
    cfg = pb.MeterConfig(cir=10, cburst=2, pir=20, pburst=4)
    c.write(modify(meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=1), config=cfg)))
    got = c.read(pb.Entity(meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=1))))
    assert got[0].meter_entry.config == cfg
    unset = c.read(pb.Entity(meter_entry=pb.MeterEntry(meter_id=mid, index=pb.Index(index=0))))
    assert not unset[0].meter_entry.HasField("config")  # default config reads back unset
    colors = [device.state.meters[mid].execute(1, 0, 64) for _ in range(6)]
    assert colors == [0, 0, 1, 1, 2, 2]
    bad = pb.MeterConfig(cir=20, cburst=2, pir=10, pburst=4)
    err = raises_code(Code.UNKNOWN, c.write, modify(meter_entry=pb.MeterEntry(meter_id=mid, config=bad)))
    assert error_codes(err) == [Code.INVALID_ARGUMENT]
    c.write(insert(table_entry=acl_entry(ids, 1, 5)))
    key = acl_entry(ids, 1, 5)
    key.ClearField("action")
    c.write(modify(direct_meter_entry=pb.DirectMeterEntry(table_entry=key, config=cfg)))
    (dm,) = c.read(pb.Entity(direct_meter_entry=pb.DirectMeterEntry(table_entry=key)))
    assert dm.direct_meter_entry.config == cfg


def test_registers_read_and_write():
    core, device, c, _, ids = setup_core()
    rid = ids["MyIngress.occupancy"]
    device.state.registers[rid].write(3, 1234)
    (got,) = c.read(pb.Entity(register_entry=pb.RegisterEntry(register_id=rid, index=pb.Index(index=3))))
    assert got.register_entry.data.bitstring == b(1234)
    re = pb.RegisterEntry(register_id=rid, index=pb.Index(index=4))
    re.data.bitstring = b(77)
    c.write(modify(register_entry=re))
    assert device.state.registers[rid].read(4) == 77


def test_clone_sessions_and_multicast_through_pre_entries():
    core, device, c, _, ids = setup_core()
    cs = pb.CloneSessionEntry(session_id=100, class_of_service=2, packet_length_bytes=64)
    cs.replicas.add(egress_port=3, instance=1)
    c.write(insert(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(clone_session_entry=cs)))
    session = device.state.pre.clone_session(100)
    assert session.replicas[0].port == 3 and session.packet_length_bytes == 64
    (got,) = c.read(pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
        clone_session_entry=pb.CloneSessionEntry())))
    assert got.packet_replication_engine_entry.clone_session_entry == cs
    mg = pb.MulticastGroupEntry(multicast_group_id=1)
    mg.replicas.add(port=b(1), instance=0)
    mg.replicas.add(port=b(2), instance=0)
    zero = pb.CloneSessionEntry(session_id=0)
    err = raises_code(Code.UNKNOWN, c.write,
                      insert(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=mg)),
                      insert(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(clone_session_entry=zero)),
                      delete(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
                          clone_session_entry=pb.CloneSessionEntry(session_id=5))))
    assert error_codes(err) == [Code.OK, Code.INVALID_ARGUMENT, Code.NOT_FOUND]
    assert [r.port for r in device.state.pre.multicast_group(1).replicas] == [1, 2]


def engine_pre_matches(pre) -> None:
    """The engine's copy of the PRE (what the engine's walk reads) says what the dicts say."""
    eng = pre.engine
    assert eng.ids() == (sorted(pre.clone_sessions), sorted(pre.multicast_groups))
    for sid, s in pre.clone_sessions.items():
        assert eng.clone_session(sid) == ([(r.port, r.instance) for r in s.replicas], s.class_of_service,
                                          s.packet_length_bytes)
    for gid, g in pre.multicast_groups.items():
        assert eng.multicast_group(gid) == [(r.port, r.instance) for r in g.replicas]


def test_the_engine_copy_of_the_pre_follows_writes_and_rollbacks():
    pytest.importorskip("hbh_engine")
    core, device, c, _, ids = setup_core()
    pre = device.state.pre

    def session(sid: int, *ports: int, cos: int = 0) -> pb.PacketReplicationEngineEntry:
        cs = pb.CloneSessionEntry(session_id=sid, class_of_service=cos, packet_length_bytes=sid)
        for i, p in enumerate(ports):
            cs.replicas.add(egress_port=p, instance=i)
        return pb.PacketReplicationEngineEntry(clone_session_entry=cs)

    def group(gid: int, *ports: int) -> pb.PacketReplicationEngineEntry:
        mg = pb.MulticastGroupEntry(multicast_group_id=gid)
        for p in ports:
            mg.replicas.add(port=b(p), instance=gid)
        return pb.PacketReplicationEngineEntry(multicast_group_entry=mg)

    c.write(insert(packet_replication_engine_entry=session(1, 3)), insert(packet_replication_engine_entry=session(2, 4)),
            insert(packet_replication_engine_entry=group(1, 1, 2)))
    engine_pre_matches(pre)
    c.write(modify(packet_replication_engine_entry=session(1, 5, 6, cos=3)),
            delete(packet_replication_engine_entry=session(2)))
    engine_pre_matches(pre)
    assert pre.engine.clone_session(2) is None
    batch = [modify(packet_replication_engine_entry=session(1, 7)), delete(packet_replication_engine_entry=group(1)),
             insert(packet_replication_engine_entry=group(2, 3)), insert(packet_replication_engine_entry=session(3, 1)),
             delete(packet_replication_engine_entry=session(9))]  # NOT_FOUND: the batch is undone
    err = raises_code(Code.UNKNOWN, c.write, *batch, atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert error_codes(err) == [Code.ABORTED] * 4 + [Code.NOT_FOUND]
    engine_pre_matches(pre)
    assert pre.engine.ids() == ([1], [1]) and pre.engine.clone_session(1)[1] == 3


def test_unsupported_entities_are_unimplemented():
    core, device, c, _, ids = setup_core()
    err = raises_code(Code.UNKNOWN, c.write, insert(extern_entry=pb.ExternEntry(extern_type_id=1, extern_id=1)))
    assert error_codes(err) == [Code.UNIMPLEMENTED]
    err = raises_code(Code.UNKNOWN, c.read, pb.Entity(extern_entry=pb.ExternEntry()))
    assert error_codes(err) == [Code.UNIMPLEMENTED]


def test_pipeline_config_actions_and_cookie():
    core, device, c, p4info, ids = setup_core()
    G = pb.GetForwardingPipelineConfigRequest
    got = core.get_forwarding_pipeline_config(G(device_id=1, response_type=G.COOKIE_ONLY))
    assert got.config.cookie.cookie == 42 and not got.config.HasField("p4info") and not got.config.p4_device_config
    got = core.get_forwarding_pipeline_config(G(device_id=1, response_type=G.ALL))
    assert got.config.p4info == p4info and got.config.p4_device_config == b"cfg"
    got = core.get_forwarding_pipeline_config(G(device_id=1, response_type=G.DEVICE_CONFIG_AND_COOKIE))
    assert not got.config.HasField("p4info") and got.config.p4_device_config == b"cfg"
    loads = device.loads
    c.set_pipeline(p4info, action=pb.SetForwardingPipelineConfigRequest.VERIFY)
    assert device.loads == loads
    req = pb.SetForwardingPipelineConfigRequest(device_id=1, action=pb.SetForwardingPipelineConfigRequest.COMMIT)
    req.election_id.low = 10
    raises_code(Code.FAILED_PRECONDITION, core.set_forwarding_pipeline_config, req)  # nothing saved
    raises_code(Code.UNIMPLEMENTED, c.set_pipeline, p4info, action=pb.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT)
    broken = pb.SetForwardingPipelineConfigRequest()
    broken.config.p4info.CopyFrom(p4info)
    broken.config.p4info.tables[0].action_refs.add(id=0x01ABCDEF)
    raises_code(Code.INVALID_ARGUMENT, c.set_pipeline, broken.config.p4info)


def test_verify_and_save_then_commit_replays_writes():
    core, device, c, p4info, ids = setup_core()
    c.write(insert(table_entry=lpm_entry(ids, 0x0A000000, 8, 1)))
    c.set_pipeline(p4info, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_SAVE, device_config=b"v2")
    c.write(insert(table_entry=lpm_entry(ids, 0x0B000000, 8, 2)))
    live = device.state.tables[ids["MyIngress.ipv4_lpm"]]
    assert live.lookup((0x0B000001,)) is None  # forwarding state untouched before COMMIT
    req = pb.SetForwardingPipelineConfigRequest(device_id=1, action=pb.SetForwardingPipelineConfigRequest.COMMIT)
    req.election_id.low = 10
    core.set_forwarding_pipeline_config(req)
    new = device.state.tables[ids["MyIngress.ipv4_lpm"]]
    assert device.device_config == b"v2"
    assert new.lookup((0x0B000001,)).action.params == (2, 0xAABB) and new.lookup((0x0A000001,)) is None


def test_device_rejection_is_invalid_argument_with_its_message():
    p4info, _ = demo_p4info()
    core = P4RuntimeCore(NullDevice(reject=lambda p, cfg: "bad blob" if cfg == b"x" else None))
    c = Client(core)
    c.arbitrate(1)
    err = raises_code(Code.INVALID_ARGUMENT, c.set_pipeline, p4info, device_config=b"x")
    assert "bad blob" in err.message
    assert core.device.state is None


def test_idle_timeout_rules_and_time_since_last_hit():
    sched_core, device, c, _, ids = setup_core()
    te = lpm_entry(ids, 0x0A000000, 8, 1)
    te.idle_timeout_ns = 1000  # ipv4_lpm does not support idle timeout
    err = raises_code(Code.UNKNOWN, c.write, insert(table_entry=te))
    assert error_codes(err) == [Code.INVALID_ARGUMENT]
    te.idle_timeout_ns = 0
    te.time_since_last_hit.elapsed_ns = 5
    assert error_codes(raises_code(Code.UNKNOWN, c.write, insert(table_entry=te))) == [Code.INVALID_ARGUMENT]
    te.ClearField("time_since_last_hit")
    c.write(insert(table_entry=te))
    q = pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])
    q.time_since_last_hit.SetInParent()
    (got,) = c.read(pb.Entity(table_entry=q))
    assert got.table_entry.HasField("time_since_last_hit")
    (plain,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])))
    assert not plain.table_entry.HasField("time_since_last_hit") and not plain.table_entry.HasField("counter_data")


def test_a_large_failing_batch_has_one_short_error_per_update():
    """10,000 failing updates: every one gets its code, the details stay small (no update
    repeats its entry at length), so grpc-status-details-bin stays within reach of a client."""
    from google.protobuf import any_pb2
    from google.rpc import status_pb2

    core, device, c, _, ids = setup_core()
    entries = [lpm_entry(ids, 0x0A000000 | (i << 8), 24, 1, dmac=0xAABBCCDDEEFF) for i in range(10_000)]
    bad = [insert(table_entry=e) for e in entries]
    for u in bad:
        u.entity.table_entry.action.action.params[0].value = b"\x7f\xff"  # port too wide for bit<9>
    err = raises_code(Code.UNKNOWN, c.write, *bad)
    assert error_codes(err) == [Code.INVALID_ARGUMENT] * 10_000
    status = status_pb2.Status(code=2, message=err.message)
    for d in err.details:
        packed = any_pb2.Any()
        packed.Pack(d)
        status.details.append(packed)
    per_update = len(status.SerializeToString()) / 10_000
    assert per_update < 64  # the type URL alone is 31 bytes
    assert all(len(d.message) <= 160 for d in err.details)
    assert err.details[0].message  # the first failures still say why


def test_counter_cells_read_as_values_in_process_are_what_a_read_answers():
    core, device, _, _, ids = setup_core()
    cid = ids["MyIngress.port_pkts"]  # PACKETS unit, size 8
    for index in (3, 5, 5):
        device.state.counters[cid].count(index, 100)
    ctl = InProcessController(core)
    cells = [("MyIngress.port_pkts", i) for i in (5, 3, 0, 5)]
    assert ctl.read_counters(cells) == _ClientBase.read_counters(ctl, cells) == [(2, 0), (1, 0), (0, 0), (2, 0)]
    assert ctl.read_counter("MyIngress.port_pkts", 3) == (1, 0)
    raises_code(Code.OUT_OF_RANGE, ctl.read_counters, [("MyIngress.port_pkts", 8)])
    raises_code(Code.INVALID_ARGUMENT, ctl.read_counters, [("MyIngress.port_pkts", -1)])
    with pytest.raises(P4RuntimeError):  # the Read fails the same cells
        _ClientBase.read_counters(ctl, [("MyIngress.port_pkts", 8)])


def test_cells_read_again_follow_the_counts_a_new_pipeline_and_its_errors():
    """An in-process client keeps a reader for cells it read before (P4RuntimeCore.counter_cells_reader):
    each read still answers what a Read would then."""
    core, device, primary, p4info, ids = setup_core()
    cid = ids["MyIngress.port_pkts"]  # PACKETS unit, size 8
    ctl = InProcessController(core)
    cells = [("MyIngress.port_pkts", 5), ("MyIngress.port_pkts", 3)]
    assert ctl.read_counters(cells) == [(0, 0), (0, 0)]
    device.state.counters[cid].count(5, 100)
    assert ctl.read_counters(list(cells)) == [(1, 0), (0, 0)] == _ClientBase.read_counters(ctl, cells)
    primary.set_pipeline(p4info, cookie=43)  # a new state, its counters at 0
    device.state.counters[cid].count(3, 100)
    assert ctl.read_counters(cells) == [(0, 0), (1, 0)] == _ClientBase.read_counters(ctl, cells)
    read = core.counter_cells_reader([(cid, 3)])
    assert read() == read() == [(1, 0)]
    for bad, code in (([(cid, 8)], Code.OUT_OF_RANGE), ([(cid, -1)], Code.INVALID_ARGUMENT), ([(7, 0)], Code.NOT_FOUND)):
        read = core.counter_cells_reader(bad)
        raises_code(code, read)
        raises_code(code, read)  # at every read, as the Read fails
    with pytest.raises(ClientError, match="unknown counter 'MyIngress.nope'"):
        ctl.read_counters([("MyIngress.nope", 0)])
