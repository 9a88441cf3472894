"""Workloads: CDF files, Poisson arrivals at a load, incast; and the FCT metrics' definitions."""

from __future__ import annotations

import math
import random

import pytest

from topo.file.workload import (
    BUILTIN_CDFS,
    WorkloadError,
    cdf_named,
    flows_yaml,
    incast,
    load_cdf,
    poisson_flows,
)
from topo.run.fct import FctRow, bucket_of, percentile, slowdown_table, wire_bytes

HOSTS = [f"h{i}" for i in range(8)]


@pytest.mark.parametrize("name", BUILTIN_CDFS)
def test_shipped_distributions_load_and_sample_within_their_range(name):
    cdf = cdf_named(name)
    rng = random.Random(1)
    sizes = [cdf.sample(rng) for _ in range(20_000)]
    assert min(sizes) >= max(1, cdf.points[0][0]) and max(sizes) <= cdf.points[-1][0]
    # the empirical CDF follows the file's points
    for size, frac in cdf.points[1:-1]:
        below = sum(1 for s in sizes if s <= size) / len(sizes)
        assert below == pytest.approx(frac, abs=0.02)


def test_the_sample_mean_is_the_distributions_mean():
    cdf = cdf_named("websearch")
    rng = random.Random(2)
    n = 200_000
    assert sum(cdf.sample(rng) for _ in range(n)) / n == pytest.approx(cdf.mean(), rel=0.05)


@pytest.mark.parametrize(("text", "what"), [
    ("100 0\n", "at least two points"),
    ("100 0\n200 0.5\n", "must be 1"),
    ("100 0\n50 1\n", "goes below the previous point"),
    ("100 0.5\n200 0.4\n300 1\n", "goes below the previous point"),
    ("100 0\nabc 1\n", "not two numbers"),
    ("100 0\n200 1.5\n", "must be in [0, 1]"),
    ("100\n200 1\n", "expected '<size in bytes> <cumulative fraction>'"),
    ("-5 0\n200 1\n", "must be a finite number of bytes"),
])
def test_bad_cdf_files_are_refused_naming_the_file(tmp_path, text, what):
    path = tmp_path / "bad.cdf"
    path.write_text("# a comment\n" + text)
    with pytest.raises(WorkloadError, match="bad.cdf") as info:
        load_cdf(path)
    assert what in str(info.value)


def test_a_missing_cdf_file_is_named(tmp_path):
    with pytest.raises(WorkloadError, match="no such CDF file .*websearch, datamining"):
        cdf_named(str(tmp_path / "absent.cdf"))
    with pytest.raises(WorkloadError, match="cannot read the flow-size CDF"):
        load_cdf(tmp_path)  # a directory


def test_poisson_arrivals_offer_the_load_and_are_seeded():
    cdf = cdf_named("websearch")
    kwargs = dict(load=0.5, host_rate_bps=10e6, duration_ns=20_000_000_000, size_scale=0.01)
    flows = poisson_flows(HOSTS, cdf, seed=7, **kwargs)
    assert flows == poisson_flows(HOSTS, cdf, seed=7, **kwargs)
    assert flows != poisson_flows(HOSTS, cdf, seed=8, **kwargs)
    expected = 0.5 * 10e6 * len(HOSTS) / (8 * cdf.mean() * 0.01) * 20
    assert abs(len(flows) - expected) < 4 * math.sqrt(expected)
    assert all(f.src != f.dst and f.src in HOSTS and f.dst in HOSTS for f in flows)
    starts = [f.start_ns for f in flows]
    assert starts == sorted(starts) and starts[0] >= 0 and starts[-1] < 20_000_000_000


@pytest.mark.parametrize(("kwargs", "what"), [
    ({"load": 0.0}, "load 0"), ({"load": 1.5}, "load 1.5"), ({"duration_ns": 0}, "must be > 0"),
])
def test_bad_workload_parameters_are_refused(kwargs, what):
    args = dict(load=0.5, host_rate_bps=10e6, duration_ns=10**9, seed=1) | kwargs
    with pytest.raises(WorkloadError, match=what):
        poisson_flows(HOSTS, cdf_named("websearch"), **args)


def test_incast_starts_every_sender_at_once_and_refuses_the_receiver_as_sender():
    flows = incast(["a", "b", "c"], "r", 5000, 10)
    assert [(f.src, f.dst, f.size_bytes, f.start_ns) for f in flows] == [(s, "r", 5000, 10) for s in "abc"]
    assert len({f.name for f in flows}) == 3
    with pytest.raises(WorkloadError, match="also a sender"):
        incast(["a", "r"], "r", 5000, 0)
    assert "control: tcp, size: 5000, start: 10ns" in flows_yaml(flows)


def test_slowdown_table_buckets_by_decade_and_counts_only_completed_flows():
    rows = [FctRow(f"f{i}", "a", "b", size, 0, None if i == 0 else 2_000 * (i + 1), 1_000)
            for i, size in enumerate([50, 500, 700, 5_000])]
    table = {r["bucket"]: r for r in slowdown_table(rows)}
    assert set(table) == {"[1e2, 1e3)", "[1e3, 1e4)", "all"}
    assert table["[1e2, 1e3)"]["flows"] == 2 and table["all"]["flows"] == 3
    assert table["[1e2, 1e3)"]["p50_slowdown"] == 4.0 and table["[1e2, 1e3)"]["p99_slowdown"] == 6.0
    assert [bucket_of(s) for s in (1, 9, 10, 999, 1000)] == [0, 0, 1, 2, 3]
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0 and percentile([3.0, 1.0, 2.0], 99) == 3.0
    assert wire_bytes(1448) < wire_bytes(1449) < 2 * wire_bytes(1448)
