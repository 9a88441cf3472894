"""alinea.p4 through the pipeline: routing, drops and their counters, the buffer model,
report clones and the report egress builds (docs/reference/dataplane.md, docs/reference/wire-format.md)."""

from __future__ import annotations

import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from controlplane.report import FRAME_BYTES, VERSION, Report, decode, encode
from p4switch.pipeline import CloneRequest
from p4switch.state import Lpm

from .helpers import ALINEA, Loaded, ingress, load, through

PACKET_IN_BYTES = 48  # 9 + 7 bits, two 32-bit and five 48-bit law parameters, two 32-bit counters

HOST_MAC = "02:00:00:00:00:09"
PORT_MAC = 0x020000000101
UP_MAC = 0x020000000201
NEXT_MAC = 0x020000000302
SELF_MAC = 0x020000000301


@pytest.fixture
def sw() -> Loaded:
    sw = load(ALINEA)
    sw.table("MyIngress.ipv4_lpm").insert({"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)},
                                          sw.action_id("MyIngress.ipv4_forward"), (NEXT_MAC, SELF_MAC, 2))
    return sw


def configure_port(sw: Loaded, port: int, capacity: int, interval_us: int, node_id: int = 7) -> None:
    sw.table("MyIngress.port_config").insert({"meta.model_port": port},
                                             sw.action_id("MyIngress.set_port"),
                                             (capacity, interval_us, node_id, PORT_MAC, UP_MAC))


def udp_frame(dst: str = "10.0.2.2", ttl: int = 64, payload: bytes = b"x" * 64) -> Ether:
    return Ether(dst="02:00:00:00:03:01", src=HOST_MAC) / IP(src="10.0.1.1", dst=dst, ttl=ttl) / \
        UDP(sport=1234, dport=5678) / Raw(payload)


def counter(sw: Loaded, name: str, index: int) -> int:
    return sw.state.counters_by_name[name].packets[index]


def register(sw: Loaded, name: str, port: int, data_class: int = 0) -> int:
    """The (port, class) cell of a per-class register (cell port * 8 + class)."""
    return sw.state.registers_by_name[name].cells[port * 8 + data_class]


def test_forwards_with_ttl_decremented_and_checksum_recomputed(sw: Loaded) -> None:
    frame = udp_frame(ttl=64)
    pkt, out = through(sw, bytes(frame), port=1)
    assert out is not None and pkt.std("egress_spec") == 2
    expected = frame.copy()
    expected[Ether].dst = "02:00:00:00:03:02"
    expected[Ether].src = "02:00:00:00:03:01"
    expected[IP].ttl = 63
    del expected[IP].chksum  # scapy recomputes it
    assert out == bytes(Ether(bytes(expected)))
    assert counter(sw, "MyIngress.rx", 1) == 1
    assert counter(sw, "MyEgress.tx", 2) == 1


def test_bad_ipv4_checksum_is_dropped_and_counted(sw: Loaded) -> None:
    frame = bytearray(bytes(udp_frame()))
    frame[24] ^= 0xFF  # corrupt the IPv4 header checksum
    pkt, out = through(sw, bytes(frame), port=1)
    assert out is None and pkt.std("checksum_error") == 1
    assert counter(sw, "MyIngress.drop_bad_checksum", 1) == 1


def test_no_route_is_dropped_and_counted(sw: Loaded) -> None:
    pkt, out = through(sw, bytes(udp_frame(dst="192.0.2.1")), port=3)
    assert out is None and pkt.marked_to_drop
    assert counter(sw, "MyIngress.drop_no_route", 3) == 1
    assert counter(sw, "MyIngress.drop_no_route", 1) == 0


def test_ttl_expiry_is_dropped_and_counted(sw: Loaded) -> None:
    pkt, out = through(sw, bytes(udp_frame(ttl=1)), port=1)
    assert out is None
    assert counter(sw, "MyIngress.drop_ttl_expired", 1) == 1


def report_frame(port_field: int = 4) -> bytes:
    return encode(Report(node_id=9, port=port_field, occupancy=5, capacity=200, timestamp_us=1, seq=1,
                         interval_us=1000, dst_mac=0x020000000301, src_mac=0x020000000401))


def test_report_from_a_non_neighbour_port_is_dropped_and_counted(sw: Loaded) -> None:
    pkt, out = through(sw, report_frame(), port=4)
    assert out is None
    assert counter(sw, "MyIngress.drop_spoofed_report", 4) == 1


def test_report_from_a_neighbour_goes_to_the_cpu_with_packet_in(sw: Loaded) -> None:
    law = (150_000, 800_000, 8_000_000, 500_000, 24_000_000, 1_800_000, 40_000)
    sw.table("MyIngress.report_ingress").insert({"standard_metadata.ingress_port": 4},
                                                sw.action_id("MyIngress.report_to_cpu"), law)
    frame = report_frame()
    pkt, out = through(sw, frame, port=4)
    assert pkt.std("egress_spec") == 255 and out is not None
    # packet_in header: ingress_port (9 bits), 7 zero bits, then the port's law parameters
    assert int.from_bytes(out[:2], "big") == 4 << 7
    assert struct.unpack("!II", out[2:10]) == law[:2]
    assert [int.from_bytes(out[10 + 6 * i:16 + 6 * i], "big") for i in range(5)] == list(law[2:])
    assert struct.unpack("!II", out[40:48]) == (0, 0)  # fwd_pkts, deq_pkts of port 4: nothing sent there yet
    assert out[PACKET_IN_BYTES:] == frame


def test_admission_counts_occupancy_and_drops_overflow(sw: Loaded) -> None:
    configure_port(sw, 1, capacity=2, interval_us=10**9)
    pkts = [ingress(sw, bytes(udp_frame()), 1, now_us=100 + i) for i in range(3)]
    assert [p.get("meta.admitted") for p in pkts] == [1, 1, 0]
    assert [p.marked_to_drop for p in pkts] == [False, False, True]
    assert register(sw, "occupancy", 1) == 2
    assert register(sw, "overflow_drops", 1) == 1
    assert counter(sw, "MyIngress.drop_overflow", 1) == 1
    # the admitted packets leave: egress releases their slots
    for p in pkts[:2]:
        sw.pipeline.run_egress(p, 2, 500)
    assert register(sw, "occupancy", 1) == 0


def test_packets_from_unmodelled_ports_are_not_admitted(sw: Loaded) -> None:
    pkt = ingress(sw, bytes(udp_frame()), 5)
    assert pkt.get("meta.modelled") == 0 and pkt.get("meta.admitted") == 0
    assert not pkt.marked_to_drop and register(sw, "occupancy", 5) == 0


def test_clone_requested_only_when_the_report_interval_elapsed(sw: Loaded) -> None:
    configure_port(sw, 1, capacity=100, interval_us=1000)
    first = ingress(sw, bytes(udp_frame()), 1, now_us=5000)
    soon = ingress(sw, bytes(udp_frame()), 1, now_us=5500)
    later = ingress(sw, bytes(udp_frame()), 1, now_us=6000)
    assert first.clone_request == CloneRequest("I2E", 1001, 1)
    assert soon.clone_request is None
    assert later.clone_request == CloneRequest("I2E", 1001, 1)
    assert register(sw, "last_report_ts", 1) == 6000


def test_report_clone_is_built_in_egress_and_truncated(sw: Loaded) -> None:
    configure_port(sw, 1, capacity=200, interval_us=1000, node_id=7)
    pl = sw.pipeline
    pkt = ingress(sw, bytes(udp_frame()), 1, now_us=5000)
    assert pkt.clone_request is not None
    clone = pl.copy_for_request(pkt, pkt.clone_request)
    assert clone.std("instance_type") == 1
    assert clone.get("meta.admitted") == 0  # not in the field list: reset
    assert clone.get("meta.capacity") == 200  # in the field list: kept
    pl.run_egress(clone, 1, 5100)
    frame = pl.deparse(clone)[: clone.truncate_len]
    assert len(frame) == FRAME_BYTES == clone.truncate_len
    r = decode(frame)
    assert (r.dst_mac, r.src_mac) == (UP_MAC, PORT_MAC)
    assert (r.version, r.msg_type, r.flags, r.node_id, r.port, r.capacity, r.seq, r.drops, r.interval_us) == (
        VERSION, 1, 0, 7, 1, 200, 1, 0, 1000)
    assert r.occupancy == register(sw, "occupancy", 1) == 1  # the original packet holds a slot
    assert r.timestamp_us == 5100
    assert register(sw, "report_seq", 1) == 1


@pytest.mark.parametrize("length", [0, 1, 13, 14, 20, 33, 34, 41])
def test_truncated_frames_never_raise(sw: Loaded, length: int) -> None:
    data = bytes(udp_frame())[:length]
    pkt, out = through(sw, data, port=1)
    if length < 14:
        assert sw.pipeline.error_name(pkt.std("parser_error")) == "PacketTooShort"
    assert pkt.marked_to_drop and out is None


def test_garbage_frames_never_raise(sw: Loaded) -> None:
    import random

    rng = random.Random(7)
    for _ in range(300):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
        if rng.random() < 0.5 and len(data) > 14:
            data = data[:12] + rng.choice([b"\x08\x00", b"\x88\xb5"]) + data[14:]
        through(sw, data, port=rng.randrange(0, 512))


def _classify(sw: Loaded, prefix: int, data_class: int) -> None:
    sw.table("MyIngress.dst_class").insert({"hdr.ipv4.dstAddr": Lpm(prefix, 32)},
                                           sw.action_id("MyIngress.set_class"), (data_class,))


def test_a_classed_destination_takes_its_priority_queue_and_its_own_buffer_cell(sw: Loaded) -> None:
    """Per-destination classes (docs/howto/fabric.md): class c on priority c, occupancy and admission per
    (port, class), so a full class does not refuse another's packets."""
    configure_port(sw, 1, capacity=1, interval_us=10**9)
    _classify(sw, 0x0A000203, 2)  # 10.0.2.3: class 2
    plain = ingress(sw, bytes(udp_frame(dst="10.0.2.2")), 1, now_us=100)
    classed = [ingress(sw, bytes(udp_frame(dst="10.0.2.3")), 1, now_us=101 + i) for i in range(2)]
    assert plain.std("priority") == 0 and not plain.marked_to_drop  # no entry: class 0, priority 0
    assert [p.std("priority") for p in classed] == [2, 2]
    assert [p.marked_to_drop for p in classed] == [False, True]  # class 2's one slot, then full
    assert register(sw, "occupancy", 1) == 1 and register(sw, "occupancy", 1, 2) == 1
    assert register(sw, "overflow_drops", 1, 2) == 1 and register(sw, "overflow_drops", 1) == 0
    sw.pipeline.run_egress(classed[0], 2, 500)
    assert register(sw, "occupancy", 1, 2) == 0 and register(sw, "occupancy", 1) == 1
    assert register(sw, "deq_pkts", 2, 2) == 1 and register(sw, "fwd_pkts", 2, 2) == 1


def test_a_report_names_its_class_in_the_flags_top_bits(sw: Loaded) -> None:
    configure_port(sw, 1, capacity=200, interval_us=1000)
    _classify(sw, 0x0A000203, 5)
    plain = ingress(sw, bytes(udp_frame(dst="10.0.2.2")), 1, now_us=5000)
    classed = ingress(sw, bytes(udp_frame(dst="10.0.2.3")), 1, now_us=5001)
    assert plain.clone_request is not None and classed.clone_request is not None  # each class's own interval
    flags = []
    for pkt in (plain, classed):
        clone = sw.pipeline.copy_for_request(pkt, pkt.clone_request)
        sw.pipeline.run_egress(clone, 1, 5100)
        frame = sw.pipeline.deparse(clone)[: clone.truncate_len]
        flags.append(frame[15])
    assert flags == [0, 5 << 5]
    assert register(sw, "report_seq", 1) == register(sw, "report_seq", 1, 5) == 1


REPORT_RECIRC_PORT = 510  # alinea.p4's, where classed report clones go


def _recirculated_report(sw: Loaded, top: int) -> tuple[object, object]:
    """A class-2 arrival's report clone through egress at REPORT_RECIRC_PORT with report_path's entry:
    (the clone after egress, the recirculated copy after ingress)."""
    configure_port(sw, 1, capacity=200, interval_us=1000)
    _classify(sw, 0x0A000203, 2)
    sw.table("MyEgress.report_path").insert({"standard_metadata.egress_port": REPORT_RECIRC_PORT},
                                            sw.action_id("MyEgress.recirculate_report"), (top,))
    pkt = ingress(sw, bytes(udp_frame(dst="10.0.2.3")), 1, now_us=5000)
    clone = sw.pipeline.copy_for_request(pkt, pkt.clone_request)
    sw.pipeline.run_egress(clone, REPORT_RECIRC_PORT, 5010)
    assert clone.recirculate is not None
    back = sw.pipeline.copy_for_recirculate(clone, now_us=5011)
    sw.pipeline.run_ingress(back)
    return clone, back


def test_with_classes_a_report_is_recirculated_onto_the_top_priority_of_its_port(sw: Loaded) -> None:
    """BMv2 gives a clone priority 0, below every class: report_path recirculates the built report
    and ingress sends it out of the reported port on the reports' own priority (docs/howto/fabric.md)."""
    _, back = _recirculated_report(sw, top=4)
    assert not back.marked_to_drop and back.clone_request is None
    assert back.std("egress_spec") == 1 and back.std("priority") == 4
    sw.pipeline.run_egress(back, 1, 5020)
    frame = sw.pipeline.deparse(back)[: back.truncate_len]
    assert len(frame) == FRAME_BYTES
    rep = decode(frame)
    assert rep.port == 1 and rep.flags >> 5 == 2 and rep.seq == 1
    assert register(sw, "report_seq", 1, 2) == 1  # built once, not again on its way out
    assert register(sw, "occupancy", 1, 2) == 1  # the report holds no slot of the buffer model


def test_a_recirculated_report_is_not_read_as_a_packet_out_on_the_cpu_port(sw: Loaded) -> None:
    """p4switch keeps a recirculated packet's ingress port (BMv2 resets it to 0): a report a poll
    triggered comes back 'from' the CPU port and must still parse as a frame."""
    clone, _ = _recirculated_report(sw, top=4)
    back = sw.pipeline.copy_for_recirculate(clone, now_us=5011)
    back.set_std("ingress_port", 255)
    sw.pipeline.run_ingress(back)
    assert back.std("egress_spec") == 1 and back.std("priority") == 4 and not back.marked_to_drop


def test_without_report_path_a_report_clone_leaves_its_port_unrecirculated(sw: Loaded) -> None:
    """One class: no report_path entry, the clone is the report, out of its session's port."""
    configure_port(sw, 1, capacity=200, interval_us=1000)
    pkt = ingress(sw, bytes(udp_frame()), 1, now_us=5000)
    clone = sw.pipeline.copy_for_request(pkt, pkt.clone_request)
    sw.pipeline.run_egress(clone, 1, 5010)
    assert clone.recirculate is None
    assert decode(sw.pipeline.deparse(clone)[: clone.truncate_len]).port == 1
