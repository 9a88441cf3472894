"""The spine gap an ideal per-flow hash gives, from the workload alone (topo/spine_balance.py)."""

from __future__ import annotations

import random

import pytest

from topo.spine_balance import gap_stats, hash_gaps


def test_one_flow_always_lands_on_one_spine() -> None:
    assert set(hash_gaps([1000], 20, random.Random(1))) == {200.0}


def test_many_equal_flows_balance_and_no_bytes_is_an_error() -> None:
    gaps = hash_gaps([1000] * 10_000, 50, random.Random(1))
    assert max(gaps) < 10
    with pytest.raises(ValueError, match="no bytes"):
        hash_gaps([], 5, random.Random(1))


def test_longer_runs_narrow_the_gap() -> None:
    short, long = gap_stats(0.5, seeds=2), gap_stats(4.0, seeds=2)
    assert long.flows > short.flows
    assert long.median < short.median and long.within_target >= short.within_target
