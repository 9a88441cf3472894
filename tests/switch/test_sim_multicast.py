"""alinea.p4's multicast on a whole switch in virtual time: replication through the PRE and the
ingress buffer a multicast packet holds until its last copy leaves (docs/howto/multicast.md).

Port 1 feeds a group copied to ports 2 and 3; port 3's queue is slow, so every packet's copy
there is its last: the buffer of port 1 must count exactly the packets whose port-3 copy has not
left, whatever the order the copies leave in.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, Ether

from controlplane import dataplane_config as dp
from tests.switch.simnet import HOST_MAC, SWITCH_MAC, configure_alinea, sim_switch, udp_frame

US = 1000
MS = 1_000_000
CELL_1 = 1 * 8  # (port 1, class 0)
GROUP_IP = "239.1.0.1"
PORTS = (1, 2, 3)
MACS = {p: (0x02_00_00_00_00_00 + p, 0x02_00_00_00_01_00 + p) for p in PORTS}  # port -> (next hop, switch port)


def _switch(capacity: int, slow_pps: int, fast_pps: int = 0, copies: tuple[int, ...] = (2, 3)):  # noqa: ANN202
    net = sim_switch(ports=PORTS)
    configure_alinea(net.ctl, ports=(1, 2), modelled={1: (capacity, 1_000_000)})
    net.ctl.write(*dp.multicast_updates(net.ctl, [(dp.ip_int(GROUP_IP), 1, [(p, *MACS[p]) for p in copies])]))
    tm = net.switch.tm
    for p in copies:
        tm.set_queue_depth(p, 4096)
    tm.set_queue_rate(3, slow_pps)
    if fast_pps:
        tm.set_queue_rate(2, fast_pps)
    return net


def _group_frame(ttl: int = 64) -> bytes:
    frame = udp_frame(1, 2, ttl=ttl)
    pkt = Ether(frame)
    pkt[IP].dst = GROUP_IP
    del pkt[IP].chksum
    return bytes(pkt)


def test_every_receiver_port_gets_a_copy_with_its_next_hops_addresses() -> None:
    net = _switch(capacity=64, slow_pps=0)
    for i in range(10):
        net.hosts[1].send_at(i * 10 * US, _group_frame(ttl=9))
    net.hosts[1].send_at(200 * US, udp_frame(1, 2))  # unicast beside it: routed as ever
    net.sched.run()
    assert len(net.hosts[3].got) == 10 and len(net.hosts[2].got) == 11
    for port in (2, 3):
        for _, frame in net.hosts[port].got[:10]:
            pkt = Ether(frame)
            assert (dp.mac_int(pkt.dst), dp.mac_int(pkt.src)) == MACS[port]
            assert pkt[IP].dst == GROUP_IP and pkt[IP].ttl == 8
            chk = pkt[IP].chksum
            del pkt[IP].chksum
            assert IP(bytes(pkt[IP]))[IP].chksum == chk
    unicast = Ether(net.hosts[2].got[-1][1])
    assert (dp.mac_int(unicast.dst), dp.mac_int(unicast.src)) == (HOST_MAC[2], SWITCH_MAC[2])
    occupancy = net.switch.state.registers_by_name["occupancy"]
    assert occupancy.read(CELL_1) == 0


@settings(max_examples=12, deadline=None)
@given(slow_pps=st.sampled_from([500, 1000, 3000]), fast_pps=st.sampled_from([0, 2000, 20000]),
       gap_us=st.integers(20, 400), n=st.integers(5, 60), capacity=st.integers(2, 30))
def test_a_packet_holds_its_ingress_slot_until_its_last_copy_leaves(slow_pps: int, fast_pps: int, gap_us: int,
                                                                      n: int, capacity: int) -> None:
    """At every arrival: occupancy = admitted packets less those whose two copies have both left
    (per port FIFO: the min of the ports' departures); a packet is admitted exactly while that is
    below the capacity; in the end every slot is free and drained counts every admitted packet."""
    net = _switch(capacity, slow_pps, fast_pps)
    tm = net.switch.tm
    occupancy = net.switch.state.registers_by_name["occupancy"]
    drained = net.switch.state.registers_by_name["drained_pkts"]
    overflow = net.switch.state.counters_by_name["MyIngress.drop_overflow"]
    port_in = net.switch.ports[1]
    admitted = 0
    for i in range(n):
        net.sched.run_until((i + 1) * gap_us * US)
        both_left = min(tm.stats(2).dequeued, tm.stats(3).dequeued)
        assert occupancy.read(CELL_1) == admitted - both_left
        assert drained.read(CELL_1) == both_left
        full = admitted - both_left >= capacity
        drops = overflow.read(1)[0]
        port_in.receive(_group_frame())
        assert overflow.read(1)[0] - drops == (1 if full else 0)
        admitted += 0 if full else 1
    net.sched.run()
    assert len(net.hosts[2].got) == len(net.hosts[3].got) == admitted
    assert occupancy.read(CELL_1) == 0 and drained.read(CELL_1) == admitted


def test_a_full_ring_of_pending_packets_refuses_as_an_overflow() -> None:
    """More multicast packets pending on one port than its ring holds (MCAST_RING_BITS = 10):
    the one whose place is still taken is dropped and counted, never mixed with another's copies."""
    ring = 1024
    net = _switch(capacity=4 * ring, slow_pps=10)
    overflow = net.switch.state.counters_by_name["MyIngress.drop_overflow"]
    port_in = net.switch.ports[1]
    for i in range(ring + 5):
        net.sched.run_until((i + 1) * US)
        port_in.receive(_group_frame())
    assert overflow.read(1)[0] == 5
    occupancy = net.switch.state.registers_by_name["occupancy"]
    assert occupancy.read(CELL_1) == ring - net.switch.tm.stats(3).dequeued


def test_the_copies_the_program_holds_are_refused_beyond_four() -> None:
    net = sim_switch(ports=PORTS)
    with pytest.raises(ValueError, match="5 copies"):
        dp.multicast_updates(net.ctl, [(1, 1, [(p, 0, 0) for p in range(1, 6)])])
