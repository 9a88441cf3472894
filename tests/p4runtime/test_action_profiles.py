"""Action profiles and selectors over P4Runtime: members, groups, one-shots, their codes,
reads, rollbacks, and what the pipeline does with them (load_balance.p4's ``wcmp``)."""

from __future__ import annotations

import random

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import Code, NullDevice, P4RuntimeCore
from p4switch.pipeline.algorithms import crc16
from tests.p4runtime.helpers import Client, delete, error_codes, insert, modify, raises_code
from tests.p4runtime.indirect import PROFILES, Rig, action, group, ipv4_udp, lpm_entry, member, rig
from tests.p4runtime.p4info_builder import EXACT, P4InfoBuilder

WCMP = "LbIngress.wcmp"
SEL = "LbIngress.wcmp.implementation"
NHOP = "LbIngress.set_nhop"
DST = 0x0A000001  # in 10.0.0.0/8


def nhop(r: Rig, port: int) -> pb.Action:
    return action(r, NHOP, nhop_mac=0x020000000000 + port, port=port)


def flows(n: int, seed: int = 7) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16)) for _ in range(n)]


def port_of(r: Rig, src: int, sport: int, dport: int, dst: int = DST) -> int:
    return r.run(ipv4_udp(src, dst, sport, dport)).std("egress_spec")


def predicted(weighted_ports: list[tuple[int, int]], src: int, sport: int, dport: int) -> int:
    """The documented choice: crc16 of the selector fields (srcAddr, protocol 17, sport, dport),
    cut to the 14-bit output width, modulo the sum of weights, over the members in order."""
    h = crc16((src << 40) | (17 << 32) | (sport << 16) | dport, 72) & 0x3FFF
    slot = h % sum(w for _, w in weighted_ports)
    for port, w in weighted_ports:
        if slot < w:
            return port
        slot -= w
    raise AssertionError("unreachable")


def wcmp_group(r: Rig, ports: list[tuple[int, int]], group_id: int = 1) -> None:
    """Members 1..n (port p), group ``group_id`` with weights, 10.0.0.0/8 -> the group."""
    r.client.write(*[insert(action_profile_member=member(r, SEL, p, nhop(r, p))) for p, _ in ports])
    r.client.write(insert(action_profile_group=group(r, SEL, group_id, ports)))
    te = lpm_entry(r, WCMP, 0x0A000000, 8)
    te.action.action_profile_group_id = group_id
    r.client.write(insert(table_entry=te))


# ------------------------------------------------------------------ data plane


def test_a_group_spreads_flows_over_its_members_and_keeps_each_flow_on_one() -> None:
    r = rig()
    ports = [(1, 1), (2, 1), (3, 1), (4, 1)]
    wcmp_group(r, ports)
    seen: dict[int, int] = {}
    for src, sport, dport in flows(300):
        got = {port_of(r, src, sport, dport) for _ in range(3)}
        assert len(got) == 1, "one flow, one path"
        (port,) = got
        assert port == predicted(ports, src, sport, dport)
        seen[port] = seen.get(port, 0) + 1
    assert set(seen) == {1, 2, 3, 4}
    assert min(seen.values()) > 300 * 0.1


def test_weights_repeat_members_in_the_selection() -> None:
    r = rig()
    ports = [(5, 1), (6, 3)]
    wcmp_group(r, ports)
    on6 = 0
    for src, sport, dport in flows(400, seed=3):
        port = port_of(r, src, sport, dport)
        assert port == predicted(ports, src, sport, dport)
        on6 += port == 6
    assert 0.6 < on6 / 400 < 0.9


def test_modifying_a_member_or_a_group_changes_forwarding_at_once() -> None:
    r = rig()
    wcmp_group(r, [(1, 1), (2, 1), (3, 1)])
    sample = flows(120)
    before = {f: port_of(r, *f) for f in sample}
    r.client.write(modify(action_profile_member=member(r, SEL, 2, nhop(r, 9))))
    after = {f: port_of(r, *f) for f in sample}
    assert {f for f in sample if after[f] == 9} == {f for f in sample if before[f] == 2}
    assert all(after[f] == before[f] for f in sample if before[f] != 2)
    r.client.write(modify(action_profile_group=group(r, SEL, 1, [(1, 1), (3, 1)])))
    assert {port_of(r, *f) for f in sample} == {1, 3}


