"""Programs p4c rejects, each with a located error: labels after ``default``, varbit
widths, ``@optional`` outside externs, ``@name`` and structured-annotation shapes, and
v1model versions our v1model.p4 does not know."""

from __future__ import annotations

import pytest

from p4switch.frontend.errors import P4Error
from p4switch.frontend.parser import parse_text

from .checkutil import errors, in_control, one_error, pos


def test_switch_label_after_default() -> None:
    src = in_control("switch (hdr.h.a) { default: { } 1: { } }")
    e = one_error(src)
    assert "default" in e.message and (e.line, e.col) == pos(src, "1: {")


def test_varbit_width_must_be_positive() -> None:
    assert "positive" in one_error("header v_t { varbit<(-2)> f; }").message


def test_optional_only_on_extern_parameters() -> None:
    assert "@optional" in one_error("bit<8> f(@optional bit<8> a) { return 1; }").message
    assert "@optional" in one_error("control g(in bit<8> t)(@optional bit<8> tt) { apply { } }").message
    assert errors("extern void ef(@optional in bit<8> a);") == []


def test_annotation_shapes() -> None:
    assert "@name takes one string" in one_error("@name(4)\nconst bit<8> k = 1;").message
    assert "only one of its name" in one_error("@d[]\n@d[]\nconst bit<8> k = 1;").message
    assert "only one of its name" in one_error("@n(3)\n@n[]\nconst bit<8> k = 1;").message
    assert "duplicate key" in one_error("@d[a = 1, a = 2]\nconst bit<8> k = 1;").message
    assert "must be a string" in one_error("@d[a = {2, 3}]\nconst bit<8> k = 1;").message


@pytest.mark.parametrize("version", ["-5", "20000101", "20300101"])
def test_unknown_v1model_version_is_an_error_in_v1model_p4(version: str) -> None:
    with pytest.raises(P4Error, match="V1MODEL_VERSION") as exc:
        parse_text(f"#define V1MODEL_VERSION {version}\n#include <v1model.p4>\n", "ver.p4")
    assert exc.value.loc.file.endswith("v1model.p4") and exc.value.loc.line > 0
