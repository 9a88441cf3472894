"""Fabric experiments in the simulator: a generated leaf-spine, a workload of sized TCP flows, their FCTs.

Why a module of its own: a fabric run is a topology *written* from parameters (``fabric:`` plus a
generated ``flows:`` section, so it passes the loader's checks like a hand-written file), run until
every flow has delivered its last byte (or a time cap), and judged by flow completion times and
per-spine load rather than by the time series of ``topo/run/runner.py``.

Controls: ``alinea`` -- the switches run hop-by-hop ALINEA per port (``options.network:
hop-by-hop``) and the hosts' TCP model is the reliable transport at the edges; ``tcp`` -- end to
end, each output port a drop-tail FIFO as deep as its link's buffer, TCP alone.

Scaled time (docs/reference/topologies.md): the simulator moves ~20-30k packet-hops a second, so rates are
Mb/s instead of Gb/s and delays ms instead of µs, keeping the bandwidth-delay product in packets
of a real fabric; flow sizes are the published CDF's times ``size_scale``.

    hbh fabric --cdf websearch --load 0.5 --control alinea --duration 1s --out DIR

``--backend netns`` runs the same workload as real processes (root): the kernel's TCP carries the
flows (``cvihis-rtm``: paced by CVIHIS, topo/netns/pace.py; ``none`` has no kernel), for ``--run``
of real time, not until the last flow completes; ``--host-rate``, ``--delay``, ``--leaves`` and
``--hosts-per-leaf`` shrink the fabric to what real time keeps up with (docs/howto/fabric.md, "In netns").

Both backends report the spine links the same way (``spine_balance``: bytes on every leaf -> spine
and spine -> leaf link, each spine's total, the gap between the spines), and what the ECMP hash
alone gives (``hashed_bytes``: each flow's size on the spine its 5-tuple hashes to); docs/howto/fabric.md,
"Spine balance".
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.agent import MAX_CLASSES
from controlplane.units import parse_duration_ns, parse_rate
from hosts.datagram import DATA_PORT
from runtime.arguments import ValueParser
from topo.file.schema import load_topology_text
from topo.file.workload import FlowSpec, WorkloadError, cdf_named, flows_yaml, poisson_flows
from topo.file.yaml_tree import TopologyError
from topo.net.model import Topology
from topo.net.record import Recorder
from topo.net.routes import IPPROTO_TCP, IPPROTO_UDP, selector_next_hop
from topo.netns.tcpflow import TCP_PORT_BASE
from topo.run.fct import FctRow, fct_rows, port_occupancy, slowdown_table, write_fct_csv
from topo.sim.network import SimNetwork

__all__ = ["FabricSpec", "FabricRun", "FABRIC_CONTROLS", "fabric_topology", "run_fabric", "run_fabric_netns",
           "spine_link_bytes", "spine_gap", "spine_balance", "hashed_bytes", "main"]

#: a fabric run's control -> the network mode of its switches. The flows are sized TCP flows under every
#: control: the simulator's one reliable transport. ``alinea-classes``: hop by hop with per-destination
#: classes (``options.classes`` = hosts per leaf, docs/howto/fabric.md). ``none``: no control anywhere, the TCP
#: model's retransmission carrying the bytes with no congestion control (``cc: none``). ``cvihis-rtm``:
#: end to end, the same window as ``none``, its segments paced by CVIHIS RTM (``cc: cvihis-rtm``,
#: hosts/cvihis_tcp.py).
FABRIC_CONTROLS = {"alinea": "hop-by-hop", "alinea-classes": "hop-by-hop", "tcp": "end-to-end", "none": "end-to-end",
                   "cvihis-rtm": "end-to-end"}
#: the flows' congestion control where it is not the default (cubic)
FLOW_CC = {"none": "none", "cvihis-rtm": "cvihis-rtm"}
STEP_NS = 50_000_000  # how often the run checks whether every flow has completed
CAP_NS = 30_000_000_000  # a simulator run stops here (virtual time) even if some flow has not completed
CAP_AFTER_ARRIVALS_NS = 10_000_000_000  # ... or this long after the last arrival, for longer workloads


@dataclass(frozen=True)
class FabricSpec:
    """The ``fabric:`` generator's parameters, as text the loader reads (docs/reference/topologies.md)."""

    leaves: int = 4
    spines: int = 2
    hosts_per_leaf: int = 4
    host_rate: str = "10Mb/s"
    oversubscription: float = 1.0
    delay: str = "250us"
    buffer: int = 100

    def yaml(self) -> str:
        return (f"fabric:\n  leaves: {self.leaves}\n  spines: {self.spines}\n  hosts_per_leaf: {self.hosts_per_leaf}\n"
                f"  host_rate: {self.host_rate}\n  oversubscription: {self.oversubscription!r}\n"
                f"  delay: {self.delay}\n  buffer: {self.buffer}\n")

    @property
    def host_rate_bps(self) -> float:
        return parse_rate(self.host_rate, "host_rate")

    def hosts(self) -> list[str]:
        return [f"h{lf}_{i}" for lf in range(1, self.leaves + 1) for i in range(1, self.hosts_per_leaf + 1)]


