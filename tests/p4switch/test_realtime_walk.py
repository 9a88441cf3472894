"""The real-time switch walks its packets in the engine (hbh_engine.V1Walk), in-process
between two network namespaces (needs root).

Why in-process: the subprocess tests (tests/switch/test_netns_switch.py) prove the p4switch
command end to end; here the switch object is at hand, so a test can also see *where* the
packets were walked (the engine's counts) and what the walk handed to Python: the report clones
of a modelled port (the PRE's clone sessions are the Python walk's) and a neighbour's report
as a packet-in. Every wait is bounded; the namespaces and the switch are closed in the fixture.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from controlplane import dataplane_config as dp
from controlplane.p4runtime_client import InProcessController, clone_session
from p4switch.switch import Switch, SwitchOptions
from tests.switch import netns as N
from tests.switch.simnet import ALINEA, ip_int, neighbour_report, parse_report, program

pytestmark = pytest.mark.netns
pytest.importorskip("hbh_engine")

SWITCH_MAC = {1: "02:00:00:00:01:01", 2: "02:00:00:00:01:02"}
HOST_IP = {1: "10.0.1.1", 2: "10.0.2.1"}
GATEWAY = {1: "10.0.1.254", 2: "10.0.2.254"}
MARK_PORT = 47200  # UDP destination port of this file's frames
NODE_ID = 5


@dataclass
class Bed:
    topo: N.Topology
    switch: Switch
    ctl: InProcessController

    def host(self, port: int) -> N.Host:
        return self.topo.hosts[f"h{port}"]

    def on_loop(self, fn, *args):  # noqa: ANN001, ANN202 - the switch's state belongs to its loop thread
        return self.switch.sched.run_sync(fn, *args, timeout=10)


@contextlib.contextmanager
def open_bed(**options: Any) -> Iterator[Bed]:
    """Two host namespaces, a switch between them with alinea.p4 routed (``options``: more
    SwitchOptions); everything closed again, also on failure."""
    N.require_netns()
    topo = N.Topology()
    sw = None
    try:
        for p in (1, 2):
            topo.add_host(f"h{p}", p, HOST_IP[p], 24, GATEWAY[p], SWITCH_MAC[p])
        opts = SwitchOptions(interfaces=[(p, topo.hosts[f"h{p}"].switch_if) for p in (1, 2)], grpc_addr=None,
                             thrift_port=None, seed=1, **options)
        sw = Switch.from_args(opts)
        ctl = sw.sched.run_sync(InProcessController, sw.p4rt)
        b = Bed(topo, sw, ctl)
        prog = program(str(ALINEA))  # compiled once per session, pushed as a controller would
        b.on_loop(ctl.set_pipeline, prog.p4info, prog.device_config)
        for p in (1, 2):
            b.on_loop(dp.add_route, ctl, ip_int(f"10.0.{p}.0"), 24, p, dp.mac_int(b.host(p).mac),
                      dp.mac_int(SWITCH_MAC[p]))
        yield b
    finally:
        if sw is not None:
            sw.close()
        topo.close()


@pytest.fixture
def bed() -> Iterator[Bed]:
    with open_bed() as b:
        yield b


def udp_frame(b: Bed, seq: int) -> bytes:
    from scapy.all import IP, UDP, Ether

    return bytes(Ether(dst=SWITCH_MAC[1], src=b.host(1).mac) / IP(src=HOST_IP[1], dst=HOST_IP[2], ttl=64)
                 / UDP(sport=40000, dport=MARK_PORT) / (seq.to_bytes(4, "big") + bytes(32)))


def is_ours(frame: bytes) -> bool:
    return len(frame) >= 42 and frame[12:14] == b"\x08\x00" and int.from_bytes(frame[36:38], "big") == MARK_PORT


def is_report(frame: bytes) -> bool:
    return len(frame) >= 14 and frame[12:14] == b"\x88\xb5"


def send_paced(b: Bed, frames: list[bytes], gap_s: float) -> None:
    tx = N.raw_socket(b.host(1).name, "eth0")
    try:
        for f in frames:
            tx.send(f)
            time.sleep(gap_s)
    finally:
        tx.close()


def test_frames_are_routed_by_the_engines_walk(bed: Bed) -> None:
    count = 50
    rx = N.raw_socket(bed.host(2).name, "eth0")
    try:
        send_paced(bed, [udp_frame(bed, i) for i in range(count)], 0.001)
        got = N.collect(rx, is_ours, 30.0, max_frames=10_000, want=count)
    finally:
        rx.close()
    seqs = [int.from_bytes(f[42:46], "big") for _, f in got]
    assert seqs == list(range(count))  # all of them, in order
    for _, f in got:
        assert f[22] == 63 and f[0:6] == bytes.fromhex(bed.host(2).mac.replace(":", ""))
    # both read in one turn of the switch's loop: a frame the kernel sends on its own (IPv6 neighbour
    # discovery) between two turns would otherwise count in one and not yet in the other
    counts, stats = bed.on_loop(lambda: (bed.switch.walk.counts(), dict(bed.switch.core.stats)))
    assert counts.get("rx", 0) >= count and counts.get("tx", 0) >= count
    assert counts["rx"] == stats["rx"]  # every frame received was walked in the engine, none in Python


def test_report_clones_and_packet_ins_are_handed_to_python(bed: Bed) -> None:
    interval_us = 20_000
    ctl = bed.ctl
    bed.on_loop(lambda: (ctl.insert_entry("MyIngress.port_config", {"meta.model_port": 1}, "MyIngress.set_port",
                                          {"capacity_pkts": 200, "report_interval_us": interval_us,
                                           "node_id": NODE_ID, "port_mac": dp.mac_int(SWITCH_MAC[1]),
                                           "upstream_mac": dp.mac_int(bed.host(1).mac)}),
                         ctl.insert(clone_session(1001, [(1, 1)])), dp.accept_reports(ctl, 2)))
    rx = N.raw_socket(bed.host(1).name, "eth0")
    try:
        send_paced(bed, [udp_frame(bed, i) for i in range(100)], 0.002)  # about 0.2 s of arrivals
        reports = N.collect(rx, is_report, 30.0, max_frames=1000, want=3)
    finally:
        rx.close()
    parsed = [parse_report(f) for _, f in reports]
    assert len(parsed) >= 3  # one per interval at most; the I2E clones went through the Python walk
    assert all((r.node_id, r.port, r.capacity, r.interval_us) == (NODE_ID, 1, 200, interval_us) for r in parsed)
    assert [r.seq for r in parsed] == list(range(parsed[0].seq, parsed[0].seq + len(parsed)))

    report = neighbour_report(occupancy=150)
    report = SWITCH_MAC_BYTES[2] + bytes.fromhex(bed.host(2).mac.replace(":", "")) + report[12:]
    tx = N.raw_socket(bed.host(2).name, "eth0")
    try:
        tx.send(report)
    finally:
        tx.close()
    assert bed.switch.sched.wait_until(lambda: len(ctl.of("packet")) >= 1, timeout=30.0)
    packet_ins = bed.on_loop(ctl.of, "packet")
    assert len(packet_ins) == 1 and packet_ins[0].payload.endswith(report[14:])
    counts = bed.on_loop(bed.switch.walk.counts)
    assert counts.get("rx", 0) >= 101


SWITCH_MAC_BYTES = {p: bytes.fromhex(m.replace(":", "")) for p, m in SWITCH_MAC.items()}


def test_frames_left_unfinished_by_the_sender_keep_their_place_among_the_others(bed: Bed) -> None:
    """Kernel UDP from h1 leaves its checksum to the device (the engine hands such a frame back
    to the port's offload handling); raw frames between them are walked in the engine directly.
    The frames leave in the order they came, the kernel's with their checksums finished."""
    from tests.runtime.test_ports import l4_checksum_ok

    count = 10
    rx = N.raw_socket(bed.host(2).name, "eth0")
    raw = N.raw_socket(bed.host(1).name, "eth0")
    kernel = N.udp_socket(bed.host(1).name)
    try:
        for i in range(count):
            if i % 2:
                kernel.sendto(i.to_bytes(4, "big") + bytes(32), (HOST_IP[2], MARK_PORT))
            else:
                raw.send(udp_frame(bed, i))
        got = N.collect(rx, is_ours, 30.0, max_frames=10_000, want=count)
    finally:
        for s in (rx, raw, kernel):
            s.close()
    assert [int.from_bytes(f[42:46], "big") for _, f in got] == list(range(count))
    assert all(l4_checksum_ok(f) for _, f in got)
    port = bed.switch.ports[1]
    assert bed.on_loop(lambda: port.stats.rx_csum_completed) == count // 2  # the premise: offload was on
    assert bed.on_loop(bed.switch.walk.counts)["rx"] >= count  # (and h2's ICMP replies to the kernel's UDP)
