"""Which program a run's switches take: p4c's JSON from ``make p4``, or the P4 source.

Why: a user who ran ``make p4`` (p4c installed) should see p4switch run the pipeline p4c
compiled, as BMv2 would; without p4c the source is compiled by p4switch's own front end. A
JSON older than any source file it came from is another program (the source changed since
``make p4``), so it is never taken: the run goes on from source and says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2


@dataclass(frozen=True)
class CompiledJson:
    """p4c's BMv2 JSON and P4Info, as ``make p4`` wrote them."""

    json_path: Path
    p4info_path: Path

    def load(self) -> tuple[p4info_pb2.P4Info, bytes]:
        """The P4Info and the device config (the JSON's bytes, as BMv2 takes them)."""
        info = text_format.Parse(self.p4info_path.read_text(), p4info_pb2.P4Info())
        return info, self.json_path.read_bytes()


def compiled_json(build: Path, name: str, sources: Iterable[Path]) -> CompiledJson | str:
    """``build/NAME.json`` and ``build/NAME.p4info.txtpb`` when both exist and are no older than
    every file of ``sources``; otherwise the reason, one line, for running from source."""
    js, info = build / f"{name}.json", build / f"{name}.p4info.txtpb"
    missing = [p for p in (js, info) if not p.exists()]
    if missing:
        return f"{missing[0]} is absent (`make p4` with p4c writes it)"
    built = min(js.stat().st_mtime, info.stat().st_mtime)
    newer = [s for s in sources if s.exists() and s.stat().st_mtime > built]
    if newer:
        return f"{newer[0]} changed after {js} was compiled (run `make p4` again)"
    return CompiledJson(js, info)


def program_sources(main: Path) -> list[Path]:
    """The P4 file and the files of its ``include/`` folder: what a JSON compiled from it depends on."""
    inc = main.parent / "include"
    return [main, *sorted(p for p in inc.rglob("*") if p.is_file())] if inc.is_dir() else [main]


def _objects(info: p4info_pb2.P4Info) -> dict[tuple[str, str], int]:
    """(kind, name) -> id of every named object of a P4Info."""
    out: dict[tuple[str, str], int] = {}
    for field, value in info.ListFields():
        for obj in value if field.is_repeated else [value]:
            pre = getattr(obj, "preamble", None)
            if pre is not None and pre.name:
                out[(field.name, pre.name)] = pre.id
    return out


def other_program(compiled: p4info_pb2.P4Info, source: p4info_pb2.P4Info) -> str | None:
    """Why p4c's P4Info is not the source's program (an object one has and the other lacks, or
    has under another id), or None when they name the same objects with the same ids. p4c and
    p4switch's front end give one program the same P4Info (tests/p4switch/bmv2json/test_bmv2json_differential)."""
    a, b = _objects(compiled), _objects(source)
    for (kind, name), ident in sorted(b.items()):
        if (kind, name) not in a:
            return f"its P4Info lacks {kind[:-1] if kind.endswith('s') else kind} '{name}' of the source"
        if a[(kind, name)] != ident:
            return f"its P4Info gives '{name}' id 0x{a[(kind, name)]:08x}, the source 0x{ident:08x}"
    extra = sorted(set(a) - set(b))
    return f"its P4Info has '{extra[0][1]}', which the source lacks" if extra else None
