"""P4Info building blocks: the id hash, id assignment, aliases, field ids, the writer."""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.frontend import ast
from p4switch.frontend.errors import UNKNOWN_LOC, P4Error
from p4switch.frontend.p4info import (
    PREFIX_ACTION,
    PREFIX_CONTROLLER_HEADER,
    PREFIX_DIGEST,
    PREFIX_TABLE,
    Symbol,
    aliases,
    assign_ids,
    canonical_bytes,
    explicit_id,
    field_ids,
    hashed_id,
    jenkins_one_at_a_time,
    read_p4info,
    serialize_p4info,
    write_p4info,
)


def test_one_at_a_time_matches_published_vectors():
    # Sample values published with the algorithm's description.
    assert jenkins_one_at_a_time(b"a") == 0xCA2E9442
    assert jenkins_one_at_a_time(b"The quick brown fox jumps over the lazy dog") == 0x519E91F5
    assert jenkins_one_at_a_time(b"") == 0


def test_hashed_ids_match_ids_p4c_gave_public_programs():
    # Ids in P4Info files p4c wrote for p4lang/tutorials basic.p4 and the ONF UPF program.
    assert hashed_id(PREFIX_TABLE, "MyIngress.ipv4_lpm") == 37375156
    assert hashed_id(PREFIX_ACTION, "MyIngress.ipv4_forward") == 28792405
    assert hashed_id(PREFIX_ACTION, "NoAction") == 21257015
    assert hashed_id(PREFIX_DIGEST, "ddn_digest_t") == 396224266
    # a controller header's id hashes its header type name (packet_in_t), not "packet_in"
    assert hashed_id(PREFIX_CONTROLLER_HEADER, "packet_in_t") == 80671331


def test_ids_carry_the_resource_prefix_in_the_top_byte():
    for prefix in (PREFIX_ACTION, PREFIX_TABLE, PREFIX_DIGEST):
        assert hashed_id(prefix, "x.y") >> 24 == prefix


def test_collisions_probe_to_the_next_free_id():
    a = Symbol(PREFIX_TABLE, "one", UNKNOWN_LOC, hash_name="same")
    b = Symbol(PREFIX_TABLE, "two", UNKNOWN_LOC, hash_name="same")
    assign_ids([b, a])
    assert {a.id, b.id} == {hashed_id(PREFIX_TABLE, "same"), hashed_id(PREFIX_TABLE, "same") + 1}
    assert a.id >> 24 == b.id >> 24 == PREFIX_TABLE


def test_explicit_ids_win_and_hashed_ones_step_around_them():
    taken = hashed_id(PREFIX_ACTION, "b")
    a = Symbol(PREFIX_ACTION, "a", UNKNOWN_LOC, explicit_id=taken)
    b = Symbol(PREFIX_ACTION, "b", UNKNOWN_LOC)
    assign_ids([b, a])
    assert a.id == taken
    assert b.id == taken + 1


def test_duplicate_explicit_ids_are_an_error_naming_both():
    a = Symbol(PREFIX_ACTION, "a", UNKNOWN_LOC, explicit_id=0x01000005)
    b = Symbol(PREFIX_ACTION, "b", UNKNOWN_LOC, explicit_id=0x01000005)
    with pytest.raises(P4Error, match="'b'.*'a'"):
        assign_ids([a, b])


def test_assignment_is_deterministic_whatever_the_input_order():
    names = [f"C.t{i}" for i in range(50)]
    first = [Symbol(PREFIX_TABLE, n, UNKNOWN_LOC) for n in names]
    second = [Symbol(PREFIX_TABLE, n, UNKNOWN_LOC) for n in reversed(names)]
    assign_ids(first)
    assign_ids(second)
    assert {s.name: s.id for s in first} == {s.name: s.id for s in second}
    assert len({s.id for s in first}) == len(names)


