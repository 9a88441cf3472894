"""When each flow starts in a run: its configured start plus a jitter drawn from the run's seed.

Why a module of its own: the hosts draw the jitter (up to ``START_JITTER_NS``, docs/howto/compare.md)
and the loop analysis must run its fluid model from the same starts, or it judges another run than the one
that happens. Three flows of one host configured at 0, 0.1 and 0.1 s started in the simulator at 0.153,
0.136 and 0.117 s (seed 1): the model, with the first flow alone for 0.1 s, settled its buffers before the
others joined and saw nothing, where the run, all three within 36 ms, overflowed S3's buffer from S1
(tests/topo/random_cases/multicast-start-order.yaml). One function draws a host's starts for all of them
(``host_starts``): the simulator's hosts, the netns hosts and the analysis of either backend's run.

The two backends draw from different generators: the simulator's hosts from its one generator
(``random.Random(seed)``, host after host: ``drawn_starts``), each netns host in its own process from
its own (``host_rng(seed, host)``: ``netns_starts``). ``hbh show`` and ``make map`` analyse no run and keep
the file's starts.
"""

from __future__ import annotations

import dataclasses
import random

from topo.net.model import Topology

__all__ = [
    "START_JITTER_NS",
    "BACKENDS",
    "host_rng",
    "host_starts",
    "drawn_starts",
    "netns_starts",
    "with_drawn_starts",
]

#: Each flow starts up to this long after its configured start, drawn from the seed (docs/howto/compare.md).
START_JITTER_NS = 200_000_000

#: The backends whose starts :func:`with_drawn_starts` draws.
BACKENDS = ("sim", "netns")


def host_rng(seed: int, host: str) -> random.Random:
    """A netns host's generator (topo/netns/host.py): its starts first (:func:`host_starts`), then its
    report losses, drawn in its own process from the run's seed and its name."""
    return random.Random(f"{seed}:{host}")


def host_starts(topo: Topology, host: str, rng: random.Random) -> dict[str, int]:
    """Each flow ``host`` sends: its start (ns) drawn from ``rng``, in the order the host draws them: first its
    pgmcc flows, then its ALINEA flows, then its other flows, each in file order; a TCP flow draws nothing
    (the TCP model, and netns's kernel, start it at its start). A group's branches that do not send
    (``Flow.sends``) draw nothing; :func:`with_drawn_starts` gives them their lead's start.

    The order is the random stream's: a draw moved is a run changed (the simulator's digests, and the netns
    host's report losses, which it draws from the same generator after)."""
    mine = [f for f in topo.flows if f.src == host and f.sends]
    ordered = (
        [f for f in mine if f.control == "pgmcc"]
        + [f for f in mine if f.control == "alinea"]
        + [f for f in mine if f.control not in ("pgmcc", "alinea", "tcp")]
    )
    return {f.name: f.start_ns + rng.randrange(START_JITTER_NS) for f in ordered}


def drawn_starts(topo: Topology, rng: random.Random) -> dict[str, int]:
    """Each sending flow's start (ns) as the simulator's hosts draw it from its one generator ``rng``, host by
    host (``topo.hosts``), each as :func:`host_starts`. The simulator (topo/sim/network.py) takes its starts
    from here, drawing from its generator before anything else does."""
    out: dict[str, int] = {}
    for host in topo.hosts:
        out.update(host_starts(topo, host.name, rng))
    return out


def netns_starts(topo: Topology, seed: int) -> dict[str, int]:
    """Each sending flow's start (ns) as a netns run's hosts draw it, each from its own generator
    (:func:`host_rng`), as :func:`host_starts`: the same call topo/netns/host.py makes in each host."""
    out: dict[str, int] = {}
    for host in topo.hosts:
        out.update(host_starts(topo, host.name, host_rng(seed, host.name)))
    return out


def with_drawn_starts(topo: Topology, seed: int, backend: str = "sim") -> Topology:
    """``topo`` with every flow's ``start_ns`` where a run of ``seed`` on ``backend`` (``"sim"`` or
    ``"netns"``) starts it (a group's branches at their lead's): what the loop analysis models for that run
    (topo/analysis/check.py)."""
    if backend == "sim":
        starts = drawn_starts(topo, random.Random(seed))
    elif backend == "netns":
        starts = netns_starts(topo, seed)
    else:
        raise ValueError(f"backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    lead = {f.group: starts[f.name] for f in topo.flows if f.group is not None and f.name in starts}
    flows = [
        dataclasses.replace(f, start_ns=starts.get(f.name, lead.get(f.group, f.start_ns))) for f in topo.flows
    ]
    return dataclasses.replace(topo, flows=flows)
