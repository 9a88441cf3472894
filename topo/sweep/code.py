"""Which code made a stored run: a digest of every source file that decides a run's result.

Why: a sweep's results directory is reused (a killed sweep resumes, ``make demo`` run twice finds
its runs), and a run's key names only its inputs (topology text, point, seed, duration). Without
the code in the record, a run made before a fix to a metric or a law would be reused after it and
its old numbers printed as new ones. The digest covers the packages a run executes (``topo``,
``hosts``, ``controlplane``, ``runtime``, ``p4switch``, ``bmv2_thrift``), the P4 program and the
engine's Rust sources; it is computed once per process (the code a process runs is the code it
loaded when it started).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["code_digest", "SOURCES"]

ROOT = Path(__file__).resolve().parents[2]
#: (directory under the repository, file suffixes) that together decide what a run computes.
SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("topo", (".py",)), ("hosts", (".py",)), ("controlplane", (".py",)), ("runtime", (".py",)),
    ("p4switch", (".py",)), ("bmv2_thrift", (".py",)), ("p4src", (".p4",)),
    ("engine/src", (".rs",)), ("engine", ("Cargo.lock", "Cargo.toml")),
)


def _files(root: Path) -> list[Path]:
    found: set[Path] = set()
    for folder, suffixes in SOURCES:
        base = root / folder
        pattern = "*" if folder == "engine" else "**/*"
        for path in base.glob(pattern):
            if path.is_file() and path.name.endswith(suffixes) and "__pycache__" not in path.parts:
                found.add(path)
    return sorted(found)


def digest_of(root: Path) -> str:
    """The digest of the sources under ``root`` (names and contents, in a fixed order)."""
    h = hashlib.sha256()
    for path in _files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


@functools.cache
def code_digest() -> str:
    """This checkout's digest, once per process."""
    return digest_of(ROOT)
