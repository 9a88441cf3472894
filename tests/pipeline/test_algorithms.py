"""Hash/checksum algorithms over bit strings (v1model HashAlgorithm)."""

from __future__ import annotations

import random
import zlib

from scapy.layers.inet import IP
from scapy.utils import checksum as scapy_checksum

from p4switch.pipeline import algorithms as A


def test_csum16_matches_the_ipv4_header_checksum() -> None:
    header = IP(src="10.1.2.3", dst="192.168.7.9", ttl=17, id=4242, proto=17)
    raw = bytes(IP(bytes(header)))
    stored = int.from_bytes(raw[10:12], "big")
    without = raw[:10] + raw[12:20]
    assert A.csum16(int.from_bytes(without, "big"), 8 * len(without)) == stored


def test_csum16_of_odd_lengths_and_bit_fields_pads_with_zeros() -> None:
    rng = random.Random(5)
    for n in range(1, 40):
        data = bytes(rng.getrandbits(8) for _ in range(n))
        assert A.csum16_bytes(data) == scapy_checksum(data)
    # {bit<4> 0xA, bit<12> 0xBCD} is the one word 0xABCD
    assert A.csum16((0xA << 12) | 0xBCD, 16) == ~0xABCD & 0xFFFF
    # 12 bits 0xABC are padded to the word 0xABC0
    assert A.csum16(0xABC, 12) == ~0xABC0 & 0xFFFF


def test_crc16_is_crc16_arc() -> None:
    assert A.crc16(int.from_bytes(b"123456789", "big"), 72) == 0xBB3D  # the catalogue check value


def test_crc32_is_zlib_crc32() -> None:
    data = b"The quick brown fox"
    assert A.crc32(int.from_bytes(data, "big"), 8 * len(data)) == zlib.crc32(data)
    # not a whole number of bytes: zero padded at the end
    assert A.crc32(0x5, 3) == zlib.crc32(bytes([0xA0]))


def test_xor16_and_identity() -> None:
    assert A.xor16(0x1234_5678_9ABC, 48) == 0x1234 ^ 0x5678 ^ 0x9ABC
    assert A.xor16(0xFF, 8) == 0xFF00
    assert A.identity(0xDEADBEEF, 32) == 0xDEADBEEF


def test_random_uses_the_given_generator() -> None:
    a = A.algorithm("random", random.Random(1))
    b = A.algorithm("random", random.Random(1))
    assert [a(0, 8) for _ in range(5)] == [b(0, 8) for _ in range(5)]
