"""BMv2's egress paced at an emulated link's rate (topo/netns/link_pacing.py): no BMv2 needed.

What is checked: the ways map onto the emulators as the netns backend wires them and give each
switch its ceilings in bits (the agent converts them at the mean frame each port sends:
tests/controlplane/test_link_ceiling.py), a link's rate event and a drain reach every switch end of
the link through its agent, and a run whose emulators held frames says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controlplane.agent import LinkCeiling
from controlplane.report import FRAME_BYTES as REPORT_BYTES
from tests.paths import ROOT
from topo.file.schema import load_topology
from topo.netns.link_pacing import (
    DRAIN_MARGIN,
    HIDDEN_BACKLOG_FRAMES,
    LinkPacing,
    ceilings,
    hidden_queue_notice,
    paced_ways,
)


def test_ways_cover_every_switch_port_of_an_emulated_link() -> None:
    topo = load_topology(ROOT / "topo/capacity-drop.yaml")
    socks = {(link.a, link.b): f"/tmp/x-link-{link.a}-{link.b}.ctl" for link in topo.links}
    ways = paced_ways(topo, socks)
    want = {(u, topo.port(u, v)) for link in topo.links for u, v in ((link.a, link.b), (link.b, link.a))
            if topo.nodes[u].is_switch}
    assert {(w.switch, w.port) for w in ways} == want
    r3r4 = [w for w in ways if w.link == ("R3", "R4")]
    assert {(w.switch, w.way) for w in r3r4} == {("R3", "a->b"), ("R4", "b->a")}
    host = [w for w in ways if w.link == ("R5", "H2")]
    assert [(w.switch, w.way) for w in host] == [("R5", "a->b")]
    # in bits, with the frame the agent starts from: 1000-byte data toward R4, reports only toward R2
    assert set(ceilings(topo, ways, "R3")) == {LinkCeiling(topo.port("R3", "R2"), 3e6, REPORT_BYTES),
                                               LinkCeiling(topo.port("R3", "R4"), 3e6, 1000)}
    assert all(w.report_pps == 0 for w in ways)  # one-way flows: no port carries data and reports


def test_a_ways_starting_frame_is_the_expected_mean_not_the_largest(tmp_path: Path) -> None:
    """Two flows of 200- and 1000-byte frames through R1: the agent starts from the mean the topology
    expects (topo.net.plan.expected_frame_bytes), then follows the port's counters."""
    from topo.net.plan import expected_frame_bytes

    text = (ROOT / "topo/paper-1router.yaml").read_text()
    one_way = "  - {name: f1, src: H1, dst: H2, control: alinea, start: 0s, r_max: 1.8Mbps}\n"
    assert one_way in text
    (tmp_path / "t.yaml").write_text(text.replace(
        one_way, one_way + "  - {name: f2, src: H1, dst: H2, control: alinea, start: 0s, r_max: 1.8Mbps, "
                           "packet_size: 200}\n"))
    topo = load_topology(tmp_path / "t.yaml")
    (way,) = [w for w in paced_ways(topo, {}) if w.switch == "R1" and w.port == topo.port("R1", "H2")]
    assert way.frame_bytes == expected_frame_bytes(topo, "R1", "H2") < 1000


def test_reports_are_counted_where_flows_go_both_ways(tmp_path: Path) -> None:
    text = (ROOT / "topo/paper-1router.yaml").read_text()
    one_way = "  - {name: f1, src: H1, dst: H2, control: alinea, start: 0s, r_max: 1.8Mbps}\n"
    assert one_way in text
    (tmp_path / "t.yaml").write_text(text.replace(
        one_way, one_way + "  - {name: f2, src: H2, dst: H1, control: alinea, start: 0s, r_max: 1.8Mbps}\n"))
    topo = load_topology(tmp_path / "t.yaml")
    ways = paced_ways(topo, {})
    assert {w.port for w in ways if w.report_pps == 100.0} == {w.port for w in ways}  # a report every 10 ms


class _Agent:
    """A switch agent's ``set_link_rate``, recorded (the conversion to packets/s is the agent's own)."""

    def __init__(self) -> None:
        self.rates: dict[int, float] = {}

    def set_link_rate(self, port: int, bps: float) -> None:
        self.rates[port] = bps


def _pacing(stats: dict[str, dict[str, dict[str, int]]]) -> tuple[LinkPacing, list[tuple[Any, ...]], dict[str, _Agent]]:
    topo = load_topology(ROOT / "topo/capacity-drop.yaml")
    socks = {(link.a, link.b): f"/tmp/x-link-{link.a}-{link.b}.ctl" for link in topo.links}
    ways = paced_ways(topo, socks)
    agents = {n.name: _Agent() for n in topo.switches}
    ran: list[tuple[Any, ...]] = []

    def run_on(switch: str, fn: Any, *args: Any) -> None:
        ran.append((switch, fn.__name__, *args))
        fn(*args)

    def read(sock: str) -> dict[str, dict[str, int]]:
        if sock not in stats:
            raise OSError("no such emulator")
        return stats[sock]

    return LinkPacing(ways, agents, run_on, read, {(ln.a, ln.b): ln.rate_bps for ln in topo.links}), ran, agents


