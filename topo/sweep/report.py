"""A sweep's outputs: ``runs.csv`` (one row per run), ``sweep.md`` (per point: mean and 95 % CI
over seeds) and figures (each metric against each swept parameter, one line per control).

Why the metrics are flattened here, from summary.json's structure: the columns are the same for
every run of one topology, so a sweep's rows line up whatever the points changed; the wall-time
``performance`` block is left out, so the same sweep gives the same file serially or on Ray.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from topo.sweep.stats import mean_ci
from topo.sweep.store import write_atomic

__all__ = ["metrics", "write_runs_csv", "write_sweep_md", "plot_sweep", "aggregate"]

Row = dict[str, Any]


def metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """The numbers a run is judged by, as flat columns (docs/howto/sweeps.md lists them)."""
    loss = summary["loss"]
    out: dict[str, float | None] = {"loss.total": loss["total"],
                                    "loss.dropped_in_network": loss["dropped_in_network"],
                                    "loss.receiver_buffer_overflow": loss["receiver_buffer_overflow"]}
    for name, b in summary["buffers"].items():
        out[f"buffer.{name}.mean"] = b["mean"]
        out[f"buffer.{name}.std"] = b["std"]
    out["convergence_s"] = summary["convergence_s"]
    for name, f in summary["flows"].items():
        out[f"flow.{name}.goodput_bps"] = f["goodput_bps"]
        out[f"flow.{name}.owd_p50_ms"] = f["owd_ms"]["p50"]
        out[f"flow.{name}.owd_p99_ms"] = f["owd_ms"]["p99"]
    for name, link in summary["links"].items():
        out[f"link.{name}.utilisation"] = link["utilisation"]
    for i, ev in enumerate(summary["events"]):
        if "reaction_s" in ev:
            out[f"event{i}.reaction_s"] = ev["reaction_s"]
    return out


def _columns(rows: list[Row], fixed: list[str]) -> list[str]:
    cols = list(fixed)
    for row in rows:
        cols += [k for k in row if k not in cols]
    return cols


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_runs_csv(path: Path, rows: list[Row], params: list[str]) -> None:
    cols = _columns(rows, ["key", "topology", *params, "seed", "duration_s"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for row in rows:
        w.writerow([_cell(row.get(c)) for c in cols])
    write_atomic(path, buf.getvalue())


def metric_names(rows: list[Row], params: list[str]) -> list[str]:
    skip = {"key", "topology", "seed", "duration_s", *params}
    return [c for c in _columns(rows, []) if c not in skip]


def aggregate(rows: list[Row], params: list[str]) -> list[dict[str, Any]]:
    """Per parameter point (in run order): its parameters, n seeds, and (mean, CI) per metric."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(row[p] for p in params), []).append(row)
    names = metric_names(rows, params)
    return [{"params": dict(zip(params, key)), "n": len(group),
             "metrics": {m: mean_ci([r.get(m) for r in group]) for m in names}}
            for key, group in groups.items()]


def _fmt(mean: float, ci: float | None) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.4g}" if ci is None else f"{mean:.4g} ± {ci:.2g}"


def write_sweep_md(path: Path, title: str, agg: list[dict[str, Any]], params: list[str],
                   failures: list[dict[str, Any]], command: str) -> None:
    names = list(agg[0]["metrics"]) if agg else []
    lines = [f"# Sweep: {title}", "", f"Produced by `{command}`.", "",
             "Each cell: mean ± half-width of the 95 % confidence interval over the seeds (Student t, "
             "n − 1 degrees of freedom); no interval with one seed. Columns are defined in docs/howto/sweeps.md; "
             "one row per run is in runs.csv.", ""]
    header = [*params, "n", *names]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for a in agg:
        cells = [a["params"][p] for p in params] + [str(a["n"])] + [_fmt(*a["metrics"][m]) for m in names]
        lines.append("| " + " | ".join(cells) + " |")
    if failures:
        lines += ["", f"## Failed runs ({len(failures)})", "",
                  "Re-running the same command retries them (finished runs are kept).", ""]
        lines += [f"* {f['label']}, seed {f['seed']}: {f['error']}" for f in failures]
    write_atomic(path, "\n".join(lines) + "\n")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def plot_sweep(out: Path, agg: list[dict[str, Any]], params: list[str], swept: list[str],
               values: dict[str, list[str]]) -> list[Path]:
    """One PNG per swept parameter: a panel per metric, the parameter on x, a line per control
    (and per combination of the other parameters), error bars the 95 % interval."""
    if not agg:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(agg[0]["metrics"])
    files = []
    for x in swept:
        cols = 3
        nrows = max(1, math.ceil(len(names) / cols))
        fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.2 * nrows), squeeze=False)
        lines = _lines(agg, params, x)
        for ax, m in zip(axes.flat, names):
            for label, pts in lines.items():
                xs = [values[x].index(a["params"][x]) for a in pts]
                ys = [a["metrics"][m][0] for a in pts]
                err = [a["metrics"][m][1] or 0.0 for a in pts]
                ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)
            ax.set_title(m, fontsize=9)
            ax.set_xticks(range(len(values[x])), values[x], fontsize=8)
            ax.set_xlabel(x, fontsize=8)
            ax.tick_params(axis="y", labelsize=8)
        for ax in list(axes.flat)[len(names):]:
            ax.set_visible(False)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)), fontsize=8)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (3.2 * nrows)))
        path = out / f"fig_{_safe(x)}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        files.append(path)
    return files


def _lines(agg: list[dict[str, Any]], params: list[str], x: str) -> dict[str, list[dict[str, Any]]]:
    """Points grouped into lines: same control and same values of every parameter but ``x``."""
    others = sorted((p for p in params if p != x), key=lambda p: p != "control")  # control first
    lines: dict[str, list[dict[str, Any]]] = {}
    for a in agg:
        label = ", ".join(f"{p}={a['params'][p]}" if p != "control" else a["params"][p] for p in others)
        lines.setdefault(label or x, []).append(a)
    return lines
