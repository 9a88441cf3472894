"""Why the model's bottleneck occupancy differs from the kernel's: both sides' traces, case by case.

    .venv/bin/hbh tcp-diagnosis --kernel-from docs/tcp-kernel-runs --doc docs/howto/tcp.md

Why: ``topo/experiments/tcp_validation.py`` compares two means (goodput, the bottleneck's mean occupancy over
a run's second half); a difference there can come from TCP (a different sawtooth) or from the
path (the same sawtooth over a path that holds more packets, or a burstier arrival at the queue).
This separates them from each side's samples every 100 ms (TCP_INFO in netns, the model's state
in the simulator) of cwnd, retransmissions and RTT beside the bottleneck's occupancy:

* **pipe**: cwnd minus the queue while the queue is busy (at least ``BUSY`` packets): the packets
  the path holds outside the bottleneck's queue (its bandwidth-delay product, ACKs delayed by the
  receiver included). At equal cwnd a longer pipe means a shorter queue.
* **queue when cwnd < pipe**: with a smooth ACK clock, a window below the pipe leaves the queue
  empty; what is seen there is the senders' (or the emulation's) bursts.
* **losses**: recoveries in the second half (retransmissions more than three RTTs apart count as two),
  and the deepest reduction (cwnd's lowest within 2 s after a loss over its highest just before):
  0.5 for reno's halving, 0.7 for cubic's beta; below that, two reductions in a row.
* **mean cwnd** over the second half: the sawtooth itself.

The kernel's side comes from the traces stored beside each kernel run (``<case>.trace.csv``,
written by ``topo.experiments.tcp_validation --save-kernel``), the simulator's is run now.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from controlplane.units import parse_duration_ns
from runtime.arguments import ValueParser
from topo.experiments.tcp_trace import TRACE_SUFFIX, TracePoint, read_trace, trace_of_run
from topo.experiments.tcp_validation import (
    ROOT,
    Case,
    commit,
    path_extra_ms,
    pick_cases,
    picked,
    rewrite_section,
    run_case,
)
from topo.net.stats import percentile

__all__ = ["Diagnosis", "diagnose", "table", "main", "BUSY"]

BUSY = 3  # packets: a queue at least this long is busy (the window, not a burst, keeps it)
REDUCTION_WINDOW_S = 2.0


@dataclass(frozen=True)
class Diagnosis:
    pipe: float | None  # median cwnd - queue while the queue is busy
    burst_queue: float | None  # mean queue while cwnd < pipe
    losses: int
    deepest: float | None  # lowest cwnd after a loss / highest before, over the losses
    mean_cwnd: float
    mean_queue: float


def _losses(points: list[TracePoint], gap_s: float) -> list[int]:
    """Indices where a recovery starts: retransmissions more than ``gap_s`` after the last ones."""
    starts, last_t = [], -1e9
    for i in range(1, len(points)):
        if points[i].retrans > points[i - 1].retrans:
            if points[i].t_s - last_t > gap_s:
                starts.append(i)
            last_t = points[i].t_s
    return starts


def diagnose(points: list[TracePoint], from_s: float) -> Diagnosis:
    """The measures above over the samples at or after ``from_s``."""
    half = [p for p in points if p.t_s >= from_s]
    if not half:
        raise ValueError(f"no samples after {from_s:g} s")
    busy = [p.cwnd - p.occupancy for p in half if p.occupancy >= BUSY]
    pipe = percentile(busy, 0.5) if busy else None
    below = [p.occupancy for p in half if pipe is not None and p.cwnd < pipe]
    rtts = sorted(p.rtt_ms for p in half if p.rtt_ms > 0)
    gap = 3 * percentile(rtts, 0.5) / 1e3 if rtts else 0.6  # one recovery: retransmissions within 3 RTTs
    ratios = []
    for i in _losses(points, gap):
        if points[i].t_s < from_s:
            continue
        before = max(p.cwnd for p in points[max(0, i - 3):i + 1])
        after = min(p.cwnd for p in points[i:] if p.t_s <= points[i].t_s + REDUCTION_WINDOW_S)
        ratios.append(after / before)
    return Diagnosis(pipe, statistics.fmean(below) if below else None, len(ratios),
                     min(ratios) if ratios else None, statistics.fmean(p.cwnd for p in half),
                     statistics.fmean(p.occupancy for p in half))


def table(rows: list[tuple[Case, Diagnosis, Diagnosis]]) -> str:
    def num(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    lines = ["| cc | bottleneck | RTT | mean queue kernel / sim (pkts) | pipe kernel / sim (pkts) "
             "| queue when cwnd < pipe kernel / sim | mean cwnd kernel / sim | losses kernel / sim "
             "| deepest reduction kernel / sim |",
             "|---|---|---|---|---|---|---|---|---|"]
    for case, k, s in rows:
        lines.append(
            f"| {case.cc} | {case.rate_mbps} Mb/s | {case.rtt_ms} ms | {k.mean_queue:.1f} / {s.mean_queue:.1f} "
            f"| {num(k.pipe, '.0f')} / {num(s.pipe, '.0f')} "
            f"| {num(k.burst_queue, '.1f')} / {num(s.burst_queue, '.1f')} | {k.mean_cwnd:.1f} / {s.mean_cwnd:.1f} "
            f"| {k.losses} / {s.losses} | {num(k.deepest, '.2f')} / {num(s.deepest, '.2f')} |")
    return "\n".join(lines)


def stored_path_extra(kernel_from: Path, case: Case) -> float:
    """The netns path's measured lengthening (``tcp_validation.path_extra_ms``) from the run's JSON
    beside its trace, so that the simulator runs the path the validation table runs (0 without one)."""
    stored = kernel_from / f"{case.name}.json"
    if not stored.is_file():
        return 0.0
    try:
        return path_extra_ms(case, json.loads(stored.read_text()))
    except ValueError as exc:
        raise ValueError(f"{stored}: not a stored kernel run ({exc})") from None


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh tcp-diagnosis", description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel-from", type=Path, required=True, help="the kernel runs' directory (<case>.trace.csv)")
    p.add_argument("--duration", default="60s", help="the simulator's runs (default 60s, as the stored ones)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "tcp-diagnosis", help="the simulator's run directories")
    p.add_argument("--doc", type=Path, help="rewrite this file's <!-- SECTION --> with the table")
    p.add_argument("--cases", help="comma-separated case names (default: all), e.g. cubic-2mbps-20ms")
    p.add_argument("--section", default="tcp-validation-traces")
    args = p.parse_args(argv)
    try:
        duration_ns = parse_duration_ns(args.duration, "--duration")
        cases = pick_cases(args.cases)
        kernel = {c: read_trace(args.kernel_from / f"{c.name}{TRACE_SUFFIX}") for c in cases}
        extra = {c: stored_path_extra(args.kernel_from, c) for c in cases}
    except ValueError as exc:
        print(f"tcp_diagnosis: {exc}", file=sys.stderr)
        return 2
    from_s = duration_ns / 2e9
    rows = []
    for case in cases:
        out = args.out / case.name
        run_case(case, "sim", duration_ns, args.seed, out, extra_rtt_ms=extra[case])
        try:
            rows.append((case, diagnose(kernel[case], from_s), diagnose(trace_of_run(out), from_s)))
        except ValueError as exc:
            print(f"tcp_diagnosis: {case.name}: {exc}", file=sys.stderr)
            return 2
    body = table(rows)
    print(body)
    if args.doc is not None:
        options = picked(args.cases, args.section, "tcp-validation-traces")
        how = (f"Generated by `.venv/bin/hbh tcp-diagnosis --kernel-from {args.kernel_from} --duration "
               f"{args.duration} --seed {args.seed}{options} --doc {args.doc}` at commit {commit()}: the kernel's "
               f"side the traces stored beside its runs in {args.kernel_from}, the simulator's run now; samples "
               f"every 100 ms over each run's second half.")
        rewrite_section(args.doc, args.section, how, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
