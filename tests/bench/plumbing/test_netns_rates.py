"""The netns rate sweep's pieces (tests/bench/netns_bench.py): the interval floor, the verdict row, and a
paced host's rate against its law's, which is how the pacing shortfall at higher rates was found."""

from __future__ import annotations

from pathlib import Path

from tests.bench.netns_bench import ROOT, busy, rate_row, scaled, sent_vs_law, with_min_interval
from topo.file.schema import load_topology
from topo.netns.keepup import keepup_summary


def test_the_floor_raises_only_the_intervals_below_it() -> None:
    topo = scaled(load_topology(ROOT / "topo/paper-1router.yaml"), 32)  # 10 ms / 32 = 312 µs
    floored = with_min_interval(topo, 1000)
    assert {p.interval_us for p in topo.ports.values()} == {312}
    assert {p.interval_us for p in floored.ports.values()} == {1000}
    assert {p.interval_us for p in floored.host_buffers.values()} == {1000}
    assert with_min_interval(topo, 100).ports == topo.ports


def test_a_row_says_which_target_was_missed() -> None:
    summary = {"loss": {"total": 0}, "buffers": {"R1<-H1": {"mean": 0.68, "target": 0.8},
                                                 "H2<-R1": {"mean": 0.95, "target": 0.95}},
               "control_latency": {"samples": 3, "median_ms": 0.7, "p99_ms": 1.6},
               "realtime": {"late_p99_ms": 0.3, "late_max_ms": 0.4, "kept_up": True,
                            "host_relays": {"H1": {"late_over_5ms": 2}}}}
    row = rate_row(16, summary, 2.0)
    assert (row["ok"], row["link_mbps"], row["buffers"]["R1<-H1"]) == (False, 32.0, 0.68)
    assert row["why"] == "loss 0, worst occupancy error 12.0 points"
    assert row["relays_late_over_5ms"] == {"H1": 2}


def test_a_climbs_cell_gives_the_cores_busy_and_why_a_run_fell_behind() -> None:
    rt = {**keepup_summary([100_000] * 100), "cpu_cores": {"total": 1.72, "cpus": 2}}
    assert busy({"realtime": rt}) == ", its processes kept 1.7 of 2 cores busy"
    stalled = {**rt, "host_relays": {"H1": {"late_over_20ms": 786, "late_max_ms": 38.6}}}
    assert busy({"realtime": stalled}) == (", its processes kept 1.7 of 2 cores busy, fell behind: H1's relay put "
                                           "786 frames out more than 20 ms late (at most 38.6 ms)")
    assert busy({"realtime": keepup_summary([100_000])}) == ""  # a tree that does not measure the cores


def test_a_host_that_sent_less_than_its_law_shows(tmp_path: Path) -> None:
    sent = "".join(f"{i},{10 + i / 850:.6f},0,0\n" for i in range(8500))  # 850 pkts/s from 10 s to 20 s: 6.8 Mb/s
    (tmp_path / "packets_f1.csv").write_text("seq,sent_s,received_s,owd_us\n" + sent)
    (tmp_path / "laws.csv").write_text("t_s,node,toward,rate_bps\n9,H1,R1,1\n10,H1,R1,8e6\n15,H1,R1,8e6\n"
                                       "12,R1,H2,5\n")
    assert abs(sent_vs_law(tmp_path, "H1", "f1", 1000, 10.0) - 0.85) < 0.001
    assert sent_vs_law(tmp_path, "H1", "f1", 1000, 30.0) is None
