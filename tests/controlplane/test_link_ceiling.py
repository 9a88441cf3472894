"""An emulated link's ceiling on a BMv2 port, converted by the agent at the mean frame the port sends
(controlplane/agent.py: ``LinkCeiling``, ``link_pps``; topo/netns/link_pacing.py gives the rates in bits).

Why here: the law's rate and the link's both become BMv2's packets/s in one place, the agent's
``_queue_pps``, at the port's measured mean frame (controlplane/frame_size.py). What is checked: the
ceiling never lets the port send more bits than its link carries and, once the counters hold a mix of
sizes, fills the link to within a frame (the largest frame would leave the mix part of it unused);
the law wins below the link; a link-rate change moves every queue of the port; a port no law limits
gets the ceiling from the start and follows its own counters.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.agent import (
    LinkCeiling,
    RegulatedPort,
    SetQueueRate,
    SwitchAgentCore,
    SwitchPlan,
    link_pps,
    rate_to_pps,
)
from controlplane.frame_size import MIN_FRAMES, WINDOW_SAMPLES
from controlplane.params import LawParams
from controlplane.report import FRAME_BYTES as REPORT_BYTES

LAW = LawParams(r_max=10e6)
sizes = st.integers(64, 9000)


def agent(ceilings: tuple[LinkCeiling, ...], regulated: tuple[RegulatedPort, ...] = (RegulatedPort(2, LAW, 1000),),
          actuate: bool = True) -> tuple[SwitchAgentCore, list[SetQueueRate]]:
    c = SwitchAgentCore(SwitchPlan("R1", 1, regulated=regulated, link_ceilings=ceilings, actuate=actuate))
    return c, [cmd for cmd in c.start() if isinstance(cmd, SetQueueRate)]


def feed(c: SwitchAgentCore, port: int, frames: list[int], reads: int = WINDOW_SAMPLES + 1) -> list[SetQueueRate]:
    """The port's counters after each of ``reads`` batches of ``frames`` (sizes) left it."""
    out = []
    for i in range(reads):
        out += c.on_frame_counters([(port, i * len(frames), i * sum(frames))])
    return [cmd for cmd in out if isinstance(cmd, SetQueueRate)]


@given(st.floats(min_value=1e3, max_value=1e11), sizes)
def test_link_pps_never_exceeds_the_link(rate: float, frame: int) -> None:
    pps = link_pps(rate, frame)
    assert pps >= 1
    if rate >= 8 * frame:
        assert pps * 8 * frame <= rate < (pps + 1) * 8 * frame


@given(st.floats(1e5, 1e10), sizes, st.sampled_from([0.0, 100.0, 1000.0, 3333.3]))
def test_a_port_with_data_and_reports_leaves_the_reports_their_share(rate: float, frame: int, reports: float) -> None:
    pps = link_pps(rate, frame, reports)
    data = pps - max(1, int(reports)) if reports else pps
    assert pps >= 1 and data >= 0
    if rate >= reports * 8 * REPORT_BYTES + 8 * frame:  # room for a data frame beside the reports
        assert data * 8 * frame + reports * 8 * REPORT_BYTES <= rate + 8 * REPORT_BYTES


def test_link_pps_refuses_a_frame_of_no_bytes() -> None:
    with pytest.raises(ValueError, match="frame_bytes"):
        link_pps(1e6, 0)


