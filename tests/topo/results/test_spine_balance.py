"""The spine gap an ideal per-flow hash gives, from the workload alone (topo/results/spine_balance.py)."""

from __future__ import annotations

import random

import pytest

from topo.file.workload import FlowSpec
from topo.results.spine_balance import gap_stats, hash_gaps, workload_odds


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


def test_one_workload_hashed_per_flow_or_per_host_pair() -> None:
    """Equal flows spread evenly when each is hashed on its own; hashed per host pair, a 2 x 2
    fabric has 8 inter-leaf units, and the largest pair holds at least an eighth of the bytes."""
    hosts = [("h1_1", "h2_1"), ("h1_2", "h2_2"), ("h2_1", "h1_2"), ("h2_2", "h1_1"), ("h1_1", "h2_2"),
             ("h1_2", "h2_1"), ("h2_1", "h1_1"), ("h2_2", "h1_2"), ("h1_1", "h1_2")]
    flows = [FlowSpec(f"f{i}", *hosts[i % len(hosts)], 1000, i) for i in range(9000)]
    per_flow, per_pair = workload_odds(flows, "flow", draws=200), workload_odds(flows, "host pair", draws=200)
    assert per_flow.units == 8000 and per_pair.units == 8  # the intra-leaf flows never cross a spine
    assert per_flow.within_target == 1.0 and per_flow.median < per_pair.median
    assert per_pair.largest_share == pytest.approx(100 / 8)
