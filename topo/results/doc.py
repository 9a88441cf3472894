"""`make results`: regenerate docs/results.md and its figures from full simulator runs.

Every number and figure in docs/results.md comes from this module (seeded runs; the doc names
the command, the seed and the commit). Runs: the three shipped topologies, and variants of
paper-5router that answer the issue's questions -- low targets (what the 70-95 % targets cost
in delay), 10 % of reports lost, and the paper's law without the damping term (k_p = 0).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.file.schema import load_topology
from topo.net.model import Topology
from topo.results.splice import commit
from topo.run.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
SEED = 1
DURATION_NS = 60_000_000_000
COMMAND = "make results  (hbh results --out docs/results.md)"


def _topo(name: str) -> Topology:
    return load_topology(ROOT / "topo" / f"{name}.yaml")


def _with_law(t: Topology, **changes: Any) -> Topology:
    t.law = {k: p.with_changes(**{f: (v(k) if callable(v) else v) for f, v in changes.items()})
             for k, p in t.law.items()}
    return t


def variants() -> list[tuple[str, str, Topology]]:
    low = _with_law(_topo("paper-5router"), o_min=0.05,
                    o_max=lambda k: 0.20 if k[1] == "H2" else 0.10)
    loss = _topo("paper-5router")
    loss.options = dataclasses.replace(loss.options, report_loss=0.10)
    shaper = _topo("paper-5router")
    shaper.options = dataclasses.replace(shaper.options, queue_model="shaper")
    paper_law = _with_law(_topo("paper-5router"), k_p=0.0)
    return [
        ("paper-1router", "the paper's one-router line (targets R1 80 %, H2 95 %, connection R_max 1.8 Mb/s)",
         _topo("paper-1router")),
        ("paper-5router", "the paper's five-router line (targets 70 %, H2 95 %)", _topo("paper-5router")),
        ("capacity-drop", "paper-5router whose R3-R4 link falls from 3 to 1 Mb/s at 30 s", _topo("capacity-drop")),
        ("low-targets", "paper-5router with low targets: routers 10 %, H2 20 % (O_min 5 %)", low),
        ("report-loss", "paper-5router with 10 % of ALINEA reports lost at random", loss),
        ("paper-law", "paper-5router with the paper's law alone (k_p = 0: no damping term)", paper_law),
        ("shaper-queues", "paper-5router on p4switch's shaper option (a rate change applies to what is queued "
         "at once, as a hardware shaper at dequeue; docs/howto/bmv2.md), the agents without their forecast", shaper),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = ValueParser(prog="hbh results", description=__doc__)
    ap.add_argument("--out", default="docs/results.md")
    ap.add_argument("--figures", default="docs/figures")
    ap.add_argument("--raw", default="results/docs", help="where the runs' CSV files go (not committed)")
    ap.add_argument("--only", metavar="NAMES", help="regenerate only these generators' sections of --out, "
                    f"comma-separated ({', '.join(SECTION_NAMES)}), keeping the rest of the file")
    args = ap.parse_args(argv)
    figures, raw = Path(args.figures), Path(args.raw)
    figures.mkdir(parents=True, exist_ok=True)
    doc_dir = Path(args.out).parent
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(names) - set(SECTION_NAMES))
        if unknown or not names:
            ap.error(f"--only {args.only}: unknown section {', '.join(unknown) or '(none)'} "
                     f"(known: {', '.join(SECTION_NAMES)})")
        from topo.results.splice import splice_sections

        lines = [line for n in names if n != "moved" for line in _sections(n, raw, figures, doc_dir)]
        out = Path(args.out)
        text = splice_sections(out.read_text() if out.exists() else "", lines)
        if "moved" in names:  # it reads the rest of the document: last
            text = splice_sections(text, _moved(text))
        out.write_text(text)
        print(f"wrote the {', '.join(names)} sections of {out}", file=sys.stderr)
        return 0
    head, runs = _paper(raw, figures, doc_dir)
    extra = [line for n in SECTION_NAMES[1:-1] for line in _sections(n, raw, figures, doc_dir)]
    text = head + "\n".join(extra) + "\n"
    text += "\n" + "\n".join(_moved(text)) + "\n"
    Path(args.out).write_text(text)
    (raw / "summaries.json").write_text(json.dumps({k: v["summary"] for k, v in runs.items()}, indent=1,
                                                   sort_keys=True))
    print(f"wrote {args.out} and {figures}/", file=sys.stderr)
    return 0


#: The generators of the document's sections, in its order ("paper": the summary and the runs of
#: the shipped files and their variants, with their figures).
SECTION_NAMES = ("paper", "e2e", "compare", "reaction", "scaled", "fabric", "tcp", "tcp-validation", "gcc", "multicast",
                 "moved")


def _moved(doc: str) -> list[str]:
    """The last section: which figures moved since the results of 2026-11-27 (topo/results/moved.py)."""
    from topo.results.moved import base_doc, moved_section

    return moved_section(doc, base_doc())


def _paper(raw: Path, figures: Path, doc_dir: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """The paper runs: the document's head (title, summary, one section per run) and the runs."""
    runs: dict[str, dict[str, Any]] = {}
    for name, title, topo in variants():
        t0 = time.perf_counter()
        print(f"running {name} ({DURATION_NS / 1e9:g} s virtual) ...", file=sys.stderr, flush=True)
        result = run_experiment(topo, DURATION_NS, SEED, raw / name, plots=True)
        for png in ("occupancy", "rates", "delay"):
            (figures / f"{name}-{png}.png").write_bytes((raw / name / f"{png}.png").read_bytes())
        runs[name] = {"title": title, "summary": result.summary, "topo": topo}
        print(f"  {time.perf_counter() - t0:.1f} s wall", file=sys.stderr)
    return render(runs, figures, doc_dir), runs


