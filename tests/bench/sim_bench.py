"""Benchmark of the simulator backend: paper-5router in virtual time (docs/performance.md).

Measures wall time, speed-up over real time and packet-hops (link traversals, reports included)
per wall second with alinea.p4 interpreted at every router, then profiles a shorter run and
groups the time by layer, so the page says where the time goes.
"""

from __future__ import annotations

import cProfile
import pstats
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
    _profile(rep, section, 5 if quick else 20)


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
