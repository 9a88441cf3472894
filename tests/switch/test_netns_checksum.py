"""Kernel UDP and TCP through a p4switch process with the hosts' offloads left on (needs root).

Why: a host's kernel hands a veth its UDP/TCP with the checksum unfinished (CHECKSUM_PARTIAL)
and its TCP in GSO super-frames; the switch must finish both (runtime/ports.py) or the
receiving host drops the datagrams (``UdpInCsumErrors``) and the super-frames cannot be sent.
The proof is end to end: ordinary kernel sockets in h1 and h2, alinea.p4 routing between them
(routes over P4Runtime), nothing turned off with ethtool. The namespaces, the switch and its
routes come from the ``bed`` fixture of test_netns_switch.py (here ``routed_bed``).
"""

from __future__ import annotations

import re
import socket
import threading

import pytest

from tests.runtime.test_ports import l4_checksum_ok
from tests.switch import netns as N
from tests.switch import test_netns_switch as base
from tests.switch.test_netns_switch import HOST_IP, Bed

pytestmark = pytest.mark.netns
routed_bed = base.bed  # that module's ``bed`` fixture (p4switch, h1, h2, routes), under this name here

UDP_PORT = 47100
TCP_PORT = 47101


def snmp(ns: str, proto: str) -> dict[str, int]:
    """The ``Udp:``/``Tcp:`` counters of /proc/net/snmp inside namespace ``ns``."""
    lines = [ln.split() for ln in N.run("cat", "/proc/net/snmp", ns=ns).splitlines() if ln.startswith(proto + ":")]
    names, values = lines[0][1:], lines[1][1:]
    return dict(zip(names, map(int, values), strict=True))


def port_offload_log(text: str, port: int) -> tuple[int, int, int]:
    """(checksums completed, GSO frames, segments) from the port's summary line at exit."""
    m = re.search(rf"port {port} \(\S+\): checksums completed (\d+), GSO frames (\d+) cut into (\d+) segments", text)
    assert m is not None, text
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def is_udp_to(port: int, frame: bytes) -> bool:
    return len(frame) >= 42 and frame[12:14] == b"\x08\x00" and frame[23] == 17 and \
        int.from_bytes(frame[36:38], "big") == port


def test_kernel_udp_with_checksum_offload_on_reaches_the_other_host(routed_bed: Bed) -> None:
    bed = routed_bed
    h1, h2 = bed.host(1), bed.host(2)
    rx = N.udp_socket(h2.name, (HOST_IP[2], UDP_PORT))
    tx = N.udp_socket(h1.name)
    seen = N.raw_socket(h1.name, "eth0")  # h1's own frames as its kernel sent them
    payloads = [b"x", b"hello" * 20, bytes(range(256)) * 5 + b"odd"]
    got: list[bytes] = []
    try:
        errors_before = snmp(h2.name, "Udp")["InCsumErrors"]
        for p in payloads:
            tx.sendto(p, (HOST_IP[2], UDP_PORT))
        sent = N.collect(seen, lambda f: is_udp_to(UDP_PORT, f), 30.0, want=len(payloads))
        rx.settimeout(5)
        for _ in payloads:
            try:
                got.append(rx.recv(65536))
            except TimeoutError:
                break
    finally:
        for s in (rx, tx, seen):
            s.close()
    # the premise: h1 left the checksum to the device (offload on)
    assert len(sent) == len(payloads) and not any(l4_checksum_ok(f) for _, f in sent)
    assert got == payloads  # h2's kernel accepted them: the switch finished the checksums
    assert snmp(h2.name, "Udp")["InCsumErrors"] == errors_before
    assert bed.switch.stop() == 0
    completed, _, _ = port_offload_log(bed.switch.output(), 1)
    assert completed >= len(payloads)


def test_kernel_tcp_bulk_echo_with_tso_on(routed_bed: Bed) -> None:
    """256 KiB each way: h1's TCP sends GSO super-frames, which the switch cuts into MSS segments."""
    bed = routed_bed
    h1, h2 = bed.host(1), bed.host(2)
    data = bytes(range(256)) * 1024
    errors_before = {h.name: snmp(h.name, "Tcp")["InCsumErrors"] for h in (h1, h2)}

    def listen() -> socket.socket:
        s = socket.socket()
        s.bind((HOST_IP[2], TCP_PORT))
        s.listen(1)
        s.settimeout(10)
        return s

    def client() -> socket.socket:
        s = socket.socket()
        s.settimeout(10)
        return s

    server, conn = N.in_netns(h2.name, listen), N.in_netns(h1.name, client)
    problems: list[BaseException] = []

    def echo() -> None:
        try:
            peer, _ = server.accept()
            with peer:
                peer.settimeout(10)
                left = len(data)
                while left:
                    chunk = peer.recv(65536)
                    if not chunk:
                        break
                    peer.sendall(chunk)
                    left -= len(chunk)
        except BaseException as exc:  # reported by the test thread
            problems.append(exc)

    def send_all() -> None:
        try:
            conn.sendall(data)
        except BaseException as exc:
            problems.append(exc)

    echoer = threading.Thread(target=echo, name="echo")
    echoer.start()
    sender = threading.Thread(target=send_all, name="sender")
    back = bytearray()
    try:
        conn.connect((HOST_IP[2], TCP_PORT))
        sender.start()
        while len(back) < len(data):
            chunk = conn.recv(65536)
            if not chunk:
                break
            back += chunk
    finally:
        conn.close()
        server.close()
        echoer.join(15)
        if sender.ident is not None:
            sender.join(15)
    assert problems == []
    assert bytes(back) == data
    for h in (h1, h2):
        assert snmp(h.name, "Tcp")["InCsumErrors"] == errors_before[h.name]
    assert bed.switch.stop() == 0
    for port in (1, 2):
        completed, gso_frames, segments = port_offload_log(bed.switch.output(), port)
        assert completed > 0  # handshake, ACKs and short segments
        if port == 1:  # the bulk sender's side: it handed over super-frames
            assert gso_frames > 0 and segments > gso_frames
