"""``make fuzz-topo``: thousands of random topologies (tests/topo/topogen.py), each judged as the CI
property tests judge them (tests/topo/randomcheck.py), every failure kept.

Why apart from pytest: a property test stops at its first failure; a long run should say how many
of its topologies failed and keep each one's file, so that a fix can be judged on all of them.
Each failing topology is written to ``--out``/fail-N.yaml with its run length and problems in its
first lines (``hbh run FILE --duration S --strict`` replays it); the last line says how many
topologies ran, how many were all-ALINEA, how many the analysis warned about and how many failed.
Exit status 1 if any failed. summary.json holds the counts after every topology ("finished": false
until the last), and SIGINT or SIGTERM ends the run with its last line for what it judged.

    python -m tests.topo.fuzz_topo --count 2000 --seed 1 --out build/fuzz-topo
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed

from tests.topo.randomcheck import judge
from tests.topo.topogen import Drawn, topologies


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.topo.fuzz_topo", description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=2000, help="topologies to run")
    p.add_argument("--seed", type=int, default=1, help="hypothesis' seed (the same seed draws the same topologies)")
    p.add_argument("--budget", type=float, default=40_000, help="packet-hops a run may cost (its length follows)")
    p.add_argument("--alinea-only", action="store_true", help="every flow ALINEA")
    p.add_argument("--out", type=Path, default=Path("build/fuzz-topo"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stats = {"ran": 0, "all_alinea": 0, "warned": 0, "lost": 0, "failed": 0}
    started = time.monotonic()

    @hypothesis_seed(args.seed)
    @settings(max_examples=args.count, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(topologies(budget=args.budget, alinea_only=True if args.alinea_only else None))
    def one(d: Drawn) -> None:
        stats["ran"] += 1
        try:
            verdict = judge(d.text, d.seconds, d.all_alinea, source=f"<random-{d.shape}>")
            problems, warned, lost = verdict.problems, verdict.warned, verdict.lost
        except Exception:  # a crash is a failure to keep, not the end of the run
            problems, warned, lost = [traceback.format_exc(limit=4).replace("\n", " | ")], [], 0
        stats["all_alinea"] += d.all_alinea
        stats["warned"] += bool(warned)
        stats["lost"] += bool(lost)
        if problems:
            stats["failed"] += 1
            head = f"# seconds: {d.seconds:g}\n" + "".join(f"# problem: {p}\n" for p in problems)
            (args.out / f"fail-{stats['failed']}.yaml").write_text(head + d.text)
        # the count so far, after every topology: a long run stopped early still says what it judged
        (args.out / "summary.json").write_text(json.dumps({**stats, "finished": False}, indent=1) + "\n")
        if stats["ran"] % 50 == 0:
            print(f"{stats['ran']} topologies, {stats['failed']} failed ({time.monotonic() - started:.0f} s)",
                  file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _stop)
    try:
        one()
    except KeyboardInterrupt:  # SIGINT or SIGTERM: the topologies judged so far are the result
        print("fuzz-topo: stopped early", file=sys.stderr)
    stats["seconds"] = round(time.monotonic() - started)
    (args.out / "summary.json").write_text(json.dumps({**stats, "finished": stats["ran"] >= args.count}, indent=1)
                                          + "\n")
    print(f"fuzz-topo: {stats['ran']} topologies ({stats['all_alinea']} all-ALINEA, {stats['warned']} warned, "
          f"{stats['lost']} with loss), {stats['failed']} failed; {stats['seconds']} s; files in {args.out}/")
    return 1 if stats["failed"] else 0


def _stop(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
