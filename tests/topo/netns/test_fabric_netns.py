"""A leaf-spine fabric as real processes: the equal-cost groups go over gRPC and spread flows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.switch import netns as N
from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment

pytestmark = [pytest.mark.netns, pytest.mark.slow]

FABRIC = """\
name: fabnet
fabric: {leaves: 2, spines: 2, hosts_per_leaf: 2, host_rate: 2Mb/s, oversubscription: 1, delay: 1ms, buffer: 50}
flows:
  - {name: a, src: h1_1, dst: h2_1, control: fixed, rate: 500kb/s}
  - {name: b, src: h1_1, dst: h2_2, control: fixed, rate: 500kb/s}
  - {name: c, src: h1_2, dst: h2_1, control: fixed, rate: 500kb/s}
  - {name: d, src: h1_2, dst: h2_2, control: fixed, rate: 500kb/s}
"""


def test_four_flows_cross_both_spines_between_namespaces(tmp_path: Path) -> None:
    N.require_netns()
    topo = load_topology_text(FABRIC, "fabnet.yaml")
    summary = run_experiment(topo, 6_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns").summary
    links = summary["links"]
    N.skip_unless_kept_up(summary, "four flows over two spines")
    for spine in ("spine1", "spine2"):  # both spines carry some of the four flows, both ways of the hash
        assert links[f"leaf1->{spine}"]["utilisation"] > 0.1 and links[f"{spine}->leaf2"]["utilisation"] > 0.1
    assert all(f["goodput_bps"] > 0.8 * 500e3 for f in summary["flows"].values())
