"""The switch agent's core: packet-in metadata carries the law parameters, commands come out."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import pytest

from controlplane.agent import (
    LawTrace,
    ModelledPort,
    PollReport,
    RegulatedPort,
    SetQueueDepth,
    SetQueueRate,
    SwitchAgentCore,
    SwitchPlan,
    rate_to_pps,
)
from controlplane.alinea import STALE_HOLD_INTERVALS
from controlplane.params import (
    LawParams,
    MetadataLaw,
    ParamError,
    PortParams,
    law_from_metadata,
    law_to_action,
)
from controlplane.report import Report

LAW = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=0.0)
MS = 1_000_000


def report(occ: int, drops: int = 0, cap: int = 200) -> Report:
    return Report(node_id=2, port=1, occupancy=occ, capacity=cap, timestamp_us=0, seq=1, drops=drops,
                  interval_us=10_000)


def meta(law: LawParams, port: int = 2) -> dict[str, int]:
    return {"ingress_port": port, "_pad": 0, **law_to_action(law)}


def core(limit: bool = True, fixed_departures: bool = False) -> SwitchAgentCore:
    """A shaper's agent by default (the law on the reported occupancy); ``fixed_departures``: BMv2's."""
    plan = SwitchPlan("R1", 1, regulated=(RegulatedPort(2, LAW, 1000, limit_at_start=limit),),
                      queue_depths=((1, 264), (2, 264)), fixed_departures=fixed_departures)
    return SwitchAgentCore(plan)


def test_start_sets_depths_and_the_floor_rate_of_regulated_ports() -> None:
    assert core().start() == [SetQueueDepth(1, 264), SetQueueDepth(2, 264), SetQueueRate(2, 5)]
    assert core(limit=False).start() == [SetQueueDepth(1, 264), SetQueueDepth(2, 264)]


def test_a_report_moves_the_queue_rate_in_packets_per_second() -> None:
    c = core()
    c.start()
    cmds = c.on_report(0, 2, meta(LAW), report(0))
    rate = 4e4 + 8e6 * 0.15
    assert cmds == [SetQueueRate(2, rate_to_pps(rate, 1000))]
    assert c.on_report(MS, 2, meta(LAW), report(30)) == []  # on O_min: the rate does not move


def test_parameters_written_on_the_switch_take_effect_at_the_next_report() -> None:
    c = core()
    c.start()
    c.on_report(0, 2, meta(LAW.with_changes(r_max=5e5)), report(0))
    assert c.ports[(2, 0)].law.params.r_max == 5e5 and c.ports[(2, 0)].law.rate == 5e5


def test_invalid_parameters_on_the_switch_keep_the_last_good_ones() -> None:
    c = core()
    c.start()
    bad = meta(LAW) | {"o_min_ppm": 900_000, "o_max_ppm": 100_000}
    c.on_report(0, 2, bad, report(0))
    assert c.ports[(2, 0)].law.params == LAW and c.ports[(2, 0)].rejected_params == 1


def test_a_report_on_an_unplanned_port_starts_a_law_from_what_the_switch_holds() -> None:
    c = core()
    c.start()
    cmds = c.on_report(0, 7, meta(LAW, 7), report(0))
    assert (7, 0) in c.ports and cmds and cmds[0].port == 7


def test_silent_port_decays_to_the_floor() -> None:
    c = core()
    c.start()
    c.on_report(0, 2, meta(LAW), report(0))
    high = c.ports[(2, 0)].pps
    assert c.on_tick(STALE_HOLD_INTERVALS * 10 * MS) == []
    out = c.on_tick((STALE_HOLD_INTERVALS + 30) * 10 * MS)
    assert out and out[-1].pps < high and out[-1].pps == rate_to_pps(LAW.r_floor, 1000)


def test_pps_never_zero_because_zero_means_unlimited_on_bmv2() -> None:
    assert rate_to_pps(1.0, 1500) == 1


def test_end_to_end_mode_traces_reports_but_never_sets_a_rate() -> None:
    plan = SwitchPlan("R1", 1, regulated=(RegulatedPort(2, LAW, 1000),), queue_depths=((2, 264),), actuate=False,
                      fixed_departures=False)
    traces = []
    c = SwitchAgentCore(plan, traces.append)
    assert c.start() == [SetQueueDepth(2, 264)]
    assert c.on_report(0, 2, meta(LAW), report(0)) == []
    assert len(traces) == 1 and traces[0].occupancy == 0 and traces[0].rate_bps == 0


def test_a_trace_names_its_switch_and_the_neighbour_on_the_report_s_port() -> None:
    """The trace is the recorder's row as it comes (on_trace=recorder.laws.append): the plan's
    neighbours name the buffer's link; a port the plan does not name is named by its number."""
    plan = SwitchPlan("R1", 1, regulated=(RegulatedPort(2, LAW, 1000),), neighbours=((1, "H1"), (2, "R2")),
                      fixed_departures=False)
    traces: list[LawTrace] = []
    c = SwitchAgentCore(plan, traces.append)
    c.start()
    c.on_report(5, 2, meta(LAW), report(40))
    c.on_report(6, 3, meta(LAW, port=3), report(10))
    assert [(t.t_ns, t.node, t.toward, t.port, t.occupancy) for t in traces] == [
        (5, "R1", "R2", 2, 40), (6, "R1", "3", 3, 10)]
    assert traces[0].rate_bps == c.ports[(2, 0)].law.rate and traces[0].pps == c.ports[(2, 0)].pps > 0
    assert traces[0].fraction == 40 / 200


