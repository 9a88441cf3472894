"""Ports: interface specs, clear errors, and AF_PACKET ports on a veth pair in a namespace."""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import socket
import struct
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from runtime.link import InMemoryLink, LinkModel
from runtime.offload import (
    VIRTIO_NET_HDR_F_NEEDS_CSUM,
    VIRTIO_NET_HDR_GSO_ACCECN,
    VIRTIO_NET_HDR_GSO_TCPV4,
    VIRTIO_NET_HDR_GSO_TCPV6,
    VIRTIO_NET_HDR_GSO_UDP,
    VIRTIO_NET_HDR_GSO_UDP_L4,
    OffloadError,
    VirtioNetHdr,
    complete_checksum,
    crc32c,
    segment,
)
from runtime.ports import LinkPort, PacketSocketPort, PortError, parse_interface_spec
from runtime.sched import RealtimeScheduler, VirtualScheduler

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


def raw_peer() -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind(("vpeer", ETH_P_ALL))
    s.settimeout(2.0)
    return s


@contextmanager
def port_and_peer(ns: str, number: int, on_receive: Callable[[int, bytes], Any],
                  peer: Callable[[], socket.socket] = raw_peer, **port_options: Any
                  ) -> Iterator[tuple[RealtimeScheduler, PacketSocketPort, socket.socket]]:
    """A running loop, a port on ``vport`` and a peer socket, both opened in ``ns``; all closed after."""
    sched = RealtimeScheduler()
    sched.start()
    port = sock = None
    try:
        def open_both() -> tuple[PacketSocketPort, socket.socket]:
            return PacketSocketPort(number, "vport", sched, on_receive=on_receive, **port_options), peer()

        port, sock = in_netns(ns, open_both)
        yield sched, port, sock
    finally:
        if port is not None:
            sched.run_sync(port.close)
        if sock is not None:
            sock.close()
        sched.stop()


@pytest.mark.netns
@needs_netns
def test_packet_socket_port_receives_and_sends(veth_ns: str) -> None:
    got: list[tuple[int, bytes, str]] = []

    def on_receive(number: int, data: bytes) -> None:
        if is_test_frame(data):
            got.append((number, data, threading.current_thread().name))

    with port_and_peer(veth_ns, 7, on_receive, batch=4, link=LinkModel(bitrate_bps=10_000_000)) as (
            sched, port, peer):
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


@pytest.mark.netns
@needs_netns
def test_port_is_promiscuous(veth_ns: str) -> None:
    """Frames to a MAC that is not the interface's still reach the switch port."""
    got: list[bytes] = []
    with port_and_peer(veth_ns, 1, lambda n, d: is_test_frame(d) and got.append(d)) as (
            sched, port, peer):
        out = subprocess.run(["ip", "-n", veth_ns, "-d", "link", "show", "vport"], capture_output=True,
                             text=True, timeout=10).stdout
        assert "promiscuity 1" in out
        peer.send(frame(5))  # dst 02:00:00:00:00:02 is not vport's address
        assert sched.wait_until(lambda: len(got) == 1, timeout=5)


# ---- finishing checksum and segmentation offloads (virtio_net_hdr) ------------------------------

def ones_complement_checksum(data: bytes) -> int:
    """Reference: RFC 1071 word by word, 0 sent as 0xFFFF (as the kernel's skb_checksum_help)."""
    if len(data) % 2:
        data += b"\x00"
    total = 0
    for i in range(0, len(data), 2):
        total += data[i] << 8 | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return (~total & 0xFFFF) or 0xFFFF


def pseudo_partial(src: bytes, dst: bytes, proto: int, l4_len: int) -> int:
    """What a host's kernel leaves in a CHECKSUM_PARTIAL field: the folded pseudo-header sum."""
    return ~ones_complement_checksum(src + dst + struct.pack("!HH", proto, l4_len) if len(src) == 4 else
                                     src + dst + struct.pack("!IxxxB", l4_len, proto)) & 0xFFFF


def l4_checksum_ok(frame: bytes) -> bool:
    """A receiver's check (scapy recomputes the transport checksum from scratch)."""
    from scapy.all import SCTP, TCP, UDP, Ether

    pkt = Ether(frame)
    for layer in (TCP, UDP, SCTP):
        if layer in pkt:
            again = Ether(frame)
            del again[layer].chksum
            return Ether(bytes(again))[layer].chksum == pkt[layer].chksum
    raise AssertionError("no transport header")


