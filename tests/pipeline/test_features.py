"""tests/p4programs/features.p4 through the pipeline: the behaviours its header comment
lists (stacks, unions, enums, value sets, lookahead, verify, selects with masks and
ranges, ternary/range/optional priorities, direct and indexed meters, digests, hash,
random, multicast, resubmit, recirculate, exit, log_msg/assert)."""

from __future__ import annotations

import random
import struct
import zlib

import pytest
from scapy.contrib.mpls import MPLS
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4switch.state import DigestConfig, Lpm, MeterConfig

from .helpers import PROGRAMS, Loaded, ingress, load, through

FEATURES = PROGRAMS / "features.p4"
SRC, DST = "02:00:00:00:00:09", "02:00:00:00:00:01"


@pytest.fixture
def sw() -> Loaded:
    return load(FEATURES)


def ipv4(src: str = "10.0.0.1", dst: str = "10.9.9.9", **kw) -> Ether:
    return Ether(dst=DST, src=SRC) / IP(src=src, dst=dst, **kw)


def tos_of(out: bytes) -> int:
    return Ether(out)[IP].tos


def add_host(sw: Loaded, dst: int, port: int) -> None:
    sw.table("MyIngress.host").insert({"hdr.ipv4.dstAddr": dst}, sw.action_id("MyIngress.host_forward"),
                                      (0x020000000077, port))


# --------------------------------------------------------------------------- IPv4


def test_host_hit_rewrites_and_decrements_ttl(sw: Loaded) -> None:
    add_host(sw, 0x0A090909, 7)
    frame = ipv4(ttl=5) / UDP() / Raw(b"abc")
    pkt, out = through(sw, bytes(frame), 1)
    assert pkt.std("egress_spec") == 7 and out is not None
    got = Ether(out)
    assert got.dst == "02:00:00:00:00:77" and got[IP].ttl == 4
    recomputed = got[IP].copy()
    del recomputed.chksum
    assert IP(bytes(recomputed)).chksum == got[IP].chksum


def test_no_route_drops(sw: Loaded) -> None:
    pkt, out = through(sw, bytes(ipv4() / UDP()), 1)
    assert out is None and pkt.marked_to_drop


def test_ttl_one_drops_even_with_a_route(sw: Loaded) -> None:
    add_host(sw, 0x0A090909, 7)
    pkt, out = through(sw, bytes(ipv4(ttl=1) / UDP()), 1)
    assert out is None


@pytest.mark.parametrize("proto", [252, 253, 254, 255])
def test_experimental_protocols_drop_via_select_mask(sw: Loaded, proto: int) -> None:
    add_host(sw, 0x0A090909, 7)
    pkt, out = through(sw, bytes(ipv4(proto=proto) / Raw(b"z" * 8)), 1)
    assert pkt.get("meta.experimental") == 1 and out is None


def test_acl_priorities_and_classes(sw: Loaded) -> None:
    add_host(sw, 0x0A090909, 7)
    # 10.x TCP to a low port: denied (entry 1)
    _, out = through(sw, bytes(ipv4(src="10.1.1.1") / TCP(dport=80)), 1)
    assert out is None
    # 10.x TCP to 5001 matches entries 1? no (port range) -> entry 2: DSCP 46, ECN kept
    _, out = through(sw, bytes(ipv4(src="10.1.1.1", tos=3) / TCP(dport=5001)), 1)
    assert out is not None and tos_of(out) == (46 << 2) | 3
    # 192.168.x UDP: entry 3 -> DSCP 10
    _, out = through(sw, bytes(ipv4(src="192.168.4.4", tos=1) / UDP(dport=53)), 1)
    assert out is not None and tos_of(out) == (10 << 2) | 1
    # 192.168.x UDP to 5500: both entry 2 and 3 match; the earlier (2) wins
    _, out = through(sw, bytes(ipv4(src="192.168.4.4") / UDP(dport=5500)), 1)
    assert out is not None and tos_of(out) == 46 << 2
    # other traffic: unchanged class
    _, out = through(sw, bytes(ipv4(src="172.16.0.1", tos=8) / UDP(dport=53)), 1)
    assert out is not None and tos_of(out) == 8


