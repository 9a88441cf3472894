"""Value sets of structs: one value set matched against a whole tuple of selectors, and a
struct element with ``@match`` kinds against one selector (P4_16 spec, parser value sets)."""

from __future__ import annotations

import struct

import pytest

from p4switch.frontend.check import CheckErrors, check_program
from p4switch.frontend.p4info import build_p4info
from p4switch.frontend.parser import parse_file

from .helpers import load_source

SOURCE = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> a; bit<8> b; }
struct pair_t { bit<16> type; bit<8> a; }
struct masked_t { @match(ternary) bit<16> type; }
struct headers_t { eth_t eth; tag_t tag; }
struct meta_t { bit<8> hit; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<pair_t>(4) pairs;
    value_set<masked_t>(4) types;
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.tag);
        transition select(hdr.eth.type, hdr.tag.a) {
            pairs: by_pair;
            default: single;
        }
    }
    state by_pair { meta.hit = 1; transition accept; }
    state single {
        transition select(hdr.eth.type) {
            types: by_mask;
            default: accept;
        }
    }
    state by_mask { meta.hit = 2; transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.tag.b = meta.hit; sm.egress_spec = 2; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def frame(ethertype: int, a: int) -> bytes:
    return struct.pack("!6s6sHBB", b"\x02" * 6, b"\x04" * 6, ethertype, a, 0) + bytes(40)


def verdict(sw, ethertype: int, a: int) -> int:
    pkt = sw.pipeline.new_packet(frame(ethertype, a), 1, 1000)
    sw.pipeline.run_ingress(pkt)
    return pkt.get("hdr.tag.b")


def test_struct_value_sets_match_a_tuple_and_a_masked_selector() -> None:
    sw = load_source(SOURCE)
    pairs, types = sw.pipeline.value_sets["P.pairs"], sw.pipeline.value_sets["P.types"]
    assert verdict(sw, 0x1234, 7) == 0
    pairs.add(0x1234, 7)
    types.add((0x8800, 0xFF00))
    assert verdict(sw, 0x1234, 7) == 1  # both selectors match one member
    assert verdict(sw, 0x1234, 8) == 0  # one selector alone does not
    assert verdict(sw, 0x88AB, 9) == 2  # the ternary member of the single-selector set


def test_p4info_describes_struct_value_sets_with_their_match_kinds(tmp_path) -> None:
    src = tmp_path / "vs.p4"
    src.write_text(SOURCE)
    info = build_p4info(check_program(parse_file(src)))
    by_name = {v.preamble.name: v for v in info.value_sets}
    assert [(m.name, m.bitwidth) for m in by_name["P.pairs"].match] == [("type", 16), ("a", 8)]
    (masked,) = by_name["P.types"].match
    assert (masked.name, masked.bitwidth, masked.match_type) == ("type", 16, masked.TERNARY)


def test_a_value_set_whose_struct_does_not_fit_the_selectors_is_an_error(tmp_path) -> None:
    src = tmp_path / "bad.p4"
    src.write_text(SOURCE.replace("struct pair_t { bit<16> type; bit<8> a; }",
                                  "struct pair_t { bit<16> type; bit<16> a; }"))
    with pytest.raises(CheckErrors) as err:
        check_program(parse_file(src))
    assert "value set 'pairs' holds pair_t" in str(err.value.errors[0].message)
