"""One cell of CVIHIS RTM's reno grid traced over reno's loss cycles: what RTM does between two of reno's losses.

Why: the grid (``hbh results-tcp --grid``) gives a cell's shares over the run's second half; why a share is
what it is shows in the cycle between two of reno's window reductions: how long the bottleneck's FIFO stays
empty, in which of the 7 areas RTM's decisions fall, how many MDs RTM takes where reno halves, and whether
the receiver's state (minDelay, maxDelay) still carries anything from the start (docs/background/cvihis.md,
"Why RTM from half the capacity ends above reno"). The run is ``rtm_cell``'s (topo/results/tcp.py), sampled
every ``--sample-ms``; the cores are read through their read-only state, never changed. A cycle starts at a
sample that finds reno in a new recovery, past a timeout or with a new ssthresh.

    python -m tests.topo.cvihis_cycles --cell 4.5/200 --start half --seed 1 --seconds 40
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from hosts.cvihis.areas import AREAS
from topo.results.tcp import RTM_STARTS, START_NAMES, grid_cells, scenario, start_rate
from topo.sim.network import SimNetwork

S = 1_000_000_000
MS = 1_000_000
EMPTY_PACKETS = 2  # a FIFO holding at most this many packets counts as empty (one in service, one arriving)


@dataclass
class Cycle:
    """What the samples between two of reno's window reductions saw."""

    start_s: float
    # reno's largest window outside recovery: its window at the loss that ends the cycle
    cwnd_peak: float = 0.0
    rates: list[float] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    md0: int = 0
    hist0: tuple[int, ...] = (0,) * AREAS
    rx0: tuple[int, int] = (0, 0)
    end_s: float = 0.0
    md: int = 0
    hist: tuple[int, ...] = (0,) * AREAS
    rx: tuple[int, int] = (0, 0)
    mins: list[float] = field(default_factory=list)  # RTM's minDelay in use, per sample (receiver clock, ns)
    delays: tuple[float, float] = (0.0, 0.0)  # minDelay and maxDelay at the cycle's end (receiver clock, ns)
    # the lowest minDelay of the run: the smallest OWD (RTM's pushed value falls back to any lower OWD)
    base: float = 0.0


def trace(
    rate: str, delay: str, start: str, seed: int, seconds: float, sample_ns: int, reading: str = ""
) -> tuple[list[Cycle], tuple[float, float]]:
    """Reno's cycles in one grid run, and (RTM, TCP) mean received rates (b/s) over the run's second half."""
    replace: tuple[tuple[str, str], ...] = ()
    if reading:
        replace += (("\nnodes:", f"\ncvihis: {reading}\nnodes:"),)
    if start:
        replace += (("control: cvihis-rtm}", f"control: cvihis-rtm, cvihis: {{start_rate: {start}}}}}"),)
    topo = scenario(
        "cvihis-rtm-vs-tcp",
        (f"link[R1-R2].rate={rate}", f"link[H1-R1].delay={delay}", f"link[H3-R1].delay={delay}"),
        replace,
    )
    net = SimNetwork(topo, seed=seed).build()
    rtm_id, tcp_id = net.hosts["H1"].flow_ids["rtm"], net.hosts["H3"].flow_ids["tcp"]
    source, sink = net.hosts["H1"].cvihis[rtm_id].core, net.hosts["H2"].sinks[rtm_id].core
    reno, tcp_rx = net.hosts["H3"].tcp.senders[tcp_id].cc, net.hosts["H4"].tcp.receivers[tcp_id]
    tm, port = net.switches["R1"].switch.tm, topo.port("R1", "R2")
    cycles: list[Cycle] = []
    tcp = net.hosts["H3"].tcp.senders[tcp_id]
    ssthresh, recovering, timeouts = reno.ssthresh, False, 0
    end, half, half_rx = int(seconds * S), None, (0, 0)
    t = 0
    while t < end:
        t = min(end, t + sample_ns)
        net.run_until(t)
        rx = (sink.received_bytes, tcp_rx.bytes_received)
        if half is None and t >= end // 2:
            half, half_rx = t, rx
        # reno's loss (a new recovery, a timeout, a new ssthresh) ends one cycle and starts the next
        if reno.ssthresh != ssthresh or tcp.timeouts != timeouts or (tcp.in_recovery and not recovering):
            if cycles:
                _close(cycles[-1], t, source.md_applied, sink, rx)
            cycles.append(Cycle(t / S, md0=source.md_applied, hist0=sink.area_histogram, rx0=rx))
        ssthresh, recovering, timeouts = reno.ssthresh, tcp.in_recovery, tcp.timeouts
        if cycles:
            c = cycles[-1]
            c.rates.append(source.rate_bps)
            c.depths.append(tm.port_depth(port))
            c.mins.append(sink.min_delay_ns)
            if not recovering:
                c.cwnd_peak = max(c.cwnd_peak, reno.cwnd)
    if cycles:
        _close(cycles[-1], end, source.md_applied, sink, rx)
    base = min((m for c in cycles for m in c.mins), default=0.0)
    for c in cycles:
        c.base = base
    span = max(end - (half or 0), 1) / S
    return cycles, ((rx[0] - half_rx[0]) * 8 / span, (rx[1] - half_rx[1]) * 8 / span)


