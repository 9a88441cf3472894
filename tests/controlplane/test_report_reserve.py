"""The reports' share of a port's queue rate (issue 46): BMv2 counts a queue's rate in packets of any size,
so a port's queue holds the reports this switch sends out of it beside the data its law allows. The share
is the reports the port will send: one per data arrival on it, at most one per report interval, plus the
polls' with ``report_polls`` (controlplane/agent.py, ReportRate), not the interval's rate whatever arrives:
on a port whose neighbour sends slowly the unused report slots went to the data, above the law's rate."""

from __future__ import annotations

import math

from controlplane.agent import (
    REPORT_WINDOW_NS,
    ModelledPort,
    RegulatedPort,
    SetQueueRate,
    SwitchAgentCore,
    SwitchPlan,
    rate_to_pps,
)
from controlplane.frame_size import READ_PERIOD_NS
from controlplane.params import LawParams, PortParams, law_to_action
from controlplane.report import Report

LAW = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=0.0)
INTERVAL_US = 10_000  # 100 reports/s at most
PORT = 2


def core(polls: bool = False) -> SwitchAgentCore:
    """BMv2's agent with port 2 regulated (its law at R_max from the start) and modelled: traffic enters by it."""
    plan = SwitchPlan(
        "R1",
        1,
        regulated=(RegulatedPort(PORT, LAW, 1000),),
        modelled=(ModelledPort(PORT, PortParams(37, INTERVAL_US), 1, 2, polled=True),),
        report_polls=polls,
    )
    c = SwitchAgentCore(plan)
    c.start()
    return c


def data_pps(c: SwitchAgentCore) -> int:
    return rate_to_pps(c.ports[(PORT, 0)].law.rate, 1000)


def arrive(c: SwitchAgentCore, per_s: float, seconds: float, reports_per_s: float = 0.0) -> list:
    """Reads of the port's counters every READ_PERIOD_NS (ticking the agent at its 10 ms between them):
    ``per_s`` data frames/s and ``reports_per_s`` of the neighbour's reports (packet-ins) arrive on it."""
    cmds: list = []
    reports = 0
    for i in range(round(seconds * 1e9 / READ_PERIOD_NS) + 1):
        t = i * READ_PERIOD_NS
        for k in range(5):
            c.on_tick(t + k * 10_000_000)
        while reports < reports_per_s * t / 1e9:
            meta = {"ingress_port": PORT, "_pad": 0, **law_to_action(LAW)}
            cmds += c.on_report(
                t,
                PORT,
                meta,
                Report(
                    node_id=2,
                    port=1,
                    occupancy=0,
                    capacity=37,
                    timestamp_us=0,
                    seq=reports + 1,
                    drops=0,
                    interval_us=INTERVAL_US,
                ),
            )
            reports += 1
        frames = math.floor(per_s * t / 1e9) + reports
        assert c.counters_due(t) == (PORT,) and c.arrival_ports() == (PORT,)
        cmds += c.on_arrival_counters(t, [(PORT, frames)])
    return cmds


def test_until_the_counters_span_a_window_the_port_holds_an_interval_of_reports() -> None:
    c = core()
    assert c.ports[(PORT, 0)].pps == data_pps(c) + 100
    assert arrive(c, 8, (REPORT_WINDOW_NS - READ_PERIOD_NS) / 1e9) == []


def test_a_neighbour_sending_slowly_leaves_the_data_no_more_than_its_law() -> None:
    """8 frames/s arrive: about 8 reports/s leave, and the queue holds them, not 100, beside the law's rate.
    Before: 92 slots a second above the law went to the data (S2 toward S4 in the issue's case)."""
    c = core()
    cmds = arrive(c, 8, 2)
    pps = c.ports[(PORT, 0)].pps
    assert cmds and cmds[-1] == SetQueueRate(PORT, pps)
    assert 8 <= pps - data_pps(c) < 100 / 4


def test_the_neighbours_reports_are_not_arrivals_that_report() -> None:
    """MyIngress.rx counts the neighbour's reports too; they make no report (a data arrival does)."""
    alone, with_reports = core(), core()
    arrive(alone, 8, 2)
    arrive(with_reports, 8, 2, reports_per_s=90)
    assert with_reports.report_pps[PORT] == alone.report_pps[PORT] < 100


def test_a_busy_port_keeps_the_interval_and_sets_no_rate() -> None:
    """Arrivals at or above one per interval: the data plane reports every interval, as the queue holds."""
    c = core()
    assert arrive(c, 150, 2) == []
    assert c.report_pps[PORT] == 100


def test_an_idle_port_keeps_a_slot() -> None:
    c = core()
    arrive(c, 0, 2)
    assert c.report_pps[PORT] == 1


def test_with_polls_the_queue_holds_the_polls_reports_while_data_arrives() -> None:
    """A poll reports a port once two intervals have passed (every 20 ms on a 10 ms tick): 50/s."""
    c = core(polls=True)
    arrive(c, 8, 2)
    assert 50 <= c.report_pps[PORT] < 100
