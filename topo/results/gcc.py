"""GCC beside CVIHIS RTM in Carlucci et al.'s three settings (SOURCES.md E), in the simulator.

    .venv/bin/hbh results-gcc --seeds 1-3 --duration 120 --doc docs/background/e2e.md

Why: the thesis compares RTM with Google Congestion Control through Carlucci et al. 2016 (a
testbed, bottlenecks of 500-4000 kb/s, video): GCC used a little over 80 % of an empty bottleneck,
three GCC flows shared one with Jain's index 0.93 at about 80 %, GCC kept the queue shorter than
RTM, and its TCP-friendliness was tried against CUBIC; RTM used almost all of the bottleneck and
three RTM flows reached Jain > 0.99. This runs the same three rows with ``control: gcc`` and
``control: cvihis-rtm`` on the same path:

* H1 -- R1 -- R2 -- H2; access links 10 Mb/s, 5 ms; the bottleneck R1 -> R2 at C, 40 ms, a drop-tail
  FIFO of 300 ms at C (RTT 100 ms; the paper's RTT and queue are not in SOURCES.md: ours);
* row 1: one flow, C = 0.5, 1, 2, 4 Mb/s; row 2: three flows, C = 3 Mb/s; row 3: one flow against
  one TCP cubic flow (the simulator's model), C = 2 Mb/s.

Every number is the mean over the seeds of the second half of each run (the summary's window):
utilisation of the bottleneck, queuing delay = the flows' mean one-way delay less the path's
propagation and serialisation, the flows' rate CV (the summary's: the coefficient of variation of
the received rate in 0.5 s bins), Jain's index over the flows' goodputs, the control's share of the
bottleneck against cubic. Two last rows run GCC with the draft's Kalman filter (docs/background/e2e.md says why
the trendline is the default) and against cubic with libwebrtc's threshold gains. GCC starts at its default 300 kb/s and ramps at 5 % per report, so a run
must be long enough for it to reach C (about 50 s at 4 Mb/s): 120 s by default.

``--doc FILE`` rewrites the table between the ``<!-- gcc-carlucci -->`` markers of FILE.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.experiments.tcp_validation import rewrite_doc
from topo.file.schema import load_topology_text
from topo.file.settings import parse_seeds
from topo.run.runner import run_experiment
from topo.run.summary import jain  # the one Jain index (docs/reference/metrics.md)

__all__ = ["scenario", "run_row", "table", "results_section", "main", "CAPACITIES", "CONTROLS", "base_delay_ms", "jain",
           "SECTION_SEEDS", "SECTION_SECONDS"]

MARKS = ("<!-- gcc-carlucci -->", "<!-- /gcc-carlucci -->")
#: docs/results.md's section (``hbh results --only gcc``): the same runs as docs/background/e2e.md's
SECTION_SEEDS, SECTION_SECONDS = "1-5", 120.0
CAPACITIES = (0.5e6, 1e6, 2e6, 4e6)
THREE_FLOWS_BPS = 3e6
VS_CUBIC_BPS = 2e6
CONTROLS = ("gcc", "cvihis-rtm")
#: the last row: one GCC flow at 1 Mb/s with the draft's Kalman filter instead of the trendline
KALMAN = "gcc, gcc: {filter: kalman}"
#: and GCC against cubic with libwebrtc's K_u, K_d instead of the draft's
WEBRTC_GAINS = "gcc, gcc: {gains: libwebrtc}"
PACKET = 1000
ACCESS_BPS, ACCESS_MS, NECK_MS, BUFFER = 10e6, 5, 40, "300ms"


def scenario(capacity_bps: float, flows: list[str], name: str = "carlucci") -> str:
    """The topology text: ``flows`` are flow mappings' bodies without the braces (``control: gcc``)."""
    body = "".join(f"  - {{name: f{i + 1}, src: H1, dst: H2, {f}}}\n" for i, f in enumerate(flows))
    return f"""\
name: {name}
defaults:
  link: {{rate: {ACCESS_BPS / 1e6:g}Mbps, delay: {ACCESS_MS}ms, buffer: 100}}
  packet_size: {PACKET}B
nodes:
  H1: {{kind: host}}
  R1: {{kind: switch}}
  R2: {{kind: switch}}
  H2: {{kind: host}}
links:
  - {{ends: [H1, R1]}}
  - {{ends: [R1, R2], rate: {capacity_bps / 1e3:g}kbps, delay: {NECK_MS}ms, buffer: {BUFFER}}}
  - {{ends: [R2, H2]}}
flows:
{body}"""


def base_delay_ms(capacity_bps: float, packet: int = PACKET) -> float:
    """A packet's one-way delay through the empty path: propagation plus one serialisation per link."""
    bits = packet * 8
    return 2 * ACCESS_MS + NECK_MS + 1e3 * (2 * bits / ACCESS_BPS + bits / capacity_bps)


def run(text: str, seconds: float, seed: int) -> dict[str, Any]:
    return run_experiment(load_topology_text(text, "<carlucci>"), int(seconds * 1e9), seed=seed, plots=False).summary