def test_an_entry_may_name_one_member() -> None:
    r = rig()
    r.client.write(insert(action_profile_member=member(r, SEL, 3, nhop(r, 3))))
    te = lpm_entry(r, WCMP, 0x0A000000, 8)
    te.action.action_profile_member_id = 3
    r.client.write(insert(table_entry=te))
    assert {port_of(r, *f) for f in flows(40)} == {3}
    pkt = r.run(ipv4_udp(1, DST, 2, 3))
    assert pkt.get("hdr.ethernet.dstAddr") == 0x020000000003 and pkt.get("hdr.ipv4.ttl") == 63


def test_an_empty_group_behaves_as_a_miss() -> None:
    r = rig(PROFILES)
    sel = "MyIngress.paths"
    r.client.write(insert(action_profile_group=group(r, sel, 1, max_size=4)))
    te = lpm_entry(r, "MyIngress.by_dst", 0x0A000000, 8)
    te.action.action_profile_group_id = 1
    r.client.write(insert(table_entry=te))
    assert port_of(r, 1, 2, 3) == 100  # by_dst.apply().hit is false
    r.client.write(insert(action_profile_member=member(r, sel, 1, action(r, "MyIngress.set_port", port=7, mark=9))))
    r.client.write(modify(action_profile_group=group(r, sel, 1, [(1, 1)], max_size=4)))
    pkt = r.run(ipv4_udp(1, DST, 2, 3))
    assert pkt.std("egress_spec") == 7 and pkt.get("hdr.ipv4.diffserv") == 9


def test_an_action_profile_without_selector_runs_the_entrys_member() -> None:
    r = rig(PROFILES)
    prof = "MyIngress.nhops"
    r.client.write(insert(action_profile_member=member(r, prof, 4, action(r, "MyIngress.set_port", port=9, mark=0x20))),
                   insert(action_profile_member=member(r, prof, 5, action(r, "MyIngress.drop"))))
    te = pb.TableEntry(table_id=r.ids["MyIngress.by_port"])
    te.match.add(field_id=1).exact.value = b"\x05"
    te.action.action_profile_member_id = 4
    r.client.write(insert(table_entry=te))
    pkt = r.run(ipv4_udp(1, DST, 2, 3), port=5)
    assert pkt.std("egress_spec") == 9 and pkt.get("hdr.ipv4.diffserv") == 0x20
    assert r.run(ipv4_udp(1, DST, 2, 3), port=6).std("egress_spec") == 100  # by_port miss, by_dst miss
    te.action.action_profile_member_id = 5
    r.client.write(modify(table_entry=te))
    assert r.run(ipv4_udp(1, DST, 2, 3), port=5).marked_to_drop
    te.action.action_profile_group_id = 1
    err = raises_code(Code.UNKNOWN, r.client.write, modify(table_entry=te))
    assert error_codes(err) == [Code.INVALID_ARGUMENT] and "no selector" in err.details[0].message


def test_one_shot_action_sets_select_like_groups_and_read_back_as_written() -> None:
    r = rig()
    te = lpm_entry(r, WCMP, 0x0A000000, 8)
    shot = te.action.action_profile_action_set
    shot.action_profile_actions.add(action=nhop(r, 5), weight=2)
    shot.action_profile_actions.add(action=nhop(r, 6), weight=1)
    r.client.write(insert(table_entry=te))
    for src, sport, dport in flows(100):
        assert port_of(r, src, sport, dport) == predicted([(5, 2), (6, 1)], src, sport, dport)
    (got,) = r.client.read(pb.Entity(table_entry=pb.TableEntry(table_id=r.ids[WCMP])))
    assert got.table_entry.action == te.action
    # the two styles do not mix on one selector
    err = raises_code(Code.UNKNOWN, r.client.write, insert(action_profile_member=member(r, SEL, 1, nhop(r, 1))))
    assert error_codes(err) == [Code.INVALID_ARGUMENT] and "one-shot" in err.details[0].message
    r.client.write(delete(table_entry=lpm_entry(r, WCMP, 0x0A000000, 8)))
    r.client.write(insert(action_profile_member=member(r, SEL, 1, nhop(r, 1))))
    err = raises_code(Code.UNKNOWN, r.client.write, insert(table_entry=te))
    assert error_codes(err) == [Code.INVALID_ARGUMENT]


