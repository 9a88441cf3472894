"""docs/results.md's last section: which published figures moved since the results a reader may
have cited, and by how much (issue 46: the metrics were redefined once, docs/reference/metrics.md, and
every number they feed was regenerated).

The reference is docs/results.md as ``make results`` last wrote it whole before the metrics were
redefined (:data:`BASE_COMMIT`), read from git. Each table of a section both versions have is
matched row by row on its leading cells; a cell that changed is listed as ``old -> new``. A section
only one version has is named, not diffed: its numbers are new, not moved."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["BASE_COMMIT", "moved_section", "table_cells", "HEADING"]

#: ``make results`` on 2026-11-27 (the newest drain), the last whole regeneration before the
#: metrics of docs/reference/metrics.md (commit e88830e) changed what the tables mean.
BASE_COMMIT = "926c737"
HEADING = "## What moved since the results of 2026-11-27"
#: at most this many changed rows listed per section (the count says how many there are)
ROWS_SHOWN = 4


def table_cells(doc: str) -> dict[str, dict[tuple[str, ...], dict[str, str]]]:
    """Per ``## `` section: each table row's cells by column header, keyed by the row's leading
    cells (as many as make the key unique in its table, the table's header included)."""
    out: dict[str, dict[tuple[str, ...], dict[str, str]]] = {}
    section = ""
    rows: list[list[str]] = []

    def flush() -> None:
        if len(rows) >= 3:
            header, body = rows[0], rows[2:]
            width = next(
                (n for n in range(1, len(header) + 1) if len({tuple(r[:n]) for r in body}) == len(body)),
                len(header),
            )
            for r in body:
                key = (" / ".join(header),) + tuple(r[:width])
                out.setdefault(section, {})[key] = dict(zip(header[width:], r[width:], strict=False))
        rows.clear()

    for line in doc.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush()
        if line.startswith("## "):
            section = line[3:].strip()
    flush()
    return out


def _changes(
    old: dict[tuple[str, ...], dict[str, str]], new: dict[tuple[str, ...], dict[str, str]]
) -> list[str]:
    lines = []
    for key, cells in new.items():
        before = old.get(key)
        if before is None:
            continue
        moved = [
            f"{col} {before[col]} -> {val}"
            for col, val in cells.items()
            if col in before and before[col] != val
        ]
        if moved:
            lines.append(f"{' / '.join(key[1:])}: {'; '.join(moved)}")
    return lines


def moved_section(new_doc: str, old_doc: str | None) -> list[str]:
    """The section's lines: per section of ``new_doc``, its changed rows against ``old_doc``."""
    out = [
        HEADING,
        "",
        f"Generated with the rest of this file: each table row of a section that docs/results.md had at "
        f"commit {BASE_COMMIT} (`make results` of 2026-11-27, before docs/reference/metrics.md redefined the metrics) "
        f"against the same row now, cell by cell (`topo/results/moved.py`).",
        "",
    ]
    if old_doc is None:
        return out + [f"(commit {BASE_COMMIT} is not in this clone's history: nothing to compare.)", ""]
    old, new = table_cells(old_doc), table_cells(new_doc)
    for section, rows in new.items():
        if section == HEADING[3:]:
            continue
        if section not in old:
            out.append(f"- **{section}**: new since then.")
            continue
        changes = _changes(old[section], rows)
        # a row is matched under its table's header: a table whose columns changed matches nothing,
        # and "unchanged" would then be a claim nothing checked
        unmatched = sum(key not in old[section] for key in rows)
        apart = f" {unmatched} rows under columns it did not have then, not compared." if unmatched else ""
        if not changes:
            out.append(f"- **{section}**: unchanged ({len(rows) - unmatched} rows).{apart}" if unmatched < len(rows)
                       else f"- **{section}**:{apart}")
            continue
        shown = "; ".join(changes[:ROWS_SHOWN]) + ("; ..." if len(changes) > ROWS_SHOWN else "")
        out.append(f"- **{section}**: {len(changes)} of {len(rows) - unmatched} rows moved. {shown}{apart}")
    gone = [s for s in old if s not in new]
    if gone:
        out.append(f"- No longer in this file: {', '.join(gone)}.")
    return out + [""]


def base_doc(path: str = "docs/results.md") -> str | None:
    """docs/results.md at :data:`BASE_COMMIT`, or None outside a clone with that history."""
    try:
        return subprocess.run(
            ["git", "show", f"{BASE_COMMIT}:{path}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
