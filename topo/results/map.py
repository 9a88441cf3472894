"""docs/map.md: the map of where the law works (issue 21, item 6; ``make map``).

paper-5router and alinea-merge-2 with every rate (playout and R_max too) multiplied by 1, 10, 50
and 500 (2 Mb/s to 1 Gb/s), every link delay set to 0.1, 1, 3, 10 or 50 ms, and the buffers at
200 packets or at one bandwidth-delay product; gains, floor and report interval derived
(topo/analysis/derive.py), BMv2's queues. Each cell is one seeded simulator run, as a Ray task on the
sweep's Ray session (``topo.sweep.execute``); the analysis' verdict for the same file
(topo/analysis/check.py, the loader's warning) is drawn over the measured cells.

Why a packet-hop budget: a cell that would take hours is listed as not run, with its cost, rather
than run too short to mean anything. With the compiled engine a 1 Gb/s cell moves some 100 k
packet-hops per CPU second (docs/performance.md), so every cell of the grid is within it now.

``--rates 500`` runs only the rows of those rate factors and keeps the other cells' results from
the last run's ``results/docs/map.json``; the page then says which rows ran at which commit.

Why its own command (``make map`` -> docs/map.md) and not a section of ``make results``: the map
takes most of an hour of simulator time on two cores, ``make results`` a quarter of one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.analysis.check import check_topology
from topo.analysis.fluid_network import LOSS_PKTS
from topo.file.scaling import scaled_text
from topo.file.schema import load_topology_text
from topo.net.model import Topology

__all__ = ["NAMES", "RATES", "DELAYS_MS", "BUFFERS", "Cell", "cells", "map_sections", "bdp_text"]

ROOT = Path(__file__).resolve().parents[2]
S = 1_000_000_000
NAMES = ("paper-5router", "alinea-merge-2")
RATES = (1, 10, 50, 500)
DELAYS_MS = (0.1, 1, 3, 10, 50)
BUFFERS = ("200", "1bdp")
#: Run length by rate factor (s), and at least this many round trips of one link.
#: At x500 the derived start-up ramp (tens of Mb/s per second with 3 ms links) needs 7-8 s to
#: reach 600 Mb/s, so a 5 s run never filled a buffer.
RUN_S = {1: 40, 10: 20, 50: 10, 500: 20}
MIN_LINK_RTTS = 300
#: Cells whose run would move more packet-hops than this are not run (see the module's docstring).
BUDGET_PACKET_HOPS = 40_000_000
MIN_BUFFER_PKTS = 2
COMMAND = "make map  (hbh map --out docs/map.md)"
SAVED = ROOT / "results" / "docs" / "map.json"
SETTLED_POINTS = 3  # issue 21's criterion: every buffer within 3 points of its target
STARVED = 0.05  # a buffer that never held more than this fraction is not regulated (faster drain than feed)


@dataclasses.dataclass(frozen=True)
class Cell:
    name: str
    rate: int
    delay_ms: float
    buffer: str  # "200" or "1bdp"

    @property
    def label(self) -> str:
        return f"{self.name} x{self.rate} {self.delay_ms:g}ms buffer {self.buffer}"


def cells() -> list[Cell]:
    return [Cell(n, k, d, b) for n in NAMES for b in BUFFERS for k in RATES for d in DELAYS_MS]


def _path_rtt_s(topo: Topology, a: str, b: str) -> float:
    """The longest round-trip propagation delay of the flows that cross link a-b."""
    rtts = [2 * sum(topo.link_between(u, v).delay_ns for u, v in zip(f.path, f.path[1:])) / S
            for f in topo.flows if any({u, v} == {a, b} for u, v in zip(f.path, f.path[1:]))]
    return max(rtts, default=0.0)


def bdp_text(text: str, source: str) -> str:
    """``text`` with every link's buffer (and a host's receive buffer, from its link) set to one
    bandwidth-delay product: the link's rate times the longest round trip of the flows crossing it
    (the classic rule, C x RTT), in packets, at least ``MIN_BUFFER_PKTS``."""
    topo = load_topology_text(text, source)
    bits = 8 * max((f.packet_size for f in topo.flows), default=1000)
    out = text
    for link in topo.links:
        a, b = link.ends
        pkts = max(MIN_BUFFER_PKTS, math.ceil(link.rate_bps * _path_rtt_s(topo, a, b) / bits))
        out, n = re.subn(rf"\{{ends: \[{a}, {b}\]", f"{{ends: [{a}, {b}], buffer: {pkts}", out)
        if n != 1:
            raise ValueError(f"{source}: link {a}-{b} not found once in the file")
        for host in (a, b):
            out = re.sub(rf"(\n  {host}: \{{[^}}]*receive_buffer: )\d+", rf"\g<1>{pkts}", out)
    return out


def cell_text(cell: Cell) -> str:
    """The cell's file (its runs set BMv2's queues on the loaded topology)."""
    text = scaled_text(cell.name, cell.rate, f"{cell.delay_ms:g}ms")
    return bdp_text(text, f"{cell.name}.yaml") if cell.buffer == "1bdp" else text


def cell_topology(cell: Cell) -> Topology:
    t = load_topology_text(cell_text(cell), f"{cell.name}-x{cell.rate}-{cell.delay_ms:g}ms-{cell.buffer}.yaml")
    t.options = dataclasses.replace(t.options, queue_model="bmv2")
    return t


def run_seconds(cell: Cell) -> float:
    return max(RUN_S[cell.rate], MIN_LINK_RTTS * 2 * cell.delay_ms / 1000)


def packet_hops(topo: Topology, seconds: float) -> float:
    """What a run costs: every flow at its bottleneck rate, over its path's hops."""
    total = 0.0
    for f in topo.flows:
        hops = list(zip(f.path, f.path[1:]))
        rate = min(topo.link_between(u, v).rate_bps for u, v in hops)
        total += rate / (8 * f.packet_size) * len(hops) * seconds
    return total


