"""docs/results.md's fabric section: FCT slowdowns on a leaf-spine under every control at three
loads, spine balance, and the head-of-line experiment (called by ``topo.results.doc``; alone, it
regenerates just its section of docs/results.md: ``hbh results-fabric``; with
``--hol-only``, just the head-of-line subsection).

Why seeds with confidence intervals: a workload's flows are random; one seed's p99 is one draw.
Each (control, load) runs ``SEEDS`` seeds; tables give the mean over seeds +- the half-width of a
95 % Student-t interval, and the per-size tables pool the seeds' flows.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from runtime.arguments import ValueParser
from topo.experiments.fabric import (  # noqa: E402
    FABRIC_CONTROLS,
    FabricRun,
    FabricSpec,
    fabric_topology,
    run_fabric,
    spine_gap,
)
from topo.experiments.hol import HOL_CONTROLS, HolSetup, run_hol  # noqa: E402
from topo.file.workload import cdf_named, poisson_flows  # noqa: E402
from topo.results.splice import splice_sections  # noqa: E402
from topo.run.fct import FctRow, slowdown_table  # noqa: E402

__all__ = ["fabric_sections", "SEEDS", "LOADS", "HEADING", "main"]

HOL_HEADING = "### Head-of-line blocking"
HEADING = "## Fabric: leaf-spine with ECMP, flow completion times and head-of-line blocking"
SPEC = FabricSpec(leaves=4, spines=2, hosts_per_leaf=4, host_rate="10Mb/s", oversubscription=1.0,
                  delay="250us", buffer=100)
CDF = "websearch"
SIZE_SCALE = 0.01
ARRIVALS_NS = 2_000_000_000
LOADS = (0.3, 0.5, 0.7)
SEEDS = (1, 2, 3)
CAP_NS = 30_000_000_000  # a run stops here even if some flow has not completed
#: two-sided 95 % Student-t quantiles by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}


def ci(values: list[float]) -> str:
    """``mean +- half-width`` of a 95 % t interval (just the mean for one value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.2f}"
    half = T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
    return f"{mean:.2f} ± {half:.2f}"


#: worker processes for the workload runs (each run is seeded and independent, so the tables do not
#: depend on it); ``HBH_FABRIC_JOBS`` overrides the machine's CPU count
JOBS = int(os.environ.get("HBH_FABRIC_JOBS", "0")) or (os.cpu_count() or 1)


def _one_run(control: str, load: float, seed: int) -> FabricRun:
    flows = poisson_flows(SPEC.hosts(), cdf_named(CDF), load=load, host_rate_bps=SPEC.host_rate_bps,
                          duration_ns=ARRIVALS_NS, seed=seed, size_scale=SIZE_SCALE)
    t0 = time.perf_counter()
    run = run_fabric(fabric_topology(SPEC, flows, control), seed, CAP_NS)
    print(f"  fabric {control} load {load:g} seed {seed}: {len(flows)} flows, "
          f"{time.perf_counter() - t0:.0f} s wall", file=sys.stderr, flush=True)
    return run


def _runs() -> dict[tuple[str, float], list[FabricRun]]:
    """Every (control, load) over the seeds, in that order, run on ``JOBS`` processes."""
    tasks = [(control, load, seed) for load in LOADS for seed in SEEDS for control in FABRIC_CONTROLS]
    with ProcessPoolExecutor(max_workers=max(1, min(JOBS, len(tasks)))) as pool:
        runs = list(pool.map(_one_run, *zip(*tasks)))
    out: dict[tuple[str, float], list[FabricRun]] = {}
    for (control, load, _seed), run in zip(tasks, runs):
        out.setdefault((control, load), []).append(run)
    return out


def _spine_gap(run: FabricRun) -> float:
    """|a - b| / mean of the two spines' bytes (what the leaves sent them), in percent."""
    gap = spine_gap(run.spines)
    return float("nan") if gap is None else gap


