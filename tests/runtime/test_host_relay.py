"""The netns host's frame relay in the engine (hbh_engine.HostRelay, engine/src/hosts/hostrelay.rs).

Datagram socket pairs stand in for the tun device and the AF_PACKET socket (the relay only reads
and writes whole packets on them), so these run without root; the namespace test is in
tests/topo/sim/test_tcp_flows.py.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from runtime.hostrelay import HostRelay
from runtime.link import LinkModel
from topo.netns.host import python_loop_reason, relay_mode

ETH = bytes(range(12)) + b"\x08\x00"
WAIT_S = 5.0


def ipv4_packet(size: int, proto: int = 17) -> bytes:
    return bytes([0x45]) + bytes(8) + bytes([proto]) + bytes(size - 10)


def tcp_frame(size: int = 200) -> bytes:
    return ETH + ipv4_packet(size - 14, proto=6)


@contextmanager
def relay(rate_bps: int = 8_000_000, delay_ns: int = 0, queue: int = 100, hdr: int = 0,
          tun: bool = True) -> Iterator[tuple[HostRelay, socket.socket | None, socket.socket, int]]:
    """A relay between two socket pairs: yields (relay, the tun's far end, the wire's far end, t0)."""
    tun_near, tun_far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    wire_near, wire_far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (tun_near, wire_near):
        s.setblocking(False)
    t0 = time.monotonic_ns()
    r = HostRelay(tun_near.fileno() if tun else -1, wire_near.fileno(), hdr, ETH, rate_bps, delay_ns, t0, queue)
    try:
        yield r, tun_far if tun else None, wire_far, t0
    finally:
        r.close()
        for s in (tun_near, tun_far, wire_near, wire_far):
            s.close()


def receive(sock: socket.socket) -> tuple[bytes, int]:
    """The next packet on ``sock`` and when it came (monotonic ns); fails after WAIT_S."""
    ready, _, _ = select.select([sock], [], [], WAIT_S)
    assert ready, "nothing came"
    return sock.recv(1 << 16), time.monotonic_ns()


def taken(r: HostRelay) -> list[tuple[bytes, int]]:
    """What ``take`` hands over, without the arrival times."""
    return [(frame, wire_len) for frame, wire_len, _at in r.take()]


def settled(r: HostRelay, key: str, value: int) -> dict[str, int]:
    """The relay's counters once ``key`` reached ``value`` (its thread counts a batch after acting on it)."""
    deadline = time.monotonic() + WAIT_S
    while r.stats()[key] < value and time.monotonic() < deadline:
        time.sleep(0.005)
    return r.stats()


def wire_ns(nbytes: int, rate_bps: int) -> int:
    return LinkModel(bitrate_bps=rate_bps, overhead_bytes=0, min_frame_bytes=0).wire_time_ns(nbytes)


def test_a_segment_from_the_tun_leaves_after_its_wire_time_and_delay() -> None:
    rate, delay = 8_000_000, 30_000_000
    with relay(rate, delay) as (_r, tun, wire, _t0):
        packet = ipv4_packet(1000)
        sent = time.monotonic_ns()
        tun.send(packet)
        frame, came = receive(wire)
        assert frame == ETH + packet  # the host's Ethernet header before the kernel's packet
        assert came - sent >= delay + wire_ns(len(frame), rate)


def test_back_to_back_segments_leave_at_the_links_rate() -> None:
    rate, n, size = 4_000_000, 20, 986
    with relay(rate) as (r, tun, wire, _t0):
        sent = time.monotonic_ns()
        for _ in range(n):
            tun.send(ipv4_packet(size))
        came = [receive(wire)[1] for _ in range(n)]
        assert came[-1] - sent >= n * wire_ns(size + len(ETH), rate)
        assert settled(r, "tx_frames", n)["tun_packets"] == n


def test_only_ipv4_from_the_tun_goes_on_the_wire() -> None:
    with relay() as (r, tun, wire, _t0):
        tun.send(bytes([0x60]) + bytes(59))  # IPv6
        tun.send(ipv4_packet(60))
        frame, _ = receive(wire)
        assert frame[len(ETH)] == 0x45
        assert settled(r, "tx_frames", 1)["tun_packets"] == 1


def test_a_full_nic_queue_drops_the_kernels_segments_and_counts_them() -> None:
    # 10 kb/s: one 1014-byte frame is 0.8 s on the wire, far longer than the reads take even on a
    # loaded machine; a queue of two frames' time behind the one on the wire holds three, the rest
    # are refused
    queue, n = 2, 10
    with relay(rate_bps=10_000, queue=queue) as (r, tun, _wire, _t0):
        for _ in range(n):
            tun.send(ipv4_packet(1000))
        st = settled(r, "tun_packets", n)
        assert st["tun_packets"] == n and st["host_tx_queue_full"] == n - (queue + 1), st


