"""The run-end invariants (topo/net/invariants.py) on hand-made recordings: each one fails on a
recording that breaks it and passes on one that keeps it, and the windowed checks agree with a
brute-force pass over every window (hypothesis)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.file.schema import load_topology_text
from topo.net import invariants as I
from topo.net.invariants import EndState, FlowEnd, Place, QueueEnd, check_invariants, flow_places
from topo.net.record import BufferSample, DropSample, FlowSample, LinkSample, Recorder, TcpSample

MERGE = """\
name: t
defaults:
  link: {rate: 8Mbps, delay: 1ms, buffer: 50}
  packet_size: 1000B
nodes:
  H1: {kind: host}
  H2: {kind: host}
  R1: {kind: switch}
  D: {kind: host, receive_buffer: 100, playout: 4Mbps}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [R1, D], rate: 8Mbps}
flows:
  - {name: a, src: H1, dst: D, control: alinea}
  - {name: b, src: H2, dst: D, control: fixed, rate: 1Mbps}
"""
DROP = MERGE + """\
events:
  - {at: 1s, link: [R1, D], rate: 1Mbps}
"""
S = 1_000_000_000
MS = 1_000_000


def topo(text: str = MERGE) -> Any:
    return load_topology_text(text, "t.yaml")


def names(violations: list[I.Violation]) -> list[str]:
    return [v.name for v in violations]


def consistent_recorder(t: Any, *, received: tuple[int, int] = (100, 50)) -> Recorder:
    """Two flows into D over 1 s, within every rate, every counter agreeing."""
    rec = Recorder()
    for k in range(11):
        now = k * 100 * MS
        rec.flows.append(FlowSample(now, "a", received[0] * k // 10, received[0] * k // 10, 0, 1000))
        rec.flows.append(FlowSample(now, "b", received[1] * k // 10, received[1] * k // 10, 0, 1000))
        got = sum(received) * k // 10
        for u, v, n in (("H1", "R1", received[0] * k // 10), ("H2", "R1", received[1] * k // 10), ("R1", "D", got)):
            rec.links.append(LinkSample(now, u, v, 1000 * n, 8e6))
        rec.buffers.append(BufferSample(now, "D", 0, 100, got, 0))
    rec.packets = {"a": [(i, 0, 1) for i in range(received[0])], "b": [(i, 0, 1) for i in range(received[1])]}
    return rec


def summary_of(rec: Recorder) -> dict[str, Any]:
    last = {s.flow: s for s in rec.flows}
    final_drops: dict[tuple[str, int, str], int] = {(d.switch, d.port, d.reason): d.packets for d in rec.drops}
    buffers = {b.host: b for b in rec.buffers}
    return {"loss": {"data_packets_sent": sum(s.sent for s in last.values()),
                     "data_packets_received": sum(s.received for s in last.values()),
                     "dropped_in_network": sum(n for (_s, _p, r), n in final_drops.items() if r != "spoofed_report"),
                     "receiver_buffer_overflow": sum(b.dropped for b in buffers.values())}}


def end_state(t: Any, sent: dict[str, int], arrived: dict[str, int], places: dict[str, Place] | None = None,
              **kw: Any) -> EndState:
    flows = {f.name: FlowEnd(sent[f.name], arrived[f.name], "packets", flow_places(t, f)) for f in t.flows}
    return EndState("test", flows, places or {}, **kw)


# ---- the contract --------------------------------------------------------------------------------
def test_a_consistent_run_breaks_nothing_and_the_block_names_every_check() -> None:
    t = topo()
    rec = consistent_recorder(t)
    end = end_state(t, {"a": 100, "b": 50}, {"a": 100, "b": 50}, link_delivered={("R1", "D"): 150})
    assert check_invariants(t, rec, summary_of(rec), end) == []
    block = I.invariants_block([I.Violation("link_rate", "x")])
    assert block == {"checked": list(I.NAMES), "violations": [{"name": "link_rate", "detail": "x"}]}
    assert set(I.NAMES) == {"conservation", "link_rate", "host_capacity", "counters_agree", "goodput_total"}


def test_a_violation_is_frozen_and_one_line() -> None:
    v = I.Violation("conservation", "flow a: ...")
    try:
        v.name = "x"  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("Violation is not frozen")


def test_a_flows_places_follow_its_path() -> None:
    t = topo()
    a = next(f for f in t.flows if f.name == "a")
    p1, p2 = t.port("R1", "H1"), t.port("R1", "D")
    assert flow_places(t, a) == (I.place_tx(), I.place_link("H1", "R1"), I.place_in("R1", p1),
                                 I.place_link("R1", "D"), I.place_egress("R1", p2), I.place_rx("D"))


# ---- conservation --------------------------------------------------------------------------------
def test_conservation_holds_when_what_is_missing_was_dropped_or_held_on_the_path() -> None:
    t = topo()
    rec = consistent_recorder(t)
    places = {I.place_in("R1", t.port("R1", "H1")): Place(dropped=3),
              I.place_egress("R1", t.port("R1", "D")): Place(held=2)}
    end = end_state(t, {"a": 105, "b": 50}, {"a": 100, "b": 50}, places)
    assert "conservation" not in names(check_invariants(t, rec, summary_of(rec), end))


def test_conservation_fails_for_packets_that_vanished() -> None:
    t = topo()
    rec = consistent_recorder(t)
    places = {I.place_in("R1", t.port("R1", "H1")): Place(dropped=3)}
    end = end_state(t, {"a": 110, "b": 50}, {"a": 100, "b": 50}, places)
    found = [v for v in check_invariants(t, rec, summary_of(rec), end) if v.name == "conservation"]
    assert found and "flow a" in found[0].detail and "7 of 110" in found[0].detail


def test_conservation_does_not_credit_a_drop_off_the_flows_path() -> None:
    t = topo()
    rec = consistent_recorder(t)
    places = {I.place_in("R1", t.port("R1", "H2")): Place(dropped=10)}  # b's ingress, not a's
    end = end_state(t, {"a": 110, "b": 50}, {"a": 100, "b": 50}, places)
    assert any(v.name == "conservation" and "flow a" in v.detail
               for v in check_invariants(t, rec, summary_of(rec), end))


def test_conservation_in_aggregate_does_not_count_a_shared_drop_twice() -> None:
    t = topo()
    rec = consistent_recorder(t)
    shared = {I.place_egress("R1", t.port("R1", "D")): Place(dropped=10)}
    end = end_state(t, {"a": 110, "b": 60}, {"a": 100, "b": 50}, shared)  # 20 missing, 10 dropped
    found = [v.detail for v in check_invariants(t, rec, summary_of(rec), end) if v.name == "conservation"]
    assert any(d.startswith("all flows: 20") for d in found)


def test_conservation_fails_when_more_arrived_than_was_sent() -> None:
    t = topo()
    rec = consistent_recorder(t)
    end = end_state(t, {"a": 90, "b": 50}, {"a": 100, "b": 50})
    assert any("100 packets arrived > 90 sent" in v.detail for v in check_invariants(t, rec, summary_of(rec), end))
    bad = Recorder(flows=[FlowSample(S, "a", 5, 6, 0, 1000)])
    assert names(check_invariants(t, bad, {}, None)) == ["conservation"]


def test_conservation_fails_for_a_receive_buffer_that_dropped_more_than_its_flows_miss() -> None:
    t = topo()
    rec = consistent_recorder(t)
    places = {I.place_rx("D"): Place(dropped=4, data_only=True)}
    ok = end_state(t, {"a": 103, "b": 51}, {"a": 100, "b": 50}, places)
    assert "conservation" not in names(check_invariants(t, rec, summary_of(rec), ok))
    bad = end_state(t, {"a": 101, "b": 51}, {"a": 100, "b": 50}, places)
    assert any(v.name == "conservation" and v.detail.startswith("D receive buffer")
               for v in check_invariants(t, rec, summary_of(rec), bad))


def test_conservation_of_an_egress_queue() -> None:
    t = topo()
    rec = consistent_recorder(t)
    good = end_state(t, {"a": 100, "b": 50}, {"a": 100, "b": 50}, queues={"R1 port 3": QueueEnd(10, 7, 1, 3)})
    assert "conservation" not in names(check_invariants(t, rec, summary_of(rec), good))
    bad = end_state(t, {"a": 100, "b": 50}, {"a": 100, "b": 50}, queues={"R1 port 3": QueueEnd(10, 7, 1, 2)})
    assert any("R1 port 3 egress queue" in v.detail for v in check_invariants(t, rec, summary_of(rec), bad))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_conservation_holds_for_any_split_of_the_missing_and_fails_for_any_shortfall(data: st.DataObject) -> None:
    """Spread each flow's missing packets over its own path's places at random: never a violation;
    take k > 0 frames out of those places: a violation."""
    t = topo()
    rec = Recorder()
    sent = {f.name: data.draw(st.integers(0, 500)) for f in t.flows}
    arrived = {n: data.draw(st.integers(0, s)) for n, s in sent.items()}
    places: dict[str, list[int]] = {}
    for f in t.flows:
        left = sent[f.name] - arrived[f.name]
        path = [p for p in flow_places(t, f) if p != I.place_rx(f.dst)]
        for k, place in enumerate(path):
            slot = places.setdefault(place, [0, 0])
            for side in (0, 1):
                n = left if k == len(path) - 1 and side == 1 else data.draw(st.integers(0, left))
                slot[side] += n
                left -= n
    good = {p: Place(dropped=d, held=h) for p, (d, h) in places.items()}
    assert "conservation" not in names(check_invariants(t, rec, {}, end_state(t, sent, arrived, good)))
    total = sum(d + h for d, h in places.values())
    if total:
        k = data.draw(st.integers(1, total))
        cut: dict[str, Place] = {}
        for p, (d, h) in places.items():
            take = min(k, d + h)
            k -= take
            cut[p] = Place(dropped=max(0, d - take), held=h - max(0, take - d))
        assert "conservation" in names(check_invariants(t, rec, {}, end_state(t, sent, arrived, cut)))


# ---- link_rate -----------------------------------------------------------------------------------
def link_rows(rate_bps: float, bytes_per_sample: list[int], dt_ns: int = 100 * MS) -> Recorder:
    rec, total = Recorder(), 0
    rec.links.append(LinkSample(0, "R1", "D", 0, rate_bps))
    for k, b in enumerate(bytes_per_sample, start=1):
        total += b
        rec.links.append(LinkSample(k * dt_ns, "R1", "D", total, rate_bps))
    return rec


def test_link_rate_holds_at_the_rate_and_fails_above_it_by_more_than_a_frame() -> None:
    t = topo()
    full = 8e6 * 0.1 / 8  # bytes of 100 ms at 8 Mb/s
    assert check_invariants(t, link_rows(8e6, [int(full)] * 10), {}, None) == []
    assert check_invariants(t, link_rows(8e6, [int(full) + 999] + [int(full)] * 9), {}, None) == []  # < 1 frame
    over = check_invariants(t, link_rows(8e6, [int(full)] * 5 + [int(full) + 1001] + [int(full)] * 4), {}, None)
    assert names(over) == ["link_rate"] and "link R1->D" in over[0].detail


def test_link_rate_over_a_long_window_catches_what_each_short_one_hides() -> None:
    """Each 100 ms carries 900 bytes more than the rate allows (under a frame); ten of them do not."""
    t = topo()
    full = int(8e6 * 0.1 / 8)
    assert names(check_invariants(t, link_rows(8e6, [full + 900] * 10), {}, None)) == ["link_rate"]


def test_link_rate_follows_the_timed_rate_events() -> None:
    t = topo(DROP)
    fast, slow = int(8e6 * 0.1 / 8), int(1e6 * 0.1 / 8)
    assert check_invariants(t, link_rows(8e6, [fast] * 10 + [slow] * 10), {}, None) == []
    assert names(check_invariants(t, link_rows(8e6, [fast] * 10 + [fast] * 2 + [slow] * 8), {}, None)) == ["link_rate"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**9), st.floats(0, 1e7), st.floats(0, 1e7)), min_size=1, max_size=25))
def test_the_one_pass_window_agrees_with_every_window(steps: list[tuple[int, float, float]]) -> None:
    t, c, a, pts = 0, 0.0, 0.0, []
    for dt, dc, da in steps:
        t, c, a = t + dt, c + dc, a + da
        pts.append((t, c, a))
    best = max(((pts[j][1] - pts[i][1]) - (pts[j][2] - pts[i][2]) for j in range(len(pts)) for i in range(j)),
               default=-math.inf)
    got, i, j = I._excess(pts)
    assert math.isclose(got, best, rel_tol=1e-9, abs_tol=1e-3) or got == best == -math.inf
    if len(pts) > 1:
        assert i < j and math.isclose((pts[j][1] - pts[i][1]) - (pts[j][2] - pts[i][2]), got, rel_tol=1e-9,
                                      abs_tol=1e-3)


# ---- host_capacity -------------------------------------------------------------------------------
def test_host_capacity_fails_when_a_hosts_flows_receive_more_than_its_link() -> None:
    t = topo()
    ok = consistent_recorder(t, received=(300, 150))  # 450 packets/s of 1000 B: 3.6 Mb/s < 8 Mb/s, < its playout
    assert "host_capacity" not in names(check_invariants(t, ok, {}, None))
    over = Recorder(flows=[FlowSample(k * 100 * MS, n, 200 * k, 100 * k, 0, 1000) for k in range(11) for n in "ab"])
    found = [v for v in check_invariants(t, over, {}, None) if v.name == "host_capacity"]
    assert found and found[0].detail.startswith("D: its datagram flows received")  # 16 Mb/s into an 8 Mb/s link


def test_host_capacity_fails_when_a_host_plays_out_faster_than_its_playout() -> None:
    t = topo()  # D plays 4 Mb/s of 1000-byte packets: 500 packets/s
    ok = Recorder(buffers=[BufferSample(k * 100 * MS, "D", 0, 100, 50 * k, 0) for k in range(11)])
    assert check_invariants(t, ok, {}, None) == []
    fast = Recorder(buffers=[BufferSample(k * 100 * MS, "D", 0, 100, 60 * k, 0) for k in range(11)])
    found = check_invariants(t, fast, {}, None)
    assert names(found) == ["host_capacity"] and "played" in found[0].detail


def test_host_capacity_compares_a_playout_at_the_times_its_host_read_it() -> None:
    """A netns host reads its counts at its wake-up, which may be late: a sample read 60 ms late holds
    30 packets more than its nominal time allows (4 Mb/s: 50 per 100 ms), with no lateness allowance to
    cover it. At the read times the playout fits; a burst beyond them is still found, with no allowance."""
    t = topo()
    late = {5: 60 * MS}
    counts = [50 * k + (30 if k in late else 0) for k in range(11)]
    rec = Recorder(buffers=[BufferSample(k * 100 * MS, "D", 0, 100, counts[k], 0) for k in range(11)])
    assert names(check_invariants(t, rec, {}, None)) == ["host_capacity"]
    rec.read_ns = {("D", k * 100 * MS): k * 100 * MS + d for k, d in late.items()}
    assert check_invariants(t, rec, {}, None) == []
    rec.buffers[5] = BufferSample(500 * MS, "D", 0, 100, counts[5] + 2, 0)
    none = {"a": 0, "b": 0}
    found = [v for v in check_invariants(t, rec, {}, end_state(t, none, none, sample_lateness_ns=1000 * MS))
             if "played" in v.detail]
    assert [v.name for v in found] == ["host_capacity"] and "-0.560 s" in found[0].detail


# ---- counters_agree ------------------------------------------------------------------------------
def test_counters_agree_fails_when_the_summary_misstates_the_counters() -> None:
    t = topo()
    rec = consistent_recorder(t)
    rec.drops.append(DropSample(S, "R1", 1, "overflow", 7))
    summary = summary_of(rec)
    assert check_invariants(t, rec, summary, None) == []
    summary["loss"]["dropped_in_network"] = 14
    found = check_invariants(t, rec, summary, None)
    assert names(found) == ["counters_agree"] and "dropped_in_network = 14" in found[0].detail


def test_counters_agree_fails_when_a_flows_packet_records_disagree_with_its_count() -> None:
    t = topo()
    rec = consistent_recorder(t)
    rec.packets["a"] = rec.packets["a"][:-1]
    assert any("packets_a.csv has 99 rows" in v.detail for v in check_invariants(t, rec, summary_of(rec), None))


def test_counters_agree_per_port_drops_and_egress_queues() -> None:
    t = topo()
    rec = consistent_recorder(t)
    p = t.port("R1", "H1")
    rec.drops += [DropSample(S, "R1", p, "overflow", 3), DropSample(S, "R1", 0, "egress_queue_full", 2)]
    places = {I.place_in("R1", p): Place(dropped=3)}
    queues = {"R1 port 3": QueueEnd(10, 10, 2, 0)}
    sent = {"a": 100, "b": 50}
    good = end_state(t, sent, sent, places, queues=queues)
    assert "counters_agree" not in names(check_invariants(t, rec, summary_of(rec), good))
    bad_port = end_state(t, sent, sent, {I.place_in("R1", p): Place(dropped=4)}, queues=queues)
    assert any(v.detail.startswith(f"R1 port {p} ingress: drop counters say 4, drops.csv 3")
               for v in check_invariants(t, rec, summary_of(rec), bad_port))
    bad_queue = end_state(t, sent, sent, places, queues={"R1 port 3": QueueEnd(10, 10, 5, 0)})
    assert any("egress queues refused 5" in v.detail for v in check_invariants(t, rec, summary_of(rec), bad_queue))


@pytest.mark.cpu_only
def test_counters_agree_a_host_links_frames_with_its_flows() -> None:
    """D only receives alinea and fixed datagrams: its link delivered exactly what its flows counted."""
    t = topo()
    rec = consistent_recorder(t)
    sent = {"a": 100, "b": 50}
    assert check_invariants(t, rec, summary_of(rec), end_state(t, sent, sent, link_delivered={("R1", "D"): 150})) == []
    for delivered in (149, 151):
        found = check_invariants(t, rec, summary_of(rec), end_state(t, sent, sent, link_delivered={("R1", "D"): delivered}))
        assert names(found) == ["counters_agree"] and f"delivered {delivered} frames" in found[0].detail
    loose = end_state(t, sent, sent, link_delivered={("R1", "D"): 151}, link_delivered_exact=False)
    assert check_invariants(t, rec, summary_of(rec), loose) == []  # netns: a bound from above only


def test_counters_agree_the_receive_buffers_with_the_hosts_count() -> None:
    t = topo()
    rec = consistent_recorder(t)
    sent = {"a": 100, "b": 50}
    assert check_invariants(t, rec, summary_of(rec), end_state(t, sent, sent, receiver_overflow=0)) == []
    found = check_invariants(t, rec, summary_of(rec), end_state(t, sent, sent, receiver_overflow=2))
    assert names(found) == ["counters_agree"] and "refused 2" in found[0].detail


@pytest.mark.cpu_only
def test_conservation_of_a_tcp_flows_bytes() -> None:
    t = topo()
    rec = Recorder(tcp_flows={"a": {"bytes_sent": 5000, "bytes_received": 4000}},
                   tcp=[TcpSample(S, "a", 5000, (("bytes_acked", 3000),))])
    assert check_invariants(t, rec, {}, None) == []
    more = Recorder(tcp_flows={"a": {"bytes_sent": 5000, "bytes_received": 6000}})
    assert any("got 6000 bytes, its sender wrote 5000" in v.detail for v in check_invariants(t, more, {}, None))
    acked = Recorder(tcp_flows={"a": {"bytes_sent": 5000, "bytes_received": 4000}},
                     tcp=[TcpSample(S, "a", 5000, (("bytes_acked", 4500),))])
    sim, netns = EndState("sim"), EndState("netns")
    assert names(check_invariants(t, acked, {}, sim)) == ["conservation"]
    assert check_invariants(t, acked, {}, netns) == []  # the kernel's receiver may not have read it yet


def test_conservation_fails_for_data_drops_counted_twice() -> None:
    """Two places that drop only data packets, each within what its flows miss, but not together."""
    t = topo()
    rec = consistent_recorder(t)
    places = {I.place_in("R1", t.port("R1", "H1")): Place(dropped=3, data_only=True),
              I.place_rx("D"): Place(dropped=3, data_only=True)}
    ok = end_state(t, {"a": 106, "b": 50}, {"a": 100, "b": 50}, places)
    assert "conservation" not in names(check_invariants(t, rec, summary_of(rec), ok))
    twice = end_state(t, {"a": 104, "b": 50}, {"a": 100, "b": 50}, places)
    assert any(v.detail.startswith("all flows: 6 data packets dropped")
               for v in check_invariants(t, rec, summary_of(rec), twice))


def test_counters_agree_an_egress_queue_serves_its_link() -> None:
    t = topo()
    rec = consistent_recorder(t)
    sent = {"a": 100, "b": 50}
    p = t.port("R1", "D")
    queues = {f"R1 port {p}": QueueEnd(152, 152, 0, 0)}
    good = end_state(t, sent, sent, queues=queues, link_sent={("R1", "D"): 152, ("H1", "R1"): 100})
    assert check_invariants(t, rec, summary_of(rec), good) == []
    bad = end_state(t, sent, sent, queues=queues, link_sent={("R1", "D"): 150})
    found = check_invariants(t, rec, summary_of(rec), bad)
    assert names(found) == ["counters_agree"] and f"R1 port {p} egress queue served 152 frames" in found[0].detail


def test_conservation_of_a_playout_buffer_at_every_sample() -> None:
    """What D's flows received = what D's buffer played + holds; a flow plays at most what it received,
    and the flows' played counts add up to the buffer's."""
    t = topo()
    rec = consistent_recorder(t)
    assert check_invariants(t, rec, {}, None) == []
    held = consistent_recorder(t)
    held.buffers[5] = BufferSample(held.buffers[5].t_ns, "D", 3, 100, held.buffers[5].played - 3, 0)
    assert check_invariants(t, held, {}, None) == []  # 3 of them still in the buffer
    lost = consistent_recorder(t)
    lost.buffers[5] = BufferSample(lost.buffers[5].t_ns, "D", 0, 100, lost.buffers[5].played - 3, 0)
    found = check_invariants(t, lost, {}, None)
    assert names(found) == ["conservation"] and found[0].detail.startswith("D receive buffer at 0.500 s: its flows")
    over = consistent_recorder(t)
    over.buffers[5] = BufferSample(over.buffers[5].t_ns, "D", 101, 100, 0, 0)
    assert "capacity 100" in check_invariants(t, over, {}, None)[0].detail

    def with_played(played: dict[str, int]) -> Recorder:
        r = consistent_recorder(t)
        r.flows = [FlowSample(s.t_ns, s.flow, s.sent, s.received, 0, 1000,
                              s.received if s.t_ns != S else played[s.flow]) for s in r.flows]
        return r

    assert check_invariants(t, with_played({"a": 100, "b": 50}), {}, None) == []
    assert "flow a played 101 packets of 100 received" in check_invariants(t, with_played({"a": 101, "b": 49}), {},
                                                                             None)[0].detail
    assert "add up to 148" in check_invariants(t, with_played({"a": 99, "b": 49}), {}, None)[0].detail


def test_an_empty_run_breaks_nothing_and_a_checkers_fault_is_a_violation_not_a_crash() -> None:
    t = topo()
    assert check_invariants(t, Recorder(), {}, EndState("sim")) == []
    odd = Recorder(links=[LinkSample(S, "R1", "nowhere", 10, 1e6)])  # a link the topology does not have
    found = check_invariants(t, odd, {}, None)
    assert names(found) == ["link_rate"] and found[0].detail.startswith("could not be checked: ")


@pytest.mark.cpu_only
def test_counters_agree_packet_rows_by_the_last_samples_time() -> None:
    """Rows of packets that came after the last sample (a netns host hands its rows over after the run)
    are not counted; a sample read late (netns) may count rows up to its lateness."""
    t = topo()
    late_row = consistent_recorder(t)
    late_row.packets["a"].append((100, 0, S + MS))
    assert check_invariants(t, late_row, summary_of(late_row), None) == []
    counted = consistent_recorder(t)
    counted.flows = [FlowSample(s.t_ns, s.flow, s.sent + 1, s.received + 1, 0, 1000) if s.t_ns == S and s.flow == "a"
                     else s for s in counted.flows]
    counted.packets["a"].append((100, 0, S + MS))  # counted at 1 s, its row says 1.001 s
    sent = {"a": 101, "b": 50}
    found = check_invariants(t, counted, {}, end_state(t, sent, {"a": 101, "b": 50}, sample_lateness_ns=0))
    assert [v.name for v in found if "packets_a.csv" in v.detail] == ["counters_agree"]
    assert "100-101 rows" not in found[0].detail
    netns = end_state(t, sent, {"a": 101, "b": 50}, sample_lateness_ns=25 * MS)
    assert not [v for v in check_invariants(t, counted, {}, netns) if "packets_a.csv" in v.detail]


@pytest.mark.cpu_only
def test_counters_agree_a_row_stamped_before_the_sample_may_be_counted_after_it_in_netns() -> None:
    t = topo()
    rec = consistent_recorder(t)
    rec.packets["a"][-1] = (99, 0, S - MS)  # stamped 1 ms before the last sample
    rec.flows = [FlowSample(s.t_ns, s.flow, s.sent, s.received - 1, 0, 1000) if s.t_ns == S and s.flow == "a"
                 else s for s in rec.flows]  # ... and not yet taken when it was read
    sent = {"a": 100, "b": 50}
    sim = check_invariants(t, rec, {}, end_state(t, sent, {"a": 99, "b": 50}))
    assert [v.name for v in sim if "packets_a.csv" in v.detail] == ["counters_agree"]
    netns = end_state(t, sent, {"a": 99, "b": 50}, sample_lateness_ns=25 * MS)
    assert not [v for v in check_invariants(t, rec, {}, netns) if "packets_a.csv" in v.detail]


def test_host_capacity_counts_played_bits_per_flow_when_the_flows_say_them() -> None:
    """D plays 4 Mb/s: 500 kB/s. Flows of 1000 B that played 50 packets per 100 ms keep to it; 60 do not."""
    t = topo()

    def played(per_100ms: int) -> Recorder:
        rec = Recorder(buffers=[BufferSample(k * 100 * MS, "D", 0, 100, 2 * per_100ms * k, 0) for k in range(11)])
        rec.flows = [FlowSample(k * 100 * MS, n, per_100ms * k, per_100ms * k, 0, 1000, per_100ms * k)
                     for k in range(11) for n in "ab"]
        return rec

    assert [v for v in check_invariants(t, played(25), {}, None) if "played" in v.detail] == []
    found = [v for v in check_invariants(t, played(30), {}, None) if "played" in v.detail]
    assert [v.name for v in found] == ["host_capacity"] and " bits in " in found[0].detail


def test_two_rate_events_at_one_instant_act_in_the_files_order() -> None:
    """The simulator applies same-time events in file order: the rate allowed after them is the last one's."""
    topo = load_topology_text("""\
name: two-events
defaults:
  link: {rate: 20Mbps, delay: 1ms, buffer: 100}
nodes:
  S1: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: fixed, rate: 1Mbps}
events:
  - {at: 1s, link: [H1, S1], rate: 1000Mbps}
  - {at: 1s, link: [H1, S1], rate: 1Mbps}
""", "two-events.yaml")
    allowed, changes = I._rate_integral(topo, "H1", "S1")
    assert changes == 2
    assert allowed(2_000_000_000) - allowed(1_000_000_000) == pytest.approx(1_000_000)


