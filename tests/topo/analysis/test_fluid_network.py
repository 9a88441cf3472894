"""Every law of a topology together against fluid queues (topo/analysis/fluid_network.py), and the checks
topo/analysis/check.py builds on it."""

from __future__ import annotations

import dataclasses

import pytest

from tests.paths import ROOT
from topo.analysis.check import alinea_links, check_topology, feeding_links, warnings
from topo.analysis.fluid_network import LOSS_PKTS, network_peaks
from topo.file.schema import load_topology, load_topology_text
from topo.results.map import Cell, cell_topology
from topo.run.runner import run_experiment

S = 1_000_000_000


def test_the_paper_line_fills_every_buffer_to_its_target_and_no_further() -> None:
    t = load_topology(ROOT / "topo" / "paper-5router.yaml")
    peaks = network_peaks(t, 20)
    assert {p.buffer for p in peaks} == {(v, u) for u, v in alinea_links(t)}
    for p in peaks:
        target = t.law[p.buffer[::-1]].o_max
        assert p.lost_pkts == 0 and target - 0.02 <= p.peak <= target + 0.03, p


def test_a_line_at_one_gbps_overflows_together_where_each_law_alone_does_not() -> None:
    """docs/map.md's x500 row: 200-packet buffers with 3 ms links lose packets in the simulator,
    and one law's fluid model admits every law; run together, the laws overflow the line, and
    larger buffers are the remedy the warning names."""
    cell = Cell("paper-5router", 500, 3, "200")
    t = cell_topology(cell)
    checks = check_topology(t, 20)
    assert all(c.verdict.peak < 1.0 and c.verdict.radius_settled < 1.0 for c in checks)
    assert not all(c.lossless for c in checks)
    assert sum(c.network.lost_pkts for c in checks if c.network is not None) >= LOSS_PKTS
    ws = warnings(t, 20)
    assert ws and all("start up together" in w for w in ws)
    scale = float(ws[0].split("buffers ")[1].split(" times")[0])
    assert all(p.lost_pkts < LOSS_PKTS for p in network_peaks(t, 20, scale))


def test_bmv2_stamped_departures_and_the_shaper_are_different_plants() -> None:
    """The issue's first row (paper-5router with rates x10, the paper's gains): on the shaper the
    simulator loses packets (tests/topo/analysis/test_analysis.py), on BMv2's queues the agents' forecast
    holds it; the model, driving the agents' own forecast, says the same."""
    src = ((ROOT / "topo" / "paper-5router.yaml").read_text().replace("rate: 2Mbps", "rate: 20Mbps")
           .replace("rate: 3Mbps", "rate: 30Mbps").replace("playout: 1.2Mbps", "playout: 12Mbps"))
    t = load_topology_text(src, "x10.yaml")
    assert t.options.queue_model == "bmv2" and warnings(t, 20) == []
    t.options = dataclasses.replace(t.options, queue_model="shaper")
    assert any("start up together" in w for w in warnings(t, 20))


def test_a_capacity_drop_is_played_at_its_time() -> None:
    t = load_topology(ROOT / "topo" / "capacity-drop.yaml")
    with_drop = {p.buffer: p.peak for p in network_peaks(t, 40)}
    t.events = []
    without = {p.buffer: p.peak for p in network_peaks(t, 40)}
    assert max(with_drop[b] - without[b] for b in without) > 0.05  # the buffer before the slower link fills


def test_the_links_feeding_a_queue_are_counted_per_queue() -> None:
    merge = load_topology(ROOT / "topo" / "alinea-merge-2.yaml")
    assert feeding_links(merge, "H1", "R1") == feeding_links(merge, "H2", "R1") == 2
    assert feeding_links(merge, "R1", "R2") == 0  # R2 drains 4 + 4 Mb/s of what a 2 Mb/s link feeds it
    line = load_topology(ROOT / "topo" / "paper-5router.yaml")
    assert {feeding_links(line, u, v) for u, v in alinea_links(line)} == {1}


@pytest.mark.slow
def test_a_buffer_without_room_for_its_feeders_is_ruled_out() -> None:
    """docs/map.md: alinea-merge-2 at the paper's rates with 0.1 ms links and buffers of one
    bandwidth-delay product (2 packets): 0.6 packets above the 70 % target, two links feeding R1's
    queue. No fluid model sees it; the packet check does. (The simulator lost 95 packets here at 4 %
    of the bottleneck while the settled law read a starved buffer's drain, its own rate, as the
    buffer's capacity and sat at its floor; since it does not, it loses none at seed 1: the check is
    a bound, each feeder can hand the buffer a packet at once.)"""
    cell = Cell("alinea-merge-2", 1, 0.1, "1bdp")
    t = cell_topology(cell)
    ws = warnings(t, 10)
    assert any("less than one for each link feeding its queue (2)" in w for w in ws)
    assert run_experiment(t, 10 * S, seed=1, plots=False).summary["invariants"]["violations"] == []


def test_a_dip_that_ends_sets_off_a_wave_on_bmv2s_queues_and_not_on_the_shaper() -> None:
    """docs/results.md, "a dip that ends": R4-R5 at 0.3 Mb/s for 0.3 s. On BMv2's queues R3's cut is
    stamped on what it queues during the dip and comes back as a wave up the line (the simulator
    loses packets); on the shaper a cut ends when the rate rises (none). The model, whose chunks
    keep the rate they were queued with, shows the same difference."""
    from topo.results.dip import DIPS, DURATION_NS, _with_dip

    base = load_topology(ROOT / "topo" / "capacity-drop.yaml")
    start, length_ms, rate = DIPS[-1]
    lost = {model: sum(p.lost_pkts for p in network_peaks(_with_dip(base, model, start, length_ms, rate),
                                                          DURATION_NS / S))
            for model in ("bmv2", "shaper")}
    assert lost["bmv2"] >= LOSS_PKTS and lost["shaper"] == 0, lost