def predicted(topo: Topology, seconds: float) -> tuple[bool, float]:
    """The analysis' verdict, and the packets the laws-together fluid model loses, the flows at the file's
    starts (the map judges the file, not one seed's run: topo/net/starts.py)."""
    checks = check_topology(topo, seconds)
    return all(c.lossless for c in checks), sum(c.network.lost_pkts for c in checks if c.network is not None)


def run_cell(text: str, source: str, seconds: float) -> dict[str, Any]:
    """One cell's run (a Ray task): loss, worst occupancy error over the buffers that fill, peak."""
    from topo.run.runner import run_experiment

    t = load_topology_text(text, source)
    t.options = dataclasses.replace(t.options, queue_model="bmv2")
    try:
        s = run_experiment(t, int(seconds * S), seed=1, plots=False).summary
    except Exception as exc:  # noqa: BLE001 -- one cell's failure is a result of the map, not its end
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
    bufs = s["buffers"]
    filled = {b: v for b, v in bufs.items() if v["max"] > STARVED}
    return {"loss": s["loss"]["total"],
            "worst": max((abs(v["mean"] - v["target"]) for v in filled.values()), default=None),
            "peak": max((v["max"] for v in bufs.values()), default=0.0),
            "goodput_bps": sum(f["goodput_bps"] for f in s["flows"].values())}


def measure(todo: list[tuple[Cell, str, float]], jobs: int | None = None) -> dict[Cell, dict[str, Any]]:
    """Every cell's result, each a Ray task."""
    out: dict[Cell, dict[str, Any]] = {}
    for (cell, _text, _seconds), result in _run_on_ray(todo, jobs):
        out[cell] = result
        print(f"  map: {cell.label}: {result}", file=sys.stderr, flush=True)
    return out


def _run_on_ray(todo: list[tuple[Cell, str, float]],
                jobs: int | None) -> Iterator[tuple[tuple[Cell, str, float], dict[str, Any]]]:
    if not todo:
        return
    import ray

    from topo.sweep.execute import ray_session

    with ray_session(None, jobs, None):
        task = ray.remote(num_cpus=1, max_retries=0)(run_cell)
        # the longest first, so that the last cells to finish are short ones
        order = sorted(todo, key=lambda m: -m[2] * m[0].rate)
        pending = {task.remote(text, f"{cell.label}.yaml", seconds): (cell, text, seconds)
                   for cell, text, seconds in order}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)


def _mark(result: dict[str, Any] | None, lossless: bool) -> str:
    pred = "" if lossless else " †"
    if result is None:
        return f"not run{pred}"
    if "error" in result:
        return f"error{pred}"
    worst = "not filled" if result["worst"] is None else f"{100 * result['worst']:.1f}"
    return f"{result['loss']} / {worst}{pred}"


def _load(saved: Path, plan: list[tuple[Cell, str, float, float, bool]]) -> dict[Cell, dict[str, Any]]:
    """The results a previous ``make map`` saved (``--render``: new text or figure, same runs)."""
    if not saved.exists():
        raise SystemExit(f"{saved}: no saved map; run `make map` first")
    return {Cell(**c): r for c, r in json.loads(saved.read_text())["cells"]}


def _runs(saved: Path) -> dict[str, str]:
    """The commit each row of rate factors was run at (``--rates`` runs some rows only)."""
    data = json.loads(saved.read_text())
    ran = {c["rate"] for c, _r in data["cells"]}
    return data.get("runs") or {str(k): data.get("commit", "unknown") for k in RATES if k in ran}


