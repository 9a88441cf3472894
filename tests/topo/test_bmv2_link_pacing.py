"""BMv2's egress paced at an emulated link's rate (topo/link_pacing.py): no BMv2 needed.

What is checked: the rate a switch gets is never above its link's (in packets/s of the largest
frame crossing the port), the law's rate wins where it is lower, a link's rate event and a drain
move every queue of the port, the ways map onto the emulators as the netns backend wires them, and
a run whose emulators held frames says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.queues import QueueClient
from topo.link_pacing import (
    DRAIN_MARGIN,
    HIDDEN_BACKLOG_FRAMES,
    LinkPacedQueues,
    LinkPacing,
    ceilings,
    hidden_queue_notice,
    link_pps,
    paced_ways,
)
from topo.schema import load_topology

ROOT = Path(__file__).resolve().parents[2]


class _Service:
    """The ``simple_switch`` Thrift methods a QueueClient calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def set_egress_queue_rate(self, port: int, pps: int) -> None:
        self.calls.append(("rate", port, None, pps))

    def set_egress_priority_queue_rate(self, port: int, priority: int, pps: int) -> None:
        self.calls.append(("rate", port, priority, pps))

    def set_egress_queue_depth(self, port: int, depth: int) -> None:
        self.calls.append(("depth", port, None, depth))


def _paced(ceil: dict[int, int]) -> tuple[LinkPacedQueues, _Service]:
    svc = _Service()
    return LinkPacedQueues(QueueClient(svc, "fake"), ceil), svc


@given(st.floats(min_value=1e3, max_value=1e11), st.integers(min_value=64, max_value=9000))
def test_link_pps_never_exceeds_the_link(rate: float, frame: int) -> None:
    pps = link_pps(rate, frame)
    assert pps >= 1
    if rate >= 8 * frame:
        assert pps * 8 * frame <= rate < (pps + 1) * 8 * frame


def test_link_pps_refuses_a_frame_of_no_bytes() -> None:
    with pytest.raises(ValueError, match="frame_bytes"):
        link_pps(1e6, 0)


def test_the_law_wins_below_the_link_and_the_link_above() -> None:
    q, svc = _paced({2: 250})
    q.set_queue_rate(2, 150)
    q.set_queue_rate(2, 900)
    q.set_queue_rate(3, 900)  # a port with no emulated link: as the law says
    assert svc.calls == [("rate", 2, None, 150), ("rate", 2, None, 250), ("rate", 3, None, 900)]


def test_start_paces_the_ports_no_law_has_set() -> None:
    q, svc = _paced({1: 250, 2: 375})
    q.set_queue_rate(2, 100)
    q.start()
    assert svc.calls == [("rate", 2, None, 100), ("rate", 1, None, 250)]


def test_depth_calls_pass_through() -> None:
    q, svc = _paced({1: 250})
    q.set_queue_depth(1, 300)
    assert svc.calls == [("depth", 1, None, 300)]


@given(st.lists(st.one_of(
    st.tuples(st.just("law"), st.sampled_from([1, 2]), st.sampled_from([None, 0, 1]), st.integers(0, 2000)),
    st.tuples(st.just("link"), st.sampled_from([1, 2]), st.none(), st.integers(1, 2000)),
    st.tuples(st.just("drain"), st.sampled_from([1, 2]), st.none(), st.booleans())), max_size=40))
def test_every_queue_ends_at_the_lower_of_law_and_link(ops: list[tuple[str, int, int | None, Any]]) -> None:
    """Against an independent bookkeeping of what each queue must have after any sequence."""
    ceil = {1: 250, 2: 125}
    q, svc = _paced(dict(ceil))
    law: dict[tuple[int, int | None], int] = {}
    draining: set[int] = set()
    for op, port, prio, value in ops:
        if op == "law":
            q.set_queue_rate(port, value, prio)
            law[(port, prio)] = value
        elif op == "link":
            q.set_ceiling(port, value)
            ceil[port] = value
        else:
            q.set_draining(port, value)
            (draining.add if value else draining.discard)(port)
    last: dict[tuple[int, int | None], int] = {}
    for _, port, prio, pps in svc.calls:
        last[(port, prio)] = pps
    for (port, prio), pps in last.items():
        c = ceil[port] if port not in draining else max(1, int(ceil[port] * (1 - DRAIN_MARGIN)))
        want = law.get((port, prio), 0)
        assert pps == (c if want <= 0 else min(want, c))
        assert pps <= ceil[port]
    for key in law:  # every queue the law set was sent something
        assert key in last


