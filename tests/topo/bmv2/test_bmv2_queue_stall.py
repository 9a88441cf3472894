"""Issue 20's stall and its fix: the ALINEA loop on BMv2's egress queues (p4switch's default).

BMv2 fixes a packet's departure when it is queued, so a rate command reaches the wire only after
the hop's own queue has drained (docs/howto/bmv2.md). The agents before issue 20's fix started at the
floor and ran the law on the reported occupancy alone: on real simple_switch the paper's
five-router line froze (goodput at the floor, R1-R4 stuck at 77-85 %), and so it does here. The
agents now start at R_max, forecast the downstream buffer over their queue's horizon from the
packet-in's counters and bound the schedule a cut may stamp (controlplane/forecast.py).
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

import topo.sim.network
from tests.paths import ROOT
from topo.file.schema import load_topology, load_topology_text
from topo.net.plan import switch_plan
from topo.run.runner import run_experiment

S = 1_000_000_000


def on_queue_model(name: str, model: str):
    t = load_topology(ROOT / "topo" / f"{name}.yaml")
    return dataclasses.replace(t, options=dataclasses.replace(t.options, queue_model=model))


@pytest.mark.slow
def test_paper_5router_regulates_on_bmv2_queues() -> None:
    """What the agents before the fix failed: every buffer regulated, full goodput."""
    t = on_queue_model("paper-5router", "bmv2")
    s = run_experiment(t, 30 * S, seed=1, plots=False).summary
    assert s["loss"]["total"] == 0
    assert s["flows"]["f1"]["goodput_bps"] >= 0.95 * 1.2e6
    for name, b in s["buffers"].items():
        assert abs(b["mean"] - b["target"]) <= 0.03 and b["std"] <= 0.03, (name, b)


@pytest.mark.slow
def test_paper_5router_freezes_on_bmv2_queues_without_the_forecast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agents as they were (floor start, no forecast, no schedule bound) on the same queues."""
    monkeypatch.setattr(topo.sim.network, "switch_plan", lambda t, name: switch_plan(t, name, fixed_departures=False))
    t = on_queue_model("paper-5router", "bmv2")
    s = run_experiment(t, 30 * S, seed=1, plots=False).summary
    goodput = s["flows"]["f1"]["goodput_bps"]
    assert goodput < 0.25 * 1.2e6, goodput  # the forecast (and the shaper) give 1.2 Mb/s on the same line
    frozen = [name for name, b in s["buffers"].items() if b["std"] < 0.01 and b["mean"] > 0.5]
    assert len(frozen) >= 2, s["buffers"]  # routers stuck well above empty, not moving


def capacity_drop_at(phase_ms: int, control_latency_ns: int | None = None):
    """capacity-drop on BMv2's queues with its drop at 16 s + ``phase_ms``: the topology, the drop
    and R2's reaction, checked for zero loss and a reaction within 3 report intervals."""
    t = on_queue_model("capacity-drop", "bmv2")
    if control_latency_ns is not None:
        t = dataclasses.replace(t, options=dataclasses.replace(t.options, control_latency_ns=control_latency_ns))
    (ev,) = t.events
    t.events = [dataclasses.replace(ev, at_ns=16 * S + phase_ms * 1_000_000)]
    result = run_experiment(t, 21 * S, seed=1, plots=False)
    s = result.summary
    assert s["loss"]["total"] == 0
    (reaction,) = s["events"]
    assert reaction["regulator"] == "R2" and reaction["buffer"] == "R3<-R2"
    assert reaction["reaction_intervals"] is not None and reaction["reaction_intervals"] <= 3, reaction
    rows = [r for r in result.recorder.laws if r.node == "R2" and r.toward == "R3"]
    rate0 = [r for r in rows if r.t_ns <= t.events[0].at_ns][-1].rate_bps
    cut = next(r for r in rows if r.t_ns > t.events[0].at_ns and r.rate_bps <= 0.95 * rate0)
    assert cut.newest_bps is not None and cut.drain_bps is not None
    # the cut follows a fall of R3's drain: the newest drain's (NEWEST_FALL below the window's) or, since
    # 31baa79, the trend of the window's exact drain (controlplane/forecast.py, _follow_trend), which can
    # see the fall a report before the newest drain is NEWEST_FALL below: either way the newest is lower
    assert cut.newest_bps < cut.drain_bps, cut
    return t, ev, reaction


