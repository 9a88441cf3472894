"""`hbh demo`: hop-by-hop ALINEA against the end-to-end controls on one network bottleneck that
halves, then the paper's five-router line beside what Chen et al. report.

Part 1 runs ``topo/bottleneck-drop.yaml`` (3 Mb/s falling to 1.5 Mb/s at 20 s, a network queue as
the bottleneck, so every control gets its signal: delay, loss or ALINEA's reports) once per control --
alinea, cvihis-rtm, cvihis-blm, tcp-cubic, tfrc, ledbat, gcc -- through ``hbh compare`` in the simulator
(every router is p4switch running ``p4src/alinea.p4``; one seed, 40 s each by default) and prints the
comparison table. Part 2 runs ``topo/paper-5router.yaml`` under ALINEA and prints its numbers beside
the paper's. The whole demo stays under three minutes of wall time on a 2-core machine.

Run again with the same --out, --duration and --seed, part 1 reuses the runs stored in OUT/runs
when this code made them (topo/sweep/code.py: a digest of the sources), and says so; --rerun
simulates them again (``make demo DEMO_ARGS=--rerun``). Part 2 always runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from controlplane.units import UnitError, parse_duration_ns

ROOT = Path(__file__).resolve().parents[1]
TOPOLOGY = ROOT / "topo" / "bottleneck-drop.yaml"
PAPER = ROOT / "topo" / "paper-5router.yaml"
CONTROLS = "alinea,cvihis-rtm,cvihis-blm,tcp-cubic,tfrc,ledbat,gcc"

__all__ = ["register", "paper_comparison", "CONTROLS"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="ALINEA against the end-to-end controls on one bottleneck, then the paper's line",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", default="40s", help="virtual run time of each run (default 40s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="results/demo", help="results directory (report.md, runs, PNG)")
    p.add_argument("--rerun", action="store_true",
                   help="simulate every control again, even those whose runs OUT/runs holds from this code")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from topo.experiments.compare import compare
    from topo.experiments.compare_report import format_table
    from topo.file.schema import load_topology
    from topo.run.runner import format_summary, run_experiment

    try:
        duration = parse_duration_ns(args.duration, "--duration")
    except UnitError as exc:
        print(f"hbh demo: {exc}", file=sys.stderr)
        return 2
    if duration <= 0 or args.seed < 0:
        print(f"hbh demo: --duration {args.duration} / --seed {args.seed}: must be > 0 / >= 0", file=sys.stderr)
        return 2
    topo = load_topology(TOPOLOGY)
    print(f"hbh demo: {topo.description}", flush=True)
    print(what_runs(Path(args.out), args.duration, args.seed, args.rerun), flush=True)
    result = compare(str(TOPOLOGY), CONTROLS, str(args.seed), args.duration, Path(args.out),
                     serial=True, progress=True,
                     command=f"hbh demo --duration {args.duration} --seed {args.seed} --out {args.out}")
    if result.failures or not result.summaries["alinea"]:
        print(f"hbh demo: {result.failures} runs failed (see {args.out}/sweep.md)", file=sys.stderr)
        return 1
    print()
    print(format_table(result.controls, result.metrics, result.reasons))
    paper = load_topology(PAPER)
    print(f"\nhbh demo: {paper.description}: ALINEA, {duration / 1e9:g} s ...", flush=True)
    alinea = run_experiment(paper, duration, args.seed, Path(args.out) / "paper-5router", plots=False).summary
    print()
    print(format_summary(alinea))
    print()
    print(paper_comparison(paper, alinea))
    print(f"\nreport and figures: {args.out}/ (report.md, compare_occupancy.png, compare_rates.png, "
          "compare_delay.png, runs/*.json; paper-5router/)")
    return 0


def stored_runs(out: Path, duration: str, seed: int) -> dict[str, tuple[str, str]]:
    """Control -> (its run's key, "reuse" | "stale" | "run") for the runs part 1 makes: "reuse" when
    OUT/runs holds the run from this code and the same inputs, "stale" when other code made it (it
    runs again), "run" when none is stored."""
    from topo.sweep.run import plan_sweep
    from topo.sweep.store import Store

    store = Store(out)
    return {spec.point.control or "": (spec.key, "reuse" if store.finished(spec.key) is not None else
                                       "stale" if store.stale(spec.key) else "run")
            for spec in plan_sweep(str(TOPOLOGY), [], CONTROLS, str(seed), duration).runs()}


def what_runs(out: Path, duration: str, seed: int, rerun: bool) -> str:
    """What part 1 is about to do, said before it does it; ``rerun`` first removes its stored runs."""
    from topo.sweep.store import Store

    runs = stored_runs(out, duration, seed)
    if rerun:
        for key, _ in runs.values():
            Store(out).forget(key)
        runs = {c: (key, "run") for c, (key, _) in runs.items()}
    reuse = [c for c, (_, s) in runs.items() if s == "reuse"]
    stale = [c for c, (_, s) in runs.items() if s == "stale"]
    todo = [c for c, (_, s) in runs.items() if s != "reuse"]
    lines = []
    if reuse:
        lines.append(f"reusing the runs stored in {out}/runs for {', '.join(reuse)}: made by this code from the "
                     f"same topology, duration ({duration}) and seed ({seed}); --rerun (make demo "
                     "DEMO_ARGS=--rerun) simulates them again")
    if stale:
        lines.append(f"the runs stored in {out}/runs for {', '.join(stale)} were made by other code: simulating "
                     "them again")
    if todo:
        lines.append(f"simulating {duration} of virtual time for {', '.join(todo)}, seed {seed}, one after "
                     "another (p4switch runs p4src/alinea.p4 at every router) ...")
    return "\n".join(lines)


def paper_comparison(topo: Any, s: dict[str, Any]) -> str:
    """The paper's reported behaviour (SOURCES.md A) next to this run's numbers."""
    buffers = s["buffers"].values()
    worst = max(abs(b["mean"] - b["target"]) for b in buffers)
    spread = max(b["std"] for b in buffers)
    peak = max(b["max"] for b in buffers)
    fast = [f"{u}->{v}" for link in topo.links if link.rate_bps > 2e6
            for u, v in (link.ends, link.ends[::-1]) if (u, v) in topo.law]
    above = [r["max_bps"] for name, r in s["rates"].items() if name in fast and r["max_bps"] > 2e6]
    flow = next(iter(s["flows"].values()))
    rows = [
        ("occupancy close to the targets, small variation",
         f"mean within {100 * worst:.2f} points of target at every buffer, std <= {100 * spread:.2f} points"),
        ("no packet loss (no buffer reaches 100 %)",
         f"{s['loss']['total']} packets lost; highest occupancy {100 * peak:.1f} %"),
        ("rates rise fast at start, then settle near the optimum",
         f"every buffer within 3 points of its target after {_seconds(s['convergence_s'])}; "
         f"goodput {flow['goodput_bps'] / 1e6:.3f} Mb/s"),
        ("nodes behind the 3 Mb/s links may send above 2 Mb/s for a while",
         f"{'yes' if above else 'no'}: laws on {', '.join(fast) or '-'} "
         f"may reach {max(above, default=0) / 1e6:.2f} Mb/s"),
        ("smoother end-to-end delay than TCP",
         f"one-way delay p50 {flow['owd_ms']['p50']:.0f} ms, p99 {flow['owd_ms']['p99']:.0f} ms "
         "(queueing behind 70-95 % targets)"),
    ]
    width = max(len(a) for a, _ in rows)
    lines = [f"{'Chen et al. report':<{width}}  this run (seed {s.get('seed')})",
             f"{'-' * width}  {'-' * 40}"]
    lines += [f"{a:<{width}}  {b}" for a, b in rows]
    return "\n".join(lines)



def _seconds(value: float | None) -> str:
    return "never (within the run)" if value is None else f"{value:.2f} s"
