"""Parser value sets over P4Runtime (ValueSetEntry): whole-set MODIFY, codes, reads, and the
parser of profiles.p4 following what was written."""

from __future__ import annotations

import struct

from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4runtime import Code, NullDevice, P4RuntimeCore
from tests.p4runtime.helpers import Client, b, delete, error_codes, insert, modify, raises_code
from tests.p4runtime.indirect import PROFILES, Rig, ipv4_udp, rig
from tests.p4runtime.p4info_builder import EXACT, LPM, OPTIONAL, RANGE, TERNARY, P4InfoBuilder

VS = "MyParser.tunnel_types"


def ethertypes(r: Rig, *values: int) -> pb.ValueSetEntry:
    vse = pb.ValueSetEntry(value_set_id=r.ids[VS])
    for v in values:
        vse.members.add().match.add(field_id=1).exact.value = b(v)
    return vse


def tagged(ethertype: int) -> bytes:
    return ipv4_udp(1, 0x0A000001, 2, 3, ethertype=ethertype, tag=struct.pack("!HH", 77, 0x0800))


def parses_tag(r: Rig, ethertype: int) -> bool:
    pkt = r.run(tagged(ethertype))
    return pkt.is_valid("hdr.tag") and pkt.is_valid("hdr.ipv4")


def codes(r: Rig | Client, *updates: pb.Update) -> list[int]:
    c = r.client if isinstance(r, Rig) else r
    try:
        c.write(*updates)
    except Exception as exc:  # P4RuntimeError
        return error_codes(exc)
    return []


def test_modify_replaces_the_set_the_parser_selects_on() -> None:
    r = rig(PROFILES)
    assert not parses_tag(r, 0x8100)
    r.client.write(modify(value_set_entry=ethertypes(r, 0x8100, 0x88A8)))
    assert parses_tag(r, 0x8100) and parses_tag(r, 0x88A8) and not parses_tag(r, 0x9100)
    assert r.run(tagged(0x8100)).get("hdr.tag.id") == 77
    r.client.write(modify(value_set_entry=ethertypes(r, 0x9100)))
    assert parses_tag(r, 0x9100) and not parses_tag(r, 0x8100)
    r.client.write(modify(value_set_entry=ethertypes(r)))  # empty: back to the initial state
    assert not parses_tag(r, 0x9100)


def test_reads_return_the_members_as_written() -> None:
    r = rig(PROFILES)
    written = ethertypes(r, 0x9100, 0x8100)
    written.members[0].match[0].exact.value = b"\x00\x91\x00"  # padded: accepted, read back canonical
    r.client.write(modify(value_set_entry=written))
    (one,) = r.client.read(pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=r.ids[VS])))
    assert one.value_set_entry == ethertypes(r, 0x9100, 0x8100)
    (every,) = r.client.read(pb.Entity(value_set_entry=pb.ValueSetEntry()))
    assert every == one
    raises_code(Code.UNKNOWN, r.client.read, pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=0x03FFFFFF)))


def test_value_set_writes_follow_the_specification() -> None:
    r = rig(PROFILES)
    r.client.write(modify(value_set_entry=ethertypes(r, 0x8100)))
    assert codes(r, insert(value_set_entry=ethertypes(r, 0x9100))) == [Code.INVALID_ARGUMENT]
    assert codes(r, delete(value_set_entry=ethertypes(r))) == [Code.INVALID_ARGUMENT]
    too_many = ethertypes(r, 1, 2, 3, 4, 5)  # size 4
    assert codes(r, modify(value_set_entry=too_many)) == [Code.RESOURCE_EXHAUSTED]
    assert codes(r, modify(value_set_entry=ethertypes(r, 1, 1))) == [Code.ALREADY_EXISTS]
    assert codes(r, modify(value_set_entry=ethertypes(r, 0x10000))) == [Code.INVALID_ARGUMENT]  # bit<16>
    no_field = pb.ValueSetEntry(value_set_id=r.ids[VS])
    no_field.members.add()
    assert codes(r, modify(value_set_entry=no_field)) == [Code.INVALID_ARGUMENT]  # exact field missing
    wrong_kind = pb.ValueSetEntry(value_set_id=r.ids[VS])
    wrong_kind.members.add().match.add(field_id=1).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(1), mask=b(1)))
    assert codes(r, modify(value_set_entry=wrong_kind)) == [Code.INVALID_ARGUMENT]
    assert codes(r, modify(value_set_entry=pb.ValueSetEntry(value_set_id=0x03FFFFFF))) == [Code.NOT_FOUND]
    assert codes(r, modify(value_set_entry=pb.ValueSetEntry())) == [Code.INVALID_ARGUMENT]
    assert parses_tag(r, 0x8100), "refused writes leave the set as it was"


