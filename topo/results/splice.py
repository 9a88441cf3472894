"""Replace some ``## `` sections of docs/results.md, keeping the rest (``make results`` regenerates
the whole file; ``hbh results --only NAME`` one generator's sections, for a change
that touches only them: a full run takes most of an hour)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["splice_sections", "commit"]

ROOT = Path(__file__).resolve().parents[2]


def commit() -> str:
    """The checkout's short commit, which a generated section names (``unknown`` without git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT, timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _blocks(lines: list[str]) -> list[tuple[str, str]]:
    """(heading, text) of each ``## `` section of ``lines`` (text includes its heading)."""
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("## "):
            out.append((line, [line]))
        elif out:
            out[-1][1].append(line)
    return [(h, "\n".join(body).rstrip("\n") + "\n") for h, body in out]


def _preamble(lines: list[str]) -> str | None:
    """The text before the first ``## `` heading when ``lines`` start a document (a ``# `` title:
    the paper generator's head, which names the commit its runs came from), else None."""
    if not lines or not lines[0].startswith("# "):
        return None
    head = []
    for line in lines:
        if line.startswith("## "):
            break
        head.append(line)
    return "\n".join(head).rstrip("\n") + "\n\n"


def splice_sections(doc: str, section_lines: list[str]) -> str:
    """``doc`` with each ``## `` section of ``section_lines`` replacing the section of the same
    heading (up to the next ``## ``), or appended when ``doc`` has none. A document head in
    ``section_lines`` (title and the lines up to the first section) replaces ``doc``'s head, so the
    commit and date it states are those of the runs that made the sections beneath it."""
    head = _preamble(section_lines)
    if head is not None:
        first = doc.find("\n## ")
        doc = head + (doc[first + 1:] if first >= 0 else "")
    for heading, text in _blocks(section_lines):
        start = doc.find(heading + "\n")
        if start < 0:
            doc = doc.rstrip("\n") + "\n\n" + text
            continue
        nxt = doc.find("\n## ", start + len(heading))
        tail = "" if nxt < 0 else doc[nxt + 1:]
        doc = doc[:start] + text + ("\n" + tail if tail else "")
    return doc
