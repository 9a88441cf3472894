"""When each flow starts in the simulator: its configured start plus a jitter drawn from the run's seed.

Why a module of its own: the simulator draws the jitter (up to ``START_JITTER_NS``, docs/howto/compare.md)
and the loop analysis must run its fluid model from the same starts, or it judges another run than the one
that happens. Three flows of one host configured at 0, 0.1 and 0.1 s started in the simulator at 0.153,
0.136 and 0.117 s (seed 1): the model, with the first flow alone for 0.1 s, settled its buffers before the
others joined and saw nothing, where the run, all three within 36 ms, overflowed S3's buffer from S1
(tests/topo/random_cases/multicast-start-order.yaml). One function draws them for both (``drawn_starts``).
"""

from __future__ import annotations

import dataclasses
import random

from topo.net.model import Topology

__all__ = ["START_JITTER_NS", "drawn_starts", "with_drawn_starts"]

#: Each flow starts up to this long after its configured start, drawn from the seed (docs/howto/compare.md).
START_JITTER_NS = 200_000_000


def drawn_starts(topo: Topology, rng: random.Random) -> dict[str, int]:
    """Each sending flow's start (ns) as the simulator's hosts draw it from ``rng``, in their order: host by
    host (``topo.hosts``), first the host's pgmcc flows, then its ALINEA flows, then its other flows, each
    in file order; a TCP flow draws nothing (the TCP model starts it at its start). A group's branches that
    do not send (``Flow.sends``) draw nothing; :func:`with_drawn_starts` gives them their lead's start.

    The order is the random stream's: the simulator (topo/sim/network.py) takes its starts from here,
    drawing from its own generator before anything else does, so a draw moved is a run changed."""
    out: dict[str, int] = {}
    for host in topo.hosts:
        mine = [f for f in topo.flows if f.src == host.name and f.sends]
        ordered = (
            [f for f in mine if f.control == "pgmcc"]
            + [f for f in mine if f.control == "alinea"]
            + [f for f in mine if f.control not in ("pgmcc", "alinea", "tcp")]
        )
        for f in ordered:
            out[f.name] = f.start_ns + rng.randrange(START_JITTER_NS)
    return out


def with_drawn_starts(topo: Topology, seed: int) -> Topology:
    """``topo`` with every flow's ``start_ns`` where a simulator run of ``seed`` starts it (a group's branches
    at their lead's): what the loop analysis models for that run (topo/analysis/check.py)."""
    starts = drawn_starts(topo, random.Random(seed))
    lead = {f.group: starts[f.name] for f in topo.flows if f.group is not None and f.name in starts}
    flows = [
        dataclasses.replace(f, start_ns=starts.get(f.name, lead.get(f.group, f.start_ns))) for f in topo.flows
    ]
    return dataclasses.replace(topo, flows=flows)
