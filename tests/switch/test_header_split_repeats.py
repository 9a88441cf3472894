"""The engine's controller-header split over many frames in a row (engine/src/wire/ctrlheader.rs keeps the
last split's values and sets only the fields that changed): every split gives what reading that
frame's header as one integer gives, whatever came before it, and a dict handed out is the
caller's own (changing it changes no later split)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st_

from p4switch.device import split_as_integer, split_controller_header
from p4switch.state.runtime import ControllerHeader, PacketMetadataField


def header() -> ControllerHeader:
    """A report's packet_in layout in miniature: a 9-bit port, pad bits, wide and narrow fields."""
    widths = (9, 7, 32, 48, 1, 64, 3)
    return ControllerHeader(1, "packet_in", tuple(PacketMetadataField(i + 1, f"f{i}", w) for i, w in enumerate(widths)))


HEADER_BYTES = (9 + 7 + 32 + 48 + 1 + 64 + 3 + 7) // 8


@given(frames=st_.lists(st_.binary(min_size=HEADER_BYTES - 1, max_size=HEADER_BYTES + 4), min_size=1, max_size=12),
       repeat=st_.lists(st_.booleans(), min_size=12, max_size=12))
def test_each_split_of_a_sequence_is_that_frames_own(frames: list[bytes], repeat: list[bool]) -> None:
    """Frames one after another through one splitter, some sent twice in a row (the fields that
    repeat are the case the split saves work on): each dict is the frame's own, in layout order."""
    h = header()
    assert h.splitter is not None
    seq = [f for f, twice in zip(frames, repeat) for f in ([f, f] if twice else [f])]
    for frame in seq:
        got, want = split_controller_header(h, frame), split_as_integer(h, frame)
        assert got == want
        if got is not None and want is not None:
            assert list(got[0]) == list(want[0])


def test_a_dict_changed_by_its_caller_changes_no_later_split() -> None:
    h = header()
    frame = bytes(range(1, HEADER_BYTES + 1)) + b"payload"
    first = split_controller_header(h, frame)
    assert first is not None
    meta, payload = first
    assert payload == b"payload"
    want = dict(meta)
    for name in meta:
        meta[name] = 12345
    meta["extra"] = 1
    again = split_controller_header(h, frame)
    assert again is not None and again[0] == want and list(again[0]) == list(want)
