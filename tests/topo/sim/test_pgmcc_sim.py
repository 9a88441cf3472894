"""pgmcc in the simulator (topo/sim/pgmcc.py) on short runs of the seed's four sets (topo/pgmcc/), NAK
aggregation in alinea.p4 (options.nak_aggregation), lossy links (``loss:``) and the schema's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.topo.helpers import expect_error
from topo.file.schema import load_topology, load_topology_text
from topo.run.runner import run_experiment
from topo.sim.network import SimNetwork

SETS = ROOT / "topo" / "pgmcc"
S = 1_000_000_000


def run(path: Path | str, seconds: float, seed: int = 1, edit: tuple[str, str] | None = None) -> SimNetwork:
    text = Path(path).read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    net = SimNetwork(load_topology_text(text, str(path)), seed=seed).build()
    net.run_until(round(seconds * S))
    net.finish()
    return net


def source(net: SimNetwork, host: str) -> object:
    assert net.hosts[host].pgmcc is not None
    (src,) = net.hosts[host].pgmcc.sources.values()
    return src.core


def rid(net: SimNetwork, host: str) -> int:
    return net.topo.nodes[host].index


# ---- set 1: the loop on a shared bottleneck ----------------------------------------------------------
def test_set1_every_receiver_gets_every_packet_and_the_records_show_the_acker(tmp_path: Path) -> None:
    topo = load_topology(SETS / "set1-window.yaml")
    result = run_experiment(topo, 30 * S, seed=2, out=tmp_path, plots=False)
    assert result.violations == []
    stats = result.recorder.control_stats
    lead = stats["pgm@M1"]
    assert lead["acker"] in ("M1", "M2", "M3") and lead["acks"] > 0 and lead["window_cuts"] > 0
    for r in ("M1", "M2", "M3"):
        st = stats[f"pgm@{r}"]
        assert st["unrecovered"] == 0 and st["duplicates"] <= st["delivered"]
        # what is not delivered yet was sent in the last window (still in flight or awaiting repair)
        assert lead["data_sent"] - st["delivered"] <= lead["cwnd"] + st["missing"] + 1
    switches = (tmp_path / "pgmcc_switches.csv").read_text().splitlines()
    assert switches[0] == "t_s,flow,from,to,t_from_pps,t_to_pps"
    assert switches[1].split(",")[2] == "-"  # the first election, from no acker
    rows = (tmp_path / "pgmcc.csv").read_text().splitlines()[1:]
    assert len(rows) >= 300 and {r.split(",")[2] for r in rows[-10:]} == {lead["acker"]}


# ---- set 2: lossy links -------------------------------------------------------------------------------
def test_set2_lossy_links_lose_frames_seeded_and_accounted() -> None:
    a = run(SETS / "set2-losses.yaml", 15, seed=4)
    b = run(SETS / "set2-losses.yaml", 15, seed=4)
    c = run(SETS / "set2-losses.yaml", 15, seed=5)
    assert a.counts["link_lost_frames"] > 0
    assert a.recorder.flows == b.recorder.flows and a.link_lost == b.link_lost  # the seed decides every draw
    assert a.link_lost != c.link_lost
    assert set(a.link_lost) <= {("R0", "R1"), ("R1", "R0"), ("R0", "R2"), ("R2", "R0")}  # lossy links only
    mr1 = a.hosts["MR1"].pgmcc.sinks[a.wire_ids["pgm@MR1"]].core  # type: ignore[union-attr]
    mr2 = a.hosts["MR2"].pgmcc.sinks[a.wire_ids["pgm@MR2"]].core  # type: ignore[union-attr]
    assert mr2.lost > mr1.lost and mr2.p > mr1.p  # 1.6 % against 0.4 % on the same packets
    ends = a.end_state()
    for (u, v), n in a.link_lost.items():
        assert ends.places[f"link {u}->{v}"].dropped == n


def test_set2_the_acker_moves_between_equal_receivers_without_stalling_the_session() -> None:
    """Set 2's receivers are equal by TCP's equation (400 ms at 0.4 %, 200 ms at 1.6 %): noise in their
    loss estimates moves the acker back and forth. Each switch comes with the window full; the new
    acker's token (hosts/pgmcc/sender.py) keeps the loop clocked, so switches do not end in timeouts."""
    net = run(SETS / "set2-losses.yaml", 60)
    s = source(net, "S")
    assert {sw.new for sw in s.switches} == {rid(net, "MR1"), rid(net, "MR2")} and len(s.switches) > 2
    assert s.switch_tokens > 0 and s.timeouts < len(s.switches) / 2


