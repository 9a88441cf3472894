"""Cells of CVIHIS RTM's reno grid traced by the overflows of their FIFO: how many of each overflow's drops are RTM's,
and how many MDs RTM takes where reno halves once.

Why: the paper says RTT affects CVIHIS less than TCP (its rate grows as RTT^-1.5 per second, reno's as RTT^-2), yet
at 2 Mb/s RTM's share falls from RTT 20 to 200 ms (docs/background/cvihis.md, "Why RTM's share falls with RTT at 2
Mb/s"). What sets it is not in the flows' rates: it is how long the 50-packet FIFO stays full at each overflow (until
reno has seen its loss and halved: about one RTT), how many of RTM's paced packets arrive in that time, and so how many
MDs of 1.10 RTM takes per halving of reno's. The runs are ``rtm_cell``'s (topo/results/tcp.py) sampled every
``--sample-ms``; an *overflow* is a run of samples in which the bottleneck drops, apart from the next by at least
``GAP_MS``. The cores are read through their read-only state, never changed.

    python -m tests.topo.cvihis_overflows --cells 2/20,2/200 --seeds 1-5 --seconds 240 --skip 80
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field

from topo.file.settings import parse_seeds
from topo.results.tcp import grid_cells, scenario

S = 1_000_000_000
MS = 1_000_000
GAP_MS = 1000  # drops closer than this belong to one overflow (reno's halving ends one within about an RTT)


@dataclass
class Sample:
    """The read-only state one sample saw."""

    t: int
    drops: int  # the bottleneck's drops so far (a full FIFO)
    rtm_lost: int  # RTM's receiver: packets lost so far
    rtm_md: int  # RTM's sender: MDs applied so far
    decisions: int  # RTM's receiver: periodic decisions so far
    srtt: int  # RTM's sender: smoothed RTT (ns)
    depth: int  # the bottleneck's FIFO (packets)
    rx: tuple[int, int]  # bytes received, RTM and TCP


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    reno_losses: list[int] = field(default_factory=list)  # times (ns) reno reduced its window


def trace(rate: str, delay: str, seed: int, seconds: float, sample_ns: int, reading: str = "",
          buffer: int = 0) -> Run:
    """One grid cell's run, sampled; ``buffer`` > 0 sets the bottleneck's FIFO (packets; a diagnosis, not the
    paper's set-up)."""
    sets = (f"link[R1-R2].rate={rate}", f"link[H1-R1].delay={delay}", f"link[H3-R1].delay={delay}")
    sets += (f"link[R1-R2].buffer={buffer}",) if buffer else ()
    replace = (("\nnodes:", f"\ncvihis: {reading}\nnodes:"),) if reading else ()
    from topo.sim.network import SimNetwork  # noqa: PLC0415 (the simulator only for a run)

    topo = scenario("cvihis-rtm-vs-tcp", sets, replace)
    net = SimNetwork(topo, seed=seed).build()
    rid, tid = net.hosts["H1"].flow_ids["rtm"], net.hosts["H3"].flow_ids["tcp"]
    source, sink = net.hosts["H1"].cvihis[rid].core, net.hosts["H2"].sinks[rid].core
    tcp, tcp_rx = net.hosts["H3"].tcp.senders[tid], net.hosts["H4"].tcp.receivers[tid]
    tm, port = net.switches["R1"].switch.tm, topo.port("R1", "R2")
    out = Run()
    ssthresh, recovering, timeouts = tcp.cc.ssthresh, False, 0
    t, end = 0, int(seconds * S)
    while t < end:
        t = min(end, t + sample_ns)
        net.run_until(t)
        if tcp.cc.ssthresh != ssthresh or tcp.timeouts != timeouts or (tcp.in_recovery and not recovering):
            out.reno_losses.append(t)
        ssthresh, recovering, timeouts = tcp.cc.ssthresh, tcp.in_recovery, tcp.timeouts
        out.samples.append(Sample(t, tm.stats(port).dropped_full, sink.lost, source.md_applied,
                                  sum(sink.area_histogram), source.rtt_ns, tm.port_depth(port),
                                  (sink.received_bytes, tcp_rx.bytes_received)))
    return out


def measure(run: Run, skip: float) -> dict[str, float]:
    """What the samples after ``skip`` seconds saw: shares, RTT, decisions per RTT, overflows and who lost what."""
    sm = [s for s in run.samples if s.t > skip * S]
    first = next(s for s in run.samples if s.t >= skip * S)
    span = (sm[-1].t - first.t) / S
    overflows: list[list[int]] = []  # [start, end] per overflow
    for prev, cur in zip([first, *sm], sm):
        if cur.drops > prev.drops:
            if not overflows or cur.t - overflows[-1][1] > GAP_MS * MS:
                overflows.append([cur.t, cur.t])
            overflows[-1][1] = cur.t
    n = max(1, len(overflows))
    reno = sum(1 for t in run.reno_losses if t > first.t)
    rtm, tcp = ((b - a) * 8 / span for a, b in zip(first.rx, sm[-1].rx))
    drops, lost, md = (getattr(sm[-1], k) - getattr(first, k) for k in ("drops", "rtm_lost", "rtm_md"))
    srtt = statistics.fmean(s.srtt for s in sm)
    return {
        "share": 100 * rtm / max(1.0, rtm + tcp), "rtm": rtm / 1e3, "tcp": tcp / 1e3, "srtt": srtt / MS,
        "decisions_per_rtt": (sm[-1].decisions - first.decisions) / span * srtt / S,
        "queue": statistics.fmean(s.depth for s in sm), "overflows_min": len(overflows) / span * 60,
        "reno_min": reno / span * 60, "full_ms": statistics.fmean((b - a) / MS for a, b in overflows or [[0, 0]]),
        "drops": drops / n, "rtm_lost": lost / n, "rtm_part": 100 * lost / max(1, drops),
        "spared": 100 * _spared(sm, overflows) / n, "md_per_reno": md / max(1, reno),
    }


def _spared(sm: list[Sample], overflows: list[list[int]]) -> int:
    """Overflows after which RTM declares no loss before the next one begins (or within ``GAP_MS`` of the end)."""
    spared = 0
    for i, (a, b) in enumerate(overflows):
        until = overflows[i + 1][0] if i + 1 < len(overflows) else b + GAP_MS * MS
        inside = [s.rtm_lost for s in sm if a - 20 * MS <= s.t <= until]
        spared += bool(inside) and inside[-1] == inside[0]
    return spared


COLUMNS = (("share", "RTM's share (%)", 1), ("srtt", "RTM's SRTT (ms)", 0), ("decisions_per_rtt", "decisions per RTT", 2),
           ("queue", "FIFO (packets)", 1), ("overflows_min", "overflows a minute", 1),
           ("reno_min", "reno's losses a minute", 1), ("full_ms", "overflow (ms)", 0), ("drops", "drops an overflow", 2),
           ("rtm_lost", "RTM's of them", 2), ("rtm_part", "RTM's part (%)", 0),
           ("spared", "overflows sparing RTM (%)", 0), ("md_per_reno", "RTM's MDs per reno loss", 2))


def table(rows: list[tuple[str, dict[str, float]]]) -> list[str]:
    out = ["| cell | " + " | ".join(c[1] for c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name, m in rows:
        out.append(f"| {name} | " + " | ".join(f"{m[k]:.{d}f}" for k, _, d in COLUMNS) + " |")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.topo.cvihis_overflows", description=__doc__.split("\n\n")[0])
    p.add_argument("--cells", default="2/20,2/200", help="the grid's cells, MBPS/RTT,... (e.g. 2/20,2/200)")
    p.add_argument("--seeds", default="1", help="seeds, e.g. 1-5 (each cell's row is their mean)")
    p.add_argument("--seconds", type=float, default=40.0, help="each run's length (s)")
    p.add_argument("--skip", type=float, default=None, help="read from this time on (s; default: the second half)")
    p.add_argument("--sample-ms", type=float, default=10.0, help="how often the cores and the FIFO are read")
    p.add_argument("--reading", default="", help="a cvihis: mapping for the file (e.g. '{variant: reprobe-slow}')")
    p.add_argument("--buffer", type=int, default=0, help="the bottleneck's FIFO in packets (0: the file's 50)")
    args = p.parse_args(argv)
    skip = args.seconds / 2 if args.skip is None else args.skip
    if args.seconds <= 0 or args.sample_ms <= 0 or not 0 <= skip < args.seconds or args.buffer < 0:
        p.error("--seconds and --sample-ms must be > 0, --skip in [0, --seconds), --buffer >= 0")
    try:
        cells = grid_cells(args.cells)
    except ValueError as exc:
        p.error(str(exc))
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError:
        p.error(f"--seeds {args.seeds}: use N, N-M or a comma list of those (e.g. 1-5)")
    rows = []
    for rate, rtt, delay in cells:
        runs = [measure(trace(rate, delay, seed, args.seconds, round(args.sample_ms * MS), args.reading, args.buffer),
                        skip) for seed in seeds]
        rows.append((f"{rate.removesuffix('Mbps')}/{rtt}", {k: statistics.fmean(r[k] for r in runs) for k in runs[0]}))
    print("\n".join(table(rows)))
    print(f"\nseeds {args.seeds}, {args.seconds:g} s runs read over {skip:g}-{args.seconds:g} s"
          + (f", FIFO {args.buffer} packets" if args.buffer else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
