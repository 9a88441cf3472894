"""``hbh compare``'s outputs: report.md (per control: mean and 95 % interval over seeds, the
per-flow goodputs) and figures overlaying the controls (occupancy, rates, delay) from seed 1's
series (``topo/summary.py`` keeps them in every run's summary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topo.sweep.stats import mean_ci
from topo.sweep.store import write_atomic

__all__ = ["format_table", "write_report", "plot_compare", "cell"]


def cell(values: list[float | None], fmt: str) -> str:
    """``mean ± h`` (h: half-width of the 95 % Student-t interval), ``mean`` for one seed, ``-`` for none."""
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    mean, half = mean_ci(present)
    text = fmt.format(mean)
    return text if half is None else f"{text} ± {fmt.format(half)}"


def _rows(controls: tuple[str, ...], table: dict[str, list[dict[str, float | None]]]) -> list[list[str]]:
    from topo.compare import METRICS

    rows = [["metric", *controls]]
    for key, label, fmt in METRICS:
        rows.append([label, *(cell([m[key] for m in table[c]], fmt) for c in controls)])
    return rows


def format_table(controls: tuple[str, ...], table: dict[str, list[dict[str, float | None]]]) -> str:
    """The report's main table as aligned text (what ``hbh compare`` and ``make demo`` print)."""
    rows = _rows(controls, table)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows)


def markdown_table(controls: tuple[str, ...], table: dict[str, list[dict[str, float | None]]]) -> str:
    rows = _rows(controls, table)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows[1:]])


def flow_table(controls: tuple[str, ...], summaries: dict[str, list[dict[str, Any]]]) -> str:
    """Per control and flow: goodput (kb/s) and rate CV, mean ± 95 % interval over seeds."""
    names = list(next((s[0]["flows"] for s in summaries.values() if s), {}))
    lines = ["| control | " + " | ".join(f"{n} goodput (kb/s)" for n in names) + " |", "|" + "---|" * (len(names) + 1)]
    for c in controls:
        cells = [cell([s["flows"][n]["goodput_bps"] / 1e3 for s in summaries[c]], "{:.0f}") for n in names]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(path: Path, name: str, controls: tuple[str, ...], seeds: tuple[int, ...], duration_ns: int,
                 table: dict[str, list[dict[str, float | None]]], summaries: dict[str, list[dict[str, Any]]],
                 command: str, note: str = "") -> Path:
    """``note``: a paragraph after the first (a netns comparison's backend and machine load)."""
    text = "\n".join([
        f"# Comparison on {name}", "",
        f"Produced by `{command}`: controls {', '.join(controls)}, seeds {', '.join(map(str, seeds))}, "
        f"{duration_ns / 1e9:g} s each. Cells: mean ± half-width of the 95 % Student-t interval over the "
        "seeds (one seed: the value alone). Definitions: topo/summary.py and topo/compare.py (loss counts "
        "every data packet dropped anywhere; delay and utilisation over the second half; the bottleneck is "
        "the slowest carrying link at the end of the run; reaction: hop-by-hop, the regulating hop's rate, "
        "end to end, the sources' sending rate, falling 5 % after the first capacity drop; Jain over the "
        "flows' goodputs).", "", *([note, ""] if note else []),
        markdown_table(controls, table), "", "## Per-flow goodput", "", flow_table(controls, summaries), "",
        "Figures: compare_occupancy.png, compare_rates.png, compare_delay.png (first seed of each control).", ""])
    write_atomic(path, text)
    return path


def plot_compare(out: Path, name: str, summaries: dict[str, list[dict[str, Any]]]) -> list[Path]:
    """Three figures, each control in its own colour (first seed): occupancy, receive rates, delay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    firsts = {c: s[0]["series"] for c, s in summaries.items() if s and "series" in s[0]}
    specs = [("compare_occupancy.png", "occupancy (%)", lambda se: [(k, [None if v is None else 100 * v for v in vs])
                                                                     for k, vs in se["buffers"].items()]),
             ("compare_rates.png", "receive rate (Mb/s)", lambda se: [(k, [v / 1e6 for v in f["receive_bps"]])
                                                                      for k, f in se["flows"].items()]),
             ("compare_delay.png", "one-way delay (ms)", lambda se: [(k, f["owd_ms"]) for k, f in se["flows"].items()])]
    paths = []
    for filename, ylabel, pick in specs:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for i, (control, series) in enumerate(firsts.items()):
            for j, (label, values) in enumerate(pick(series)):
                ax.plot(series["t_s"], [float("nan") if v is None else v for v in values], color=f"C{i % 10}",
                        lw=0.9, ls=("-", "--", ":", "-.")[j % 4], label=f"{control} {label}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{name}: {ylabel}")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(out / filename, dpi=110)
        plt.close(fig)
        paths.append(out / filename)
    return paths