# ---- the total goodput (summary.json's goodput_total_bps) --------------------------------------------
def goodput_summary(rec: Recorder, total: float, window: str = "second half") -> dict[str, Any]:
    """The consistent recording's summary over the run window 0.5-1 s: a took 50 packets of 1000 B
    (0.8 Mb/s), b 25 (0.4 Mb/s), both counted at their arrival (no played count)."""
    return summary_of(rec) | {"windows": {"run_s": [0.5, 1.0]}, "goodput_total_bps": total,
                              "flows": {"a": {"goodput_bps": 800_000, "window": window},
                                        "b": {"goodput_bps": 400_000, "window": window}}}


def goodput_violations(rec: Recorder, summary: dict[str, Any], text: str = MERGE) -> list[str]:
    return [v.detail for v in I.goodput_total(topo(text), rec, summary, None)]


def test_the_total_goodput_of_a_consistent_run_breaks_nothing() -> None:
    rec = consistent_recorder(topo())
    assert goodput_violations(rec, goodput_summary(rec, 1_200_000)) == []
    assert check_invariants(topo(), rec, goodput_summary(rec, 1_200_000), None) == []


@settings(max_examples=60, deadline=None)
@given(st.integers(-1_200_000, 20_000_000).filter(lambda d: abs(d) > 3))
def test_a_total_off_the_flows_measured_over_the_run_window_is_caught(delta: int) -> None:
    """Every flow measured over the run window: the total is their goodputs' sum, to the rounding."""
    rec = consistent_recorder(topo())
    assert goodput_violations(rec, goodput_summary(rec, 1_200_000 + delta))


