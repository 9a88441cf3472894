"""A sweep's results directory: one JSON file per finished run, written atomically (resume).

Why one file per run keyed by a hash: a sweep killed at any moment leaves only whole files
(write to a temporary name, fsync, rename), and re-running the same command finds exactly the
runs that finished, whatever order they finished in and whichever machine ran them. A record
also names the code that made it (:func:`topo.sweep.code.code_digest`): a run made by other code
is not reused (it is "stale", and runs again), so a fix never hides behind a stored number.

    DIR/runs/<key>.json     a finished run: parameters, seed, summary
    DIR/failed/<key>.json   the last failure of a run that has not finished (retried on re-run)
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from topo.sweep.code import code_digest

__all__ = ["write_atomic", "Store"]


def write_atomic(path: Path, text: str) -> None:
    """``path`` holds either its old content or all of ``text``, never a part of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """Finished and failed runs under one results directory."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.runs = out / "runs"
        self.failed = out / "failed"

    def finished(self, key: str) -> dict[str, Any] | None:
        """The record of a run this code finished, None if there is none (or only an unreadable
        leftover, or a run made by other code: :meth:`stale`)."""
        record = self._stored(key)
        return record if record is not None and record.get("code") == code_digest() else None

    def stale(self, key: str) -> bool:
        """Whether a finished run is stored under ``key`` that other code made (it will run again)."""
        record = self._stored(key)
        return record is not None and record.get("code") != code_digest()

    def forget(self, key: str) -> bool:
        """Remove the stored run ``key`` (to run it again); whether there was one."""
        try:
            (self.runs / f"{key}.json").unlink()
        except FileNotFoundError:
            return False
        return True

    def _stored(self, key: str) -> dict[str, Any] | None:
        path = self.runs / f"{key}.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("key") == key and "summary" in record else None

    def save(self, record: dict[str, Any]) -> None:
        write_atomic(self.runs / f"{record['key']}.json", json.dumps(record, indent=1, sort_keys=True) + "\n")
        (self.failed / f"{record['key']}.json").unlink(missing_ok=True)

    def save_failure(self, record: dict[str, Any]) -> None:
        write_atomic(self.failed / f"{record['key']}.json", json.dumps(record, indent=1, sort_keys=True) + "\n")
