"""Which laws of a head-of-line run lost packets, and which the analysis warned: the two sets the
fluid model's tests compare (every lossy law must be a warned one)."""

from __future__ import annotations

from topo.analysis.check import warnings
from topo.experiments.hol import _run
from topo.net.model import Topology


def lossy_laws(topo: Topology, seed: int, seconds: float) -> set[str]:
    """The laws ``u->v`` whose buffer (v's, fed by u; any class) dropped packets in the simulator's run of ``seed``."""
    rec = _run(topo, seconds, seed)
    last: dict[tuple[str, int, str], int] = {}
    for d in sorted(rec.drops, key=lambda d: d.t_ns):
        last[(d.switch, d.port, d.reason)] = d.packets
    return {f"{topo.neighbour_on(sw, port)}->{sw}" for (sw, port, _), n in last.items() if n}


def warned_laws(topo: Topology, seed: int, seconds: float) -> set[str]:
    """The laws the analysis of the run of ``seed`` warns."""
    return {w.split(":")[0].removeprefix("law ") for w in warnings(topo, seconds, seed)}