def partial_frame(pkt: Any, proto: Any) -> tuple[bytearray, int, int]:
    """``pkt`` as a host's kernel hands it to a device: checksum field = pseudo-header sum."""
    from scapy.all import IP, TCP, Ether, IPv6

    frame = bytearray(bytes(pkt))
    pkt = Ether(bytes(frame))  # parsed: every field has its value
    ip = pkt[IP] if IP in pkt else pkt[IPv6]
    l4 = 14 + (ip.ihl * 4 if IP in pkt else 40)
    offset = 16 if proto is TCP else 6
    src, dst = (socket.inet_pton(socket.AF_INET if IP in pkt else socket.AF_INET6, a) for a in (ip.src, ip.dst))
    struct.pack_into("!H", frame, l4 + offset, pseudo_partial(src, dst, 6 if proto is TCP else 17, len(frame) - l4))
    return frame, l4, offset


@pytest.mark.parametrize("ipv6", [False, True])
@pytest.mark.parametrize("proto_name", ["UDP", "TCP"])
@pytest.mark.parametrize("size", [0, 1, 17, 1400])
def test_complete_checksum_gives_what_the_receiver_checks(ipv6: bool, proto_name: str, size: int) -> None:
    import scapy.all as S

    proto = getattr(S, proto_name)
    ip = S.IPv6(src="fd00::1", dst="fd00::2") if ipv6 else S.IP(src="10.0.1.1", dst="10.0.2.1")
    pkt = S.Ether(dst="02:00:00:00:01:01", src="02:00:00:00:00:01") / ip / proto(sport=40000, dport=5000) / \
        random.Random(size).randbytes(size)
    frame, l4, offset = partial_frame(pkt, proto)
    assert not l4_checksum_ok(bytes(frame))  # the premise: unfinished
    complete_checksum(frame, l4, offset)
    assert l4_checksum_ok(bytes(frame))
    assert bytes(frame) == bytes(pkt)  # what scapy computes from scratch


def test_complete_checksum_matches_the_word_by_word_sum_anywhere() -> None:
    """No protocol is parsed: any region, any field position, odd or even lengths."""
    rng = random.Random(7)
    for _ in range(300):
        frame = bytearray(rng.randbytes(rng.randrange(20, 300)))
        frame[12:14] = b"\x88\xb5"  # not IP: the Internet checksum applies whatever the offset
        start = rng.randrange(14, len(frame) - 2)
        offset = rng.randrange(0, len(frame) - start - 1)
        expected = bytearray(frame)
        expected[start + offset:start + offset + 2] = ones_complement_checksum(
            bytes(frame[start:])).to_bytes(2, "big")
        complete_checksum(frame, start, offset)
        assert frame == expected


def test_a_zero_checksum_is_sent_as_ffff_like_the_kernel() -> None:
    frame = bytearray(b"\x00" * 14 + b"\x12\x34\x00\x00\xab\xcd")
    # choose the last word so that the whole sum is 0xFFFF: the checksum computes to 0
    total = sum(int.from_bytes(frame[i:i + 2], "big") for i in range(14, len(frame), 2)) % 0xFFFF
    frame += (0xFFFF - total).to_bytes(2, "big")
    complete_checksum(frame, 14, 2)
    assert frame[16:18] == b"\xff\xff"
    assert sum(int.from_bytes(frame[i:i + 2], "big") for i in range(14, len(frame), 2)) % 0xFFFF == 0  # verifies


def test_sctp_gets_a_crc32c_not_an_internet_checksum() -> None:
    from scapy.all import IP, SCTP, Ether, SCTPChunkData

    # RFC 3720 B.4 test vectors
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    pkt = Ether() / IP(src="10.0.1.1", dst="10.0.2.1") / SCTP(sport=1, dport=2, tag=7) / SCTPChunkData(data=b"x" * 33)
    frame = bytearray(bytes(pkt))
    frame[42:46] = bytes(4)  # as the kernel leaves it for the device
    complete_checksum(frame, 34, 8)
    assert bytes(frame) == bytes(pkt)


