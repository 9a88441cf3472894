"""Bounded constant evaluation: widths and compile-time values beyond p4switch's limits
are located errors, never a MemoryError or a hang (check/values.py holds the limits)."""

from __future__ import annotations

import pytest

from p4switch.frontend.check import values as V
from p4switch.frontend.errors import P4Error
from p4switch.frontend.parser import parse_text
from tests.frontend.check.checkutil import errors, in_control, one_error, pos


def test_huge_width_is_a_located_error_naming_the_limit() -> None:
    src = "const bit<12301923123132> too_large = 0;"
    e = one_error(src)
    assert (e.line, e.col) == pos(src, "12301923123132")
    assert str(V.MAX_WIDTH) in e.message and "12301923123132" in e.message


def test_widths_up_to_the_limit_are_accepted() -> None:
    assert errors(f"const bit<{V.MAX_WIDTH}> w = 1; const int<{V.MAX_WIDTH}> s = -1;") == []
    assert str(V.MAX_WIDTH) in one_error(f"const bit<{V.MAX_WIDTH + 1}> w = 1;").message
    assert str(V.MAX_WIDTH) in one_error(f"header v_t {{ varbit<{V.MAX_WIDTH + 1}> v; }}").message


def test_huge_constant_shift_is_one_located_error() -> None:
    src = in_control("hdr.h.b = 1985245330 << 903012108;")
    e = one_error(src)
    assert (e.line, e.col) == pos(src, "1985245330 <<")
    assert "shift amount" in e.message and str(V.MAX_WIDTH) in e.message


def test_growing_constants_stop_at_the_value_limit() -> None:
    big = " * ".join(["(1 << 2000)"] * 3)
    e = one_error(f"const int too_big = {big};")
    assert str(V.MAX_INT_BITS) in e.message


def test_literal_with_huge_width_or_too_many_digits_is_a_parse_error() -> None:
    with pytest.raises(P4Error, match="2048"):
        parse_text("const bit<8> x = 123456789012w1;", "lit.p4", preprocess=False)
    with pytest.raises(P4Error, match="digits"):
        parse_text("const int x = " + "9" * 6000 + ";", "lit.p4", preprocess=False)
