"""Every number a run prints is computed as docs/reference/metrics.md defines it, on topologies written from
docs/reference/topologies.md (not the shipped files): per-flow goodput at a shared receiver, windows of flows
that start or end inside the run and their FCT, rate CV's bins, convergence over the buffers that
can reach their target, Jain's index at the bottleneck, reaction from the packets, the series the
figures draw, targets moved during a run, and loss at the receivers' playout buffers apart."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.receiver import PlayoutBuffer
from topo.experiments.compare import run_metrics, run_reasons
from topo.experiments.compare_report import format_table
from topo.file.schema import load_topology_text
from topo.net.record import Recorder
from topo.run.runner import format_summary, run_experiment
from topo.run.summary import SERIES_BIN_NS, summarize
from topo.run.summary_buffers import buffer_rows
from topo.run.summary_reaction import source_reaction
from topo.sim.network import SimNetwork

S = 1_000_000_000

TREE = """
name: tree
defaults: {link: {rate: 40Mbps, delay: 2ms, buffer: 100}}
nodes:
  H1: {kind: host}
  H2: {kind: host}
  H3: {kind: host}
  H4: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  R3: {kind: switch}
  S: {kind: host, receive_buffer: 200, playout: 30Mbps}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [H3, R2]}
  - {ends: [H4, R2]}
  - {ends: [R1, R3]}
  - {ends: [R2, R3]}
  - {ends: [R3, S]}
flows:
  - {name: a, src: H1, dst: S, control: alinea}
  - {name: b, src: H2, dst: S, control: alinea}
  - {name: c, src: H3, dst: S, control: alinea}
  - {name: d, src: H4, dst: S, control: alinea}
"""


def run(text: str, seconds: float, seed: int = 1) -> dict:
    return run_experiment(load_topology_text(text, "user.yaml"), round(seconds * S), seed, None, plots=False).summary


# ---- goodput at a shared receiver ------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3_000_000), st.integers(1, 4)), max_size=300), st.integers(1, 20))
def test_the_playout_buffer_plays_each_flow_its_own_packets_in_arrival_order(arrivals, capacity) -> None:
    """Differential against a FIFO of flow ids kept here: what the application took per flow is the
    flows of the first ``played`` packets the buffer accepted, and sums to the buffer's count."""
    buf = PlayoutBuffer(capacity, 8_000_000, 1000)  # one packet per ms
    accepted: list[int] = []
    t = 0
    for gap, flow in arrivals:
        t += gap
        if buf.on_arrival(t, flow):
            accepted.append(flow)
    buf.drain(t)
    assert sum(buf.played_by_flow.values()) == buf.played
    assert dict(buf.played_by_flow) == dict(Counter(accepted[:buf.played]))


def test_each_flow_to_a_shared_sink_gets_its_own_goodput_and_together_no_more_than_the_playout() -> None:
    """Four ALINEA flows from four leaves to one sink playing out 30 Mb/s: the goodputs are the
    flows' shares of what the sink's application played, not the sink's total each."""
    s = run(TREE, 2.0)
    goodputs = [f["goodput_bps"] for f in s["flows"].values()]
    assert all(f["goodput_of"] == "played" for f in s["flows"].values())
    assert all(g > 0 for g in goodputs)
    assert sum(goodputs) <= 30e6 * 1.001  # the playout rate (and under the 40 Mb/s link)
    neck = s["bottleneck"]  # the sink's playout, slower than every link: Jain over the four flows
    assert (neck["link"], neck["kind"], neck["flows"]) == ("S playout", "playout", ["a", "b", "c", "d"])
    assert 0 < neck["utilisation"] <= 1.001 and 0.25 <= neck["jain"] <= 1.0


