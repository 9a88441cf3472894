"""Where the programs and expected outputs of p4c's ``testdata/`` folder are."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SAMPLES, ERRORS, OUTPUTS = "p4_16_samples", "p4_16_errors", "p4_16_samples_outputs"
ERRORS_OUTPUTS = "p4_16_errors_outputs"
_P4C_LOC = re.compile(r"^(?P<file>[^\s(]+\.p4)\((?P<line>\d+)\)")


@dataclass(frozen=True)
class Sample:
    """One program of ``p4_16_samples``: its expected P4Info and STF test, if p4c has them."""

    path: Path
    p4info: Path | None
    stf: Path | None


@dataclass(frozen=True)
class ErrorProgram:
    """One program of ``p4_16_errors`` with the line of p4c's first error (None if unknown)."""

    path: Path
    p4c_line: int | None


def samples(testdata: Path) -> list[Sample]:
    """Every ``*.p4`` of ``p4_16_samples`` (sorted), with its expected outputs."""
    out = []
    for p in sorted((testdata / SAMPLES).glob("*.p4")):
        info = testdata / OUTPUTS / f"{p.name}.p4info.txtpb"
        stf = p.with_suffix(".stf")
        out.append(Sample(p, info if info.is_file() else None, stf if stf.is_file() else None))
    return out


def error_programs(testdata: Path) -> list[ErrorProgram]:
    """Every ``*.p4`` of ``p4_16_errors`` (sorted): p4c rejects each of them."""
    out = []
    for p in sorted((testdata / ERRORS).glob("*.p4")):
        out.append(ErrorProgram(p, p4c_error_line(testdata / ERRORS_OUTPUTS / f"{p.name}-stderr", p.name)))
    return out


def p4c_error_line(stderr: Path, name: str) -> int | None:
    """The line of the first ``name(LINE)`` location in p4c's expected stderr."""
    try:
        text = stderr.read_text(errors="replace")
    except OSError:
        return None
    for raw in text.splitlines():
        m = _P4C_LOC.match(raw)
        if m and Path(m.group("file")).name == name:
            return int(m.group("line"))
    return None
