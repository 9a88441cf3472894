"""Multicast flows: the rate a group's tree can run at, and the per-receiver view of a run.

Why a module: a multicast flow is resolved into one branch flow per receiver (docs/howto/multicast.md),
so the summary's flow rows are already per receiver; what only the group knows -- the single
rate its tree must run at (its slowest branch), how far each receiver is from it, what a slow
branch costs its siblings in delay -- is computed here, from the topology and the summary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from topo.net.model import Flow, Topology

__all__ = ["branch_rate", "tree_rate", "multicast_block", "multicast_lines"]


def branch_rate(topo: Topology, f: Flow) -> float:
    """The most one branch could carry alone, b/s: its path's slowest link, its receiver's playout
    and the flow's R_max (a fixed flow: its rate)."""
    rates = [topo.link_between(a, b).rate_bps for a, b in zip(f.path, f.path[1:])]
    playout = topo.nodes[f.dst].playout_bps
    if playout:
        rates.append(playout)
    for cap in (f.r_max_bps, f.rate_bps):
        if cap:
            rates.append(cap)
    return min(rates) if rates else math.inf


def tree_rate(topo: Topology, group: str) -> tuple[float, str]:
    """(the rate every receiver of ``group`` gets under a single-rate, lossless control, b/s; the
    receiver of the slowest branch): a packet leaves a branching switch's buffer when its last copy
    does, so the whole tree runs at its slowest branch."""
    return min((branch_rate(topo, f), f.dst) for f in topo.groups()[group])


def multicast_block(topo: Topology, summary: Mapping[str, Any], packets: Mapping[str, list[tuple[int, int, int]]]
                    ) -> dict[str, Any]:
    """summary.json's ``multicast``: per group its tree rate and slowest receiver, and per receiver
    its goodput (and as a fraction of the tree rate), the sequence numbers it misses, its one-way
    delay; ``spread``: the largest receiver's goodput over the smallest's, less 1."""
    out: dict[str, Any] = {}
    for group, branches in topo.groups().items():
        rate, slowest = tree_rate(topo, group)
        receivers = {}
        for f in branches:
            row = summary["flows"].get(f.name, {})
            seqs = {seq for seq, _, _ in packets.get(f.name, [])}
            goodput = row.get("goodput_bps", 0)
            receivers[f.dst] = {"flow": f.name, "branch_bps": branch_rate(topo, f), "goodput_bps": goodput,
                                "of_tree_rate": round(goodput / rate, 4) if rate > 0 and math.isfinite(rate) else None,
                                "missing_seq": (max(seqs) + 1 - len(seqs)) if seqs else 0,
                                "received": len(seqs), "owd_ms": row.get("owd_ms")}
        goodputs = [r["goodput_bps"] for r in receivers.values()]
        out[group] = {"src": branches[0].src, "control": branches[0].control, "tree_bps": rate,
                      "slowest_receiver": slowest, "receivers": receivers,
                      "spread": round(max(goodputs) / min(goodputs) - 1, 4) if min(goodputs, default=0) > 0 else None}
    return out


def multicast_lines(block: Mapping[str, Any]) -> list[str]:
    """The run's text summary of each group: one line for the group, one per receiver."""
    lines = []
    for group, g in block.items():
        spread = "-" if g["spread"] is None else f"{100 * g['spread']:.1f}%"
        lines.append(f"multicast {group} {g['src']} -> {', '.join(g['receivers'])} ({g['control']}): tree rate "
                     f"{g['tree_bps'] / 1e6:.3f} Mb/s (slowest branch: {g['slowest_receiver']}), receivers' goodput "
                     f"spread {spread}")
        for host, r in g["receivers"].items():
            frac = "-" if r["of_tree_rate"] is None else f"{100 * r['of_tree_rate']:.1f}%"
            owd = r["owd_ms"] or {}
            lines.append(f"  {host}: goodput {r['goodput_bps'] / 1e6:.3f} Mb/s ({frac} of the tree rate; its branch "
                         f"alone {r['branch_bps'] / 1e6:.3g} Mb/s), missing {r['missing_seq']} of "
                         f"{r['received'] + r['missing_seq']}, " + (
                             "no packet received" if owd.get("p50") is None else f"one-way delay p50 {owd['p50']:.1f} ms"))
    return lines
