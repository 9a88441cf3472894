"""How balanced can per-flow ECMP be? The spine gap a 5-tuple hash gives, from the workload alone.

Why: issue 24 asks for per-spine utilisation within 10 % under the web-search workload at 50 %
load, and the fabric section's 2 s of arrivals measured about 15 %. A hash sends each flow's bytes
to one spine, so with a heavy-tailed size distribution the gap is set by the few largest flows,
however good the hash: this module draws the spine of every inter-leaf flow at random (an ideal
hash) many times and gives the gap's distribution, for runs of several lengths. If the
simulator's gaps sit inside it, the gap is the hashing granularity of a short run, not the hash.

    hbh spine-balance [--load 0.5] [--seconds 2 8 32] [--seeds 10]

``--workload`` judges one exact workload instead (the one ``hbh fabric`` draws with the
same arguments): the ideal hash's gap over *its* inter-leaf flows, and over its host pairs (the
unit a hash of the addresses alone can spread), so that a measured gap can be set against what
the hash could give on those very flows:

    hbh spine-balance --workload --leaves 2 --hosts-per-leaf 2 --host-rate 1Mb/s \
        --duration 8s --size-scale 0.0005 --seed 1
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runtime.arguments import ValueParser
from topo.experiments.fabric import FabricSpec
from topo.file.workload import FlowSpec, WorkloadError, cdf_named, poisson_flows
from topo.net.stats import percentile
from topo.results.fabric import CDF, SIZE_SCALE, SPEC

__all__ = ["GapStats", "hash_gaps", "gap_stats", "WorkloadOdds", "workload_odds", "main"]

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
    return GapStats(seconds, round(statistics.fmean(flows)), percentile(gaps, 0.5), percentile(gaps, 0.9),
                    sum(g <= TARGET_PCT for g in gaps) / len(gaps), statistics.fmean(largest))


@dataclass(frozen=True)
class WorkloadOdds:
    """The ideal hash's gap over one workload's inter-leaf traffic, hashed in units of ``unit``."""

    unit: str  # "flow" or "host pair"
    units: int  # how many units carry inter-leaf bytes
    median: float
    p90: float
    within_target: float  # share of draws with gap <= TARGET_PCT
    largest_share: float  # the largest unit's share of the inter-leaf bytes, %


UNITS: dict[str, Callable[[FlowSpec], object]] = {"flow": lambda f: f.name, "host pair": lambda f: (f.src, f.dst)}


def workload_odds(flows: Sequence[FlowSpec], unit: str = "flow", draws: int = 1000, seed: int = 1) -> WorkloadOdds:
    """How likely an ideal hash puts ``flows``' inter-leaf bytes within TARGET_PCT on two spines,
    when it spreads them per ``unit``: every flow on its own (a 5-tuple hash with ports), or every
    host pair's flows together (a hash of the addresses alone)."""
    key = UNITS[unit]
    groups: dict[object, int] = {}
    for f in flows:
        if _leaf(f.src) != _leaf(f.dst):
            groups[key(f)] = groups.get(key(f), 0) + f.size_bytes
    sizes = list(groups.values())
    gaps = sorted(hash_gaps(sizes, draws, random.Random(f"{seed}:{unit}:workload-odds")))
    return WorkloadOdds(unit, len(sizes), percentile(gaps, 0.5), percentile(gaps, 0.9),
                        sum(g <= TARGET_PCT for g in gaps) / len(gaps), 100 * max(sizes) / sum(sizes))


def _workload_parser(p: argparse.ArgumentParser) -> None:
    base = FabricSpec()
    p.add_argument("--workload", action="store_true", help="judge the one workload topo.experiments.fabric draws with these")
    p.add_argument("--cdf", default=CDF)
    p.add_argument("--leaves", type=int, default=base.leaves)
    p.add_argument("--hosts-per-leaf", type=int, default=base.hosts_per_leaf)
    p.add_argument("--host-rate", default=base.host_rate)
    p.add_argument("--duration", default="8s", help="--workload: arrivals during this long")
    p.add_argument("--size-scale", type=float, default=SIZE_SCALE)
    p.add_argument("--seed", type=int, default=1, help="--workload: the workload's seed")


def _one_workload(args: argparse.Namespace) -> int:
    from controlplane.units import parse_duration_ns

    spec = FabricSpec(leaves=args.leaves, hosts_per_leaf=args.hosts_per_leaf, host_rate=args.host_rate)
    try:
        flows = poisson_flows(spec.hosts(), cdf_named(args.cdf), load=args.load, host_rate_bps=spec.host_rate_bps,
                              duration_ns=parse_duration_ns(args.duration, "--duration"), seed=args.seed,
                              size_scale=args.size_scale)
        rows = [workload_odds(flows, unit) for unit in UNITS]
    except (WorkloadError, ValueError) as exc:
        print(f"hbh spine-balance: {exc}", file=sys.stderr)
        return 2
    inter = [f for f in flows if _leaf(f.src) != _leaf(f.dst)]
    print(f"{len(flows)} flows, {len(inter)} inter-leaf ({sum(f.size_bytes for f in inter)} bytes)")
    print(f"| hashed per | units | gap median (%) | gap p90 (%) | P(gap <= {TARGET_PCT:g} %) | largest unit's share (%) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r.unit} | {r.units} | {r.median:.1f} | {r.p90:.1f} | {r.within_target:.2f} | {r.largest_share:.2f} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh spine-balance", description=__doc__.split("\n\n")[0])
    p.add_argument("--load", type=float, default=0.5)
    p.add_argument("--seconds", type=float, nargs="+", default=[2.0, 8.0, 32.0], help="arrivals per run")
    p.add_argument("--seeds", type=int, default=10)
    _workload_parser(p)
    args = p.parse_args(argv)
    if args.workload:
        return _one_workload(args)
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