def test_non_first_fragment_skips_the_acl(sw: Loaded) -> None:
    add_host(sw, 0x0A090909, 7)
    pkt, out = through(sw, bytes(ipv4(src="10.1.1.1", proto=6, frag=100) / Raw(b"x" * 20)), 1)
    assert pkt.get("meta.is_fragment") == 1 and out is not None


def test_union_member_extracted_by_protocol(sw: Loaded) -> None:
    pkt = ingress(sw, bytes(ipv4() / TCP(sport=11, dport=22)), 1)
    assert pkt.is_valid("hdr.l4.tcp") and not pkt.is_valid("hdr.l4.udp")
    assert (pkt.get("meta.l4_sport"), pkt.get("meta.l4_dport")) == (11, 22)
    pkt = ingress(sw, bytes(ipv4() / UDP(sport=33, dport=44)), 1)
    assert pkt.is_valid("hdr.l4.udp") and not pkt.is_valid("hdr.l4.tcp")


def test_lpm_direct_counter_and_direct_meter(sw: Loaded) -> None:
    lpm = sw.table("MyIngress.lpm")
    entry = lpm.insert({"hdr.ipv4.dstAddr": Lpm(0x0A090000, 16)}, sw.action_id("MyIngress.forward"),
                       (0x020000000055, 5), meter_config=MeterConfig(cir=1, cburst=1, pir=2, pburst=2))
    colors, outs = [], []
    for _ in range(3):
        pkt, out = through(sw, bytes(ipv4() / UDP()), 1, now_us=1000)
        colors.append(pkt.get("meta.color"))
        outs.append(out is not None)
    assert colors == [0, 1, 2]  # green, yellow, red at the same instant
    assert outs == [True, True, False]  # red is dropped
    assert entry.direct_counter is not None and entry.direct_counter.packets == 3


def test_ecmp_hash_keeps_a_flow_on_one_port(sw: Loaded) -> None:
    sw.table("MyIngress.lpm").insert({"hdr.ipv4.dstAddr": Lpm(0x0A090000, 16)}, sw.action_id("MyIngress.ecmp"),
                                     (10, 4))
    ports = set()
    for sport in range(40):
        flow = bytes(ipv4() / UDP(sport=sport, dport=9))
        a, _ = through(sw, flow, 1)
        b, _ = through(sw, flow, 2)
        assert a.std("egress_spec") == b.std("egress_spec")
        ports.add(a.std("egress_spec"))
    assert ports <= {10, 11, 12, 13} and len(ports) > 1


def test_lpm_multicast_action(sw: Loaded) -> None:
    sw.table("MyIngress.lpm").insert({"hdr.ipv4.dstAddr": Lpm(0x0A090000, 16)}, sw.action_id("MyIngress.mcast"),
                                     (9,))
    pkt = ingress(sw, bytes(ipv4() / UDP()), 1)
    assert pkt.std("mcast_grp") == 9


# --------------------------------------------------------------------------- L2


def test_l2_learning_digest_and_flood(sw: Loaded) -> None:
    buf = sw.state.digests_by_name["learn_t"]
    buf.configure(DigestConfig(max_list_size=1))
    frame = bytes(Ether(dst="02:00:00:00:00:aa", src="02:00:00:00:00:bb", type=0x0806) / Raw(b"\0" * 28))
    pkt = ingress(sw, frame, 4)
    assert pkt.digests == [(buf.id, (0x0200000000BB, 4))]
    assert pkt.std("mcast_grp") == 1
    lists = buf.poll(10**9)
    assert [d.data for d in lists] == [((0x0200000000BB, 4),)]
    # known source: no digest; known destination: unicast
    sw.table("MyIngress.smac").insert({"hdr.ethernet.srcAddr": 0x0200000000BB}, sw.action_id("NoAction"))
    sw.table("MyIngress.dmac").insert({"hdr.ethernet.dstAddr": 0x0200000000AA},
                                      sw.action_id("MyIngress.l2_forward"), (6,))
    pkt = ingress(sw, frame, 4)
    assert pkt.digests == [] and pkt.std("egress_spec") == 6 and pkt.std("mcast_grp") == 0


