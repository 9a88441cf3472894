"""``cc: cvihis-rtm`` in the simulator: the TCP model's flows paced by CVIHIS RTM, whose receiver's
feedback comes back in CVIHIS datagrams (hosts/cvihis_tcp.py, topo/sim/tcp.py); short runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hosts.cvihis_tcp import CvihisPace
from tests.topo.helpers import expect_error
from topo.experiments.fabric import FabricSpec, fabric_topology, run_fabric
from topo.file.workload import FlowSpec

SPEC = FabricSpec(leaves=2, spines=2, hosts_per_leaf=2, delay="250us", buffer=40)


@pytest.fixture
def releases(monkeypatch):
    """Every release of every CVIHIS pace: (pace, time, the gap in force then)."""
    log: list[tuple[int, int, int]] = []
    original = CvihisPace.on_release

    def on_release(self, now_ns):
        log.append((id(self), now_ns, self.core.gap_ns))
        original(self, now_ns)

    monkeypatch.setattr(CvihisPace, "on_release", on_release)
    return log


def test_a_sized_flow_completes_and_its_segments_leave_at_the_cvihis_rate(releases):
    """One flow alone: every byte arrives; each segment waits the CVIHIS gap in force, and with
    none's window nothing else holds it, so the send rate is CVIHIS's rate, which moved (feedback
    arrived) from its initial value."""
    flow = FlowSpec("f1", "h1_1", "h2_1", 200_000, 0)
    run = run_fabric(fabric_topology(SPEC, [flow], "cvihis-rtm"), seed=1, cap_ns=10_000_000_000)
    assert run.completed == 1
    (row,) = run.rows
    assert row.fct_ns > row.ideal_ns
    times = [t for _p, t, _g in releases]
    gaps = [g for _p, _t, g in releases]
    assert len(times) >= -(-200_000 // 1448)
    assert len(set(gaps)) > 3  # the rate followed the receiver's commands
    spacing = [b - a for a, b in zip(times, times[1:])]
    assert all(s >= g for s, g in zip(spacing, gaps[1:]))  # no segment faster than the pace
    exact = sum(s == g for s, g in zip(spacing, gaps[1:]))
    assert exact >= 0.8 * len(spacing)  # and (a feedback's re-timing aside) exactly at it


def test_cvihis_rtm_flows_share_a_link_and_all_complete(releases):
    flows = [FlowSpec(f"f{i}", f"h1_{i}", "h2_1", 60_000, i * 1_000_000) for i in (1, 2)]
    run = run_fabric(fabric_topology(SPEC, flows, "cvihis-rtm"), seed=2, cap_ns=10_000_000_000)
    assert run.completed == 2
    assert len({p for p, _t, _g in releases}) == 2


def test_cvihis_rtm_without_sack_is_refused_naming_the_flow():
    text = (SPEC.yaml() + "flows:\n  - {src: h1_1, dst: h2_1, control: tcp, cc: cvihis-rtm, size: 10kB, "
            "sack: false}\n")
    expect_error(text, "sack: false", "flows[0].sack", "needs SACK recovery")


def test_the_netns_backend_accepts_cvihis_rtm_and_still_refuses_none(tmp_path: Path):
    """cvihis-rtm runs on the kernel's TCP paced by CVIHIS (topo/netns/pace.py); none has no kernel."""
    from topo.netns.network import NetnsNetwork
    from topo.netns.plumbing import NetnsError

    paced = fabric_topology(SPEC, [FlowSpec("paced", "h1_1", "h2_1", 10_000, 0)], "cvihis-rtm")
    NetnsNetwork(paced, duration_ns=10**9, run_dir=tmp_path)._refuse_unsupported()
    bare = fabric_topology(SPEC, [FlowSpec("bare", "h1_1", "h2_1", 10_000, 0)], "none")
    with pytest.raises(NetnsError, match=r"flow bare: cc none is the simulator's TCP model without congestion "
                                         r"control; no kernel offers it: use --backend sim"):
        NetnsNetwork(bare, duration_ns=10**9, run_dir=tmp_path)._refuse_unsupported()
