"""The real-time agent's packet-ins in batches (controlplane/switch_agent.py).

Why: at 32 times the paper's rates a report reaches the agent every 0.3 ms and a set_queue_rate is a
Thrift round trip of 0.3-0.7 ms; one call per report fell behind without end (docs/howto/netns.md, "At
higher link rates"). These pin the batch: every report goes through the law, in order; each queue
gets one call with the batch's last rate; every report that changed a rate has a latency sample.
"""

from __future__ import annotations

from typing import Any

from controlplane import native
from controlplane.agent import PollReport, SetQueueDepth, SetQueueRate, SwitchPlan
from controlplane.report import Report, encode
from controlplane.switch_agent import coalesce

# From its source: these put a counting stand-in for the agent's core (a compiled SwitchAgent
# accepts a SwitchAgentCore only; tests/controlplane/test_native.py compares the two builds).
SwitchAgent = native.source_module("switch_agent").SwitchAgent


def test_coalesce_keeps_each_queues_last_rate_where_its_first_was() -> None:
    cmds = [SetQueueRate(2, 10), SetQueueDepth(2, 50), SetQueueRate(3, 7), SetQueueRate(2, 11),
            PollReport(1), SetQueueRate(2, 12, 1), SetQueueRate(2, 13)]
    assert coalesce(cmds) == [SetQueueRate(2, 13), SetQueueDepth(2, 50), SetQueueRate(3, 7), PollReport(1),
                              SetQueueRate(2, 12, 1)]
    assert coalesce([]) == []


class _Loop:
    """A real-time loop's entry point: calls handed in from the reader thread wait for run()."""

    def __init__(self) -> None:
        self.soon: list[Any] = []

    def call_soon_threadsafe(self, fn: Any, *args: Any) -> None:
        self.soon.append((fn, args))

    def now_ns(self) -> int:
        return 0

    def run(self) -> None:
        while self.soon:
            fn, args = self.soon.pop(0)
            fn(*args)


class _Core:
    """The law, as a list: each report's occupancy becomes port 2's rate (none when it is 0)."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_report(self, now_ns: int, port: int, meta: dict[str, int], report: Report) -> list[Any]:
        self.seen.append(report.occupancy)
        return [SetQueueRate(port, report.occupancy)] if report.occupancy else []


class _Queues:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int | None]] = []

    def set_queue_rate(self, port: int, pps: int, priority: int | None = None) -> None:
        self.calls.append((port, pps, priority))


class _Names:
    def packet_in_metadata(self, pin: Any) -> dict[str, int]:
        return {"ingress_port": 2}


class _Client:
    names = _Names()


class _Msg:
    """A stream message holding a packet-in (only what the agent reads)."""

    def __init__(self, occupancy: int) -> None:
        self.packet = type("PacketIn", (), {"payload": encode(Report(1, 1, occupancy, 200, 0, occupancy,
                                                                           interval_us=100))})()

    def WhichOneof(self, _name: str) -> str:  # noqa: N802 - protobuf's name
        return "packet"


def _agent() -> tuple[SwitchAgent, _Loop, _Core, _Queues]:
    loop, core, queues = _Loop(), _Core(), _Queues()
    agent = SwitchAgent(SwitchPlan("R1", 2), _Client(), queues, loop)  # type: ignore[arg-type]
    agent.core = core  # type: ignore[assignment]
    return agent, loop, core, queues


def test_reports_waiting_together_move_the_law_each_and_the_queue_once() -> None:
    agent, loop, core, queues = _agent()
    for occ in (5, 0, 7, 9):
        agent.on_stream_message(_Msg(occ))  # type: ignore[arg-type]
    assert len(loop.soon) == 1  # one turn of the loop for the batch
    loop.run()
    assert core.seen == [5, 0, 7, 9]
    assert queues.calls == [(2, 9, None)]
    assert len(agent.control_latencies_ns) == 3  # the reports that changed a rate


def test_a_report_after_the_batch_is_a_batch_of_its_own() -> None:
    agent, loop, core, queues = _agent()
    agent.on_stream_message(_Msg(5))  # type: ignore[arg-type]
    loop.run()
    agent.on_stream_message(_Msg(6))  # type: ignore[arg-type]
    loop.run()
    assert queues.calls == [(2, 5, None), (2, 6, None)]
    assert core.seen == [5, 6]
