"""``hbh compare TOPO --controls alinea,cvihis-rtm,cvihis-blm,tcp-cubic,tfrc,ledbat --seeds 1-5 --out DIR``.

Hop-by-hop ALINEA against the end-to-end controls (CVIHIS, TCP, TFRC, LEDBAT) on the same topology
and seeds, in the simulator or (``--backend netns``, root) in namespaces with p4switch and the kernel's
TCP. Why it is a thin layer over the sweep library (``topo.sweep.run``): a comparison IS a sweep whose only axis is
the control, so it gets the same validation, resumable result files, Ray or serial execution
and Student-t intervals; this module only adds the comparison's own metrics (Jain's index,
loss in %, the bottleneck, end-to-end reaction times) and figures that overlay the controls.

netns runs go one at a time whatever ``--serial`` says (each takes its duration of real time and the
machine's namespaces), so ``--jobs`` is refused there; the report states the machine's load.

Exit codes: 0 every run finished; 1 some runs failed; 2 bad input (nothing ran); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topo.file.schema import TopologyError
from topo.file.settings import SweepError, split_control
from topo.net.model import CONTROLS
from topo.run.runner import BACKENDS

__all__ = ["register", "compare", "run_metrics", "run_reasons", "jain", "COMPARE_CONTROLS", "Comparison"]

#: Controls a comparison accepts: the regulated ones (``fixed`` has no congestion control). TCP is
#: named with its congestion control, ``tcp-reno`` or ``tcp-cubic`` (``tcp`` alone: the default cc;
#: the kernel's in netns, hosts/tcp's model in the simulator).
COMPARE_CONTROLS = tuple(c for c in CONTROLS if c != "fixed")
DEFAULT_CONTROLS = "alinea,cvihis-rtm,cvihis-blm"


class CompareError(ValueError):
    """Bad input to ``hbh compare``: one line, exit 2."""


def jain(values: list[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal shares, 1/n = one flow takes all."""
    from topo.run.summary import jain as _jain

    return _jain(values)


def _bottleneck(summary: dict[str, Any], rates: dict[str, float]) -> str | None:
    """A summary without ``bottleneck`` (written before it had one): the carrying directed link
    with the lowest configured rate (ties: the most utilised), as topo/run/summary.py defines it."""
    carried = [(rates.get(name, float("inf")), -(link["utilisation"] or 0), name)
               for name, link in summary["links"].items() if link["utilisation"] is not None]
    return min(carried)[2] if carried else None


def run_metrics(summary: dict[str, Any], link_rates: dict[str, float], active: list[str]) -> dict[str, float | None]:
    """A run's comparison metrics (docs/reference/metrics.md). ``active``: the flows that ran; the summary's
    ``bottleneck`` names the flows Jain's index is over (those that cross it), else ``active``."""
    loss = summary["loss"]
    sent = loss["data_packets_sent"]
    flows = [summary["flows"][n] for n in active]
    owd = [f["owd_ms"] for f in flows if f["owd_ms"]["mean"] is not None]
    neck = summary.get("bottleneck")
    if neck is not None:
        utilisation, fair = neck["utilisation"], neck["jain"]
    else:
        name = _bottleneck(summary, link_rates)
        goodputs = [float(f["goodput_bps"]) for f in flows]
        utilisation = summary["links"][name]["utilisation"] if name else None
        fair = jain(goodputs) if len(goodputs) > 1 else None
    events = summary["events"]
    # the sources' reaction, measured from the packets in every control (hop by hop the regulating
    # hop's own reaction_s is in the summary too): one definition across the table's columns
    reaction = events[0].get("source_reaction_s") if events else None
    hop_reaction = events[0].get("reaction_s") if events else None
    cvs = [f["rate_cv"] for f in flows if f.get("rate_cv") is not None]
    overflow = loss.get("receiver_buffer_overflow")
    return {"loss_packets": float(loss["total"]), "loss_pct": 100.0 * loss["total"] / sent if sent else None,
            "loss_network_packets": None if overflow is None else float(loss["total"] - overflow),
            "loss_receiver_packets": None if overflow is None else float(overflow),
            "owd_mean_ms": mean([o["mean"] for o in owd]), "owd_p50_ms": mean([o["p50"] for o in owd]),
            "owd_p99_ms": mean([o["p99"] for o in owd]), "utilisation": utilisation,
            "goodput_kbps": (summary["goodput_total_bps"] if "goodput_total_bps" in summary  # over one window
                             else sum(float(f["goodput_bps"]) for f in flows)) / 1e3,
            "convergence_s": summary["convergence_s"], "hop_reaction_s": hop_reaction, "reaction_s": reaction,
            "rate_cv": mean(cvs), "jain": fair}


