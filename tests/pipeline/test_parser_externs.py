"""Parser operations and externs features.p4 does not reach: varbit extract, advance,
select without a match, sub-controls (copy-in/copy-out), switch on values with
fall-through, exit inside an action, return in a control, checksums over the payload,
egress-to-egress clones with a field list, truncate."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4switch.pipeline import PreserveRequest

from .helpers import Loaded, ingress, load_source, through

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header opt_t { bit<8> len; varbit<64> data; }
header tag_t { bit<8> kind; bit<8> val; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header udp_t { bit<16> srcPort; bit<16> dstPort; bit<16> len; bit<16> checksum; }

struct headers_t { eth_t eth; opt_t opt; tag_t tag; ipv4_t ipv4; udp_t udp; }
struct meta_t {
    bit<8> peek;
    bit<8> sel;
    @field_list(1)
    bit<8> keep;
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x1111: parse_opt;
            0x2222: skip;
            0x3333: strict;
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_opt {
        meta.peek = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.opt, ((bit<32>)meta.peek) * 8);
        transition parse_tag;
    }
    state skip {
        pkt.advance(16);
        transition parse_tag;
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition accept;
    }
    state strict {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.kind) {
            1: accept;
            2 .. 4: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Bump(inout tag_t t, in bit<8> amount) {
    apply { t.val = t.val + amount; }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Bump() bump;
    action finish() { sm.egress_spec = 2; exit; }
    action never() { sm.egress_spec = 9; }
    apply {
        sm.egress_spec = 1;
        if (hdr.tag.isValid()) {
            bump.apply(hdr.tag, 3);
            switch (hdr.tag.kind) {
                1:
                2: { meta.sel = 12; }
                5: { finish(); never(); }
                default: { meta.sel = 99; }
            }
            hdr.tag.kind = meta.sel;
            if (hdr.tag.val == 0xFF) {
                return;
            }
            hdr.tag.val = hdr.tag.val + 1;
        }
        if (hdr.udp.isValid()) {
            truncate(60);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.udp.isValid() && sm.instance_type == 0) {
            meta.keep = 42;
            meta.lost = 7;
            clone_preserving_field_list(CloneType.E2E, 5, 1);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, hdr.udp.len,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.len },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

ETH = bytes.fromhex("020000000001" "020000000002")


@pytest.fixture(scope="module")
def sw() -> Loaded:
    return load_source(PROGRAM)


def test_varbit_extract_and_emit_round_trip(sw: Loaded) -> None:
    frame = ETH + b"\x11\x11" + bytes([3, 0xA, 0xB, 0xC]) + bytes([1, 0x10]) + b"rest"
    pkt, out = through(sw, frame, 0)
    assert pkt.get("hdr.opt.data") == 0x0A0B0C and pkt.get("meta.peek") == 3
    # tag: kind 1 falls through to the "2" case (12); val + 3 (sub-control) + 1
    assert out == ETH + b"\x11\x11" + bytes([3, 0xA, 0xB, 0xC]) + bytes([12, 0x14]) + b"rest"


def test_varbit_longer_than_its_maximum_is_header_too_short(sw: Loaded) -> None:
    frame = ETH + b"\x11\x11" + bytes([9]) + bytes(20)
    pkt = ingress(sw, frame, 0)
    assert sw.pipeline.error_name(pkt.std("parser_error")) == "HeaderTooShort"
    assert not pkt.is_valid("hdr.opt")


def test_advance_skips_bytes_that_are_not_emitted(sw: Loaded) -> None:
    frame = ETH + b"\x22\x22" + b"zz" + bytes([7, 1]) + b"rest"
    pkt, out = through(sw, frame, 0)
    assert out == ETH + b"\x22\x22" + bytes([99, 5]) + b"rest"


@pytest.mark.parametrize("kind, error", [(1, "NoError"), (3, "NoError"), (4, "NoError"), (5, "NoMatch"),
                                         (0, "NoMatch")])
def test_select_without_a_match_is_no_match(sw: Loaded, kind: int, error: str) -> None:
    pkt = ingress(sw, ETH + b"\x33\x33" + bytes([kind, 0]), 0)
    assert sw.pipeline.error_name(pkt.std("parser_error")) == error


def test_exit_in_an_action_ends_ingress(sw: Loaded) -> None:
    pkt = ingress(sw, ETH + b"\x22\x22" + b"zz" + bytes([5, 1]), 0)
    assert pkt.std("egress_spec") == 2  # never() did not run
    assert pkt.get("hdr.tag.val") == 4  # the sub-control ran before


def test_return_ends_the_control(sw: Loaded) -> None:
    pkt = ingress(sw, ETH + b"\x22\x22" + b"zz" + bytes([1, 0xFC]), 0)
    assert pkt.get("hdr.tag.val") == 0xFF and pkt.get("hdr.tag.kind") == 12


def udp_frame() -> Ether:
    return Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2") / \
        UDP(sport=1111, dport=2222) / Raw(b"payload bytes!" * 3)


def test_update_checksum_with_payload_is_the_udp_checksum(sw: Loaded) -> None:
    frame = udp_frame()
    data = bytearray(bytes(frame))
    data[40:42] = b"\x00\x00"  # zero the UDP checksum: the pipeline must fill it in
    pkt, out = through(sw, bytes(data), 0)
    assert out is not None
    assert Ether(out)[UDP].chksum == Ether(bytes(frame))[UDP].chksum
    assert pkt.truncate_len == 60


def test_egress_to_egress_clone_keeps_only_the_field_list(sw: Loaded) -> None:
    pl = sw.pipeline
    pkt, out = through(sw, bytes(udp_frame()), 0)
    req = pkt.clone_request
    assert req is not None and (req.kind, req.session, req.field_list) == ("E2E", 5, 1)
    clone = pl.copy_for_request(pkt, req)
    assert clone.data == out  # the packet as deparsed at the end of egress
    assert clone.std("instance_type") == 2 and clone.std("packet_length") == len(out)
    assert clone.get("meta.keep") == 42 and clone.get("meta.lost") == 0
    assert clone.is_valid("hdr.udp")
    pl.run_egress(clone, 5, 3000)
    assert clone.clone_request is None  # instance_type 2: no new clone


def test_a_field_list_no_field_names_is_empty(sw: Loaded) -> None:
    """BMv2 (v1model-special-ops): clone/resubmit with a list no field is annotated with
    preserve nothing; the copy is still made (it used to be an error: the packet was lost)."""
    pkt, _ = through(sw, bytes(udp_frame()), 0)
    assert pkt.get("meta.keep") != 0
    clone = sw.pipeline.copy_for_clone(pkt, "I2E", 77)
    assert clone.get("meta.keep") == 0 and clone.get("meta.lost") == 0
    pkt.resubmit = PreserveRequest(77)
    again = sw.pipeline.copy_for_resubmit(pkt)
    assert again.std("instance_type") == 6 and again.get("meta.keep") == 0


def test_packet_paths(sw: Loaded) -> None:
    pkt = ingress(sw, ETH + b"\x22\x22" + b"zz" + bytes([1, 2]), 0)
    assert pkt.get("hdr.tag") == {"kind": 12, "val": 6}
    assert pkt.get("hdr.udp") is None
    with pytest.raises(KeyError):
        pkt.get("hdr.nothing")
    assert pkt.std("egress_spec") == 1
    pkt.set_std("egress_spec", 0x3FF)  # wrapped to 9 bits
    assert pkt.std("egress_spec") == 0x1FF and pkt.marked_to_drop
