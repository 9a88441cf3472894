"""Benchmark of the simulator backend: paper-5router in virtual time (docs/performance.md).

Measures wall time, speed-up over real time and packet-hops (link traversals, reports included)
per wall second with alinea.p4 interpreted at every router, then profiles a shorter run and
groups the time by layer, so the page says where the time goes.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from controlplane import native
from tests.bench import spread
from tests.bench.p4rt_writes import TREE_ONLY

ROOT = Path(__file__).resolve().parents[2]
GROUPS = (  # (label, fragment of the file path or of the built-in's name), first match wins
    ("P4 pipeline blocks in the engine (P4Program.run; its calls back into Python count where they land)",
     "P4Program"),
    ("engine calls (compiled: event heap, links, traffic manager) and the control path compiled by mypyc "
     "(the agents' reports, forecast, law: called from the engine's events, their time is counted here)",
     "hbh_engine"),
    ("P4 pipeline (parse, controls, tables, externs, deparse)", "/p4switch/pipeline/"),
    ("P4 pipeline (parse, controls, tables, externs, deparse)", "/p4switch/state/"),
    ("v1model walk (ingress, PRE, egress; TM and ports' Python side)", "/p4switch/v1model_arch"),
    ("v1model walk (ingress, PRE, egress; TM and ports' Python side)", "/p4switch/tm"),
    ("v1model walk (ingress, PRE, egress; TM and ports' Python side)", "/p4switch/device"),
    ("v1model walk (ingress, PRE, egress; TM and ports' Python side)", "/p4switch/switch"),
    ("v1model walk (ingress, PRE, egress; TM and ports' Python side)", "/runtime/"),
    ("Thrift and P4Runtime core, protobuf (packet-in, counter reads)", "/p4switch/p4runtime/"),
    ("Thrift and P4Runtime core, protobuf (packet-in, counter reads)", "/google/protobuf/"),
    ("Thrift and P4Runtime core, protobuf (packet-in, counter reads)", "/controlplane/p4runtime_client"),
    ("Thrift and P4Runtime core, protobuf (packet-in, counter reads)", "/p4switch/thrift"),
    ("Thrift and P4Runtime core, protobuf (packet-in, counter reads)", "/thrift/"),
    ("Thrift and P4Runtime core, protobuf (packet-in, counter reads)", "/sswitch_runtime/"),
    ("switch agents and the ALINEA law", "/controlplane/"),
    ("hosts (senders, receivers, datagrams)", "/hosts/"),
    ("hosts' binding (topo/sim/network.py: receive, reports, control hooks), recording, sampling", "/topo/"),
)
OTHER = "other (Python's built-ins and runtime: bytes, struct, dicts, ...)"


def _network(seconds: float) -> Any:
    from topo.file.schema import load_topology
    from topo.sim.network import SimNetwork

    return SimNetwork(load_topology(ROOT / "topo" / "paper-5router.yaml"), seed=1).build(), int(seconds * 1e9)


def _hops(net: Any) -> int:
    links = {id(mem): mem for mem in net.links.values()}
    return sum(s.sent for mem in links.values() for s in mem.stats.values())


def bench_simulator(rep: Any, quick: bool) -> None:
    from topo.file.schema import load_topology
    from topo.run.runner import run_experiment

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
    bench_peers(rep, section, quick)
    bench_gigabit(rep, section, quick)


#: issue 22's target: faster than real time on paper-5router at 1 Gb/s links (x500: 1/1.5 Gb/s)
GIGABIT = 500


def _gigabit_run(seconds: float, how: str) -> dict[str, Any]:
    """The summary of ``seconds`` of paper-5router x GIGABIT, ``how``:

    * "scaled": delays, report intervals and the control latency / GIGABIT as well (the same loop
      in packets);
    * "paper": the paper's report interval (10 ms) and the default control latency, as issue 22's
      line states its reports;
    * "derived": the shipped 3 ms links, the gains, floor and report interval derived for the rate
      and every buffer one bandwidth-delay product, BMv2's queues: docs/map.md's x500 cell where
      the law holds (with 200-packet buffers the analysis rules that cell out, and it loses 7).
    """
    import dataclasses

    from tests.bench.netns_bench import scaled
    from topo.file.schema import load_topology
    from topo.results.map import Cell, cell_topology
    from topo.run.runner import run_experiment

    if how == "derived":
        topo = cell_topology(Cell("paper-5router", GIGABIT, 3, "1bdp"))
    else:
        paper = load_topology(ROOT / "topo" / "paper-5router.yaml")
        topo = scaled(paper, GIGABIT)
        if how == "paper":
            topo.ports, topo.host_buffers = paper.ports, paper.host_buffers
        else:
            topo.options = dataclasses.replace(topo.options,
                                               control_latency_ns=topo.options.control_latency_ns // GIGABIT)
    return run_experiment(topo, int(seconds * 1e9), seed=1, plots=False).summary


#: the 1 Gb/s rows: (how, seconds, quick seconds, what the row says)
GIGABIT_RUNS = (
    ("scaled", 0.4, 0.1, "delays, report intervals and control latency / 500 (the loop the same in packets; "
                         "reports every 20 µs)"),
    ("paper", 1.0, 0.2, "reports every 10 ms and 1 ms control latency, as issue 22's line states its reports"),
    ("derived", 20.0, 2.0, "the shipped 3 ms links, parameters derived for the rate, buffers of one BDP "
                           "(docs/map.md's x500 cell where the law holds)"))


def bench_gigabit(rep: Any, section: str, quick: bool) -> None:
    """How fast the simulator runs paper-5router at 1 Gb/s, against real time (issue 22's target)."""
    for how, full, short, what in GIGABIT_RUNS:
        seconds = short if quick else full
        s = _gigabit_run(seconds, how)
        perf = s["performance"]
        rep.add(section, f"paper-5router at 1 Gb/s links (x{GIGABIT}: 1/1.5 Gb/s), {what}: x real time",
                f"{perf['speedup']:.2f}x", f"{seconds:g} s of virtual time in {perf['wall_s']:.2f} s (the run; set-up "
                f"and summary excluded), {perf['packet_hops']:,} packet-hops ({perf['packet_hops_per_wall_s']:,}/s); lost "
                f"{s['loss']['total']:,} (where the law holds at these rates: docs/map.md)")


def bench_profile(rep: Any, quick: bool) -> None:
    _profile(rep, "where the simulator's time goes (paper-5router)", 5 if quick else 20)


# The last commit before issue 22 ("a compiled data path"): every per-packet step in Python. Its
# simulator runs beside today's, from its own files with this checkout's .venv, in turns.
ENGINE_BASELINE = "07b370d"
#: the line of issue 22's table: paper-5router at its own rates (2/3 Mb/s), x10 and x50
RATE_FACTORS = (1, 10, 50)
#: rounds per rate: two, each row shows both (a full run's rounds agreed within a few per cent; at
#: 100/150 Mb/s one round of the pure-Python tree alone takes a minute)
ROUNDS = 2
#: ... and of ns-3 and this tree, the rows closest to 1: single runs on a shared VM vary by about 5 %
#: from one minute to the next, and each of these rounds takes seconds
PEER_ROUNDS = 4

# One timed run in a fresh process, cwd = the tree measured (so its packages, and only they, are the ones
# imported: TREE_ONLY), issue 51's module names or, in a commit before it (ENGINE_BASELINE), the flat ones.
HOPS_IMPORTS = TREE_ONLY + """
import json, time
from pathlib import Path
from tests.bench.netns_bench import scaled
try:
    from topo.file.schema import load_topology
    from topo.sim.network import SimNetwork
except ImportError:  # topo/ before issue 51
    from topo.schema import load_topology
    from topo.simnet import SimNetwork
"""
HOPS_SCRIPT = HOPS_IMPORTS + """
k, seconds = int(sys.argv[1]), float(sys.argv[2])
topo = scaled(load_topology(Path('topo/paper-5router.yaml')), k)
net = SimNetwork(topo, seed=1).build()
t, cpu = time.perf_counter(), time.process_time()
net.run_until(int(seconds * 1e9))
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
links = {id(m): m for m in net.links.values()}
hops = sum(s.sent for m in links.values() for s in m.stats.values())
print(json.dumps({"hops": hops, "wall": wall, "cpu": cpu}))
"""


def hops_per_s(tree: Path, k: int, seconds: float, interpreted: bool = False) -> tuple[int, float, float]:
    """(packet-hops, wall and CPU seconds of the run alone) of paper-5router x ``k`` simulated in ``tree``
    (``interpreted``: its control path's modules not compiled, controlplane/native.py)."""
    env = {**os.environ, native.ENV: "1"} if interpreted else None
    out = subprocess.run([sys.executable, "-c", HOPS_SCRIPT, str(k), str(seconds)], cwd=tree, capture_output=True,
                         text=True, timeout=1800, check=True, env=env)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["hops"], got["wall"], got["cpu"]


def bench_peers(rep: Any, section: str, quick: bool) -> None:
    """ns-3 (tests/bench/ns3_bench.py), this tree and ENGINE_BASELINE at each rate, in turns, each in
    fresh processes; the rows are ratios of medians taken in one run."""
    from tests.bench import ns3_bench
    from tests.bench import p4rt_writes as pw

    seconds, rounds, peer_rounds = (2.0, 1, 1) if quick else (10.0, ROUNDS, PEER_ROUNDS)
    runners = {"now": lambda k: hops_per_s(ROOT, k, seconds)}
    if native.why_interpreted() is None:  # the same tree with its control path interpreted, for the ratio
        runners["interp"] = lambda k: hops_per_s(ROOT, k, seconds, interpreted=True)
    else:
        rep.add(section, "packet-hops/s, the control path compiled vs interpreted", "not measured",
                f"this tree's control path is {native.describe()}")
    ns3_why = ns3_bench.ns3_reason()
    if ns3_why is not None:
        rep.add(ns3_bench.SECTION, "ns-3 packet-hops/s against the simulator's", "not measured", ns3_why)
    tree_cm = None
    try:
        tree_cm = pw.commit_tree(ENGINE_BASELINE)
        base = tree_cm.__enter__()
        runners["base"] = lambda k: hops_per_s(base, k, seconds)
    except pw.ServerUnavailable as exc:
        rep.add(section, "packet-hops/s against the pure-Python simulator", "not measured", str(exc))
    rates: dict[tuple[str, int], list[float]] = {}
    cpu_rates: dict[tuple[str, int], list[float]] = {}  # per CPU second: what a shared machine changes least
    hops: dict[tuple[str, int], int] = {}

    def took(name: str, k: int, n: int, wall: float, cpu: float) -> None:
        hops[name, k] = n
        rates.setdefault((name, k), []).append(n / wall)
        cpu_rates.setdefault((name, k), []).append(n / cpu)

    try:
        for r in range(peer_rounds):  # in turns: ns-3 (one process, every rate), then each tree at each rate
            if ns3_why is None:
                for k, got in ns3_bench.ns3_hops(RATE_FACTORS, seconds).items():
                    took("ns3", k, *got)
            for k in RATE_FACTORS:
                for name, run in runners.items():
                    if name == "now" or r < rounds:
                        took(name, k, *run(k))
    finally:
        if tree_cm is not None:
            tree_cm.__exit__(None, None, None)
    for k in RATE_FACTORS:
        at_k = {name: rates[name, k] for name, kk in rates if kk == k}
        hops_k = {name: hops[name, k] for name, kk in hops if kk == k}
        if "ns3" in at_k:
            ns3_bench.row(rep, k, seconds, at_k, hops_k, {name: cpu_rates[name, k] for name in at_k})
        if "base" in at_k:
            _ratio_row(rep, section, k, seconds, at_k, hops_k)
        if "interp" in at_k:
            _native_row(rep, section, k, seconds, at_k, hops_k)


def _pair_row(rep: Any, section: str, label: str, keys: tuple[str, str], names: tuple[str, str], seconds: float,
              rates: dict[str, list[float]], hops: dict[str, int], what: str) -> None:
    """One row: runner ``keys[0]`` against ``keys[1]`` (called ``names`` in the details), the ratio of
    their medians with every round and whether they made the same packet-hops."""
    (a, b), (a_name, b_name) = keys, names
    now, then = statistics.median(rates[a]), statistics.median(rates[b])
    same = "the same packet-hops" if hops[a] == hops[b] else \
        f"packet-hops DIFFER: {a_name} {hops[a]:,}, {b_name} {hops[b]:,}"
    rep.add(section, label, f"{now / then:.2f}x",
            f"{now:,.0f} vs {then:,.0f} packet-hops/s (run alone, build excluded), {what}; median of "
            f"{len(rates[a])} rounds taken in turn ({a_name}: {spread(rates[a])}; {b_name}: {spread(rates[b])}); "
            f"{seconds:g} s of virtual time, {hops[a]:,} packet-hops, {same}")


def _ratio_row(rep: Any, section: str, k: int, seconds: float, rates: dict[str, list[float]],
               hops: dict[str, int]) -> None:
    _pair_row(rep, section, f"packet-hops/s, paper-5router links x{k} ({2 * k}/{3 * k} Mb/s), engine vs pure "
              f"Python (commit {ENGINE_BASELINE})", ("now", "base"), ("this tree", "commit"), seconds, rates, hops,
              "the commit from its own files")


def _native_row(rep: Any, section: str, k: int, seconds: float, rates: dict[str, list[float]],
                hops: dict[str, int]) -> None:
    _pair_row(rep, section, f"packet-hops/s, paper-5router links x{k}, the control path compiled (mypyc) vs "
              f"interpreted ({native.ENV}=1)", ("now", "interp"), ("compiled", "interpreted"), seconds, rates, hops,
              f"this tree both (controlplane/native.py: {', '.join(native.MODULES)})")


def layer_profile(seconds: float) -> tuple[float, int, dict[str, float]]:
    """(CPU seconds of the run unprofiled, its packet-hops, cProfile's self time by layer of the same
    run profiled) of paper-5router over ``seconds`` of virtual time, in this process."""
    net, until = _network(seconds)
    t = time.process_time()
    net.run_until(until)
    plain = time.process_time() - t  # CPU time: on a shared machine, what other processes change least
    hops = _hops(net)
    net, until = _network(seconds)
    prof = cProfile.Profile()
    prof.enable()
    net.run_until(until)
    prof.disable()
    totals: dict[str, float] = {}
    for (path, _line, fn), (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        where = path if path != "~" else fn
        label = next((g for g, frag in GROUPS if frag in where), OTHER)
        totals[label] = totals.get(label, 0.0) + tottime
    return plain, hops, totals


#: the same profile in a fresh process with the control path interpreted: there the engine's row
#: is the engine's own work, which the compiled path's run counts together with the agents'
INTERPRETED_PROFILE = """
import json, sys
from tests.bench.sim_bench import layer_profile
print(json.dumps(layer_profile(float(sys.argv[1]))))
"""


def _engine_alone(seconds: float) -> float | None:
    """µs per packet-hop of the engine's own calls (the interpreted run's engine share of its
    unprofiled CPU time); None where the path does not run compiled (the profile shows it then)."""
    if native.why_interpreted() is not None:
        return None
    out = subprocess.run([sys.executable, "-c", INTERPRETED_PROFILE, str(seconds)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, check=True, env={**os.environ, native.ENV: "1"})
    plain, hops, totals = json.loads(out.stdout.strip().splitlines()[-1])
    engine = next(label for label, frag in GROUPS if frag == "hbh_engine")
    return plain * 1e6 / hops * totals.get(engine, 0.0) / (sum(totals.values()) or 1.0)


def _profile(rep: Any, section: str, seconds: float) -> None:
    """cProfile's self time of a run, grouped by layer, as a share and as µs per packet-hop. cProfile
    slows Python calls, not the engine's own work, so the Python shares are upper bounds; the
    first row is the same run unprofiled, for scale."""
    plain, hops, totals = layer_profile(seconds)
    whole = sum(totals.values()) or 1.0
    note = f"cProfile self time over {seconds:g} s of virtual time ({hops:,} packet-hops)"
    rep.add(section, "CPU time per packet-hop, whole run without the profiler", f"{plain * 1e6 / hops:.1f} µs",
            f"{hops / plain:,.0f} packet-hops per CPU second; {seconds:g} s of virtual time, {hops:,} packet-hops; "
            f"the control path {native.describe()}")
    for label, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        rep.add(section, label, f"{100 * t / whole:.0f} %",
                f"~{plain * 1e6 / hops * t / whole:.1f} µs per packet-hop (this share of the unprofiled CPU time); {note}")
    alone = _engine_alone(seconds)
    if alone is not None:
        rep.add(section, "the engine alone (event heap, links, TM, the walk and the P4 VM), per packet-hop",
                f"{alone:.1f} µs", f"the same profile with the control path interpreted ({native.ENV}=1, a fresh "
                "process): its engine calls' share of its unprofiled CPU time, a lower bound (cProfile slows the "
                "Python around the engine); the compiled path is most of the rest of the engine row above")
