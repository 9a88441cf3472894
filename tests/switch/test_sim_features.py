"""features.p4 through the whole switch: multicast, meters, digests, resubmit, recirculate.

What these check is the v1model architecture around the pipeline (p4switch.v1model_arch):
the PRE replicates, instance types and egress_rid reach egress, the digest reaches the
controller as a P4Runtime DigestList, resubmitted and recirculated packets re-enter ingress.
"""

from __future__ import annotations

import struct

from p4.v1 import p4runtime_pb2 as pb
from scapy.all import IP, UDP, Ether

from controlplane.p4runtime_client import multicast_group
from tests.switch.simnet import FEATURES, ip_int, sim_switch

PORTS = (1, 2, 3)
US = 1000


def l2_frame(src: int, dst: int = 0x02_00_00_00_00_FF, ethertype: int = 0x9000) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ethertype.to_bytes(2, "big") + bytes(46)


def ipv4_frame(dst_ip: str, ttl: int = 9) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:aa", src="02:00:00:00:00:01") / IP(src="192.0.2.1", dst=dst_ip, ttl=ttl)
                 / UDP(sport=40000, dport=7) / (b"m" * 30))


def probe_frame(op: int, a: int, b: int = 0) -> bytes:
    body = struct.pack("!BBHIIBB", 0x10, op, a, b, 0, 0, 0)
    return bytes(6) + (2).to_bytes(6, "big") + b"\x88\xb6" + body


def probe_fields(frame: bytes) -> tuple[int, int]:
    _vr, _op, _a, _b, result, status, _pad = struct.unpack_from("!BBHIIBB", frame, 14)
    return result, status


def test_l2_flood_multicasts_to_every_other_port_and_learns_the_source_by_digest() -> None:
    net = sim_switch(FEATURES, PORTS)
    net.ctl.insert(multicast_group(1, [(p, 0) for p in PORTS]))
    digest = net.ctl.names.digests["learn_t"]
    net.ctl.insert(pb.Entity(digest_entry=pb.DigestEntry(
        digest_id=digest.preamble.id, config=pb.DigestEntry.Config(max_timeout_ns=0, max_list_size=1,
                                                                    ack_timeout_ns=1_000_000_000))))
    frame = l2_frame(src=0x02_00_00_00_00_0B)
    net.hosts[1].send_at(0, frame)
    net.sched.run()
    assert [f for _, f in net.hosts[2].got] == [frame]
    assert [f for _, f in net.hosts[3].got] == [frame]
    assert net.hosts[1].got == []  # egress drops the copy back to the ingress port
    assert net.switch.core.drop_counts() == {"egress_mark_to_drop": 1}
    (dl,) = net.ctl.of("digest")
    assert dl.digest_id == digest.preamble.id
    (member,) = dl.data
    mac, port = (int.from_bytes(m.bitstring, "big") for m in member.struct.members)
    assert (mac, port) == (0x02_00_00_00_00_0B, 1)


def test_missing_multicast_group_drops_and_counts() -> None:
    net = sim_switch(FEATURES, PORTS)
    net.hosts[1].send_at(0, l2_frame(src=0x02_00_00_00_00_0C))
    net.sched.run()
    assert all(h.got == [] for h in net.hosts.values())
    assert net.switch.core.drop_counts() == {"mcast_group_missing": 1}


def test_lpm_mcast_action_replicates_with_ttl_decremented() -> None:
    net = sim_switch(FEATURES, PORTS)
    net.ctl.insert(multicast_group(2, [(2, 5), (3, 6)]))
    net.ctl.insert_entry("MyIngress.lpm", {"hdr.ipv4.dstAddr": (ip_int("239.1.0.0"), 16)}, "MyIngress.mcast",
                         {"grp": 2})
    net.hosts[1].send_at(0, ipv4_frame("239.1.2.3", ttl=9))
    net.sched.run()
    for p in (2, 3):
        (_, got), = net.hosts[p].got
        assert Ether(got)[IP].ttl == 8
    assert net.hosts[1].got == []


def test_direct_meter_drops_red_packets_of_a_burst() -> None:
    net = sim_switch(FEATURES, PORTS)
    te = net.ctl.names.table_entry("MyIngress.lpm", {"hdr.ipv4.dstAddr": (ip_int("10.9.0.0"), 16)},
                                   "MyIngress.forward", {"dmac": 0x02_00_00_00_00_22, "port": 2})
    te.meter_config.CopyFrom(pb.MeterConfig(cir=1, cburst=2, pir=1, pburst=4))  # packets/s, packets
    net.ctl.insert(te)
    for i in range(10):
        net.hosts[1].send_at(i * 10 * US, ipv4_frame("10.9.1.1"))
    net.sched.run()
    # a burst within 100 µs: 2 green + 2 yellow pass, the rest are red and dropped
    assert len(net.hosts[2].got) == 4
    assert net.switch.core.drop_counts() == {"ingress_mark_to_drop": 6}


def test_resubmit_reruns_ingress_with_the_field_list() -> None:
    net = sim_switch(FEATURES, PORTS)
    for a, expected in ((1, 1), (2, 2), (3, 3), (9, 3)):
        net.hosts[2].got.clear()
        net.hosts[2].send_at(net.sched.now_ns(), probe_frame(7, a))
        net.sched.run()
        (_, reply), = net.hosts[2].got  # back out of the port it came in on
        result, status = probe_fields(reply)
        assert result == expected and status & 0x80
    assert net.switch.core.stats["resubmit"] == 0 + 1 + 2 + 2


def test_recirculate_reruns_the_pipeline_on_the_deparsed_packet() -> None:
    net = sim_switch(FEATURES, PORTS)
    for a, k in ((1, 1), (2, 2), (3, 3), (7, 3)):
        net.hosts[3].got.clear()
        net.hosts[3].send_at(net.sched.now_ns(), probe_frame(8, a))
        net.sched.run()
        (_, reply), = net.hosts[3].got
        assert probe_fields(reply) == (k, 0x80 | k)
