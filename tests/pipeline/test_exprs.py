"""Expression and statement semantics, checked against plain Python arithmetic.

A small program reads operands from an input header, computes one result per operator
into an output header, and the test compares every result with a reference written
here from the P4_16 rules (wrap-around for bit<w>/int<w>, saturation, shifts, slices,
concatenation, casts, signed comparison, ?:, functions and copy-in/copy-out).
"""

from __future__ import annotations

import random
import struct

import pytest

from .helpers import Loaded, load_source, through

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

header in_t { bit<8> a; bit<8> b; int<8> c; int<8> d; bit<8> sh; }

header out_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> sat_add; bit<8> sat_sub;
    int<8> sadd; int<8> ssub; int<8> smul; int<8> ssat_add; int<8> ssat_sub;
    bit<8> shl; bit<8> shr; int<8> sshr;
    bit<8> neg; bit<8> inv; int<8> sneg; int<8> sinv;
    bit<8> band; bit<8> bor; bit<8> bxor;
    bit<16> cat; bit<4> hi_nibble; bit<4> lo_nibble;
    bit<8> lt; bit<8> slt; bit<8> bigger;
    bit<16> widened; bit<8> divided; bit<8> remainder; bit<8> patched;
    bit<8> fmax; bit<8> sw1; bit<8> sw2; bit<8> same; bit<8> logic; bit<8> dbl;
}

struct headers_t { in_t inp; out_t res; in_t copy; }
struct meta_t { bit<8> unused; }

bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

bit<8> twice(in bit<8> v) {
    bit<8> t = v + v;
    return t;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.inp); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action swap(inout bit<8> x, inout bit<8> y) {
        bit<8> t = x;
        x = y;
        y = t;
    }
    apply {
        bit<8> a = hdr.inp.a;
        bit<8> b = hdr.inp.b;
        int<8> c = hdr.inp.c;
        int<8> d = hdr.inp.d;
        hdr.res.setValid();
        hdr.res.add = a + b;
        hdr.res.sub = a - b;
        hdr.res.mul = a * b;
        hdr.res.sat_add = a |+| b;
        hdr.res.sat_sub = a |-| b;
        hdr.res.sadd = c + d;
        hdr.res.ssub = c - d;
        hdr.res.smul = c * d;
        hdr.res.ssat_add = c |+| d;
        hdr.res.ssat_sub = c |-| d;
        hdr.res.shl = a << hdr.inp.sh;
        hdr.res.shr = a >> hdr.inp.sh;
        hdr.res.sshr = c >> hdr.inp.sh;
        hdr.res.neg = -a;
        hdr.res.inv = ~a;
        hdr.res.sneg = -c;
        hdr.res.sinv = ~c;
        hdr.res.band = a & b;
        hdr.res.bor = a | b;
        hdr.res.bxor = a ^ b;
        hdr.res.cat = a ++ b;
        hdr.res.hi_nibble = a[7:4];
        hdr.res.lo_nibble = b[3:0];
        hdr.res.lt = (a < b) ? 8w1 : 8w0;
        hdr.res.slt = (c < d) ? 8w1 : 8w0;
        hdr.res.bigger = (a > b) ? a : b;
        hdr.res.widened = (bit<16>)(int<16>)c;
        hdr.res.divided = a / 8w16;  // p4c refuses a run-time division by anything else
        hdr.res.remainder = a % 8w16;
        bit<8> x = a;
        x[3:0] = b[7:4];
        hdr.res.patched = x;
        hdr.res.fmax = max8(a, b);
        bit<8> p = a;
        bit<8> q = b;
        swap(p, q);
        hdr.res.sw1 = p;
        hdr.res.sw2 = q;
        hdr.copy = hdr.inp;
        hdr.res.same = (hdr.copy == hdr.inp) ? 8w1 : 8w0;
        hdr.copy.setInvalid();
        bool both = (a != 0 && b != 0) || !(c < 0);
        hdr.res.logic = both ? 8w1 : 8w0;
        hdr.res.dbl = twice(a);
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.inp); pkt.emit(hdr.res); pkt.emit(hdr.copy); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

OUT_FORMAT = "!" + "B" * 5 + "b" * 5 + "BBb" + "BBbb" + "BBB" + "H" + "B" + "B" * 3 + "HBBB" + "B" * 6
OUT_NAMES = ["add", "sub", "mul", "sat_add", "sat_sub", "sadd", "ssub", "smul", "ssat_add", "ssat_sub",
             "shl", "shr", "sshr", "neg", "inv", "sneg", "sinv", "band", "bor", "bxor", "cat", "nibbles",
             "lt", "slt", "bigger", "widened", "divided", "remainder", "patched", "fmax", "sw1", "sw2",
             "same", "logic", "dbl"]


def s8(x: int) -> int:
    return ((x + 128) & 0xFF) - 128


def reference(a: int, b: int, c: int, d: int, sh: int) -> dict[str, int]:
    return {
        "add": (a + b) & 0xFF, "sub": (a - b) & 0xFF, "mul": (a * b) & 0xFF,
        "sat_add": min(a + b, 255), "sat_sub": max(a - b, 0),
        "sadd": s8(c + d), "ssub": s8(c - d), "smul": s8(c * d),
        "ssat_add": max(-128, min(127, c + d)), "ssat_sub": max(-128, min(127, c - d)),
        "shl": (a << sh) & 0xFF if sh < 8 else 0, "shr": a >> sh, "sshr": c >> min(sh, 7),
        "neg": (-a) & 0xFF, "inv": ~a & 0xFF, "sneg": s8(-c), "sinv": s8(~c),
        "band": a & b, "bor": a | b, "bxor": a ^ b,
        "cat": (a << 8) | b, "nibbles": ((a >> 4) << 4) | (b & 0xF),
        "lt": int(a < b), "slt": int(c < d), "bigger": max(a, b),
        "widened": c & 0xFFFF, "divided": a // 16, "remainder": a % 16,
        "patched": (a & 0xF0) | (b >> 4),
        "fmax": max(a, b), "sw1": b, "sw2": a, "same": 1,
        "logic": int((a != 0 and b != 0) or not c < 0), "dbl": (2 * a) & 0xFF,
    }


@pytest.fixture(scope="module")
def sw() -> Loaded:
    return load_source(PROGRAM)


def cases() -> list[tuple[int, int, int, int, int]]:
    rng = random.Random(11)
    edge = [0, 1, 0x7F, 0x80, 0xFF]
    out = [(a, b, s8(c), s8(d), sh) for a in edge for b in edge for c, d in ((0x80, 0xFF), (0x7F, 1))
           for sh in (0, 7, 8, 200)]
    for _ in range(150):
        out.append((rng.randrange(256), rng.randrange(256), rng.randrange(-128, 128), rng.randrange(-128, 128),
                    rng.choice([0, 1, 3, 7, 8, 9, 255])))
    return out


def test_operators_match_the_reference(sw: Loaded) -> None:
    assert struct.calcsize(OUT_FORMAT) == 37 and len(OUT_NAMES) == len(OUT_FORMAT) - 1
    for a, b, c, d, sh in cases():
        frame = struct.pack("!BBbbB", a, b, c, d, sh)
        _, out = through(sw, frame, 0)
        assert out is not None and out[:5] == frame  # the input header, then the results
        got = dict(zip(OUT_NAMES, struct.unpack(OUT_FORMAT, out[5:42])))
        assert len(out) == 42  # the invalidated copy is not emitted
        assert got == reference(a, b, c, d, sh), (a, b, c, d, sh)