# ----------------------------------------------------------------- status codes


def codes(r: Rig, *updates: pb.Update) -> list[int]:
    """Per-update codes of a CONTINUE_ON_ERROR batch (all OK: [])."""
    try:
        r.client.write(*updates)
    except Exception as exc:  # P4RuntimeError
        return error_codes(exc)
    return []


def test_member_writes_follow_the_specification() -> None:
    r = rig()
    ok = member(r, SEL, 1, nhop(r, 1))
    assert codes(r, insert(action_profile_member=ok)) == []
    assert codes(r, insert(action_profile_member=ok)) == [Code.ALREADY_EXISTS]
    assert codes(r, insert(action_profile_member=member(r, SEL, 2))) == [Code.INVALID_ARGUMENT]  # no action
    assert codes(r, insert(action_profile_member=member(r, SEL, 0, nhop(r, 1)))) == [Code.INVALID_ARGUMENT]
    other = action(r, "LbIngress.set_group", base=0, count=1)  # an action of ecmp_group only
    assert codes(r, insert(action_profile_member=member(r, SEL, 2, other))) == [Code.INVALID_ARGUMENT]
    bad_param = nhop(r, 1)
    bad_param.params[1].value = b"\x02\x00"  # port is bit<9>
    assert codes(r, insert(action_profile_member=member(r, SEL, 2, bad_param))) == [Code.INVALID_ARGUMENT]
    assert codes(r, modify(action_profile_member=member(r, SEL, 9, nhop(r, 1)))) == [Code.NOT_FOUND]
    assert codes(r, delete(action_profile_member=member(r, SEL, 9))) == [Code.NOT_FOUND]
    unknown = pb.ActionProfileMember(action_profile_id=0x11000999, member_id=1, action=nhop(r, 1))
    assert codes(r, insert(action_profile_member=unknown)) == [Code.NOT_FOUND]


def test_group_writes_follow_the_specification() -> None:
    r = rig()
    r.client.write(*[insert(action_profile_member=member(r, SEL, i, nhop(r, i))) for i in (1, 2)])
    assert codes(r, insert(action_profile_group=group(r, SEL, 1, [(1, 1), (7, 1)]))) == [Code.NOT_FOUND]
    assert codes(r, insert(action_profile_group=group(r, SEL, 1, [(1, 1), (1, 2)]))) == [Code.INVALID_ARGUMENT]
    assert codes(r, insert(action_profile_group=group(r, SEL, 1, [(1, 0)]))) == [Code.INVALID_ARGUMENT]
    assert codes(r, insert(action_profile_group=group(r, SEL, 1, [(1, 2), (2, 2)], max_size=3))) == \
        [Code.RESOURCE_EXHAUSTED]
    watched = group(r, SEL, 1, [(1, 1)])
    watched.members[0].watch_port = b"\x01"
    assert codes(r, insert(action_profile_group=watched)) == [Code.UNIMPLEMENTED]
    assert codes(r, insert(action_profile_group=group(r, SEL, 1, [(1, 1)], max_size=4))) == []
    assert codes(r, insert(action_profile_group=group(r, SEL, 1, [(2, 1)], max_size=4))) == [Code.ALREADY_EXISTS]
    assert codes(r, modify(action_profile_group=group(r, SEL, 1, [(2, 1)], max_size=5))) == [Code.INVALID_ARGUMENT]
    assert codes(r, modify(action_profile_group=group(r, SEL, 2, [(2, 1)]))) == [Code.NOT_FOUND]
    assert codes(r, delete(action_profile_group=group(r, SEL, 2))) == [Code.NOT_FOUND]
    assert codes(r, modify(action_profile_group=group(r, SEL, 1, [(1, 1), (2, 3)], max_size=4))) == []