def test_tcp_from_the_wire_goes_into_the_tun_the_rest_to_python() -> None:
    with relay() as (r, tun, wire, _t0):
        tcp = tcp_frame()
        wire.send(tcp)
        packet, _ = receive(tun)
        assert packet == tcp[len(ETH):]
        other = ETH[:12] + b"\x88\xb5" + bytes(50)
        wire.send(other)
        select.select([r.notify_fd], [], [], WAIT_S)
        assert taken(r) == [(other, 0)]
        st = settled(r, "rx_frames", 2)
        assert st["rx_frames"] == 2 and st["rx_to_tun"] == 1 and st["to_python"] == 1, st


def test_without_a_tun_every_frame_goes_to_python() -> None:
    with relay(tun=False) as (r, _tun, wire, _t0):
        wire.send(tcp_frame())
        select.select([r.notify_fd], [], [], WAIT_S)
        assert taken(r) == [(tcp_frame(), 0)]


def test_frames_python_takes_late_keep_the_times_they_arrived() -> None:
    """The kernel stamps each frame as it reaches the socket; Python taking a batch late (its loop
    busy) still sees them spread as they came, each before it was taken and after it was sent."""
    n, gap_s = 5, 0.004
    with relay(tun=False) as (r, _tun, wire, t0):
        sent = []
        for i in range(n):
            sent.append(time.monotonic_ns() - t0)
            wire.send(ETH[:12] + b"\x88\xb5" + bytes([i]) * 50)
            time.sleep(gap_s)
        settled(r, "to_python", n)
        time.sleep(0.05)  # Python's loop is late
        took = time.monotonic_ns() - t0
        got = r.take()
    assert [f[14] for f, _, _ in got] == list(range(n))
    at = [a for _, _, a in got]
    assert all(s <= a < took for s, a in zip(sent, at)), (sent, at, took)
    assert at == sorted(at) and at[-1] - at[0] >= (n - 1) * gap_s * 1e9 * 0.9  # spread, not one batch's time


def test_frames_with_offloads_left_go_to_python_with_their_header() -> None:
    hdr = 10  # a virtio_net_hdr; flags bit 0: the checksum is left to finish
    with relay(hdr=hdr) as (r, tun, wire, _t0):
        wire.send(bytes(hdr) + tcp_frame())  # finished: straight into the tun
        packet, _ = receive(tun)
        assert packet == tcp_frame()[len(ETH):]
        unfinished = bytes([1]) + bytes(hdr - 1) + tcp_frame()
        wire.send(unfinished)
        select.select([r.notify_fd], [], [], WAIT_S)
        assert taken(r) == [(unfinished, len(unfinished))]
        tun.send(ipv4_packet(100))
        frame, _ = receive(wire)
        assert frame == bytes(hdr) + ETH + ipv4_packet(100)  # sent with an empty header


def test_pythons_frames_share_the_uplink() -> None:
    rate = 1_000_000
    with relay(rate) as (r, _tun, wire, t0):
        now = time.monotonic_ns() - t0
        start, end = r.send(now, ETH + bytes(100))
        assert end - start == wire_ns(114, rate) and r.backlog_ns(now) == end - now
        lost_start, lost_end = r.send(now, ETH + b"lost" + bytes(96), 0, True)
        assert lost_start == end  # a lost frame still takes its wire time
        late = ETH + b"late" + bytes(96)
        r.send(now, late, 20_000_000)
        early = ETH + b"early" + bytes(95)
        r.send(now, early)
        got = [receive(wire)[0] for _ in range(3)]
        assert got == [ETH + bytes(100), early, late]  # the extra delay let the next frame overtake
        assert r.stats()["uplink_bytes"] == 4 * 114


def test_bad_arguments_are_refused_by_name() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        with pytest.raises(ValueError, match="eth_header must be 14 bytes"):
            HostRelay(a.fileno(), b.fileno(), 0, b"x", 1, 0, 0, 1)
        with pytest.raises(ValueError, match="bad uplink"):
            HostRelay(a.fileno(), b.fileno(), 0, ETH, -1, 0, 0, 1)
    with relay() as (r, _tun, _wire, _t0), pytest.raises(ValueError, match="bit rate must be >= 0"):
        r.set_bitrate(-5)


