"""Source locations and diagnostics shared by every front-end pass.

Every pass reports problems as :class:`P4Error` carrying the :class:`SourceLoc` of the
offending construct in the *original* source file (after the preprocessor's line markers
have been mapped back), so that the user is always pointed at the line they wrote, never
at a line of cpp output.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class SourceLoc:
    """A span in an original source file; lines and columns count from 1.

    ``end_line``/``end_col`` point at the last character of the span (inclusive), which is
    what a caret/underline renderer needs.
    """

    file: str
    line: int
    col: int
    end_line: int = 0
    end_col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"

    def to(self, other: SourceLoc) -> SourceLoc:
        """The span from the start of ``self`` to the end of ``other``."""
        return SourceLoc(self.file, self.line, self.col, other.end_line, other.end_col)


UNKNOWN_LOC = SourceLoc("<unknown>", 0, 0, 0, 0)


@dataclass
class Note:
    """Secondary information attached to an error (e.g. "previous declaration here")."""

    message: str
    loc: SourceLoc | None = None


class P4Error(Exception):
    """A user-facing error in P4 source, located at ``loc``.

    ``severity`` is "error" or "warning"; ``notes`` add context lines under the message.
    """

    def __init__(
        self,
        loc: SourceLoc | None,
        message: str,
        notes: Sequence[Note] = (),
        severity: str = "error",
    ) -> None:
        super().__init__(message)
        self.loc = loc if loc is not None else UNKNOWN_LOC
        self.message = message
        self.notes = list(notes)
        self.severity = severity

    def __str__(self) -> str:
        return f"{self.loc}: {self.severity}: {self.message}"


class P4ErrorGroup(P4Error):
    """Several errors raised at once (what a pass raises after collecting a DiagnosticBag)."""

    def __init__(self, errors: Sequence[P4Error]) -> None:
        if not errors:
            raise ValueError("P4ErrorGroup needs at least one error")
        first = errors[0]
        super().__init__(first.loc, first.message, first.notes, first.severity)
        self.errors = list(errors)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def iter_errors(err: P4Error) -> Iterator[P4Error]:
    """The individual errors in ``err`` (one, or each member of a group)."""
    if isinstance(err, P4ErrorGroup):
        yield from err.errors
    else:
        yield err


@dataclass
class DiagnosticBag:
    """Collects errors so a pass can report all problems it finds, not only the first."""

    errors: list[P4Error] = field(default_factory=list)
    warnings: list[P4Error] = field(default_factory=list)
    limit: int = 100

    def error(self, loc: SourceLoc | None, message: str, notes: Sequence[Note] = ()) -> None:
        self.add(P4Error(loc, message, notes))

    def warning(self, loc: SourceLoc | None, message: str, notes: Sequence[Note] = ()) -> None:
        self.warnings.append(P4Error(loc, message, notes, severity="warning"))

    def add(self, err: P4Error) -> None:
        for e in iter_errors(err):
            if e.severity == "warning":
                self.warnings.append(e)
            else:
                self.errors.append(e)
        if len(self.errors) >= self.limit:
            self.raise_if_any()

    def __bool__(self) -> bool:
        return bool(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def raise_if_any(self) -> None:
        """Raise the collected errors (sorted by location) as one exception, if any."""
        if not self.errors:
            return
        errs = sorted(self.errors, key=lambda e: (e.loc.file, e.loc.line, e.loc.col))
        raise errs[0] if len(errs) == 1 else P4ErrorGroup(errs)


SourceLines = Mapping[str, Sequence[str]] | Sequence[str] | None


def _lines_for(loc: SourceLoc, source_lines: SourceLines) -> Sequence[str] | None:
    if isinstance(source_lines, Mapping):
        return source_lines.get(loc.file)
    if source_lines is not None:
        return source_lines
    try:
        return Path(loc.file).read_text(errors="replace").splitlines()
    except OSError:
        return None


def _render_one(loc: SourceLoc, head: str, source_lines: SourceLines) -> list[str]:
    out = [head if loc is UNKNOWN_LOC or not loc.file else f"{loc}: {head}"]
    lines = _lines_for(loc, source_lines) if loc.line > 0 else None
    if lines is None or not 1 <= loc.line <= len(lines):
        return out
    text = lines[loc.line - 1].rstrip("\n").expandtabs(1)
    out.append(text)
    start = max(loc.col, 1)
    if loc.end_line == loc.line and loc.end_col >= start:
        width = loc.end_col - start + 1
    else:
        width = 1
    out.append(" " * (start - 1) + "^" + "~" * (width - 1))
    return out


def format_error(err: P4Error, source_lines: SourceLines = None) -> str:
    """Render ``file:line:col: error: message``, the source line and a caret under the span.

    ``source_lines`` is either the lines of the error's file, a mapping from file name to
    lines, or None to read the file from disk. Groups render every member.
    """
    out: list[str] = []
    for e in iter_errors(err):
        out += _render_one(e.loc, f"{e.severity}: {e.message}", source_lines)
        for note in e.notes:
            if note.loc is not None:
                out += _render_one(note.loc, f"note: {note.message}", source_lines)
            else:
                out.append(f"note: {note.message}")
    return "\n".join(out)