def run_reasons(summary: dict[str, Any]) -> dict[str, str]:
    """Why a metric of ``run_metrics`` has no value in this run (the table says it instead of "-")."""
    why: dict[str, str] = {}
    conv = summary.get("convergence") or {}
    if summary.get("convergence_s") is None and conv.get("why"):
        why["convergence_s"] = "no law (end to end)" if not conv.get("over") and "end to end" in conv["why"] \
            else conv["why"]
    if not summary["events"]:
        why["reaction_s"] = why["hop_reaction_s"] = "no capacity drop in the topology"
    else:
        ev = summary["events"][0]
        if ev.get("source_reaction_s") is None:
            why["reaction_s"] = "the sources did not cut their rate by 5 %"
        if ev.get("reaction_s") is None:
            why["hop_reaction_s"] = ("no hop sets a rate (end to end)" if "regulator" not in ev
                                     else "the hop did not cut its rate by 5 %")
    neck = summary.get("bottleneck") or {}
    if neck.get("jain") is None and neck.get("why"):
        why["jain"] = f"{neck['why']} at the bottleneck" if neck.get("link") else neck["why"]
    return why


def mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


@dataclass
class Comparison:
    """What a comparison produced: per control and seed the metrics and summaries, and the files."""

    controls: tuple[str, ...]
    seeds: tuple[int, ...]
    metrics: dict[str, list[dict[str, float | None]]]
    summaries: dict[str, list[dict[str, Any]]]
    failures: int
    files: list[Path]
    # per control and seed: why a metric has no value (run_reasons), said in the table instead of "-"
    reasons: dict[str, list[dict[str, str]]] = field(default_factory=dict)


def compare(topology: str, controls: str, seeds: str, duration: str, out: Path, *, backend: str = "sim",
            serial: bool = False, jobs: int | None = None, progress: bool = False, plots: bool = True,
            command: str = "", sets: list[str] | None = None) -> Comparison:
    """Run every control for every seed through the sweep library; write report.md and figures."""
    from topo.sweep.run import plan_sweep, run_sweep
    from topo.sweep.store import Store

    chosen = _controls(controls)
    sweep = plan_sweep(topology, list(sets or []), ",".join(chosen), seeds, duration)
    if any(len(s.values) != 1 for s in sweep.settings):
        raise CompareError("--set: a comparison takes one value per setting (sweep several with hbh sweep)")
    _check_backend(sweep, backend, jobs)
    result = run_sweep(sweep, out, serial=serial, jobs=jobs, progress=progress, plots=False,
                       command=command or "hbh compare", backend=backend)
    topo = sweep.base.topo
    rates = _final_rates(topo)
    active = [f.name for f in topo.flows if f.start_ns < sweep.duration_ns]
    store = Store(out)
    by: dict[str, list[dict[str, Any]]] = {c: [] for c in chosen}
    for spec in sweep.runs(backend):
        record = store.finished(spec.key)
        if record is not None:
            by[spec.point.control or ""].append(record["summary"])
    table = {c: [run_metrics(s, rates, active) for s in by[c]] for c in chosen}
    reasons = {c: [run_reasons(s) for s in by[c]] for c in chosen}
    from topo.experiments.compare_report import plot_compare, write_report

    files = [write_report(out / "report.md", topo.name, chosen, sweep.seeds, sweep.duration_ns, table, by,
                          command or "hbh compare", _backend_note(backend), reasons)]
    if plots:
        files += plot_compare(out, topo.name, by)
    return Comparison(chosen, sweep.seeds, table, by, len(result.failures), files + result.files, reasons)


def _backend_note(backend: str) -> str:
    """netns runs measure the machine too: say so, with its load when the runs ended."""
    if backend == "sim":
        return ""
    load = os.getloadavg()
    return (f"Backend {backend}: real time, p4switch, TCP flows are the kernel's. Load average when the runs "
            f"ended {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs (a loaded machine "
            "delays the switch and host processes: compare runs made under similar load).")


def _final_rates(topo: Any) -> dict[str, float]:
    """Directed link "u->v" -> its rate at the end of the run (link-rate events applied)."""
    from topo.run.summary import final_link_rates

    return final_link_rates(topo)


