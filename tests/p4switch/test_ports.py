"""Ports: interface specs, clear errors, and AF_PACKET ports on a veth pair in a namespace."""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from p4switch.link import InMemoryLink, LinkModel
from p4switch.ports import LinkPort, PacketSocketPort, PortError, parse_interface_spec
from p4switch.sched import RealtimeScheduler, VirtualScheduler

ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000
TEST_ETHERTYPE = b"\x88\xb5"  # IEEE local experimental: nothing else on the veth uses it


def test_parse_interface_spec() -> None:
    assert parse_interface_spec("1@veth1") == (1, "veth1")
    assert parse_interface_spec(" 12@s1-eth2 ") == (12, "s1-eth2")


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("veth1", "bad interface spec 'veth1': expected <port>@<interface>"),
        ("x@veth1", "bad interface spec 'x@veth1'"),
        ("1@", "bad interface spec '1@'"),
        ("600@veth1", "port 600 out of range"),
        ("1@averyveryverylongname", "not a valid interface name"),
    ],
)
def test_parse_interface_spec_errors_name_the_spec(spec: str, match: str) -> None:
    with pytest.raises(PortError, match=match):
        parse_interface_spec(spec)


def test_missing_interface_is_a_clear_error() -> None:
    sched = RealtimeScheduler()
    try:
        with pytest.raises(PortError, match="port 3: interface 'p4nosuchif0' does not exist"):
            PacketSocketPort(3, "p4nosuchif0", sched)
    finally:
        sched.stop()


def test_link_ports_exchange_frames_over_an_in_memory_link() -> None:
    s = VirtualScheduler()
    got: list[tuple[int, int, bytes]] = []
    p1 = LinkPort(1, "s1-eth1", on_receive=lambda n, f: got.append((s.now_ns(), n, f)))
    p2 = LinkPort(2, "s2-eth1", on_receive=lambda n, f: got.append((s.now_ns(), n, f)))
    assert p1.send(b"x" * 60) == 0  # not connected yet: dropped and counted
    assert p1.stats.tx_dropped == 1
    link = InMemoryLink(s, p1, p2, bitrate=1_000_000, delay_ns=5000)
    p1.attach(link)
    p2.attach(link)
    busy = p1.send(b"a" * 100)
    p2.send(b"b" * 100)
    s.run()
    assert busy == link.model.wire_time_ns(100)
    assert got == [(busy + 5000, 2, b"a" * 100), (busy + 5000, 1, b"b" * 100)]
    with pytest.raises(ValueError, match="not an end"):
        LinkPort(3, "x").attach(link)


# ---- AF_PACKET on a veth pair inside a private network namespace ------------------------

needs_netns = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2")


def in_netns(ns: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread that entered namespace ``ns`` (sockets it opens stay there)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    box: dict[str, Any] = {}

    def body() -> None:
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns failed")
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            os.close(fd)

    t = threading.Thread(target=body)
    t.start()
    t.join(10)
    if "error" in box:
        raise box["error"]
    return box["value"]


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def veth_ns() -> Iterator[str]:
    ns = f"p4swport-{uuid.uuid4().hex[:8]}"
    ip("netns", "add", ns)
    try:
        ip("-n", ns, "link", "add", "vport", "type", "veth", "peer", "name", "vpeer")
        ip("-n", ns, "link", "set", "vport", "up")
        ip("-n", ns, "link", "set", "vpeer", "up")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def frame(i: int, size: int = 64) -> bytes:
    dst, src = b"\x02\x00\x00\x00\x00\x02", b"\x02\x00\x00\x00\x00\x01"
    body = i.to_bytes(4, "big")
    return dst + src + TEST_ETHERTYPE + body + bytes(size - 18)


def is_test_frame(data: bytes) -> bool:
    return data[12:14] == TEST_ETHERTYPE


@pytest.mark.netns
@needs_netns
def test_packet_socket_port_receives_and_sends(veth_ns: str) -> None:
    sched = RealtimeScheduler()
    sched.start()
    got: list[tuple[int, bytes, str]] = []

    def on_receive(number: int, data: bytes) -> None:
        if is_test_frame(data):
            got.append((number, data, threading.current_thread().name))

    def open_both() -> tuple[PacketSocketPort, socket.socket]:
        port = PacketSocketPort(7, "vport", sched, on_receive=on_receive, batch=4,
                                link=LinkModel(bitrate_bps=10_000_000))
        peer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        peer.bind(("vpeer", ETH_P_ALL))
        peer.settimeout(2.0)
        return port, peer

    port, peer = in_netns(veth_ns, open_both)
    try:
        # peer -> port: more frames than one batch, all arrive in order on the loop thread
        n = 20
        for i in range(n):
            peer.send(frame(i))
        assert sched.wait_until(lambda: len(got) >= n, timeout=5)
        assert [int.from_bytes(d[14:18], "big") for _, d, _ in got] == list(range(n))
        assert {num for num, _, _ in got} == {7}
        assert {name for _, _, name in got} == {"p4switch-loop"}

        # port -> peer; the port's own transmissions are not received back
        before = len(got)
        wire = sched.run_sync(port.send, frame(99, 100))
        assert wire == LinkModel(bitrate_bps=10_000_000).wire_time_ns(100)
        for _ in range(50):
            data = peer.recv(65536)
            if is_test_frame(data) and int.from_bytes(data[14:18], "big") == 99:
                break
        else:
            pytest.fail("peer did not receive the frame sent by the port")
        assert data == frame(99, 100)
        # a frame the peer sends after it proves the port has processed everything before
        peer.send(frame(100))
        assert sched.wait_until(lambda: len(got) == before + 1, timeout=5)
        assert int.from_bytes(got[-1][1][14:18], "big") == 100
        assert port.stats.tx_frames == 1

        with pytest.raises(PortError, match="shorter than an Ethernet header"):
            sched.run_sync(port.send, b"\x00" * 5)
    finally:
        sched.run_sync(port.close)
        peer.close()
        sched.stop()


@pytest.mark.netns
@needs_netns
def test_port_is_promiscuous(veth_ns: str) -> None:
    """Frames to a MAC that is not the interface's still reach the switch port."""
    sched = RealtimeScheduler()
    sched.start()
    got: list[bytes] = []
    port = peer = None
    try:
        def open_both() -> tuple[PacketSocketPort, socket.socket]:
            p = PacketSocketPort(1, "vport", sched, on_receive=lambda n, d: is_test_frame(d) and got.append(d))
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind(("vpeer", ETH_P_ALL))
            return p, s

        port, peer = in_netns(veth_ns, open_both)
        out = subprocess.run(["ip", "-n", veth_ns, "-d", "link", "show", "vport"], capture_output=True,
                             text=True, timeout=10).stdout
        assert "promiscuity 1" in out
        peer.send(frame(5))  # dst 02:00:00:00:00:02 is not vport's address
        assert sched.wait_until(lambda: len(got) == 1, timeout=5)
    finally:
        if port is not None:
            sched.run_sync(port.close)
        if peer is not None:
            peer.close()
        sched.stop()