@pytest.mark.slow
@pytest.mark.parametrize("phase_ms", [10, 35])
def test_capacity_drop_on_bmv2_queues_reacts_within_three_intervals_at_any_phase(phase_ms: int) -> None:
    """Zero loss and R2's reaction within 3 report intervals at the drop's phases that were
    slowest before the reports carried their drain (4.05 and 4.24 intervals: R3's sampled
    occupancy rose by its first packet only 4 intervals after the drop, docs/howto/bmv2.md); R3's
    buffer back within 3 points of its target within the settled law's time constant (its
    buffer in bits over W_min) plus the horizon of R2's own queue at the new rate."""
    t, ev, reaction = capacity_drop_at(phase_ms)
    law, capacity = t.law[("R2", "R3")], t.ports[("R3", "R2")].capacity
    bits = 8 * t.flows[0].packet_size
    settle_s = capacity * bits / law.w_min + law.o_max * capacity * bits / ev.rate_bps
    assert reaction["recovery_s"] is not None and reaction["recovery_s"] <= settle_s


@pytest.mark.cpu_only
@pytest.mark.slow
@pytest.mark.parametrize("phase_ms", [0, 20])
def test_capacity_drop_reacts_within_three_intervals_at_the_control_latency_of_netns(phase_ms: int) -> None:
    """At netns's control latency (a median of 0.5-0.6 ms, docs/howto/netns.md) the settled loop puts R3's
    departures where its buffer gains its first packet 4-6 intervals after the drop, at every phase
    (the reaction was 4.4-5.6 intervals over one 40 ms cycle, and 3.9-4.1 in netns). The drop shows
    earlier in R3's two newest departures, which the settled law follows (docs/background/alinea.md, "The
    newest drain")."""
    capacity_drop_at(phase_ms, control_latency_ns=500_000)


def test_with_report_polls_a_slow_hop_hears_of_its_neighbours_buffer_every_two_intervals(tmp_path: Path) -> None:
    """Reports are built when packets arrive: a hop held at 5 packets/s (R2's R_max set to 40 kb/s
    at 3 s) hears of R3's buffer every 200 ms, and on BMv2's queues each late command leaves more
    packets stamped at a slow spacing. With ``report_polls`` R3's agent polls the report of the
    port R2 feeds every tick, which the data plane answers once two report intervals have passed
    (docs/howto/bmv2.md)."""
    src = (ROOT / "topo" / "paper-5router.yaml").read_text() + "options:\n  queue_model: bmv2\n"
    src += "events:\n  - {at: 3s, alinea: {node: R2, toward: R3, r_max: 40kbps}}\n"
    late = {}
    for polls in (False, True):
        t = load_topology_text(src.replace("queue_model: bmv2", f"queue_model: bmv2\n  report_polls: {polls}"),
                               "slow-hop.yaml")
        run_experiment(t, 5 * S, seed=1, out=tmp_path / str(polls), plots=False)
        with open(tmp_path / str(polls) / "laws.csv") as f:
            stamps = [float(r["t_s"]) for r in csv.DictReader(f) if (r["node"], r["toward"]) == ("R2", "R3")]
        late[polls] = [x for x in stamps if x > 3.5]
    interval_s = t.ports[("R3", "R2")].interval_us / 1e6
    assert len(late[False]) <= 10  # 1.5 s at one report per 200 ms
    assert len(late[True]) >= 40
    assert max(b - a for a, b in zip(late[True], late[True][1:])) <= 2 * interval_s + 0.005  # + a tick's phase


@pytest.mark.slow
def test_flows_against_an_incast_tree_complete_on_bmv2_queues() -> None:
    """The fabric's stall at 70 % load (docs/howto/bmv2.md, "Silence on BMv2's queues"): an incast from
    twelve hosts into one cuts the hops toward it deep, their queues' schedules run seconds ahead,
    and the reports the opposite direction's laws need wait behind them. Those laws used to read the
    silence as lost feedback and decay, stamping their own queues, whose reverse reports then waited
    in turn: the reverse flows and the incast froze (6 of 22 flows done after 8 s). Either the
    hold of a silent law or the report budget on the queue rate keeps it moving."""
    from topo.experiments.fabric import FabricSpec, fabric_topology, run_fabric
    from topo.file.workload import FlowSpec, incast

    spec = FabricSpec()
    flows = incast([h for h in spec.hosts() if not h.startswith("h4")], "h4_1", 300_000, 0)
    flows += [FlowSpec(f"r{i}", "h4_2", f"h{1 + i % 3}_4", 50_000, i * S // 5) for i in range(10)]
    run = run_fabric(fabric_topology(spec, flows, "alinea"), seed=1, cap_ns=10 * S)
    assert run.completed == len(flows), [r.flow for r in run.rows if r.end_ns is None]
