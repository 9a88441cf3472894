"""``hbh compare``'s outputs: report.md (per control: mean and 95 % interval over seeds, the
per-flow goodputs) and figures overlaying the controls (occupancy, rates, delay) from seed 1's
series (``topo/run/summary.py`` keeps them in every run's summary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topo.sweep.stats import mean_ci
from topo.sweep.store import write_atomic

__all__ = ["format_table", "write_report", "plot_compare", "cell", "METRICS"]

#: (metric key, label, format) in the report's order; docs/reference/metrics.md defines each.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("loss_packets", "loss (packets)", "{:.0f}"),
    ("loss_pct", "loss (%)", "{:.3f}"),
    ("loss_network_packets", "loss in the network and NIC queues (packets)", "{:.0f}"),
    ("loss_receiver_packets", "loss at the receivers' playout buffers (packets)", "{:.0f}"),
    ("owd_mean_ms", "OWD mean (ms)", "{:.1f}"),
    ("owd_p50_ms", "OWD p50 (ms)", "{:.1f}"),
    ("owd_p99_ms", "OWD p99 (ms)", "{:.1f}"),
    ("utilisation", "bottleneck utilisation", "{:.3f}"),
    ("goodput_kbps", "total goodput (kb/s)", "{:.0f}"),
    ("convergence_s", "convergence (s)", "{:.2f}"),
    ("hop_reaction_s", "hop's reaction to the capacity drop (s)", "{:.3f}"),
    ("reaction_s", "sources' reaction to the capacity drop (s)", "{:.3f}"),
    ("rate_cv", "rate CV", "{:.3f}"),
    ("jain", "Jain's index", "{:.4f}"),
)


Reasons = dict[str, list[dict[str, str]]]


def cell(values: list[float | None], fmt: str, why: str | None = None) -> str:
    """``mean ± h`` (h: half-width of the 95 % Student-t interval), ``mean`` for one seed; with no
    value, ``why`` there is none (``-`` when nobody said). A mean over only some of the seeds says
    over how many (``(1 of 2 seeds)``): a cell must not pass for a result of every run."""
    present = [v for v in values if v is not None]
    if not present:
        return why or "-"
    mean, half = mean_ci(present)
    text = fmt.format(mean) if half is None else f"{fmt.format(mean)} ± {fmt.format(half)}"
    return text if len(present) == len(values) else f"{text} ({len(present)} of {len(values)} seeds)"


def _why(reasons: Reasons | None, control: str, key: str) -> str | None:
    said = [r[key] for r in (reasons or {}).get(control, []) if key in r]
    return said[0] if said else None


def _rows(controls: tuple[str, ...], table: dict[str, list[dict[str, float | None]]],
          reasons: Reasons | None = None) -> tuple[list[list[str]], list[str]]:
    """The table's rows, and the notes for the rows no control has a value in (left out of the table,
    each with why)."""
    rows, notes = [["metric", *controls]], []
    for key, label, fmt in METRICS:
        if all(m.get(key) is None for c in controls for m in table[c]):
            said = sorted({w for c in controls if (w := _why(reasons, c, key))})
            notes.append(f"{label.strip()}: {'; '.join(said) if said else 'no value in any run'}")
            continue
        rows.append([label, *(cell([m.get(key) for m in table[c]], fmt, _why(reasons, c, key)) for c in controls)])
    return rows, notes


def format_table(controls: tuple[str, ...], table: dict[str, list[dict[str, float | None]]],
                 reasons: Reasons | None = None) -> str:
    """The report's main table as aligned text (what ``hbh compare`` and ``make demo`` print)."""
    rows, notes = _rows(controls, table, reasons)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines + [f"not in the table (no control has a value): {n}" for n in notes])


