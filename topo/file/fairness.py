"""Per-flow fairness for hop-by-hop ALINEA: each law's R_max weighted by the flows behind it.

Why: ALINEA regulates one buffer per ingress port, so a congested node splits its egress
between its ingress ports, not between flows (docs/background/fairness.md: alinea-merge-shared gives
500/500/1000 kb/s). With ``options: {fairness: per-flow}`` the control plane, which knows every
route, caps the law u runs toward v at u's per-flow share of v's egress links:

    cap(u->v) = sum over v's egress links v->w of  n(u->v->w) / n(v->w) * rate(v->w)

where n(...) counts the ALINEA flows routed that way. The cap is the law's R_max, written like
any parameter into the switch's ``report_ingress`` entries (one P4Runtime table write path), and a
host sender's law gets it too. Targets are unchanged, so buffers and zero loss are as before.
The caps are static: a flow that stops does not give its share to the others (documented).
"""

from __future__ import annotations

import dataclasses

from topo.net.model import Flow, Topology

__all__ = ["FAIRNESS", "per_flow_caps", "apply_fairness"]

FAIRNESS = ("per-port", "per-flow")


def _hops(f: Flow) -> list[tuple[str, str]]:
    return list(zip(f.path, f.path[1:]))


def per_flow_caps(topo: Topology) -> dict[tuple[str, str], float]:
    """R_max of every law (u, v) toward a switch v, from the ALINEA flows' routes."""
    flows = [f for f in topo.flows if f.control == "alinea"]
    caps: dict[tuple[str, str], float] = {}
    for u, v in topo.law:
        if not topo.nodes[v].is_switch:
            continue
        share = 0.0
        for w in topo.neighbours(v):
            total = sum(1 for f in flows if (v, w) in _hops(f))
            mine = sum(1 for f in flows if any(a == u and b == v and c == w
                                               for (a, b), (_, c) in zip(_hops(f), _hops(f)[1:])))
            if mine:
                share += mine / total * topo.link_between(v, w).rate_bps
        if share:
            caps[(u, v)] = share
    return caps


def apply_fairness(topo: Topology) -> Topology:
    """``topo`` with per-flow R_max caps when its options ask for them (else unchanged)."""
    if topo.options.fairness != "per-flow":
        return topo
    law = dict(topo.law)
    for key, cap in per_flow_caps(topo).items():
        law[key] = dataclasses.replace(law[key], r_max=min(law[key].r_max, cap))
    return dataclasses.replace(topo, law=law)
