"""Bits, not packets: the mean frame size a port sends, and the buffer read in bytes (controlplane/frame_size.py),
and the switch agent's queue rate following them (docs/background/alinea.md, "Bits, not packets")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane import native
from controlplane.agent import RegulatedPort, SetQueueRate, SwitchAgentCore, SwitchPlan, rate_to_pps
from controlplane.frame_size import (
    MIN_FRAMES,
    READ_PERIOD_NS,
    WINDOW_SAMPLES,
    FrameSizeWindow,
    capacity_in_frames,
    packets_for_frames,
)
from controlplane.p4runtime_client import ClientError
from controlplane.params import LawParams
from controlplane.report import Report

sizes = st.integers(64, 9000)


def feed(window: FrameSizeWindow, batches: list[list[int]]) -> int:
    """Reads of the counters after each batch of frames (sizes) left the port; the last mean."""
    packets = nbytes = 0
    mean = window.mean
    for batch in batches:
        packets += len(batch)
        nbytes += sum(batch)
        mean = window.update(packets, nbytes)
    return mean


def window_frames(batches: list[list[int]], i: int) -> list[int]:
    """The frames the window spans after read ``i``: the batches between its oldest read and read
    ``i`` (the first read is only a starting point: what left before it is not known)."""
    return [f for b in batches[max(1, i - WINDOW_SAMPLES + 1):i + 1] for f in b]


@given(st.lists(st.lists(sizes, max_size=40), min_size=1, max_size=12), sizes)
def test_the_mean_is_the_mean_of_the_frames_in_the_window(batches, initial) -> None:
    """Differential: the window's mean against the frames themselves, after every read."""
    window = FrameSizeWindow(initial)
    packets = nbytes = 0
    last = initial
    for i, batch in enumerate(batches):
        packets += len(batch)
        nbytes += sum(batch)
        got = window.update(packets, nbytes)
        frames = window_frames(batches, i)
        if len(frames) >= MIN_FRAMES:
            assert abs(got - sum(frames) / len(frames)) <= 0.5
        else:
            assert got == last  # too few frames: the mean is kept
        last = got


@given(sizes, st.lists(st.integers(0, 50), min_size=1, max_size=20), sizes)
def test_frames_of_one_size_give_exactly_that_size(size, counts, initial) -> None:
    """Why: a run whose frames are all of one size must be what it was with the topology's size."""
    mean = feed(FrameSizeWindow(initial), [[size] * n for n in counts])
    assert mean in (size, initial)
    if len(window_frames([[size] * n for n in counts], len(counts) - 1)) >= MIN_FRAMES:
        assert mean == size


def test_a_silence_keeps_the_mean_and_a_reset_starts_over() -> None:
    window = FrameSizeWindow(1000)
    assert feed(window, [[], [1500] * 20]) == 1500
    for _ in range(10):  # nothing leaves the port
        assert window.update(20, 30_000) == 1500
    assert window.update(0, 0) == 1500  # the counters were reset (a pipeline pushed again)
    assert window.update(40, 40 * 500) == 500
    with pytest.raises(ValueError, match="must be > 0"):
        FrameSizeWindow(0)


def test_too_few_frames_say_nothing() -> None:
    window = FrameSizeWindow(1000)
    assert feed(window, [[], [64] * (MIN_FRAMES - 1)]) == 1000


@given(st.integers(1, 10_000), sizes, sizes)
def test_a_buffer_in_bytes_never_holds_more_frames_than_packets(capacity, unit, frame) -> None:
    frames = capacity_in_frames(capacity, unit, frame)
    assert 1 <= frames <= capacity
    if frame <= unit:
        assert frames == capacity  # frames no larger than the unit: the buffer is its packets
    else:
        assert abs(frames * frame - capacity * unit) <= frame / 2 + frame * (frames == 1)


def test_a_buffer_in_packets_is_unchanged() -> None:
    assert capacity_in_frames(100, 0, 1500) == 100
    assert capacity_in_frames(100, 500, 1500) == 33


# ---- the agent ------------------------------------------------------------------------------------