def fabric_topology(spec: FabricSpec, flows: list[FlowSpec], control: str, name: str = "fabric") -> Topology:
    """The fabric with ``flows`` as sized TCP flows, its switches in ``control``'s network mode."""
    if control not in FABRIC_CONTROLS:
        raise WorkloadError(f"control {control!r}: choose {' or '.join(FABRIC_CONTROLS)}")
    classes = f"  classes: {min(spec.hosts_per_leaf, MAX_CLASSES)}\n" if control == "alinea-classes" else ""
    text = (f"name: {name}\n{spec.yaml()}options:\n  network: {FABRIC_CONTROLS[control]}\n{classes}"
            + flows_yaml(flows, cc=FLOW_CC.get(control)))
    return load_topology_text(text, f"<{name}>")


@dataclass
class FabricRun:
    topo: Topology
    recorder: Recorder
    rows: list[FctRow]
    spine_links: dict[tuple[str, str], int]  # (leaf, spine) and (spine, leaf) -> bytes sent on that link
    end_ns: int
    counts: dict[str, int] = field(default_factory=dict)
    realtime: dict | None = None  # a netns run: whether it kept real time (summary.json's ``realtime``)
    #: flow -> (protocol, source port, destination port) of its data packets: what the ECMP hash reads
    #: besides the addresses (a netns flow that never connected has none)
    ports: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    @property
    def uplinks(self) -> dict[tuple[str, str], int]:
        """(leaf, spine) -> bytes the leaf sent that spine: the traffic ECMP gave that uplink."""
        return {(u, v): n for (u, v), n in self.spine_links.items() if _is_spine(v)}

    @property
    def spines(self) -> dict[str, int]:
        """Bytes each spine received from all leaves."""
        return _per_spine(self.spine_links, up=True)

    @property
    def completed(self) -> int:
        return sum(1 for r in self.rows if r.end_ns is not None)


def _is_spine(name: str) -> bool:
    return name.startswith("spine")


def _leaf_spine(u: str, v: str) -> bool:
    """``u -> v`` is a leaf's uplink or a spine's downlink."""
    return (u.startswith("leaf") and _is_spine(v)) or (_is_spine(u) and v.startswith("leaf"))


def _per_spine(links: dict[tuple[str, str], int], up: bool) -> dict[str, int]:
    """Bytes each spine received from the leaves (``up``) or sent them."""
    out: dict[str, int] = {}
    for (u, v), n in sorted(links.items()):
        if _is_spine(v) == up:
            spine = v if up else u
            out[spine] = out.get(spine, 0) + n
    return out


def spine_gap(per_spine: dict[str, int]) -> float | None:
    """(largest - smallest) / mean of the spines' bytes, in percent: |A - B| / mean(A, B) with two
    spines, issue 24's measure. None when the spines carried nothing."""
    total = sum(per_spine.values())
    if not per_spine or total <= 0:
        return None
    return 100 * (max(per_spine.values()) - min(per_spine.values())) / (total / len(per_spine))