def test_the_link_wins_above_the_law_and_a_port_no_law_limits_gets_it_at_start() -> None:
    c, cmds = agent((LinkCeiling(2, 2e6, 1000), LinkCeiling(3, 3e6, REPORT_BYTES)))
    # the law starts at R_max (10 Mb/s) on BMv2's queues: the link (2 Mb/s) holds it
    assert [(x.port, x.pps, x.priority) for x in cmds] == [(2, 250, None), (3, 3_000_000 // (8 * REPORT_BYTES), None)]
    assert c.ports[(2, 0)].pps == 250


def test_the_law_wins_below_the_link() -> None:
    slow = LawParams(r_max=1e6)
    _, cmds = agent((LinkCeiling(2, 2e6, 1000),), (RegulatedPort(2, slow, 1000),))
    assert [(x.port, x.pps) for x in cmds] == [(2, rate_to_pps(1e6, 1000))]


@given(st.lists(st.tuples(sizes, st.integers(MIN_FRAMES, 100)), min_size=1, max_size=4), st.floats(2e5, 1e9))
def test_a_mix_of_sizes_fills_the_link_in_bits(mix: list[tuple[int, int]], link: float) -> None:
    """Property over size mixes: once the window holds the mix, the ceiling at the mix's mean carries
    the link's bits to within one mean frame, never more (the law, at 10x the link, is held)."""
    law = LawParams(r_max=10 * link, r_floor=min(LawParams().r_floor, link))
    frames = [size for size, n in mix for _ in range(n)]
    c, _ = agent((LinkCeiling(2, link, max(frames)),), (RegulatedPort(2, law, max(frames)),))
    feed(c, 2, frames)
    pl = c.ports[(2, 0)]
    mean = sum(frames) / len(frames)
    assert abs(pl.packet_bytes - mean) <= 0.5
    if link >= 8 * pl.packet_bytes:
        assert pl.pps * 8 * pl.packet_bytes <= link < (pl.pps + 1) * 8 * pl.packet_bytes
    assert pl.pps == link_pps(link, pl.packet_bytes)  # the ceiling counts the mean frame, not the largest
    if 3 * pl.packet_bytes <= 2 * max(frames) and link >= 8 * 2 * max(frames):  # the largest would leave bits unused
        assert pl.pps > link_pps(link, max(frames))


def test_a_port_no_law_limits_follows_its_own_counters() -> None:
    """A data port toward a host that does not report (no law): its ceiling moves with its mean frame."""
    c, cmds = agent((LinkCeiling(3, 2e6, 1500),))
    assert (3, 2_000_000 // (8 * 1500)) in [(x.port, x.pps) for x in cmds]
    assert 3 in c.counters_due(0)
    moved = feed(c, 3, [500] * 20)
    assert [(x.port, x.pps, x.priority) for x in moved] == [(3, 500, None)]


def test_a_link_rate_change_moves_every_queue_of_the_port() -> None:
    c, _ = agent((LinkCeiling(2, 2e6, 1000), LinkCeiling(3, 3e6, 1000)))
    cmds = c.set_link_rate(2, 1e6)
    assert [(x.port, x.pps) for x in cmds if isinstance(x, SetQueueRate)] == [(2, 125)]
    assert c.set_link_rate(2, 1e6) == []  # nothing changed, nothing sent
    assert [(x.port, x.pps) for x in c.set_link_rate(3, 1e6) if isinstance(x, SetQueueRate)] == [(3, 125)]
    with pytest.raises(ValueError, match="no emulated link"):
        c.set_link_rate(7, 1e6)
    with pytest.raises(ValueError, match="> 0"):
        c.set_link_rate(2, 0)


def test_end_to_end_mode_still_paces_the_links() -> None:
    """No law actuates, but the link is still slower than the switch: the ceiling holds the backlog in."""
    c, cmds = agent((LinkCeiling(2, 2e6, 1000),), actuate=False)
    assert [(x.port, x.pps) for x in cmds] == [(2, 250)]
    assert c.counters_due(0) == (2,)
    assert [(x.port, x.pps) for x in feed(c, 2, [500] * 20)] == [(2, 500)]


@given(st.lists(st.one_of(st.tuples(st.just("link"), st.sampled_from([2, 3]), st.floats(1e4, 1e8)),
                          st.tuples(st.just("frames"), st.sampled_from([2, 3]), sizes)), max_size=25),
       st.floats(1e5, 5e7))
def test_every_queue_ends_at_the_lower_of_law_and_link(ops: list[tuple[str, int, float]], r_max: float) -> None:
    """Against an independent bookkeeping of what each queue must have after any sequence of link
    rates and counter reads: port 2 has a law (limited from the start), port 3 none."""
    law = LawParams(r_max=r_max, r_floor=min(LawParams().r_floor, r_max))
    c, cmds = agent((LinkCeiling(2, 2e6, 1000), LinkCeiling(3, 2e6, 1000)), (RegulatedPort(2, law, 1000),))
    link = {2: 2e6, 3: 2e6}
    size = {2: 1000, 3: 1000}
    sent = {x.port: x.pps for x in cmds}
    packets = {2: 0, 3: 0}
    nbytes = {2: 0, 3: 0}
    for op, port, value in ops:
        if op == "link":
            link[port] = value
            out = c.set_link_rate(port, value)
        else:
            out = []
            for _ in range(WINDOW_SAMPLES + 1):  # the window then holds frames of this size only
                packets[port] += MIN_FRAMES
                nbytes[port] += MIN_FRAMES * int(value)
                out += c.on_frame_counters([(port, packets[port], nbytes[port])])
            size[port] = int(value)
        sent.update({x.port: x.pps for x in out if isinstance(x, SetQueueRate)})
    rate = c.ports[(2, 0)].law.rate
    assert sent[2] == min(rate_to_pps(rate, size[2]), link_pps(link[2], size[2]))
    assert sent[3] == link_pps(link[3], size[3])