LAW = LawParams(r_max=10e6)


def core(packet_bytes: int = 1000, unit_bytes: int = 0) -> SwitchAgentCore:
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, packet_bytes, unit_bytes=unit_bytes),),
                      neighbours=((2, "R2"),))
    c = SwitchAgentCore(plan)
    c.start()
    return c


def read(c: SwitchAgentCore, now_ns: int, packets: int, nbytes: int) -> list:
    ports = c.counters_due(now_ns)
    return c.on_frame_counters([(p, packets, nbytes) for p in ports])


def test_the_queue_rate_follows_what_the_port_sends() -> None:
    """1448-byte frames from a port planned at 1000: the same b/s in fewer packets/s."""
    c = core(1000)
    start = c.ports[(2, 0)].pps
    assert start == rate_to_pps(LAW.r_max, 1000)
    cmds = []
    for i in range(WINDOW_SAMPLES + 1):
        cmds += read(c, i * READ_PERIOD_NS, 100 * i, 100 * i * 1448)
    assert cmds and isinstance(cmds[-1], SetQueueRate)
    assert cmds[-1].pps == rate_to_pps(LAW.r_max, 1448) == c.ports[(2, 0)].pps
    assert c.ports[(2, 0)].pps * 8 * 1448 == pytest.approx(LAW.r_max, rel=1e-3)  # bits, not packets


@given(sizes)
def test_frames_of_the_planned_size_change_nothing(size) -> None:
    c = core(size)
    before = c.ports[(2, 0)].pps
    cmds = [cmd for i in range(8) for cmd in read(c, i * READ_PERIOD_NS, 50 * i, 50 * i * size)]
    assert cmds == [] and c.ports[(2, 0)].pps == before and c.ports[(2, 0)].packet_bytes == size


def test_counters_are_asked_for_once_a_period_and_never_end_to_end() -> None:
    c = core()
    assert c.counters_due(0) == (2,)
    assert c.counters_due(READ_PERIOD_NS - 1) == ()
    assert c.counters_due(READ_PERIOD_NS) == (2,)
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, 1000),), actuate=False)
    e2e = SwitchAgentCore(plan)
    e2e.start()
    assert e2e.counters_due(0) == ()


def test_a_port_not_limited_yet_stays_unlimited() -> None:
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, 1000, limit_at_start=False),))
    c = SwitchAgentCore(plan)
    c.start()
    cmds = [cmd for i in range(6) for cmd in read(c, i * READ_PERIOD_NS, 100 * i, 100 * i * 500)]
    assert cmds == [] and c.ports[(2, 0)].pps == 0 and c.ports[(2, 0)].packet_bytes == 500


def report(occupancy: int, capacity: int = 100) -> Report:
    return Report(node_id=2, port=1, occupancy=occupancy, capacity=capacity, timestamp_us=0, seq=1,
                  interval_us=10_000)


@given(st.integers(0, 100))
def test_the_law_reads_a_byte_buffer_in_its_frames(occupancy) -> None:
    """A 100-packet buffer of 500-byte units read by a port sending 1500-byte frames: 33 of them,
    so the law sees the occupancy the bytes make (the shaper: no forecast)."""
    traces = []
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, 1500, unit_bytes=500),),
                      fixed_departures=False)
    c = SwitchAgentCore(plan, traces.append)
    c.start()
    twin_plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, 1500),), fixed_departures=False)
    twin = SwitchAgentCore(twin_plan)
    twin.start()
    c.on_report(10**9, 2, {}, report(occupancy))
    twin.on_report(10**9, 2, {}, report(occupancy, 33))  # the same buffer, had it been of 33 packets
    assert traces[-1].capacity == 33
    assert c.ports[(2, 0)].law.rate == twin.ports[(2, 0)].law.rate


