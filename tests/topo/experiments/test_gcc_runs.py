"""``control: gcc`` in the simulator: Carlucci et al.'s settings in spirit (SOURCES.md E), the clock
offset changing nothing, and ``hbh compare`` taking gcc on every shipped topology.

The path is topo/results/gcc.py's: H1 -- R1 -- R2 -- H2, 10 Mb/s access, the bottleneck R1 -> R2 at C
with 40 ms and a 300 ms drop-tail FIFO (RTT 100 ms). Measures are the summary's second half."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.switch import netns as N
from topo.experiments.compare import compare
from topo.file.schema import load_topology_text
from topo.results.gcc import base_delay_ms, jain, measures, scenario
from topo.run.runner import run_experiment

S = 1_000_000_000


def run(text: str, seconds: float, seed: int = 1, backend: str = "sim") -> dict:
    kw = {"pcap": False} if backend == "netns" else {}
    return run_experiment(load_topology_text(text, "<gcc>"), int(seconds * S), seed=seed, plots=False,
                          backend=backend, **kw).summary


@pytest.mark.slow
def test_one_gcc_flow_uses_most_of_an_empty_bottleneck_without_a_standing_queue() -> None:
    """Carlucci et al.: one GCC flow uses a little over 80 % of an empty bottleneck and keeps the queue
    short. 1 Mb/s, 60 s: from 300 kb/s at 5 % per second GCC reaches C by about 25 s, so the second
    half (30-60 s) is its steady state. The band 0.65-1.0 leaves room for where in its sawtooth
    (a cut to 0.85 of the received rate, then 8 % per second) a 30 s window falls; "no standing queue":
    the flow's queuing delay stays under a third of the 300 ms buffer and nothing is dropped, which a
    controller blind to delay (filling the FIFO until it drops) would fail on both counts. That the
    delay-based side did it: its detector signalled over-use and its rate controller cut."""
    s = run(scenario(1e6, ["control: gcc"]), 60)
    f = s["flows"]["f1"]
    assert 0.65 <= s["links"]["R1->R2"]["utilisation"] <= 1.0, s["links"]["R1->R2"]
    assert f["owd_ms"]["mean"] - base_delay_ms(1e6) < 100, f["owd_ms"]
    assert s["loss"]["dropped_in_network"] == 0
    c = f["control_state"]
    assert c["overuse_signals"] >= 1 and c["decreases"] >= 1, c
    assert c["filter"] == "trendline" and c["reports"] >= 50  # a regular report a second, and early ones


@pytest.mark.slow
def test_beside_rtm_gcc_keeps_the_queue_shorter_and_rtm_uses_more() -> None:
    """The thesis' comparison (SOURCES.md E): on the same empty bottleneck RTM uses more of it (almost
    100 % against GCC's ~80 %) and GCC keeps the queuing delay lower. 1 Mb/s, 60 s, the second half:
    asserted as orderings, not values (RTM's numbers depend on its readings, docs/background/cvihis.md); RTM's
    utilisation may fall short of GCC's by 0.02 (two 0.5 s bins' worth of the window)."""
    m = {c: measures(run(scenario(1e6, [f"control: {c}"]), 60), 1e6, ["f1"]) for c in ("gcc", "cvihis-rtm")}
    assert m["gcc"]["queuing_ms"] < m["cvihis-rtm"]["queuing_ms"], m
    assert m["cvihis-rtm"]["utilisation"] >= m["gcc"]["utilisation"] - 0.02, m


@pytest.mark.slow
def test_three_gcc_flows_share_one_bottleneck_fairly() -> None:
    """Carlucci et al.: three GCC flows on one bottleneck reach Jain's index 0.93 at about 80 %. 3 Mb/s,
    90 s, the three starting together (within the 200 ms start jitter): Jain >= 0.9 over the second
    half (the published 0.93 less a margin for one seed's 45 s), and the bottleneck used >= 65 %."""
    s = run(scenario(3e6, ["control: gcc"] * 3), 90)
    goodputs = [s["flows"][n]["goodput_bps"] for n in ("f1", "f2", "f3")]
    assert jain(goodputs) >= 0.9, goodputs
    assert s["links"]["R1->R2"]["utilisation"] >= 0.65


@pytest.mark.slow
def test_gcc_against_one_cubic_flow_keeps_its_floor_and_the_drafts_threshold_keeps_it_from_starving() -> None:
    """GCC's TCP-friendliness was tried against CUBIC (the thesis gives no share, so none is asserted).
    What the adaptive threshold is for (draft 5.4; Carlucci et al. 2016): the queue cubic builds raises
    gamma quickly (K_u) and lets it down slowly (K_d), so GCC does not read every build-up as its own
    over-use. The differential: the same run with libwebrtc's gains (gamma falling faster than it rises)
    leaves GCC less than half the share the draft's gains give it. And in both GCC never sends below
    its encoder's floor (min_rate, 50 kb/s): its goodput over the second half is at least 0.8 of it
    (the 20 % for packets cubic's overflows take)."""
    shares = {}
    for gains in ("draft", "libwebrtc"):
        s = run(scenario(2e6, [f"control: gcc, gcc: {{gains: {gains}}}", "control: tcp, cc: cubic"]), 60)
        g, t = s["flows"]["f1"], s["flows"]["f2"]
        assert g["goodput_bps"] >= 0.8 * 50e3 and g["control_state"]["rate_bps"] >= 50e3, g
        assert t["goodput_bps"] > 0.2 * 2e6, t
        shares[gains] = g["receive_bps"] / (g["receive_bps"] + t["receive_bps"])
    assert shares["draft"] > 2 * shares["libwebrtc"], shares


def test_clock_offsets_change_nothing() -> None:
    """GCC uses only differences of one clock's readings (delay variation, RTT from an echo): the same
    seed with H2's clock 3 s ahead and H1's 1.5 s ahead gives the very same run."""
    text = scenario(1e6, ["control: gcc"])
    shifted = text.replace("H1: {kind: host}", "H1: {kind: host, clock_offset: 1500ms}") \
                  .replace("H2: {kind: host}", "H2: {kind: host, clock_offset: 3s}")
    a, b = run(text, 20), run(shifted, 20)
    assert a["flows"]["f1"]["control_state"] == b["flows"]["f1"]["control_state"]
    assert 30 * 19.8 <= a["flows"]["f1"]["control_state"]["frames"] <= 30 * 20 + 1  # 30 frames/s from a start within 0.2 s
    assert a["flows"]["f1"]["goodput_bps"] == b["flows"]["f1"]["goodput_bps"]


def test_the_kalman_filter_runs_as_an_option() -> None:
    s = run(scenario(1e6, ["control: gcc, gcc: {filter: kalman, start_rate: 800kbps}"]), 10)
    assert s["flows"]["f1"]["control_state"]["filter"] == "kalman" and s["flows"]["f1"]["goodput_bps"] > 0


@pytest.mark.parametrize("topology", sorted(p.name for p in (ROOT / "topo").glob("*.yaml")))
def test_every_shipped_topology_takes_gcc(topology: str) -> None:
    """``hbh compare --controls ...,gcc``: every shipped file's flows become gcc flows that load."""
    from tests.topo.experiments.test_compare import is_multicast
    from topo.experiments.compare import _check_backend
    from topo.file.settings import SweepError
    from topo.sweep.run import plan_sweep

    if is_multicast(ROOT / "topo" / topology):
        # GCC is unicast: a multicast file's flows are refused for it, one line naming why.
        with pytest.raises(SweepError, match=r"a gcc flow has one receiver"):
            plan_sweep(ROOT / "topo" / topology, [], "alinea,gcc", "1", "1s")
        return
    sweep = plan_sweep(ROOT / "topo" / topology, [], "alinea,gcc", "1", "1s")
    _check_backend(sweep, "sim")
    assert [p.control for p in sweep.points] == ["alinea", "gcc"]


@pytest.mark.slow
def test_compare_alinea_and_gcc_on_bottleneck_drop(tmp_path: Path) -> None:
    """`hbh compare topo/bottleneck-drop.yaml --controls alinea,gcc`: both carry traffic, and the
    report has a column for each."""
    c = compare(str(ROOT / "topo" / "bottleneck-drop.yaml"), "alinea,gcc", "1", "8s", tmp_path, serial=True,
                plots=False)
    assert c.failures == 0 and c.controls == ("alinea", "gcc")
    assert all(c.metrics[k][0]["goodput_kbps"] > 100 for k in c.controls), c.metrics
    (flow,) = c.summaries["gcc"][0]["flows"].values()
    assert flow["control_state"]["filter"] == "trendline"
    assert "gcc" in (tmp_path / "report.md").read_text()


@pytest.mark.netns
@pytest.mark.slow
def test_gcc_runs_in_netns() -> None:
    """The same host code in namespaces: a GCC flow over a 1 Mb/s bottleneck delivers, reports, and its packets
    are all accounted for. No rate is asserted: on a loaded machine the hosts' late wake-ups read as queuing delay
    and GCC rightly backs off (seen: 108 kb/s at a load of 12)."""
    N.require_netns()
    s = run(scenario(1e6, ["control: gcc, gcc: {start_rate: 500kbps}"]), 8, backend="netns")
    f = s["flows"]["f1"]
    assert f["goodput_bps"] > 0 and f["control_state"]["reports"] >= 4 and f["control_state"]["receiver_reports"] >= 4
    assert not [v for v in s["invariants"]["violations"] if v["name"] == "conservation"]


def test_the_tables_empty_path_delay_is_what_a_packet_that_never_queues_sees() -> None:
    """topo/results/gcc.py's queuing delay subtracts base_delay_ms: a 50 kb/s fixed flow (a packet every
    160 ms, 8 ms of service at 1 Mb/s) never queues, so its one-way delay is exactly that base."""
    s = run(scenario(1e6, ["control: fixed, rate: 50kbps"]), 3)
    owd = s["flows"]["f1"]["owd_ms"]
    assert owd["p50"] == pytest.approx(base_delay_ms(1e6), abs=0.01) and owd["p99"] == pytest.approx(owd["p50"], abs=0.01)


def test_results_gcc_refuses_bad_arguments_in_one_line(tmp_path: Path, capsys) -> None:
    from topo.results.gcc import main

    (tmp_path / "d.md").write_text("no markers\n")
    for args, needle in ((["--duration", "0"], "--duration 0"), (["--seeds", "x"], "--seeds x"),
                         (["--doc", str(tmp_path / "d.md")], "no <!-- gcc-carlucci -->")):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1


@pytest.mark.slow
def test_results_section_is_one_spliceable_section_with_every_row() -> None:
    """docs/results.md's GCC section (topo.results.doc --only gcc): one ``## `` section, the published
    figures, then a row per setting and control (4 capacities x 2, three flows x 2, cubic x 2, and the
    Kalman and libwebrtc-gains rows)."""
    from topo.results.gcc import results_section
    from topo.results.splice import splice_sections

    lines = results_section("1", 1.0)  # the rows, not their values: 1 s runs
    assert lines[0].startswith("## GCC beside CVIHIS RTM") and sum(line.startswith("## ") for line in lines) == 1
    rows = [line for line in lines if line.startswith(("| one flow |", "| three flows |", "| against one cubic |"))]
    assert len(rows) == 4 * 2 + 2 + 2 + 2
    doc = splice_sections("# results\n\n## Other\n\ntext\n", lines)
    assert doc.count("## GCC beside CVIHIS RTM") == 1 and "## Other" in doc
