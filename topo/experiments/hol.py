"""The head-of-line question: does per-port hop-by-hop control slow a flow that only shares the path?

Incast: ``senders`` hosts of leaf 1 send to one receiver of leaf 2 at once, more than its link
carries; a victim on leaf 1 sends to an *idle* receiver of leaf 2, sharing the leaf 1 uplinks, the
spines and their ports toward leaf 2, but not the congested port (leaf 2 -> receiver). Each control
runs twice, with and without the incast, and the victim's throughput during the incast is compared
with its own in the idle network. Hop-by-hop ALINEA regulates a whole egress port toward a
neighbour, so once leaf 2's buffers fill with packets for the receiver, the spines' ports toward
leaf 2 slow down for everyone behind them; ``spread`` lists the ports whose law's mean rate during
the incast fell below half the link's rate, nearest the receiver first (a port's distance is its
hops from leaf 2).

Controls: ``alinea`` (hosts and switches hop-by-hop, the victim capped at ``victim_rate``),
``alinea-classes`` (the same with per-destination classes, ``options.classes`` = hosts per leaf:
a priority queue and a law per (port, destination class), docs/howto/fabric.md),
``cvihis-rtm`` (end to end, drop-tail FIFOs, the receivers' CVIHIS control, the victim capped
likewise), ``tcp`` (end to end, the TCP model), ``none`` (end to end, fixed-rate senders at their
link's rate, the victim at ``victim_rate``).

    hbh hol [--seconds 3] [--fairness per-flow] [--leaves 6 --spines 3 --hosts-per-leaf 4]
                       [--senders 3] [--out DIR]

The fabric's shape (``--leaves``, ``--spines``, ``--hosts-per-leaf``, ``--oversubscription``) and the
incast's width (``--senders``, at most the hosts of leaf 1 but the victim) are parameters: the shipped
default is 2 x 2 with 4 hosts a leaf and 3 senders.

Before each hop-by-hop run with the incast the loop analysis runs as ``hbh run``'s does: its warnings
are the result's ``analysis_warnings`` and go to stderr, and a run that dropped packets in the
switches where the analysis said nothing says so there too.

``--backend netns`` runs the same experiment as real processes (root; p4switch, or BMv2 with
``--target bmv2``); real time is slower than the simulator's, so ``--host-rate``, ``--victim-rate``
and ``--delay`` scale the fabric down for it (docs/howto/fabric.md, "In netns").
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from controlplane.agent import MAX_CLASSES
from runtime.arguments import ValueParser
from topo.analysis.cache import cached_warnings
from topo.experiments.fabric import FabricSpec
from topo.file.fairness import FAIRNESS
from topo.file.schema import load_topology_text
from topo.file.yaml_tree import TopologyError
from topo.net.model import Topology
from topo.net.record import Recorder
from topo.sim.network import SimNetwork

__all__ = ["HolSetup", "hol_topology", "victim_throughput", "sequence_gaps", "rate_spread", "run_hol", "HOL_CONTROLS", "analysis_lines", "main"]

HOL_CONTROLS = ("alinea", "alinea-classes", "cvihis-rtm", "tcp", "none")
#: Controls run hop by hop (the ALINEA law on every switch port).
HOP_BY_HOP = ("alinea", "alinea-classes")


@dataclass(frozen=True)
class HolSetup:
    fabric: FabricSpec = FabricSpec(leaves=2, spines=2, hosts_per_leaf=4, delay="250us", buffer=100)
    senders: int = 3
    victim_rate: str = "4Mb/s"
    incast_start_s: float = 1.0
    seconds: float = 3.0
    # ``per-flow``: the laws capped at their flows' share of each downstream link (docs/background/fairness.md),
    # which is what keeps the victim whole under hop-by-hop control (docs/howto/fabric.md)
    fairness: str = "per-port"

    @property
    def receiver(self) -> str:
        return "h2_1"

    @property
    def victim(self) -> tuple[str, str]:
        """Leaf 1's last host to leaf 2's second: it shares leaf 1's uplinks and the spines' ports
        toward leaf 2 with the incast, not the receiver's port."""
        return (f"h1_{self.fabric.hosts_per_leaf}", "h2_2")

    def refusal(self) -> str | None:
        """Why this shape cannot hold the experiment (one line), or None."""
        f = self.fabric
        if f.leaves < 2:
            return f"--leaves {f.leaves}: the experiment needs at least 2 leaves (senders on leaf 1, receivers on leaf 2)"
        if f.spines < 1:
            return f"--spines {f.spines}: at least 1"
        if f.hosts_per_leaf < 2:
            return f"--hosts-per-leaf {f.hosts_per_leaf}: at least 2 (the receiver and the victim's receiver)"
        if not 1 <= self.senders <= f.hosts_per_leaf - 1:
            return (f"--senders {self.senders}: between 1 and {f.hosts_per_leaf - 1} (leaf 1's hosts but the "
                    f"victim's)")
        measured_from = self.incast_start_s + 0.5
        if not (math.isfinite(self.seconds) and self.seconds > measured_from):
            return (f"--seconds {self.seconds:g}: more than {measured_from:g} (the victim is measured from half a "
                    f"second after the incast starts at {self.incast_start_s:g} s to the end)")
        return None


