"""The real-time switch's forwarding loop in the engine (hbh_engine.PortServer, TxPort) forwards
as the Python loop does (needs root).

Why a differential test: the engine's loop replaces, per frame, the Python port's send, the
switch's ``_emit``, the wire clock and the scheduler's ``run_due``; the pipeline's result must
not change. The same frames go through a switch with ``engine_loop`` on and one with it off
(``SwitchOptions.engine_loop``, the Python path captures and ``--link-loss`` still take), and
what leaves must be the same bytes in the same order. Every wait is bounded; namespaces and
switches are closed by ``open_bed`` also on failure.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from p4switch.pcap import read_pcap
from tests.p4switch.test_realtime_walk import (
    HOST_IP,
    MARK_PORT,
    SWITCH_MAC,
    Bed,
    is_ours,
    open_bed,
    send_paced,
)
from tests.switch import netns as N
from tests.wakeups import skip_if_the_machine_wakes_late

pytestmark = pytest.mark.netns
pytest.importorskip("hbh_engine")


def frames(b: Bed, count: int, size: int = 32) -> list[bytes]:
    """UDP frames h1 -> h2 and, every fifth, one to an address with no route (dropped by ingress),
    with TTLs and payloads that differ frame to frame."""
    from scapy.all import IP, UDP, Ether

    out = []
    for i in range(count):
        dst = "10.0.9.1" if i % 5 == 4 else HOST_IP[2]
        out.append(bytes(Ether(dst=SWITCH_MAC[1], src=b.host(1).mac) / IP(src=HOST_IP[1], dst=dst, ttl=10 + i)
                         / UDP(sport=40000 + i, dport=MARK_PORT) / (i.to_bytes(4, "big") + bytes([i]) * size)))
    return out


def crossed(b: Bed, count: int) -> list[tuple[float, bytes]]:
    """What h2 got of ``frames(b, count)`` sent from h1 1 ms apart."""
    rx = N.raw_socket(b.host(2).name, "eth0")
    try:
        send_paced(b, frames(b, count), 0.001)
        return N.collect(rx, is_ours, 30.0, max_frames=10_000, want=count - count // 5)
    finally:
        rx.close()


def forwarded(engine_loop: bool, count: int, **options: Any) -> tuple[list[bytes], dict[str, int], int]:
    """What h2 got of ``frames`` (h2's MAC made neutral), the walk's counts, frames the engine sent
    (on a send-only socket of each ``TxPort``'s own, asserted: the kernel here ignores a port's
    outgoing frames on its receiving socket, the condition for one)."""
    with open_bed(engine_loop=engine_loop, **options) as b:
        got = crossed(b, count)
        counts = b.on_loop(b.switch.walk.counts)
        sent = sum(tx.stats()[0] for tx in b.switch._tx.values())
        assert all(tx.own_socket for tx in b.switch._tx.values())
        mac = bytes.fromhex(b.host(2).mac.replace(":", ""))
        return [f.replace(mac, b"\0" * 6, 1) for _, f in got], counts, sent


def test_frames_cross_the_engine_loop_as_they_cross_the_python_loop() -> None:
    count = 40
    old, old_counts, old_sent = forwarded(False, count)
    new, new_counts, new_sent = forwarded(True, count)
    routed = count - count // 5
    assert len(old) == routed and new == old  # the same bytes, in the same order
    assert old_sent == 0 and new_sent >= routed  # the premise: the new loop sent them, the old did not
    for key in ("rx", "tx"):
        assert new_counts.get(key, 0) >= routed and new_counts.get(key, 0) - old_counts.get(key, 0) in (-2, -1, 0, 1, 2)


def test_captures_hold_the_same_frames_with_the_engine_loop(tmp_path: Path) -> None:
    """``--pcap`` stays on the engine's loop (the frames are handed to Python in batches, each with
    the time it was seen): each port's in and out files hold what the Python loop's hold, in order."""
    count = 20
    files = {}
    for engine_loop in (False, True):
        out = tmp_path / str(engine_loop)
        out.mkdir()
        forwarded(engine_loop, count, pcap_dir=str(out))
        files[engine_loop] = {f.name.split("s", 1)[1]: read_pcap(f) for f in sorted(out.glob("*.pcap"))}
    assert sorted(files[True]) == sorted(files[False]) and len(files[True]) == 4  # two ports, in and out
    for name, records in files[True].items():
        stamps = [t for t, _ in records]
        assert stamps == sorted(stamps), name
    neutral = {loop: {k: [f[12:] for _, f in v if is_ours(f)] for k, v in fs.items()} for loop, fs in files.items()}
    assert neutral[True] == neutral[False]  # the same frames (but for the hosts' MACs) in each file, in order
    assert len(neutral[True]["1_in.pcap"]) == count and len(neutral[True]["2_out.pcap"]) == count - count // 5


@pytest.mark.parametrize("engine_loop", [True, False])
def test_a_modelled_wire_is_never_faster_than_its_bit_rate(engine_loop: bool) -> None:
    """A burst queued behind a 20 Mb/s port leaves no faster than the port's wire allows, in order."""
    rate, count = 20_000_000, 40
    with open_bed(engine_loop=engine_loop, port_bitrate_bps=rate) as b:
        burst = frames(b, count * 5 // 4, size=1000)
        rx = N.raw_socket(b.host(2).name, "eth0")
        try:
            rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            send_paced(b, burst, 0.0)
            got = stamped(rx, 30.0, want=count)
        finally:
            rx.close()
    assert [int.from_bytes(f[42:46], "big") for _, f in got] == [i for i in range(len(burst)) if i % 5 != 4]
    wire_s = (len(got[0][1]) + 24) * 8 / rate
    assert got[-1][0] - got[0][0] >= 0.9 * wire_s * (len(got) - 1)


@pytest.mark.parametrize("engine_loop", [True, False])
def test_a_modelled_delay_holds_every_frame_that_long_in_order(engine_loop: bool) -> None:
    """``--port-delay`` on the engine's loop (the TxPort's delay line, released by timers on the
    loop's heap) as on the Python port: every frame reaches h2 no sooner than its wire time plus the
    delay after h1 sent it, all of them, in order; the engine's TxPort sent them and holds none after."""
    rate, delay_s, count = 20_000_000, 0.03, 25
    with open_bed(engine_loop=engine_loop, port_bitrate_bps=rate, port_delay_ns=int(delay_s * 1e9)) as b:
        burst = [f for i, f in enumerate(frames(b, count * 5 // 4, size=1000)) if i % 5 != 4]
        rx = N.raw_socket(b.host(2).name, "eth0")
        tx = N.raw_socket(b.host(1).name, "eth0")
        try:
            rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sent_at = []
            for f in burst:
                sent_at.append(time.time())  # before the send: the frame left no sooner
                tx.send(f)
                time.sleep(0.002)
            got = stamped(rx, 30.0, want=len(burst))
        finally:
            tx.close()
            rx.close()
        engine = [(t.stats()[0], t.held()) for t in b.switch._tx.values()]
    seqs = [int.from_bytes(f[42:46], "big") for _, f in got]
    assert seqs == [int.from_bytes(f[42:46], "big") for f in burst]  # all, in order
    wire_s = (len(got[0][1]) + 24) * 8 / rate
    assert all(t - sent_at[i] >= delay_s + wire_s for i, (t, _) in enumerate(got))
    if engine_loop:
        assert sum(sent for sent, _ in engine) >= len(burst) and all(held == 0 for _, held in engine)
    else:
        assert engine == []


SO_TIMESTAMPNS = 35  # Linux: a received frame's kernel arrival time in its ancillary data


def stamped(sock: socket.socket, duration: float, want: int, linger: float = 0.3) -> list[tuple[float, bytes]]:
    """This file's frames, each with the time the kernel received it (not the time this process
    read it: the frames wait in the socket meanwhile): read until ``want`` have come and then
    ``linger`` s without another (an extra one is still seen), or for ``duration`` s at most."""
    out: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + duration
    while (left := deadline - time.monotonic()) > 0:
        if len(out) >= want:
            left = min(left, linger)
        sock.settimeout(left)
        try:
            data, anc, _flags, _addr = sock.recvmsg(65536, 256)
        except TimeoutError:
            break
        stamps = [struct.unpack("qq", d[:16]) for level, kind, d in anc if kind == SO_TIMESTAMPNS]
        if is_ours(data) and stamps:
            out.append((stamps[0][0] + stamps[0][1] / 1e9, data))
    return out


@pytest.mark.parametrize("engine_loop", [True, False])
def test_frames_lost_on_send_are_in_the_switchs_drop_counts(engine_loop: bool) -> None:
    """A frame the kernel refuses (longer than port 2's MTU: ``port_send_error``) and frames sent on
    a downed interface (``port_tx_dropped``) are counted by cause on either loop: the engine's
    ``TxPort`` only logged its drops, and the switch's counts did not show them."""
    with open_bed(engine_loop=engine_loop) as b:
        h1, h2 = b.host(1), b.host(2)
        subprocess.run(["ip", "link", "set", "dev", h1.switch_if, "mtu", "2000"], check=True)
        subprocess.run(["ip", "netns", "exec", h1.name, "ip", "link", "set", "dev", "eth0", "mtu", "2000"], check=True)
        send_paced(b, frames(b, 3, size=1600)[:3], 0.001)  # 1646-byte frames: port 2's MTU is 1500
        refused = wait_drops(b, "port_send_error", 3)
        subprocess.run(["ip", "link", "set", "dev", h2.switch_if, "down"], check=True)
        send_paced(b, frames(b, 4), 0.001)  # all four routed to port 2
        down = wait_drops(b, "port_tx_dropped", 4)
    assert (refused, down) == (3, 4)


def wait_drops(b: Bed, cause: str, want: int, timeout: float = 30.0) -> int:
    """The switch's drop count of ``cause`` once it reached ``want`` (or after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while (got := b.on_loop(b.switch.core.drop_counts).get(cause, 0)) < want and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def test_the_loops_idle_turns_run_in_the_engine_and_still_take_handed_work() -> None:
    """With a port served, the scheduler hands its idle turns to the engine (``PortServer.run``);
    work other threads hand over (``run_sync``) and timers they schedule still run, on time and
    not early, and frames still cross."""
    import threading

    with open_bed(engine_loop=True) as b:
        sched = b.switch.sched
        assert sched._engine_loop is not None
        for _ in range(20):
            assert sched.run_sync(lambda: threading.get_ident() == sched._loop_ident, timeout=30.0)
        fired: list[int] = []
        due = sched.now_ns() + 30_000_000
        sched.call_at(due, lambda: fired.append(sched.now_ns()))  # from this thread: wakes the engine's wait
        deadline = time.monotonic() + 30.0
        while not fired and time.monotonic() < deadline:
            time.sleep(0.005)
        assert fired and due <= fired[0]
        if fired[0] >= due + 500_000_000:
            skip_if_the_machine_wakes_late(500_000, f"the timer ran {(fired[0] - due) / 1e6:.0f} ms late")
        assert fired[0] < due + 500_000_000
        assert len(crossed(b, 10)) == 10 - 10 // 5


def test_the_engine_lends_the_state_while_it_waits() -> None:
    """With the engine running the loop's turns, a short call from another thread (a one-update
    P4Runtime Write) runs on that thread while the engine waits (``PortServer.try_lend``), as
    the owner of the state; a callback the loop is woken for meanwhile starts only after it
    ends; frames still cross."""
    import threading

    with open_bed(engine_loop=True) as b:
        sched = b.switch.sched
        assert sched._engine_loop is not None
        lent = None
        deadline = time.monotonic() + 30.0
        while lent is None and time.monotonic() < deadline:  # the engine waits between its turns
            lent = sched.try_call(lambda: (threading.get_ident(), sched.in_loop_thread()))
            time.sleep(0.001)
        assert lent is not None and lent.result(0) == (threading.get_ident(), True)
        assert not sched.in_loop_thread()
        marks: list[str] = []
        woke = threading.Event()

        def call() -> None:
            marks.append("lent:start")
            sched.call_soon_threadsafe(lambda: (marks.append("loop"), woke.set()))
            time.sleep(0.05)
            marks.append("lent:end")

        while sched.try_call(call) is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert woke.wait(30)
        assert marks == ["lent:start", "lent:end", "loop"]
        assert len(crossed(b, 10)) == 10 - 10 // 5