def test_replica_to_the_ingress_port_is_dropped_in_egress(sw: Loaded) -> None:
    frame = bytes(Ether(dst="02:00:00:00:00:aa", src="02:00:00:00:00:bb", type=0x0806) / Raw(b"\0" * 28))
    pkt = ingress(sw, frame, 4)
    outs = {}
    for port in (3, 4, 5):
        copy = sw.pipeline.copy_packet(pkt)
        copy.set_std("instance_type", 5)
        sw.pipeline.run_egress(copy, port, 2000, egress_rid=1)
        outs[port] = copy.marked_to_drop
    assert outs == {3: False, 4: True, 5: False}
    assert pkt.std("instance_type") == 0  # the original is untouched


# --------------------------------------------------------------------------- MPLS


def mpls_frame(*labels: int, inner: bool = True) -> bytes:
    f = Ether(dst=DST, src=SRC, type=0x8847)
    for i, lbl in enumerate(labels):
        f = f / MPLS(label=lbl, s=int(i == len(labels) - 1), ttl=9, cos=5)
    if inner:
        f = f / IP(src="1.1.1.1", dst="2.2.2.2") / UDP()
    return bytes(f)


def test_mpls_pop_to_ipv4_found_by_lookahead(sw: Loaded) -> None:
    pkt, out = through(sw, mpls_frame(100), 1)
    assert pkt.is_valid("hdr.ipv4")  # the parser looked ahead at the version nibble
    assert pkt.std("egress_spec") == 3 and out is not None
    got = Ether(out)
    assert got.type == 0x0800 and got[IP].dst == "2.2.2.2"


def test_mpls_pop_keeps_remaining_labels(sw: Loaded) -> None:
    pkt, out = through(sw, mpls_frame(100, 7), 1)
    assert out is not None
    got = Ether(out)
    assert got.type == 0x8847 and got[MPLS].label == 7 and got[MPLS].s == 1


def test_mpls_swap_and_push(sw: Loaded) -> None:
    pkt, out = through(sw, mpls_frame(200), 1)
    assert pkt.std("egress_spec") == 4
    m = Ether(out)[MPLS]
    assert (m.label, m.ttl) == (300, 8)
    pkt, out = through(sw, mpls_frame(400), 1)
    assert pkt.std("egress_spec") == 5
    top = Ether(out)[MPLS]
    assert (top.label, top.cos, top.s, top.ttl) == (500, 5, 0, 9)
    assert (top.payload.label, top.payload.s) == (400, 1)


def test_mpls_unknown_label_drops(sw: Loaded) -> None:
    _, out = through(sw, mpls_frame(999), 1)
    assert out is None


def test_too_many_labels_is_stack_out_of_bounds(sw: Loaded) -> None:
    frame = mpls_frame(1, 2, 3, 4)
    pkt, out = through(sw, frame, 1)
    assert sw.pipeline.error_name(pkt.std("parser_error")) == "StackOutOfBounds"
    assert pkt.std("egress_spec") == 14
    # the headers extracted so far stay valid: the three labels are emitted again
    assert out == frame


def test_frame_ending_inside_a_header_is_packet_too_short(sw: Loaded) -> None:
    frame = bytes(ipv4() / UDP())[:20]
    pkt, out = through(sw, frame, 1)
    assert sw.pipeline.error_name(pkt.std("parser_error")) == "PacketTooShort"
    assert pkt.std("egress_spec") == 15 and out == frame


# --------------------------------------------------------------------------- PROBE


def probe(op: int, a: int = 0, b: int = 0, version: int = 1, ethertype: int = 0x88B6) -> bytes:
    hdr = struct.pack("!BBHIIBB", version << 4, op, a, b, 0, 0, 0)
    return bytes.fromhex("020000000001" "020000000009") + ethertype.to_bytes(2, "big") + hdr + b"tail"


def result(out: bytes) -> tuple[int, int]:
    _, _, _, _, res, status, _ = struct.unpack("!BBHIIBB", out[14:28])
    return res, status


def run_probe(sw: Loaded, op: int, a: int = 0, b: int = 0, port: int = 6) -> tuple[int, int]:
    pkt, out = through(sw, probe(op, a, b), port)
    assert pkt.std("egress_spec") == port and out is not None
    assert out.endswith(b"tail")
    return result(out)


def test_probe_echo_slice_cond(sw: Loaded) -> None:
    assert run_probe(sw, 1, b=0xDEADBEEF) == (0xDEADBEEF, 0x80)
    assert run_probe(sw, 2, a=0x1234, b=0xABCD5678) == (0xA6781234, 0x80)
    assert run_probe(sw, 3, a=7, b=0x10005) == (7, 0x80)
    assert run_probe(sw, 3, a=7, b=0x10009) == (9, 0x80)