def test_a_trace_survives_pickling_compiled_or_not() -> None:
    """A host's rows cross from its process to the runner's pickled (netns)."""
    t = LawTrace(1, "R1", "R2", 5, 100, 0, 1e6, 0.1, 0.5, 0.2, 2e6, None, 1, 2, 83)
    assert pickle.loads(pickle.dumps(t)) == t and copy.deepcopy(t) == t


def test_law_parameters_copy_pickle_hash_and_stay_frozen_compiled_or_not() -> None:
    """They travel in every topology (``scaled`` copies it, Ray's sweeps pickle it), key dicts
    and are never changed in place."""
    p = LAW.with_changes(k_p=1e5)
    assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p and hash(copy.copy(p)) == hash(p)
    assert replace(p, o_max=0.6) == LawParams(0.15, 0.6, 8e6, 5e5, 2e6, 4e4, 1e5)
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        p.o_max = 0.5  # type: ignore[misc]


# ---- BMv2's queues: departures fixed at enqueue ----------------------------------------------------

def counters(fwd: int, deq: int) -> dict[str, int]:
    return {"fwd_pkts": fwd & 0xFFFFFFFF, "deq_pkts": deq & 0xFFFFFFFF}


def test_on_bmv2_queues_regulated_ports_start_at_r_max_not_the_floor() -> None:
    c = core(fixed_departures=True)
    assert c.start() == [SetQueueDepth(1, 264), SetQueueDepth(2, 264), SetQueueRate(2, 250)]
    assert c.ports[(2, 0)].law.rate == LAW.r_max


def test_with_report_polls_on_bmv2_queues_every_tick_polls_the_modelled_ports_traffic_enters_by() -> None:
    modelled = tuple(ModelledPort(p, PortParams(), 0, 0, polled=p != 4) for p in (1, 3, 4))
    for fixed, on, polls in ((True, True, [PollReport(1), PollReport(3)]), (False, True, []), (True, False, [])):
        plan = SwitchPlan("R1", 1, modelled=modelled, regulated=(RegulatedPort(2, LAW, 1000),),
                          fixed_departures=fixed, report_polls=on)
        c = SwitchAgentCore(plan)
        c.start()
        assert c.on_tick(10 * MS) == polls


def test_a_port_that_also_carries_this_switchs_reports_gets_their_packets_per_second_on_top() -> None:
    """BMv2 counts a queue's rate in packets of any size: the reports about the buffer behind a
    port leave through that port's queue, and would otherwise take the data's slots."""
    law = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=0.0)
    modelled = (ModelledPort(2, PortParams(interval_us=10_000), 0, 0, polled=True),
                ModelledPort(3, PortParams(interval_us=10_000), 0, 0, polled=False))
    regulated = (RegulatedPort(2, law, 1000), RegulatedPort(3, law, 1000))
    c = SwitchAgentCore(SwitchPlan("R1", 1, modelled=modelled, regulated=regulated, fixed_departures=False))
    assert c.start() == [SetQueueRate(2, rate_to_pps(law.r_floor, 1000) + 100),
                         SetQueueRate(3, rate_to_pps(law.r_floor, 1000))]


def test_without_the_counters_the_law_runs_on_the_reported_occupancy() -> None:
    c = core(fixed_departures=True)
    c.start()
    c.on_report(0, 2, meta(LAW), report(0))
    assert c.ports[(2, 0)].forecast is None


