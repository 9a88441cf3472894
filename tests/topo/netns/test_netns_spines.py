"""Spine balance in the netns backend (docs/howto/fabric.md, "Spine balance"): the kernel's TCP flows
take the spine alinea.p4's 5-tuple hash gives their ports, and the fabric's summary reports the
spine links' bytes with the simulator's definition (topo/experiments/fabric.py, ``spine_balance``)."""

from __future__ import annotations

import pytest

from tests.switch import netns as N
from topo.experiments.fabric import (
    FabricSpec,
    fabric_topology,
    hashed_bytes,
    run_fabric_netns,
    spine_balance,
    spine_gap,
    summary,
)
from topo.file.workload import FlowSpec
from topo.net.routes import selector_next_hop
from topo.netns.tcpflow import TCP_PORT_BASE

SPINES = ("spine1", "spine2")


def test_the_balance_reads_both_ways_and_the_gap_is_the_simulators() -> None:
    links = {("leaf1", "spine1"): 300, ("leaf1", "spine2"): 100, ("spine1", "leaf2"): 300, ("spine2", "leaf2"): 100,
             ("leaf2", "spine1"): 10, ("leaf2", "spine2"): 30, ("spine1", "leaf1"): 10, ("spine2", "leaf1"): 30}
    out = spine_balance(links)
    assert out["up"]["spine_bytes"] == {"spine1": 310, "spine2": 130}
    assert out["down"]["spine_bytes"] == {"spine1": 310, "spine2": 130}
    assert out["up"]["gap_pct"] == pytest.approx(100 * 180 / 220)
    assert out["links"]["leaf1->spine2"] == 100 and len(out["links"]) == 8
    assert spine_gap({"spine1": 0, "spine2": 0}) is None


@pytest.mark.netns
@pytest.mark.slow
def test_kernel_tcp_flows_take_the_spine_their_ports_hash_to() -> None:
    """Twelve sized flows leaf 1 -> leaf 2, three per host pair: each flow's data crosses the spine
    the selector's crc16 gives its 5-tuple (the kernel's source port included), its ACKs the spine
    the reverse tuple gives at leaf 2. So an uplink carries at least the bytes of the flows hashed
    to it and nothing when none is; each spine forwards exactly what it receives."""
    N.require_netns()
    spec = FabricSpec(leaves=2, spines=2, hosts_per_leaf=2, host_rate="2Mb/s", delay="1ms", buffer=50)
    pairs = [(s, d) for s in ("h1_1", "h1_2") for d in ("h2_1", "h2_2")]
    flows = [FlowSpec(f"f{i}", *pairs[i % 4], 8000 + 1000 * i, 40_000_000 * i) for i in range(12)]
    topo = fabric_topology(spec, flows, "tcp")
    run = run_fabric_netns(topo, seed=1, run_ns=3_000_000_000)
    if run.completed != len(flows):
        N.skip_unless_kept_up({"realtime": run.realtime}, f"{run.completed} of {len(flows)} flows completed in 3 s")
    assert run.completed == len(flows), run.rows
    data = {s: 0 for s in SPINES}
    acks = {s: 0 for s in SPINES}
    for fid, f in enumerate(flows, start=1):
        sport, dport = run.recorder.tcp_flows[f.name]["local_port"], TCP_PORT_BASE + fid
        data[selector_next_hop(topo, "leaf1", f.src, f.dst, 6, sport, dport)] += f.size_bytes  # type: ignore[arg-type]
        acks[selector_next_hop(topo, "leaf2", f.dst, f.src, 6, dport, sport)] += 1  # type: ignore[arg-type]
    links = run.spine_links
    for s in SPINES:
        assert (links[("leaf1", s)] > 0) == (data[s] > 0) and links[("leaf1", s)] >= data[s], (s, links, data)
        assert (links[("leaf2", s)] > 0) == (acks[s] > 0), (s, links, acks)
        assert links[(s, "leaf2")] == links[("leaf1", s)] and links[(s, "leaf1")] == links[("leaf2", s)]
    assert all(data.values()), data  # twelve flows on one spine: one chance in 2048
    assert hashed_bytes(run) == data
    out = summary(run)["spine_balance"]
    assert out["up"]["spine_bytes"] == run.spines and out["up"]["gap_pct"] == spine_gap(run.spines)
