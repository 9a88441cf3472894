"""The simulator's control latency (options.control_latency): a report's packet-in reaches the
agent after half of it, the agent's queue call reaches the switch after the other half."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runtime.sched import VirtualScheduler
from tests.topo.helpers import BASE, expect_error
from topo.model import DEFAULT_CONTROL_LATENCY_NS
from topo.runner import run_experiment
from topo.schema import load_topology, load_topology_text
from topo.simnet import DelayedQueues

ROOT = Path(__file__).resolve().parents[2]
MS = 1_000_000


def test_the_option_and_its_default() -> None:
    assert load_topology_text(BASE, "t.yaml").options.control_latency_ns == DEFAULT_CONTROL_LATENCY_NS
    t = load_topology_text(BASE + "options: {control_latency: 2.5ms}\n", "t.yaml")
    assert t.options.control_latency_ns == 2_500_000


def test_bad_latencies_are_located_errors() -> None:
    expect_error(BASE + "options: {control_latency: -1ms}\n", "control_latency", "options.control_latency", "")
    expect_error(BASE + "options: {control_latency: 2s}\n", "control_latency", "options.control_latency",
                 "0..1000 ms")


def test_delayed_queue_calls_reach_the_switch_late() -> None:
    sched = VirtualScheduler()
    seen: list[tuple[int, str, int, int]] = []

    class Queues:
        def set_queue_rate(self, port: int, pps: int) -> None:
            seen.append((sched.now_ns(), "rate", port, pps))

        def set_queue_depth(self, port: int, depth: int) -> None:
            seen.append((sched.now_ns(), "depth", port, depth))

    q = DelayedQueues(Queues(), sched, 3 * MS)
    sched.call_at(10 * MS, q.set_queue_rate, 2, 250)
    sched.call_at(11 * MS, q.set_queue_depth, 2, 64)
    sched.run()
    assert seen == [(13 * MS, "rate", 2, 250), (14 * MS, "depth", 2, 64)]


def test_reports_reach_the_agents_half_the_latency_later() -> None:
    def first_law_rows(latency_ns: int) -> dict[tuple[str, str], int]:
        t = load_topology(ROOT / "topo" / "paper-1router.yaml")
        t = dataclasses.replace(t, options=dataclasses.replace(t.options, control_latency_ns=latency_ns))
        net_rows = run_experiment(t, 300 * MS, seed=1, plots=False).recorder.laws
        out: dict[tuple[str, str], int] = {}
        for row in net_rows:
            out.setdefault((row.node, row.toward), row.t_ns)
        return out

    instant, late = first_law_rows(0), first_law_rows(40 * MS)
    assert late[("R1", "H2")] - instant[("R1", "H2")] == 20 * MS  # a switch agent: half of 40 ms
    assert late[("H1", "R1")] == instant[("H1", "R1")]  # a host's law has no control plane in between