def _sink_tree(leaves: int, playout_mbps: int, rates_mbps: list[int], control: str) -> str:
    """``leaves`` hosts, two per aggregation switch, a core switch, one sink playing out."""
    aggs = (leaves + 1) // 2
    nodes = [f"  H{i}: {{kind: host}}" for i in range(leaves)] + [f"  A{j}: {{kind: switch}}" for j in range(aggs)]
    nodes += ["  C: {kind: switch}", f"  S: {{kind: host, receive_buffer: 100, playout: {playout_mbps}Mbps}}"]
    links = [f"  - {{ends: [H{i}, A{i // 2}], rate: {rates_mbps[i % len(rates_mbps)]}Mbps}}" for i in range(leaves)]
    links += [f"  - {{ends: [A{j}, C]}}" for j in range(aggs)] + ["  - {ends: [C, S]}"]
    flows = [f"  - {{name: f{i}, src: H{i}, dst: S, control: {control}}}" for i in range(leaves)]
    return "\n".join(["name: sinktree", "defaults: {link: {rate: 20Mbps, delay: 1ms, buffer: 60}}", "nodes:", *nodes,
                      "links:", *links, "flows:", *flows]) + "\n"


@settings(max_examples=3, deadline=None, derandomize=True)
@given(st.integers(2, 4), st.integers(4, 30), st.lists(st.integers(5, 40), min_size=1, max_size=4),
       st.sampled_from(["alinea", "cvihis-rtm"]))
