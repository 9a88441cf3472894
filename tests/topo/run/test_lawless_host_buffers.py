"""A buffer fed by a host that runs no law has no target (docs/reference/metrics.md, "Buffers"): in a
hop-by-hop network a TCP sender's first hop and the hop its receiver's ACKs enter are reported to
those hosts, which keep the reports as measurements and send at their TCP's pace. Taken as
regulated, the file's O_max stood as their target and the run's convergence waited for buffers
nothing steers (the ACKs' buffer at 1 % of an 80 % target: "none", whatever the laws did)."""

from __future__ import annotations

import pytest

from topo.file.schema import load_topology_text
from topo.run.runner import format_summary, run_experiment
from topo.run.summary_buffers import runs_law

S = 1_000_000_000

MIXED = """
name: mixed
defaults: {link: {rate: 10Mbps, delay: 2ms, buffer: 100}}
nodes:
  H1: {kind: host}
  H3: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  H2: {kind: host}
  H4: {kind: host}
links:
  - {ends: [H1, R1], rate: 100Mbps}
  - {ends: [H3, R1], rate: 100Mbps}
  - {ends: [R1, R2], rate: 4Mbps}
  - {ends: [R2, H2], rate: 100Mbps}
  - {ends: [R2, H4], rate: 100Mbps}
flows:
  - {name: a, src: H1, dst: H2, control: alinea}
  - {name: t, src: H3, dst: H4, control: tcp, cc: reno, start: 1s}
"""


@pytest.fixture(scope="module")
def summary() -> dict:
    return run_experiment(load_topology_text(MIXED, "user.yaml"), 3 * S, 1, None, plots=False).summary


@pytest.mark.parametrize("name", ["R1<-H3", "R2<-H4"])  # the TCP sender's first hop; its receiver's ACKs'
def test_a_buffer_fed_by_a_host_without_a_law_has_no_target(summary: dict, name: str) -> None:
    b = summary["buffers"][name]
    assert b["kind"] == "measured" and b["target"] is None and b["convergence_s"] is None
    assert name not in summary["convergence"]["over"] and name not in summary["convergence"].get("not_settled", {})
    assert name not in summary["series"]["targets"]
    line = next(x for x in format_summary(summary).splitlines() if x.startswith(name + " "))
    assert line.endswith("no law")


def test_the_alinea_hosts_first_hop_stays_regulated(summary: dict) -> None:
    b = summary["buffers"]["R1<-H1"]
    assert b["kind"] == "regulated" and b["target"] == pytest.approx(0.8)
    assert "R1<-H1" in summary["convergence"]["over"]


def test_which_nodes_run_a_law() -> None:
    topo = load_topology_text(MIXED.replace("control: tcp, cc: reno", "control: alinea"), "user.yaml")
    assert runs_law(topo, "R1") and runs_law(topo, "H1") and runs_law(topo, "H3")
    assert not runs_law(topo, "H2") and not runs_law(topo, "H4")  # receivers only
    fixed = load_topology_text(MIXED.replace("control: tcp, cc: reno", "control: fixed, rate: 1Mbps"), "user.yaml")
    assert not runs_law(fixed, "H3")  # a fixed rate is its own