def _flow(name: str, src: str, dst: str, control: str, start_s: float, rate: str | None) -> str:
    kind = {"none": "fixed", "alinea-classes": "alinea"}.get(control, control)
    extra = ""
    if rate is not None and kind in ("alinea", "cvihis-rtm"):
        extra = f", r_max: {rate}"
    elif kind == "fixed":
        extra = f", rate: {rate or '10Mb/s'}"
    return f"  - {{name: {name}, src: {src}, dst: {dst}, control: {kind}, start: {start_s}s{extra}}}\n"


def hol_topology(setup: HolSetup, control: str, incast: bool) -> Topology:
    if control not in HOL_CONTROLS:
        raise ValueError(f"control {control!r}: choose {', '.join(HOL_CONTROLS)}")
    if (why := setup.refusal()) is not None:
        raise ValueError(why)
    network = "hop-by-hop" if control in HOP_BY_HOP else "end-to-end"
    classes = f"  classes: {min(setup.fabric.hosts_per_leaf, MAX_CLASSES)}\n" if control == "alinea-classes" else ""
    src, dst = setup.victim
    flows = _flow("victim", src, dst, control, 0.0, setup.victim_rate if control != "tcp" else None)
    if incast:
        flows += "".join(_flow(f"incast{i}", f"h1_{i}", setup.receiver, control, setup.incast_start_s, None)
                         for i in range(1, setup.senders + 1))
    if setup.fairness not in FAIRNESS:
        raise ValueError(f"fairness {setup.fairness!r}: choose {', '.join(FAIRNESS)}")
    text = (f"name: hol-{control}\n{setup.fabric.yaml()}options:\n  network: {network}\n"
            f"  fairness: {setup.fairness}\n{classes}flows:\n{flows}")
    return load_topology_text(text, f"<hol-{control}>")


def victim_throughput(rec: Recorder, start_ns: int, end_ns: int, flow: str = "victim") -> float:
    """The flow's delivered b/s between two sampling instants."""
    rows = [s for s in rec.flows if s.flow == flow]
    before = max((s for s in rows if s.t_ns <= start_ns), key=lambda s: s.t_ns)
    after = max((s for s in rows if s.t_ns <= end_ns), key=lambda s: s.t_ns)
    return 8e9 * (after.received - before.received) * after.packet_bytes / max(1, after.t_ns - before.t_ns)


def sequence_gaps(rec: Recorder, flow: str = "victim") -> int | None:
    """The flow's packets missing below the highest it delivered (its loss, whichever switch dropped
    them; a TCP flow's segments still missing after its retransmissions); None without a record."""
    rows = rec.packets.get(flow)
    if rows is None:
        return None
    seqs = {seq for seq, _sent, _recv in rows}
    return (max(seqs) - min(seqs) + 1 - len(seqs)) if seqs else 0


def rate_spread(topo: Topology, rec: Recorder, start_ns: int, end_ns: int, receiver_leaf: str = "leaf2"
                ) -> list[dict[str, object]]:
    """Ports (with per-destination classes: (port, class) laws) whose law's mean rate during [start, end)
    fell below half their link's rate, nearest ``receiver_leaf`` first (hops from it: a spine's port
    toward it is 1, a leaf's uplink 2, a host 3)."""
    rows: dict[tuple[str, str, int], list[float]] = {}
    for r in rec.laws:
        if start_ns <= r.t_ns < end_ns and r.rate_bps > 0:
            rows.setdefault((r.node, r.toward, r.data_class), []).append(r.rate_bps)
    out = []
    for (u, v, c), rates in rows.items():
        line = topo.link_between(u, v).rate_bps
        mean = sum(rates) / len(rates)
        if mean < 0.5 * line:
            hops = 1 if v == receiver_leaf else (2 if u.startswith("leaf") else 3)
            out.append({"port": f"{u}->{v}", "class": c, "hops": hops, "mean_rate_bps": round(mean),
                        "link_bps": line})
    return sorted(out, key=lambda d: (d["hops"], d["port"], d["class"]))


def _run(topo: Topology, seconds: float, seed: int, backend: str = "sim", target: str = "p4switch",
         realtime: list[dict] | None = None) -> Recorder:
    """The run's records; a netns run's ``realtime`` (did it keep real time) appended to ``realtime``."""
    if backend != "sim":
        from topo.run.runner import run_experiment

        result = run_experiment(topo, round(seconds * 1e9), seed, plots=False, backend=backend, target=target,
                                pcap=False)
        if realtime is not None:
            realtime.append(result.summary.get("realtime", {}))
        return result.recorder
    net = SimNetwork(topo, seed).build()
    net.run_until(round(seconds * 1e9))
    net.finish()
    return net.recorder


