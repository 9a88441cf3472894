"""Reading STF text: commands, data lines, numbers with don't-care digits, add lines."""

from __future__ import annotations

import pytest

from p4switch.stf.runner import match_frame
from p4switch.stf.script import StfSyntaxError, parse_number, parse_stf, split_add


def test_commands_keep_their_line_and_ignore_comments() -> None:
    cmds = parse_stf("# header\n\nadd t a:1 act()   # trailing\nWAIT\npacket 0 00 11\n", "x.stf")
    assert [(c.name, c.where) for c in cmds] == [("add", "x.stf:3"), ("wait", "x.stf:4"), ("packet", "x.stf:5")]


def test_packet_and_expect_data_lose_their_spaces() -> None:
    packet, expect, any_ = parse_stf("packet 3 0a 0B cc\nexpect 4 0a ** c* $\nexpect 5\n")
    assert packet.args == ("3", "0a0Bcc")
    assert expect.args == ("4", "0a**c*$")
    assert any_.args == ("5", "")


@pytest.mark.parametrize("line, why", [
    ("frobnicate 1", "unknown STF command 'frobnicate'"),
    ("packet x 00", "needs a port number"),
    ("packet 1 0g", "not hex digits"),
    ("packet 1 0*", "not hex digits"),
    ("packet 1 000", "odd number of hex digits"),
    ("expect 1 00 $ 11", "not hex digits"),
])
def test_bad_lines_name_file_and_line(line: str, why: str) -> None:
    with pytest.raises(StfSyntaxError) as info:
        parse_stf("wait\n" + line, "t.stf")
    assert str(info.value).startswith("t.stf:2: ") and why in str(info.value)


@pytest.mark.parametrize("text, value, mask, bits", [
    ("0x1F", 0x1F, 0xFF, 8), ("0x*F", 0x0F, 0x0F, 8), ("0b1*0", 0b100, 0b101, 3), ("42", 42, -1, None),
    ("0o7*", 0o70, 0o70, 6),
])
def test_numbers_and_dont_care_digits(text: str, value: int, mask: int, bits: int | None) -> None:
    n = parse_number(text, "w")
    assert (n.value, n.mask, n.digit_bits) == (value, mask, bits)


def test_add_line_parts() -> None:
    (cmd,) = parse_stf("add ingress.t 7 h.a : 0x0* h.b:10/8 ingress.act(x:1, y : 0x2) = A\n")
    add = split_add(cmd)
    assert (add.table, add.priority, add.action) == ("ingress.t", 7, "ingress.act")
    assert add.keys == [("h.a", "0x0*"), ("h.b", "10/8")]
    assert [(a, n.value) for a, n in add.args] == [("x", 1), ("y", 2)]


def test_add_without_priority_or_action_args() -> None:
    (cmd,) = parse_stf("add t h.a:1 NoAction()\n")
    add = split_add(cmd)
    assert add.priority is None and add.args == [] and add.action == "NoAction"


def test_add_needs_an_action_call() -> None:
    (cmd,) = parse_stf("add t h.a:1\n", "a.stf")
    with pytest.raises(StfSyntaxError, match=r"^a.stf:1: add needs an action call"):
        split_add(cmd)


@pytest.mark.parametrize("expected, frame, ok", [
    ("0a0b", b"\x0a\x0b\x0c", True),         # longer frames match unless $
    ("0a0b$", b"\x0a\x0b\x0c", False),
    ("0a0b$", b"\x0a\x0b", True),
    ("0a*b", b"\x0a\xfb", True),
    ("0a*b", b"\x0a\xfc", False),
    ("0a0b0c", b"\x0a\x0b", False),          # too short
])
def test_frame_matching(expected: str, frame: bytes, ok: bool) -> None:
    assert (match_frame(expected, frame) is None) == ok


def test_validity_key_aliases_for_both_p4info_namings() -> None:
    from p4switch.stf.control import _key_aliases

    for p4info_name in ("hdr.h.isValid()", "hdr.h.$valid$"):
        assert {"hdr.h.$valid$", "hdr.h.valid"} <= set(_key_aliases(p4info_name))
    assert _key_aliases("hdr.h.a") == ["hdr.h.a"]