def _close(c: Cycle, t: int, md: int, sink: object, rx: tuple[int, int]) -> None:
    c.end_s, c.md, c.hist, c.rx = t / S, md - c.md0, tuple(sink.area_histogram), rx  # type: ignore[attr-defined]
    c.delays = (sink.min_delay_ns, sink.max_delay_ns)  # type: ignore[attr-defined]


def table(cycles: list[Cycle]) -> list[str]:
    out = [
        "| reno's cycle (s) | reno's window at the next loss (segments) | RTM rate peak / low (Mb/s) | RTM's MDs | FIFO empty | RTM's "
        "decisions in areas 0 / 1 / 2-3 / 4-6 | received RTM / TCP (Mb/s) | minDelay lowest / at the end, maxDelay at the end (ms above the smallest OWD) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cycles:
        n = [b - a for a, b in zip(c.hist0, c.hist)]
        total = sum(n) or 1
        parts = (n[0], n[1], n[2] + n[3], sum(n[4:]))
        span = max(c.end_s - c.start_s, 1e-9)
        rtm, tcp = ((b - a) * 8 / span / 1e6 for a, b in zip(c.rx0, c.rx))
        empty = sum(d <= EMPTY_PACKETS for d in c.depths) / max(len(c.depths), 1)
        out.append(
            f"| {c.start_s:.1f}-{c.end_s:.1f} | {f'{c.cwnd_peak:.0f}' if c.cwnd_peak else '-'} | "
            f"{max(c.rates, default=0) / 1e6:.2f} / {min(c.rates, default=0) / 1e6:.2f} | {c.md} | "
            f"{100 * empty:.0f} % | {' / '.join(f'{100 * p / total:.0f}' for p in parts)} % | "
            f"{rtm:.2f} / {tcp:.2f} | {(min(c.mins) - c.base) / MS:.0f} / {(c.delays[0] - c.base) / MS:.0f}, "
            f"{(c.delays[1] - c.base) / MS:.0f} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tests.topo.cvihis_cycles", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--cell", default="4.5/200", help="the grid's cell, MBPS/RTT (e.g. 4.5/200)")
    p.add_argument("--start", default="half", help=f"RTM's starting rate, one of {', '.join(START_NAMES)}")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=40.0, help="the run's length (s)")
    p.add_argument("--sample-ms", type=float, default=20.0, help="how often the cores and the FIFO are read")
    p.add_argument("--reading", default="", help="a cvihis: mapping for the file (e.g. '{variant: probe}')")
    args = p.parse_args(argv)
    if args.start not in START_NAMES:
        p.error(f"--start {args.start}: use one of {', '.join(START_NAMES)}")
    if args.seconds <= 0 or args.sample_ms <= 0:
        p.error("--seconds and --sample-ms must be > 0")
    try:
        ((rate, _rtt, delay),) = grid_cells(args.cell)
    except ValueError as exc:
        p.error(str(exc))
    start = RTM_STARTS[START_NAMES.index(args.start)]
    cycles, (rtm, tcp) = trace(
        rate,
        delay,
        start_rate(start, rate),
        args.seed,
        args.seconds,
        round(args.sample_ms * MS),
        args.reading,
    )
    print("\n".join(table(cycles)))
    ratio = max(rtm, tcp) / min(rtm, tcp) if min(rtm, tcp) > 0 else float("inf")
    print(
        f"\nsecond half ({args.seconds / 2:g}-{args.seconds:g} s): RTM {rtm / 1e6:.2f} Mb/s, TCP {tcp / 1e6:.2f} Mb/s, "
        f"ratio {ratio:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
