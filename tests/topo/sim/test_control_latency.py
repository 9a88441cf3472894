"""The simulator's control latency (options.control_latency): a report's packet-in reaches the
agent after half of it, the agent's queue call reaches the switch after the other half."""

from __future__ import annotations

import dataclasses
import random
import statistics
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from controlplane import native
from runtime.sched import VirtualScheduler
from tests.paths import ROOT
from tests.topo.helpers import BASE, expect_error
from topo.file.schema import load_topology, load_topology_text
from topo.net.model import DEFAULT_CONTROL_LATENCY_NS
from topo.run.runner import run_experiment
from topo.sim.control_latency import ControlLatency
from topo.sim.network import DelayedQueues, SimNetwork

MS = 1_000_000


def test_the_option_and_its_default() -> None:
    assert load_topology_text(BASE, "t.yaml").options.control_latency_ns == DEFAULT_CONTROL_LATENCY_NS
    t = load_topology_text(BASE + "options: {control_latency: 2.5ms}\n", "t.yaml")
    assert t.options.control_latency_ns == 2_500_000


def test_the_spread_option() -> None:
    t = load_topology_text(BASE + "options: {control_latency: 4ms, control_latency_p99: 60ms}\n", "t.yaml")
    assert (t.options.control_latency_ns, t.options.control_latency_p99_ns) == (4 * MS, 60 * MS)
    assert load_topology_text(BASE, "t.yaml").options.control_latency_p99_ns is None
    expect_error(BASE + "options: {control_latency: 4ms, control_latency_p99: 3ms}\n", "control_latency_p99",
                 "options.control_latency_p99", "must be in control_latency (4 ms)..1000 ms")


def test_drawn_latencies_have_the_median_and_p99_and_keep_their_order() -> None:
    free = ControlLatency(2 * MS, 30 * MS, random.Random(7))
    sample = sorted(ControlLatency(2 * MS, 30 * MS, random.Random(i)).delay(0) for i in range(4000))
    assert statistics.median(sample) == pytest.approx(2 * MS, rel=0.1)
    assert sample[int(0.99 * len(sample))] == pytest.approx(30 * MS, rel=0.25)
    arrivals = [t + free.delay(t) for t in range(0, 400 * MS, MS)]  # one call per ms, one connection
    assert arrivals == sorted(arrivals) and len(set(arrivals)) < len(arrivals)  # a late call holds others back


def test_the_engines_channel_keeps_the_connections_order_with_the_python_calls() -> None:
    """A fixed latency's calls run in the engine (``ControlLatency.calls``); the connection's
    order is one clock for them and for ``delay``: a call never overtakes an earlier one."""
    sched, seen = VirtualScheduler(), []
    latency = ControlLatency(2 * MS, None, random.Random(1))
    calls = latency.calls(sched)
    assert calls is not None and ControlLatency(2 * MS, 30 * MS, random.Random(1)).calls(sched) is None
    calls("before any target")  # dropped: nobody to take it yet (a packet-in before its agent)
    calls.connect(lambda what: seen.append((sched.now_ns(), what)))
    sched.call_at(1 * MS, calls, "first")
    latency._fifo.delay(0, 10 * MS)  # a slow call made meanwhile on the same connection (Python's draw)
    sched.call_at(2 * MS, calls, "second")
    sched.run()
    assert seen == [(10 * MS, "first"), (10 * MS, "second")]


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

    q = DelayedQueues(Queues(), sched, ControlLatency(3 * MS, None, random.Random(1)))
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


@pytest.mark.cpu_only
@pytest.mark.slow
def test_bmv2_queues_hold_with_a_jittery_control_plane() -> None:
    """paper-5router on BMv2's queues with the control latency's tail a loaded netns run measured
    (p99 60 ms around a 4 ms median): the agents bound their queues' schedule for the arrivals a
    late command lets through, and forecast on the reporter's clock; zero loss, on target."""
    t = load_topology(ROOT / "topo" / "paper-5router.yaml")
    t = dataclasses.replace(t, options=dataclasses.replace(t.options, queue_model="bmv2",
                                                           control_latency_p99_ns=60 * MS))
    s = run_experiment(t, 20_000 * MS, seed=1, plots=False).summary
    assert s["loss"]["total"] == 0, s["loss"]
    for name, b in s["buffers"].items():
        assert abs(b["mean"] - b["target"]) <= 0.03 and b["max"] < 1.0, (name, b)




# on_packet_in from its source: called here on a stand-in agent, which a compiled method refuses
SourceAgent = native.source_module("switch_agent").SwitchAgent


def test_the_agents_packet_in_event_is_its_on_packet_in() -> None:
    """After the latency the simulator's sink runs the scheduler's own ``call_later`` of the agent's
    ``handle_report`` at delay 0, which is what ``SwitchAgent.on_packet_in`` does: in both the report
    is handled behind what was scheduled for that instant in the meantime."""
    late = "due at the same instant, scheduled after the packet-in"

    def handled(make_sink: Callable[[VirtualScheduler, SimpleNamespace], Callable[[str, dict[str, int]], None]]) \
            -> list[str]:
        sched, seen = VirtualScheduler(), []
        agent = SimpleNamespace(sched=sched, handle_report=lambda payload, meta: seen.append(payload))
        make_sink(sched, agent)("report", {})
        sched.call_at(2 * MS, seen.append, late)
        sched.run_until(3 * MS)
        return seen

    def simulators(sched: VirtualScheduler, agent: SimpleNamespace) -> Callable[[str, dict[str, int]], None]:
        latency = ControlLatency(2 * MS, None, random.Random(1))
        return SimNetwork._packet_in_sink(SimpleNamespace(sched=sched), [agent], latency)  # type: ignore[arg-type]

    def calling_on_packet_in(sched: VirtualScheduler, agent: SimpleNamespace) -> Callable[[str, dict[str, int]], None]:
        return lambda payload, meta: sched.call_later(2 * MS, SourceAgent.on_packet_in, agent, payload, meta)

    assert handled(simulators) == handled(calling_on_packet_in) == [late, "report"]
