"""Benchmark of the simulator backend: paper-5router in virtual time (docs/performance.md).

Measures wall time, speed-up over real time and packet-hops (link traversals, reports included)
per wall second with alinea.p4 interpreted at every router, then profiles a shorter run and
groups the time by layer, so the page says where the time goes.
"""

from __future__ import annotations

import cProfile
import json
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GROUPS = (  # (label, path fragment), first match wins
    ("P4 pipeline (parse, ingress, egress, deparse)", "/p4switch/pipeline/"),
    ("P4Runtime core and protobuf (packet-in, counter reads)", "/p4switch/p4runtime/"),
    ("P4Runtime core and protobuf (packet-in, counter reads)", "/google/protobuf/"),
    ("P4Runtime core and protobuf (packet-in, counter reads)", "/controlplane/p4runtime_client"),
    ("switch runtime state (tables, counters, registers)", "/p4switch/state/"),
    ("v1model walk, traffic manager, device", "/p4switch/v1model_arch"),
    ("v1model walk, traffic manager, device", "/p4switch/tm"),
    ("v1model walk, traffic manager, device", "/p4switch/device"),
    ("v1model walk, traffic manager, device", "/p4switch/switch"),
    ("scheduler and links", "/runtime/sched"),
    ("scheduler and links", "/runtime/link"),
    ("scheduler and links", "/runtime/ports"),
    ("switch agents, law, Thrift client", "/controlplane/"),
    ("switch agents, law, Thrift client", "/thrift/"),
    ("switch agents, law, Thrift client", "/sswitch_runtime/"),
    ("hosts (senders, receivers)", "/hosts/"),
    ("recording and sampling", "/topo/"),
)


def _network(seconds: float) -> Any:
    from topo.schema import load_topology
    from topo.simnet import SimNetwork

    return SimNetwork(load_topology(ROOT / "topo" / "paper-5router.yaml"), seed=1).build(), int(seconds * 1e9)


def _hops(net: Any) -> int:
    links = {id(mem): mem for mem in net.links.values()}
    return sum(s.sent for mem in links.values() for s in mem.stats.values())


def bench_simulator(rep: Any, quick: bool) -> None:
    from topo.runner import run_experiment
    from topo.schema import load_topology

    section = "simulator (paper-5router, virtual time)"
    seconds = 10 if quick else 60
    topo = load_topology(ROOT / "topo" / "paper-5router.yaml")
    t0 = time.perf_counter()
    result = run_experiment(topo, int(seconds * 1e9), seed=1, plots=False)
    wall = time.perf_counter() - t0
    perf = result.summary["performance"]
    rep.add(section, f"{seconds} s of virtual time, whole run (build, run, summary)", f"{wall:.1f} s wall",
            f"{seconds / wall:.1f}x real time; target >= 25x")
    rep.add(section, "packet-hops (link traversals) per wall second", f"{perf['packet_hops_per_wall_s']:,}",
            f"{perf['packet_hops']:,} packet-hops, reports included; target >= 40,000/s")
    bench_against_baseline(rep, section, quick)
    _profile(rep, section, 5 if quick else 20)


# The last commit before issue 22 ("a compiled data path"): every per-packet step in Python. Its
# simulator runs beside today's, from its own files with this checkout's .venv, in turns.
ENGINE_BASELINE = "07b370d"
#: the line of issue 22's table: paper-5router at its own rates (2/3 Mb/s), x10 and x50
RATE_FACTORS = (1, 10, 50)

# One timed run in a fresh process, cwd = the tree measured (so its packages are the ones imported).
HOPS_SCRIPT = """
import json, sys, time
from pathlib import Path
from tests.bench.netns_bench import scaled
from topo.schema import load_topology
from topo.simnet import SimNetwork
k, seconds = int(sys.argv[1]), float(sys.argv[2])
topo = scaled(load_topology(Path('topo/paper-5router.yaml')), k)
net = SimNetwork(topo, seed=1).build()
t = time.perf_counter()
net.run_until(int(seconds * 1e9))
wall = time.perf_counter() - t
links = {id(m): m for m in net.links.values()}
hops = sum(s.sent for m in links.values() for s in m.stats.values())
print(json.dumps({"hops": hops, "wall": wall}))
"""


def hops_per_s(tree: Path, k: int, seconds: float) -> tuple[int, float]:
    """(packet-hops, wall seconds of the run alone) of paper-5router x ``k`` simulated in ``tree``."""
    out = subprocess.run([sys.executable, "-c", HOPS_SCRIPT, str(k), str(seconds)], cwd=tree, capture_output=True,
                         text=True, timeout=1800, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["hops"], got["wall"]


def bench_against_baseline(rep: Any, section: str, quick: bool, rounds: int = 3) -> None:
    """Packet-hops per wall second of this tree and of ENGINE_BASELINE, measured in turns, as ratios."""
    from tests.bench import p4rt_writes as pw

    seconds = 2.0 if quick else 10.0
    try:
        tree_cm = pw.commit_tree(ENGINE_BASELINE)
        base = tree_cm.__enter__()
    except pw.ServerUnavailable as exc:
        rep.add(section, "packet-hops/s against the pure-Python simulator", "not measured", str(exc))
        return
    try:
        for k in RATE_FACTORS:
            _ratio_row(rep, section, base, k, seconds, 1 if quick else rounds)
    finally:
        tree_cm.__exit__(None, None, None)


def _ratio_row(rep: Any, section: str, base: Path, k: int, seconds: float, rounds: int) -> None:
    now_rates, base_rates, hops = [], [], {}
    for _ in range(rounds):
        for name, tree, rates in (("now", ROOT, now_rates), ("base", base, base_rates)):
            n, wall = hops_per_s(tree, k, seconds)
            hops[name] = n
            rates.append(n / wall)
    now, then = statistics.median(now_rates), statistics.median(base_rates)
    same = "the same packet-hops" if hops["now"] == hops["base"] else f"packet-hops DIFFER: {hops}"
    rep.add(section, f"packet-hops/s, paper-5router links x{k} ({2 * k}/{3 * k} Mb/s), engine vs pure Python "
            f"(commit {ENGINE_BASELINE})", f"{now / then:.2f}x",
            f"{now:,.0f} vs {then:,.0f} packet-hops/s (run alone, build excluded), median of {rounds} rounds taken in "
            f"turn; {seconds:g} s of virtual time, {hops['now']:,} packet-hops, {same}")


def _profile(rep: Any, section: str, seconds: float) -> None:
    net, until = _network(seconds)
    prof = cProfile.Profile()
    prof.enable()
    net.run_until(until)
    prof.disable()
    stats = pstats.Stats(prof)
    totals: dict[str, float] = {}
    for (path, _line, _fn), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        label = next((g for g, frag in GROUPS if frag in path), "other (Python runtime, builtins)")
        totals[label] = totals.get(label, 0.0) + tottime
    whole = sum(totals.values()) or 1.0
    hops = _hops(net)
    for label, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        rep.add(section, f"where the time goes: {label}", f"{100 * t / whole:.0f} %",
                f"cProfile self time over {seconds:g} s of virtual time ({hops:,} packet-hops)")