def test_flows_to_one_host_never_play_out_more_than_it_and_their_counts_add_up(leaves, playout, rates, control) -> None:
    """Random trees into one playout host: the per-flow played counts add up to the host's own
    counter (a differential: two counters kept apart), and the goodputs to the host together stay
    within its playout rate and its link's."""
    topo = load_topology_text(_sink_tree(leaves, playout, rates, control), "user.yaml")
    r = run_experiment(topo, 3 * S // 2, 1, None, plots=False)
    last = {f.name: [x for x in r.recorder.flows if x.flow == f.name][-1].played for f in topo.flows}
    host = [b for b in r.recorder.buffers if b.host == "S"][-1]
    assert sum(last.values()) == host.played
    total = sum(f["goodput_bps"] for f in r.summary["flows"].values())
    assert total <= min(playout * 1e6, 20e6) * 1.001


# ---- windows of flows that start or end inside the run, FCT ----------------------------------------
FABRIC = """
name: fabric63
fabric: {leaves: 6, spines: 3, hosts_per_leaf: 1, host_rate: 10Mb/s, oversubscription: 1, delay: 250us,
         buffer: 100}
flows:
  - {src: h1_1, dst: h4_1, control: tcp, size: 100kB, start: 0.2s}
  - {src: h2_1, dst: h5_1, control: tcp, size: 150kB, start: 0.3s}
  - {src: h3_1, dst: h6_1, control: tcp, size: 200kB, start: 0.4s}
  - {src: h4_1, dst: h1_1, control: tcp, size: 100kB, start: 0.5s}
  - {src: h5_1, dst: h2_1, control: tcp, size: 250kB, start: 0.6s}
"""


def test_sized_flows_that_complete_early_are_measured_over_their_lifetime_and_have_an_fct() -> None:
    s = run(FABRIC, 3.0)
    for name, f in s["flows"].items():
        assert f["fct_s"] is not None and f["fct_s"] < 1.5, name  # each completed in the run's first half
        assert f["window"] == "lifetime" and f["window_s"][1] <= 1.5 + 0.6
        assert f["goodput_bps"] > 0 and f["send_bps"] > 0
        # what it received over its lifetime: at least its size in that time (records are whole)
        size_bits = {"f1": 100e3, "f2": 150e3, "f3": 200e3, "f4": 100e3, "f5": 250e3}[name] * 8
        span = f["window_s"][1] - f["window_s"][0]
        assert f["goodput_bps"] * span >= size_bits * 0.99
    assert "FCT" in format_summary(s)


# ---- rate CV: bins wholly inside the window ---------------------------------------------------------
DROP = """
name: drop
defaults: {link: {rate: 10Mbps, delay: 5ms, buffer: 100}}
nodes: {H1: {kind: host}, R1: {kind: switch}, R2: {kind: switch}, H2: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2], rate: 3Mbps}
  - {ends: [R2, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: CONTROL}
events:
  - {at: 2s, link: [R1, R2], rate: 1Mbps}
"""


def test_rate_cv_leaves_out_the_bin_that_ends_at_the_event() -> None:
    """A 2 Mb/s fixed source through a 3 Mb/s link that falls to 1 Mb/s at 2 s: after the drop it
    receives the link's 1 Mb/s, steadily; the bin (1.5, 2] at 2 Mb/s is not in the window."""
    s = run(DROP.replace("control: CONTROL", "control: fixed, rate: 2Mbps"), 4.0)
    f = s["flows"]["f1"]
    assert f["window_s"] == [2.0, 4.0]
    assert f["rate_cv"] is not None and f["rate_cv"] < 0.05


# ---- convergence: over the buffers that can reach their target --------------------------------------
def test_convergence_is_over_the_buffers_that_can_reach_their_target_and_says_which_cannot() -> None:
    s = run(DROP.replace("CONTROL", "alinea").split("events:")[0], 3.0)
    conv = s["convergence"]
    assert "R2<-R1" in conv["cannot_reach"] and "not a bottleneck" in conv["cannot_reach"]["R2<-R1"]
    assert conv["over"] == ["R1<-H1"] and s["convergence_s"] is not None
    assert s["convergence_s"] == s["buffers"]["R1<-H1"]["convergence_s"]
    assert "R2<-R1 cannot reach its target" in format_summary(s)


# ---- Jain's index over the flows that share the bottleneck -----------------------------------------
SHARED = """
name: shared
defaults: {link: {rate: 10Mbps, delay: 2ms, buffer: 100}}
nodes: {H1: {kind: host}, H2: {kind: host}, H3: {kind: host}, R1: {kind: switch}, R2: {kind: switch},
        H4: {kind: host}, H5: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [R1, R2], rate: 4Mbps}
  - {ends: [R2, H4]}
  - {ends: [H3, R2]}
  - {ends: [R2, H5]}
flows:
  - {name: a, src: H1, dst: H4, control: alinea}
  - {name: b, src: H2, dst: H4, control: alinea}
  - {name: c, src: H3, dst: H5, control: alinea}
"""


def test_jain_is_over_the_flows_that_cross_the_bottleneck_and_one_flow_says_so() -> None:
    s = run(SHARED, 2.0)
    neck = s["bottleneck"]
    assert neck["link"] == "R1->R2" and neck["flows"] == ["a", "b"] and 0.5 <= neck["jain"] <= 1.0
    one = run(DROP.replace("CONTROL", "alinea").split("events:")[0], 1.0)
    assert one["bottleneck"]["jain"] is None and one["bottleneck"]["why"] == "one flow"
    table = format_table(("alinea",), {"alinea": [run_metrics(one, {}, ["f1"])]}, {"alinea": [run_reasons(one)]})
    assert "Jain's index: one flow at the bottleneck" in table


# ---- reaction from the packets -------------------------------------------------------------------------
def test_the_sources_reaction_is_read_from_the_packets_not_a_bin() -> None:
    """Synthetic packets: 1000 packets/s until 2.3 s, 500 after; the event at 2.2 s. The reaction is
    the cut's 0.1 s, late by at most the window it is measured over (not a 0.5 s bin)."""
    topo = load_topology_text(DROP.replace("CONTROL", "fixed, rate: 2Mbps"), "user.yaml")
    rec = Recorder()
    times = [i * 1_000_000 for i in range(2300)] + [2_300_000_000 + i * 2_000_000 for i in range(500)]
    rec.packets["f1"] = [(seq, t, t + 5_000_000) for seq, t in enumerate(times) if seq % 50 != 7]  # some lost
    ev = topo.events[0].__class__(at_ns=2_200_000_000, kind="link_rate", link=("R1", "R2"), rate_bps=1e6)
    got = source_reaction(topo, rec, ev)
    assert 0.1 <= got["source_reaction_s"] <= 0.1 + got["source_reaction_window_s"]
    assert got["source_reaction_window_s"] < SERIES_BIN_NS / 1e9


def test_alinea_and_an_end_to_end_control_react_to_a_drop_measured_from_their_packets() -> None:
    """Packets sent late in the run are still queued at its end: CVIHIS, slower to cut here, gets 6 s."""
    for control in ("alinea", "cvihis-rtm"):
        s = run(DROP.replace("CONTROL", control), 6.0)
        (ev,) = s["events"]
        assert ev["source_reaction_s"] is not None and 0 < ev["source_reaction_s"] < 3.5
        assert round(ev["source_reaction_s"] * 1000) % 500 != 0  # not the series' bin
    fixed = run(DROP.replace("control: CONTROL", "control: fixed, rate: 2Mbps"), 3.0)
    assert fixed["events"][0]["source_reaction_s"] is None  # a fixed-rate source never cuts


# ---- the series the figures draw are the rows the summary reduces --------------------------------
PLAYOUT = """
name: playout
defaults: {link: {rate: 2Mbps, delay: 3ms, buffer: 200}}
nodes: {H1: {kind: host}, R1: {kind: switch}, R2: {kind: switch},
        H2: {kind: host, receive_buffer: 200, playout: 1.2Mbps}}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2], rate: 3Mbps}
  - {ends: [R2, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: CONTROL}
"""


def test_a_receive_buffer_and_its_links_fifo_are_two_buffers_and_the_series_is_the_summarys() -> None:
    """End to end, H2's playout buffer (its reports) and R2's FIFO toward H2 were one "H2<-R2": the
    summary's mean mixed them and the series took the FIFO's zero at every bin end."""
    s = run(PLAYOUT.replace("CONTROL", "cvihis-rtm"), 6.0)
    receive = s["buffers"]["H2<-R2"]
    assert receive["queue"] == "H2 receive buffer" and receive["kind"] == "measured"
    assert s["buffers"]["H2<-R2 (FIFO at R2)"]["queue"] == "R2->H2"
    series = s["series"]["buffers"]["H2<-R2"]
    lo, hi = s["windows"]["steady_s"]
    inside = [v for t, v in zip(s["series"]["t_s"], series) if lo < t <= hi and v is not None]
    assert receive["mean"] > 0.2 and min(inside) > 0  # a buffer the summary sees full is not 0 in the figure
    assert max(series) <= receive["max"]


def test_one_physical_queue_has_one_name_under_every_control() -> None:
    """Hop by hop, H1's packets wait at R1 for link R1->R2 in R1's buffer fed by H1 ("R1<-H1"); end
    to end in R1's FIFO of that link ("R2<-R1"): both are the queue "R1->R2"."""
    names, fullest = {}, {}
    for control in ("alinea", "cvihis-rtm"):
        topo = load_topology_text(DROP.replace("CONTROL", control).split("events:")[0], "user.yaml")
        r = run_experiment(topo, 3 * S, 1, None, plots=False)
        buffers = buffer_rows(topo, r.recorder).values()
        names[control] = {b.queue for b in buffers}
        fullest[control] = max(buffers, key=lambda b: sum(x.fraction for x in b.rows) / len(b.rows)).queue
    assert names["alinea"] <= names["cvihis-rtm"]
    assert fullest == {"alinea": "R1->R2", "cvihis-rtm": "R1->R2"}


# ---- a target changed during the run -------------------------------------------------------------
LINE = """
name: line
defaults: {link: {rate: 10Mbps, delay: 2ms, buffer: 100}}
nodes: {H1: {kind: host}, R1: {kind: switch}, R2: {kind: switch}, H2: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2]}
  - {ends: [R2, H2], rate: 3Mbps}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
"""


def _check_moved_target(s: dict) -> None:
    b = s["buffers"]["R2<-R1"]
    assert b["target"] == 0.5 and [t for _, t in b["targets"]] == [0.8, 0.5]
    assert 1.9 < b["targets"][1][0] < 2.2
    assert b["convergence_s"] is not None and b["convergence_s"] > 2.0 and b["within_band"]
    assert s["series"]["targets"]["R2<-R1"][-1] == 0.5 and s["series"]["targets"]["R2<-R1"][0] == 0.8


def test_a_live_parameter_change_moves_the_target_from_its_time_on() -> None:
    """What ``hbh params set --o-max 50%`` does on a running switch, at 2 s of a 5 s run."""
    from controlplane.params_io import apply_law_changes

    topo = load_topology_text(LINE, "user.yaml")
    net = SimNetwork(topo, seed=1).build()
    net.run_until(2 * S)
    apply_law_changes(net.switches["R1"].client, topo.port("R1", "R2"), {"o_max": 0.5})
    net.run_until(5 * S)
    net.finish()
    _check_moved_target(summarize(topo, net.recorder, 5 * S))


def test_a_timed_alinea_event_moves_the_target_from_its_time_on() -> None:
    s = run(LINE + "events:\n  - {at: 2s, alinea: {node: R1, toward: R2, o_max: 50%}}\n", 5.0)
    _check_moved_target(s)


# ---- loss at the receivers' playout buffers, apart -------------------------------------------------
def test_loss_at_a_receivers_playout_buffer_is_said_apart_from_the_networks() -> None:
    """End to end, CVIHIS does not see H2's playout buffer (1.2 Mb/s behind 2 Mb/s links) and
    overflows it; the summary, the printout and the comparison's table say where."""
    s = run(PLAYOUT.replace("CONTROL", "cvihis-rtm"), 8.0)
    loss = s["loss"]
    assert loss["receiver_buffer_overflow"] > 0
    assert loss["receiver_buffer_overflow_by_host"] == {"H2": loss["receiver_buffer_overflow"]}
    assert f"at receivers' playout buffers (the application's buffer, not the network): " \
           f"{loss['receiver_buffer_overflow']} (H2 {loss['receiver_buffer_overflow']})" in format_summary(s)
    m = run_metrics(s, {}, ["f1"])
    assert m["loss_receiver_packets"] == loss["receiver_buffer_overflow"]
    assert m["loss_network_packets"] + m["loss_receiver_packets"] == m["loss_packets"]
    assert "at the receivers' playout buffers" in format_table(("cvihis-rtm",), {"cvihis-rtm": [m]})


@pytest.mark.netns
@pytest.mark.slow
def test_netns_hosts_count_what_they_play_per_flow_too(tmp_path) -> None:
    """The netns backend runs the same host code: its per-flow played counts add up to the sink's own
    counter and the goodputs to it stay within its playout, whether or not the run kept real time,
    with no lateness allowance: a host reads its counters at its own sample's wake-up, which may be
    late (once 52 ms while the runner's were 1 ms), and the recorder says when, so the invariant and
    the goodputs take the counts at their read times (docs/reference/metrics.md, host_capacity);
    each flow's goodput is rounded to 1 b/s."""
    from tests.switch import netns as N

    N.require_netns()
    topo = load_topology_text(TREE, "user.yaml")
    r = run_experiment(topo, 3 * S, 1, tmp_path, plots=False, backend="netns")
    last = {f.name: [x for x in r.recorder.flows if x.flow == f.name][-1].played for f in topo.flows}
    host = [b for b in r.recorder.buffers if b.host == "S"][-1]
    assert None not in last.values() and sum(last.values()) == host.played
    flows = r.summary["flows"].values()
    assert all(f["goodput_of"] == "played" for f in flows)
    assert not [v for v in r.summary["invariants"]["violations"] if "host_capacity" in str(v)]
    assert len({tuple(f["window_s"]) for f in flows}) == 1  # one window: the goodputs add up as one count
    window_s = max(f["window_s"][1] - f["window_s"][0] for f in flows)
    slack_bits = 8 * max(f.packet_size for f in topo.flows)
    assert sum(f["goodput_bps"] for f in flows) <= 30e6 + slack_bits / window_s + len(flows)


def test_a_cell_averaged_over_only_some_seeds_says_over_how_many() -> None:
    """A metric with a value in one seed's run only (LEDBAT's reaction when one run's rate never
    fell) must not pass for the mean of every run."""
    from topo.experiments.compare_report import cell

    assert cell([0.5, 0.7], "{:.1f}") == "0.6 ± 1.3"
    assert cell([None, 0.079], "{:.3f}") == "0.079 (1 of 2 seeds)"
    assert cell([1.0, None, 3.0], "{:.1f}") == "2.0 ± 12.7 (2 of 3 seeds)"
    assert cell([None, None], "{:.1f}", "no drop") == "no drop"


def test_a_finished_run_leaves_nothing_frozen_for_the_collector() -> None:
    """A process that runs many experiments (make fuzz-topo, a sweep's worker) must get each
    finished run's cyclic garbage back: frozen objects are never collected (topo/runner._drive)."""
    import gc

    from topo.file.schema import load_topology
    from topo.run.runner import run_experiment

    gc.unfreeze()
    run_experiment(load_topology("topo/paper-1router.yaml"), S // 2, 1, plots=False)
    assert gc.get_freeze_count() == 0