def test_a_way_with_frames_waiting_drains_until_empty() -> None:
    sock = "/tmp/x-link-R3-R4.ctl"
    stats = {sock: {"a->b": {"backlog": 12, "peak_backlog": 23}, "b->a": {"backlog": 0, "peak_backlog": 0}}}
    pacing, ran, agents = _pacing(stats)
    pacing.check()
    assert ran == [("R3", "set_link_rate", 2, pytest.approx(3e6 * (1 - DRAIN_MARGIN)))]
    pacing.check()  # still waiting: nothing resent
    assert len(ran) == 1
    stats[sock]["a->b"]["backlog"] = 0
    pacing.check()
    assert ran[-1] == ("R3", "set_link_rate", 2, 3e6) and agents["R3"].rates[2] == 3e6
    summary = pacing.summary()
    assert summary["peak_backlog"]["R3-R4 a->b"] == 23 and summary["final_backlog"]["R3-R4 a->b"] == 0
    assert summary["hidden_queue"] is True
    assert pacing.unreadable  # the other emulators did not answer: kept, not raised


def test_a_link_rate_event_moves_both_switch_ends_and_a_drain_keeps_its_margin() -> None:
    sock = "/tmp/x-link-R3-R4.ctl"
    stats = {sock: {"a->b": {"backlog": 30, "peak_backlog": 30}, "b->a": {"backlog": 0, "peak_backlog": 0}}}
    pacing, ran, agents = _pacing(stats)
    pacing.check()
    pacing.set_link_rate(("R3", "R4"), 1_000_000)
    assert sorted(r[0] for r in ran[1:]) == ["R3", "R4"]
    assert agents["R3"].rates[2] == pytest.approx(1e6 * (1 - DRAIN_MARGIN))  # still draining, at the new rate
    assert agents["R4"].rates[1] == 1e6


def test_the_notice_names_the_worst_way_and_stays_quiet_under_the_threshold() -> None:
    quiet = {"peak_backlog": {"R1-R2 a->b": HIDDEN_BACKLOG_FRAMES}, "final_backlog": {"R1-R2 a->b": 0}}
    assert hidden_queue_notice(quiet) is None
    loud = {"peak_backlog": {"R1-R2 a->b": 2, "R3-R4 a->b": 1180}, "final_backlog": {"R3-R4 a->b": 1161}}
    line = hidden_queue_notice(loud)
    assert line is not None and "\n" not in line
    assert "1180 on R3-R4 a->b" in line and "1161 left at the end" in line


# ---- the wiring in a netns run (root): p4switch made BMv2-like behind link emulators ------------
def _bmv2_like_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pace: bool) -> dict[str, Any]:
    """capacity-drop, its drop at 3 s, 7 s: p4switch without its port link model (BMv2 has none),
    every link through an emulator, the pacing on or off (tests/bench/tools/bmv2_like.py, as fixtures)."""
    import dataclasses

    import topo.netns.network as netns
    from topo.run.runner import run_experiment

    def choose(self: Any) -> None:
        self.link_mode = "linkemu"

    spec = netns.NetnsNetwork._spec

    def bare(self: Any, name: str) -> Any:
        s = spec(self, name)
        s.bitrates.clear()
        s.delays.clear()
        return s

    monkeypatch.setattr(netns.NetnsNetwork, "_choose_link_mode", choose)
    monkeypatch.setattr(netns.NetnsNetwork, "_spec", bare)
    if not pace:
        monkeypatch.setattr(netns, "paced_ways", lambda topo, emulators: [])
    topo = load_topology(ROOT / "topo/capacity-drop.yaml")
    (ev,) = topo.events
    topo.events[:] = [dataclasses.replace(ev, at_ns=3_000_000_000)]
    return dict(run_experiment(topo, 7_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns",
                               target="p4switch", pcap=False).summary)


@pytest.mark.netns
@pytest.mark.slow
def test_the_backlog_of_a_falling_link_goes_back_into_the_switch(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.switch import netns as N

    N.require_netns()
    with monkeypatch.context() as m:
        bare = _bmv2_like_run(tmp_path / "bare", m, pace=False)
    paced = _bmv2_like_run(tmp_path / "paced", monkeypatch, pace=True)
    assert "link_backlog" not in bare  # no pacing, nothing read
    backlog = paced["link_backlog"]
    ways = {f"{a}-{b} {w}" for a, b, w in (("H1", "R1", "a->b"), ("R5", "H2", "a->b"))}
    assert ways <= set(backlog["peak_backlog"]) and "R3-R4 a->b" in backlog["final_backlog"]
    if paced["realtime"].get("kept_up"):  # a run that fell behind loses packets to the machine, not the pacing
        assert paced["loss"]["total"] == 0, paced["loss"]
    # without the pacing the R3-R4 emulator holds what its slower wire cannot carry, ever more; with
    # it, what the switch's queue had stamped before the drop, draining (docs/howto/bmv2.md)
    left = json.loads((tmp_path / "bare" / "logs" / "linkemu-R3-R4.log").read_text().split("stopped: ")[-1]
                      .replace("'", '"'))["a->b"]["backlog"]
    assert backlog["final_backlog"]["R3-R4 a->b"] < left / 4, (backlog, left)
    assert (backlog["hidden_queue"] is True) == any(line.startswith("warning: link emulators held frames")
                                                    for line in paced["notices"])


def test_a_tcp_flows_ceiling_counts_its_segments_frame_not_its_record() -> None:
    """A TCP flow's ``packet_size`` is its application's 1448-byte record, the segment's payload; the
    frame on the wire is larger, so a ceiling counted in records would let the switch send faster
    than its link and the backlog would form in the emulator again."""
    from hosts.tcp import MSS
    from hosts.tcp.wire import data_frame_bytes
    from topo.file.schema import load_topology_text

    topo = load_topology_text("""\
nodes:
  H1: {kind: host}
  R1: {kind: switch}
  H2: {kind: host}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, H2]}
flows:
  - {src: H1, dst: H2, control: tcp}
""", "tcp.yaml")
    (way,) = [w for w in paced_ways(topo, {}) if w.switch == "R1" and w.port == topo.port("R1", "H2")]
    assert way.frame_bytes == data_frame_bytes(MSS)

