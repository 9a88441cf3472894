"""p4switch's ``--port-delay``: a port's frames leave after the link's propagation delay (root).

Why a real interface: the delay is a timer on the real-time loop in front of the AF_PACKET
send, exactly what a netns run uses. A host namespace captures what the port sends.
"""

from __future__ import annotations

import time

import pytest

from runtime.link import LinkModel
from runtime.ports import PacketSocketPort
from runtime.sched import RealtimeScheduler
from tests.switch import netns as N

pytestmark = pytest.mark.netns

DELAY_NS = 100_000_000


def frame(i: int) -> bytes:
    return bytes.fromhex("020000000001" "020000000002" "88b5") + i.to_bytes(4, "big") + bytes(46)


def test_frames_leave_after_the_delay_in_order() -> None:
    N.require_netns()
    with N.topology() as topo:
        host = topo.add_host("h1", 1, "10.9.1.1", 24, "10.9.1.254", "02:00:00:00:09:01")
        sock = N.raw_socket(host.name, "eth0")
        with RealtimeScheduler() as sched:
            port = sched.run_sync(lambda: PacketSocketPort(1, host.switch_if, sched,
                                                           link=LinkModel(bitrate_bps=10_000_000, delay_ns=DELAY_NS)))
            try:
                sent_at = time.monotonic()
                wire = [sched.run_sync(port.send, frame(i)) for i in range(20)]
                got = N.collect(sock, lambda f: f[12:14] == b"\x88\xb5", 30.0, max_frames=1000, want=20)
            finally:
                sched.run_sync(port.close)
        sock.close()
    assert all(w > 0 for w in wire)  # the transmitter is busy for the wire time only
    assert [int.from_bytes(f[14:18], "big") for _, f in got] == list(range(20))
    assert got[0][0] - sent_at >= DELAY_NS / 1e9