def test_checksum_offsets_outside_the_frame_are_an_error() -> None:
    with pytest.raises(OffloadError, match=r"checksum field at 50\+6 is not inside the 40-byte frame") as info:
        complete_checksum(bytearray(40), 50, 6)
    assert info.value.cause == "bad_csum_offsets"
    with pytest.raises(OffloadError, match="not inside"):
        complete_checksum(bytearray(40), 34, 5)  # the field's second byte would be byte 40


def test_virtio_net_hdr_round_trip() -> None:
    h = VirtioNetHdr(1, 0x81, 66, 1448, 34, 16)
    assert len(h.pack()) == 10
    assert VirtioNetHdr.unpack(h.pack()) == h and h.needs_csum
    assert not VirtioNetHdr().needs_csum


def super_frame(ipv6: bool, tcp: bool, size: int, flags: str = "PA", seq: int = 1000) -> tuple[bytearray, int]:
    import scapy.all as S

    ip = S.IPv6(src="fd00::1", dst="fd00::2") if ipv6 else S.IP(src="10.0.1.1", dst="10.0.2.1", id=65534, flags="DF")
    l4 = S.TCP(sport=40000, dport=5000, seq=seq, flags=flags, options=[("NOP", None), ("NOP", None),
                                                                         ("Timestamp", (1, 2))]) \
        if tcp else S.UDP(sport=40000, dport=5000)
    pkt = S.Ether(dst="02:00:00:00:01:01", src="02:00:00:00:00:01") / ip / l4 / random.Random(size).randbytes(size)
    frame, start, _ = partial_frame(pkt, S.TCP if tcp else S.UDP)
    return frame, start


def check_segments(segs: list[bytes], original: bytearray, l4: int, mss: int, tcp: bool) -> None:
    from scapy.all import IP, TCP, UDP, Ether, IPv6

    thlen = (original[l4 + 12] >> 4) * 4 if tcp else 8
    payload = bytes(original[l4 + thlen:])
    assert len(segs) == -(-len(payload) // mss)
    assert b"".join(s[l4 + thlen:] for s in segs) == payload
    for i, seg in enumerate(segs):
        assert len(seg) <= l4 + thlen + mss
        assert seg[:l4 + thlen][:14] == original[:14]
        assert l4_checksum_ok(seg), i
        pkt = Ether(seg)
        if IP in pkt:
            assert pkt[IP].len == len(seg) - 14
            assert pkt[IP].id == (65534 + i) & 0xFFFF  # +1 per segment, wrapping
            again = Ether(seg)
            del again[IP].chksum
            assert Ether(bytes(again))[IP].chksum == pkt[IP].chksum
        else:
            assert pkt[IPv6].plen == len(seg) - 54
        if tcp:
            assert pkt[TCP].seq == 1000 + i * mss
            assert pkt[TCP].options == Ether(bytes(original))[TCP].options
        else:
            assert pkt[UDP].len == len(seg) - l4


@pytest.mark.parametrize("ipv6", [False, True])
def test_tcp_gso_frames_are_cut_like_the_kernel(ipv6: bool) -> None:
    from scapy.all import TCP, Ether

    frame, l4 = super_frame(ipv6, True, 5000, flags="FPAC")
    gso = VIRTIO_NET_HDR_GSO_TCPV6 if ipv6 else VIRTIO_NET_HDR_GSO_TCPV4
    segs = segment(frame, VirtioNetHdr(VIRTIO_NET_HDR_F_NEEDS_CSUM, gso, 0, 1448, l4, 16))
    check_segments(segs, frame, l4, 1448, tcp=True)
    flags = [str(Ether(s)[TCP].flags) for s in segs]
    assert flags == ["AC", "A", "A", "FPA"]  # FIN/PSH on the last only, CWR on the first only


def test_tcp_gso_with_accecn_keeps_cwr_on_every_segment() -> None:
    from scapy.all import TCP, Ether

    frame, l4 = super_frame(False, True, 3000, flags="AC")
    segs = segment(frame, VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ACCECN, 0, 1000, l4, 16))
    assert [str(Ether(s)[TCP].flags) for s in segs] == ["AC", "AC", "AC"]


@pytest.mark.parametrize("ipv6", [False, True])
def test_udp_gso_frames_are_cut_into_datagrams(ipv6: bool) -> None:
    frame, l4 = super_frame(ipv6, False, 4001)
    segs = segment(frame, VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_UDP_L4, 0, 1000, l4, 6))
    check_segments(segs, frame, l4, 1000, tcp=False)
    assert [len(s) - l4 - 8 for s in segs] == [1000, 1000, 1000, 1000, 1]


