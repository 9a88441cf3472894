"""Figures of a run, like the paper's: occupancy per node with its target, rate per node, delay.

matplotlib with the Agg back end (no display needed); one PNG per figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from topo.model import Topology  # noqa: E402
from topo.record import Recorder  # noqa: E402
from topo.summary_buffers import buffer_rows  # noqa: E402

__all__ = ["plot_run"]


def plot_run(rec: Recorder, summary: dict[str, Any], out: Path, title: str, topo: Topology) -> list[Path]:
    """occupancy.png, rates.png, delay.png. The buffers are the summary's (topo/summary_buffers.py:
    the same rows, names and targets in force), so a figure shows what summary.json reduces."""
    buffers = buffer_rows(topo, rec)
    names = [n for n in summary["buffers"] if n in buffers]
    paths = [out / "occupancy.png", out / "rates.png", out / "delay.png"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, name in enumerate(names):
        b, color = buffers[name], f"C{i % 10}"
        ax.plot([r.t_ns / 1e9 for r in b.rows], [100 * r.fraction for r in b.rows], color=color, lw=0.8,
                label=f"{name} ({b.queue})" if b.queue != name else name)
        if any(t is not None for t in b.targets):  # the target in force, a step at each change
            ax.step([r.t_ns / 1e9 for r in b.rows], [None if t is None else 100 * t for t in b.targets],
                    where="post", color=color, ls="--", lw=0.8)
    _finish(fig, ax, f"{title}: buffer occupancy (dashed: target in force)", "occupancy (% of buffer)", paths[0])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, name in enumerate(n for n in names if buffers[n].kind == "regulated"):
        b = buffers[name]
        ax.step([r.t_ns / 1e9 for r in b.rows], [r.rate_bps / 1e6 for r in b.rows], where="post", color=f"C{i % 10}",
                lw=0.8, label=f"{b.fed_by} -> {b.node}")
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