def test_the_forecast_reaches_the_law_and_a_cut_keeps_within_the_schedule_bound() -> None:
    from controlplane.forecast import schedule_floor_pps

    c = core(fixed_departures=True)
    c.start()
    base = (1 << 32) - 50  # the counters wrap
    c.on_report(0, 2, meta(LAW) | counters(base + 150, base), report(10))
    pl = c.ports[(2, 0)]
    assert pl.forecast is not None and pl.forecast.queued == 150
    # an overflow: the law halves the rate (and more), but not below what keeps the schedule bounded
    c.on_report(10 * MS, 2, meta(LAW) | counters(base + 151, base + 1), report(200, drops=3))
    f = pl.forecast
    assert pl.pps >= int(schedule_floor_pps(f.queued, 250, f.horizon_s, f.arrivals_before_next_command()))
    assert pl.pps * 8 * 1000 < LAW.r_max  # the cut itself happened


def test_a_horizon_already_beyond_the_bound_spaces_no_slower_than_the_drain() -> None:
    """Not at the link's rate either: that would flood the buffer downstream once the old stamps
    have gone."""
    c = core(fixed_departures=True)
    c.start()
    c.on_report(0, 2, meta(LAW) | counters(20, 0), report(10))
    pl = c.ports[(2, 0)]
    assert pl.forecast is not None
    pl.forecast.horizon_s = 30.0  # e.g. stamps from before the agent knew better
    pl.forecast.expected_pps = 120.0  # the drain expected over the horizon
    pl.law.rate, pl.pps = LAW.r_floor, 5  # the law cut to the floor
    assert c._actuate((2, 0), pl) == [SetQueueRate(2, 120)]


def test_on_bmv2_queues_a_silent_law_holds_its_rate_instead_of_stamping_a_decay() -> None:
    """On BMv2's queues a decay would space every packet queued during the silence (a port idle
    until traffic comes back, or a report held behind the neighbour's stamped schedule) at the
    decayed rate, and the schedule bound cannot hold it without the counters of a report."""
    c = core(fixed_departures=True)
    c.start()
    c.on_report(0, 2, meta(LAW) | counters(10, 10), report(0))
    held = c.ports[(2, 0)].pps
    for k in range(1, STALE_HOLD_INTERVALS + 60):
        assert c.on_tick(k * 10 * MS) == []
    assert c.ports[(2, 0)].pps == held and c.ports[(2, 0)].law.rate > LAW.r_floor
    # the next report is applied by the law as it stood (no restart from O_min)
    o = c.ports[(2, 0)].law.o
    c.on_report((STALE_HOLD_INTERVALS + 60) * 10 * MS, 2, meta(LAW) | counters(40, 40), report(0))
    assert c.ports[(2, 0)].law.o >= o


def classed(classes: int = 3, fixed_departures: bool = False) -> SwitchAgentCore:
    plan = SwitchPlan("R1", 1, regulated=(RegulatedPort(2, LAW, 1000),), queue_depths=((2, 264),),
                      fixed_departures=fixed_departures, classes=classes)
    return SwitchAgentCore(plan)


def test_with_classes_each_class_has_a_law_on_its_own_priority_queue() -> None:
    c = classed()
    assert c.start() == [SetQueueDepth(2, 264)] + [SetQueueRate(2, 5, p) for p in (0, 1, 2)]
    up = c.on_report(0, 2, meta(LAW), replace(report(0), flags=2 << 5))
    assert [cmd.priority for cmd in up] == [2]  # class 2 only: the other classes' queues keep their rates
    assert c.ports[(2, 2)].law.rate > c.ports[(2, 0)].law.rate == c.ports[(2, 1)].law.rate == LAW.r_floor


def test_with_classes_polls_ask_for_every_class() -> None:
    plan = SwitchPlan("R1", 1, modelled=(ModelledPort(1, PortParams(), 0, 0, polled=True),), report_polls=True,
                      classes=2)
    assert SwitchAgentCore(plan).on_tick(0) == [PollReport(1, 0), PollReport(1, 1)]


