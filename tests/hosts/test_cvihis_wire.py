"""Feedback codec: round trip, the documented example, and a clear error for every bad input."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hosts.cvihis import Command, Feedback, FeedbackError, decode_feedback, encode_feedback
from hosts.cvihis.wire import FEEDBACK_BYTES

DOC = Path(__file__).resolve().parents[2] / "docs" / "background" / "cvihis.md"


@st.composite
def feedbacks(draw: st.DrawFn) -> Feedback:
    command = draw(st.sampled_from(list(Command)))
    return Feedback(
        fb_seq=draw(st.integers(0, 2**32 - 1)),
        command=command,
        area=draw(st.one_of(st.none(), st.integers(0, 6))),
        step_milli=draw(st.integers(-(2**15), 2**15 - 1)),
        gradient=draw(st.sampled_from([-1, 0, 1])),
        loss=command is Command.MD,
        rtm=draw(st.booleans()),
        echo_ts_ns=draw(st.integers(0, 2**64 - 1)),
        echo_delay_ns=draw(st.integers(0, 2**64 - 1)),
        lost_total=draw(st.integers(0, 2**32 - 1)),
    )


@given(feedbacks())
def test_round_trip_is_exact(fb: Feedback) -> None:
    data = encode_feedback(fb)
    assert len(data) == FEEDBACK_BYTES
    assert decode_feedback(data) == fb


def documented_example() -> bytes:
    """The hex dump under "### Example" in docs/background/cvihis.md."""
    text = DOC.read_text()
    block = text[text.index("### Example"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    return b"".join(bytes.fromhex(" ".join(line.split()[1:])) for line in block.strip().splitlines())


def test_documented_example_decodes_to_the_documented_values() -> None:
    fb = decode_feedback(documented_example())
    assert fb == Feedback(fb_seq=42, command=Command.GRADIENT_DECREASE, area=2, step_milli=-200, gradient=1,
                          loss=False, rtm=True, echo_ts_ns=1_234_567_890, echo_delay_ns=3_500_000,
                          lost_total=7)
    assert encode_feedback(fb) == documented_example()


def good() -> bytearray:
    return bytearray(encode_feedback(Feedback(fb_seq=1, command=Command.HOLD, area=3, step_milli=0, gradient=0,
                                              loss=False, rtm=False, echo_ts_ns=5, echo_delay_ns=1)))


def patched(offset: int, fmt: str, value: int) -> bytes:
    data = good()
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (bytes(good())[:-1], "got 31"),
        (bytes(good()) + b"\0", "got 33"),
        (b"", "got 0"),
        (patched(0, "!B", 2), "version 2"),
        (patched(1, "!B", 0x80), "flag bits 0x80"),
        (patched(2, "!B", 8), "command 8"),
        (patched(3, "!B", 7), "area 7"),
        (patched(6, "!b", 2), "gradient 2"),
        (patched(7, "!B", 1), "reserved byte is 1"),
        (patched(1, "!B", 0x01), "loss flag 1 inconsistent"),  # loss flag on a HOLD
        (patched(2, "!B", int(Command.MD)), "loss flag 0 inconsistent"),  # MD without loss flag
    ],
)
def test_malformed_feedback_is_rejected_naming_the_field(data: bytes, field: str) -> None:
    with pytest.raises(FeedbackError) as err:
        decode_feedback(data)
    assert field in str(err.value)
    assert str(err.value).startswith("CVIHIS feedback:")


@given(st.binary(min_size=FEEDBACK_BYTES, max_size=FEEDBACK_BYTES))
def test_any_32_bytes_decode_or_raise_feedback_error(data: bytes) -> None:
    try:
        fb = decode_feedback(data)
    except FeedbackError:
        return
    assert encode_feedback(fb) == data


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"step_milli": 2**15}, "step_milli"),
        ({"echo_ts_ns": -1}, "echo_ts_ns"),
        ({"echo_delay_ns": 2**64}, "echo_delay_ns"),
        ({"area": 7}, "area"),
        ({"gradient": 2}, "gradient"),
    ],
)
def test_encode_rejects_fields_that_do_not_fit(change: dict, field: str) -> None:
    base = decode_feedback(bytes(good()))
    fb = Feedback(**{**base.__dict__, **change})
    with pytest.raises(FeedbackError, match=field):
        encode_feedback(fb)