def spine_balance(links: dict[tuple[str, str], int]) -> dict:
    """The spine links' bytes and the gap between the spines, both ways (up: leaves -> spines, down:
    spines -> leaves). One definition for both backends: only where the bytes come from differs
    (the simulator's link counters, the netns backend's interface counters)."""
    out: dict = {"links": {f"{u}->{v}": n for (u, v), n in sorted(links.items())}}
    for way, up in (("up", True), ("down", False)):
        per = _per_spine(links, up)
        out[way] = {"spine_bytes": per, "gap_pct": spine_gap(per)}
    return out


def hashed_bytes(run: FabricRun) -> dict[str, int]:
    """Each inter-leaf flow's size on the spine its data packets' 5-tuple hashes to at its source
    leaf: what the uplinks carry of the flows' payload if the switches hash as :func:`selector_next_hop`
    says (headers, ACKs and retransmissions come on top)."""
    out = {s: 0 for s in _per_spine(run.spine_links, up=True)}
    for f in run.topo.flows:
        leaf = run.topo.neighbours(f.src)[0]
        if f.name in run.ports and f.size_bytes is not None and leaf != run.topo.neighbours(f.dst)[0]:
            proto, sport, dport = run.ports[f.name]
            out[selector_next_hop(run.topo, leaf, f.src, f.dst, proto, sport, dport)] += f.size_bytes
    return out


def spine_link_bytes(net: SimNetwork) -> dict[tuple[str, str], int]:
    """Bytes sent on every leaf -> spine and spine -> leaf link (the simulator's link counters)."""
    out: dict[tuple[str, str], int] = {}
    for link in net.topo.links:
        for u, v in ((link.a, link.b), (link.b, link.a)):
            if _leaf_spine(u, v):
                mem = net.links[(u, v)]
                out[(u, v)] = mem.stats[mem.direction_from(net._ends[(u, v)])].sent_bytes
    return out


def completion_times(net: SimNetwork) -> dict[str, int | None]:
    done: dict[str, int | None] = {}
    for host in net.hosts.values():
        if host.tcp is not None:
            for fid, t in host.tcp.completed_ns.items():
                done[net.flow_names[fid]] = t
    return done


def run_fabric(topo: Topology, seed: int = 1, cap_ns: int = CAP_NS) -> FabricRun:
    """Run until every sized flow has completed, or ``cap_ns`` of virtual time."""
    net = SimNetwork(topo, seed).build()
    sized = sum(1 for f in topo.flows if f.size_bytes is not None)
    t = max((f.start_ns for f in topo.flows), default=0)
    net.run_until(t)
    while len(completion_times(net)) < sized and t < cap_ns:
        t += STEP_NS
        net.run_until(t)
    net.finish()
    ports = {f.name: (IPPROTO_UDP, DATA_PORT + fid % 1000, DATA_PORT) for fid, f in enumerate(topo.flows, start=1)}
    return FabricRun(topo, net.recorder, fct_rows(topo, completion_times(net)), spine_link_bytes(net), t,
                     dict(net.counts), ports=ports)


def run_fabric_netns(topo: Topology, seed: int = 1, run_ns: int = 5_000_000_000, target: str = "p4switch",
                     out: Path | None = None) -> FabricRun:
    """The workload as real processes for ``run_ns`` of real time (root): the kernel's TCP flows'
    completion times, and what each leaf sent each spine (the links' byte counters). ``out``: keep
    the run's own results and logs there (``hbh run``'s)."""
    from topo.run.runner import run_experiment

    result = run_experiment(topo, run_ns, seed, out, plots=False, backend="netns", target=target, pcap=False)
    rec = result.recorder
    done = {name: ends.get("completed_ns") for name, ends in rec.tcp_flows.items()}  # type: ignore[misc]
    links: dict[tuple[str, str], int] = {}
    for s in rec.links:  # cumulative interface counters: the last sample is the run's total
        if _leaf_spine(s.src, s.dst):
            links[(s.src, s.dst)] = max(links.get((s.src, s.dst), 0), s.bytes)
    ports = {f.name: (IPPROTO_TCP, sport, TCP_PORT_BASE + fid) for fid, f in enumerate(topo.flows, start=1)
             if isinstance(sport := rec.tcp_flows.get(f.name, {}).get("local_port"), int)}
    return FabricRun(topo, rec, fct_rows(topo, done), links, run_ns, realtime=result.summary.get("realtime"),
                     ports=ports)


