"""The loop analysis's warnings, cached by what they depend on.

Why: the analysis runs the fluid models of :mod:`topo.analysis.check` before every ``hbh run``; a
researcher who reruns a topology (another output directory, a sweep's repetitions) should not pay for
it again. The key is the topology as resolved (every node, link, flow, law, port, event and option:
not its name, file or source lines, which change nothing), with its flows at the starts the run's
hosts draw from its seed on its backend (topo/net/starts.py: another seed or backend starts them elsewhere,
another analysis),
the run's duration, and the source of every module the answer comes from, so an edit to the law or
the models is a miss rather than a stale answer. Entries are small JSON files in
``$HBH_CACHE_DIR`` (default ``$XDG_CACHE_HOME/hbh/analysis``, ``~/.cache/hbh/analysis``); a cache
that cannot be read or written is skipped (the analysis then runs), never an error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from topo.net.model import Topology
from topo.net.starts import with_drawn_starts

__all__ = ["cache_dir", "topology_key", "cached_warnings", "source_files"]

ROOT = Path(__file__).resolve().parents[2]
#: Where the sources the analysis's answer depends on live (the models, the routes, the law and
#: what the agents add, the compiled plant): every file of these folders is in the key, so no
#: module the analysis imports can be left out of it (a list of files went stale once: routes.py).
SOURCE_DIRS = (("topo", "*.py"), ("controlplane", "*.py"), ("hosts", "*.py"), ("runtime", "*.py"), ("engine/src", "*.rs"))
#: Fields that say where a value came from, not what it is.
_SOURCE_FIELDS = frozenset({"line", "source", "name", "description", "provenance"})


def cache_dir() -> Path:
    explicit = os.environ.get("HBH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hbh" / "analysis"


def _plain(value: Any, top: bool = False) -> Any:
    """``value`` as JSON-able data, dataclasses field by field (source lines dropped), dicts in a
    fixed order (their keys as text)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        skip = _SOURCE_FIELDS if top else {"line"}
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in skip}
    if isinstance(value, dict):
        return sorted(([_plain(k), _plain(v)] for k, v in value.items()), key=lambda kv: json.dumps(kv[0]))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    return value


def source_files() -> list[Path]:
    """Every file whose text is part of the key, in a fixed order."""
    return sorted(p for folder, pattern in SOURCE_DIRS for p in (ROOT / folder).rglob(pattern))


def _code_digest() -> str:
    h = hashlib.sha256()
    for path in source_files():
        h.update(str(path.relative_to(ROOT)).encode())
        with contextlib.suppress(OSError):
            h.update(path.read_bytes())
    return h.hexdigest()


def topology_key(topo: Topology, duration_s: float) -> str:
    """The cache key: the resolved topology (flow names kept: they name nothing the analysis reads,
    but the warnings quote none either), the duration and the analysis's code."""
    text = json.dumps([_plain(topo, top=True), repr(float(duration_s)), _code_digest()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def cached_warnings(topo: Topology, duration_s: float, directory: Path | None = None,
                    seed: int | None = None, backend: str = "sim") -> tuple[list[str], bool]:
    """(the analysis's warnings for a run of ``duration_s``, whether they came from the cache); ``seed``: a
    run's on ``backend`` (``"sim"`` or ``"netns"``), whose flows start where its hosts draw them (None: at the
    file's starts). The key is the started topology: another seed or backend that starts a flow elsewhere is
    another entry."""
    from topo.analysis.check import warnings

    if seed is not None:
        topo = with_drawn_starts(topo, seed, backend)
    where = directory if directory is not None else cache_dir()
    path = where / f"{topology_key(topo, duration_s)}.json"
    try:
        found = json.loads(path.read_text())
        if isinstance(found, list) and all(isinstance(w, str) for w in found):
            return found, True
    except (OSError, ValueError):
        pass
    result = warnings(topo, duration_s)
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=where, delete=False, suffix=".tmp") as tmp:
            json.dump(result, tmp)
        os.replace(tmp.name, path)
    except OSError:
        pass
    return result, False
