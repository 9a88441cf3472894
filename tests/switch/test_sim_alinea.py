"""alinea.p4 on a whole switch in virtual time: forwarding, reports, admission, queue rates.

The pipeline, routes and clone sessions come through the in-process P4Runtime core, frames
travel over in-memory links, time is virtual (so rates and intervals are exact properties).
"""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2
from scapy.all import IP, UDP, Ether

from controlplane.params import LawParams, law_to_action
from controlplane.report import VERSION
from p4switch.p4runtime import P4RuntimeError
from p4switch.switch import SwitchOptions
from tests.switch.simnet import (
    HOST_MAC,
    NODE_ID,
    SWITCH_MAC,
    configure_alinea,
    neighbour_report,
    parse_report,
    sim_switch,
    udp_frame,
)

US = 1000
MS = 1_000_000
CELL_1 = 1 * 8  # the per-class registers' cell of (port 1, class 0)


def test_forwarding_decrements_ttl_rewrites_macs_and_keeps_a_valid_checksum() -> None:
    net = sim_switch()
    configure_alinea(net.ctl)
    sent = udp_frame(1, 2, ttl=17, payload=b"hello" * 20)
    net.hosts[1].send_at(0, sent)
    net.sched.run()
    (_, got), = net.hosts[2].got
    pkt, orig = Ether(got), Ether(sent)
    assert pkt[IP].ttl == 16
    assert pkt.dst == "02:00:00:00:00:02" and pkt.src == "02:00:00:00:01:02"
    assert pkt[UDP].load == orig[UDP].load
    chk = pkt[IP].chksum
    del pkt[IP].chksum
    assert IP(bytes(pkt[IP]))[IP].chksum == chk  # scapy recomputes: the switch's checksum is right
    assert net.hosts[1].got == []  # not modelled: no report


def test_reports_go_back_out_the_arrival_port_at_the_configured_interval() -> None:
    interval_us = 1000
    net = sim_switch()
    configure_alinea(net.ctl, modelled={1: (200, interval_us)})
    gap_ns = 100 * US
    n = 100  # 10 ms of traffic, one packet every 100 µs
    for i in range(n):
        net.hosts[1].send_at(i * gap_ns, udp_frame(1, 2))
    net.sched.run()
    reports = [(t, parse_report(f)) for t, f in net.hosts[1].frames(0x88B5)]
    assert len(net.hosts[2].got) == n
    assert len(reports) >= 9
    for _, r in reports:
        assert (r.version, r.msg_type, r.node_id, r.port) == (VERSION, 1, NODE_ID, 1)
        assert (r.capacity, r.interval_us) == (200, interval_us)
        assert (r.dst_mac, r.src_mac) == (HOST_MAC[1], SWITCH_MAC[1])
        assert r.flags == 0 and r.drops == 0
    assert [r.seq for _, r in reports] == list(range(1, len(reports) + 1))
    stamps = [r.timestamp_us for _, r in reports]
    for a, b in zip(stamps, stamps[1:]):
        # at the first arrival after the interval: never earlier, at most one packet gap later
        assert interval_us <= b - a < interval_us + gap_ns // US + 10


