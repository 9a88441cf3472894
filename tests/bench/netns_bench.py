"""Benchmarks of the netns backend (section of docs/performance.md, via tests/bench/run.py).

* CPU cost of a netns paper-5router run per second of real time, by kind of process:
  the switch processes, the host processes (from /proc just before they end) and the runner
  (agents, sampling: this process).
* The highest link rate at which paper-1router and paper-5router still meet their targets (zero
  loss, every buffer's mean occupancy within 5 points of its target), two ways:

  - scaled (:func:`scaled`): every rate of the topology (links, playout, R_max and the law's rate
    parameters) times k = 1, 2, 4, ..., every delay and report interval divided by k: the same
    system in packets and report intervals, so a report every 312 µs per buffer at 64 Mb/s;
  - derived (``topo.file.scaling.scaled_topology``, as docs/map.md runs other rates): every rate times
    k, the shipped delays kept, the gains, floor and report interval derived for the rate
    (topo/analysis/derive.py): what a user gets who changes the link rates of a shipped file;

  each until a run fails (the simulator's verdict on the same topology is shown beside it); with
  several trees (this one and a baseline commit's files), each climbs until it fails, the trees in
  turns at each rate.
"""

from __future__ import annotations

import copy
import json
import math
import os
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.bench.p4rt_writes import TREE_ONLY
from topo.net.model import DEFAULT_CONTROL_LATENCY_NS

ROOT = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def _self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bench_cpu_5router(rep: Any, tmp: Path, seconds: int) -> None:
    from topo.file.schema import load_topology
    from topo.netns.network import NetnsNetwork

    topo = load_topology(ROOT / "topo/paper-5router.yaml")
    section = "netns backend"
    with NetnsNetwork(topo, 1, duration_ns=seconds * 1_000_000_000, run_dir=tmp / "cpu5", pcap=False) as net:
        net.build()
        self0, wall0 = _self_cpu_s(), time.monotonic()
        sw0 = {n: _cpu_s(s.process.proc.pid) for n, s in net.switches.items()}
        h0 = {n: _cpu_s(h.proc.pid) for n, h in net.hosts.items()}
        net.run_until(seconds * 1_000_000_000 - 200_000_000)
        wall = time.monotonic() - wall0
        switches = sum(_cpu_s(s.process.proc.pid) - sw0[n] for n, s in net.switches.items())
        hosts = sum(_cpu_s(h.proc.pid) - h0[n] for n, h in net.hosts.items())
        runner = _self_cpu_s() - self0
        net.run_until(seconds * 1_000_000_000)
        net.finish()
        latency = net.summary_extra()["control_latency"]
    note = f"paper-5router, {seconds} s, no pcaps; CPU seconds per second of real time (1.0 = one core busy)"
    rep.add(section, "CPU: 5 switch processes", f"{switches / wall:.2f}", note)
    rep.add(section, "CPU: 2 host processes", f"{hosts / wall:.2f}", "")
    rep.add(section, "CPU: runner (5 agents, sampling)", f"{runner / wall:.2f}", "")
    rep.add(section, "CPU: total", f"{(switches + hosts + runner) / wall:.2f}",
            f"{(switches + hosts + runner) / wall / (os.cpu_count() or 1):.0%} of this machine's "
            f"{os.cpu_count()} cores")
    rep.add(section, "control latency: a report's packet-in read by the agent -> its set_queue_rate applied",
            f"median {latency.get('median_ms', 0):.2f} ms, p99 {latency.get('p99_ms', 0):.2f} ms",
            f"{latency['samples']} reports that changed a rate, the same run; the simulator's default "
            f"options.control_latency is {DEFAULT_CONTROL_LATENCY_NS / 1e6:g} ms (topo/net/model.py: "
            + ("this median, rounded up to a whole millisecond)"
               if max(1, math.ceil(latency.get('median_ms', 0))) * 1_000_000 == DEFAULT_CONTROL_LATENCY_NS else
               "set from an earlier median of this row, not this one: see docs/howto/netns.md)"))


