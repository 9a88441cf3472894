"""``make fuzz-topo``: thousands of random topologies (tests/topo/topogen.py), each judged as the CI
property tests judge them (tests/topo/randomcheck.py), every failure kept.

Why apart from pytest: a property test stops at its first failure; a long run should say how many
of its topologies failed and keep each one's file, so that a fix can be judged on all of them.
Each failing topology is written to ``--out``/fail-N.yaml with its run length and problems in its
first lines (``hbh run FILE --duration S --strict`` replays it); the last line says how many
topologies ran, how many were all-ALINEA, how many the analysis warned about and how many failed,
and, of the all-ALINEA ones, how many the analysis warned about that lost nothing (its warnings'
cost: a warning on every run would pass the rule and tell a user nothing). records.jsonl holds one
line per topology (its shape, whether all-ALINEA, the packets lost, the first lines of each warning),
so a change to the analysis can be judged on which warnings it adds or removes. Exit status 1 if any failed. summary.json holds the counts after every topology ("finished": false
until the last), and SIGINT or SIGTERM ends the run with its last line for what it judged.

Each topology is judged in a process of its own, forked from this one (``--in-process``: in this
one). Why: a run that crashes or hangs (``--timeout``) is then a failure kept, not the end of the
fuzz, and the parent, which never simulates, stays at its own size whatever a run leaves behind.
In one process a finished run is freed too (the engine's objects clear their cycles, the runner
collects before each run: issue 46): 200 topologies of seed 1 in process ended at 116 MB, where
before those fixes the process grew ~6.6 MB a topology (1,423 MB at 200) until the kernel killed it.

    python -m tests.topo.fuzz_topo --count 2000 --seed 1 --out build/fuzz-topo
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
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
    p.add_argument(
        "--seed", type=int, default=1, help="hypothesis' seed (the same seed draws the same topologies)"
    )
    p.add_argument(
        "--budget", type=float, default=40_000, help="packet-hops a run may cost (its length follows)"
    )
    p.add_argument("--alinea-only", action="store_true", help="every flow ALINEA")
    p.add_argument("--out", type=Path, default=Path("build/fuzz-topo"))
    p.add_argument(
        "--in-process",
        action="store_true",
        help="judge every topology in this process, not in a forked child of its own",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="wall seconds a topology's judging may take in its child before it is a failure",
    )
    args = p.parse_args(argv)
    if args.count < 1 or args.timeout <= 0:
        p.error(f"--count must be >= 1 and --timeout > 0, got {args.count} and {args.timeout:g}")
    args.out.mkdir(parents=True, exist_ok=True)
    stats = {"ran": 0, "all_alinea": 0, "warned": 0, "lost": 0, "failed": 0, "alinea_warned_lossless": 0}
    records = (args.out / "records.jsonl").open("w")
    started = time.monotonic()

    @hypothesis_seed(args.seed)
    @settings(
        max_examples=args.count,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(topologies(budget=args.budget, alinea_only=True if args.alinea_only else None))
    def one(d: Drawn) -> None:
        stats["ran"] += 1
        if args.in_process:
            problems, warned, lost = _judged(d)
        else:
            problems, warned, lost = judge_in_child(d, args.timeout)
        stats["all_alinea"] += d.all_alinea
        stats["warned"] += bool(warned)
        stats["lost"] += bool(lost)
        stats["alinea_warned_lossless"] += bool(d.all_alinea and warned and not lost)
        records.write(json.dumps(_record(stats["ran"], d, warned, lost, bool(problems))) + "\n")
        records.flush()
        if problems:
            stats["failed"] += 1
            head = f"# seconds: {d.seconds:g}\n" + "".join(f"# problem: {p}\n" for p in problems)
            (args.out / f"fail-{stats['failed']}.yaml").write_text(head + d.text)
        # the count so far, after every topology: a long run stopped early still says what it judged
        (args.out / "summary.json").write_text(json.dumps({**stats, "finished": False}, indent=1) + "\n")
        if stats["ran"] % 50 == 0:
            print(
                f"{stats['ran']} topologies, {stats['failed']} failed ({time.monotonic() - started:.0f} s; "
                f"RSS {_rss_mb():.0f} MB, largest child {_children_peak_mb():.0f} MB)",
                file=sys.stderr,
                flush=True,
            )

    if not args.in_process:
        _warm()
    signal.signal(signal.SIGTERM, _stop)
    try:
        one()
    except KeyboardInterrupt:  # SIGINT or SIGTERM: the topologies judged so far are the result
        print("fuzz-topo: stopped early", file=sys.stderr)
    records.close()
    stats["seconds"] = round(time.monotonic() - started)
    (args.out / "summary.json").write_text(
        json.dumps({**stats, "finished": stats["ran"] >= args.count}, indent=1) + "\n"
    )
    print(
        f"fuzz-topo: {stats['ran']} topologies ({stats['all_alinea']} all-ALINEA, {stats['warned']} warned, "
        f"{stats['lost']} with loss), {stats['failed']} failed; {stats['alinea_warned_lossless']} all-ALINEA "
        f"warned but lost nothing; {stats['seconds']} s; files in {args.out}/"
    )
    return 1 if stats["failed"] else 0


def _record(n: int, d: Drawn, warned: list[str], lost: int, failed: bool) -> dict[str, object]:
    """One topology's line in records.jsonl: enough to count the analysis' warnings by kind."""
    return {"n": n, "shape": d.shape, "all_alinea": d.all_alinea, "lost": lost, "failed": failed,
            "warned": [w[:200] for w in warned]}


def _stop(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


Judged = tuple[list[str], list[str], int]


def _judged(d: Drawn) -> Judged:
    """The problems, the analysis's warnings and the packets lost of one topology; a crash of the
    judge is a problem to keep, not the end of the run."""
    try:
        verdict = judge(d.text, d.seconds, d.all_alinea, source=f"<random-{d.shape}>")
        return verdict.problems, verdict.warned, verdict.lost
    except Exception:
        return [traceback.format_exc(limit=4).replace("\n", " | ")], [], 0


def _child(conn: multiprocessing.connection.Connection, d: Drawn) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler raises in the parent only
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn.send(_judged(d))
    conn.close()


def judge_in_child(d: Drawn, timeout: float) -> Judged:
    """:func:`_judged` in a forked child, so that whatever the run leaves allocated goes with it.

    Forked (not spawned): the child starts with this process's modules imported, at the cost of a
    fork. A child that dies or outlives ``timeout`` seconds is a problem named as such."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, d), daemon=True)
    proc.start()
    send.close()
    try:
        if recv.poll(timeout):
            try:
                return recv.recv()
            except EOFError:  # it died before sending: its exit code says how
                pass
            proc.join()
            return [f"the judging process died (exit code {proc.exitcode})"], [], 0
        return [f"the judging process took over {timeout:g} s (wall) and was killed"], [], 0
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join()


#: A run of this before the first fork imports what a run imports and compiles the switch's program
#: once (p4switch/device.py keeps it per process): every child starts with both, and with the code
#: as it was when the fuzz started, even if the working tree changes under a long run.
WARM_UP = """name: warm-up
defaults:
  link: {rate: 10Mbps, delay: 1ms, buffer: 50}
nodes:
  S1: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
"""


def _warm() -> None:
    verdict = judge(WARM_UP, 0.05, all_alinea=True, source="<warm-up>")
    if verdict.problems:  # the simulator itself is broken: every topology would fail alike
        raise SystemExit(f"fuzz-topo: the warm-up run failed: {verdict.problems}")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _children_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e3  # kB on Linux


if __name__ == "__main__":
    raise SystemExit(main())