def test_a_rolled_back_batch_restores_the_set() -> None:
    r = rig(PROFILES)
    r.client.write(modify(value_set_entry=ethertypes(r, 0x8100)))
    raises_code(Code.UNKNOWN, r.client.write, modify(value_set_entry=ethertypes(r, 0x9100)),
                insert(value_set_entry=ethertypes(r)), atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert parses_tag(r, 0x8100) and not parses_tag(r, 0x9100)


def test_the_pipeline_api_and_p4runtime_share_one_set() -> None:
    r = rig(PROFILES)
    r.holder.pipeline.value_sets[VS].add(0x8100)
    (got,) = r.client.read(pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=r.ids[VS])))
    assert got.value_set_entry == ethertypes(r, 0x8100)
    r.client.write(modify(value_set_entry=ethertypes(r, 0x9100)))
    assert [m[0].value for m in r.holder.pipeline.value_sets[VS].members] == [0x9100]


def test_members_of_every_match_kind_match_as_table_entries_do() -> None:
    bld = P4InfoBuilder()
    bld.value_set("vs", [("t", 8, TERNARY), ("r", 8, RANGE), ("l", 8, LPM), ("o", 8, OPTIONAL), ("e", 8, EXACT)],
                  size=2)
    device = NullDevice()
    c = Client(P4RuntimeCore(device, device_id=1))
    c.arbitrate(1)
    c.set_pipeline(bld.build())
    vse = pb.ValueSetEntry(value_set_id=bld.ids["vs"])
    m = vse.members.add()
    m.match.add(field_id=1).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(0x10), mask=b(0xF0)))
    m.match.add(field_id=2).range.CopyFrom(pb.FieldMatch.Range(low=b(5), high=b(9)))
    m.match.add(field_id=3).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(0x80), prefix_len=1))
    m.match.add(field_id=5).exact.value = b(7)  # optional field 4 left out: don't care
    any_but_e = vse.members.add()
    any_but_e.match.add(field_id=5).exact.value = b(8)
    c.write(modify(value_set_entry=vse))
    vs = device.state.value_sets[bld.ids["vs"]]
    assert vs.matches((0x1F, 5, 0xFF, 123, 7)) and vs.matches((0x10, 9, 0x80, 0, 7))
    assert not vs.matches((0x20, 5, 0xFF, 0, 7))  # ternary
    assert not vs.matches((0x10, 10, 0xFF, 0, 7))  # range
    assert not vs.matches((0x10, 5, 0x7F, 0, 7))  # lpm
    assert not vs.matches((0x10, 5, 0x80, 0, 6))  # exact
    assert vs.matches((0, 0, 0, 0, 8))  # the second member: everything but e is don't care
    (back,) = c.read(pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=bld.ids["vs"])))
    assert back.value_set_entry == vse
    zero_mask = pb.ValueSetEntry(value_set_id=bld.ids["vs"])
    zm = zero_mask.members.add()
    zm.match.add(field_id=1).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b(0), mask=b(0)))
    zm.match.add(field_id=5).exact.value = b(1)
    assert codes(c, modify(value_set_entry=zero_mask)) == [Code.INVALID_ARGUMENT]