def test_set2_congestion_the_slow_branch_sets_the_rate_and_the_fast_paths_tcp_takes_the_rest() -> None:
    """Single rate: the session runs at what the 500 kb/s branch gives it beside TCP 2 (MR2, the worse
    receiver by the equation, is the acker), so the TCP on the 1 Mb/s path gets more than the session:
    f1 above 100 % is the price of one rate for the group, not pgmcc taking less than its share."""
    from hosts.tcp import MSS

    net = run(SETS / "set2-congestion.yaml", 60)
    s = source(net, "S")
    assert s.acker == rid(net, "MR2")
    delivered = min(net.hosts[h].pgmcc.sinks[net.wire_ids[f"pgm@{h}"]].core.delivered  # type: ignore[union-attr]
                    for h in ("MR1", "MR2"))
    assert delivered * 1514 * 8 < 500_000 * 60
    tcp1 = int(net.recorder.tcp_flows["tcp1"]["bytes_received"]) // MSS
    assert tcp1 > delivered


def test_a_loss_of_zero_changes_no_run() -> None:
    base = run(SETS / "set1-window.yaml", 5)
    zero = run(SETS / "set1-window.yaml", 5, edit=("{ends: [R2, M1]}", "{ends: [R2, M1], loss: 0%}"))
    assert base.recorder.flows == zero.recorder.flows


# ---- sets 3 and 4: NAK aggregation ---------------------------------------------------------------------
def test_set3_aggregation_keeps_the_far_receivers_naks_from_the_sender() -> None:
    """MR3 loses the same packets as the near receivers, 50 ms later: R1 drops its NAKs as repeats, so
    the sender never hears of it and never elects it; without aggregation its NAKs arrive."""
    agg = run(SETS / "set3-suppression.yaml", 20)
    off = run(SETS / "set3-suppression.yaml", 20, edit=("nak_aggregation: 250ms", "nak_aggregation: 0ms"))
    s_agg, s_off = source(agg, "S"), source(off, "S")
    assert rid(agg, "MR3") not in s_agg.receivers and all(sw.new != rid(agg, "MR3") for sw in s_agg.switches)
    assert rid(off, "MR3") in s_off.receivers
    repeats = sum(d.packets for d in agg.recorder.drops if d.reason == "nak_repeat" and d.switch == "R1")
    assert repeats > 0
    assert not any(d.reason == "nak_repeat" for d in off.recorder.drops)
    for net in (agg, off):
        for r in ("MR1", "MR2", "MR3"):
            assert net.hosts[r].pgmcc.sinks[net.wire_ids[f"pgm@{r}"]].core.unrecovered == 0  # type: ignore[union-attr]


def test_set4_the_far_receivers_naks_outlive_the_hold_and_elect_it() -> None:
    net = run(SETS / "set4-representatives.yaml", 20)
    s = source(net, "S")
    assert rid(net, "MR3") in s.receivers
    assert any(sw.new == rid(net, "MR3") for sw in s.switches)
    assert [sw.t_ns for sw in s.switches] == sorted(sw.t_ns for sw in s.switches)


def test_set4_a_short_loss_filter_brings_back_the_near_far_switching() -> None:
    """With a short loss filter (1/16) the acker's stored estimate decays between losses; a loss shared by
    every receiver reaches the sender first in a near receiver's NAK, whose fresh estimate takes over from
    MR3's decayed one, and MR3's own NAK for the same loss, 400 ms later, takes it back (docs/howto/multicast.md,
    "Set 4"). With the draft's filter (500/65536) the same happens far more seldom."""
    far = {"MR3"}
    away_count = {}
    for weight in (None, "0.0625"):
        edit = None if weight is None else ("control: pgmcc}", f"control: pgmcc, pgmcc: {{loss_weight: {weight}}}}}")
        net = run(SETS / "set4-representatives.yaml", 60, edit=edit)
        s = source(net, "S")
        name = {net.topo.nodes[h].index: h for h in ("MR1", "MR2", "MR3")}
        hops = [(name.get(sw.old, "-"), name[sw.new], sw.t_ns) for sw in s.switches]
        away = [(i, t) for i, (old, new, t) in enumerate(hops) if old in far and new not in far]
        away_count[weight] = len(away)
        for i, t in away:  # MR3 takes back within a second: the same loss in its own NAK
            if i + 1 < len(hops):
                assert hops[i + 1][1] in far and hops[i + 1][2] - t < S, hops
    assert away_count["0.0625"] > 2 * max(1, away_count[None]), away_count