def test_members_and_groups_in_use_cannot_be_deleted() -> None:
    r = rig()
    wcmp_group(r, [(1, 1), (2, 1)])
    te = lpm_entry(r, WCMP, 0x0B000000, 8)
    te.action.action_profile_member_id = 2
    r.client.write(insert(table_entry=te))
    assert codes(r, delete(action_profile_member=member(r, SEL, 1))) == [Code.FAILED_PRECONDITION]  # in group 1
    assert codes(r, delete(action_profile_group=group(r, SEL, 1))) == [Code.FAILED_PRECONDITION]  # 10/8 uses it
    r.client.write(modify(action_profile_group=group(r, SEL, 1, [(1, 1)])))
    assert codes(r, delete(action_profile_member=member(r, SEL, 2))) == [Code.FAILED_PRECONDITION]  # 11/8 uses it
    r.client.write(delete(table_entry=lpm_entry(r, WCMP, 0x0B000000, 8)))
    r.client.write(delete(action_profile_member=member(r, SEL, 2)))
    r.client.write(delete(table_entry=lpm_entry(r, WCMP, 0x0A000000, 8)),
                   delete(action_profile_group=group(r, SEL, 1)),
                   delete(action_profile_member=member(r, SEL, 1)))
    assert r.state.action_profiles_by_name[SEL].members == {}


def test_indirect_table_entries_follow_the_specification() -> None:
    r = rig()
    te = lpm_entry(r, WCMP, 0x0A000000, 8)
    te.action.action_profile_member_id = 1
    assert codes(r, insert(table_entry=te)) == [Code.NOT_FOUND]
    te.action.action_profile_group_id = 1
    assert codes(r, insert(table_entry=te)) == [Code.NOT_FOUND]
    te.action.action.CopyFrom(nhop(r, 1))
    assert codes(r, insert(table_entry=te)) == [Code.INVALID_ARGUMENT]  # direct action on an indirect table
    direct = pb.TableEntry(table_id=r.ids["LbIngress.ecmp_nhop"])
    direct.match.add(field_id=1).exact.value = b"\x01"
    direct.action.action_profile_member_id = 1
    assert codes(r, insert(table_entry=direct)) == [Code.INVALID_ARGUMENT]
    default = pb.TableEntry(table_id=r.ids[WCMP], is_default_action=True)
    default.action.action.CopyFrom(nhop(r, 1))
    assert codes(r, modify(table_entry=default)) == [Code.PERMISSION_DENIED]
    empty = lpm_entry(r, WCMP, 0x0A000000, 8)
    empty.action.action_profile_action_set.SetInParent()
    assert codes(r, insert(table_entry=empty)) == [Code.INVALID_ARGUMENT]


def test_reads_answer_members_and_groups_with_wildcards() -> None:
    r = rig(PROFILES)
    sp = action(r, "MyIngress.set_port", port=3, mark=1)
    r.client.write(insert(action_profile_member=member(r, "MyIngress.nhops", 1, sp)),
                   insert(action_profile_member=member(r, "MyIngress.paths", 1, sp)),
                   insert(action_profile_member=member(r, "MyIngress.paths", 2, sp)))
    g = group(r, "MyIngress.paths", 5, [(2, 3), (1, 1)], max_size=4)
    r.client.write(insert(action_profile_group=g))

    def members(profile_id: int = 0, member_id: int = 0) -> list[tuple[int, int]]:
        ents = r.client.read(pb.Entity(action_profile_member=pb.ActionProfileMember(
            action_profile_id=profile_id, member_id=member_id)))
        return [(e.action_profile_member.action_profile_id, e.action_profile_member.member_id) for e in ents]

    nh, paths = r.ids["MyIngress.nhops"], r.ids["MyIngress.paths"]
    assert sorted(members()) == sorted([(nh, 1), (paths, 1), (paths, 2)])
    assert members(paths) == [(paths, 1), (paths, 2)]
    assert members(paths, 2) == [(paths, 2)] and members(paths, 9) == []
    (one,) = r.client.read(pb.Entity(action_profile_member=member(r, "MyIngress.paths", 1)))
    assert one.action_profile_member.action == sp
    (got,) = r.client.read(pb.Entity(action_profile_group=pb.ActionProfileGroup()))
    assert got.action_profile_group == g  # members in order, weights, max_size
    assert r.client.read(pb.Entity(action_profile_group=group(r, "MyIngress.nhops", 0))) == []
    raises_code(Code.UNKNOWN, r.client.read, pb.Entity(action_profile_member=pb.ActionProfileMember(member_id=1)))
    te = lpm_entry(r, "MyIngress.by_dst", 0x0A000000, 8)
    te.action.action_profile_group_id = 5
    r.client.write(insert(table_entry=te))
    (read,) = r.client.read(pb.Entity(table_entry=pb.TableEntry(table_id=r.ids["MyIngress.by_dst"])))
    assert read.table_entry.action.action_profile_group_id == 5


