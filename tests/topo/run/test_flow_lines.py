"""`hbh run`'s line for a flow that received nothing in its window (one that starts at the run's end,
or is starved) says so, rather than a one-way delay of 0.0 ms: no delay was measured (its
``owd_ms.mean`` is None; docs/reference/metrics.md, "Flows")."""

from __future__ import annotations

from topo.file.schema import load_topology_text
from topo.net.multicast import multicast_lines
from topo.run.runner import format_summary, run_experiment

LINE = """
name: late
defaults: {link: {rate: 2Mbps, delay: 3ms, buffer: 100}}
nodes: {H1: {kind: host}, R1: {kind: switch}, H2: {kind: host}, H3: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [H3, R1]}
  - {ends: [R1, H2]}
flows:
  - {name: early, src: H1, dst: H2, control: alinea}
  - {name: late, src: H3, dst: H2, control: alinea, start: 5s}
"""


def test_a_flow_with_no_packet_in_its_window_prints_no_delay() -> None:
    s = run_experiment(load_topology_text(LINE, "user.yaml"), 1_000_000_000, 1, None, plots=False).summary
    assert s["flows"]["late"]["owd_ms"]["mean"] is None
    lines = {line.split()[1]: line for line in format_summary(s).splitlines() if line.startswith("flow ")}
    assert lines["late"].endswith("no packet received in its window") and "p50" not in lines["late"]
    assert "one-way delay p50" in lines["early"] and "no packet" not in lines["early"]


def test_a_flow_with_no_packet_has_no_delay_statistic_in_the_summary() -> None:
    """summary.json's ``owd_ms`` of such a flow holds no number: a p50 of 0 would enter a sweep's runs.csv
    and any table as a measured delay of 0 ms."""
    s = run_experiment(load_topology_text(LINE, "user.yaml"), 1_000_000_000, 1, None, plots=False).summary
    assert s["flows"]["late"]["owd_ms"] == {"mean": None, "p50": None, "p99": None}
    assert all(v is not None and v > 0 for v in s["flows"]["early"]["owd_ms"].values())


def test_a_multicast_receiver_with_no_packet_prints_no_delay() -> None:
    receiver = {"flow": "m1", "branch_bps": 1e6, "goodput_bps": 0, "of_tree_rate": 0.0, "missing_seq": 0,
                "received": 0, "owd_ms": {"mean": None, "p50": None, "p99": None}}
    block = {"g": {"src": "H1", "control": "alinea", "tree_bps": 1e6, "slowest_receiver": "H2", "spread": None,
                   "receivers": {"H2": receiver}}}
    line = multicast_lines(block)[-1]
    assert line.endswith("no packet received") and "p50" not in line
