"""The sources' experiments with TCP (issue 23, items 4 and 5; docs/results.md), on short simulator
runs: the qualitative properties each section of ``topo.results.tcp`` reports."""

from __future__ import annotations

import pytest

from tests.switch import netns as N
from topo.results import tcp as R
from topo.run.runner import run_experiment


def run(topo, seconds: float, backend: str = "sim"):
    kw = {"pcap": False} if backend == "netns" else {}
    return run_experiment(topo, int(seconds * 1e9), seed=1, plots=False, backend=backend, **kw)


@pytest.mark.cpu_only
@pytest.mark.parametrize("backend", [pytest.param("sim", marks=pytest.mark.cpu_only),
                                     pytest.param("netns", marks=[pytest.mark.netns, pytest.mark.slow])])
def test_tcp_through_a_hop_by_hop_network_is_dropped_only_at_its_first_hop(backend: str) -> None:
    """TCP reads no report: its packets fill R1's buffer fed by H3, the only one that drops; the
    regulated hops after it never fill, and the ALINEA flow's own buffers stay below full (netns:
    the kernel's TCP through p4switch)."""
    if backend == "netns":
        N.require_netns()
    off = tuple(f"flow[t{i}].start=100000s" for i in (2, 3, 4))
    s = run(R.scenario("alinea-tcp-cross", off + ("flow[t1].start=1s",)), 12, backend).summary
    assert s["loss"]["total"] > 0 and s["flows"]["t1"]["tcp"]["retransmissions"] > 0
    full = {k for k, b in s["buffers"].items() if b["max"] >= 1.0}
    if backend == "netns" and full != {"R1<-H3"}:
        N.skip_unless_kept_up(s, f"buffers full: {sorted(full)}")
    assert full == {"R1<-H3"}, full
    assert s["flows"]["f1"]["goodput_bps"] > 0 and s["flows"]["t1"]["goodput_bps"] > 0


def test_alinea_alone_in_the_cross_topology_is_lossless_and_fills_the_link() -> None:
    off = tuple(f"flow[t{i}].start=100000s" for i in (1, 2, 3, 4))
    s = run(R.scenario("alinea-tcp-cross", off), 8).summary
    assert s["loss"]["total"] == 0 and s["flows"]["f1"]["goodput_bps"] > 0.95 * 2e6


def test_blm_yields_to_tcp_and_takes_the_capacity_back() -> None:
    """CVIHIS's published BLM test, time scaled down further: TCP (RTT 200 ms) from 4 s to 24 s."""
    t = R.scenario("cvihis-blm-vs-tcp", ("link[H1-R1].delay=3ms", "flow[tcp].start=4s", "flow[tcp].stop=24s"))
    s = run(t, 34).summary
    alone = R.window(s, "blm", 2, 4)
    assert alone > 0.8 * 3e6
    assert R.window(s, "blm", 20, 24) < 0.5 * alone  # gives way as TCP's window grows
    assert R.window(s, "tcp", 20, 24) > max(R.window(s, "tcp", 8, 12), 0.5 * alone)  # TCP grows into the link
    assert R.window(s, "blm", 30, 34) > 0.8 * alone  # and takes the capacity back


def test_alinea_one_way_delay_varies_less_than_tcps_on_the_same_path() -> None:
    """Chen et al.'s claim on the one-router line (shorter than paper-5router): the spread p99 - p50 and
    the jitter of ALINEA's one-way delay are below TCP's through drop-tail FIFOs."""
    sets = ("link[H1-R1].rate=10Mbps",)
    runs = [run(R.scenario("paper-1router", sets, control=c), 16) for c in ("alinea", "tcp-reno")]
    a, t = (R.owd_stats(r.recorder.packets["f1"], 8 * 10**9) for r in runs)
    assert a["n"] > 100 and t["n"] > 100
    assert a["jitter"] < t["jitter"] and a["p99"] - a["p50"] < t["p99"] - t["p50"], (a, t)


def test_ledbat_and_blm_yield_to_tcp_and_ledbat_reacts_faster() -> None:
    sets = ("flow[tcp].start=10s", "flow[tcp].stop=40s")  # BLM needs ~20 s to give way at 600 kb/s
    out = {}
    for label, replace in (R.SCAVENGERS[0], R.SCAVENGERS[2]):
        s = run(R.scenario("ledbat-vs-tcp", sets, replace), 40).summary
        alone = R.window(s, "scavenger", 5, 10)
        assert R.window(s, "scavenger", 34, 40) < 0.5 * alone, label
        out[label] = R._after(s, 10, below=0.5 * alone)
    ledbat, blm = (float(v) if v != "never" else float("inf") for v in out.values())
    assert ledbat < blm, out


def test_owd_stats_and_share_on_made_up_inputs() -> None:
    rows = [(i, i * 10**9, i * 10**9 + (100 + (10 if i % 2 else 0)) * 10**6) for i in range(10)]  # 100 / 110 ms
    st = R.owd_stats(rows, 0)
    assert st["jitter"] == 10 and st["p50"] in (100, 105, 110) and st["n"] == 10
    s = {"series": {"t_s": [0.5, 1.0], "flows": {"a": {"receive_bps": [3e6, 3e6]}, "b": {"receive_bps": [1e6, 1e6]}}}}
    assert R.share(s, "a", 0, 1) == 0.75 and R.window(s, "b", 0, 1) == 1e6


@pytest.mark.parametrize("mode", ["--grid", "--targets"])
def test_a_reading_the_loader_refuses_is_one_line_naming_the_file_and_key(mode: str, capsys) -> None:
    """``--grid`` / ``--targets`` with a reading that does not exist: the loader's one line, no traceback."""
    with pytest.raises(SystemExit) as info:
        R.main([mode, "{variant: nope}", "--starts", "default"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "cvihis.variant: 'nope' is not one of reprobe-overload" in err and "Traceback" not in err


def test_grid_cells_by_name_and_a_cell_off_the_grid_is_one_line(capsys) -> None:
    """``--cells``: the grid's cells named MBPS/RTT, in the grid's order; a cell not on it refused in one line."""
    assert R.grid_cells("4.5/200,2/20") == [("2Mbps", 20, "8ms"), ("4.5Mbps", 200, "98ms")]
    assert R.grid_cells() == [(r, rtt, d) for r in R.RTM_RATES for rtt, d in R.RTM_RTTS]
    with pytest.raises(SystemExit) as info:
        R.main(["--grid", "default", "--cells", "2/201"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--cells 2/201: 2/201 not on the grid" in err and "Traceback" not in err


def test_a_grid_start_names_a_rate_and_an_unknown_start_is_one_line(capsys) -> None:
    """``--starts``: RTM starts at CVIHIS's own rate (no ``start_rate``), half the bottleneck's capacity or the
    capacity; another name is refused in one line naming the choices."""
    assert [R.start_rate(s, "4.5Mbps") for s in R.RTM_STARTS] == ["", "2.25Mbps", "4.5Mbps"]
    assert R.start_rate("half", "2Mbps") == "1Mbps"
    with pytest.raises(SystemExit) as info:
        R.main(["--grid", "default", "--starts", "quarter"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--starts quarter: use one or more of default, half, capacity" in err and "Traceback" not in err
