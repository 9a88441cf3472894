"""Figures of a run, like the paper's: occupancy per node with its target, rate per node, delay.

matplotlib with the Agg back end (no display needed); one PNG per figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from topo.record import Recorder  # noqa: E402

__all__ = ["plot_run"]


def _series(rec: Recorder) -> dict[tuple[str, str], list[Any]]:
    out: dict[tuple[str, str], list[Any]] = {}
    for r in rec.laws:
        out.setdefault((r.node, r.toward), []).append(r)
    return out


def _order(summary: dict[str, Any]) -> list[tuple[str, str]]:
    return [(b["fed_by"], b["node"]) for b in summary["buffers"].values()]


def plot_run(rec: Recorder, summary: dict[str, Any], out: Path, title: str) -> list[Path]:
    series = _series(rec)
    keys = [k for k in _order(summary) if k in series]
    paths = [out / "occupancy.png", out / "rates.png", out / "delay.png"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, (u, v) in enumerate(keys):
        rows = series[(u, v)]
        color = f"C{i % 10}"
        ax.plot([r.t_ns / 1e9 for r in rows], [100 * r.fraction for r in rows], color=color, lw=0.8,
                label=f"{v} (fed by {u})")
        target = summary["buffers"][f"{v}<-{u}"]["target"]
        if target is not None:  # end-to-end runs' FIFOs have none
            ax.axhline(100 * target, color=color, ls="--", lw=0.8)
    _finish(fig, ax, f"{title}: buffer occupancy (dashed: target)", "occupancy (% of buffer)", paths[0])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, (u, v) in enumerate(keys):
        rows = series[(u, v)]
        ax.step([r.t_ns / 1e9 for r in rows], [r.rate_bps / 1e6 for r in rows], where="post", color=f"C{i % 10}",
                lw=0.8, label=f"{u} -> {v}")
    _finish(fig, ax, f"{title}: rate set by each ALINEA law", "rate (Mb/s)", paths[1])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, (flow, rows) in enumerate(sorted(rec.packets.items())):
        step = max(1, len(rows) // 4000)
        pts = rows[::step]
        ax.plot([recv / 1e9 for _, _, recv in pts], [(recv - sent) / 1e6 for _, sent, recv in pts], color=f"C{i % 10}",
                lw=0.8, label=flow)
    _finish(fig, ax, f"{title}: one-way delay per packet", "one-way delay (ms)", paths[2])
    return paths


def _finish(fig: Any, ax: Any, title: str, ylabel: str, path: Path) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
