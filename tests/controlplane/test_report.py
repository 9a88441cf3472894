"""The report codec against the documented wire format (docs/reference/wire-format.md is the oracle)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane import dataplane_config as dp
from controlplane.report import FRAME_BYTES, Report, ReportError, decode, encode

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "wire-format.md"


def documented_example() -> bytes:
    """The hex dump of the example report frame in the wire-format document."""
    text = DOC.read_text()
    block = text[text.index("### Example"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    data = b""
    for line in block.strip().splitlines():
        data += bytes.fromhex(" ".join(line.split()[1:]))
    return data


def test_documented_example_decodes_to_the_documented_values() -> None:
    frame = documented_example()
    assert len(frame) == FRAME_BYTES
    r = decode(frame)
    assert (r.node_id, r.port, r.occupancy, r.capacity) == (2, 1, 140, 200)
    assert (r.timestamp_us, r.seq, r.drops, r.interval_us, r.flags) == (1_234_567, 42, 0, 10_000, 0)
    assert (r.drained, r.drained_ts_us) == (5_000, 1_234_000)
    assert r.dst_mac == dp.mac_int("02:00:00:00:01:01") and r.src_mac == dp.mac_int("02:00:00:00:02:01")
    assert r.fraction == pytest.approx(0.7)
    assert encode(r) == frame


def test_encode_decode_round_trip_keeps_every_field_and_48_bit_timestamp() -> None:
    r = Report(node_id=65535, port=511, occupancy=2**32 - 1, capacity=7, timestamp_us=2**48 - 1, seq=2**31,
               drops=3, interval_us=5, flags=1, drained=2**32 - 1, drained_ts_us=2**48 - 1, dst_mac=2**48 - 1,
               src_mac=1)
    assert decode(encode(r)) == r
    assert decode(encode(r) + b"\x00" * 4) == r  # NIC padding to 60 bytes is ignored


@pytest.mark.parametrize(("frame", "message"), [
    (b"\x00" * 12 + b"\x08\x00" + b"\x00" * 32, "not an ALINEA frame"),
    (b"\x00" * 12 + b"\x88\xb5" + b"\x20" * 10, "56"),
    (b"\x00" * 12 + b"\x88\xb5" + b"\x11" + b"\x00" * 41, "version 1, this decoder reads version 2"),
    (b"\x00" * 12 + b"\x88\xb5", "56"),
])
def test_malformed_frames_are_rejected_with_a_reason(frame: bytes, message: str) -> None:
    with pytest.raises(ReportError, match=message):
        decode(frame)


@pytest.mark.parametrize("bad", ["10.0.0", "10.0.0.256", "a.b.c.d", ""])
def test_bad_ipv4_address_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        dp.ip_int(bad)


@pytest.mark.parametrize("bad", ["02:00:00:00:00", "zz:00:00:00:00:00", "0200.0000.0001"])
def test_bad_mac_address_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        dp.mac_int(bad)


@given(st.binary(min_size=0, max_size=12), st.sampled_from([b"", b"\x88\xb5", b"\x08\x00"]),
       st.integers(0, 255), st.binary(max_size=60))
def test_any_frame_is_a_report_that_encodes_back_or_a_report_error(macs: bytes, ethertype: bytes, first: int,
                                                                    rest: bytes) -> None:
    """Whatever the bytes (short, another EtherType, another version, padding): decode returns a report
    whose encoding is the frame's first 56 bytes, or raises ReportError; nothing else."""
    frame = (macs + ethertype if len(macs) == 12 else macs) + bytes([first]) + rest
    readable = len(frame) >= FRAME_BYTES and frame[12:14] == b"\x88\xb5" and frame[14] >> 4 == 2  # the format
    try:
        r = decode(frame)
    except ReportError:
        assert not readable
        return
    assert readable and encode(r) == frame[:FRAME_BYTES]


@given(st.binary(min_size=12, max_size=12), st.integers(0, 15), st.binary(min_size=41, max_size=41))
def test_every_field_of_a_report_decodes_at_its_offset(macs: bytes, msg_type: int, rest: bytes) -> None:
    """decode reads each field at the wire format's offsets (encode's struct layout): any report's bytes
    decode to a report that encodes back to them."""
    frame = macs + b"\x88\xb5" + bytes([0x20 | msg_type]) + rest
    r = decode(frame)
    assert encode(r) == frame
    assert (r.version, r.msg_type, r.flags) == (2, msg_type, rest[0])
