"""The fluid model's buffers report as the data plane's do (engine/src/analysis/fluid_loop.rs, ``report_due``):
a buffer that has seen no arrival says nothing, a switch's buffer is polled for a while after its last
arrival, and then it falls silent.

Why it matters (issue 46): the model's buffers reported at every interval, so a host's law climbed on empty
reports before its flow started (to 235 Mb/s on a 20 Mb/s path) and the model started up from a state the
run never has; fuzz seed 3's merge lost 48 packets with the model 2 packets short of full
(tests/topo/random/cases/test_start_order_cases.py keeps that file)."""

from __future__ import annotations

import pytest

import topo.analysis.fluid_network as fluid_network
from controlplane.fluid_laws import CALL_INTS, LawBatch
from runtime.fluid import FluidPlant
from topo.analysis.fluid_network import network_peaks
from topo.file.schema import load_topology_text

LINE = """
name: reports-line
defaults:
  link: {rate: 20Mbps, delay: 1ms, buffer: 100}
nodes:
  S1: {kind: switch}
  S2: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, S2]}
  - {ends: [S2, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea, start: 0.3s, stop: 0.6s}
"""


class _Recording:
    """LawBatch with every report's (law, time) kept."""

    asked: list[tuple[int, int]] = []

    def __init__(self, controls: list) -> None:  # type: ignore[type-arg]
        self.inner = LawBatch(controls)

    def answer(self, calls: list[int]) -> list[float]:
        for j in range(0, len(calls), CALL_INTS):
            _Recording.asked.append((calls[j], calls[j + 1]))
        return self.inner.answer(calls)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    _Recording.asked = []
    monkeypatch.setattr(fluid_network, "LawBatch", _Recording)
    return _Recording.asked


def test_no_law_hears_a_report_before_its_flows_packets_reach_the_buffer(asked: list[tuple[int, int]]) -> None:
    network_peaks(load_topology_text(LINE, "<line>"), 1.0)
    assert asked, "the model asked no law anything: the test tests nothing"
    assert min(t for _, t in asked) >= 0.3e9


def _last_and_polls(asked: list[tuple[int, int]], stop_ns: float) -> tuple[int, dict[int, list[int]]]:
    return max(t for _, t in asked), {law: [t for i, t in asked if i == law and t > stop_ns] for law, _ in asked}


def test_without_polls_the_reports_stop_with_the_last_arrival(asked: list[tuple[int, int]]) -> None:
    """The simulator's default (``options.report_polls`` off): a buffer reports only at an arrival."""
    network_peaks(load_topology_text(LINE, "<line>"), 1.5)
    last, _ = _last_and_polls(asked, 0.6e9)
    assert 0.6e9 < last <= 0.6e9 + 10e6  # the packets in flight at the stop (the path's delays)


def test_polled_buffers_report_until_their_last_arrival_is_32_intervals_old(asked: list[tuple[int, int]]) -> None:
    """With ``report_polls`` on BMv2's queues a switch's buffer is polled after f1 stops at 0.6 s (one report per
    two intervals) while its last arrival is at most 32 intervals old (p4src/alinea.p4's POLL_LIVE_SHIFT)."""
    topo = load_topology_text(LINE + "options: {report_polls: true}\n", "<line>")
    network_peaks(topo, 1.5)
    intervals_ns = [topo.ports[(v, u)].interval_us * 1000 for u, v in topo.law if (v, u) in topo.ports]
    last, polls = _last_and_polls(asked, 0.6e9 + 30e6)
    assert 0.6e9 + 30e6 < last <= 0.6e9 + 32 * max(intervals_ns) + 10e6
    for law, after in polls.items():
        times = [t for i, t in asked if i == law]
        during = min(b - a for a, b in zip(times, times[1:]) if b < 0.59e9)  # one interval (and a step's rounding)
        assert after, "no poll after the stop: the test tests nothing"
        assert all(b - a >= 2 * during - 1e5 for a, b in zip(after, after[1:]))


@pytest.mark.parametrize("caps", [[2e6, None, None], [1e6, 5e6], [None, None], [9e6, 9e6, 9e6]])
def test_a_hosts_flows_share_its_rate_max_min_with_each_flows_ceiling(caps: list[float | None]) -> None:
    """The model's host sends as its pacer does (engine/src/hosts/host.rs): a flow with an ``r_max`` keeps under
    it and the others share what it leaves, in bits. 8 Mb/s of 1000-byte packets for one second, one leg each."""
    plant = FluidPlant(0.001, True)
    legs = [plant.add_leg(1, plant.add_buffer(1e9)) for _ in caps]
    plant.add_sender(8e6, 8000.0, [(leg, 0.0, float("inf")) for leg in legs], False,
                     [c or float("inf") for c in caps])
    plant.run(0, 1001)
    got = [8000.0 * plant.report(b)[0] / 1e6 for b in range(len(caps))]  # Mb/s over the second
    expected, left = {}, 8.0
    order = sorted(range(len(caps)), key=lambda i: caps[i] or float("inf"))
    for n, i in enumerate(order):
        expected[i] = min(left / (len(order) - n), (caps[i] or float("inf")) / 1e6)
        left -= expected[i]
    assert got == pytest.approx([expected[i] for i in range(len(caps))], rel=0.01)
