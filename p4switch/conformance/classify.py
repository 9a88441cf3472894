"""Turn the workers' answers into the numbers and grouped lists of the report.

Each program gets one verdict. Samples: ``accepted`` (check and P4Info without error),
``rejected`` (a located P4 error; the reason is its message), ``traceback``, ``timeout`` or
``crash``. Error programs: ``rejected`` with ``file:line:col``, ``rejected_unlocated``,
``accepted`` (p4c rejects it, we do not), ``traceback``, ``timeout``, ``crash``. A reason is
grouped by its message with quoted names and numbers replaced (``'…'``, ``N``), so one
class of defect is one line of the report however many programs show it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\b\d+\b")
FAILURES = ("traceback", "timeout", "crash")


def reason_class(message: str) -> str:
    """``message`` with names and numbers abstracted, for grouping."""
    return _NUMBER.sub("N", _QUOTED.sub("'…'", message))[:160]


@dataclass
class Verdict:
    """The outcome of one program: ``status`` and, for failures, a one-line ``reason``."""

    name: str
    status: str
    reason: str = ""
    where: str = ""


@dataclass
class Section:
    """One part of the report: verdicts by program, and the totals by status."""

    verdicts: list[Verdict] = field(default_factory=list)

    def count(self, *statuses: str) -> int:
        return sum(1 for v in self.verdicts if v.status in statuses)

    def __len__(self) -> int:
        return len(self.verdicts)

    def groups(self, *statuses: str) -> list[tuple[str, list[str]]]:
        """Programs with one of ``statuses``, grouped by reason class, biggest first."""
        by: dict[str, list[str]] = {}
        for v in self.verdicts:
            if v.status in statuses:
                by.setdefault(reason_class(v.reason), []).append(v.name)
        return sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def _first_error(answer: dict[str, Any]) -> tuple[str, str, bool]:
    errs = answer.get("errors") or []
    if not errs:
        return "error without message", "", False
    e = errs[0]
    located = e["line"] > 0 and e["col"] > 0
    return e["message"], f"{Path(e['file']).name}:{e['line']}:{e['col']}", located


def sample_verdict(name: str, answer: dict[str, Any]) -> Verdict:
    out = answer.get("outcome")
    if out == "ok":
        return Verdict(name, "accepted")
    if out == "error":
        msg, where, _ = _first_error(answer)
        return Verdict(name, "rejected", f"[{answer.get('stage', '?')}] {msg}", where)
    return Verdict(name, out or "crash", answer.get("traceback") or answer.get("message", ""))


def error_verdict(name: str, answer: dict[str, Any], p4c_line: int | None) -> Verdict:
    out = answer.get("outcome")
    if out == "ok":
        return Verdict(name, "accepted", "accepted, p4c rejects it")
    if out == "error":
        msg, where, located = _first_error(answer)
        status = "rejected" if located else "rejected_unlocated"
        line = answer["errors"][0]["line"] if answer.get("errors") else 0
        same = "same line as p4c" if p4c_line == line else f"p4c: line {p4c_line}"
        return Verdict(name, status, msg, f"{where} ({same})")
    return Verdict(name, out or "crash", answer.get("traceback") or answer.get("message", ""))


def p4info_verdict(name: str, answer: dict[str, Any]) -> Verdict:
    if answer.get("outcome") != "ok":
        return Verdict(name, "not_built", "program not accepted")
    diffs = answer.get("p4info_diffs") or []
    if not diffs:
        return Verdict(name, "identical")
    classes = sorted({c for c, _ in diffs})
    return Verdict(name, "different", ", ".join(classes), "; ".join(f"{c} {d}" for c, d in diffs[:4]))


def diff_class_counts(section: Section) -> Counter[str]:
    """How many programs show each P4Info difference class."""
    c: Counter[str] = Counter()
    for v in section.verdicts:
        if v.status == "different":
            c.update(v.reason.split(", "))
    return c


def stf_verdict(name: str, answer: dict[str, Any]) -> Verdict:
    out = answer.get("outcome")
    if out == "passed":
        return Verdict(name, "passed")
    return Verdict(name, out or "crash", answer.get("message") or answer.get("traceback", ""))