class _Link:
    def __init__(self, reorder: float = 0.0) -> None:
        self.reorder = reorder


class _Flow:
    def __init__(self, cc: str) -> None:
        self.cc = cc


def test_what_keeps_a_host_on_the_python_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HBH_HOST_RELAY", raising=False)
    assert python_loop_reason([_Flow("cubic")], _Link(), False, True) is None
    assert "paced" in python_loop_reason([_Flow("cvihis-rtm")], _Link(), False, True)
    assert "reordering" in python_loop_reason([], _Link(0.01), False, True)
    assert "HBH_LOOP_TRACE" in python_loop_reason([], _Link(), True, True)
    assert "PACKET_IGNORE_OUTGOING" in python_loop_reason([], _Link(), False, False)
    monkeypatch.setenv("HBH_HOST_RELAY", "python")
    assert "HBH_HOST_RELAY=python" in python_loop_reason([], _Link(), False, True)
    monkeypatch.setenv("HBH_HOST_RELAY", "rust")
    with pytest.raises(ValueError, match="HBH_HOST_RELAY='rust': expected 'engine' or 'python'"):
        relay_mode()


# ---- paced senders in the relay's thread (HostRelay.pace) ------------------------------------------

PACED = 1000  # bytes per paced packet


def paced_frame(flow: int = 1) -> bytes:
    from hosts.datagram import FrameTemplate

    return FrameTemplate(src_mac=1, dst_mac=2, src_ip=3, dst_ip=4, flow=flow, size=PACED).frame(0, 0)


def frames_within(sock: socket.socket, seconds: float) -> list[bytes]:
    out, end = [], time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], left)
        if ready:
            out.append(sock.recv(1 << 16))
    return out


def test_a_paced_sender_sends_from_the_relay_in_order_never_early() -> None:
    """The relay's thread sends the sender's packets (no Python per packet): every sequence
    number once, in order, each stamped no sooner than it was due (one gap per packet)."""
    from hosts.datagram import parse
    from hosts.sender import Pacer

    rate, offset = 4_000_000, 5_000  # a gap of 2 ms
    with relay(rate_bps=100_000_000) as (r, _tun, wire, t0):
        pacer = Pacer(rate, PACED, time.monotonic_ns() - t0)
        pacer.add_flow(1, 0, None, paced_frame())
        r.pace(pacer, offset)
        got = [parse(receive(wire)[0]) for _ in range(20)]
    gap = PACED * 8 * 1_000_000_000 // rate
    assert [d.seq for d in got] == list(range(20))
    assert all(b.ts_ns >= a.ts_ns for a, b in zip(got, got[1:]))
    assert all(d.ts_ns - got[0].ts_ns >= d.seq * gap - 1_000_000 for d in got)  # the catch-up bound at most
    assert pacer.sent(1) >= 20


def test_paced_packets_carry_their_own_send_times_and_leave_after_wire_and_delay() -> None:
    """Built ahead of their send times (the link's delay hides that) or late (the thread woke
    late), the packets are stamped with their own times on the pacer's schedule, one gap apart,
    and reach the wire no sooner than that time plus their wire time and the delay. Stamped
    with the time the thread built them instead, the gaps would carry its wake-ups' jitter."""
    from hosts.datagram import parse
    from hosts.sender import Pacer

    rate, delay, uplink = 8_000_000, 2_000_000, 100_000_000  # a gap of 1 ms
    with relay(rate_bps=uplink, delay_ns=delay) as (r, _tun, wire, t0):
        pacer = Pacer(rate, PACED, time.monotonic_ns() - t0)
        pacer.add_flow(1, 0, None, paced_frame())
        r.pace(pacer, 0)
        got = [receive(wire) for _ in range(20)]
    gap = PACED * 8 * 1_000_000_000 // rate
    stamps = [parse(frame).ts_ns for frame, _ in got]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert all(g >= gap for g in gaps)
    # Exactly one gap apart, to the nanosecond, but after a stall past the catch-up bound (1 ms),
    # which a loaded machine makes more frequent (3 of 19 with two other jobs on the two cores):
    # stamps taken when the thread built the packets would never be exactly one gap apart.
    assert sum(g == gap for g in gaps) >= len(gaps) // 2, gaps
    wire_time = wire_ns(len(got[0][0]), uplink)
    assert all(at - t0 >= ts + wire_time + delay for (_, at), ts in zip(got, stamps))


