"""One row of CVIHIS's two-bottleneck test traced by where its FIFOs overflow: which queue's fills bring each flow's
MDs, and after which fill R1-R2 stands idle.

Why: in a row whose R2-R3 leaves flow 3 more than the two flows that cross both bottlenecks (row 6), those two
flows must fill R1-R2 to reach their published rates; whether they fall short because of R1-R2 or because R2-R3's
overflows cut them too is not in the flows' rates, nor in the receivers' delays (the paper's receiver does not see
where a packet was dropped). It is in the switches' drop counters: the run is ``hbh results-tcp --targets``'s row
(topo/results/tcp.py), sampled every ``--sample-ms``; a *fill* is a run of samples in which one queue drops, apart
from its next by at least ``FILL_GAP_MS`` without a drop there. An MD is put down to the newest fill, of either
queue, that began between ``LAG_MS`` (a drop is known one one-way delay later at the earliest) and ``SPAN_MS``
before it; R1-R2's idle time (its capacity less what it sent) to the newest fill before it
(docs/background/cvihis.md, "Row 6, what is left"). The cores are read through their read-only state, never changed.

    python -m tests.topo.cvihis_fills --row 6 --seed 1
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from topo.results.tcp import TARGET_ROWS, scenario
from topo.run.summary import final_link_rates
from topo.sim.network import SimNetwork

S = 1_000_000_000
MS = 1_000_000
FILL_GAP_MS = 200  # samples with drops at one queue closer than this belong to one fill
LAG_MS = 50  # an MD follows its drop by one one-way delay at least (the receiver learns of it, then the sender)
SPAN_MS = 1000  # ... and by at most this (the loss is declared three packets later; the feedback returns)
QUEUES = (("R1", "R2"), ("R2", "R3"))


@dataclass
class Trace:
    """What the samples of a run's second half saw."""

    fills: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # queue -> (start ns, drops) per fill
    mds: dict[str, list[int]] = field(default_factory=dict)  # flow -> the times of its MDs (ns)
    idle: list[tuple[int, float]] = field(default_factory=list)  # (sample ns, R1-R2's idle seconds in it)
    goodput: dict[str, float] = field(default_factory=dict)  # flow -> b/s received over the second half
    seconds: float = 0.0
    capacity_bps: float = 0.0  # R1-R2's rate


def trace(row: str, seed: int, seconds: float, sample_ns: int, reading: str = "") -> Trace:
    """Sample one row's run: each queue's drops, R1-R2's departures, each flow's MDs and received bytes."""
    _, sets, _ = next(r for r in TARGET_ROWS if r[0] == row)
    replace = (("\nnodes:", f"\ncvihis: {reading}\nnodes:"),) if reading else ()
    topo = scenario("cvihis-two-bottleneck", sets, replace)
    net = SimNetwork(topo, seed=seed).build()
    flows = [f for f in topo.flows if f.start_ns < seconds * S]
    ids = {f.name: net.hosts[f.src].flow_ids[f.name] for f in flows}
    sources = {f.name: net.hosts[f.src].cvihis[ids[f.name]].core for f in flows}
    sinks = {f.name: net.hosts[f.dst].sinks[ids[f.name]].core for f in flows}
    ports = {q: (net.switches[q[0]].switch.tm, topo.port(*q)) for q in QUEUES}
    capacity = final_link_rates(topo)["R1->R2"]
    per_sample = capacity * sample_ns / S / (8 * topo.flows[0].packet_size)
    out = Trace(fills={f"{a}-{b}": [] for a, b in QUEUES}, mds={f.name: [] for f in flows}, capacity_bps=capacity)
    end, half = int(seconds * S), int(seconds * S) // 2
    dropped = {q: 0 for q in QUEUES}
    last_drop: dict[tuple[str, str], int | None] = {q: None for q in QUEUES}
    sent, md = 0, {n: 0 for n in sources}
    rx0: dict[str, int] | None = None
    t = 0
    while t < end:
        t = min(end, t + sample_ns)
        net.run_until(t)
        counts = {q: tm.stats(p) for q, (tm, p) in ports.items()}
        if rx0 is None and t >= half:
            rx0 = {n: s.received_bytes for n, s in sinks.items()}
        if t > half:
            _take_drops(out, counts, dropped, last_drop, t)
            # signed: a sample that sends one packet more than its share of the capacity repays its neighbour's
            # part-packet, so the sum over any span is that span's idle time exactly
            out.idle.append((t, (per_sample - (counts[QUEUES[0]].dequeued - sent)) / per_sample * sample_ns / S))
            for n, src in sources.items():
                out.mds[n].extend([t] * (src.md_applied - md[n]))
        dropped = {q: c.dropped_full for q, c in counts.items()}
        sent = counts[QUEUES[0]].dequeued
        md = {n: src.md_applied for n, src in sources.items()}
    out.seconds = (end - half) / S
    out.goodput = {n: (s.received_bytes - (rx0 or {}).get(n, 0)) * 8 / out.seconds for n, s in sinks.items()}
    return out