def _when(runs: dict[str, str]) -> str:
    commits = sorted(set(runs.values()))
    if len(commits) == 1:
        return f"at commit {commits[0]}"
    return "; ".join(f"rows {', '.join('x' + k for k, c in runs.items() if c == commit)} at commit {commit}"
                     for commit in commits)


def map_sections(figures: Path | None = None, jobs: int | None = None, render_only: bool = False,
                 rates: tuple[int, ...] | None = None) -> list[str]:
    plan = []
    model: dict[Cell, float] = {}
    for cell in cells():
        topo = cell_topology(cell)
        seconds = run_seconds(cell)
        cost = packet_hops(topo, seconds)
        lossless, model[cell] = predicted(topo, seconds)
        plan.append((cell, cell_text(cell), seconds, cost, lossless))
    todo = [(c, text, s) for c, text, s, cost, _ in plan if cost <= BUDGET_PACKET_HOPS]
    saved = SAVED
    if render_only:
        results = _load(saved, plan)
    else:
        kept: dict[Cell, dict[str, Any]] = {}
        runs = {str(k): _commit() for k in RATES}
        if rates is not None:  # the other rows come from the last run
            kept = {c: r for c, r in _load(saved, plan).items() if c.rate not in rates}
            runs = {k: c for k, c in _runs(saved).items() if int(k) not in rates} | {str(k): _commit() for k in rates}
            todo = [m for m in todo if m[0].rate in rates]
        print(f"map: {len(todo)} of {len(plan)} cells to run", file=sys.stderr, flush=True)
        results = kept | measure(todo, jobs)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps({"commit": _commit(), "runs": runs,
                                     "cells": [[dataclasses.asdict(c), r] for c, r in results.items()]}, indent=1))
    lines = _tables(plan, results, model)
    if figures is not None:
        from topo.results.map_figure import map_figure

        for name in NAMES:
            png = figures / f"map-{name}.png"
            map_figure(png, name, plan, results, rates=RATES, delays_ms=DELAYS_MS, buffers=BUFFERS)
            lines += [f"![the map of {name}](figures/{png.name})", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = ValueParser(prog="hbh map", description="docs/map.md: where the ALINEA law works (make map)")
    ap.add_argument("--out", default="docs/map.md")
    ap.add_argument("--figures", default="docs/figures")
    ap.add_argument("--jobs", type=int, default=None, help="Ray workers (default: the CPU count)")
    ap.add_argument("--render", action="store_true",
                    help="no runs: render the results the last run saved in results/docs/map.json")
    ap.add_argument("--rates", default=None,
                    help="run only these rate factors (e.g. 500), keeping the other rows of the last run")
    args = ap.parse_args(argv)
    rates = _parse_rates(args.rates, ap) if args.rates else None
    figures = Path(args.figures)
    figures.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    lines = map_sections(figures, args.jobs, args.render, rates)
    minutes = f"{(time.perf_counter() - t0) / 60:.0f} min"
    if args.render:
        when = (f"Runs made by `{COMMAND}` {_when(_runs(SAVED))} (results/docs/map.json), rendered at commit "
                f"{_commit()} by `--render`")
    elif rates:
        when = (f"Generated by `{COMMAND}`, {_when(_runs(SAVED))}; the last rows by `hbh map "
                f"--rates {args.rates}` in {minutes}")
    else:
        when = f"Generated by `{COMMAND}` at commit {_commit()} in {minutes}"
    head = ["# Where the law works: the map", "",
            f"{when} (the simulator, seed 1). The analysis behind the † marks is docs/background/analysis.md's, which also "
            "reads this map (\"Reading the map\"); docs/results.md has the shipped files' own runs.", ""]
    Path(args.out).write_text("\n".join(head + lines[1:]) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _parse_rates(text: str, ap: argparse.ArgumentParser) -> tuple[int, ...]:
    try:
        rates = tuple(int(x) for x in text.split(","))
    except ValueError:
        ap.error(f"--rates {text!r}: give rate factors separated by commas, of {', '.join(map(str, RATES))}")
    bad = [k for k in rates if k not in RATES]
    if bad:
        ap.error(f"--rates: {', '.join(map(str, bad))} not in the map's rate factors {', '.join(map(str, RATES))}")
    return rates


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"



def _tables(plan: list[tuple[Cell, str, float, float, bool]], results: dict[Cell, dict[str, Any]],
            model: dict[Cell, float]) -> list[str]:
    lines = ["## Where the law works: rates, delays and buffers", "",
             "Each shipped file with every rate multiplied (2 Mb/s to 1 Gb/s; playout and R_max too), every link "
             "delay set, and every buffer at 200 packets or at one bandwidth-delay product (the link's rate times "
             "the longest round trip of the flows crossing it, at least 2 packets); gains, floor and report interval "
             "derived (topo/analysis/derive.py); BMv2's queues; seed 1; each cell one simulator run on Ray "
             f"(`topo/results/map.py`). Runs last {', '.join(f'{s} s at x{k}' for k, s in RUN_S.items())}, and at "
             f"least {MIN_LINK_RTTS} round trips of a link. Each cell: packets lost / worst |mean - target| over the "
             "second half in points (over the buffers that fill); \"not filled\": no buffer passed "
             f"{100 * STARVED:g} % in the run, the start-up ramp had not reached the bottleneck's rate (derived gains "
             "ramp by about the same Mb/s per second at every rate, and slower with the longer report interval of "
             "longer delays: docs/background/analysis.md, \"Derived parameters\"). † marks a cell the analysis rules out (the "
             "loader's warning: an unstable settled loop, a buffer without a packet of room above its target for each "
             "link feeding its queue, or the laws together overflowing a buffer in the fluid model of "
             "topo/analysis/fluid_network.py); \"not run\": the run would "
             f"move more than {BUDGET_PACKET_HOPS / 1e6:g} M packet-hops.", ""]
    lines += _grids(plan, "", lambda c, ok: _mark(results.get(c), ok))
    lines += _disagreements(plan, results)
    return lines + _model_tables(plan, results, model)


def _grids(plan: list[tuple[Cell, str, float, float, bool]], suffix: str,
           text: Callable[[Cell, bool], str]) -> list[str]:
    """One table per file and buffer size: a row per rate, a column per delay, ``text`` per cell."""
    lines: list[str] = []
    for name in NAMES:
        for buf in BUFFERS:
            lines += [f"**{name}, buffers {'200 packets' if buf == '200' else 'of 1 BDP'}{suffix}**", "",
                      "| rates | " + " | ".join(f"{d:g} ms" for d in DELAYS_MS) + " |",
                      "|---|" + "---|" * len(DELAYS_MS)]
            for k in RATES:
                row = [(p[0], p[4]) for p in plan if p[0].name == name and p[0].buffer == buf and p[0].rate == k]
                lines.append(f"| x{k} | " + " | ".join(text(c, ok) for c, ok in row) + " |")
            lines.append("")
    return lines


def _model_tables(plan: list[tuple[Cell, str, float, float, bool]], results: dict[Cell, dict[str, Any]],
                  model: dict[Cell, float]) -> list[str]:
    """The laws-together fluid model's loss per cell beside the runs' (docs/background/analysis.md, "The hops together")."""
    lines = ["### The laws together, in the fluid model", "",
             "Packets the fluid model of topo/analysis/fluid_network.py loses in each cell (every law of the file run together "
             "for the cell's duration, the agents' forecast and the hosts' brake included; the analysis calls "
             f"{LOSS_PKTS:g} or more a loss in a buffer, or a peak that leaves less than a packet of room for each "
             "link feeding its queue), then the simulator's from the tables above.", ""]
    lines += _grids(plan, ": model / simulator", lambda c, _ok: f"{model[c]:.0f} / {_loss(results.get(c))}")
    both = [c for c, *_ in plan if c in results and "error" not in results[c]]
    agree = sum(1 for c in both if (model[c] >= LOSS_PKTS) == (results[c]["loss"] > 0))
    lines += [f"The model and the simulator agree on loss or none in {agree} of {len(both)} cells run.", ""]
    return lines


def _loss(result: dict[str, Any] | None) -> str:
    if result is None:
        return "not run"
    return "error" if "error" in result else str(result["loss"])


def _disagreements(plan: list[tuple[Cell, str, float, float, bool]],
                   results: dict[Cell, dict[str, Any]]) -> list[str]:
    """Cells where the sweep and the analysis disagree on loss: listed for docs/background/analysis.md's discussion."""
    both = [(c, ok, results[c]) for c, _t, _s, _cost, ok in plan if c in results and "error" not in results[c]]
    lost_ok = [c.label for c, ok, r in both if ok and r["loss"] > 0]
    clean = [(c, r) for c, ok, r in both if not ok and r["loss"] == 0]
    settled = [c.label for c, r in clean if r["worst"] is not None and r["worst"] <= SETTLED_POINTS / 100]
    lines = [f"Cells the analysis admits but that lost packets: {', '.join(lost_ok) or 'none'}.", "",
             f"Cells the analysis rules out that lost nothing: {len(clean)} of "
             f"{sum(1 for _c, ok, _r in both if not ok)} run; of these, {len(clean) - len(settled)} did not fill "
             f"or did not settle within {SETTLED_POINTS} points (what \"never settles\" in the warning means), and "
             f"these settled: {', '.join(settled) or 'none'}.", ""]
    return lines


if __name__ == "__main__":
    sys.exit(main())