def test_with_classes_another_class_s_drain_does_not_cut_a_class_s_r_max_below_its_share() -> None:
    """A class's R_max cut by the other classes' drains could reach the floor and, on BMv2's queues,
    stamp its queued packets seconds ahead (docs/howto/fabric.md): a busy class draining more than the link
    still leaves the other its equal share."""
    c = classed(classes=2, fixed_departures=True)
    c.start()
    c.on_report(0, 2, meta(LAW) | counters(0, 0), report(0))
    c.on_report(0, 2, meta(LAW) | counters(0, 0), replace(report(0), flags=1 << 5))
    c.ports[(2, 1)].forecast.drain_pps = 10_000.0  # class 1 drains more than the link's rate
    c.ports[(2, 1)].forecast.arrival_pps = 10_000.0
    c.on_report(MS, 2, meta(LAW) | counters(0, 0), report(0))
    assert c.ports[(2, 0)].law.params.r_max >= LAW.r_max / 2
    assert c.ports[(2, 0)].law.rate > LAW.r_floor


def test_with_classes_a_port_toward_a_host_runs_the_hosts_class_on_its_reports() -> None:
    """A host reports its receive buffer as class 0; the port toward it carries only its class."""
    plan = SwitchPlan("R1", 1, regulated=(RegulatedPort(2, LAW, 1000, only_class=2),), classes=3,
                      fixed_departures=False)
    c = SwitchAgentCore(plan)
    assert c.start() == [SetQueueRate(2, 5, 2)]
    assert [cmd.priority for cmd in c.on_report(0, 2, meta(LAW), report(0))] == [2]
    assert set(c.ports) == {(2, 2)}


def class_report(c: int, ts_us: int = 0) -> Report:
    return replace(report(0), flags=c << 5, timestamp_us=ts_us)


def test_with_classes_a_class_s_r_max_leaves_the_other_busy_classes_their_share_of_the_port() -> None:
    """Strict priority serves a class at R_max before every class below it: each class's R_max is the
    link less what the port's other busy classes are set to take, each counted at most at an equal
    share (their set rates, not their drains), so it never falls below that share; an idle class
    takes nothing from the others."""
    c = classed(classes=3, fixed_departures=True)
    c.start()
    for cls in (0, 1):
        c.on_report(0, 2, meta(LAW) | counters(0, 0), class_report(cls))
    c.on_report(10 * MS, 2, meta(LAW) | counters(50, 40), class_report(1, 10_000))  # class 1: packets arriving
    c.on_report(10 * MS, 2, meta(LAW) | counters(0, 0), class_report(0, 10_000))
    law0 = c.ports[(2, 0)].law
    assert law0.params.r_max == pytest.approx(LAW.r_max / 2)  # class 1 at R_max counts for its equal share
    assert law0.rate <= law0.params.r_max
    c.ports[(2, 1)].law.rate = LAW.r_max / 4  # class 1 cut by its own law: class 0 may take the rest
    c.on_report(20 * MS, 2, meta(LAW) | counters(0, 0), class_report(0, 20_000))
    assert law0.params.r_max == pytest.approx(LAW.r_max * 3 / 4)
    assert (2, 2) not in c.ports or c.ports[(2, 2)].law.params.r_max == LAW.r_max  # class 2: no report, no cut
    c.ports[(2, 1)].forecast.arrival_pps = 0.0
    c.ports[(2, 1)].forecast.queued = 0  # class 1 idle: class 0 has the whole link again
    c.on_report(30 * MS, 2, meta(LAW) | counters(0, 0), class_report(0, 30_000))
    assert law0.params.r_max == LAW.r_max


def test_parameters_held_on_the_switch_are_read_anew_only_when_they_change() -> None:
    held = MetadataLaw()
    first = held(meta(LAW))
    assert first == law_from_metadata(meta(LAW)) and held(meta(LAW, port=3)) is first  # the port is no parameter
    changed = held(meta(LAW.with_changes(r_max=5e5)))
    assert changed.r_max == 5e5 and held(meta(LAW)) == LAW
    bad = meta(LAW) | {"o_min_ppm": 900_000, "o_max_ppm": 100_000}
    for _ in range(2):  # refused every time it comes, not only the first
        with pytest.raises(ParamError, match="o_min"):
            held(bad)
    with pytest.raises(ParamError, match="r_max_bps"):
        held({k: v for k, v in meta(LAW).items() if k != "r_max_bps"})
    assert held(meta(LAW)) == LAW


def test_invalid_parameters_are_counted_at_every_report_that_carries_them() -> None:
    c = core()
    c.start()
    bad = meta(LAW) | {"o_min_ppm": 900_000, "o_max_ppm": 100_000}
    for k in range(3):
        c.on_report(k * 10_000_000, 2, bad, report(0))
    assert c.ports[(2, 0)].rejected_params == 3 and c.ports[(2, 0)].law.params == LAW
