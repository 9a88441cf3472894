"""The figure of docs/results.md's map (topo/results/map.py): one panel per buffer kind, rates up,
delays across; the colour is the worst occupancy error, a red cell lost packets, a yellow one never
filled a buffer (the ramp had not reached the bottleneck), a grey one was not run, and the hatched
cells are those the analysis rules out (its boundary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

__all__ = ["map_figure"]

ERROR_SCALE = 0.10  # the colour saturates at 10 points


def map_figure(png: Path, name: str, plan: list[tuple[Any, str, float, float, bool]],
               results: dict[Any, dict[str, Any]], *, rates: tuple[int, ...], delays_ms: tuple[float, ...],
               buffers: tuple[str, ...]) -> None:
    """Draw ``name``'s cells of ``plan`` on the map's grid (topo/results/map.py's ``RATES``,
    ``DELAYS_MS``, ``BUFFERS``: passed in, so that this module imports nothing of the project)."""
    fig, axes = plt.subplots(1, len(buffers), figsize=(5.2 * len(buffers), 3.6), squeeze=False)
    cmap = plt.get_cmap("Greens_r")
    for ax, buf in zip(axes[0], buffers):
        for cell, _text, _s, _cost, lossless in plan:
            if cell.name != name or cell.buffer != buf:
                continue
            x, y = delays_ms.index(cell.delay_ms), rates.index(cell.rate)
            r = results.get(cell)
            label, colour = _look(r, cmap)
            ax.add_patch(Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white",
                                   hatch=None if lossless else "///"))
            ax.text(x + 0.5, y + 0.5, label, ha="center", va="center", fontsize=7)
        ax.set_xlim(0, len(delays_ms))
        ax.set_ylim(0, len(rates))
        ax.set_xticks([i + 0.5 for i in range(len(delays_ms))], [f"{d:g} ms" for d in delays_ms])
        ax.set_yticks([i + 0.5 for i in range(len(rates))], [f"x{k}" for k in rates])
        ax.set_xlabel("link delay")
        ax.set_ylabel("rates (x1 = the paper's 2 Mb/s)")
        ax.set_title(f"{name}: buffers {'200 packets' if buf == '200' else '1 BDP'}", fontsize=9)
    fig.text(0.01, 0.01, "cell: lost / worst error (points); red: loss; yellow: no buffer filled in the run; "
             "grey: not run; hatched: the analysis rules it out", fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _look(r: dict[str, Any] | None, cmap: Any) -> tuple[str, Any]:
    if r is None:
        return "not run", "0.85"
    if "error" in r:
        return "error", "0.6"
    worst = r["worst"]
    label = f"{r['loss']}\n{'not filled' if worst is None else f'{100 * worst:.1f}'}"
    if r["loss"] > 0:
        return label, "#e8736b"
    if worst is None:  # the ramp never reached the bottleneck: no verdict on the settled loop
        return label, "#f3e6b3"
    return label, cmap(min(1.0, worst / ERROR_SCALE) * 0.8)
