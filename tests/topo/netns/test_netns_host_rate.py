"""A netns host's link whose rate falls while its NIC queue is full (issue 46, host-nic-rate-fall):
the frames waiting when the rate falls leave at the new rate, in both uplinks (the engine's relay and
``HBH_HOST_RELAY=python``), so the link carries no more than its rate, as the simulator's link does
(tests/runtime/test_link_nic_queue.py has the model's own tests).

Needs root (skipped with the reason otherwise); run_experiment gives the run its own prefix and
removes what it made.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.switch import netns as N
from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment

pytestmark = [pytest.mark.netns, pytest.mark.slow]

#: a fixed 20 Mb/s sender on a 5 Mb/s host link keeps its NIC queue full (1000 frames: 1.6 s of the
#: link); at 1 s the link falls to 1 Mb/s. Timed at hand-over, the queue's frames kept leaving at
#: 5 Mb/s until 2.6 s
FALL = """name: netns-host-nic-fall
defaults:
  link: {rate: 5Mbps, delay: 1ms, buffer: 50ms}
nodes:
  S1: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [H2, S1], rate: 10Mbps}
flows:
  - {name: f1, src: H1, dst: H2, control: fixed, start: 0s, stop: 2s, packet_size: 1000B, rate: 20Mbps}
events:
  - {at: 1s, link: [H1, S1], rate: 1Mbps}
"""


@pytest.mark.parametrize("relay", ["engine", "python"])
def test_a_netns_host_link_that_falls_under_a_full_nic_queue_keeps_its_rate(
    relay: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    N.require_netns()
    monkeypatch.setenv("HBH_HOST_RELAY", relay)
    topo = load_topology_text(FALL, "netns-host-nic-fall.yaml")
    s = run_experiment(
        topo, 2_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns", pcap=False
    ).summary
    N.skip_unless_kept_up(s, "host NIC rate fall")
    violations = s["invariants"]["violations"]
    assert not [v for v in violations if v["name"] == "link_rate"], violations
    assert s["loss"]["host_tx_queue_full"] > 0  # the queue was full: the case is the one meant
