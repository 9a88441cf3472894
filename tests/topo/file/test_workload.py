"""Workloads: CDF files, Poisson arrivals at a load, incast, a topology file's ``workload:``; and the FCT
metrics' definitions."""

from __future__ import annotations

import math
import random

import pytest

from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.experiments.fabric import FabricSpec
from topo.file.schema import load_topology, load_topology_text
from topo.file.workload import (
    BUILTIN_CDFS,
    WorkloadError,
    cdf_named,
    flows_yaml,
    incast,
    load_cdf,
    poisson_flows,
)
from topo.net.stats import percentile
from topo.run.fct import FctRow, bucket_of, slowdown_table, wire_bytes

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
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0 and percentile([3.0, 1.0, 2.0], 0.99) == 3.0
    assert wire_bytes(1448) < wire_bytes(1449) < 2 * wire_bytes(1448)


# ---- workload: in a topology file (issue 51 item 2) -------------------------------------------------
FABRIC = """name: wl
fabric: {leaves: 2, spines: 2, hosts_per_leaf: 2, host_rate: 10Mb/s, oversubscription: 1, delay: 250us, buffer: 100}
"""


def test_a_files_workload_draws_the_flows_hbh_fabric_draws():
    text = FABRIC + "workload: {cdf: websearch, load: 0.5, size_scale: 0.01, duration: 1s, seed: 3}\n"
    topo = load_topology_text(text, SOURCE)
    spec = FabricSpec(leaves=2, spines=2, hosts_per_leaf=2, host_rate="10Mb/s", oversubscription=1.0,
                      delay="250us", buffer=100)
    drawn = poisson_flows(spec.hosts(), cdf_named("websearch"), load=0.5, host_rate_bps=spec.host_rate_bps,
                          duration_ns=1_000_000_000, seed=3, size_scale=0.01)
    assert drawn
    assert [(f.name, f.src, f.dst, f.size_bytes, f.start_ns) for f in topo.flows] == [
        (f.name, f.src, f.dst, f.size_bytes, f.start_ns) for f in drawn]
    assert {f.control for f in topo.flows} == {"tcp"}
    by_module = load_topology_text(spec.yaml() + flows_yaml(drawn), SOURCE)
    assert [(f.path, f.cc) for f in topo.flows] == [(f.path, f.cc) for f in by_module.flows]


def test_a_workload_comes_after_the_files_own_flows_and_may_set_their_cc():
    text = FABRIC + ("flows:\n  - {name: mine, src: h1_1, dst: h2_1, control: tcp, size: 10kB}\n"
                     "workload: {cdf: websearch, load: 0.3, size_scale: 0.01, duration: 1s, start: 1s, cc: reno}\n")
    flows = load_topology_text(text, SOURCE).flows
    assert flows[0].name == "mine" and len(flows) > 1
    assert all(f.name.startswith("w") and f.cc == "reno" and f.start_ns >= 1_000_000_000 for f in flows[1:])


def test_a_cdf_file_beside_the_topology_file(tmp_path):
    (tmp_path / "mine.cdf").write_text("1000 0\n5000 1\n")
    path = tmp_path / "f.yaml"
    path.write_text(FABRIC + "workload: {cdf: mine.cdf, load: 0.2, duration: 1s}\n")
    flows = load_topology(path).flows
    assert flows and all(1000 <= f.size_bytes <= 5000 for f in flows)


@pytest.mark.parametrize(("workload", "needle", "path", "what"), [
    ("{cdf: websearch, load: 2, duration: 1s}", "workload:", "workload.load", "in (0, 1]"),
    ("{cdf: nosuch, load: 0.5, duration: 1s}", "workload:", "workload.cdf", "nosuch: no such CDF file"),
    ("{cdf: websearch, load: 0.5}", "workload:", "workload", "missing required key 'duration'"),
    ("{cdf: websearch, load: 0.5, duration: 1s, rate: 1Mbps}", "workload:", "workload.rate", "unknown key 'rate'"),
    ("{cdf: websearch, load: 0.5, duration: 1s, size_scale: 0}", "workload:", "workload.size_scale", "> 0"),
])
def test_a_bad_workload_is_refused_on_its_line(workload, needle, path, what):
    expect_error(FABRIC + f"workload: {workload}\n", needle, path, what)


def test_a_workload_needs_a_fabric():
    expect_error(BASE + "workload: {cdf: websearch, load: 0.5, duration: 1s}\n", "workload:", "workload",
                 "the file needs a fabric: section")
