"""Figures of a run, like the paper's: occupancy per node with its target, rate per node, delay.

matplotlib with the Agg back end (no display needed); one PNG per figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from topo.net.model import Topology  # noqa: E402
from topo.net.record import Recorder  # noqa: E402
from topo.run.summary_buffers import buffer_rows  # noqa: E402

__all__ = ["plot_run"]


def plot_run(rec: Recorder, summary: dict[str, Any], out: Path, title: str, topo: Topology) -> list[Path]:
    """occupancy.png, rates.png, delay.png (and multicast.png with multicast flows). The buffers are the summary's (topo/run/summary_buffers.py:
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
    if summary.get("multicast"):
        paths.append(_multicast(summary, out / "multicast.png", title))
    return paths


def _multicast(summary: dict[str, Any], path: Path, title: str) -> Path:
    """multicast.png: each receiver's receive rate over the run against its group's tree rate (dashed:
    the slowest branch's), and per receiver its goodput as a share of that rate, the sequence numbers
    it misses and its median one-way delay (topo/net/multicast.py)."""
    series = summary["series"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7))
    i = 0
    labels, shares, notes = [], [], []
    for group, g in summary["multicast"].items():
        top.axhline(g["tree_bps"] / 1e6, color="k", ls="--", lw=0.8)
        for host, r in g["receivers"].items():
            rates = series["flows"].get(r["flow"], {}).get("receive_bps", [])
            top.step(series["t_s"][:len(rates)], [v / 1e6 for v in rates], where="pre", color=f"C{i % 10}", lw=0.9,
                     label=f"{group} at {host}")
            labels.append(f"{group}@{host}")
            shares.append(100 * (r["of_tree_rate"] or 0.0))
            p50 = (r["owd_ms"] or {}).get("p50")
            notes.append(f"missing {r['missing_seq']}, " + ("none received" if p50 is None else f"p50 {p50:.0f} ms"))
            i += 1
    top.set_ylabel("received (Mb/s)")
    top.set_xlabel("time (s)")
    top.set_title(f"{title}: multicast receivers (dashed: the tree's rate, its slowest branch)", fontsize=10)
    top.grid(alpha=0.3)
    top.legend(fontsize=7, loc="best")
    bars = bottom.bar(labels, shares, color=[f"C{k % 10}" for k in range(len(labels))])
    for bar, note in zip(bars, notes):
        bottom.annotate(note, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                        fontsize=7)
    bottom.axhline(100, color="k", ls="--", lw=0.8)
    bottom.set_ylabel("goodput (% of tree rate)")
    bottom.set_xlabel("receiver (over the summary's window)")
    bottom.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


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
