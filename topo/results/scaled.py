"""docs/results.md's section on derived parameters at other rates and delays (called by
``topo.results.doc``): issue 21's question, what a user gets who edits only the link rates (with
the playout and R_max that follow) or the delays, and leaves the gains out.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from topo.file.scaling import scaled_topology
from topo.run.runner import run_experiment

__all__ = ["CASES", "scaled_sections"]

S = 1_000_000_000
#: (file, rate factor, link delay or None, seconds); all on BMv2's queues. capacity-drop at x50
#: runs 20 s: its start-up ramp takes about 4 s at that rate, and with 10 s the steady window
#: (the second half of the time before the drop, 2.5-5 s) measured the ramp, not the loop
CASES = (("paper-1router", 10, None, 20), ("paper-1router", 50, None, 8), ("paper-1router", 1, "50ms", 60),
         ("paper-5router", 10, None, 20), ("paper-5router", 50, None, 10), ("capacity-drop", 10, None, 30),
         ("capacity-drop", 50, None, 20),
         ("alinea-merge-2", 10, None, 20), ("alinea-merge-2", 50, None, 10))
#: a buffer that never held more than this (fraction) sits behind a faster link than its feed: not regulated
STARVED = 0.05


def _run(name: str, k: int, delay: str | None, seconds: int) -> dict[str, Any]:
    t = scaled_topology(name, k, delay)
    t.options = dataclasses.replace(t.options, queue_model="bmv2")
    if t.events:  # capacity-drop: the drop in the middle of the shorter run
        t.events = [dataclasses.replace(ev, at_ns=seconds * S // 2) for ev in t.events]
    print(f"  {name} x{k}{' ' + delay if delay else ''} ({seconds} s) ...", file=sys.stderr, flush=True)
    s = run_experiment(t, seconds * S, seed=1, plots=False).summary
    bufs = s["buffers"]
    filled = {b: v for b, v in bufs.items() if v["max"] > STARVED}
    return {"loss": s["loss"]["total"], "starved": sorted(set(bufs) - set(filled)),
            "worst": max(abs(v["mean"] - v["target"]) for v in filled.values()),
            "peak": max(v["max"] for v in bufs.values()),
            "goodput": sum(f["goodput_bps"] for f in s["flows"].values())}


def scaled_sections() -> list[str]:
    lines = ["## Derived parameters at other rates and delays", "",
             "Each shipped file with every rate (playout and R_max too) multiplied, or every link delay set, "
             "and its gains, floor and report interval left out, so that topo/analysis/derive.py derives them "
             "(docs/background/analysis.md, \"Derived parameters\"); on BMv2's queues, seed 1 (`topo/results/scaled.py`). "
             "Worst error: the largest |mean - target| over the second half, in points, over the buffers that "
             "fill (a buffer fed by a slower link than its own drain is never regulated: listed apart). "
             "capacity-drop's drop comes at half the run.", "",
             "| file | rates | link delay | run | loss | worst error | highest peak | goodput | never filled |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, k, delay, seconds in CASES:
        r = _run(name, k, delay, seconds)
        lines.append(f"| {name} | x{k} | {delay or 'as shipped'} | {seconds} s | {r['loss']} | "
                     f"{100 * r['worst']:.1f} | {100 * r['peak']:.1f} % | {r['goodput'] / 1e6:.3f} Mb/s | "
                     f"{', '.join(r['starved']) or '-'} |")
    lines.append("")
    return lines
