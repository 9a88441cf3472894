"""ALINEA parameters a topology file leaves out, derived per law from the loop analysis.

Why: the built-in defaults are the paper's absolute numbers (b/s at 2 Mb/s, a 10 ms interval);
at another rate, delay or buffer they mean another loop. When a file gives none of a law's gains,
floor or report interval, they are derived from that law's link rate, the neighbour's buffer, the
packet size and the loop's delay (propagation, control latency), as
docs/background/analysis.md ("Derived parameters") says; what the file gives is kept. Laws that carry no
ALINEA flow keep the built-in values (nothing to regulate). A switch's R_max the loader derived from
the flows' caps gets a margin above them, one frame per report interval and at most the caps again
(``r_max_with_margin``: at the caps' sum the port's queue is at load 1 and never drains a burst); a
host's does not (its pacers send no burst: a flow its law holds back makes up at most one frame).
"""

from __future__ import annotations

import dataclasses
import math

from controlplane.loop_analysis import Loop, derive_gains, derived_interval_s, r_max_with_margin
from controlplane.params import validate_law
from topo.analysis.check import alinea_links, buffer_of, downstream_drain, loop_delay_s
from topo.net.model import Topology
from topo.net.plan import law_frames

__all__ = ["derive_missing", "DERIVABLE"]

DirectedLink = tuple[str, str]
DERIVABLE = ("w_max", "w_min", "k_p", "r_floor", "interval")


def derive_missing(topo: Topology, intervals: dict[DirectedLink, int],
                   origins: dict[DirectedLink, dict[str, str]]) -> tuple[dict[DirectedLink, object], dict[DirectedLink, int]]:
    """(laws, report intervals) with every built-in default of DERIVABLE replaced by its derived
    value for the laws that carry ALINEA traffic; ``origins`` is updated to say ``derived``."""
    law = dict(topo.law)
    intervals = dict(intervals)
    for key in sorted(alinea_links(topo) & law.keys()):
        missing = [k for k in DERIVABLE if origins[key].get(k) == "default"]
        u, v = key
        capacity, interval_us = buffer_of(topo, u, v)
        capacity, bits = law_frames(topo, u, v, capacity)  # the loop the agent runs (docs/background/alinea.md, "Bits, not packets")
        link_bps = topo.link_between(u, v).rate_bps
        delay_s = loop_delay_s(topo, u, v, bits)
        if "interval" in missing:
            interval_us = math.ceil(derived_interval_s(delay_s, link_bps, bits) * 1e6)
        if origins[key].get("r_max") == "derived" and law[key].r_max < link_bps and topo.nodes[u].is_switch:
            # the flows' caps, behind a FIFO: add the margin (a host's pacers keep no backlog to drain)
            law[key] = dataclasses.replace(law[key], r_max=r_max_with_margin(law[key].r_max, link_bps, bits,
                                                                             interval_us / 1e6))
        if not missing:
            continue
        drain = min(downstream_drain(topo, u, v), law[key].r_max)
        if "interval" in missing:
            intervals[key] = interval_us
        loop = Loop(law[key], capacity, bits, interval_us / 1e6, delay_s, drain)
        have = {k: getattr(law[key], k) for k in DERIVABLE[:-1] if k not in missing}
        derived = derive_gains(loop, have)
        derived["w_min"] = min(derived["w_min"], derived["w_max"])  # a file's small w_max bounds it
        law[key] = validate_law(dataclasses.replace(law[key], **derived))
        for k in missing:
            origins[key][k] = "derived"
    return law, intervals
