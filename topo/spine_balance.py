"""How balanced can per-flow ECMP be? The spine gap a 5-tuple hash gives, from the workload alone.

Why: issue 24 asks for per-spine utilisation within 10 % under the web-search workload at 50 %
load, and the fabric section's 2 s of arrivals measured about 15 %. A hash sends each flow's bytes
to one spine, so with a heavy-tailed size distribution the gap is set by the few largest flows,
however good the hash: this module draws the spine of every inter-leaf flow at random (an ideal
hash) many times and gives the gap's distribution, for runs of several lengths. If the
simulator's gaps sit inside it, the gap is the hashing granularity of a short run, not the hash.

    python -m topo.spine_balance [--load 0.5] [--seconds 2 8 32] [--seeds 10]
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from topo.fabric import FabricSpec
from topo.results_fabric import CDF, SIZE_SCALE, SPEC
from topo.workload import cdf_named, poisson_flows

__all__ = ["GapStats", "hash_gaps", "gap_stats", "main"]

DRAWS = 200  # random spine assignments per workload
TARGET_PCT = 10.0


def _leaf(host: str) -> str:
    return host.split("_")[0]


def hash_gaps(sizes: Sequence[int], draws: int, rng: random.Random) -> list[float]:
    """Gaps |A - B| / mean(A, B) in percent over two spines, each flow's bytes on one spine drawn
    with probability 1/2, ``draws`` times."""
    total = sum(sizes)
    if total <= 0:
        raise ValueError("no bytes cross the spines: nothing to balance")
    out = []
    for _ in range(draws):
        a = sum(s for s in sizes if rng.random() < 0.5)
        out.append(100 * abs(2 * a - total) / (total / 2))
    return out


@dataclass(frozen=True)
class GapStats:
    seconds: float
    flows: int  # inter-leaf flows per run (mean over seeds)
    median: float
    p90: float
    within_target: float  # share of draws with gap <= TARGET_PCT
    largest_share: float  # the largest flow's share of a run's inter-leaf bytes (mean over seeds), %


def gap_stats(seconds: float, seeds: int, load: float = 0.5, spec: FabricSpec = SPEC, cdf: str = CDF,
              size_scale: float = SIZE_SCALE) -> GapStats:
    """The gap's distribution over ``seeds`` workloads of ``seconds`` of arrivals (the fabric
    section's fabric and workload by default)."""
    gaps: list[float] = []
    flows, largest = [], []
    for seed in range(1, seeds + 1):
        wl = poisson_flows(spec.hosts(), cdf_named(cdf), load=load, host_rate_bps=spec.host_rate_bps,
                           duration_ns=round(seconds * 1e9), seed=seed, size_scale=size_scale)
        sizes = [f.size_bytes for f in wl if _leaf(f.src) != _leaf(f.dst)]
        gaps += hash_gaps(sizes, DRAWS, random.Random(f"{seed}:spine-balance"))
        flows.append(len(sizes))
        largest.append(100 * max(sizes) / sum(sizes))
    gaps.sort()
    return GapStats(seconds, round(statistics.fmean(flows)), statistics.median(gaps), gaps[int(0.9 * len(gaps))],
                    sum(g <= TARGET_PCT for g in gaps) / len(gaps), statistics.fmean(largest))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m topo.spine_balance", description=__doc__.split("\n\n")[0])
    p.add_argument("--load", type=float, default=0.5)
    p.add_argument("--seconds", type=float, nargs="+", default=[2.0, 8.0, 32.0], help="arrivals per run")
    p.add_argument("--seeds", type=int, default=10)
    args = p.parse_args(argv)
    if args.seeds < 1 or min(args.seconds) <= 0:
        p.error("--seeds must be >= 1 and every --seconds > 0")
    print(f"| arrivals (s) | inter-leaf flows | gap median (%) | gap p90 (%) | P(gap <= {TARGET_PCT:g} %) | "
          "largest flow's share (%) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for s in args.seconds:
        g = gap_stats(s, args.seeds, args.load)
        print(f"| {s:g} | {g.flows} | {g.median:.1f} | {g.p90:.1f} | {g.within_target:.2f} | {g.largest_share:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
