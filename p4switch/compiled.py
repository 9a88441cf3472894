"""A P4 program through the front end: the checked program, its P4Info and its device config.

Why a module of its own: every way a program enters p4switch ends here -- a ``.p4`` file
(``compile_file``), a device config P4Runtime pushed (``p4switch.device``) and p4c's BMv2 JSON
(``p4switch.bmv2json``, which writes the JSON as P4 text and runs :func:`front_end` on it). The
device takes both kinds of config, so it imports the JSON loader; the loader needs only this
module, never the device. The front end's passes are imported when first run, so that importing
the switch (``hbh --help``) does not load the parser.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2

__all__ = ["CompiledProgram", "compile_file", "device_config_for", "front_end", "relines"]


@dataclass
class CompiledProgram:
    """A checked program and the P4Info the front end built for it."""

    checked: Any
    p4info: p4info_pb2.P4Info
    device_config: bytes


def relines(text: str, line_map: Sequence[tuple[str, int]]) -> str:
    """Preprocessed text, blank lines left out, with a line marker before every line whose
    origin is not the line after the previous one's (what cpp does), so that every position
    survives the round trip through the device config."""
    out: list[str] = []
    prev: tuple[str, int] | None = None
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        origin = line_map[i] if i < len(line_map) else ("<unknown>", i + 1)
        if prev is None or origin != (prev[0], prev[1] + 1):
            name = origin[0].replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'# {origin[1]} "{name}"')
        out.append(line)
        prev = origin
    return "\n".join(out) + "\n"


def device_config_for(
    path: str | Path, include_dirs: Iterable[str | Path] = (), defines: Iterable[str] = ()
) -> bytes:
    """The p4switch device config of the ``.p4`` file at ``path`` (raises P4Error)."""
    from p4switch.frontend.preprocess import preprocess_file

    pp = preprocess_file(path, list(include_dirs), list(defines))
    return relines(pp.text, pp.line_map).encode("utf-8")


def front_end(pp: Any) -> tuple[Any, p4info_pb2.P4Info]:
    """The checked program and its P4Info from preprocessed text (raises P4Error)."""
    from p4switch.frontend.check import check_program
    from p4switch.frontend.p4info import build_p4info
    from p4switch.frontend.parser import parse_preprocessed

    checked = check_program(parse_preprocessed(pp))
    return checked, build_p4info(checked)


def compile_file(
    path: str | Path, include_dirs: Iterable[str | Path] = (), defines: Iterable[str] = ()
) -> CompiledProgram:
    """Front end on a ``.p4`` file (raises P4Error with file:line:col).

    The front end reads cpp's output itself, not the device config made from it: the config's
    text under the file's own name would make the column finder look for tokens on the
    config's lines instead of the file's, and put columns off.
    """
    from p4switch.frontend.preprocess import preprocess_file

    pp = preprocess_file(path, [str(d) for d in include_dirs], list(defines))
    config = relines(pp.text, pp.line_map).encode("utf-8")
    checked, p4info = front_end(pp)
    return CompiledProgram(checked, p4info, config)