def test_probe_hash_is_crc32_of_the_fields(sw: Loaded) -> None:
    a, b = 0x1234, 0xABCDEF01
    assert run_probe(sw, 4, a=a, b=b) == (zlib.crc32(struct.pack("!HI", a, b)), 0x80)


def test_probe_random_in_range(sw: Loaded) -> None:
    values = {run_probe(sw, 5)[0] for _ in range(30)}
    assert all(1000 <= v <= 1999 for v in values) and len(values) > 1


def test_probe_indexed_meter_colours(sw: Loaded) -> None:
    sw.state.meters_by_name["MyIngress.probe_meter"].configure(3, MeterConfig(cir=1, cburst=1, pir=2, pburst=2))
    statuses = [run_probe(sw, 6, a=3)[1] for _ in range(3)]
    assert statuses == [0x80, 0x81, 0x82]
    assert run_probe(sw, 6, a=4)[1] == 0x80  # unconfigured cell: green


def test_probe_exit_skips_the_status_marker(sw: Loaded) -> None:
    assert run_probe(sw, 9) == (0, 0x01)


def test_probe_log_and_assert(sw: Loaded) -> None:
    pkt, out = through(sw, probe(10, a=1, b=2), 6)
    assert result(out) == (0x10C, 0x80)
    assert pkt.logs == ["probe LOG", "probe LOG a=1 b=2"]
    assert pkt.assert_failures == 0


def test_probe_unknown_op_takes_the_default_action(sw: Loaded) -> None:
    assert run_probe(sw, 77) == (0, 0xFF)


def test_probe_bad_version_is_a_verify_error(sw: Loaded) -> None:
    pkt, _ = through(sw, probe(1, version=2), 6)
    assert sw.pipeline.error_name(pkt.std("parser_error")) == "BadProbeVersion"
    assert pkt.std("egress_spec") == 13


def test_value_set_makes_another_ethertype_a_probe(sw: Loaded) -> None:
    frame = probe(1, b=5, ethertype=0x9999)
    pkt = ingress(sw, frame, 6)
    assert not pkt.is_valid("hdr.probe")
    sw.pipeline.value_sets["MyParser.probe_alias"].add(0x9999)
    pkt, out = through(sw, frame, 6)
    assert pkt.is_valid("hdr.probe") and result(out) == (5, 0x80)


@pytest.mark.parametrize("a, runs", [(0, 1), (1, 1), (2, 2), (3, 3), (9, 3)])
def test_probe_resubmit_runs_ingress_again(sw: Loaded, a: int, runs: int) -> None:
    pl = sw.pipeline
    pkt = ingress(sw, probe(7, a=a), 6)
    n = 1
    while pkt.resubmit is not None:
        pkt = pl.copy_for_resubmit(pkt)
        assert pkt.std("instance_type") == 6
        pl.run_ingress(pkt)
        n += 1
    assert n == runs
    pl.run_egress(pkt, pkt.std("egress_spec"), 5000)
    assert result(pl.deparse(pkt)) == (runs, 0x80)


@pytest.mark.parametrize("a, runs", [(0, 1), (2, 2), (3, 3), (7, 3)])
def test_probe_recirculate_runs_egress_again(sw: Loaded, a: int, runs: int) -> None:
    pl = sw.pipeline
    pkt = ingress(sw, probe(8, a=a), 6)
    k = 0
    while True:
        pl.run_egress(pkt, pkt.std("egress_spec"), 5000)
        k += 1
        if pkt.recirculate is None:
            break
        pkt = pl.copy_for_recirculate(pkt)
        assert pkt.std("instance_type") == 4
        pl.run_ingress(pkt)
    assert k == runs
    assert result(pl.deparse(pkt)) == (runs, 0x80 | runs)


def test_random_garbage_never_raises(sw: Loaded) -> None:
    rng = random.Random(3)
    heads = [b"\x08\x00", b"\x88\x47", b"\x88\xb6", b"\x86\xdd"]
    for _ in range(300):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 70)))
        through(sw, bytes(12) + rng.choice(heads) + body, rng.randrange(0, 16))
