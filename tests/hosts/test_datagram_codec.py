"""The datagram codec in the engine against the header as hosts/datagram.py specifies it.

``hosts.datagram.parse`` and ``FrameTemplate.frame`` are the engine's codec; the reference here is
the module's documented layout read with ``struct`` (magic, version, kind, flow, rtt, seq, ts_ns at
the UDP payload's start, network byte order): every field must agree, and every frame that is not
one of ours must be refused with the same error.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.datagram import (
    HEADER_BYTES,
    MAGIC,
    MIN_FRAME_BYTES,
    OFFSET,
    VERSION,
    DatagramError,
    FrameTemplate,
    parse,
)

HDR = struct.Struct("!HBBHHIQ")


def reference(frame: bytes) -> tuple[Any, ...] | str:
    """The documented layout, or the error's message."""
    if len(frame) < OFFSET + HDR.size or frame[12:14] != b"\x08\x00" or frame[14 + 9] != 17:
        return "not an IPv4/UDP frame"
    magic, version, kind, flow, rtt, seq, ts = HDR.unpack_from(frame, OFFSET)
    if magic != MAGIC or version != VERSION:
        return "no hbh datagram header"
    src_ip, dst_ip = struct.unpack_from("!II", frame, 14 + 12)
    return (flow, seq, ts, rtt, len(frame), src_ip, dst_ip, kind, frame)


def decoded(frame: Any) -> tuple[Any, ...] | str:
    try:
        d = parse(frame)
    except DatagramError as exc:
        return str(exc)
    return (d.flow, d.seq, d.ts_ns, d.rtt_100us, d.size, d.src_ip, d.dst_ip, d.kind, bytes(d.frame))


def test_constants_are_the_documented_layout() -> None:
    assert (0x4842, 1, 42, HDR.size, 42 + HDR.size) == (MAGIC, VERSION, OFFSET, HEADER_BYTES, MIN_FRAME_BYTES)
    assert issubclass(DatagramError, ValueError)


template = st.builds(
    lambda flow, size, kind, ip: FrameTemplate(src_mac=1, dst_mac=2, src_ip=ip, dst_ip=ip ^ 0xFF, flow=flow,
                                               size=size, kind=kind),
    st.integers(0, 0xFFFF), st.integers(MIN_FRAME_BYTES, 1500), st.integers(0, 255), st.integers(0, 2**32 - 1))


@settings(max_examples=200, deadline=None)
@given(template, st.integers(-(2**40), 2**40), st.integers(-(2**70), 2**70), st.integers(0, 2**20))
def test_a_template_frame_decodes_to_what_was_written(t: FrameTemplate, seq: int, ts: int, rtt: int) -> None:
    frame = t.frame(seq, ts, rtt)
    got = reference(frame)
    assert decoded(frame) == got
    assert not isinstance(got, str)
    assert got[:4] == (t.flow, seq & 0xFFFF_FFFF, ts & (2**64 - 1), min(rtt, 0xFFFF)) and got[4] == t.size
    assert got[7] == t.kind


def _mutated(frame: bytes, cuts: int, flips: list[tuple[int, int]]) -> bytes:
    b = bytearray(frame[: max(0, len(frame) - cuts)])
    for at, value in flips:
        if b:
            b[at % len(b)] = value
    return bytes(b)


@settings(max_examples=400, deadline=None)
@given(template, st.integers(0, 2**32 - 1), st.integers(0, 2**63), st.integers(0, 80),
       st.lists(st.tuples(st.sampled_from([12, 13, 23, 42, 43, 44, 45, 46]) | st.integers(0, 100),
                          st.integers(0, 255)), max_size=3))
def test_malformed_frames_fail_alike(t: FrameTemplate, seq: int, ts: int, cuts: int,
                                     flips: list[tuple[int, int]]) -> None:
    frame = _mutated(t.frame(seq, ts), cuts, flips)
    assert decoded(frame) == reference(frame)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=120))
def test_any_bytes_decode_alike(frame: bytes) -> None:
    assert decoded(frame) == reference(frame)


def test_buffers_decode_as_bytes_and_a_payload_is_the_bytes_after_the_header() -> None:
    t = FrameTemplate(src_mac=1, dst_mac=2, src_ip=3, dst_ip=4, flow=9, size=200)
    frame = t.frame(5, 6, 7, payload=b"abc")
    assert decoded(bytearray(frame)) == decoded(memoryview(frame)) == decoded(frame)
    d = parse(frame)
    assert d.payload(3) == b"abc" and d.payload(500) == frame[MIN_FRAME_BYTES:]
    with pytest.raises(ValueError, match="rtt -1"):
        t.frame(1, 1, -1)
    with pytest.raises(TypeError):
        parse("not bytes")
