"""The one percentile (topo/net/stats.py) against an independent computation: numpy's inverse of
the empirical distribution function, and the definition itself in integers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.net.stats import percentile, rank_of

samples = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(samples, st.integers(0, 100))
def test_the_percentile_is_the_smallest_sample_with_that_share_at_or_below_it(values: list[float], pct: int) -> None:
    """In integers, with no floating point between the definition and the answer: the k-th smallest
    for the least k with 100 k >= pct n (at least the first)."""
    ordered = np.sort(np.asarray(values))
    n = len(values)
    k = max(1, int(np.searchsorted(np.arange(1, n + 1) * 100, pct * n, side="left")) + 1)
    assert percentile(values, pct / 100) == ordered[k - 1]
    share = np.count_nonzero(ordered <= percentile(values, pct / 100)) / n
    assert share >= pct / 100


@settings(max_examples=300, deadline=None)
@given(samples, st.integers(1, 999))
def test_it_is_numpys_inverted_cdf(values: list[float], permille: int) -> None:
    """numpy's ``inverted_cdf`` where q n is not a whole number (there numpy's own q n, computed in
    floating point, may land a hair above the integer and take the next sample: 0.07 x 100)."""
    n = len(values)
    if permille * n % 1000 == 0:
        return
    assert percentile(values, permille / 1000) == np.percentile(values, permille / 10, method="inverted_cdf")


def test_the_median_and_p99_read_as_a_researcher_reads_them() -> None:
    """The p99 of 100 is the 99th smallest (0.99 x 100 is whole); of 7 % of 100 the 7th, not the 8th
    a floating-point 7.000000000000001 would give; an even count's median is the lower middle."""
    hundred = list(range(1, 101))
    assert percentile(hundred, 0.99) == 99 and percentile(hundred, 0.07) == 7 and percentile(hundred, 1.0) == 100
    assert percentile([4, 1, 3, 2], 0.5) == 2 and percentile([5], 0.99) == 5 and percentile(hundred, 0.0) == 1
    assert rank_of(0.5, 2) == 1 and rank_of(0.99, 60) == 60
