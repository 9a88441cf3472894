"""The loop analysis of a topology's laws, and hbh run's warnings from it (topo/analysis/check.py)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.paths import RANDOM_CASES, ROOT
from topo.analysis.brake_ramp import _gained_bits, brake_ramps
from topo.analysis.check import check_topology, law_loops, path_drain, warnings
from topo.file.scaling import scaled_text
from topo.file.schema import load_topology, load_topology_text
from topo.run.runner import run_experiment

S = 1_000_000_000
SHIPPED_ALINEA = ("paper-1router", "paper-5router", "capacity-drop", "alinea-merge-2", "alinea-merge-3",
                  "alinea-merge-shared")


def text(name: str) -> str:
    return (ROOT / "topo" / f"{name}.yaml").read_text()


@pytest.mark.parametrize("name", SHIPPED_ALINEA)
def test_the_shipped_files_get_no_warning(name: str) -> None:
    assert warnings(load_topology(ROOT / "topo" / f"{name}.yaml"), 40) == []


def test_fifty_ms_links_are_ruled_out_and_the_warning_says_why() -> None:
    t = load_topology_text(text("paper-1router").replace("delay: 3ms", "delay: 50ms"), "t.yaml")
    ws = warnings(t, 20)
    assert len(ws) == 2 and all("unstable" in w for w in ws)
    assert "loop delay 11 report intervals" in ws[0]  # H1 -> R1: a host, no control latency
    assert all("a buffer of at least" in w for w in ws)


def test_the_delay_is_the_network_and_the_control_plane() -> None:
    """Propagation both ways, one packet on the wire, the control latency for a switch's law; the
    queue model does not change it (on BMv2's queues the agents forecast past their own queue)."""
    t = load_topology(ROOT / "topo" / "paper-5router.yaml")
    delays = {c.key: c.loop.delay_s for c in check_topology(t, 10)}
    assert delays[("H1", "R1")] == pytest.approx(2 * 0.003 + 8000 / 2e6)  # a host: no control plane
    assert delays[("R1", "R2")] == pytest.approx(2 * 0.003 + 8000 / 2e6 + t.options.control_latency_ns / 1e9)
    t.options = dataclasses.replace(t.options, queue_model="shaper")
    assert {c.key: c.loop.delay_s for c in check_topology(t, 10)} == delays


@pytest.mark.slow
def test_where_the_analysis_warns_the_simulator_loses_packets() -> None:
    """The issue's first row: paper-5router with rates and playout x10, nothing else, on the shaper,
    where the law runs as the analysis models it. (On BMv2's queues, the file's default since issue
    20, the agents' forecast and start-up brake hold this case: 0 lost, docs/background/alinea.md.)"""
    src = (text("paper-5router").replace("rate: 2Mbps", "rate: 20Mbps").replace("rate: 3Mbps", "rate: 30Mbps")
           .replace("playout: 1.2Mbps", "playout: 12Mbps"))
    t = load_topology_text(src, "x10.yaml")
    t.options = dataclasses.replace(t.options, queue_model="shaper")
    assert any("start up together" in w for w in warnings(t, 20))
    assert run_experiment(t, 20 * S, seed=1, plots=False).summary["loss"]["total"] > 0


def _scaled_without_gains(name: str, k: int) -> str:
    """The shipped file with every rate (and playout, R_max) times k and no gains, floor or
    interval: what topo/analysis/derive.py fills in."""
    return scaled_text(name, k)


def test_derived_values_are_marked_and_pass_their_own_analysis() -> None:
    t = load_topology_text(_scaled_without_gains("paper-5router", 10), "x10.yaml")
    assert all(t.provenance[k][f] == "derived" for k in t.law if k in {("R4", "R5"), ("R5", "H2")}
               for f in ("w_max", "w_min", "k_p", "r_floor", "interval"))
    assert warnings(t, 20) == []


@pytest.mark.slow
@pytest.mark.parametrize(("name", "k", "seconds"), [("paper-1router", 10, 20), ("paper-1router", 50, 8)])
def test_derived_parameters_regulate_ten_and_fifty_times_the_paper_rates(name: str, k: int, seconds: int) -> None:
    """Issue 21's first row, with the gains left out of the file, on BMv2's queues (the default):
    zero loss, every buffer within 3 points of its target over the second half, the bottleneck's
    rate delivered. Before the start-up brake (docs/background/alinea.md) x10 lost 22 packets: the ramp ran
    open loop into H2's 10 packets of headroom."""
    src = _scaled_without_gains(name, k)
    t = load_topology_text(src, f"{name}-x{k}.yaml")
    assert t.options.queue_model == "bmv2"
    s = run_experiment(t, seconds * S, seed=1, plots=False).summary
    assert s["loss"]["total"] == 0, s["loss"]
    for buf, b in s["buffers"].items():
        assert abs(b["mean"] - b["target"]) <= 0.03 and b["max"] < 1.0, (buf, b)
    assert s["flows"]["f1"]["goodput_bps"] >= 0.95 * 1.2e6 * k


@pytest.mark.slow
def test_derived_parameters_regulate_the_paper_line_with_fifty_ms_links() -> None:
    """Issue 21's last row (R1 never settled: 62.8 % against 80 % with the paper's gains): with
    the gains, floor and interval derived for a 100 ms loop, 60 s settle both buffers."""
    src = scaled_text("paper-1router", 1, delay="50ms")
    t = load_topology_text(src, "paper-1router-50ms.yaml")
    assert t.links[0].delay_ns == 50_000_000
    s = run_experiment(t, 60 * S, seed=1, plots=False).summary
    assert s["loss"]["total"] == 0, s["loss"]
    for buf, b in s["buffers"].items():
        assert abs(b["mean"] - b["target"]) <= 0.03 and b["max"] < 1.0, (buf, b)
    assert s["flows"]["f1"]["goodput_bps"] >= 0.95 * 1.2e6


FLOOR_OVER_DRAIN = """name: floor-over-drain
defaults:
  link: {rate: 500Mbps, delay: 1ms, buffer: 50}
nodes:
  S1: {kind: switch}
  S2: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, S2], rate: 5Mbps}
  - {ends: [S2, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
"""


def test_a_floor_above_what_the_switch_forwards_is_warned_with_the_floor_that_would_not_overflow() -> None:
    """H1's floor is derived from its own 500 Mb/s link (10 Mb/s); behind S1 its flow crosses 5 Mb/s.
    At its floor H1 still sends more than S1 forwards, whatever S1 reports: the warning names the
    floor and the largest that would not overflow, and the simulator loses packets."""
    t = load_topology_text(FLOOR_OVER_DRAIN, "floor.yaml")
    ws = warnings(t, 1)
    assert any(w.startswith("law H1->S1") and "r_floor 10Mbps" in w and "an r_floor of at most 5Mbps" in w
               for w in ws), ws
    assert run_experiment(t, S, seed=1, plots=False).summary["loss"]["total"] > 0
    for fix in (FLOOR_OVER_DRAIN.replace("control: alinea}", "control: alinea, r_max: 4Mbps}"),  # never that much
                FLOOR_OVER_DRAIN.replace("defaults:\n", "defaults:\n  alinea: {r_floor: 4Mbps}\n")):
        assert not any("r_floor" in w for w in warnings(load_topology_text(fix, "floor.yaml"), 1))


def test_a_buffer_with_exactly_one_packet_above_its_target_has_room_for_its_one_feeder() -> None:
    """5 packets at 80 %: one packet of room, for the one link feeding the queue ((1 - 0.8) * 5 is just
    below 1 in floats: it was warned as less than one, and told to grow to 6). H2's 1 Mb/s link holds S2's
    buffer at its target (the room rule counts only there: ``LawCheck.short_of_room``)."""
    src = (FLOOR_OVER_DRAIN.replace("rate: 500Mbps", "rate: 2Mbps").replace("rate: 5Mbps}", "rate: 2Mbps, buffer: 5}")
           .replace("- {ends: [S2, H2]}", "- {ends: [S2, H2], rate: 1Mbps}"))
    checks = {c.key: c for c in check_topology(load_topology_text(src, "five.yaml"), 5)}
    assert checks[("S1", "S2")].room_pkts == checks[("S1", "S2")].inputs == 1
    small = {c.key: c for c in check_topology(load_topology_text(src.replace("buffer: 5}", "buffer: 4}"), "four.yaml"), 5)}
    assert "a buffer of at least 5 packets" in (small[("S1", "S2")].warning() or "")


def test_the_room_above_a_target_counts_only_where_the_laws_together_hold_the_buffer_there() -> None:
    """A 4-packet buffer at 80 % holds 0.8 packets above its target, less than its one feeding link's packet. On a
    line of 2 Mb/s links nothing holds S2's buffer at its target (the model peaks far below it): the room rule is
    silent and the packet is counted above the model's peak (``LawCheck.short_of_room``); behind H2's 1 Mb/s link
    the laws hold it there and the rule warns."""
    src = (FLOOR_OVER_DRAIN.replace("rate: 500Mbps", "rate: 2Mbps").replace("rate: 5Mbps}", "rate: 2Mbps, buffer: 4}"))
    for text, held in ((src, False), (src.replace("- {ends: [S2, H2]}", "- {ends: [S2, H2], rate: 1Mbps}"), True)):
        c = {c.key: c for c in check_topology(load_topology_text(text, "four.yaml"), 5)}[("S1", "S2")]
        assert c.room_pkts < c.inputs == 1 and c.network is not None
        assert (c.network.peak >= c.loop.law.o_max) == held and c.short_of_room == held


@given(st.floats(1e3, 1e12), st.floats(1e3, 1e10), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_a_brake_ramps_gain_grows_with_the_ramp_and_never_beyond_its_rise(slope: float, rise: float, a: float,
                                                                          b: float) -> None:
    """topo/analysis/brake_ramp.py: what u's buffer gains over a span is the ramp's triangle until the rise left is
    spent, then the rise a second: never less over a longer span, never more than the rise times the span."""
    short, long = sorted((a, b))
    assert _gained_bits(slope, rise, short) <= _gained_bits(slope, rise, long) * (1 + 1e-12)
    assert _gained_bits(slope, rise, long) <= rise * long * (1 + 1e-12)
    assert _gained_bits(slope, rise, long) <= slope * long * long / 2 * (1 + 1e-12)


def test_a_brake_cut_under_a_ramp_is_a_bmv2_queues_rule() -> None:
    """A switch's brake acts through its forecast on BMv2's queues only: on a shaper's, the rule is silent."""
    name = "brake-guess-small-buffers-line.yaml"
    src = (RANDOM_CASES / name).read_text()
    bmv2 = load_topology_text(src, name)
    shaper = load_topology_text(src.replace("defaults:", "options: {queue_model: shaper}\ndefaults:", 1), name)
    assert set(brake_ramps(bmv2, law_loops(bmv2), path_drain)) == {("S1", "S2"), ("S2", "S3")}
    assert brake_ramps(shaper, law_loops(shaper), path_drain) == {}