def summary(run: FabricRun) -> dict:
    done = [r for r in run.rows if r.end_ns is not None]
    delivered = sum(r.size_bytes for r in done)
    occupancy = port_occupancy(run.topo, run.recorder.laws)
    out = {"flows": len(run.rows), "completed": len(done), "end_s": run.end_ns / 1e9,
           "goodput_bps": 8e9 * delivered / run.end_ns if run.end_ns else 0.0,
           "spine_bytes": run.spines, "spine_balance": spine_balance(run.spine_links) | {"hashed": _hashed(run)},
           "slowdown": slowdown_table(run.rows),
           "buffers": {f"{v}<-{u}": stats for (u, v), stats in sorted(occupancy.items())}}
    return out if run.realtime is None else out | {"realtime": run.realtime}


def _hashed(run: FabricRun) -> dict:
    per = hashed_bytes(run)
    return {"spine_bytes": per, "gap_pct": spine_gap(per), "flows_without_ports": len(run.topo.flows) - len(run.ports)}


def _parser() -> argparse.ArgumentParser:
    p = ValueParser(prog="hbh fabric", description=__doc__.split("\n\n")[0])  # runtime/arguments.py
    p.add_argument("--cdf", default="websearch", help="websearch, datamining, or a CDF file")
    p.add_argument("--load", type=float, default=0.5, help="offered load, a fraction of the host links")
    p.add_argument("--control", default="alinea", choices=sorted(FABRIC_CONTROLS))
    p.add_argument("--duration", default="500ms", help="arrivals during this long (virtual time)")
    p.add_argument("--size-scale", type=float, default=0.01, help="flow sizes = the CDF's times this")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, help="write fct.csv and summary.json here")
    base = FabricSpec()
    p.add_argument("--backend", default="sim", choices=("sim", "netns"))
    p.add_argument("--target", default="p4switch", choices=("p4switch", "bmv2"), help="the netns backend's switch")
    p.add_argument("--run", help="netns: how long the run lasts in real time (default: --duration + 5s)")
    p.add_argument("--host-rate", default=base.host_rate, help="every host link's rate")
    p.add_argument("--delay", default=base.delay, help="every link's propagation delay")
    p.add_argument("--leaves", type=int, default=base.leaves)
    p.add_argument("--hosts-per-leaf", type=int, default=base.hosts_per_leaf)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    spec = FabricSpec(leaves=args.leaves, hosts_per_leaf=args.hosts_per_leaf, host_rate=args.host_rate,
                      delay=args.delay)
    try:
        duration = parse_duration_ns(args.duration, "--duration")
        flows = poisson_flows(spec.hosts(), cdf_named(args.cdf), load=args.load, host_rate_bps=spec.host_rate_bps,
                              duration_ns=duration, seed=args.seed, size_scale=args.size_scale)
        topo = fabric_topology(spec, flows, args.control)
        if args.backend == "netns":
            run_ns = parse_duration_ns(args.run, "--run") if args.run else duration + 5_000_000_000
            run = run_fabric_netns(topo, args.seed, run_ns, args.target,
                                   None if args.out is None else args.out / "run")
        else:
            run = run_fabric(topo, args.seed, cap_ns=max(CAP_NS, duration + CAP_AFTER_ARRIVALS_NS))
    except (WorkloadError, TopologyError, ValueError) as exc:
        print(f"hbh fabric: {exc}", file=sys.stderr)
        return 2
    result = summary(run)
    shown = {k: result[k] for k in ("flows", "completed", "end_s", "spine_bytes", "realtime") if k in result}
    balance = result["spine_balance"]
    print(json.dumps(shown | {"spine_gap_pct": {way: balance[way]["gap_pct"] for way in ("up", "down")},
                              "spine_links": balance["links"]}))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        write_fct_csv(run.rows, args.out / "fct.csv")
        (args.out / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