def _sections(name: str, raw: Path, figures: Path, doc_dir: Path) -> list[str]:
    if name == "paper":
        return _paper(raw, figures, doc_dir)[0].splitlines()
    if name == "e2e":  # issue 48: every unicast control beside hop-by-hop ALINEA on the same bottleneck
        from topo.results.e2e import results_section as e2e_section

        return e2e_section(raw, figures, doc_dir)
    if name == "compare":
        from topo.results.compare import sections

        return sections(raw)
    if name == "reaction":
        from topo.results.dip import dip_sections
        from topo.results.reaction import reaction_sections

        return reaction_sections() + dip_sections()
    if name == "scaled":
        from topo.results.scaled import scaled_sections

        return scaled_sections()
    if name == "tcp":  # issue 23: TCP in the network
        from topo.results.tcp import sections as tcp_sections

        return tcp_sections(figures, doc_dir)
    if name == "tcp-validation":  # issue 23: the model against the stored kernel runs
        from topo.experiments.tcp_validation import results_section

        return results_section()
    if name == "gcc":  # issue 48: GCC beside RTM in Carlucci et al.'s settings
        from topo.results.gcc import results_section as gcc_section

        return gcc_section()
    if name == "multicast":  # issue 50: pgmcc and hop-by-hop ALINEA on the fairness seed's sets
        from topo.results.multicast import results_section as multicast_section

        return multicast_section(raw / "multicast")
    from topo.results.fabric import fabric_sections

    return fabric_sections(figures, doc_dir)


def _conv(s: dict[str, Any]) -> str:
    return "never" if s["convergence_s"] is None else f"{s['convergence_s']:.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _buffers_table(s: dict[str, Any]) -> list[str]:
    rows = ["| buffer | target | mean | std (points) | max | within 3 points from (s) |", "|---|---:|---:|---:|---:|---:|"]
    for name, b in s["buffers"].items():
        conv = "-" if b["convergence_s"] is None else f"{b['convergence_s']:.2f}"
        mean, std = ("idle", "-") if "idle" in b else (_pct(b["mean"]), f"{100 * b['std']:.2f}")  # summary's ``idle``
        rows.append(f"| {name} | {_pct(b['target'])} | {mean} | {std} | {_pct(b['max'])} "
                    f"| {conv} |")
    return rows


def _flow_line(s: dict[str, Any]) -> str:
    parts = []
    for name, f in s["flows"].items():
        o = f["owd_ms"]
        parts.append(f"flow {name}: goodput {f['goodput_bps'] / 1e6:.3f} Mb/s, one-way delay mean {o['mean']:.0f} ms, "
                     f"p50 {o['p50']:.0f} ms, p99 {o['p99']:.0f} ms")
    return "; ".join(parts)


def _loss_line(s: dict[str, Any]) -> str:
    loss = s["loss"]
    return (f"loss: **{loss['total']}** packets of {loss['data_packets_sent']} sent (dropped in the network "
            f"{loss['dropped_in_network']}, receiver buffer overflow {loss['receiver_buffer_overflow']}, missing "
            f"sequence numbers {loss['lost_by_sequence']}, reordered {loss['reordered']})")


