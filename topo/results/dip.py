"""docs/results.md's section on a dip that ends: a downstream link slows for a fraction of a second
and comes back (called by ``topo.results.doc`` with the reaction section).

Why: in real time a software switch short of CPU forwards slower for 0.1-0.3 s and then catches
up (seen on this two-core machine: R4's drain fell from 1.2 to 0.5 Mb/s for 0.15 s). On BMv2's
queues a hop that cuts for such a dip stamps the cut on every packet it queues before its next
command, its own queue freezes for as long, and the hop behind it sees a fall in turn. The
simulator's switches never stall, so the dip is made with two link-rate events on R4-R5 of
capacity-drop: the same drain seen from R3, deterministic. docs/background/alinea.md, "A fall that may end",
says what the agents do about it.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from topo.file.schema import load_topology
from topo.net.model import Event, Topology
from topo.run.runner import run_experiment

__all__ = ["DIPS", "dip_runs", "dip_sections"]

ROOT = Path(__file__).resolve().parents[2]

S = 1_000_000_000
MS = 1_000_000
#: (start s, length ms, rate b/s) of R4-R5's dip; the line has settled by 8 s (seed 1)
DIPS = ((8.4, 150, 500_000), (8.4, 250, 400_000), (12.0, 300, 300_000))
DURATION_NS = 20 * S
#: the buffers' error is their mean over this last stretch of the run
TAIL_NS = 5 * S
MODELS = ("bmv2", "shaper")


def _with_dip(base: Topology, model: str, start_s: float, length_ms: int, rate_bps: int) -> Topology:
    link = ("R4", "R5")
    before = next(lk.rate_bps for lk in base.links if {lk.a, lk.b} == set(link))
    at = int(start_s * S)
    events = [Event(at_ns=at, kind="link_rate", link=link, rate_bps=float(rate_bps)),
              Event(at_ns=at + length_ms * MS, kind="link_rate", link=link, rate_bps=float(before))]
    return dataclasses.replace(base, options=dataclasses.replace(base.options, queue_model=model), events=events)


def _tail_error(result: Any) -> tuple[str, float]:
    """The buffer furthest from its target over the run's last TAIL_NS (points), and that error."""
    worst, err = "-", 0.0
    rows = result.recorder.laws
    for pair in sorted({(r.node, r.toward) for r in rows}):
        tail = [r for r in rows if (r.node, r.toward) == pair and r.t_ns >= DURATION_NS - TAIL_NS and r.capacity]
        if not tail:
            continue
        mean = sum(r.occupancy / r.capacity for r in tail) / len(tail)
        e = 100 * abs(mean - tail[-1].o)
        if e > err:
            worst, err = f"{pair[1]}<-{pair[0]}", e
    return worst, err


def _deepest_cut(result: Any, after_ns: int) -> float:
    """The lowest rate a switch's law set after the dip began (b/s)."""
    rates = [r.rate_bps for r in result.recorder.laws if r.t_ns >= after_ns and r.node.startswith("R")]
    return min(rates) if rates else 0.0


def dip_runs(base: Topology) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for model in MODELS:
        rows = []
        for start, length, rate in DIPS:
            print(f"  capacity-drop, {model}, R4-R5 at {rate / 1e6:g} Mb/s for {length} ms ...", file=sys.stderr,
                  flush=True)
            result = run_experiment(_with_dip(base, model, start, length, rate), DURATION_NS, seed=1, plots=False)
            worst, err = _tail_error(result)
            rows.append({"start_s": start, "length_ms": length, "rate_bps": rate,
                         "loss": result.summary["loss"]["total"], "worst": worst, "error": err,
                         "deepest": _deepest_cut(result, int(start * S))})
        out[model] = rows
    return out


def dip_sections(base: Topology | None = None) -> list[str]:

    base = base or load_topology(ROOT / "topo" / "capacity-drop.yaml")
    runs = dip_runs(base)
    lines = ["## capacity-drop: a dip that ends", "",
             "capacity-drop without its drop; instead R4-R5 slows for a moment and comes back, as a software "
             "switch short of CPU does (`topo/results/dip.py`, 20 s, seed 1). Each row: packets lost, the buffer "
             "furthest from its target over the last 5 s and by how many points, and the lowest rate any "
             "switch's law set after the dip began.", "",
             "| queue model | dip of R4-R5 | lost | furthest off target, last 5 s | lowest rate set |",
             "|---|---|---|---|---|"]
    for model, rows in runs.items():
        for r in rows:
            lines.append(f"| {model} | {r['rate_bps'] / 1e6:g} Mb/s for {r['length_ms']} ms at {r['start_s']:g} s | "
                         f"{r['loss']} | {r['worst']}: {r['error']:.1f} | {r['deepest'] / 1e3:.0f} kb/s |")
    lines.append("")
    return lines