def _switch_drops(rec: Recorder) -> int:
    """Packets the switches dropped by the end (the last sample of each counter: the run's final sample
    may repeat the periodic one of the same instant)."""
    last: dict[tuple[str, int, str], int] = {}
    for d in sorted(rec.drops, key=lambda d: d.t_ns):
        last[(d.switch, d.port, d.reason)] = d.packets
    return sum(last.values())


def run_hol(setup: HolSetup, control: str, seed: int = 1, backend: str = "sim", target: str = "p4switch"
            ) -> dict[str, object]:
    """The victim's throughput with and without the incast, and how far the throttling spread."""
    window = (round((setup.incast_start_s + 0.5) * 1e9), round(setup.seconds * 1e9))
    realtime: list[dict] = []
    idle = victim_throughput(_run(hol_topology(setup, control, False), setup.seconds, seed, backend, target,
                                  realtime), *window)
    topo = hol_topology(setup, control, True)
    # what `hbh run` would say before this run (the flows where this run starts them): hbh hol runs its
    # networks itself, so without this a hop-by-hop run's switch drops came with no word on whether the
    # analysis expected them
    warned = (cached_warnings(topo, setup.seconds, seed=seed, backend=backend)[0] if control in HOP_BY_HOP
              else [])
    rec = _run(topo, setup.seconds, seed, backend, target, realtime)
    busy = victim_throughput(rec, *window)
    incast = sum(victim_throughput(rec, *window, flow=f"incast{i}") for i in range(1, setup.senders + 1))
    drops = _switch_drops(rec)
    return {"control": control, "victim_idle_bps": round(idle), "victim_bps": round(busy),
            "victim_share": busy / idle if idle else None, "victim_lost": sequence_gaps(rec),
            "incast_bps": round(incast), "switch_drops": drops,
            "spread": rate_spread(topo, rec, *window)} | ({"realtime": realtime} if realtime else {}) \
        | ({"analysis_warnings": warned} if control in HOP_BY_HOP else {})


def analysis_lines(results: list[dict[str, object]]) -> list[str]:
    """What the loop analysis said before each hop-by-hop run with the incast, and a line for a run that
    dropped packets in the switches where it said nothing (the analysis admitted a lossy network)."""
    lines = []
    for r in results:
        if "analysis_warnings" not in r:
            continue
        warned = list(r["analysis_warnings"])  # type: ignore[call-overload]
        lines += [f"warning: {r['control']}: {w}" for w in warned]
        if r["switch_drops"] and not warned:
            lines.append(f"{r['control']}: {r['switch_drops']} packets dropped in the switches with the incast, "
                         "and the loop analysis did not warn (docs/background/analysis.md)")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh hol", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--controls", default=",".join(HOL_CONTROLS))
    p.add_argument("--fairness", default="per-port", choices=FAIRNESS, help="the laws' sharing (docs/background/fairness.md)")
    p.add_argument("--out", type=Path)
    p.add_argument("--backend", default="sim", choices=("sim", "netns"))
    p.add_argument("--target", default="p4switch", choices=("p4switch", "bmv2"), help="the netns backend's switch")
    base = HolSetup()
    p.add_argument("--leaves", type=int, default=base.fabric.leaves, help="leaf switches (>= 2)")
    p.add_argument("--spines", type=int, default=base.fabric.spines, help="spine switches (>= 1)")
    p.add_argument("--hosts-per-leaf", type=int, default=base.fabric.hosts_per_leaf,
                   help="hosts on each leaf (>= 2: a receiver and the victim's)")
    p.add_argument("--oversubscription", type=float, default=base.fabric.oversubscription,
                   help="a leaf's host capacity over its uplink capacity")
    p.add_argument("--senders", type=int, default=base.senders,
                   help="incast senders on leaf 1 (at most hosts-per-leaf - 1: the victim is the last host)")
    p.add_argument("--host-rate", default=base.fabric.host_rate, help="every host link's rate")
    p.add_argument("--victim-rate", default=base.victim_rate, help="the victim's cap (ALINEA, CVIHIS, none)")
    p.add_argument("--delay", default=base.fabric.delay, help="every link's propagation delay")
    args = p.parse_args(argv)
    fabric = dataclasses.replace(base.fabric, host_rate=args.host_rate, delay=args.delay, leaves=args.leaves,
                                 spines=args.spines, hosts_per_leaf=args.hosts_per_leaf,
                                 oversubscription=args.oversubscription)
    setup = HolSetup(fabric=fabric, victim_rate=args.victim_rate, seconds=args.seconds, fairness=args.fairness,
                     senders=args.senders)
    if (why := setup.refusal()) is not None:
        p.error(why)
    controls = args.controls.split(",")
    try:  # every control's network, before any runs: a bad value is one line, not a traceback
        for control in controls:
            hol_topology(setup, control, True)
    except (ValueError, TopologyError) as exc:
        p.error(str(exc))
    results = [run_hol(setup, c, args.seed, args.backend, args.target) for c in controls]
    for line in analysis_lines(results):
        print(f"hbh hol: {line}", file=sys.stderr)
    text = json.dumps(results, indent=1)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hol.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