def _take_drops(out: Trace, counts: dict, dropped: dict, last_drop: dict, t: int) -> None:
    """A sample's new drops at each queue: a new fill, or more of the newest one."""
    for q, c in counts.items():
        new = c.dropped_full - dropped[q]
        if not new:
            continue
        fills = out.fills[f"{q[0]}-{q[1]}"]
        if last_drop[q] is None or t - last_drop[q] >= FILL_GAP_MS * MS:
            fills.append((t, 0))
        fills[-1] = (fills[-1][0], fills[-1][1] + new)
        last_drop[q] = t


def _newest_fill(tr: Trace, t: int, lo_ns: int, hi_ns: int) -> str:
    """The queue whose newest fill began between ``lo_ns`` and ``hi_ns`` before ``t`` ("-": none did)."""
    best, start = "-", -1
    for q, fills in tr.fills.items():
        for s, _ in fills:
            if t - hi_ns <= s <= t - lo_ns and s > start:
                best, start = q, s
    return best


def table(tr: Trace) -> list[str]:
    names = list(tr.fills)
    out = ["| flow | received over the second half (kb/s) | MDs per minute | " +
           " | ".join(f"after {q}'s fills" for q in names) + " | after neither |",
           "|---|---|---|" + "---|" * (len(names) + 1)]
    for flow, times in tr.mds.items():
        by = [_newest_fill(tr, t, LAG_MS * MS, SPAN_MS * MS) for t in times]
        cells = [by.count(q) for q in names] + [by.count("-")]
        out.append(f"| {flow} | {tr.goodput[flow] / 1e3:.0f} | {len(times) * 60 / tr.seconds:.0f} | " +
                   " | ".join(f"{100 * c / max(len(times), 1):.0f} %" for c in cells) + " |")
    idle = sum(s for _, s in tr.idle)
    after = {q: 0.0 for q in [*names, "-"]}
    for t, s in tr.idle:
        after[_newest_fill(tr, t, 0, tr.seconds * S)] += s
    out.append("")
    out.append("fills (drops): " + ", ".join(f"{q} {len(f)} ({sum(d for _, d in f)})" for q, f in tr.fills.items()) +
               f"; R1-R2 idle {100 * idle / tr.seconds:.1f} % of the second half, after the newest fill of " +
               ", ".join(f"{q if q != '-' else 'neither'} {100 * s / max(idle, 1e-9):.0f} %" for q, s in after.items()))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.topo.cvihis_fills", description=__doc__.split("\n\n")[0])
    rows = [r[0] for r in TARGET_ROWS]
    p.add_argument("--row", default="6", help=f"the two-bottleneck row, one of {', '.join(rows)}")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=120.0, help="the run's length (s; the rows: 120)")
    p.add_argument("--sample-ms", type=float, default=10.0, help="how often the counters and cores are read")
    p.add_argument("--reading", default="", help="a cvihis: mapping for the file (e.g. '{max_delay: ewma}')")
    args = p.parse_args(argv)
    if args.row not in rows:
        p.error(f"--row {args.row}: use one of {', '.join(rows)}")
    if args.seconds <= 0 or args.sample_ms <= 0:
        p.error("--seconds and --sample-ms must be > 0")
    tr = trace(args.row, args.seed, args.seconds, round(args.sample_ms * MS), args.reading)
    print("\n".join(table(tr)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