def _id_annotation(text: str) -> ast.Annotation:
    return ast.Annotation(loc=UNKNOWN_LOC, name="id", tokens=[text])


def test_explicit_id_adds_the_prefix_when_missing():
    assert explicit_id([_id_annotation("0x42")], PREFIX_TABLE, "t") == 0x02000042
    assert explicit_id([_id_annotation("0x02000042")], PREFIX_TABLE, "t") == 0x02000042
    assert explicit_id([_id_annotation("7")], None, "field") == 7
    assert explicit_id([], PREFIX_TABLE, "t") is None


def test_explicit_id_with_another_resource_prefix_is_an_error():
    with pytest.raises(P4Error, match="0x01.*0x02"):
        explicit_id([_id_annotation("0x01000042")], PREFIX_TABLE, "table 't'")
    with pytest.raises(P4Error, match="positive 32-bit"):
        explicit_id([_id_annotation("zero")], PREFIX_TABLE, "table 't'")


def test_aliases_are_shortest_unique_suffixes():
    got = aliases(["MyIngress.drop", "MyEgress.drop", "MyIngress.ipv4_lpm", "a.b", "x.a.b", "NoAction"])
    assert got == {
        "MyIngress.drop": "MyIngress.drop",
        "MyEgress.drop": "MyEgress.drop",
        "MyIngress.ipv4_lpm": "ipv4_lpm",
        "a.b": "a.b",
        "x.a.b": "x.a.b",
        "NoAction": "NoAction",
    }


def test_aliases_of_a_repeated_name_are_computed_once():
    # a table and its inline direct counter share a name; it stays short
    assert aliases(["C.t", "C.t", "D.u"]) == {"C.t": "t", "D.u": "u"}


def test_field_ids_keep_explicit_ones_and_fill_from_one():
    assert field_ids([None, None, None], "k", [UNKNOWN_LOC] * 3) == [1, 2, 3]
    assert field_ids([None, 1, None], "k", [UNKNOWN_LOC] * 3) == [2, 1, 3]
    assert field_ids([5, None], "k", [UNKNOWN_LOC] * 2) == [5, 1]
    with pytest.raises(P4Error, match="twice"):
        field_ids([2, 2], "key of t", [UNKNOWN_LOC] * 2)


def test_canonical_bytes_are_minimal_big_endian():
    assert canonical_bytes(0, 9) == b"\x00"
    assert canonical_bytes(255, 9) == b"\xff"
    assert canonical_bytes(256, 9) == b"\x01\x00"
    assert canonical_bytes(-1, 8) == b"\xff"
    assert canonical_bytes(0x0A000001, 32) == b"\x0a\x00\x00\x01"


def _sample() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    t = info.tables.add()
    t.preamble.id = hashed_id(PREFIX_TABLE, "C.t")
    t.preamble.name = "C.t"
    mf = t.match_fields.add()
    mf.id, mf.name, mf.bitwidth, mf.match_type = 1, "hdr.x", 9, p4info_pb2.MatchField.EXACT
    return info


@pytest.mark.parametrize("fmt,suffix", [("text", ".txt"), ("binary", ".bin"), ("json", ".json")])
def test_written_files_read_back_equal(tmp_path, fmt, suffix):
    path = tmp_path / f"p4info{suffix}"
    write_p4info(_sample(), path, fmt)
    assert read_p4info(path) == _sample()
    assert read_p4info(path, fmt) == _sample()


def test_text_format_is_protobuf_text():
    text = serialize_p4info(_sample(), "text").decode()
    assert 'name: "C.t"' in text and "match_type: EXACT" in text


def test_unknown_format_and_bad_files_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown P4Info format 'yaml'"):
        write_p4info(_sample(), tmp_path / "x", "yaml")
    bad = tmp_path / "bad.txt"
    bad.write_text("tables { nonsense: 1 }")
    with pytest.raises(ValueError, match="bad.txt: not a text P4Info"):
        read_p4info(bad)
