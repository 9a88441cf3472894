"""Flow completion times of sized flows, and what fabric papers report of them.

Why an ideal FCT computed rather than measured alone: "slowdown" is FCT over the flow's time in an
idle network; we take the line-rate bound the fabric papers use (pFabric, HPCC), here a strict
lower bound of the simulator's TCP model: the handshake's round trip and the last byte's one-way
trip (three one-way propagation delays of the path) plus every data frame of the flow serialised at
the path's slowest link. Slow start is not in it, so a small flow's slowdown also shows the
handshake-free ideal it cannot reach; slowdown >= 1 always (a test holds the simulator to it).

Buckets are decades of flow size (``[10^k, 10^(k+1))`` bytes); percentiles are nearest-rank (topo/net/stats.py, the one percentile of every metric).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hosts.tcp.sender import MSS
from hosts.tcp.wire import data_frame_bytes
from topo.net.model import Flow, Topology
from topo.net.record import LawRow
from topo.net.stats import percentile

__all__ = ["FctRow", "ideal_fct_ns", "fct_rows", "bucket_of", "slowdown_table", "write_fct_csv",
           "port_occupancy", "FCT_FIELDS"]

FCT_FIELDS = ("flow", "src", "dst", "size_bytes", "start_ns", "end_ns", "fct_ns", "ideal_ns", "slowdown",
              "goodput_bps")


@dataclass(frozen=True)
class FctRow:
    flow: str
    src: str
    dst: str
    size_bytes: int
    start_ns: int
    end_ns: int | None  # None: not complete when the run ended
    ideal_ns: int

    @property
    def fct_ns(self) -> int | None:
        return None if self.end_ns is None else self.end_ns - self.start_ns

    @property
    def slowdown(self) -> float | None:
        return None if self.fct_ns is None else self.fct_ns / self.ideal_ns

    @property
    def goodput_bps(self) -> float | None:
        return None if not self.fct_ns else 8 * self.size_bytes * 1e9 / self.fct_ns


def wire_bytes(size_bytes: int) -> int:
    """Bytes on the wire of a flow's data frames (full MSS segments, then the rest)."""
    full, rest = divmod(size_bytes, MSS)
    return full * data_frame_bytes(MSS) + (data_frame_bytes(rest) if rest else 0)


def ideal_fct_ns(topo: Topology, flow: Flow) -> int:
    """3 one-way propagation delays of the flow's path + its data frames at the slowest link's rate
    (every equal-cost path of a generated fabric has the same delays and rates)."""
    links = [topo.link_between(u, v) for u, v in zip(flow.path, flow.path[1:])]
    one_way = sum(link.delay_ns for link in links)
    slowest = min(link.rate_bps for link in links)
    return 3 * one_way + math.ceil(8e9 * wire_bytes(flow.size_bytes or 0) / slowest)


def fct_rows(topo: Topology, completed_ns: dict[str, int | None]) -> list[FctRow]:
    """One row per sized flow; ``completed_ns[name]``: when its last byte was delivered (or None)."""
    return [FctRow(f.name, f.src, f.dst, f.size_bytes, f.start_ns, completed_ns.get(f.name), ideal_fct_ns(topo, f))
            for f in topo.flows if f.size_bytes is not None]


def bucket_of(size_bytes: int) -> int:
    """The decade of a size: k for 10^k <= size < 10^(k+1)."""
    return int(math.floor(math.log10(max(size_bytes, 1)) + 1e-12))


def slowdown_table(rows: Iterable[FctRow]) -> list[dict[str, float | int | str]]:
    """Per size decade (and ``all``): flows, completed, p50 and p99 slowdown and FCT."""
    done = [r for r in rows if r.end_ns is not None]
    groups: dict[str, list[FctRow]] = {}
    for r in sorted(done, key=lambda r: r.size_bytes):
        k = bucket_of(r.size_bytes)
        groups.setdefault(f"[1e{k}, 1e{k + 1})", []).append(r)
    groups["all"] = done
    out: list[dict[str, float | int | str]] = []
    for label, rs in groups.items():
        if not rs:
            continue
        sd = [r.slowdown for r in rs if r.slowdown is not None]
        fct = [float(r.fct_ns) for r in rs if r.fct_ns is not None]
        out.append({"bucket": label, "flows": len(rs), "p50_slowdown": percentile(sd, 0.5),
                    "p99_slowdown": percentile(sd, 0.99), "p50_fct_ms": percentile(fct, 0.5) / 1e6,
                    "p99_fct_ms": percentile(fct, 0.99) / 1e6})
    return out


def write_fct_csv(rows: Iterable[FctRow], path: Path) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FCT_FIELDS)
        for r in rows:
            w.writerow([r.flow, r.src, r.dst, r.size_bytes, r.start_ns, "" if r.end_ns is None else r.end_ns,
                        "" if r.fct_ns is None else r.fct_ns, r.ideal_ns,
                        "" if r.slowdown is None else f"{r.slowdown:.4f}",
                        "" if r.goodput_bps is None else f"{r.goodput_bps:.0f}"])


def port_occupancy(topo: Topology, laws: Iterable[LawRow]) -> dict[tuple[str, str], dict[str, float]]:
    """Per buffer ``(upstream, downstream)``: mean and max occupancy (packets) over its reports (or
    end-to-end samples), and the fraction of the reports after which the upstream's law held the
    port below 99 % of the link's rate (its throttle time; 0 where no law acts)."""
    seen: dict[tuple[str, str], list[LawRow]] = {}
    for row in laws:
        seen.setdefault((row.node, row.toward), []).append(row)
    out: dict[tuple[str, str], dict[str, float]] = {}
    for (u, v), rows in seen.items():
        occ = [r.occupancy for r in rows]
        line = topo.link_between(u, v).rate_bps
        throttled = sum(1 for r in rows if 0 < r.rate_bps < 0.99 * line)
        out[(u, v)] = {"mean": sum(occ) / len(occ), "max": float(max(occ)), "throttled": throttled / len(rows)}
    return out
