"""Helpers for the checker tests: check a P4 snippet placed after a common prelude and
report errors with lines counted from the snippet's first line."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from p4switch.frontend.check import CheckedProgram, CheckErrors, check_program
from p4switch.frontend.parser import parse_text

PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<32> c; }
struct hs_t { h_t h; h_t[4] st; }
struct m_t { bit<8> x; bit<32> y; bool f; }
"""
PRELUDE_LINES = PRELUDE.count("\n")


@dataclass(frozen=True)
class Err:
    line: int  # in the snippet, from 1
    col: int
    message: str


def check(snippet: str) -> CheckedProgram:
    """Check ``snippet`` (after the prelude); CheckErrors propagate."""
    return check_program(parse_text(PRELUDE + textwrap.dedent(snippet), "snippet.p4"))


def errors(snippet: str) -> list[Err]:
    """The errors the checker reports for ``snippet`` (empty if it checks)."""
    try:
        check(snippet)
    except CheckErrors as exc:
        return [Err(e.loc.line - PRELUDE_LINES, e.loc.col, e.message) for e in exc.errors]
    except Exception as exc:  # a single P4Error from the parser is a test bug
        raise AssertionError(f"not a checker error: {exc}") from exc
    return []


def one_error(snippet: str) -> Err:
    errs = errors(snippet)
    assert len(errs) == 1, errs
    return errs[0]


def warnings(snippet: str) -> list[Err]:
    """The warnings for ``snippet`` (which must check without errors), those located in
    the snippet (not the one about a missing ``main``)."""
    checked = check(snippet)
    return [Err(w.loc.line - PRELUDE_LINES, w.loc.col, w.message) for w in checked.warnings
            if w.loc.line > PRELUDE_LINES]


def one_warning(snippet: str) -> Err:
    warns = warnings(snippet)
    assert len(warns) == 1, warns
    return warns[0]


def in_control(body: str, locals_: str = "") -> str:
    """A control with hs_t/m_t/standard_metadata parameters around ``body`` (its apply)."""
    return (
        "control C(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {\n"
        f"{locals_}\n"
        f"apply {{\n{body}\n}}\n}}\n"
    )


def pos(snippet: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, col) of the ``nth`` occurrence of ``needle`` in the dedented snippet."""
    text = textwrap.dedent(snippet)
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return line, col
