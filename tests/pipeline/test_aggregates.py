"""Aggregates and the less common constructs: sub-parsers with out parameters, lookahead of
a header, header stack loops with .next/.last/.lastIndex, run-time stack indices,
pop_front, header unions (setValid invalidates the sibling), struct locals holding
headers, switch on a plain enum, hash algorithms, emit of a whole struct."""

from __future__ import annotations

import pytest

from p4switch.pipeline import algorithms as A

from .helpers import Loaded, ingress, load_source, through

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

header a_t { bit<8> x; bit<8> y; }
header b_t { bit<16> z; }
header_union ab_t { a_t a; b_t b; }
header s_t { bit<8> v; }
struct inner_t { a_t h; bit<8> n; }
struct headers_t { s_t[4] stk; ab_t u; a_t extra; }
struct meta_t {
    bit<8> peek_y; bit<8> depth; bit<8> enum_code; bit<8> local_valid;
    bit<32> h_identity; bit<16> h_xor; bit<16> h_csum; bit<16> h_crc;
}

enum Color { RED, GREEN, BLUE }

parser Sub(packet_in pkt, out ab_t u) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) {
            0xAA: pa;
            default: pb;
        }
    }
    state pa { pkt.extract(u.a); transition accept; }
    state pb { pkt.extract(u.b); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        a_t peeked = pkt.lookahead<a_t>();
        meta.peek_y = peeked.y;
        transition stack;
    }
    state stack {
        pkt.extract(hdr.stk.next);
        transition select(hdr.stk.last.v) {
            0: done;
            default: more;
        }
    }
    state more {
        transition select(hdr.stk.lastIndex) {
            3: done;
            default: stack;
        }
    }
    state done {
        meta.depth = (bit<8>)hdr.stk.lastIndex + 1;
        sub.apply(pkt, hdr.u);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        Color c = Color.GREEN;
        inner_t st;
        meta.local_valid = st.h.isValid() ? 8w1 : 8w0;
        bit<8> i = meta.peek_y & 3;
        hdr.stk[i].v = hdr.stk[i].v + 100;
        if (hdr.u.a.isValid()) {
            hdr.extra = hdr.u.a;
            st.h = hdr.u.a;
            st.n = 5;
            hdr.extra.x = st.h.y + st.n;
            hdr.u.b.setValid();
            hdr.u.b.z = 0x0707;
        }
        if (hdr.stk[0].v == 200) {
            hdr.stk.pop_front(1);
        }
        switch (c) {
            Color.RED: { meta.enum_code = 1; }
            Color.GREEN: { meta.enum_code = 2; }
            default: { meta.enum_code = 3; }
        }
        hash(meta.h_identity, HashAlgorithm.identity, 32w0, { hdr.extra.x, hdr.extra.y }, 64w0x100000000);
        hash(meta.h_xor, HashAlgorithm.xor16, 16w0, { hdr.extra.x, hdr.extra.y, 8w1, 8w2 }, 32w65536);
        hash(meta.h_csum, HashAlgorithm.csum16, 16w0, { hdr.extra.x, hdr.extra.y, 8w1, 8w2 }, 32w65536);
        hash(meta.h_crc, HashAlgorithm.crc16, 16w10, { hdr.extra.x, hdr.extra.y }, 32w5);
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def sw() -> Loaded:
    return load_source(PROGRAM)


def test_stack_loop_union_and_struct_local(sw: Loaded) -> None:
    # stack: 5, 6, 0 (stops at v == 0); then the union member a (0xAA first)
    frame = bytes([5, 6, 0]) + bytes([0xAA, 0x03]) + b"pay"
    pkt, out = through(sw, frame, 0)
    assert pkt.get("meta.peek_y") == 6  # lookahead<a_t> saw bytes 5, 6
    assert pkt.get("meta.depth") == 3
    assert pkt.get("meta.local_valid") == 0  # a local header starts invalid
    # stk[6 & 3 = 2].v += 100; extra = a with x = y + 5; b set valid, a invalidated
    assert out == bytes([5, 6, 100]) + b"\x07\x07" + bytes([0x03 + 5, 0x03]) + b"pay"
    assert not pkt.is_valid("hdr.u.a") and pkt.is_valid("hdr.u.b")
    assert pkt.get("meta.enum_code") == 2


def test_sub_parser_other_member_and_full_stack(sw: Loaded) -> None:
    frame = bytes([1, 2, 3, 4]) + b"\x12\x34" + b"pay"
    pkt, out = through(sw, frame, 0)
    assert pkt.get("meta.depth") == 4  # stopped by lastIndex == 3
    assert pkt.is_valid("hdr.u.b") and pkt.get("hdr.u.b.z") == 0x1234
    assert not pkt.is_valid("hdr.extra")
    assert out == bytes([1, 2, 103, 4]) + b"\x12\x34" + b"pay"  # peek_y = 2: stk[2] += 100


def test_pop_front_shifts_the_stack(sw: Loaded) -> None:
    frame = bytes([100, 0]) + b"\x00\x01" + b"pay"  # stk[0] = 100 -> +100 (index 0) = 200 -> popped
    pkt, out = through(sw, frame, 0)
    assert out == bytes([0]) + b"\x00\x01" + b"pay"
    assert pkt.phv[sw.pipeline.storage_at("hdr.stk").next_slot] == 1


def test_hash_algorithms(sw: Loaded) -> None:
    pkt = ingress(sw, bytes([0]) + bytes([0xAA, 0x10]), 0)
    x, y = 0x10 + 5, 0x10
    assert pkt.get("meta.h_identity") == (x << 8) | y
    assert pkt.get("meta.h_xor") == ((x << 8) | y) ^ 0x0102
    assert pkt.get("meta.h_csum") == A.csum16_bytes(bytes([x, y, 1, 2]))
    assert pkt.get("meta.h_crc") == 10 + A.crc16_bytes(bytes([x, y])) % 5


def test_short_frames_in_a_sub_parser(sw: Loaded) -> None:
    pkt = ingress(sw, bytes([0]) + b"\xaa", 0)
    assert sw.pipeline.error_name(pkt.std("parser_error")) == "PacketTooShort"
    assert not pkt.is_valid("hdr.u.a")
