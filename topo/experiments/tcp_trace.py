"""A TCP run's trace: the sender's state and the bottleneck's queue, sampled together.

Why a file of its own: a kernel run cannot be repeated (the machine, its load, the real-time
emulation), so ``topo.experiments.tcp_validation --save-kernel`` keeps, beside each run's measures, the samples
that explain them (every 100 ms: cwnd, retransmissions and RTT from TCP_INFO, the bottleneck's
occupancy), and ``topo.experiments.tcp_diagnosis`` reads them against the simulator's run of the same case.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TracePoint", "trace_of_run", "write_trace", "read_trace", "TRACE_SUFFIX", "FIELDS", "STATE_FIELDS"]

TRACE_SUFFIX = ".trace.csv"
FIELDS = ("t_s", "cwnd_pkts", "retrans_total", "rtt_ms", "occupancy_pkts")
#: Written when the run sampled them (tcp.csv's, from commit 7af42ea on), blank otherwise: TCP_INFO's
#: ssthresh and congestion-avoidance state, which tell a loss recovery (3) from a CWR reduction (2).
STATE_FIELDS = ("ssthresh_pkts", "ca_state")


@dataclass(frozen=True)
class TracePoint:
    t_s: float
    cwnd: int
    retrans: int
    rtt_ms: float
    occupancy: int
    ssthresh: int | None = None
    ca_state: int | None = None


def trace_of_run(run_dir: Path) -> list[TracePoint]:
    """One run's samples: tcp.csv's sender state joined with the bottleneck's occupancy (laws.csv's
    R1 -> H2 rows) at the same sampling times; ValueError naming what is missing."""
    tcp, laws = run_dir / "tcp.csv", run_dir / "laws.csv"
    for path in (tcp, laws):
        if not path.is_file():
            raise ValueError(f"{run_dir}: no {path.name} (a TCP run of topo.experiments.tcp_validation writes it)")
    with laws.open() as f:
        occ = {round(float(r["t_s"]), 3): int(r["occupancy_pkts"]) for r in csv.DictReader(f)
               if r["node"] == "R1" and r["toward"] == "H2"}
    with tcp.open() as f:
        return [TracePoint(t, int(r["cwnd_pkts"]), int(r["retrans_total"]), float(r["rtt_ms"]), occ[t], *_state(r))
                for r in csv.DictReader(f) if (t := round(float(r["t_s"]), 3)) in occ]


def _state(row: dict[str, str]) -> tuple[int | None, int | None]:
    return tuple(int(v) if (v := row.get(k)) else None for k in STATE_FIELDS)  # type: ignore[return-value]


def write_trace(points: list[TracePoint], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS + STATE_FIELDS)
        w.writerows([f"{p.t_s:.3f}", p.cwnd, p.retrans, f"{p.rtt_ms:.3f}", p.occupancy,
                     "" if p.ssthresh is None else p.ssthresh, "" if p.ca_state is None else p.ca_state]
                    for p in points)


def read_trace(path: Path) -> list[TracePoint]:
    """A stored trace; ValueError naming the file and what is wrong with it."""
    try:
        with path.open() as f:
            rows = list(csv.DictReader(f))
        return [TracePoint(float(r["t_s"]), int(r["cwnd_pkts"]), int(r["retrans_total"]), float(r["rtt_ms"]),
                           int(r["occupancy_pkts"]), *_state(r)) for r in rows]
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a trace (columns {', '.join(FIELDS)}): {exc}") from None