def test_a_report_poll_fills_the_gaps_of_a_slow_neighbour_and_leaves_an_idle_port_silent() -> None:
    interval_us = 1000
    net = sim_switch()
    configure_alinea(net.ctl, modelled={1: (200, interval_us)})

    def poll(port: int) -> None:
        net.ctl.send_packet_out(bytes(14), egress_port=port, report_poll=1, poll_class=0, _pad=0)

    def at(intervals: float, fn, *args) -> None:  # noqa: ANN001
        net.sched.call_at(round(intervals * interval_us * US), fn, *args)

    at(0.5, poll, 1)  # nothing has arrived yet: an idle port stays silent
    at(1, net.hosts[1].send_at, interval_us * US, udp_frame(1, 2))  # an arrival: report 1
    at(2.5, poll, 1)  # 1.5 intervals since the last report: a poll waits for two
    at(3, poll, 1)  # still under two (report 1 came after the frame's link delay)
    at(3.1, poll, 1)  # two: report 2
    at(3.2, poll, 1)
    at(3.3, poll, 2)  # port 2 is not modelled: nothing
    at(32.5, poll, 1)  # 31.5 intervals after the arrival: still live, report 3
    at(33.5, net.hosts[2].send_at, round(33.5 * interval_us * US), udp_frame(2, 1))  # traffic the other way
    at(35, poll, 1)  # 34 intervals after port 1's arrival: idle again, silent
    net.sched.run()
    reports = [(t, parse_report(f)) for t, f in net.hosts[1].frames(0x88B5)]
    assert [(r.port, r.seq, r.capacity) for _, r in reports] == [(1, 1, 200), (1, 2, 200), (1, 3, 200)]
    stamps = [r.timestamp_us for _, r in reports]
    assert interval_us <= stamps[0] < interval_us + 100  # the arrival, after its link's delay
    assert stamps[1:] == [round(3.1 * interval_us), round(32.5 * interval_us)]  # the polls, at once
    assert len(net.hosts[2].got) == 1  # the polls went nowhere
    assert len(net.hosts[1].got) == 4  # three reports and the frame from host 2


def test_admission_drops_exactly_when_occupancy_reaches_capacity() -> None:
    capacity = 8
    net = sim_switch()
    configure_alinea(net.ctl, modelled={1: (capacity, 1_000_000)})
    net.switch.tm.set_queue_rate(2, 1000)  # 1 packet/ms: the queue builds up
    occupancy = net.switch.state.registers_by_name["occupancy"]
    dropped = net.switch.state.counters_by_name["MyIngress.drop_overflow"]
    port_in = net.switch.ports[1]
    decisions = []
    t = 0
    for _ in range(60):
        t += 50 * US  # 20 packets/ms offered, 1 packet/ms served
        net.sched.run_until(t)
        occ_before = occupancy.read(CELL_1)
        drops_before = dropped.read(1)[0]
        port_in.receive(udp_frame(1, 2))  # arrives at the switch now
        decisions.append((occ_before, dropped.read(1)[0] - drops_before))
        assert occupancy.read(CELL_1) <= capacity
    assert any(d for _, d in decisions) and not all(d for _, d in decisions)
    for occ_before, was_dropped in decisions:
        assert was_dropped == (1 if occ_before >= capacity else 0)
    net.sched.run()
    admitted = sum(1 for _, d in decisions if not d)
    assert len(net.hosts[2].got) == admitted
    assert occupancy.read(CELL_1) == 0  # every admitted packet released its slot


def _arrival_rate(times_ns: list[int]) -> float:
    return (len(times_ns) - 1) * 1e9 / (times_ns[-1] - times_ns[0])


@pytest.mark.parametrize(("first", "second"), [(1000, 4000), (5000, 2000)])
@pytest.mark.parametrize("model", ["bmv2", "shaper"])
def test_set_queue_rate_changes_the_egress_rate(first: int, second: int, model: str) -> None:
    """The shaper respaces what is queued at once; BMv2 spaces the packets queued after the
    change (those before keep their departure times), so there the second burst comes later."""
    net = sim_switch(options=SwitchOptions(seed=1, queue_model=model))
    configure_alinea(net.ctl)  # port 1 not modelled: no admission drops
    tm = net.switch.tm
    tm.set_queue_depth(2, 1000)
    tm.set_queue_rate(2, first)
    change = 50 * MS
    later = change if model == "shaper" else 200 * MS  # bmv2: after the first 200 are queued and gone
    for i in range(200):
        net.hosts[1].send_at(i * 10 * US, udp_frame(1, 2))  # 100 kpps offered
    for i in range(200):
        net.hosts[1].send_at(later + i * 10 * US, udp_frame(1, 2))
    net.sched.run_until(change)
    before = [t for t, _ in net.hosts[2].got]
    tm.set_queue_rate(2, second)
    net.sched.run()
    after = [t for t, _ in net.hosts[2].got][len(before):]
    if model == "bmv2":  # the first burst keeps the first rate to its end
        rest = 200 - len(before)
        if rest > 5:
            assert _arrival_rate(after[:rest]) == pytest.approx(first, rel=0.01)
        after = after[rest:]
    assert _arrival_rate(before[5:]) == pytest.approx(first, rel=0.01)
    assert _arrival_rate(after[5:]) == pytest.approx(second, rel=0.01)
    assert len(net.hosts[2].got) == 400