def test_a_ceiling_of_no_packets_is_refused() -> None:
    q, _ = _paced({1: 250})
    with pytest.raises(ValueError, match="at least 1"):
        q.set_ceiling(1, 0)


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
    # 1000-byte frames: 3 Mb/s is 375 packets/s; toward R2 only reports (56 bytes) go: never held back
    assert ceilings(topo, ways, "R3") == {topo.port("R3", "R2"): 3_000_000 // (8 * 56), topo.port("R3", "R4"): 375}
    assert all(w.report_pps == 0 for w in ways)  # one-way flows: no port carries data and reports


@given(st.floats(1e5, 1e10), st.integers(64, 9000), st.sampled_from([0.0, 100.0, 1000.0, 3333.3]))
def test_a_port_with_data_and_reports_leaves_the_reports_their_share(rate: float, frame: int,
                                                                     reports: float) -> None:
    from controlplane.report import FRAME_BYTES
    from topo.link_pacing import PacedWay

    way = PacedWay("R1", 1, ("R1", "R2"), "a->b", None, frame, reports)
    pps = way.ceiling(rate)
    data = pps - max(1, int(reports)) if reports else pps
    assert pps >= 1
    if rate >= reports * 8 * FRAME_BYTES + 8 * frame:  # room for a data frame beside the reports
        assert data * 8 * frame + reports * 8 * FRAME_BYTES <= rate + 8 * FRAME_BYTES


def test_reports_are_counted_where_flows_go_both_ways(tmp_path: Path) -> None:
    text = (ROOT / "topo/paper-1router.yaml").read_text()
    one_way = "  - {name: f1, src: H1, dst: H2, control: alinea, start: 0s, r_max: 1.8Mbps}\n"
    assert one_way in text
    (tmp_path / "t.yaml").write_text(text.replace(
        one_way, one_way + "  - {name: f2, src: H2, dst: H1, control: alinea, start: 0s, r_max: 1.8Mbps}\n"))
    topo = load_topology(tmp_path / "t.yaml")
    ways = paced_ways(topo, {})
    assert {w.port for w in ways if w.report_pps == 100.0} == {w.port for w in ways}  # a report every 10 ms


def _pacing(stats: dict[str, dict[str, dict[str, int]]]) -> tuple[LinkPacing, list[tuple[Any, ...]],
                                                                   dict[str, LinkPacedQueues]]:
    topo = load_topology(ROOT / "topo/capacity-drop.yaml")
    socks = {(link.a, link.b): f"/tmp/x-link-{link.a}-{link.b}.ctl" for link in topo.links}
    ways = paced_ways(topo, socks)
    queues = {n.name: _paced(ceilings(topo, ways, n.name))[0] for n in topo.switches}
    ran: list[tuple[Any, ...]] = []

    def run_on(switch: str, fn: Any, *args: Any) -> None:
        ran.append((switch, fn.__name__, *args))
        fn(*args)

    def read(sock: str) -> dict[str, dict[str, int]]:
        if sock not in stats:
            raise OSError("no such emulator")
        return stats[sock]

    return LinkPacing(ways, queues, run_on, read), ran, queues


def test_a_way_with_frames_waiting_drains_until_empty() -> None:
    sock = "/tmp/x-link-R3-R4.ctl"
    stats = {sock: {"a->b": {"backlog": 12, "peak_backlog": 23}, "b->a": {"backlog": 0, "peak_backlog": 0}}}
    pacing, ran, queues = _pacing(stats)
    pacing.check()
    assert ran == [("R3", "set_draining", 2, True)]
    assert queues["R3"].sent[(2, None)] == int(375 * (1 - DRAIN_MARGIN))
    stats[sock]["a->b"]["backlog"] = 0
    pacing.check()
    assert ran[-1] == ("R3", "set_draining", 2, False) and queues["R3"].sent[(2, None)] == 375
    summary = pacing.summary()
    assert summary["peak_backlog"]["R3-R4 a->b"] == 23 and summary["final_backlog"]["R3-R4 a->b"] == 0
    assert summary["hidden_queue"] is True
    assert pacing.unreadable  # the other emulators did not answer: kept, not raised


def test_a_link_rate_event_moves_both_switch_ends() -> None:
    pacing, ran, queues = _pacing({})
    pacing.set_link_rate(("R3", "R4"), 1_000_000)
    assert sorted(r[0] for r in ran) == ["R3", "R4"]
    assert queues["R3"].sent[(2, None)] == 125  # 1000-byte data frames
    assert queues["R4"].sent[(1, None)] == 1_000_000 // (8 * 56)  # reports only: never held back


def test_the_notice_names_the_worst_way_and_stays_quiet_under_the_threshold() -> None:
    quiet = {"peak_backlog": {"R1-R2 a->b": HIDDEN_BACKLOG_FRAMES}, "final_backlog": {"R1-R2 a->b": 0}}
    assert hidden_queue_notice(quiet) is None
    loud = {"peak_backlog": {"R1-R2 a->b": 2, "R3-R4 a->b": 1180}, "final_backlog": {"R3-R4 a->b": 1161}}
    line = hidden_queue_notice(loud)
    assert line is not None and "\n" not in line
    assert "1180 on R3-R4 a->b" in line and "1161 left at the end" in line


# ---- the wiring in a netns run (root): p4switch made BMv2-like behind link emulators ------------
def _bmv2_like_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pace: bool) -> dict[str, Any]:
    """capacity-drop, its drop at 4 s, 10 s: p4switch without its port link model (BMv2 has none),
    every link through an emulator, the pacing on or off (tests/bench/bmv2_like.py, as fixtures)."""
    import dataclasses

    import topo.netns as netns
    from topo.runner import run_experiment

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
    topo.events[:] = [dataclasses.replace(ev, at_ns=4_000_000_000)]
    return dict(run_experiment(topo, 10_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns",
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
    # it, what the switch's queue had stamped before the drop, draining (docs/bmv2.md)
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
    from topo.schema import load_topology_text

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