def test_the_relay_spaces_each_paced_frame_by_its_own_bits() -> None:
    """Flows of 500- and 1500-byte frames on one pacer, sent from the relay's thread: the gap after
    each frame is its own bits at the rate (0.5 ms, then 1.5 ms at 8 Mb/s), as in the simulator
    (the relay and the simulator share the pacer's state). Spaced as the largest frame, the host
    sent two thirds of its law's bits. Read from the stamps (the pacer's schedule): at least, and
    mostly exactly, that gap, as in the test above."""
    from hosts.datagram import FrameTemplate, parse
    from hosts.sender import Pacer

    rate, sizes = 8_000_000, (500, 1500)
    with relay(rate_bps=100_000_000, delay_ns=2_000_000) as (r, _tun, wire, t0):
        pacer = Pacer(rate, max(sizes), time.monotonic_ns() - t0)
        for flow, size in enumerate(sizes, start=1):
            pacer.add_flow(flow, 0, None, FrameTemplate(src_mac=1, dst_mac=2, src_ip=3, dst_ip=4, flow=flow,
                                                        size=size).frame(0, 0))
        r.pace(pacer, 0)
        got = [receive(wire)[0] for _ in range(20)]
    stamps = [parse(frame).ts_ns for frame in got]
    assert [len(f) for f in got] == [(500, 500, 500, 1500)[i % 4] for i in range(20)]  # equal bits per turn
    gaps = [(b - a, len(f) * 8 * 10**9 // rate) for a, b, f in zip(stamps, stamps[1:], got)]
    assert all(g >= own for g, own in gaps), gaps
    assert sum(g == own for g, own in gaps) >= len(gaps) // 2, gaps


def test_a_new_rate_reaches_the_relay_with_rearm() -> None:
    """``set_rate`` then ``rearm()``, as the law does after a report: the relay slows down. Read
    from the packets' own send times (the pacer's schedule), not from how many came in a wall
    time, which a loaded machine changes."""
    from hosts.datagram import parse
    from hosts.sender import Pacer

    fast_gap, slow_gap = PACED * 8 * 10**9 // 8_000_000, PACED * 8 * 10**9 // 80_000
    with relay(rate_bps=100_000_000) as (r, _tun, wire, t0):
        pacer = Pacer(8_000_000, PACED, time.monotonic_ns() - t0)  # one per ms
        pacer.add_flow(1, 0, None, paced_frame())
        r.pace(pacer, 0)
        fast = [parse(receive(wire)[0]).ts_ns for _ in range(20)]
        rearmed = time.monotonic_ns() - t0
        pacer.set_rate(80_000)  # one per 100 ms
        pacer.rearm()
        later = [parse(f).ts_ns for f in frames_within(wire, 0.35)]
    assert all(b - a >= fast_gap for a, b in zip(fast, fast[1:]))
    slow = [ts for ts in later if ts >= rearmed]
    assert all(b - a >= slow_gap for a, b in zip(slow, slow[1:])), slow
    assert len(slow) <= 4


def test_a_paced_sender_faster_than_the_uplink_fills_the_nic_queue_and_counts_it() -> None:
    from hosts.sender import Pacer

    with relay(rate_bps=1_000_000, queue=2) as (r, _tun, wire, t0):
        pacer = Pacer(100_000_000, PACED, time.monotonic_ns() - t0)
        pacer.add_flow(1, 0, None, paced_frame())
        r.pace(pacer, 0)
        counts = settled(r, "host_tx_queue_full", 10)
        taken = pacer.taken
    assert counts["host_tx_queue_full"] >= 10
    assert counts["host_tx_queue_full"] < taken  # the queue's frames went out


def test_a_rate_change_retimes_the_frames_waiting_in_the_nic_queue() -> None:
    """As the simulator's link (tests/runtime/test_link_nic_queue.py): five frames at once, the rate
    doubled during the second; the second finishes at the old rate, the three waiting leave at the new
    one, and every frame goes out once, in order."""
    rate = 1_000_000
    with relay(rate) as (r, _tun, wire, t0):
        now = time.monotonic_ns() - t0 + 50_000_000  # run time ahead of the clock: nothing due yet
        frames = [ETH + bytes([i]) * 100 for i in range(5)]
        ends = [r.send(now, f)[1] for f in frames]
        on_wire = ends[0] + wire_ns(114, rate) // 2  # half of the second frame is out
        r.set_bitrate(2 * rate, on_wire)
        assert r.backlog_ns(on_wire) == (ends[1] - on_wire) + 3 * wire_ns(114, 2 * rate)
        assert [receive(wire)[0] for _ in frames] == frames