def test_reports_from_neighbours_reach_the_controller_and_spoofed_ones_are_counted() -> None:
    net = sim_switch()
    configure_alinea(net.ctl, neighbours=(2,))
    report = neighbour_report()
    net.hosts[2].send_at(0, report)   # neighbour-facing port: to the controller
    net.hosts[1].send_at(US, report)  # a host port: spoofed, dropped
    net.sched.run()
    (pin,) = net.ctl.of("packet")
    assert pin.payload == report
    assert net.ctl.names.packet_in_metadata(pin) == {"ingress_port": 2, "_pad": 0, **law_to_action(LawParams()),
                                                     "fwd_pkts": 0, "deq_pkts": 0}
    assert net.ctl.read_counter("MyIngress.drop_spoofed_report", 1)[0] == 1
    assert net.ctl.read_counter("MyIngress.drop_spoofed_report", 2)[0] == 0
    assert net.hosts[1].got == [] and net.hosts[2].got == []


def test_packet_out_leaves_unchanged_on_the_named_port() -> None:
    net = sim_switch()
    frame = udp_frame(1, 2, ttl=5)
    net.ctl.send_packet_out(frame, egress_port=2, report_poll=0, poll_class=0, _pad=0)
    net.sched.run()
    assert [f for _, f in net.hosts[2].got] == [frame]
    assert net.ctl.read_counter("MyIngress.rx", 255)[0] == 1


def test_pipeline_reload_resets_state_and_bad_configs_are_refused() -> None:
    net = sim_switch()
    configure_alinea(net.ctl)
    net.hosts[1].send_at(0, udp_frame(1, 2))
    net.sched.run()
    assert net.ctl.read_counter("MyIngress.rx", 1)[0] == 1
    old = net.switch.state
    net.ctl.set_pipeline(net.program.p4info, net.program.device_config)
    assert net.switch.state is not old
    assert net.ctl.read_counter("MyIngress.rx", 1)[0] == 0
    net.hosts[1].send_at(net.sched.now_ns(), udp_frame(1, 2))
    net.sched.run()
    assert len(net.hosts[2].got) == 1  # no route any more: dropped
    # a P4Info that does not belong to the program
    wrong = p4info_pb2.P4Info()
    wrong.CopyFrom(net.program.p4info)
    wrong.tables[0].preamble.id ^= 1
    with pytest.raises(P4RuntimeError, match="does not match the program") as exc:
        net.ctl.set_pipeline(wrong, net.program.device_config)
    assert exc.value.code == 3  # INVALID_ARGUMENT
    with pytest.raises(P4RuntimeError, match="BMv2 JSON"):
        net.ctl.set_pipeline(net.program.p4info, b'{"program": "x.p4"}')
    with pytest.raises(P4RuntimeError, match="not UTF-8"):
        net.ctl.set_pipeline(net.program.p4info, b"\xff\xfe")
    broken = net.program.device_config.replace(b"hdr.ipv4.ttl - 8w1", b"hdr.ipv4.ttl - nosuch")
    with pytest.raises(P4RuntimeError, match=r"alinea\.p4:\d+:\d+: error: unknown identifier 'nosuch'"):
        net.ctl.set_pipeline(net.program.p4info, broken)
    assert net.ctl.read_counter("MyIngress.rx", 1)[0] == 1  # the running pipeline was kept


