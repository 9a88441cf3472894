"""P4Runtime binary strings <-> Python ints (P4Runtime spec, "Bytestrings").

The server must accept any big-endian string whose value fits the P4Info
bitwidth (leading zero bytes included, for program upgrades), must reject an
empty string, and must answer with the shortest string (read-write symmetry).
"""

from __future__ import annotations

from .errors import Code, StateError


def decode_unsigned(data: bytes, bitwidth: int, what: str, code: Code = Code.INVALID_ARGUMENT) -> int:
    """Value of a ``bit<W>`` bytestring; ``bitwidth`` 0 means "no width known"."""
    if not data:
        raise StateError(code, f"{what}: empty bytestring (a value needs at least one byte)")
    value = int.from_bytes(data, "big")
    if bitwidth > 0 and value >> bitwidth:
        raise StateError(code, f"{what}: value 0x{value:x} does not fit in {bitwidth} bits")
    return value


def encode_unsigned(value: int) -> bytes:
    """Shortest big-endian string for a non-negative value (0 is one byte)."""
    if value < 0:
        raise ValueError(f"negative value {value} for an unsigned bytestring")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode_signed(data: bytes, bitwidth: int, what: str, code: Code = Code.INVALID_ARGUMENT) -> int:
    """Value of an ``int<W>`` bytestring (two's complement, sign-extended)."""
    if not data:
        raise StateError(code, f"{what}: empty bytestring (a value needs at least one byte)")
    value = int.from_bytes(data, "big", signed=True)
    if bitwidth > 0 and not -(1 << (bitwidth - 1)) <= value < (1 << (bitwidth - 1)):
        raise StateError(code, f"{what}: value {value} does not fit in int<{bitwidth}>")
    return value


def encode_signed(value: int) -> bytes:
    """Shortest two's complement string for a signed value."""
    nbits = value.bit_length() + 1  # one sign bit
    return value.to_bytes(max(1, (nbits + 7) // 8), "big", signed=True)


def fits_unsigned(value: int, bitwidth: int) -> bool:
    return value >= 0 and (bitwidth <= 0 or not value >> bitwidth)
