"""Every program in tests/p4programs/negative is rejected by `hbh p4 check` with the
expected error: exit code 1, a `file:line:col: error:` line at the position its first line
announces (`// expect: <line>:<col>: <substring>`), the substring in that message, and
no traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hbh.cli import main

NEGATIVE = Path(__file__).resolve().parents[1] / "p4programs" / "negative"
EXPECT = re.compile(r"//\s*expect:\s*(\d+):(\d+):\s*(.+?)\s*$")
PROGRAMS = sorted(NEGATIVE.glob("*.p4"))

def _param(path: Path) -> object:
    return pytest.param(path, id=path.stem)


def expectation(path: Path) -> tuple[int, int, str]:
    m = EXPECT.match(path.read_text().splitlines()[0])
    assert m, f"{path.name}: first line must be '// expect: <line>:<col>: <substring>'"
    return int(m.group(1)), int(m.group(2)), m.group(3)


def test_there_are_enough_negative_programs() -> None:
    assert len(PROGRAMS) >= 20


@pytest.mark.parametrize("path", [_param(p) for p in PROGRAMS])
def test_negative_program_is_rejected_at_the_expected_place(path: Path, capsys) -> None:
    line, col, substring = expectation(path)
    rc = main(["p4", "check", str(path)])
    out, err = capsys.readouterr()
    assert rc == 1, f"exit code {rc}\n{out}{err}"
    assert "Traceback" not in err and "internal error" not in err
    errors = [x for x in err.splitlines() if ": error: " in x]
    assert errors, err
    first = errors[0]
    assert first.startswith(f"{path}:{line}:{col}: error: "), f"expected {line}:{col}, got:\n{err}"
    assert substring.lower() in first.lower(), first