def test_frames_before_any_pipeline_are_dropped_and_counted() -> None:
    from p4switch.switch import Switch
    from runtime.sched import VirtualScheduler

    sw = Switch(VirtualScheduler())
    sw.inject(1, udp_frame(1, 2))
    assert sw.core.drop_counts() == {"no_pipeline": 1}


def test_a_dropped_packet_still_triggers_its_report_clone() -> None:
    net = sim_switch()
    configure_alinea(net.ctl, ports=(2,), modelled={1: (200, 0)})  # no route back to 10.0.1.0/24 ...
    net.hosts[1].send_at(0, udp_frame(1, 1))  # ... so this one is dropped (no route)
    net.sched.run()
    (_, frame), = net.hosts[1].got
    report = parse_report(frame)
    assert (report.port, report.seq, report.occupancy) == (1, 1, 0)
    assert net.ctl.read_counter("MyIngress.drop_no_route", 1)[0] == 1
    assert net.switch.core.drop_counts() == {"ingress_mark_to_drop": 1}


def test_a_reports_packet_in_carries_the_queue_counters_of_its_port() -> None:
    """fwd_pkts[p] - deq_pkts[p] is what is routed and still queued toward port p (docs/reference/dataplane.md)."""
    net = sim_switch()
    configure_alinea(net.ctl, modelled={1: (8, 1_000_000)}, neighbours=(2,))
    net.switch.tm.set_queue_rate(2, 1000)  # 1 packet/ms out of port 2
    report = neighbour_report()
    for i in range(12):  # 12 offered, 8 admitted (capacity 8): the 4 dropped are not counted
        net.hosts[1].send_at(i * 10 * US, udp_frame(1, 2))
    net.hosts[2].send_at(int(4.5 * MS), report)  # 4 have left by then (stamped 1, 2, 3, 4 ms: BMv2)
    net.hosts[2].send_at(20 * MS, report)  # all have left
    net.sched.run()
    first, last = (net.ctl.names.packet_in_metadata(p) for p in net.ctl.of("packet"))
    assert (first["fwd_pkts"], first["deq_pkts"]) == (8, 4)
    assert (last["fwd_pkts"], last["deq_pkts"]) == (8, 8)
    assert len(net.hosts[2].got) == 8



def test_fwd_routed_counts_what_enters_a_queue_and_tx_routed_what_leaves_it_in_the_same_bytes() -> None:
    """MyIngress.fwd_routed counts a routed frame when it is queued for its egress port, MyEgress.tx_routed when it
    leaves, both at the length it arrived with (a routed frame keeps its length): while the queue holds a backlog
    their difference is the backlog's frames and bytes, and once it has drained they agree (the agent's mean
    frame of what its queue stamps, controlplane/frame_size.py)."""
    net = sim_switch(options=SwitchOptions(seed=1, queue_model="bmv2"))
    configure_alinea(net.ctl)
    net.switch.tm.set_queue_depth(2, 1000)
    net.switch.tm.set_queue_rate(2, 1000)  # 1 ms a packet: the burst waits
    sizes = [1448] * 10 + [200] * 30
    frames = [udp_frame(1, 2, payload=b"x" * (size - 42)) for size in sizes]
    for i, frame in enumerate(frames):
        net.hosts[1].send_at(i * 10 * US, frame)
    net.sched.run_until(5 * MS)
    entered, left = net.ctl.read_counter("MyIngress.fwd_routed", 2), net.ctl.read_counter("MyEgress.tx_routed", 2)
    assert entered == (len(frames), sum(map(len, frames)))
    backlog = (entered[0] - left[0], entered[1] - left[1])
    assert backlog[0] > 20 and backlog[1] == sum(map(len, frames[left[0]:]))  # FIFO: the newest frames wait
    net.sched.run()
    assert net.ctl.read_counter("MyEgress.tx_routed", 2) == entered