@given(st.lists(st.tuples(sizes, st.integers(MIN_FRAMES, 200)), min_size=1, max_size=4), st.floats(1e5, 1e10))
def test_the_queue_rate_carries_the_laws_bits_whatever_the_mix(mix, rate) -> None:
    """Property over size mixes: once the window holds the mix, the queue's packets/s of the mix's
    mean frame carry the law's rate in bits, to the rounding of one packet/s and one byte."""
    law = LawParams(r_max=rate, r_floor=min(LawParams().r_floor, rate))
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, law, 1000),))
    c = SwitchAgentCore(plan)
    c.start()
    per_read = [size for size, n in mix for _ in range(n)]
    for i in range(WINDOW_SAMPLES + 1):
        c.on_frame_counters([(2, i * len(per_read), i * sum(per_read))])
    pl = c.ports[(2, 0)]
    mean = sum(per_read) / len(per_read)
    assert abs(pl.packet_bytes - mean) <= 0.5
    bits = pl.pps * 8 * mean
    assert abs(bits - pl.law.rate) <= 8 * mean * 1.5 + pl.law.rate * 0.5 / pl.packet_bytes


# ---- the binding: what it reads, and a switch that cannot answer -----------------------------------

SourceSwitchAgent = native.source_module("switch_agent").SwitchAgent


class _Sched:
    def __init__(self) -> None:
        self.t = 0

    def now_ns(self) -> int:
        return self.t

    def call_later(self, delay_ns: int, fn: Any, *args: Any) -> None:
        return None  # the test ticks the agent itself


class _Queues:
    def __init__(self) -> None:
        self.rates: list[tuple[int, int]] = []

    def set_queue_rate(self, port: int, pps: int, priority: int | None = None) -> None:
        self.rates.append((port, pps))


class _Client:
    """Port 2 has sent and been queued 100 frames of ``size`` bytes more at each read; ``broken``: the Read fails;
    ``older``: a program without MyIngress.fwd_routed (a Read naming it fails)."""

    def __init__(self, size: int, broken: bool = False, older: bool = False) -> None:
        self.size, self.broken, self.older, self.reads = size, broken, older, []

    def read_counters(self, cells: list[tuple[str, int]]) -> list[tuple[int, int]]:
        self.reads.append(cells)
        if self.broken or (self.older and any(name == "MyIngress.fwd_routed" for name, _ in cells)):
            raise ClientError("unknown counter 'MyEgress.tx_routed' (known: MyEgress.tx)")
        n = 100 * len(self.reads)
        return [(n, n * self.size) for _ in cells]


def _bound(client: _Client) -> tuple[Any, _Sched, _Queues]:
    sched, queues = _Sched(), _Queues()
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, 1000),))
    agent = SourceSwitchAgent(plan, client, queues, sched)
    agent.apply(agent.core.start())
    return agent, sched, queues


def test_the_agent_reads_its_ports_frame_counters_and_sets_the_rate_they_imply() -> None:
    client = _Client(1448)
    agent, sched, queues = _bound(client)
    for i in range(2 * WINDOW_SAMPLES):
        sched.t = i * READ_PERIOD_NS
        agent._tick()
    assert client.reads[0] == [("MyEgress.tx_routed", 2), ("MyIngress.fwd_routed", 2)]
    assert len(client.reads) == 2 * WINDOW_SAMPLES
    assert queues.rates[0] == (2, rate_to_pps(LAW.r_max, 1000)) and queues.rates[-1] == (2, rate_to_pps(LAW.r_max, 1448))
    assert agent.errors == []


def test_a_switch_without_the_counter_is_told_once_and_keeps_the_planned_size() -> None:
    client = _Client(1448, broken=True)
    agent, sched, queues = _bound(client)
    for i in range(5):
        sched.t = i * READ_PERIOD_NS
        agent._tick()
    assert len(client.reads) == 2 and len(agent.errors) == 1 and "tx_routed" in agent.errors[0]
    assert client.reads[1] == [("MyEgress.tx_routed", 2)]  # tried once more without fwd_routed
    assert queues.rates == [(2, rate_to_pps(LAW.r_max, 1000))]


