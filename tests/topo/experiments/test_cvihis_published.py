"""The published CVIHIS behaviour (SOURCES.md part B), end to end in the simulator.

Each test runs a topology file of topo/ (or a small inline line) and checks a property the
CVIHIS paper reports; docs/results.md has the full numbers and docs/background/cvihis.md ("In the
network") the mechanisms behind them.
"""

from __future__ import annotations

import functools
import statistics

import pytest

from tests.paths import ROOT
from topo.experiments.compare import jain
from topo.file.points import Point, load_base, point_topology
from topo.file.schema import load_topology
from topo.file.settings import parse_settings
from topo.results.cvihis_rows import ROWS as CVIHIS_ROWS
from topo.results.cvihis_rows import in_link_units
from topo.run.runner import run_experiment

S = 1_000_000_000

#: (row, --set lines, published rate per flow in kb/s in the links' accounting), rows 1, 2, 4, 5 of the two-bottleneck
#: test (topo/results/cvihis_rows.py: the published rates overfill their links, so each is divided by one factor
#: taken from every row)
ROWS = [pytest.param(f"row{r.name}", list(r.sets), list(in_link_units(r)), id=f"row{r.name}")
        for r in CVIHIS_ROWS if r.name in ("1", "2", "4", "5")]


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
def test_two_bottleneck_rows_match_the_published_rates(row: str, sets: list[str], published: list[float]) -> None:
    """Goodput over the second half of 120 s runs: the default reading's RTM flows share by delay as well as
    by loss, and the flows crossing both bottlenecks converge to their shares over tens of seconds. The paper
    ran each row once; the target is each flow's mean over seeds 1-5 (docs/background/cvihis.md, "How the
    default was chosen"), seed 1 here."""
    s = run_experiment(_variant("cvihis-two-bottleneck", sets), 120 * S, seed=1, plots=False).summary
    for name, kbps in zip(("f1", "f2", "f3"), published):
        measured = s["flows"][name]["goodput_bps"] / 1e3
        assert abs(measured - kbps) <= 0.10 * kbps, f"{row} {name}: {measured:.0f} kb/s, published {kbps:.0f}"


@pytest.mark.slow
@pytest.mark.parametrize("row", ["3", "6"])
def test_the_rows_where_flow_3_takes_more_match_the_published_rates_as_seed_means(row: str) -> None:
    """Rows 3 and 6, where flow 3's share of R2-R3 exceeds the two-hop flows' (R2-R3 at 6.5 and 10 Mb/s): each
    flow's mean over seeds 1-5 within 10 % of its published rate in the links' accounting (the target of
    docs/results.md; row 6's flow 1 is the closest, docs/background/cvihis.md, "Row 6, what is left")."""
    from topo.results.tcp import TARGET_ROWS, _with_reading  # noqa: PLC0415 (the rows as docs/results.md runs them)

    _, sets, published = next(r for r in TARGET_ROWS if r[0] == row)
    topo = _with_reading("cvihis-two-bottleneck", "", sets)
    runs = [run_experiment(topo, 120 * S, seed=seed, plots=False).summary for seed in range(1, 6)]
    for name, kbps in zip(("f1", "f2", "f3"), published):
        mean = statistics.fmean(s["flows"][name]["goodput_bps"] / 1e3 for s in runs)
        assert abs(mean - kbps) <= 0.10 * kbps, f"row {row} {name}: {mean:.0f} kb/s over seeds 1-5, published {kbps:.0f}"


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


#: BLM's RTTs in the paper's figure as one-way access delays on topo/cvihis-blm-vs-tcp.yaml (TCP's RTT 200 ms)
BLM_DELAYS = {"10ms": "3ms", "100ms": "48ms", "200ms": "98ms"}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("rtt", list(BLM_DELAYS))
def test_blm_yields_to_tcp_and_is_back_at_capacity_within_30_s_after_it(rtt: str, seed: int) -> None:
    """The paper's BLM against one TCP NewReno connection (SOURCES.md E), time scaled down: TCP from 10 s to
    70 s of a 100 s run. While TCP runs BLM gets at most a fifth of what the two receive, and within 30 s after
    TCP stops its 5 s mean is back within 10 % of the 3 Mb/s capacity (docs/results.md's targets)."""
    from topo.results import tcp as R  # noqa: PLC0415 (the section's own measures)

    t = R.scenario("cvihis-blm-vs-tcp", (f"link[H1-R1].delay={BLM_DELAYS[rtt]}", "flow[tcp].start=10s",
                                         "flow[tcp].stop=70s"))
    s = run_experiment(t, 100 * S, seed=seed, plots=False).summary
    assert R.share(s, "blm", 10, 70) <= R.BLM_MAX_SHARE
    assert R.back_within(s, "blm", 70, R.BLM_BACK * R.CAPACITY_BPS) <= R.BLM_BACK_WITHIN


