"""docs/results.md's section on capacity-drop's reaction time over the drop's phase (called by
``topo.results_doc``).

Why: the reaction to a capacity drop is the time until the hop feeding the congested buffer cuts
its rate. The hop learns of the drop from the buffer's first extra packet, and when that packet
shows depends on where in the packet cycle the drop falls: after a 3 -> 1 Mb/s drop under 1.2 Mb/s
of traffic the buffer gains one packet per 40 ms, four report intervals. One run measures one
phase; this section moves the drop across one cycle, on both queue models, and splits each
reaction into its detection (the first report that shows the buffer above its level at the
drop) and what the agent adds after it.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from typing import Any

from topo.model import Topology
from topo.runner import run_experiment
from topo.schema import load_topology

__all__ = ["reaction_sections", "PHASES_MS", "reaction_runs"]

S = 1_000_000_000
MS = 1_000_000
#: the drop at 16 s plus these offsets (one 40 ms cycle of the first extra packet), 3 s after it
DROP_NS = 16 * S
PHASES_MS = (0, 5, 10, 15, 20, 25, 30, 35)
AFTER_NS = 3 * S
MODELS = ("bmv2", "shaper")


def _at_phase(base: Topology, model: str, offset_ms: int) -> Topology:
    t = dataclasses.replace(base, options=dataclasses.replace(base.options, queue_model=model))
    (ev,) = base.events
    t.events = [dataclasses.replace(ev, at_ns=DROP_NS + offset_ms * MS)]
    return t


def _detection_s(rows: list[Any], at_ns: int, regulator: str, buffer_node: str) -> float | None:
    """Time from the drop to the first report the regulator got that shows its buffer above the
    level of the last report before the drop."""
    mine = [r for r in rows if r.node == regulator and r.toward == buffer_node]
    before = [r for r in mine if r.t_ns <= at_ns]
    if not before:
        return None
    level = before[-1].occupancy
    hit = next((r for r in mine if r.t_ns > at_ns and r.occupancy > level), None)
    return None if hit is None else (hit.t_ns - at_ns) / 1e9


def reaction_runs(base: Topology) -> dict[str, list[dict[str, Any]]]:
    """Per queue model, one row per phase: reaction and detection (report intervals), loss."""
    out: dict[str, list[dict[str, Any]]] = {}
    for model in MODELS:
        rows = []
        for off in PHASES_MS:
            t = _at_phase(base, model, off)
            print(f"  capacity-drop, {model}, drop at +{off} ms ...", file=sys.stderr, flush=True)
            result = run_experiment(t, DROP_NS + off * MS + AFTER_NS, seed=1, plots=False)
            (ev,) = result.summary["events"]
            interval_s = ev["reaction_s"] / ev["reaction_intervals"] if ev.get("reaction_intervals") else None
            seen = _detection_s(result.recorder.laws, t.events[0].at_ns, ev["regulator"], ev["buffer"].split("<-")[0])
            rows.append({"offset_ms": off, "reaction": ev.get("reaction_intervals"),
                         "detection": None if seen is None or not interval_s else round(seen / interval_s, 2),
                         "loss": result.summary["loss"]["total"], "peak": ev.get("max_occupancy_after")})
        out[model] = rows
    return out


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def reaction_sections(base: Topology | None = None) -> list[str]:
    from topo.results_doc import ROOT

    base = base or load_topology(ROOT / "topo" / "capacity-drop.yaml")
    runs = reaction_runs(base)
    head = "| queue model | " + " | ".join(f"+{o} ms" for o in PHASES_MS) + " | median | max | loss |"
    lines = ["## capacity-drop: the reaction over the drop's phase", "",
             "The drop of capacity-drop (R3-R4 from 3 to 1 Mb/s) at 16 s plus the offset in each column, on "
             "BMv2's queues and on the shaper, each run 3 s past the drop (seed 1; `topo/results_reaction.py`). "
             "Each cell: R2's reaction in report intervals (its rate 5 % below its value at the drop), and in "
             "brackets the first report that showed R3's buffer above its level at the drop. R2 cuts at that "
             "report, so the reaction is its detection: the time the buffer takes to gain a packet (one per "
             "40 ms at this drop) plus the report's way back, which the drop's phase decides.", "",
             head, "|" + "---|" * (len(PHASES_MS) + 4)]
    for model, rows in runs.items():
        reactions = [r["reaction"] for r in rows if r["reaction"] is not None]
        cells = [f"{_fmt(r['reaction'])} ({_fmt(r['detection'])})" for r in rows]
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {_fmt(statistics.median(reactions) if reactions else None)}"
                     f" | {_fmt(max(reactions) if reactions else None)} | {sum(r['loss'] for r in rows)} |")
    lines.append("")
    return lines
