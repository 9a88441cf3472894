"""docs/results.md's section on capacity-drop's reaction time over the drop's phase (called by
``topo.results.doc``), and, as ``hbh results-reaction --latencies 0.5ms 1ms``, the
reaction over one whole cycle of the drop at each control latency (docs/howto/netns.md's table).

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
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.file.schema import load_topology
from topo.net.model import Topology
from topo.net.stats import percentile
from topo.run.runner import run_experiment

__all__ = ["reaction_sections", "PHASES_MS", "reaction_runs", "latency_scan", "main"]

ROOT = Path(__file__).resolve().parents[2]

S = 1_000_000_000
MS = 1_000_000
#: one cycle of the first extra packet at this drop (1.2 Mb/s into 1 Mb/s: a packet per 40 ms)
CYCLE_MS = 40
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


def latency_scan(base: Topology, latency_ns: int, step_ms: int = 2, model: str = "bmv2") -> list[float | None]:
    """R2's reaction (report intervals) with the drop at every ``step_ms`` of one cycle, at one
    control latency: the latency moves where the settled loop's departures sit, and so the phase."""
    t0 = dataclasses.replace(base, options=dataclasses.replace(base.options, control_latency_ns=latency_ns))
    out: list[float | None] = []
    for off in range(0, CYCLE_MS, step_ms):
        t = _at_phase(t0, model, off)
        result = run_experiment(t, DROP_NS + off * MS + AFTER_NS, seed=1, plots=False)
        (ev,) = result.summary["events"]
        out.append(ev.get("reaction_intervals"))
    return out


def main(argv: list[str] | None = None) -> int:
    from controlplane.units import UnitError, parse_duration_ns

    p = ValueParser(prog="hbh results-reaction",
                                description="capacity-drop's reaction over one cycle of the drop, per control latency")
    p.add_argument("--latencies", nargs="+", default=["0.5ms", "1ms", "2ms", "4ms"], help="control latencies")
    p.add_argument("--step-ms", type=int, default=2, help="the drop's phase step, ms (a cycle is 40 ms)")
    p.add_argument("--queue-model", choices=MODELS, default="bmv2")
    args = p.parse_args(argv)
    if not 0 < args.step_ms <= CYCLE_MS:
        p.error(f"--step-ms must be in 1..{CYCLE_MS}")
    try:
        latencies = [(text, parse_duration_ns(text, "--latencies")) for text in args.latencies]
    except UnitError as exc:
        p.error(str(exc))
    base = load_topology(ROOT / "topo" / "capacity-drop.yaml")
    print("| `control_latency` | min | mean | max | phases over 3 |")
    print("|---|---:|---:|---:|---:|")
    for text, ns in latencies:
        print(f"  control latency {text} ...", file=sys.stderr, flush=True)
        got = latency_scan(base, ns, args.step_ms, args.queue_model)
        known = [r for r in got if r is not None]
        if not known:
            print(f"| {text} | - | - | - | no reaction |")
            continue
        print(f"| {text} | {min(known):.2f} | {statistics.mean(known):.2f} | {max(known):.2f} | "
              f"{sum(r > 3 for r in known) + len(got) - len(known)} of {len(got)} |", flush=True)
    return 0


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def reaction_sections(base: Topology | None = None) -> list[str]:

    base = base or load_topology(ROOT / "topo" / "capacity-drop.yaml")
    runs = reaction_runs(base)
    head = "| queue model | " + " | ".join(f"+{o} ms" for o in PHASES_MS) + " | p50 | max | loss |"
    lines = ["## capacity-drop: the reaction over the drop's phase", "",
             "The drop of capacity-drop (R3-R4 from 3 to 1 Mb/s) at 16 s plus the offset in each column, on "
             "BMv2's queues and on the shaper, each run 3 s past the drop (seed 1; `topo/results/reaction.py`). "
             "Each cell: R2's reaction in report intervals (its rate 5 % below its value at the drop), and in "
             "brackets the first report that showed R3's buffer above its level at the drop: the time the buffer "
             "takes to gain a packet (one per 40 ms at this drop) plus the report's way back, which the drop's "
             "phase decides. On BMv2's queues R2 cuts earlier, at the first report whose two newest departures "
             "from R3's buffer show the drop (docs/background/alinea.md, \"The newest drain\"); the shaper's law has no "
             "drain to follow and cuts at the detection. p50: the nearest rank over the phases that reacted, as every "
             "percentile here (docs/reference/metrics.md, \"Percentiles\"): of eight, the lower of the two middle "
             "ones, not their mean.", "",
             head, "|" + "---|" * (len(PHASES_MS) + 4)]
    for model, rows in runs.items():
        reactions = [r["reaction"] for r in rows if r["reaction"] is not None]
        cells = [f"{_fmt(r['reaction'])} ({_fmt(r['detection'])})" for r in rows]
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {_fmt(percentile(reactions, 0.5) if reactions else None)}"
                     f" | {_fmt(max(reactions) if reactions else None)} | {sum(r['loss'] for r in rows)} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