#: (topology, time of the capacity drop, the new capacity, run length): the bottleneck after the drop is R3-R4
#: at 1 Mb/s (below H2's 1.2 Mb/s playout) on capacity-drop, R1-R2 at 1.5 Mb/s on bottleneck-drop.
DROPS = [("capacity-drop", 30, 1.0e6, 45), ("bottleneck-drop", 20, 1.5e6, 35)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize(("name", "at", "capacity", "seconds"), DROPS, ids=[d[0] for d in DROPS])
def test_blm_takes_the_new_capacity_within_10_s_of_a_drop(name: str, at: float, capacity: float, seconds: float,
                                                         seed: int) -> None:
    """The paper's BLM takes the capacity back once competing traffic leaves; a drop of the path's capacity is
    the same signal. Before it, capacity-drop's losses come from H2's receive buffer, with no queueing delay
    before them: they must not teach maxDelay (docs/background/cvihis.md, "maxDelay"), or the longer serialisation on the
    slower link holds BLM at its floor."""
    base = load_base(ROOT / "topo" / f"{name}.yaml")
    topo = point_topology(base, Point((), "cvihis-blm"))
    s = run_experiment(topo, seconds * S, seed=seed, plots=False).summary
    assert abs(_mean_rate(s, "f1", at + 10, seconds) - capacity) <= 0.10 * capacity


def _mean_send_rate(summary: dict, flow: str, a: float, b: float) -> float:
    se = summary["series"]
    return statistics.fmean(v for t, v in zip(se["t_s"], se["flows"][flow]["send_bps"]) if a < t <= b)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize(("name", "at", "capacity", "seconds"), DROPS, ids=[d[0] for d in DROPS])
def test_rtm_sends_at_the_new_capacity_within_10_s_of_a_drop(name: str, at: float, capacity: float, seconds: float,
                                                             seed: int) -> None:
    """RTM, like BLM, comes down to a dropped capacity: from 10 s after the drop its sending rate is within 10 % of
    the new capacity. The sending rate, not the receive rate: what arrives is capped by the link, however much more
    is sent into its full FIFO (under ``md: two-per-fill``, the default before issue 48's capacity drop, RTM sent
    +41-45 % into bottleneck-drop's 1.5 Mb/s over 30-35 s: the whole overload one fill, two MDs;
    docs/background/cvihis.md, "Loss command")."""
    base = load_base(ROOT / "topo" / f"{name}.yaml")
    topo = point_topology(base, Point((), "cvihis-rtm"))
    s = run_experiment(topo, seconds * S, seed=seed, plots=False).summary
    assert abs(_mean_send_rate(s, "f1", at + 10, seconds) - capacity) <= 0.10 * capacity


#: the corners of the paper's grid (bottleneck, one-way access delay: RTT 20 and 200 ms)
CORNERS = [("2Mbps", "8ms"), ("2Mbps", "98ms"), ("4.5Mbps", "8ms"), ("4.5Mbps", "98ms")]


@functools.cache
def _corners(start: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(RTM, TCP) rates on the grid's corners, RTM starting at ``start`` (the grid's own cell, as docs/results.md
    runs it); cached per start."""
    from topo.results.tcp import rtm_cell, start_rate  # noqa: PLC0415

    return {(rate, delay): rtm_cell(rate, delay, "reno", start=start_rate(start, rate)) for rate, delay in CORNERS}


@pytest.mark.slow
@pytest.mark.parametrize("start", ["", "capacity"], ids=["default-start", "start-at-capacity"])
def test_rtm_is_tcp_friendly_to_reno_on_the_grids_corners(start: str) -> None:
    """CVIHIS's published TCP-friendliness (SOURCES.md E): against one reno connection with SACK (Linux NewReno),
    the larger rate at most 2 times the smaller (published about 1.6); RTM starting at CVIHIS's default rate, the
    paper's initial rate, or at the bottleneck's capacity (the paper varied the starting rates; the default's two
    MDs per fill of the queue give up the share the former default kept from there: docs/background/cvihis.md, "How
    the default was chosen")."""
    for cell, (rtm, tcp) in _corners(start).items():
        assert max(rtm, tcp) <= 2.0 * min(rtm, tcp), (cell, rtm, tcp)


#: the seeds the RTT claim is judged over: it is a trend over the paper's 26 tests, where one seed's pair of 40 s runs
#: moves RTM's share between 20 and 200 ms by -15 to +9 points (docs/background/cvihis.md, "RTT and RTM's share")
RTT_SEEDS = (1, 2, 3, 4, 5)


@functools.cache
def _rtt_corners(rate: str) -> dict[str, tuple[float, float]]:
    """(RTM, TCP) rates at RTT 20 and 200 ms on one bottleneck, each the mean over ``RTT_SEEDS`` (RTM from CVIHIS's
    default rate, the grid's own cell as docs/results.md runs it)."""
    from topo.results.tcp import rtm_cell  # noqa: PLC0415

    runs = {delay: [rtm_cell(rate, delay, "reno", seed=seed) for seed in RTT_SEEDS] for delay in ("8ms", "98ms")}
    return {delay: (statistics.fmean(r for r, _ in pairs), statistics.fmean(t for _, t in pairs))
            for delay, pairs in runs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("rate", [pytest.param("2Mbps", marks=pytest.mark.xfail(
    strict=True, reason="over seeds 1-5 RTM's share at 2 Mb/s falls from 46 % at 20 ms to 40 % at 200 ms (RTM -14 %, "
                        "reno +12 %): the 50-packet FIFO (200-300 ms at 2 Mb/s) makes the SRTTs 213 and 352 ms, and "
                        "RTM, paced, loses more packets in an overflow that lasts an RTT (1.07 -> 1.53 MDs per reno "
                        "loss); the 40 s window also catches RTM still climbing at 200 ms. No reading of the paper "
                        "fixes it (docs/background/cvihis.md, 'Why RTM's share falls with RTT at 2 Mb/s')")),
    "4.5Mbps"])
def test_rtt_matters_less_to_rtm_than_to_reno(rate: str) -> None:
    """The paper: RTT affects CVIHIS less than TCP (it does modestly at short RTTs, somewhat better than TCP at long
    ones). From RTT 20 to 200 ms on one bottleneck, over seeds 1-5, RTM's mean rate relative to reno's does not
    fall. Why not "RTM's rate changes less than reno's": the two fill the link at both RTTs, so their changes are
    about equal and opposite, and that clause would hold whenever RTM merely gets more than reno at 20 ms, however
    much its share falls (four readings pass it so, docs/background/cvihis.md)."""
    rates = _rtt_corners(rate)
    (rtm20, tcp20), (rtm200, tcp200) = rates["8ms"], rates["98ms"]
    assert rtm200 / tcp200 >= rtm20 / tcp20, (rtm20, tcp20, rtm200, tcp200)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_the_reprobe_reading_is_tcp_friendly_to_reno_on_the_corners_and_where_probe_falls(seed: int) -> None:
    """``cvihis: {variant: reprobe}`` (docs/background/cvihis.md, "Readings"): the corners of the paper's grid and the cell
    where the ``probe`` reading (the default until issue 48) falls below half of reno's rate (3 Mb/s, 200 ms, seed
    2): the larger rate at most 2 times the smaller."""
    from topo.results.tcp import rtm_cell  # noqa: PLC0415 (the grid's own cell, as docs/background/cvihis.md runs it)

    for rate, delay in [*CORNERS, ("3Mbps", "98ms")]:
        rtm, tcp = rtm_cell(rate, delay, "reno", seed=seed, reading="{variant: reprobe}")
        assert max(rtm, tcp) <= 2.0 * min(rtm, tcp), (rate, delay, rtm, tcp)


@pytest.mark.slow
def test_the_reprobe_ewma_reading_keeps_the_sixth_rows_two_hop_flows_within_10_percent_as_seed_means() -> None:
    """``cvihis: {variant: reprobe-ewma}`` (docs/background/cvihis.md, "Readings") on the row whose two-hop flows
    the default holds closest to the target (R2-R3 at 10 Mb/s, where flow 3 takes from the two flows that cross
    both bottlenecks): flows 1 and 2's means over seeds 1-5 within 10 % of their published rates in the links'
    accounting. Not flow 3: it takes more under this reading, and more than 10 % above its rate in that
    accounting (docs/background/cvihis.md, "How the default was chosen")."""
    from topo.results.tcp import TARGET_ROWS, _with_reading  # noqa: PLC0415 (the rows as docs/results.md runs them)

    _, sets, published = next(r for r in TARGET_ROWS if r[0] == "6")
    topo = _with_reading("cvihis-two-bottleneck", "{variant: reprobe-ewma}", sets)
    runs = [run_experiment(topo, 120 * S, seed=seed, plots=False).summary for seed in range(1, 6)]
    for name, kbps in zip(("f1", "f2"), published):
        mean = statistics.fmean(s["flows"][name]["goodput_bps"] / 1e3 for s in runs)
        assert abs(mean - kbps) <= 0.10 * kbps, f"row 6 {name}: {mean:.0f} kb/s over seeds 1-5, published {kbps:.0f}"


@pytest.mark.slow
def test_the_reprobe_ewma_reading_is_tcp_friendly_to_reno_on_the_corners() -> None:
    """``reprobe-ewma`` keeps the default's published TCP-friendliness from the paper's initial rate: on the grid's
    corners the larger rate at most 2 times the smaller (seed 1)."""
    from topo.results.tcp import rtm_cell  # noqa: PLC0415 (the grid's own cell, as docs/background/cvihis.md runs it)

    for rate, delay in CORNERS:
        rtm, tcp = rtm_cell(rate, delay, "reno", reading="{variant: reprobe-ewma}")
        assert max(rtm, tcp) <= 2.0 * min(rtm, tcp), (rate, delay, rtm, tcp)
