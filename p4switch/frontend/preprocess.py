"""Pass 1: run the system C preprocessor on a P4 source, as p4c does.

P4_16 relies on ``#include``/``#define`` from the C preprocessor. We run the system
``cpp`` with ``-undef -nostdinc`` (so that no host macros such as ``unix`` or ``linux``
leak into P4 and no host headers can be found), our own ``p4src/include`` (core.p4,
v1model.p4) after the user's ``-I`` directories, and keep cpp's line markers: every
preprocessed line is mapped back to the ``file:line`` it came from, so every later pass
reports positions in the files the user wrote.

``-x c`` is used (C tokenisation: ``//`` and ``/* */`` comments are removed, apostrophes
in comments are harmless); cpp's diagnostics are turned into :class:`P4Error` with the
location cpp gives, never a traceback.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from p4switch.frontend.errors import DiagnosticBag, P4Error, SourceLoc

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_INCLUDE_DIR = REPO_ROOT / "p4src" / "include"

# Macros every program sees: ours, and the one p4c's BMv2 back end defines, so that
# programs written for simple_switch select their v1model code paths.
BUILTIN_DEFINES: tuple[str, ...] = ("__P4SWITCH__=1", "__TARGET_BMV2__=1")

STDIN_NAME = "<stdin>"
_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"')
_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning): (?P<msg>.*)$")
_NO_FILE = re.compile(r"^(?P<name>.+): No such file or directory$")
_NO_PATH = re.compile(r"^no include path in which to search for (?P<name>.+)$")


@dataclass
class PreprocessedSource:
    """cpp output ready for the lexer, with the map back to original positions.

    ``text`` is cpp's output with line-marker and pragma lines blanked (so that line
    numbers in ``text`` still index ``line_map``); ``line_map[n - 1]`` is the original
    ``(file, line)`` of preprocessed line ``n``.
    """

    text: str
    line_map: list[tuple[str, int]]
    main_file: str
    warnings: list[P4Error] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)

    def origin(self, pp_line: int) -> tuple[str, int]:
        """The original ``(file, line)`` of preprocessed line ``pp_line`` (1-based)."""
        if 1 <= pp_line <= len(self.line_map):
            return self.line_map[pp_line - 1]
        if self.line_map:
            file, line = self.line_map[-1]
            return file, line + pp_line - len(self.line_map)
        return self.main_file, pp_line

    def source_lines(self, file: str) -> list[str] | None:
        """The original lines of ``file`` (read once from disk), or None if unreadable."""
        if file not in self.sources:
            try:
                self.sources[file] = Path(file).read_text(errors="replace").splitlines()
            except OSError:
                return None
        return self.sources[file]


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def map_lines(cpp_output: str, main_file: str, stdin_name: str | None = None) -> tuple[str, list[tuple[str, int]]]:
    """Blank line markers in ``cpp_output`` and compute each line's original position.

    Lines that are not P4 (markers, ``#pragma``/``#ident`` passed through by cpp) become
    empty so that the lexer never sees them.
    """
    lines = cpp_output.split("\n")
    line_map: list[tuple[str, int]] = []
    file, line = main_file, 1
    for i, text in enumerate(lines):
        if text.startswith("#"):
            m = _MARKER.match(text)
            line_map.append((file, line))
            lines[i] = ""
            if m:
                file = _unescape(m.group(2))
                if stdin_name is not None and file == STDIN_NAME:
                    file = stdin_name
                line = int(m.group(1))
            else:
                line += 1
            continue
        line_map.append((file, line))
        line += 1
    return "\n".join(lines), line_map


def _friendly(msg: str, include_dirs: Sequence[str]) -> str:
    m = _NO_FILE.match(msg) or _NO_PATH.match(msg)
    if m:
        searched = ", ".join(include_dirs) or "no include directories"
        return f"cannot find include file '{m.group('name')}' (searched: {searched})"
    return msg


def parse_cpp_diagnostics(
    stderr: str, include_dirs: Sequence[str], stdin_name: str | None = None
) -> tuple[list[P4Error], list[P4Error]]:
    """Turn cpp's stderr into (errors, warnings); context and caret lines are dropped."""
    errors: list[P4Error] = []
    warnings: list[P4Error] = []
    for raw in stderr.splitlines():
        m = _DIAG.match(raw)
        if not m:
            continue
        file = m.group("file")
        if stdin_name is not None and file == STDIN_NAME:
            file = stdin_name
        line = int(m.group("line"))
        col = int(m.group("col") or 1)
        msg = _friendly(m.group("msg"), include_dirs)
        if m.group("sev") == "warning":
            warnings.append(P4Error(SourceLoc(file, line, col, line, col), msg, severity="warning"))
        else:
            errors.append(P4Error(SourceLoc(file, line, col, line, col), msg))
    return errors, warnings


def _cpp_command(
    cpp: str, include_dirs: Sequence[str], defines: Iterable[str]
) -> list[str]:
    exe = shutil.which(cpp)
    if exe is None:
        raise P4Error(None, f"C preprocessor '{cpp}' not found on PATH; install cpp (e.g. the gcc or cpp package)")
    cmd = [exe, "-x", "c", "-undef", "-nostdinc"]
    for d in (*BUILTIN_DEFINES, *defines):
        cmd += ["-D", d]
    for inc in include_dirs:
        cmd += ["-I", inc]
    return cmd


def _search_path(include_dirs: Sequence[str | Path]) -> list[str]:
    dirs = [str(d) for d in include_dirs]
    if str(DEFAULT_INCLUDE_DIR) not in dirs:
        dirs.append(str(DEFAULT_INCLUDE_DIR))
    return dirs


def _run(cmd: list[str], stdin_text: str | None) -> subprocess.CompletedProcess[str]:
    try:
        # Undecodable bytes in an included file must not crash the front end: they become
        # U+FFFD and then a lexical error at their place.
        return subprocess.run(cmd, input=stdin_text, capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=60, check=False)
    except OSError as exc:
        raise P4Error(None, f"cannot run the C preprocessor: {exc}") from None
    except subprocess.TimeoutExpired:
        raise P4Error(None, "the C preprocessor did not finish within 60 s") from None


def _finish(
    proc: subprocess.CompletedProcess[str],
    main_file: str,
    dirs: Sequence[str],
    stdin_name: str | None,
) -> PreprocessedSource:
    errors, warnings = parse_cpp_diagnostics(proc.stderr, dirs, stdin_name)
    if proc.returncode != 0 or errors:
        if not errors:
            detail = proc.stderr.strip() or f"exit status {proc.returncode}"
            errors = [P4Error(SourceLoc(main_file, 0, 0), f"preprocessing failed: {detail}")]
        bag = DiagnosticBag()
        for e in errors:
            bag.add(e)
        bag.raise_if_any()
    text, line_map = map_lines(proc.stdout, main_file, stdin_name)
    return PreprocessedSource(text=text, line_map=line_map, main_file=main_file, warnings=warnings)


def _check_utf8(path: Path) -> None:
    """P4 sources are text: point at the first byte that is not UTF-8."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise P4Error(SourceLoc(str(path), line, col, line, col),
                      f"not UTF-8 text (byte 0x{data[exc.start]:02x}); is this a P4 source file?") from None


def preprocess_file(
    path: str | Path,
    include_dirs: Sequence[str | Path] = (),
    defines: Iterable[str] = (),
    cpp: str = "cpp",
) -> PreprocessedSource:
    """Preprocess the P4 file at ``path``; raises P4Error (or a group) on cpp errors.

    ``defines`` are ``NAME`` or ``NAME=VALUE`` strings as for ``-D``.
    """
    name = str(path)
    p = Path(path)
    if not p.is_file():
        reason = "is a directory" if p.is_dir() else "no such file"
        raise P4Error(SourceLoc(name, 0, 0), f"cannot open P4 source: {reason}")
    _check_utf8(p)
    dirs = _search_path(include_dirs)
    proc = _run([*_cpp_command(cpp, dirs, defines), name], None)
    return _finish(proc, name, dirs, None)


def preprocess_text(
    text: str,
    name: str = "<string>",
    include_dirs: Sequence[str | Path] = (),
    defines: Iterable[str] = (),
    cpp: str = "cpp",
) -> PreprocessedSource:
    """Preprocess P4 source held in memory; positions are reported against ``name``."""
    dirs = _search_path(include_dirs)
    proc = _run([*_cpp_command(cpp, dirs, defines), "-"], text)
    result = _finish(proc, name, dirs, name)
    result.sources[name] = text.splitlines()
    return result


def no_preprocess(text: str, name: str = "<string>") -> PreprocessedSource:
    """Wrap already-preprocessed (or directive-free) text without running cpp.

    Only directive-free text is the source of ``name`` itself. Text with line markers
    (a device config, cpp output) names its original files in them: their lines are read
    from those files when a position must be aligned, never taken from this text, whose
    line numbers and spacing are not the original's.
    """
    text_out, line_map = map_lines(text, name)
    has_markers = any(_MARKER.match(line) for line in text.split("\n") if line.startswith("#"))
    sources = {} if has_markers else {name: text.splitlines()}
    return PreprocessedSource(text=text_out, line_map=line_map, main_file=name, sources=sources)
