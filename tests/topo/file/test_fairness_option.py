"""The per-flow fairness option (topo/file/fairness.py): R_max weighted by the flows behind each law."""

from __future__ import annotations

import dataclasses

import pytest

from tests.paths import ROOT
from topo.experiments.compare import jain
from topo.file.fairness import apply_fairness, per_flow_caps
from topo.file.schema import load_topology, load_topology_text
from topo.file.yaml_tree import TopologyError
from topo.run.runner import run_experiment

SHARED = ROOT / "topo" / "alinea-merge-shared.yaml"
S = 1_000_000_000


def _with(fairness: str):
    topo = load_topology(SHARED)
    return apply_fairness(dataclasses.replace(topo, options=dataclasses.replace(topo.options, fairness=fairness)))


def test_caps_follow_the_flows_behind_each_law() -> None:
    topo = load_topology(SHARED)
    caps = per_flow_caps(topo)
    neck = topo.link_between("R1", "R2").rate_bps
    assert caps[("R0", "R1")] == pytest.approx(2 / 3 * neck)  # f1 and f2 of the three on R1-R2
    assert caps[("H3", "R1")] == pytest.approx(1 / 3 * neck)
    assert caps[("H1", "R0")] == pytest.approx(1 / 2 * topo.link_between("R0", "R1").rate_bps)
    assert _with("per-port").law == topo.law  # the default changes nothing


@pytest.mark.slow
def test_per_flow_option_shares_a_port_per_flow_without_loss() -> None:
    """20 s runs (goodput over the second half): Jain's index of each is that of 40 s runs to 1 %."""
    fair = run_experiment(_with("per-flow"), 20 * S, seed=1, plots=False).summary
    assert fair["loss"]["total"] == 0
    assert jain([f["goodput_bps"] for f in fair["flows"].values()]) >= 0.99
    per_port = run_experiment(_with("per-port"), 20 * S, seed=1, plots=False).summary
    assert jain([f["goodput_bps"] for f in per_port["flows"].values()]) < 0.95  # the split the option corrects


def test_unknown_fairness_is_a_located_error() -> None:
    text = SHARED.read_text().replace("options:\n", "options:\n  fairness: per-packet\n")
    assert "per-packet" in text
    with pytest.raises(TopologyError, match="options.fairness.*per-packet.*per-port or per-flow"):
        load_topology_text(text, "t.yaml")