def markdown_table(controls: tuple[str, ...], table: dict[str, list[dict[str, float | None]]],
                   reasons: Reasons | None = None) -> str:
    rows, notes = _rows(controls, table, reasons)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    if notes:
        lines += ["", "Not in the table (no control has a value): " + "; ".join(notes) + "."]
    return "\n".join(lines)


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
                 command: str, note: str = "", reasons: Reasons | None = None) -> Path:
    """``note``: a paragraph after the first (a netns comparison's backend and machine load)."""
    text = "\n".join([
        f"# Comparison on {name}", "",
        f"Produced by `{command}`: controls {', '.join(controls)}, seeds {', '.join(map(str, seeds))}, "
        f"{duration_ns / 1e9:g} s each. Cells: mean ± half-width of the 95 % Student-t interval over the "
        "seeds (one seed: the value alone); a cell with no value says why. docs/reference/metrics.md defines every "
        "row: loss counts every data packet dropped anywhere, split into the receivers' playout buffers "
        "(the application's buffer, which only hop-by-hop control sees: docs/howto/compare.md) and the rest; "
        "delay, goodput and rate CV over each flow's window (the run's second half, from its last link-rate event "
        "on when that is later, or the flow's own lifetime when it starts or ends inside the run), total goodput "
        "over the run window (what every flow's application took then: rates over different windows do not add); "
        "utilisation over the same run window at the bottleneck, the slowest resource that carried traffic (a link "
        "at its rate at the end of the run, or a host's playout); reaction to the first capacity drop: the "
        "rate set by the hop in front of the shrunken link (hop by hop only) and the sources' sending rate, "
        "from their packets (every control), falling 5 %; Jain's index over the goodputs of the flows that "
        "cross the bottleneck.", "",
        *([note, ""] if note else []),
        markdown_table(controls, table, reasons), "", "## Per-flow goodput", "", flow_table(controls, summaries), "",
        "Figures: compare_occupancy.png (one panel per queue where packets wait, named by the link they wait "
        "for, or the host's receive buffer; queues empty under every control are left out), "
        "compare_rates.png, compare_delay.png (first seed of each control).", ""])
    write_atomic(path, text)
    return path


def plot_compare(out: Path, name: str, summaries: dict[str, list[dict[str, Any]]]) -> list[Path]:
    """Three figures, each control in its own colour (first seed): occupancy (one panel per physical
    queue, its name the same under every control), receive rates and delay (one panel per flow)."""
    firsts = {c: s[0]["series"] for c, s in summaries.items() if s and "series" in s[0]}
    paths = [_plot_panels(out / "compare_occupancy.png", f"{name}: occupancy (% of the buffer; dashed: target)",
                          "occupancy (%)", firsts, _queue_lines),
             _plot_panels(out / "compare_rates.png", f"{name}: receive rate per flow", "receive rate (Mb/s)", firsts,
                          lambda se: [(k, k, [v / 1e6 for v in f["receive_bps"]], None) for k, f in se["flows"].items()]),
             _plot_panels(out / "compare_delay.png", f"{name}: one-way delay per flow (0.5 s bins)",
                          "one-way delay (ms)", firsts,
                          lambda se: [(k, k, f["owd_ms"], None) for k, f in se["flows"].items()])]
    return paths


Line = tuple[str, str, list[Any], list[Any] | None]  # (panel, label, values, target values)


def _queue_lines(series: dict[str, Any]) -> list[Line]:
    """A run's buffers by physical queue (``series["queues"]``): an end-to-end FIFO and the hop-by-hop
    buffer whose packets wait in the same place share a panel."""
    queues = series.get("queues", {})
    targets = series.get("targets", {})
    out: list[Line] = []
    for key, values in series["buffers"].items():
        target = targets.get(key)
        out.append((queues.get(key, key), key, [None if v is None else 100 * v for v in values],
                    None if target is None else [None if v is None else 100 * v for v in target]))
    return out


def _plot_panels(path: Path, title: str, ylabel: str, firsts: dict[str, dict[str, Any]], pick: Any) -> Path:
    """One panel per key ``pick`` gives (a queue, a flow), every control's line in it; panels whose
    lines are all zero or empty under every control are left out (named in the title)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: dict[str, list[tuple[int, str, Line, list[float]]]] = {}
    for i, (control, series) in enumerate(firsts.items()):
        for line in pick(series):
            panels.setdefault(line[0], []).append((i, control, line, series["t_s"]))
    empty = [k for k, lines in panels.items() if all(not v for _, _, ln, _ in lines for v in ln[2])]
    shown = [k for k in panels if k not in empty]
    fig, axes = plt.subplots(max(1, len(shown)), 1, figsize=(10, 1.2 + 2.2 * max(1, len(shown))), sharex=True,
                             squeeze=False)
    for ax, key in zip(axes[:, 0], shown):
        for i, control, (_, label, values, target), t_s in panels[key]:
            tag = control if label == key else f"{control} ({label})"
            ax.plot(t_s, [float("nan") if v is None else v for v in values], color=f"C{i % 10}", lw=0.9, label=tag)
            if target is not None:
                ax.plot(t_s, [float("nan") if v is None else v for v in target], color=f"C{i % 10}", lw=0.7,
                        ls="--", drawstyle="steps-post")
        ax.set_title(key, fontsize=9, loc="left")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    axes[-1, 0].set_xlabel("time (s)")
    left_out = f"\nempty under every control, not drawn: {', '.join(empty)}" if empty else ""
    fig.suptitle(title + left_out, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path
