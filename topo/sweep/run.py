"""Planning and running a sweep: the library ``hbh sweep`` and ``hbh compare --seeds`` call.

    sweep = plan_sweep("topo/paper-1router.yaml", ["alinea.o_max=0.7,0.9"], "alinea", "1-10", "30s")
    result = run_sweep(sweep, Path("results/sweep"))          # local Ray; serial=True: in-process

Why every point is resolved in :func:`plan_sweep`: a bad value anywhere in the grid is refused
before the first run starts, with the loader's own message, not after an hour of runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controlplane.units import UnitError, parse_duration_ns
from topo.file.points import Base, Point, grid, load_base, point_topology
from topo.file.settings import Setting, SweepError, parse_controls, parse_seeds, parse_settings
from topo.net.model import CONTROLS
from topo.sweep.code import code_digest
from topo.sweep.execute import Result, ray_runs, serial_runs
from topo.sweep.report import aggregate, metrics, plot_sweep, write_runs_csv, write_sweep_md
from topo.sweep.store import Store, write_atomic
from topo.sweep.task import RunSpec, run_key

__all__ = ["Sweep", "SweepResult", "plan_sweep", "run_sweep"]


@dataclass
class Sweep:
    """A validated sweep: the base file, the grid of points, the seeds and the run length."""

    base: Base
    settings: list[Setting]
    controls: tuple[str, ...] | None
    seeds: tuple[int, ...]
    duration_ns: int
    points: list[Point]

    @property
    def params(self) -> list[str]:
        """runs.csv's parameter columns: one per ``--set``, then control."""
        return [s.name for s in self.settings] + ["control"]

    def runs(self, backend: str = "sim") -> list[RunSpec]:
        """Every run, points in grid order, seeds fastest: the order of runs.csv's rows."""
        return [RunSpec(run_key(self.base.text, p, seed, self.duration_ns, backend), p, seed, self.duration_ns, backend)
                for p in self.points for seed in self.seeds]


@dataclass
class SweepResult:
    rows: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    ran: int  # runs executed by this call
    skipped: int  # runs already finished in the directory (by this code), reused
    files: list[Path] = field(default_factory=list)
    stale: int = 0  # runs stored by other code, run again (counted in ``ran``)


def plan_sweep(topology: str | Path, sets: list[str], controls: str | None, seeds: str,
               duration: str) -> Sweep:
    """Parse and validate everything; SweepError/TopologyError (one line) on the first mistake."""
    settings = parse_settings(sets)
    chosen = parse_controls(controls, CONTROLS)
    seed_list = parse_seeds(seeds)
    try:
        duration_ns = parse_duration_ns(duration, "--duration")
    except UnitError as exc:
        raise SweepError(str(exc)) from None
    if duration_ns <= 0:
        raise SweepError(f"--duration: must be > 0, got {duration!r}")
    base = load_base(topology)
    points = grid(settings, chosen)
    for point in points:
        point_topology(base, point)
    return Sweep(base, settings, chosen, seed_list, duration_ns, points)


def run_sweep(sweep: Sweep, out: Path, *, serial: bool = False, address: str | None = None,
              jobs: int | None = None, progress: bool = True, plots: bool = True, command: str = "",
              ray_temp_root: Path | None = None, backend: str = "sim") -> SweepResult:
    """Run every run not already finished in ``out``; write runs.csv, sweep.md and figures.

    ``backend="netns"`` runs are always serial: each takes real time and the whole machine's
    namespaces, so two at once would measure each other."""
    store = Store(out)
    out.mkdir(parents=True, exist_ok=True)
    specs = sweep.runs(backend)
    serial = serial or backend != "sim"
    todo = [s for s in specs if store.finished(s.key) is None]
    stale = sum(store.stale(s.key) for s in todo)
    failures: list[dict[str, Any]] = []
    source, text = sweep.base.source, sweep.base.text
    results = serial_runs(source, text, todo) if serial else \
        ray_runs(source, text, todo, address=address, jobs=jobs, temp_root=ray_temp_root)
    bar = _bar(len(specs), len(specs) - len(todo)) if progress else None
    try:
        for spec, result in _closing(results):
            record = _record(sweep, spec, result)
            if "summary" in result:
                store.save(record)
            else:
                store.save_failure(record)
                failures.append(record)
                print(f"hbh sweep: run failed: {record['label']}, seed {spec.seed}: {result['error']}",
                      file=sys.stderr)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"{len(failures)} failed" if failures else "")
    finally:
        if bar is not None:
            bar.close()
    rows = [_row(sweep, store.finished(s.key)) for s in specs if store.finished(s.key) is not None]
    files = _write_outputs(sweep, out, rows, failures, plots, command)
    return SweepResult(rows, failures, ran=len(todo), skipped=len(specs) - len(todo), files=files, stale=stale)


def _closing(results: Iterator[Result]) -> Iterator[Result]:
    """Iterate and always close the generator (so Ray shuts down on Ctrl-C or an error here)."""
    try:
        yield from results
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()


def _record(sweep: Sweep, spec: RunSpec, result: dict[str, Any]) -> dict[str, Any]:
    return {"key": spec.key, "code": code_digest(), "topology": sweep.base.topo.name, "source": sweep.base.source,
            "params": spec.point.params(), "label": spec.point.label(), "seed": spec.seed,
            "duration_s": spec.duration_ns / 1e9, **result}


def _row(sweep: Sweep, record: dict[str, Any] | None) -> dict[str, Any]:
    assert record is not None
    summary = record["summary"]
    params = dict(record["params"])
    if "control" not in params:  # no --controls: the flows' own
        params["control"] = "+".join(dict.fromkeys(f["control"] for f in summary["flows"].values()))
    return {"key": record["key"], "topology": record["topology"], **params, "seed": record["seed"],
            "duration_s": record["duration_s"], **metrics(summary)}


def _write_outputs(sweep: Sweep, out: Path, rows: list[dict[str, Any]], failures: list[dict[str, Any]],
                   plots: bool, command: str) -> list[Path]:
    params = sweep.params
    write_runs_csv(out / "runs.csv", rows, params)
    agg = aggregate(rows, params)
    write_sweep_md(out / "sweep.md", sweep.base.topo.name, agg, params, failures, command or "hbh sweep")
    write_atomic(out / "sweep.json", json.dumps(
        {"topology": sweep.base.source, "set": [s.text for s in sweep.settings],
         "controls": list(sweep.controls) if sweep.controls else None, "seeds": list(sweep.seeds),
         "duration_s": sweep.duration_ns / 1e9, "runs": len(rows) + len(failures)}, indent=1) + "\n")
    files = [out / "runs.csv", out / "sweep.md", out / "sweep.json"]
    if plots and rows:
        swept = [s.name for s in sweep.settings] or ["control"]
        values = {s.name: list(s.values) for s in sweep.settings}
        values["control"] = list(dict.fromkeys(r["control"] for r in rows))
        files += plot_sweep(out, agg, params, swept, values)
    return files


def _bar(total: int, done: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="run", desc="sweep", file=sys.stderr, disable=None,
                mininterval=0.5)
