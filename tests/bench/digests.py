"""Digests of every shipped topology's CSVs in the simulator: the behaviour check of a data-path change.

    python -m tests.bench.digests --duration 3s [--tree DIR] [--only paper-5router capacity-drop] > before.txt

Why: moving per-packet work into the engine (issue 22) must not change one byte of any result.
Run this before and after a change (``--tree`` runs another checkout, e.g. a ``git worktree`` of
main, with this checkout's .venv) and diff the two outputs: one line per topology and CSV file,
its SHA-256, seed 1. ``summary.json`` is left out: it holds wall-clock figures.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def digests(tree: Path, duration: str, seed: int = 1, only: list[str] | None = None) -> list[str]:
    """``topology file sha256`` lines of every topo/*.yaml in ``tree`` (or those named in ``only``, by
    file stem) run with ``hbh run`` (sim)."""
    lines = []
    topos = sorted((tree / "topo").glob("*.yaml"))
    if only:
        missing = sorted(set(only) - {t.stem for t in topos})
        if missing:
            raise SystemExit(f"no topology {', '.join(missing)} in {tree / 'topo'}")
        topos = [t for t in topos if t.stem in only]
    for topo in topos:
        with tempfile.TemporaryDirectory(prefix="digest") as out:
            run = subprocess.run([sys.executable, "-m", "hbh", "run", str(topo), "--duration", duration, "--seed",
                                  str(seed), "--out", out, "--no-plots", "--no-progress", "--backend", "sim"],
                                 cwd=tree, capture_output=True, text=True, check=False)
            if run.returncode:
                lines.append(f"{topo.name} FAILED {run.returncode}: {run.stderr.strip().splitlines()[-1:]}")
                continue
            for csv in sorted(Path(out).rglob("*.csv")):
                lines.append(f"{topo.name} {csv.relative_to(out)} {hashlib.sha256(csv.read_bytes()).hexdigest()}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.digests", description=__doc__.splitlines()[0])
    p.add_argument("--duration", default="3s")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tree", type=Path, default=ROOT, help="checkout to run (default: this one)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these topologies (file stems of topo/*.yaml), "
                   "e.g. a long run of a few")
    args = p.parse_args(argv)
    print("\n".join(digests(args.tree.resolve(), args.duration, args.seed, args.only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