# ---- the schema ------------------------------------------------------------------------------------------
PG = """\
nodes: {H1: {kind: host}, S1: {kind: switch}, H2: {kind: host}, H3: {kind: host}}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, H2], loss: 2%}
  - {ends: [S1, H3]}
flows:
  - {name: m, src: H1, dst: [H2, H3], control: pgmcc, pgmcc: {timeout: 2s}}
options: {nak_aggregation: 100ms}
"""


def test_a_pgmcc_file_loads() -> None:
    t = load_topology_text(PG, "t.yaml")
    assert [f.name for f in t.flows] == ["m@H2", "m@H3"] and t.flows[0].pgmcc is not None
    assert t.flows[0].pgmcc.timeout_ns == 2 * S and t.options.nak_aggregation_ns == 100_000_000
    assert [link.loss for link in t.links] == [0.0, 0.02, 0.0]


@pytest.mark.parametrize(("old", "new", "needle", "path", "what"), [
    ("pgmcc: {timeout: 2s}", "pgmcc: {timeout: 0s}", "timeout", "flows[0].pgmcc.timeout", "must be > 0"),
    ("pgmcc: {timeout: 2s}", "pgmcc: {switch_ratio: 1.5}", "switch_ratio", "flows[0].pgmcc.switch_ratio",
     "1.5: switch_ratio must be in (0, 1]"),
    ("pgmcc: {timeout: 2s}", "pgmcc: {loss_weight: 0}", "loss_weight", "flows[0].pgmcc.loss_weight", "(0, 1)"),
    ("pgmcc: {timeout: 2s}", "pgmcc: {repair: maybe}", "repair", "flows[0].pgmcc.repair", "true or false"),
    ("pgmcc: {timeout: 2s}", "pgmcc: {nak_retries: -1}", "nak_retries", "flows[0].pgmcc.nak_retries", ">= 0"),
    ("pgmcc: {timeout: 2s}", "pgmcc: {rtt: seconds}", "rtt", "flows[0].pgmcc.rtt", "rtt is time or packets"),
    ("pgmcc: {timeout: 2s}", "pgmcc: {colour: red}", "colour", "flows[0].pgmcc.colour", "unknown key"),
    ("pgmcc: {timeout: 2s}", "r_max: 1Mbps", "r_max", "flows[0].r_max", "a pgmcc flow has no r_max"),
    ("control: pgmcc, pgmcc: {timeout: 2s}", "control: alinea, pgmcc: {timeout: 2s}", "pgmcc: {", "flows[0].pgmcc",
     "only pgmcc flows have pgmcc"),
    ("loss: 2%", "loss: 100%", "loss", "links[1].loss", "must be in [0, 1)"),
    ("loss: 2%", "loss: lots", "loss", "links[1].loss", ""),
    ("nak_aggregation: 100ms", "nak_aggregation: -1ms", "nak_aggregation", "options.nak_aggregation", ""),
])
def test_bad_pgmcc_values_are_refused_with_their_line(old: str, new: str, needle: str, path: str, what: str) -> None:
    assert old in PG
    expect_error(PG.replace(old, new), needle, path, what)


def test_nak_aggregation_without_a_pgmcc_flow_is_refused() -> None:
    text = PG.replace("control: pgmcc, pgmcc: {timeout: 2s}", "control: alinea")
    expect_error(text, "nak_aggregation", "options.nak_aggregation", "no pgmcc flow")


@pytest.mark.cpu_only
def test_the_netns_backend_refuses_lossy_links_and_nak_aggregation(tmp_path: Path) -> None:
    """Neither is emulated there yet: refused before anything starts, naming the file's line."""
    from topo.netns.network import NetnsNetwork
    from topo.netns.plumbing import NetnsError

    lossy = load_topology_text(PG.replace("options: {nak_aggregation: 100ms}\n", ""), "t.yaml")
    with pytest.raises(NetnsError, match=r"t.yaml:4: link S1-H2: loss \(random link loss\) is the simulator's only"):
        NetnsNetwork(lossy, duration_ns=10**9, run_dir=tmp_path)._refuse_unsupported()
    agg = load_topology_text(PG.replace(", loss: 2%", ""), "t.yaml")
    with pytest.raises(NetnsError, match="options.nak_aggregation: the netns backend does not write"):
        NetnsNetwork(agg, duration_ns=10**9, run_dir=tmp_path)._refuse_unsupported()