def _controls(text: str) -> tuple[str, ...]:
    names = tuple(c.strip() for c in text.split(","))
    for name in names:
        if split_control(name)[0] not in COMPARE_CONTROLS:
            raise CompareError(f"--controls {text}: unknown control {name!r} (known: {', '.join(COMPARE_CONTROLS)}; "
                               "tcp-CC for TCP with congestion control CC, e.g. tcp-cubic)")
    if len(set(names)) != len(names):
        raise CompareError(f"--controls {text}: a control is named twice")
    return names


def _check_backend(sweep: Any, backend: str, jobs: int | None = None) -> None:
    """Refuse what the backend would refuse, with its own one line, before anything runs."""
    from topo.file.points import point_topology

    if backend not in BACKENDS:
        raise CompareError(f"--backend {backend}: choose one of {', '.join(BACKENDS)}")
    topologies = [(point, point_topology(sweep.base, point)) for point in sweep.points]
    if backend == "sim":
        from topo.sim.network import sim_refusal

        for point, topo in topologies:
            why = sim_refusal(topo)
            if why:
                raise CompareError(f"--controls {point.control}: {why}")
        return
    from topo.netns.plumbing import NetnsError, require_root

    if jobs is not None:
        raise CompareError(f"--jobs {jobs}: netns runs one at a time (each takes real time and the machine's "
                           "namespaces; two at once would measure each other): leave --jobs out")
    try:
        require_root()
    except NetnsError as exc:
        raise CompareError(f"--backend netns: {exc}") from None
    # Every control and option the loader accepts runs on netns's p4switch target; what a topology
    # cannot do there (an interface name too long, ...) fails its run with netns's one line.


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="hop-by-hop ALINEA vs the end-to-end controls on one topology, over seeds",
        description="Run each control on TOPO (it replaces every flow's control) for every seed, through the "
                    "sweep library (resumable), and write DIR/report.md (means with 95 %% intervals) and "
                    "DIR/compare_*.png overlaying the controls.")
    p.add_argument("topology", help="topology file, e.g. topo/paper-5router.yaml")
    p.add_argument("--controls", default=DEFAULT_CONTROLS,
                   help=f"comma list of {', '.join(COMPARE_CONTROLS)}; tcp-CC picks TCP's congestion control, "
                        f"e.g. tcp-cubic (default {DEFAULT_CONTROLS})")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="TARGET.KEY=VALUE",
                   help="change the topology as hbh sweep's --set does, one value each (e.g. a row of "
                        "topo/cvihis-two-bottleneck.yaml; docs/reference/topologies.md); repeatable")
    p.add_argument("--backend", default="sim",
                   help="sim (virtual time, the default) or netns (real time, root: namespaces, p4switch and the "
                        "kernel's TCP; runs one at a time, --duration of wall time each)")
    p.add_argument("--seeds", default="1", help="seeds: N, N-M or a comma list (default 1)")
    p.add_argument("--duration", default="60s", help="each run's length: virtual time, or wall time in netns (default 60s)")
    p.add_argument("--out", required=True, help="results directory (resumable)")
    p.add_argument("--serial", action="store_true", help="no Ray: run in this process")
    p.add_argument("--jobs", type=int, default=None, help="local Ray: number of workers")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    sets = [w for s in args.sets for w in ("--set", s)]
    command = " ".join(shlex.quote(w) for w in ["hbh", "compare", args.topology, *sets, "--controls", args.controls,
                                                  "--backend", args.backend, "--seeds", args.seeds,
                                                  "--duration", args.duration, "--out", args.out])
    try:
        if args.jobs is not None and args.jobs < 1:
            raise CompareError(f"--jobs {args.jobs}: must be >= 1")
        result = compare(args.topology, args.controls, args.seeds, args.duration, Path(args.out),
                         backend=args.backend, serial=args.serial, jobs=args.jobs,
                         progress=not args.no_progress, plots=not args.no_plots, command=command,
                         sets=args.sets)
    except (CompareError, SweepError, TopologyError) as exc:
        print(f"hbh compare: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hbh compare: interrupted; finished runs are kept in {args.out} (run again to resume)",
              file=sys.stderr)
        return 130
    from topo.experiments.compare_report import format_table

    print(format_table(result.controls, result.metrics, result.reasons))
    for control, summaries in result.summaries.items():  # each run's summary.json keeps its invariants
        for s in summaries:
            for v in s.get("invariants", {}).get("violations", []):
                print(f"hbh compare: {control}, seed {s.get('seed')}: invariant violated: {v['name']}: {v['detail']}",
                      file=sys.stderr)
    print(f"wrote {', '.join(str(f) for f in result.files)}")
    return 1 if result.failures else 0