def test_a_switch_without_the_queued_counter_is_read_without_it_and_converts_at_what_its_port_sent() -> None:
    client = _Client(1448, older=True)
    agent, sched, queues = _bound(client)
    for i in range(2 * WINDOW_SAMPLES):
        sched.t = i * READ_PERIOD_NS
        agent._tick()
    assert all(cells == [("MyEgress.tx_routed", 2)] for cells in client.reads[1:])
    assert agent.errors == [] and queues.rates[-1] == (2, rate_to_pps(LAW.r_max, 1448))


@given(st.integers(1, 5000), st.integers(1, 1500), st.integers(1, 9000))
def test_packets_for_frames_is_the_fewest_packets_counted_as_that_many_frames(frames: int, unit: int,
                                                                               frame: int) -> None:
    packets = packets_for_frames(frames, unit, frame)
    assert capacity_in_frames(packets, unit, frame) >= frames
    assert packets == frames or capacity_in_frames(packets - 1, unit, frame) < frames


# ---- the frame the queue stamps: what enters it, not what left (MyIngress.fwd_routed; issue 46) ---------------------

@given(st.integers(64, 700), st.integers(800, 9000), st.integers(1, 20))
def test_a_backlog_of_small_frames_behind_large_sent_ones_is_stamped_at_the_laws_bits(small, large, buffer_ms) -> None:
    """BMv2 stamps a packet's departure when it is queued, at the rate set then: a port at its R_max that has sent
    ``large`` B frames while ``small`` B ones are queued for it must be set in packets/s of the small ones, so that a
    backlog of a ``buffer_ms`` buffer's bytes of them is stamped over that duration at the law's bits. At the frame
    the port sent (the rule before) the horizon was up to ``large / small`` times the duration (issue 46)."""
    c = core(1000)
    pl = c.ports[(2, 0)]
    for i in range(WINDOW_SAMPLES + 1):
        c.read_ns = i * READ_PERIOD_NS
        c.on_frame_counters([(2, 50 * i, 50 * i * large)], [(2, 60 * i, 60 * i * small)])
    assert pl.law.rate == LAW.r_max
    assert c.frame_sizes[2].mean == large and c.queued_sizes[2].mean == small
    backlog = pl.law.rate * buffer_ms / 1e3 / (8 * small)  # the buffer's bytes of small frames, in packets
    horizon_s = backlog / pl.pps
    assert horizon_s <= buffer_ms / 1e3 * (1 + 8 * small / pl.law.rate + 1e-9)  # one packet/s of rounding
    assert abs(pl.pps * 8 * small - pl.law.rate) <= 8 * small  # bits, not packets


@given(st.integers(64, 1500), st.integers(64, 1500))
def test_below_its_r_max_a_law_converts_at_what_the_port_sent_whatever_is_queued(sent, queued) -> None:
    """Below the R_max the BMv2 forecast compares the queue's packets/s with the neighbour's drain in packets of what
    the port sent: the queue stays in those frames (controlplane/agent.py, ``_queue_frame``)."""
    plan = SwitchPlan(name="R1", node_id=1, regulated=(RegulatedPort(2, LAW, 1000),), fixed_departures=False)
    c = SwitchAgentCore(plan)
    c.start()
    c.on_report(10**9, 2, {}, report(95))  # the neighbour's buffer near full: the law cuts below its R_max
    pl = c.ports[(2, 0)]
    for i in range(WINDOW_SAMPLES + 1):
        c.read_ns = i * READ_PERIOD_NS
        c.on_frame_counters([(2, 50 * i, 50 * i * sent)], [(2, 60 * i, 60 * i * queued)])
    assert pl.law.rate < LAW.r_max and pl.pps == rate_to_pps(pl.law.rate, sent)


def test_without_a_read_of_what_enters_the_queue_it_converts_at_what_the_port_sent() -> None:
    """An older alinea.p4 (no MyIngress.fwd_routed): the queue is in the frames the port sent, as before."""
    c = core(1000)
    for i in range(WINDOW_SAMPLES + 1):
        c.read_ns = i * READ_PERIOD_NS
        c.on_frame_counters([(2, 100 * i, 100 * i * 1448)])
    assert not c.queued_sizes[2].has_read and c.ports[(2, 0)].pps == rate_to_pps(LAW.r_max, 1448)