def test_gso_without_needs_csum_still_gets_right_checksums() -> None:
    frame, l4 = super_frame(False, True, 2000)
    frame[l4 + 16:l4 + 18] = b"\xde\xad"  # whatever was there is not used
    check_segments(segment(frame, VirtioNetHdr(0, VIRTIO_NET_HDR_GSO_TCPV4, 0, 1448)), frame, l4, 1448, tcp=True)


@pytest.mark.parametrize(
    ("make", "cause", "match"),
    [
        (lambda f, l4: VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_UDP, 0, 1000, l4, 6), "gso_unsupported", "type 0x03"),
        (lambda f, l4: VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_TCPV4, 0, 0, l4, 16), "bad_gso", "gso_size 0"),
        (lambda f, l4: VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_TCPV6, 0, 1000, l4, 16), "gso_unsupported",
         "without a TCP header"),
        (lambda f, l4: VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_UDP_L4, 0, 1000, l4, 6), "gso_unsupported",
         "without a UDP header"),
        (lambda f, l4: VirtioNetHdr(1, VIRTIO_NET_HDR_GSO_TCPV4, 0, 1000, l4 + 8, 16), "gso_unsupported",
         "a tunnel"),
    ],
)
def test_gso_frames_that_cannot_be_cut_are_refused_with_the_reason(make: Callable, cause: str, match: str) -> None:
    frame, l4 = super_frame(False, True, 3000)
    with pytest.raises(OffloadError, match=match) as info:
        segment(frame, make(frame, l4))
    assert info.value.cause == cause


@pytest.mark.netns
@needs_netns
def test_port_finishes_the_checksum_of_kernel_udp(veth_ns: str) -> None:
    """A kernel UDP socket sends over vpeer (checksum offload on, as veth has by default);
    the port hands the pipeline the frame with its checksum done."""
    ip("-n", veth_ns, "addr", "add", "10.200.0.1/24", "dev", "vpeer")
    mac = subprocess.run(["ip", "netns", "exec", veth_ns, "cat", "/sys/class/net/vport/address"],
                         capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    ip("-n", veth_ns, "neigh", "replace", "10.200.0.2", "lladdr", mac, "dev", "vpeer", "nud", "permanent")
    got: list[bytes] = []

    def is_ours(d: bytes) -> bool:
        return len(d) >= 42 and d[12:14] == b"\x08\x00" and d[23] == 17 and d[36:38] == (5999).to_bytes(2, "big")

    with port_and_peer(veth_ns, 1, lambda n, d: is_ours(d) and got.append(d),
                       peer=lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) as (sched, port, sender):
        assert port.vnet_hdr
        for size in (1, 100, 1001):
            sender.sendto(b"u" * size, ("10.200.0.2", 5999))
        assert sched.wait_until(lambda: len(got) == 3, timeout=5)
        assert all(l4_checksum_ok(d) for d in got)
        assert port.stats.rx_csum_completed >= 3  # they came unfinished: the premise holds
        assert port.stats.rx_dropped == {}


@pytest.mark.netns
@needs_netns
def test_a_frame_longer_than_the_receive_buffer_is_dropped_counted_and_logged(
        veth_ns: str, caplog: pytest.LogCaptureFixture) -> None:
    got: list[bytes] = []
    with port_and_peer(veth_ns, 4, lambda n, d: is_test_frame(d) and got.append(d)) as (
            sched, port, peer):

        def shrink() -> None:  # a small buffer stands in for a frame longer than 128 KiB
            port._buf = bytearray(300)
            port._view = memoryview(port._buf)

        sched.run_sync(shrink)
        with caplog.at_level("WARNING", logger="runtime.ports"):
            peer.send(frame(1, 500))
            peer.send(frame(2, 100))
            assert sched.wait_until(lambda: len(got) == 1, timeout=5)
        assert int.from_bytes(got[0][14:18], "big") == 2 and len(got[0]) == 100
        assert port.stats.rx_dropped == {"truncated": 1}
        assert "port 4 (vport): received frame dropped (truncated): a frame of 500 bytes" in caplog.text
