"""The one percentile every number of a run is given by (docs/reference/metrics.md, "Percentiles"),
and the bits of a flow's first k packets (the summary's goodputs and the invariants' check of them).

Why here: the summary (topo/run), the netns backend's keep-up and control-latency figures
(topo/netns) and the results' tables (topo/results) all quote percentiles, and topo/net is the one
subpackage all of them may import. Three definitions coexisted (index round(q(n-1)), nearest rank,
index int(qn)), so a p99 moved by a sample between tables.

Nearest rank: the ceil(q n)-th smallest of n samples (the smallest sample x with at least a share q
of the samples <= x: the inverse of the empirical distribution function; Hyndman and Fan's type 1,
numpy's ``method="inverted_cdf"``). It is always a delay that was measured, never a blend of two,
and a p99 of 100 samples is the 99th smallest, the number a researcher reads it as.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TypeVar

from topo.net.model import Flow

__all__ = ["percentile", "rank_of", "bits_of_first"]

T = TypeVar("T", int, float)


def rank_of(q: float, n: int) -> int:
    """The 1-based rank nearest-rank percentile ``q`` (0..1) takes among ``n`` sorted samples:
    ceil(q n), at least 1. ``q n`` is rounded to 9 decimals first: 0.07 x 100 is
    7.000000000000001 in floating point, and its ceiling would take the 8th of 100, not the 7th."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"percentile q={q} is outside 0..1")
    return min(n, max(1, math.ceil(round(q * n, 9))))


def percentile(values: Iterable[T], q: float) -> T:
    """Nearest-rank percentile ``q`` (0..1; 0.5 the median, 0.99 the p99) of a non-empty sample.

    With an even count the median is the lower of the middle two (a sample, not their mean)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("the percentile of no samples")
    return ordered[rank_of(q, len(ordered)) - 1]


def bits_of_first(f: Flow) -> Callable[[float], float]:
    """The bits of a flow's first ``k`` packets (``k`` may be interpolated): ``k`` x its packet size,
    except that a sized TCP flow's records together hold its size, its last record only what is
    left of it (docs/reference/metrics.md, "TCP flows"; topo/netns/tcpflow.py and the model write
    the same records): counting that record whole added up to 1447 bytes to the flow, 45 % of a
    2 kB flow's goodput."""
    bits = f.packet_size * 8
    if f.control != "tcp" or f.size_bytes is None:
        return lambda k: k * bits
    size_bits = f.size_bytes * 8
    return lambda k: min(k * bits, size_bits)
