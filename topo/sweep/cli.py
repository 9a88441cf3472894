"""``hbh sweep TOPO --set ... --controls ... --seeds ... --duration ... --out DIR``.

Exit codes: 0 every run finished; 1 some runs failed (the others are in the outputs; re-run
to retry them); 2 the sweep's definition is wrong (nothing ran).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from topo.file.schema import TopologyError
from topo.file.settings import SweepError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="parameter sweeps and many-seed runs (Ray or serial), resumable",
        description="Run the cartesian product of --set values x --controls, each for every seed, in the "
                    "simulator (docs/howto/sweeps.md). Writes DIR/runs.csv, DIR/sweep.md, DIR/fig_*.png; re-running "
                    "the same command only runs what is missing.")
    p.add_argument("topology", help="topology file, e.g. topo/paper-1router.yaml")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="TARGET.KEY=V1,V2",
                   help="a swept parameter, e.g. alinea.o_max=0.5,0.7 or alinea[toward=R1].interval=5ms,10ms, "
                        "link[R1-H2].rate=1Mbps,2Mbps, flow[f1].r_max=..., node[H2].playout=..., "
                        "options.report_loss=0,0.1 (repeatable)")
    p.add_argument("--controls", default=None, help="replace every flow's control, one point per control "
                                                    "(e.g. alinea,fixed,tcp-reno: tcp-CC is TCP with cc CC)")
    p.add_argument("--seeds", default="1", help="seeds: N, N-M or a comma list (default 1)")
    p.add_argument("--duration", default="30s", help="virtual time of each run (default 30s)")
    p.add_argument("--out", required=True, help="results directory (resumable)")
    p.add_argument("--address", default=None, help="join this Ray cluster (e.g. HEAD:6379) instead of "
                                                   "starting a local one")
    p.add_argument("--serial", action="store_true", help="no Ray: run in this process, one after another")
    p.add_argument("--jobs", type=int, default=None, help="local Ray: number of workers (default: CPU count)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from topo.sweep.run import plan_sweep, run_sweep

    try:
        if args.jobs is not None and args.jobs < 1:
            raise SweepError(f"--jobs {args.jobs}: must be >= 1")
        if args.serial and (args.address or args.jobs):
            raise SweepError("--serial runs without Ray: drop --address/--jobs")
        sweep = plan_sweep(args.topology, args.sets, args.controls, args.seeds, args.duration)
    except (SweepError, TopologyError) as exc:
        print(f"hbh sweep: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    total = len(sweep.points) * len(sweep.seeds)
    print(f"hbh sweep: {len(sweep.points)} points x {len(sweep.seeds)} seeds = {total} runs "
          f"({'serial' if args.serial else 'Ray ' + (args.address or 'local')}), results in {out}/",
          file=sys.stderr)
    command = _command(args)
    try:
        result = run_sweep(sweep, out, serial=args.serial, address=args.address, jobs=args.jobs,
                           progress=not args.no_progress, plots=not args.no_plots, command=command)
    except SweepError as exc:  # Ray could not start or be joined
        print(f"hbh sweep: {exc}", file=sys.stderr)
        return 2
    stale = f" ({result.stale} of them stored in {out}/runs by other code)" if result.stale else ""
    reused = f", reused {result.skipped} (stored in {out}/runs by this code, same inputs)" if result.skipped else ""
    print(f"ran {result.ran} runs{stale}{reused}, {len(result.failures)} failed; "
          f"wrote {', '.join(str(f) for f in result.files)}")
    return 1 if result.failures else 0


def _command(args: argparse.Namespace) -> str:
    """The sweep's defining options, as sweep.md quotes them (not where it ran)."""
    words = ["hbh", "sweep", args.topology]
    for s in args.sets:
        words += ["--set", s]
    if args.controls:
        words += ["--controls", args.controls]
    words += ["--seeds", args.seeds, "--duration", args.duration, "--out", args.out]
    return " ".join(shlex.quote(w) for w in words)