def _overall(runs: dict[tuple[str, float], list[FabricRun]]) -> list[str]:
    lines = ["| control | load | flows | completed | p50 slowdown | p99 slowdown | goodput (Mb/s) | spine gap (%) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (control, load), rs in runs.items():
        tables = [{r["bucket"]: r for r in slowdown_table(run.rows)}["all"] for run in rs]
        goodput = [8e3 * sum(r.size_bytes for r in run.rows if r.end_ns) / run.end_ns for run in rs]
        lines.append(f"| {control} | {load:.0%} | {sum(len(r.rows) for r in rs)} | {sum(r.completed for r in rs)} | "
                     f"{ci([t['p50_slowdown'] for t in tables])} | {ci([t['p99_slowdown'] for t in tables])} | "
                     f"{ci(goodput)} | {ci([_spine_gap(r) for r in rs])} |")
    return lines


def _pooled(rs: list[FabricRun]) -> list[FctRow]:
    return [row for run in rs for row in run.rows]


def _buckets(runs: dict[tuple[str, float], list[FabricRun]]) -> list[str]:
    lines = ["| load | size (bytes) | " + " | ".join(f"{c} p50 / p99" for c in FABRIC_CONTROLS) + " |",
             "|---|---|" + "---:|" * len(FABRIC_CONTROLS)]
    for load in LOADS:
        per = {c: {r["bucket"]: r for r in slowdown_table(_pooled(runs[(c, load)]))} for c in FABRIC_CONTROLS}
        for bucket in per[next(iter(FABRIC_CONTROLS))]:
            cells = [f"{per[c][bucket]['p50_slowdown']:.1f} / {per[c][bucket]['p99_slowdown']:.1f} "
                     f"({per[c][bucket]['flows']})" if bucket in per[c] else "-" for c in FABRIC_CONTROLS]
            lines.append(f"| {load:.0%} | {bucket} | " + " | ".join(cells) + " |")
    return lines


def slowdown_figure(runs: dict[tuple[str, float], list[FabricRun]], path: Path) -> None:
    """Slowdown against flow size (p50 solid, p99 dashed), one panel per load, one colour per control."""
    fig, axes = plt.subplots(1, len(LOADS), figsize=(4 * len(LOADS), 4.1), sharey=True)
    for ax, load in zip(axes, LOADS):
        for i, control in enumerate(FABRIC_CONTROLS):
            table = [r for r in slowdown_table(_pooled(runs[(control, load)])) if r["bucket"] != "all"]
            x = [10 ** (int(str(r["bucket"]).split("e")[1].split(",")[0]) + 0.5) for r in table]
            ax.plot(x, [r["p50_slowdown"] for r in table], "-o", color=f"C{i}", ms=3, label=f"{control} p50")
            ax.plot(x, [r["p99_slowdown"] for r in table], "--s", color=f"C{i}", ms=3, label=f"{control} p99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"load {load:.0%}")
        ax.set_xlabel("flow size (bytes, decade centre)")
        ax.grid(True, which="both", lw=0.3)
    axes[0].set_ylabel("FCT slowdown")
    # below the panels: inside one, it covered the 70 % panel's p99 lines (issue 46)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(FABRIC_CONTROLS), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0.0, 0.12, 1.0, 1.0))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _class_label(control: str, d: dict[str, object]) -> str:
    """A throttled law's class under per-destination classes (hosts' laws have none)."""
    return f" class {d['class']}" if control == "alinea-classes" and d["hops"] < 3 else ""


def _lost(n: int | None) -> str:
    return "-" if n is None else str(n)


def _hol() -> list[str]:
    setup = HolSetup()
    lines = ["| control | victim alone (Mb/s) | victim during incast (Mb/s) | share | victim lost | "
             "incast goodput (Mb/s) | switch drops | ports throttled below half their link, hop by hop from leaf 2 |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for control, fairness in [(c, "per-port") for c in HOL_CONTROLS] + [("alinea", "per-flow")]:
        r = run_hol(dataclasses.replace(setup, fairness=fairness), control)
        spread = "; ".join(f"{d['hops']}: {d['port']}{_class_label(control, d)} {int(d['mean_rate_bps']) / 1e6:.1f}"
                           for d in r["spread"]) or "-"
        name = control if fairness == "per-port" else f"{control}, per-flow caps"
        lines.append(f"| {name} | {r['victim_idle_bps'] / 1e6:.2f} | {r['victim_bps'] / 1e6:.2f} | "
                     f"{r['victim_share']:.0%} | {_lost(r['victim_lost'])} | {r['incast_bps'] / 1e6:.2f} | "
                     f"{r['switch_drops']} | {spread} |")
    return lines


def hol_section() -> list[str]:
    """The head-of-line subsection (its own function: it runs in a minute, the workload tables in
    twenty, and it does not depend on them)."""
    setup = HolSetup()
    return [HOL_HEADING, "",
            f"{setup.senders} hosts of leaf 1 send to {setup.receiver} at once from {setup.incast_start_s:g} s; a "
            f"victim {setup.victim[0]} -> {setup.victim[1]} (an idle host on the same leaf) shares the uplinks "
            "and spines but not the receiver's port. Throughputs over "
            f"[{setup.incast_start_s + 0.5:g}, {setup.seconds:g}] s, against the victim's own in the same network "
            f"without the incast (`topo/experiments/hol.py`, seed 1; the victim capped at {setup.victim_rate} under "
            "`alinea`, `cvihis-rtm` and `none`, TCP's own under `tcp`). A port is listed when its law's mean rate "
            "over the window was below half its link's rate (hop 1: a spine's port toward leaf 2; 2: a leaf 1 uplink; 3: a host's "
            "link, whose law the ALINEA host runs, and whose cap, the victim's 4 Mb/s, lists it too; under "
            "the caps, a port held at its cap is listed too; under `alinea-classes` a switch's law is per (port, "
            "class), the class named). *Victim lost*: the victim's packets missing below the highest it delivered "
            "(under TCP: segments still missing after its retransmissions). `alinea-classes` is the per-destination classes of docs/howto/fabric.md; the "
            "last row is `alinea` with the per-flow caps of docs/background/fairness.md (`--fairness per-flow`); both meet the "
            "issue's target here (docs/howto/fabric.md compares them).", "", *_hol(), ""]


def fabric_sections(figures: Path, doc_dir: Path) -> list[str]:
    print("running the fabric section ...", file=sys.stderr, flush=True)
    runs = _runs()
    figures.mkdir(parents=True, exist_ok=True)
    png = figures / "fabric-slowdown.png"
    slowdown_figure(runs, png)
    rel = png.relative_to(doc_dir) if png.is_relative_to(doc_dir) else png
    return [HEADING, "",
            f"A {SPEC.leaves}-leaf, {SPEC.spines}-spine fabric of {SPEC.leaves * SPEC.hosts_per_leaf} hosts "
            f"(`fabric:` in docs/reference/topologies.md): {SPEC.host_rate} host links, non-blocking uplinks "
            f"({SPEC.hosts_per_leaf * SPEC.host_rate_bps / SPEC.spines / 1e6:g} Mb/s), {SPEC.delay} per link, "
            f"{SPEC.buffer}-packet buffers, equal-cost groups over the spines (alinea.p4's action selector). "
            "**Scaled time**: the rates are a thousandth of a 10 Gb/s fabric's and the delays a thousand times "
            "longer, so the bandwidth-delay product in packets is a real fabric's; flow sizes are the "
            f"{CDF} distribution's (DCTCP) times {SIZE_SCALE:g}. Flows arrive as a Poisson process for "
            f"{ARRIVALS_NS / 1e9:g} s at the offered load (a fraction of every host link), all-to-all, and are "
            "carried by the simulator's TCP model (cubic) until delivered; the run ends when the last one is, or at "
            f"{CAP_NS / 1e9:g} s of virtual time: a flow not complete by then counts in *flows* but not in "
            "*completed*, and is left out of the slowdowns (which flatters the control that leaves it). Goodput: "
            "the bytes of completed flows over the run's length. "
            "Controls: `alinea` -- the switches hop-by-hop per port, TCP at the edges; `alinea-classes` -- the "
            f"same with per-destination classes ({min(SPEC.hosts_per_leaf, 7)} classes: a host's index on its leaf; "
            "a priority queue and a law per (port, class), the reports recirculated onto a priority above "
            "every class, docs/howto/fabric.md); `tcp` -- end to end, drop-tail FIFOs; `none` -- no control anywhere: "
            "drop-tail FIFOs and the TCP model's retransmission without congestion control (`cc: none`, a "
            "window that never shrinks), so that the bytes still arrive; `cvihis-rtm` -- end to end, drop-tail "
            "FIFOs, the same window with every segment paced by CVIHIS RTM (`cc: cvihis-rtm`, hosts/cvihis_tcp.py: "
            "CVIHIS's rate over the TCP model's recovery, docs/howto/fabric.md; in the head-of-line table below it runs "
            "CVIHIS's own constant-rate datagrams). "
            f"Seeds {', '.join(map(str, SEEDS))} (`topo/results/fabric.py`; "
            "`hbh results-fabric` regenerates this section alone); mean ± 95 % t interval over seeds. "
            "Slowdown = FCT / ideal FCT, the ideal being three one-way delays of the path plus the flow's frames "
            "at its slowest link (docs/reference/topologies.md); the spine gap is |spine 1 - spine 2| bytes over their mean.",
            "", *_overall(runs), "",
            "Per size decade, seeds pooled: p50 / p99 slowdown (flows).", "", *_buckets(runs), "",
            f"![slowdown against flow size]({rel})", "",
*hol_section()]


def main(argv: list[str] | None = None) -> int:
    ap = ValueParser(prog="hbh results-fabric", description=__doc__.split("\n\n")[0])
    ap.add_argument("--doc", default="docs/results.md")
    ap.add_argument("--figures", default="docs/figures")
    ap.add_argument("--hol-only", action="store_true",
                    help="regenerate only the head-of-line subsection of an existing fabric section (a minute)")
    args = ap.parse_args(argv)
    doc = Path(args.doc)
    text = doc.read_text() if doc.exists() else ""
    if args.hol_only:
        if HEADING not in text or HOL_HEADING not in text.split(HEADING, 1)[1]:
            print(f"{doc}: no fabric section with a head-of-line subsection to update; run without --hol-only",
                  file=sys.stderr)
            return 2
        head, rest = text.split(HEADING, 1)
        section = HEADING + rest
        nxt = section.find("\n## ")
        section, tail = (section, "") if nxt < 0 else (section[:nxt], section[nxt:])
        new = section.split(HOL_HEADING, 1)[0] + "\n".join(hol_section())
        doc.write_text(head + new + ("\n" + tail.lstrip("\n") if tail else "\n"))
    else:
        doc.write_text(splice_sections(text, fabric_sections(Path(args.figures), doc.parent)))
    print(f"wrote the fabric section of {doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
