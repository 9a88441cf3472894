"""Hash and checksum algorithms of v1model's ``HashAlgorithm``, over bit strings.

v1model feeds these algorithms the *concatenation of the bits* of a list of fields,
most significant bit first (``{a, b}`` with a ``bit<4>`` and a ``bit<12>`` is one 16-bit
word). Every function here takes that concatenation as ``(value, nbits)`` and returns
an int; how the result is cut to the output's width is the caller's business.

* ``csum16``: RFC 1071 Internet checksum -- the ones' complement of the ones' complement
  sum of 16-bit words, the data padded with zero bits to a multiple of 16;
* ``crc16``: CRC-16/ARC (poly 0x8005, reflected, init 0, no final xor), as BMv2's crc16;
* ``crc32``: CRC-32/IEEE 802.3 (zlib's); ``*_custom`` use the same default polynomials;
* ``xor16``: XOR of the 16-bit words (zero padded);
* ``identity``: the data itself;
* ``random``: a random number (the data is ignored).

CRCs work on bytes: the data is zero padded at the end to a whole number of bytes.
"""

from __future__ import annotations

import random as _random
import sys
import zlib
from array import array
from collections.abc import Callable

from runtime.crc import reflected_crc_table

_LITTLE = sys.byteorder == "little"


def to_bytes(value: int, nbits: int, pad_to: int = 8) -> bytes:
    """The bit string as bytes, zero padded at the end to a multiple of ``pad_to`` bits."""
    pad = (-nbits) % pad_to
    return (value << pad).to_bytes((nbits + pad) // 8, "big")


def ones_sum16(data: bytes) -> int:
    """Ones' complement sum of the big-endian 16-bit words of ``data`` (even length)."""
    if not data:
        return 0
    words = array("H", data)
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    if _LITTLE:  # the ones' complement sum is byte-order independent up to a final swap
        s = ((s & 0xFF) << 8) | (s >> 8)
    return s


def csum16_bytes(data: bytes) -> int:
    """Internet checksum of ``data`` (odd lengths padded with a zero byte)."""
    if len(data) & 1:
        data = data + b"\x00"
    return ~ones_sum16(data) & 0xFFFF


def csum16(value: int, nbits: int) -> int:
    return csum16_bytes(to_bytes(value, nbits, 16))


_CRC16_TABLE = reflected_crc_table(0xA001)


def crc16_bytes(data: bytes, crc: int = 0) -> int:
    t = _CRC16_TABLE
    for b in data:
        crc = (crc >> 8) ^ t[(crc ^ b) & 0xFF]
    return crc


def crc16(value: int, nbits: int) -> int:
    return crc16_bytes(to_bytes(value, nbits))


def crc32(value: int, nbits: int) -> int:
    return zlib.crc32(to_bytes(value, nbits))


def xor16(value: int, nbits: int) -> int:
    pad = (-nbits) % 16
    v = value << pad
    out = 0
    while v:
        out ^= v & 0xFFFF
        v >>= 16
    return out


def identity(value: int, nbits: int) -> int:
    return value


class RandomAlgo:
    """``HashAlgorithm.random``: a draw from the pipeline's seeded generator."""

    def __init__(self, rng: _random.Random) -> None:
        self.rng = rng

    def __call__(self, value: int, nbits: int) -> int:
        return self.rng.getrandbits(32)


# natural output width of each algorithm (the hash is cut to the result's width anyway)
WIDTHS = {"csum16": 16, "crc16": 16, "crc16_custom": 16, "crc32": 32, "crc32_custom": 32,
          "xor16": 16, "identity": 0, "random": 32}


def algorithm(name: str, rng: _random.Random) -> Callable[[int, int], int]:
    """The function for ``HashAlgorithm.<name>``; KeyError when unknown."""
    table: dict[str, Callable[[int, int], int]] = {
        "csum16": csum16, "crc16": crc16, "crc16_custom": crc16, "crc32": crc32,
        "crc32_custom": crc32, "xor16": xor16, "identity": identity,
    }
    if name == "random":
        return RandomAlgo(rng)
    return table[name]