@settings(max_examples=60, deadline=None)
@given(st.integers(1_440_002, 20_000_000))
def test_a_total_above_what_the_counters_allow_is_caught_even_with_lifetime_flows(total: int) -> None:
    """Flows over their lifetimes say nothing of the run window: the counters do. Between the samples
    around its ends (a: 40-100 packets, b: 20-50 over 0.4-1 s) at most 90 packets, 1.44 Mb/s."""
    rec = consistent_recorder(topo())
    said = goodput_violations(rec, goodput_summary(rec, total, window="lifetime"))
    assert any("the flows' counters say" in d for d in said)
    assert goodput_violations(rec, goodput_summary(rec, 1_440_000, window="lifetime")) == []


def test_a_total_above_the_receivers_playout_is_caught() -> None:
    """The counters themselves over the playout: 600 packets of a into D in 1 s, played out at 4 Mb/s,
    counted as played: 4.8 Mb/s is more than D's application can have taken."""
    rec = Recorder()
    for k in range(11):
        rec.flows.append(FlowSample(k * 100 * MS, "a", 60 * k, 60 * k, 0, 1000, 60 * k))
        rec.flows.append(FlowSample(k * 100 * MS, "b", 0, 0, 0, 1000, 0))
    rec.packets = {"a": [(i, 0, 1) for i in range(600)], "b": []}
    summary = summary_of(rec) | {"windows": {"run_s": [0.5, 1.0]}, "goodput_total_bps": 4_800_000,
                                 "flows": {"a": {"goodput_bps": 4_800_000, "window": "second half"},
                                           "b": {"goodput_bps": 0, "window": "second half"}}}
    said = goodput_violations(rec, summary)
    assert len(said) == 1 and "more than the receivers' links and playouts allowed" in said[0]
