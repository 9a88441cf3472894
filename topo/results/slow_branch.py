"""What a slow branch does to the others: the multicast tree run with its slow branch at several rates.

``hbh results-slow-branch [--duration 20] [--rates 2Mbps,1.5Mbps,1Mbps,0.5Mbps]`` runs
topo/multicast-tree.yaml in the simulator (seed 1) once per rate of the S3 -> S7 link (H5's branch), and
once without H5 among the receivers, and writes docs/howto/multicast.md's ``## Results: a slow branch`` section
(a table per run: each receiver's goodput against the tree rate, the sequence numbers it misses, its
median one-way delay; the branching buffers' mean occupancy) and docs/figures/multicast-slow-branch.png.

Why: hop-by-hop control gives a tree one rate, its slowest branch's; that is the price of single-rate
multicast, and this says how much each receiver pays for it (rate and delay), measured.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.file.schema import load_topology_text
from topo.net.multicast import tree_rate
from topo.results.splice import splice_sections
from topo.run.runner import run_experiment

__all__ = ["slow_branch_runs", "section", "main"]

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "topo" / "multicast-tree.yaml"
DOC = ROOT / "docs" / "howto" / "multicast.md"
FIGURE = ROOT / "docs" / "figures" / "multicast-slow-branch.png"
SLOW_LINK = "{ends: [S3, S7], rate: 1Mbps}"
BRANCHING = ("S1<-H1", "S2<-S1", "S3<-S1")


def _variant(rate: str | None) -> str:
    """The tree's text with H5's branch at ``rate``, or without H5 among the receivers (None)."""
    text = TREE.read_text()
    if rate is None:
        return text.replace("dst: [H2, H3, H4, H5]", "dst: [H2, H3, H4]")
    assert SLOW_LINK in text
    return text.replace(SLOW_LINK, f"{{ends: [S3, S7], rate: {rate}}}")


def slow_branch_runs(rates: list[str], duration_s: float, seed: int = 1) -> list[dict[str, Any]]:
    """One row per run: its label, tree rate and the summary's multicast block and buffers."""
    rows = []
    for rate in [*rates, None]:
        topo = load_topology_text(_variant(rate), str(TREE))
        summary = run_experiment(topo, round(duration_s * 1e9), seed=seed, plots=False).summary
        label = f"S3-S7 at {rate}" if rate is not None else "H5 not a receiver"
        rows.append({"label": label, "tree_bps": tree_rate(topo, "m1")[0], "group": summary["multicast"]["m1"],
                     "buffers": {b: summary["buffers"][b]["mean"] for b in BRANCHING if b in summary["buffers"]},
                     "loss": summary["loss"]["total"], "violations": len(summary["invariants"]["violations"])})
    return rows


def section(rows: list[dict[str, Any]], duration_s: float, command: str) -> list[str]:
    out = ["## Results: a slow branch", "",
           f"Regenerate: `{command}` (simulator, seed 1, {duration_s:g} s per run; goodput and delay over the "
           "second half of the run, docs/reference/metrics.md). topo/multicast-tree.yaml with H5's branch (S3 -> S7) at each "
           "rate, and without H5 among the receivers:", "",
           "| run | tree rate | receiver | goodput | of tree rate | missing | one-way delay p50 |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        for host, rec in r["group"]["receivers"].items():
            owd = (rec["owd_ms"] or {}).get("p50")
            out.append(f"| {r['label']} | {r['tree_bps'] / 1e6:g} Mb/s | {host} | {rec['goodput_bps'] / 1e6:.3f} Mb/s | "
                       f"{100 * (rec['of_tree_rate'] or 0):.1f} % | {rec['missing_seq']} | "
                       f"{'-' if owd is None else f'{owd:.1f} ms'} |")
    out += ["", "Mean occupancy of the branching switches' buffers and the run's loss:", "",
            "| run | " + " | ".join(BRANCHING) + " | loss (packets) | invariant violations |",
            "|---|" + "---|" * (len(BRANCHING) + 2)]
    for r in rows:
        cells = " | ".join(f"{100 * r['buffers'][b]:.1f} %" if b in r["buffers"] else "-" for b in BRANCHING)
        out.append(f"| {r['label']} | {cells} | {r['loss']} | {r['violations']} |")
    out += ["", f"![per receiver goodput and delay against the slow branch's rate](../figures/{FIGURE.name})", ""]
    return out


def _figure(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    hosts = sorted({h for r in rows for h in r["group"]["receivers"]})
    for i, host in enumerate(hosts):
        pts = [(r["label"], r["group"]["receivers"][host]) for r in rows if host in r["group"]["receivers"]]
        left.plot([p[0] for p in pts], [p[1]["goodput_bps"] / 1e6 for p in pts], "o-", color=f"C{i}", label=host)
        right.plot([p[0] for p in pts], [(p[1]["owd_ms"] or {}).get("p50") or 0 for p in pts], "o-", color=f"C{i}",
                   label=host)
    left.set_ylabel("goodput (Mb/s)")
    right.set_ylabel("one-way delay p50 (ms)")
    for ax in (left, right):
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("multicast-tree: every receiver against H5's branch rate", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh results-slow-branch", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--duration", type=float, default=20.0, help="seconds of simulated time per run")
    p.add_argument("--rates", default="2Mbps,1.5Mbps,1Mbps,0.5Mbps", help="rates of H5's branch, comma-separated")
    args = p.parse_args(argv)
    rates = [r.strip() for r in args.rates.split(",") if r.strip()]
    if not rates or not all(re.fullmatch(r"[0-9.]+[kMG]?bps", r) for r in rates):
        p.error(f"--rates: rates such as 1.5Mbps, got {args.rates!r}")
    rows = slow_branch_runs(rates, args.duration)
    command = f"hbh results-slow-branch --duration {args.duration:g} --rates {','.join(rates)}"
    DOC.write_text(splice_sections(DOC.read_text(), section(rows, args.duration, command)))
    _figure(rows, FIGURE)
    print(f"wrote {DOC} and {FIGURE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