def test_a_failed_atomic_batch_restores_members_groups_and_references() -> None:
    r = rig()
    wcmp_group(r, [(1, 1), (2, 1)])
    batch = [delete(table_entry=lpm_entry(r, WCMP, 0x0A000000, 8)),
             delete(action_profile_group=group(r, SEL, 1)),
             delete(action_profile_member=member(r, SEL, 1)),
             modify(action_profile_member=member(r, SEL, 2, nhop(r, 8))),
             insert(action_profile_member=member(r, SEL, 3, nhop(r, 3))),
             insert(action_profile_member=member(r, SEL, 3, nhop(r, 3)))]  # duplicate: fails
    err = raises_code(Code.UNKNOWN, r.client.write, *batch, atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert error_codes(err) == [Code.ABORTED] * 5 + [Code.ALREADY_EXISTS]
    prof = r.state.action_profiles_by_name[SEL]
    assert sorted(prof.members) == [1, 2] and prof.members[2].action.params[1] == 2 and list(prof.groups) == [1]
    assert {port_of(r, *f) for f in flows(60)} == {1, 2}
    # the restored entry still holds its group: deleting the group is refused again
    assert codes(r, delete(action_profile_group=group(r, SEL, 1))) == [Code.FAILED_PRECONDITION]


def test_a_rolled_back_modify_gives_the_entry_its_old_reference_back() -> None:
    r = rig()
    r.client.write(*[insert(action_profile_member=member(r, SEL, i, nhop(r, i))) for i in (1, 2)])
    te = lpm_entry(r, WCMP, 0x0A000000, 8)
    te.action.action_profile_member_id = 1
    r.client.write(insert(table_entry=te))
    te.action.action_profile_member_id = 2
    raises_code(Code.UNKNOWN, r.client.write, modify(table_entry=te),
                insert(action_profile_member=member(r, SEL, 1, nhop(r, 1))),  # duplicate: fails
                atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert {port_of(r, *f) for f in flows(10)} == {1}
    assert codes(r, delete(action_profile_member=member(r, SEL, 1))) == [Code.FAILED_PRECONDITION]
    assert codes(r, delete(action_profile_member=member(r, SEL, 2))) == []


# ------------------------------------------------------------ P4Info size rules


def sized(**profile) -> tuple[Client, dict[str, int]]:
    """A NullDevice core with one selector 'sel' over table 't' (exact key, actions a(x), d)."""
    bld = P4InfoBuilder()
    bld.action("a", [("x", 8)])
    bld.action("d")
    bld.table("t", [("k", 8, EXACT)], ["a", "d"], scopes={"d": 2})
    bld.action_profile("sel", ["t"], **profile)
    core = P4RuntimeCore(NullDevice(), device_id=1)
    c = Client(core)
    c.arbitrate(1)
    c.set_pipeline(bld.build())
    return c, bld.ids


def ap_member(ids: dict[str, int], mid: int, x: int = 1, act: str = "a") -> pb.Update:
    m = pb.ActionProfileMember(action_profile_id=ids["sel"], member_id=mid)
    m.action.action_id = ids[act]
    if act == "a":
        m.action.params.add(param_id=1, value=bytes([x]))
    return insert(action_profile_member=m)


def ap_group(ids: dict[str, int], gid: int, members: list[tuple[int, int]], max_size: int = 0) -> pb.Update:
    g = pb.ActionProfileGroup(action_profile_id=ids["sel"], group_id=gid, max_size=max_size)
    for mid, w in members:
        g.members.add(member_id=mid, weight=w)
    return insert(action_profile_group=g)


def write_codes(c: Client, *updates: pb.Update) -> list[int]:
    try:
        c.write(*updates)
    except Exception as exc:  # P4RuntimeError
        return error_codes(exc)
    return []


def test_profile_size_limits_members() -> None:
    c, ids = sized(size=2)
    assert write_codes(c, ap_member(ids, 1), ap_member(ids, 2), ap_member(ids, 3)) == \
        [Code.OK, Code.OK, Code.RESOURCE_EXHAUSTED]


def test_defaultonly_actions_cannot_be_members() -> None:
    c, ids = sized(size=4)
    assert write_codes(c, ap_member(ids, 1, act="d")) == [Code.PERMISSION_DENIED]


def test_max_group_size_bounds_max_size_and_the_sum_of_weights() -> None:
    c, ids = sized(size=16, selector=True, max_group_size=4)
    c.write(ap_member(ids, 1), ap_member(ids, 2))
    assert write_codes(c, ap_group(ids, 1, [(1, 1)], max_size=0)) == [Code.INVALID_ARGUMENT]
    assert write_codes(c, ap_group(ids, 1, [(1, 1)], max_size=5)) == [Code.INVALID_ARGUMENT]
    assert write_codes(c, ap_group(ids, 1, [(1, 2), (2, 3)], max_size=4)) == [Code.RESOURCE_EXHAUSTED]
    assert write_codes(c, ap_group(ids, 1, [(1, 1), (2, 3)], max_size=4)) == []


def test_sum_of_members_counts_members_and_bounds_each_weight() -> None:
    c, ids = sized(size=3, selector=True, max_group_size=2, sum_of_members=True, max_member_weight=5)
    c.write(ap_member(ids, 1), ap_member(ids, 2), ap_member(ids, 3))
    assert write_codes(c, ap_group(ids, 1, [(1, 6)], max_size=2)) == [Code.INVALID_ARGUMENT]
    assert write_codes(c, ap_group(ids, 1, [(1, 5), (2, 5)], max_size=2)) == []
    assert write_codes(c, ap_group(ids, 2, [(1, 1), (3, 1)], max_size=2)) == [Code.RESOURCE_EXHAUSTED]  # 4 > size 3
    assert write_codes(c, ap_group(ids, 2, [(3, 1)], max_size=2)) == []


def test_sum_of_weights_bounds_the_groups_together_by_the_profile_size() -> None:
    c, ids = sized(size=4, selector=True)
    c.write(ap_member(ids, 1), ap_member(ids, 2))
    assert write_codes(c, ap_group(ids, 1, [(1, 3)]), ap_group(ids, 2, [(2, 2)])) == [Code.OK, Code.RESOURCE_EXHAUSTED]
    assert write_codes(c, ap_group(ids, 2, [(2, 1)])) == []


@pytest.mark.parametrize("bad", ["unknown table", "table with another implementation"])
def test_inconsistent_p4info_profiles_are_refused(bad: str) -> None:
    bld = P4InfoBuilder()
    bld.action("a")
    bld.table("t", [("k", 8, EXACT)], ["a"])
    bld.table("u", [("k", 8, EXACT)], ["a"])
    bld.action_profile("p", ["t"], size=4)
    info = bld.build()
    if bad == "unknown table":
        info.action_profiles[0].table_ids.append(0x02FFFFFF)
    else:
        info.action_profiles[0].table_ids.append(bld.ids["u"])
    c = Client(P4RuntimeCore(NullDevice(), device_id=1))
    c.arbitrate(1)
    err = raises_code(Code.INVALID_ARGUMENT, c.set_pipeline, info)
    assert "action profile 'p'" in err.message