def measures(s: dict[str, Any], capacity_bps: float, flows: list[str]) -> dict[str, float]:
    """utilisation, queuing delay (ms), Jain and the first flow's share, of one run's second half."""
    goodputs = [float(s["flows"][n]["goodput_bps"]) for n in flows]
    owd = [s["flows"][n]["owd_ms"]["mean"] for n in flows if s["flows"][n]["owd_ms"]["mean"] is not None]
    total = sum(float(s["flows"][n]["receive_bps"]) for n in s["flows"])
    return {"utilisation": s["links"]["R1->R2"]["utilisation"] or 0.0,
            "queuing_ms": statistics.fmean(owd) - base_delay_ms(capacity_bps) if owd else float("nan"),
            "jain": jain(goodputs) or 0.0, "share": float(s["flows"]["f1"]["receive_bps"]) / total if total else 0.0,
            "rate_cv": statistics.fmean(s["flows"][n]["rate_cv"] or 0.0 for n in flows),
            "loss_pct": 100 * s["loss"]["total"] / max(s["loss"]["data_packets_sent"], 1)}


def run_row(kind: str, control: str, capacity_bps: float, seconds: float, seeds: tuple[int, ...]) -> dict[str, float]:
    """The mean over ``seeds`` of one row's measures: ``kind`` one, three or cubic."""
    flows = {"one": [f"control: {control}"], "three": [f"control: {control}"] * 3,
             "cubic": [f"control: {control}", "control: tcp, cc: cubic"]}[kind]
    names = ["f1"] if kind == "cubic" else [f"f{i + 1}" for i in range(len(flows))]
    runs = []
    for seed in seeds:
        print(f"  {kind}, {control}, {capacity_bps / 1e6:g} Mb/s, seed {seed} ...", file=sys.stderr, flush=True)
        runs.append(measures(run(scenario(capacity_bps, flows), seconds, seed), capacity_bps, names))
    return {k: statistics.fmean(r[k] for r in runs) for k in runs[0]}


def table(seconds: float, seeds: tuple[int, ...]) -> str:
    lines = ["| setting | C | control | utilisation | queuing delay (ms) | rate CV | Jain | share against cubic "
             "| loss (%) |", "|---|---|---|---|---|---|---|---|---|"]
    rows = [("one flow", "one", c) for c in CAPACITIES] + [("three flows", "three", THREE_FLOWS_BPS),
                                                          ("against one cubic", "cubic", VS_CUBIC_BPS)]
    cells = [(label, kind, c, control) for label, kind, c in rows for control in CONTROLS]
    cells.append(("one flow", "one", 1e6, KALMAN))
    cells.append(("against one cubic", "cubic", VS_CUBIC_BPS, WEBRTC_GAINS))
    for label, kind, c, control in cells:
        m = run_row(kind, control, c, seconds, seeds)
        jain_cell = f"{m['jain']:.3f}" if kind == "three" else "-"
        share = f"{m['share']:.2f}" if kind == "cubic" else "-"
        name = {KALMAN: "gcc, the draft's Kalman filter", WEBRTC_GAINS: "gcc, libwebrtc's threshold gains"}.get(control,
                                                                                                              control)
        lines.append(f"| {label} | {c / 1e6:g} Mb/s | {name} | {m['utilisation']:.3f} | {m['queuing_ms']:.1f} "
                     f"| {m['rate_cv']:.3f} | {jain_cell} | {share} | {m['loss_pct']:.2f} |")
    return "\n".join(lines)


def results_section(seeds: str = SECTION_SEEDS, seconds: float = SECTION_SECONDS) -> list[str]:
    """docs/results.md's GCC section: the published figures, then the table (topo.results.doc's "gcc")."""
    body = table(seconds, parse_seeds(seeds))
    return ["## GCC beside CVIHIS RTM: Carlucci et al.'s settings", "",
            f"Generated by `hbh results --only gcc` (topo/results/gcc.py: simulator, seeds {seeds}, "
            f"{seconds:g} s runs, means over the seeds of each run's second half). docs/background/e2e.md, \"GCC\", says what "
            "the GCC here does, the path, and reads the rows.", "",
            "| published (Carlucci et al. 2016 through the thesis, SOURCES.md E) | GCC | RTM |", "|---|---|---|",
            "| one flow, empty bottleneck (500-4000 kb/s): utilisation | a little over 80 % | almost 100 % |",
            "| three flows on one bottleneck: Jain's index | 0.93, at about 80 % | > 0.99 once settled |",
            "| queuing delay | lower than RTM's | |", "| rate variation | slightly more than RTM's | |",
            "| against TCP | tried against CUBIC (no share given) | |", "", *body.splitlines(), ""]


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh results-gcc", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=120.0, help="seconds per run (default 120)")
    p.add_argument("--seeds", default="1-3", help="seeds (default 1-3)")
    p.add_argument("--doc", type=Path, help="rewrite this file's gcc-carlucci section with the table")
    args = p.parse_args(argv)
    if args.duration <= 0:
        print(f"hbh results-gcc: --duration {args.duration:g}: must be > 0", file=sys.stderr)
        return 2
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as e:
        print(f"hbh results-gcc: --seeds {args.seeds}: {e}", file=sys.stderr)
        return 2
    if args.doc is not None and not all(m in (args.doc.read_text() if args.doc.is_file() else "") for m in MARKS):
        print(f"hbh results-gcc: --doc {args.doc}: no {MARKS[0]} ... {MARKS[1]} section to rewrite", file=sys.stderr)
        return 2
    body = table(args.duration, seeds)
    print(body)
    if args.doc is not None:
        rewrite_doc(args.doc, f"Generated by `.venv/bin/hbh results-gcc --seeds {args.seeds} --duration "
                              f"{args.duration:g} --doc {args.doc}` (simulator, seeded; means over the seeds).\n\n{body}",
                    marks=MARKS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