def scaled(topo: Any, k: int) -> Any:
    """``topo`` k times faster: every rate times ``k``, every delay and report interval divided
    by ``k``, so that the system is the same in packets and report intervals (the simulator
    meets the targets at every ``k``; what fails in real time is the machine)."""
    t = copy.deepcopy(topo)
    t.links = [replace(link, rate_bps=link.rate_bps * k, delay_ns=link.delay_ns // k) for link in t.links]
    t.ports = {key: replace(p, interval_us=max(1, p.interval_us // k)) for key, p in t.ports.items()}
    t.host_buffers = {key: replace(p, interval_us=max(1, p.interval_us // k)) for key, p in t.host_buffers.items()}
    t.flows = [replace(f, r_max_bps=f.r_max_bps * k if f.r_max_bps else None,
                       rate_bps=f.rate_bps * k if f.rate_bps else None) for f in t.flows]
    t.nodes = {n: replace(node, playout_bps=node.playout_bps * k if node.playout_bps else None)
               for n, node in t.nodes.items()}
    t.law = {key: replace(p, w_max=p.w_max * k, w_min=p.w_min * k, r_max=p.r_max * k, r_floor=p.r_floor * k,
                          k_p=p.k_p * k) for key, p in t.law.items()}
    return t


def meets_targets(summary: dict[str, Any]) -> tuple[bool, str]:
    worst = max(abs(b["mean"] - b["target"]) for b in summary["buffers"].values())
    ok = summary["loss"]["total"] == 0 and worst <= 0.05
    return ok, f"loss {summary['loss']['total']}, worst occupancy error {100 * worst:.1f} points"


#: one netns run of a scaled shipped topology in a tree (this one or a baseline's files, and only its
#: packages: TREE_ONLY), its summary as the last line of the output; issue 51's module names or, in a commit
#: before it (run.py's NETNS_BASELINE), the flat ones
RATE_IMPORTS = TREE_ONLY + """
import json
from pathlib import Path
from tests.bench.netns_bench import scaled
try:
    from topo.file.scaling import scaled_topology
    from topo.file.schema import load_topology
    from topo.run.runner import run_experiment
except ImportError:  # topo/ before issue 51
    from topo.runner import run_experiment
    from topo.scaling import scaled_topology
    from topo.schema import load_topology
"""
RATE_SCRIPT = RATE_IMPORTS + """
k, seconds, out, name, how = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], sys.argv[5]
topo = scaled_topology(name, k) if how == "derived" else scaled(load_topology(Path(f"topo/{name}.yaml")), k)
s = run_experiment(topo, seconds * 1_000_000_000, out=out, plots=False, backend="netns", pcap=False).summary
print(json.dumps(s))
"""


def _netns_summary(tree: Path, name: str, k: int, seconds: int, out: Path, how: str) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-c", RATE_SCRIPT, str(k), str(seconds), str(out), name, how], cwd=tree,
                         env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                         timeout=20 * seconds + 300, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"netns run of {name} x{k} in {tree} failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


#: how a climb scales the topology, and the words its rows say it in
HOW = {"scaled": "rates x k, delays and report intervals / k",
       "derived": "rates x k, the shipped delays, gains, floor and report interval derived for the rate "
                  "(topo/file/scaling.py, as docs/map.md)"}


def bench_max_rate(rep: Any, tmp: Path, name: str, seconds: int, factors: tuple[int, ...],
                   trees: dict[str, Path | None] | None = None, how: str = "scaled") -> None:
    """The highest rate at which shipped topology ``name``, scaled ``how`` (:data:`HOW`), meets its
    targets on each tree's p4switch (None: this tree), the trees run in turns at each rate until
    every one has failed once."""
    from topo.file.scaling import scaled_topology
    from topo.file.schema import load_topology
    from topo.run.runner import run_experiment

    trees = trees or {"": None}
    base = load_topology(ROOT / f"topo/{name}.yaml")
    base_mbps = min(link.rate_bps for link in base.links) / 1e6
    best: dict[str, float | None] = dict.fromkeys(trees)
    tried: dict[str, list[str]] = {label: [] for label in trees}
    going = set(trees)
    for k in factors:
        if not going:
            break
        topo = scaled_topology(name, k) if how == "derived" else scaled(base, k)
        sim_ok, _ = meets_targets(run_experiment(topo, seconds * 1_000_000_000, plots=False).summary)
        for label, tree in trees.items():
            if label not in going:
                continue
            out = tmp / f"{name}-{how}-{k}-{len(tried[label])}"
            summary = _netns_summary(tree or ROOT, name, k, seconds, out, how)
            ok, why = meets_targets(summary)
            tried[label].append(f"{base_mbps * k:g} Mb/s: {'ok' if ok else 'FAILS'} ({why}{busy(summary)}; simulator "
                                f"{'ok' if sim_ok else 'FAILS'})")
            if ok:
                best[label] = base_mbps * k
            else:
                going.discard(label)
    for label in trees:
        rate = best[label]
        rep.add("netns backend", f"{name}: highest link rate meeting its targets, {how}{label}",
                f"{rate:g} Mb/s" if rate else "none",
                f"{seconds} s runs, the trees in turns at each rate; {HOW[how]}; " + "; ".join(tried[label]))


def busy(summary: dict[str, Any]) -> str:
    """", its processes kept 1.6 of 2 cores busy" (topo/netns/keepup.py's ``CpuMeter``), and, for a run
    that fell behind its emulation, why (topo/netns/keepup.py's ``verdict``); "" for a tree whose runs
    do not measure the cores."""
    from topo.netns.keepup import verdict

    rt = summary.get("realtime", {})
    cpu = rt.get("cpu_cores")
    if not cpu:
        return ""
    said = verdict(rt)
    behind = f", fell behind: {said.removeprefix('no: ')}" if said.startswith("no") else ""
    return f", its processes kept {cpu['total']:.1f} of {cpu['cpus']} cores busy{behind}"


def with_min_interval(topo: Any, min_us: int) -> Any:
    """``topo`` with no report interval below ``min_us``: what the real-time path can keep (one report
    per buffer every ``min_us``), whatever the scaling asked (docs/howto/netns.md, "At higher link rates")."""
    t = copy.deepcopy(topo)
    t.ports = {key: replace(p, interval_us=max(min_us, p.interval_us)) for key, p in t.ports.items()}
    t.host_buffers = {key: replace(p, interval_us=max(min_us, p.interval_us)) for key, p in t.host_buffers.items()}
    return t


def rate_row(k: int, summary: dict[str, Any], base_mbps: float) -> dict[str, Any]:
    """One scaled run's verdict and the evidence of what broke: the buffers, the control latency, whether
    the runner kept real time, how late the hosts' relays put frames out, the cores the run's processes
    kept busy, and each sending host's rate against its law's (a paced host that falls behind its law
    shows here first)."""
    ok, why = meets_targets(summary)
    rt, cl = summary.get("realtime", {}), summary.get("control_latency", {})
    return {"k": k, "link_mbps": base_mbps * k, "ok": ok, "why": why,
            "buffers": {n: round(b["mean"], 3) for n, b in summary["buffers"].items()},
            "control_latency_ms": {q: cl.get(q) for q in ("samples", "median_ms", "p99_ms")},
            "runner_late_ms": {q: rt.get(q) for q in ("late_p99_ms", "late_max_ms", "kept_up")},
            "relays_late_over_5ms": {h: r.get("late_over_5ms") for h, r in rt.get("host_relays", {}).items()},
            "cpu_cores": rt.get("cpu_cores")}


def sent_vs_law(run_dir: Path, host: str, flow: str, packet_bytes: int, since_s: float) -> float | None:
    """The share of its law's mean rate (b/s) that ``host``'s flow ``flow`` sent after ``since_s`` (None: no rows)."""
    import csv

    with open(run_dir / f"packets_{flow}.csv") as f:
        sent = [float(r["sent_s"]) for r in csv.DictReader(f)]
    with open(run_dir / "laws.csv") as f:
        laws = [float(r["rate_bps"]) for r in csv.DictReader(f) if r["node"] == host and float(r["t_s"]) >= since_s]
    end = max(sent, default=since_s)
    n = sum(1 for t in sent if t >= since_s)
    if not laws or end <= since_s:
        return None
    return 8 * packet_bytes * n / (end - since_s) / (sum(laws) / len(laws))


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.bench.netns_bench`` (root): scaled runs in netns, one JSON line each."""
    import argparse

    from topo.file.schema import load_topology
    from topo.file.yaml_tree import TopologyError
    from topo.run.runner import run_experiment

    p = argparse.ArgumentParser(prog="python -m tests.bench.netns_bench", description=main.__doc__)
    p.add_argument("--topology", default="paper-1router", help="a topo/*.yaml name")
    p.add_argument("--factors", default="2,4,8,16,32", help="k: rates x k (and, scaled, delays and intervals / k)")
    p.add_argument("--how", choices=sorted(HOW), default="scaled", help="how the topology is scaled (HOW)")
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--min-interval-us", type=int, default=0, help="no report interval below this (0: none)")
    p.add_argument("--out", type=Path, default=Path("/tmp/netns-rates"))
    a = p.parse_args(argv)
    try:
        factors = [int(x) for x in a.factors.split(",")]
        base = load_topology(ROOT / "topo" / f"{a.topology}.yaml")
    except (ValueError, OSError, TopologyError) as exc:
        p.error(str(exc))
    base_mbps = min(link.rate_bps for link in base.links) / 1e6
    from topo.file.scaling import scaled_topology

    for k in factors:
        topo = scaled_topology(a.topology, k) if a.how == "derived" else scaled(base, k)
        if a.min_interval_us:
            topo = with_min_interval(topo, a.min_interval_us)
        out = a.out / f"{a.topology}-x{k}"
        summary = run_experiment(topo, a.seconds * 1_000_000_000, out=out, plots=False, backend="netns",
                                 pcap=False).summary
        row = rate_row(k, summary, base_mbps)
        row["load_1min"] = round(os.getloadavg()[0], 2)
        flow = topo.flows[0]
        share = sent_vs_law(out, flow.src, flow.name, flow.packet_size, a.seconds / 2)
        row[f"{flow.src}_sent_over_law"] = share and round(share, 3)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
