"""docs/map.md's pieces (topo/results/map.py): the cells' files and the figure; the runs are
``make map``'s (an hour of simulator time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo.file.scaling import scaled_text
from topo.file.schema import load_topology_text
from topo.results.map import (
    BUFFERS,
    DELAYS_MS,
    MIN_BUFFER_PKTS,
    NAMES,
    RATES,
    Cell,
    bdp_text,
    cell_text,
    cell_topology,
    cells,
    packet_hops,
)
from topo.results.map_figure import map_figure

S = 1_000_000_000


def test_the_map_covers_every_cell_once() -> None:
    got = cells()
    assert len(got) == len(set(got)) == len(NAMES) * len(RATES) * len(DELAYS_MS) * len(BUFFERS)


@pytest.mark.parametrize("delay", ["0.1ms", "3ms", "50ms"])
def test_one_bdp_is_each_links_rate_times_the_longest_round_trip_across_it(delay: str) -> None:
    t = load_topology_text(bdp_text(scaled_text("paper-5router", 10, delay), "x.yaml"), "x.yaml")
    rtt_s = 2 * sum(link.delay_ns for link in t.links) / S  # one flow over every link of the line
    for link in t.links:
        need = link.rate_bps * rtt_s / 8000
        assert link.buffer == max(MIN_BUFFER_PKTS, -(-need // 1)), (link, need)
    assert t.host_buffers[("H2", "R5")].capacity == t.link_between("R5", "H2").buffer


def test_a_cell_is_the_scaled_file_on_bmv2_queues_with_its_delay() -> None:
    cell = Cell("alinea-merge-2", 50, 10, "200")
    t = cell_topology(cell)
    assert t.options.queue_model == "bmv2"
    assert {link.delay_ns for link in t.links} == {10_000_000}
    assert {link.buffer for link in t.links} == {200}
    assert "w_max" not in cell_text(cell)  # derived
    assert packet_hops(t, 1.0) > packet_hops(cell_topology(Cell("alinea-merge-2", 10, 10, "200")), 1.0)


def test_the_figure_draws_run_lost_and_unrun_cells(tmp_path: Path) -> None:
    plan = [(c, "", 1.0, 0.0, c.delay_ms < 10) for c in cells() if c.name == "paper-5router"]
    results = {c: {"loss": int(c.rate == 500), "worst": 0.01 * c.rate / 50, "peak": 0.9, "goodput_bps": 1.0}
               for c, *_ in plan if c.delay_ms < 50}
    png = tmp_path / "map.png"
    map_figure(png, "paper-5router", plan, results, rates=RATES, delays_ms=DELAYS_MS, buffers=BUFFERS)
    assert png.stat().st_size > 10_000