def render(runs: dict[str, dict[str, Any]], figures: Path, doc_dir: Path) -> str:
    rel = figures.relative_to(doc_dir) if figures.is_relative_to(doc_dir) else figures
    out = ["# Results: hop-by-hop ALINEA in the simulator", "",
           "Generated by `" + COMMAND + "`; do not edit by hand. Every run: seed "
           f"{SEED}, {DURATION_NS / 1e9:g} s of virtual time, the `sim` backend (every router is p4switch running "
           f"`p4src/alinea.p4`), commit {commit()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The "
           "CSV time series of each run are written to `results/docs/<run>/` (not committed).", "",
           "Definitions (docs/reference/metrics.md, computed by `topo/run/summary.py`): a buffer `v<-u` is node v's buffer fed by "
           "u, as reported to u; mean and standard deviation are over the second half of the time before the first "
           "link-rate event (the run's, without one), against the target in force at each report; *within 3 points "
           "from* is the time after which the buffer stays within 3 points of its target; goodput is what the flow's "
           "receiving application played out over the run's second half (from the last link-rate event when later); "
           "one-way delay is per packet received in that window, send to arrival at the receiving host (before its "
           "playout buffer).", ""]
    summary_rows = ["| run | loss | worst mean vs target (points) | worst std (points) | highest occupancy | "
                    "all within 3 points from (s) | goodput (Mb/s) | OWD p50 / p99 (ms) |",
                    "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, run in runs.items():
        s = run["summary"]
        b = list(s["buffers"].values())
        f = next(iter(s["flows"].values()))
        summary_rows.append(
            f"| {name} | {s['loss']['total']} | {100 * max(abs(x['mean'] - x['target']) for x in b):.2f} | "
            f"{100 * max(x['std'] for x in b):.2f} | {_pct(max(x['max'] for x in b))} | {_conv(s)} | "
            f"{f['goodput_bps'] / 1e6:.3f} | {f['owd_ms']['p50']:.0f} / {f['owd_ms']['p99']:.0f} |")
    out += ["## Summary", "", *summary_rows, ""]
    for name, run in runs.items():
        s = run["summary"]
        out += [f"## {name}: {run['title']}", "", _loss_line(s) + ".", "", *_buffers_table(s), "",
                _flow_line(s) + ".", ""]
        util = ", ".join(f"{k} {_pct(v['utilisation'])}" for k, v in s["links"].items() if v["utilisation"])
        if util:
            out += [f"Link utilisation over the second half: {util}.", ""]
        for ev in s["events"]:
            if ev.get("reaction_s") is not None:
                out += [f"Event at {ev['at_s']:g} s (link {ev['link']} to {ev['rate_bps'] / 1e6:g} Mb/s): "
                        f"{ev['regulator']}, the hop feeding the congested node, cut its rate "
                        f"{1000 * ev['reaction_s']:.1f} ms after the drop (**{ev['reaction_intervals']} report "
                        f"intervals**; one hop's delay is 3 ms plus the report interval); {ev['buffer']} peaked at "
                        f"{_pct(ev['max_occupancy_after'])} and was back within 3 points of its target after "
                        f"{ev['recovery_s']:.2f} s.", ""]
        if name in ("paper-1router", "paper-5router", "capacity-drop"):
            out += [f"![{name} occupancy]({rel}/{name}-occupancy.png)", "",
                    f"![{name} rates]({rel}/{name}-rates.png)", ""]
    hi, lo = runs.get("paper-5router"), runs.get("low-targets")
    if hi and lo:
        fh, fl = next(iter(hi["summary"]["flows"].values())), next(iter(lo["summary"]["flows"].values()))
        bottleneck = hi["topo"].nodes["H2"].playout_bps
        out += ["## What the 70-95 % targets cost in delay", "",
                f"With 200-packet buffers at 2 Mb/s, the paper's targets keep about 140 packets queued at every router "
                f"and 190 in H2's buffer: the one-way delay is p50 {fh['owd_ms']['p50']:.0f} ms "
                f"(p99 {fh['owd_ms']['p99']:.0f} ms). With targets of 10 % (routers) and 20 % (H2) it is p50 "
                f"{fl['owd_ms']['p50']:.0f} ms (p99 {fl['owd_ms']['p99']:.0f} ms), with "
                f"{lo['summary']['loss']['total']} packets lost and a goodput of {fl['goodput_bps'] / 1e6:.3f} Mb/s, "
                f"{100 * fl['goodput_bps'] / bottleneck:.1f} % of the bottleneck (H2's playout, "
                f"{bottleneck / 1e6:g} Mb/s).", ""]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
