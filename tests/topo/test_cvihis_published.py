"""The published CVIHIS behaviour (SOURCES.md part B), end to end in the simulator.

Each test runs a topology file of topo/ (or a small inline line) and checks a property the
CVIHIS paper reports; docs/results.md has the full numbers and docs/cvihis.md ("In the
network") the mechanisms behind them.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from topo.compare import jain
from topo.runner import run_experiment
from topo.schema import load_topology
from topo.sweep.grammar import parse_settings
from topo.sweep.points import Point, load_base, point_topology

ROOT = Path(__file__).resolve().parents[2]
S = 1_000_000_000

#: (row, --set lines, published mean rate per flow in kb/s), rows 1, 2, 4, 5 of the two-bottleneck test.
ROWS = [
    pytest.param("row1", ["link[R1-R2].rate=4Mbps", "link[R2-R3].rate=6Mbps", "flow[f3].start=100000s"],
                 [2008, 2050], id="row1"),
    pytest.param("row2", ["link[R1-R2].rate=4Mbps", "link[R2-R3].rate=6Mbps"], [2005, 2045, 2040], id="row2"),
    pytest.param("row4", ["flow[f3].start=100000s"], [3049, 3053], id="row4"),
    pytest.param("row5", [], [3047, 3042, 3048], id="row5"),
]


def _variant(name: str, sets: list[str]):
    base = load_base(ROOT / "topo" / f"{name}.yaml")
    return point_topology(base, Point(tuple((s, s.values[0]) for s in parse_settings(sets)), None))


def _mean_rate(summary: dict, flow: str, a: float, b: float) -> float:
    se = summary["series"]
    return statistics.fmean(v for t, v in zip(se["t_s"], se["flows"][flow]["receive_bps"]) if a < t <= b)


@pytest.mark.slow
def test_three_rtm_flows_on_one_bottleneck_are_fair_once_stable() -> None:
    s = run_experiment(_variant("cvihis-three-flows", []), 60 * S, seed=1, plots=False).summary
    goodputs = [f["goodput_bps"] for f in s["flows"].values()]  # over 30-60 s
    assert jain(goodputs) >= 0.99
    assert sum(goodputs) >= 0.9 * 4e6  # and they use the bottleneck


@pytest.mark.slow
@pytest.mark.parametrize(("row", "sets", "published"), ROWS)
def test_two_bottleneck_rows_match_the_published_rates(row: str, sets: list[str], published: list[int]) -> None:
    s = run_experiment(_variant("cvihis-two-bottleneck", sets), 60 * S, seed=1, plots=False).summary
    for name, kbps in zip(("f1", "f2", "f3"), published):
        measured = s["flows"][name]["goodput_bps"] / 1e3
        assert abs(measured - kbps) <= 0.10 * kbps, f"{row} {name}: {measured:.0f} kb/s, published {kbps}"


@pytest.fixture(scope="module")
def blm_vs_rtm() -> dict:
    return run_experiment(load_topology(ROOT / "topo" / "cvihis-blm-vs-rtm.yaml"), 75 * S, seed=1, plots=False).summary


@pytest.mark.slow
def test_blm_takes_the_bottleneck_back_when_the_rtm_flow_stops(blm_vs_rtm: dict) -> None:
    during = _mean_rate(blm_vs_rtm, "blm", 35, 50)
    after = _mean_rate(blm_vs_rtm, "blm", 65, 75)
    assert _mean_rate(blm_vs_rtm, "rtm", 65, 75) == 0
    assert after >= 0.9 * 4e6 and after > 1.3 * during


@pytest.mark.slow
def test_blm_yields_most_of_the_bottleneck_to_a_competing_rtm_flow(blm_vs_rtm: dict) -> None:
    assert _mean_rate(blm_vs_rtm, "rtm", 35, 50) >= 2 * _mean_rate(blm_vs_rtm, "blm", 35, 50)
