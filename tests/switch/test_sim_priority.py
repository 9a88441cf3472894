"""Priority queues and queue metadata through the whole switch, in virtual time.

A rate-limited egress port with two priority queues: a burst of low-priority frames
queues up, then high-priority frames arrive; strict priority must send them before the
waiting low-priority ones, and egress must see the queue metadata the TM stamped.
"""

from __future__ import annotations

from pathlib import Path

from p4switch.switch import SwitchOptions
from tests.switch.simnet import sim_switch

PROGRAM = Path(__file__).resolve().parents[1] / "p4programs" / "priority.p4"
MS = 1_000_000


def frame(prio: int, seq: int) -> bytes:
    return (0x02_00_00_00_00_02).to_bytes(6, "big") + bytes(6) + (0x9000 | prio).to_bytes(2, "big") + bytes(
        [seq]) * 46


def test_high_priority_frames_overtake_queued_low_priority_ones() -> None:
    """Each priority queue has its own rate limiter, as on BMv2: the high-priority frames
    leave on their own queue's rate slots while ten low-priority frames wait."""
    net = sim_switch(PROGRAM, (1, 2), options=SwitchOptions(seed=1, priority_queues=2, grpc_addr=None,
                                                             thrift_port=None))
    net.switch.tm.set_queue_rate(2, 1000)  # every queue of port 2: 1 ms per frame, the low queue builds
    for seq in range(10):
        net.hosts[1].send_at(0, frame(0, seq))
    for seq in range(10, 13):
        net.hosts[1].send_at(2 * MS, frame(1, seq))
    net.sched.run()
    got = {f[14]: t for t, f in net.hosts[2].got}
    assert sorted(got) == list(range(13))
    high = [got[s] for s in (10, 11, 12)]
    assert high[-1] - 2 * MS <= 3 * MS  # three slots of the high queue after arrival
    assert sum(1 for s in range(10) if got[s] > high[-1]) >= 4  # overtook low frames queued before them
    low = [got[s] for s in range(10)]
    assert low == sorted(low)  # FIFO within a queue


def test_egress_sees_the_queue_metadata_the_traffic_manager_stamped() -> None:
    net = sim_switch(PROGRAM, (1, 2), options=SwitchOptions(seed=1, grpc_addr=None, thrift_port=None))
    net.switch.tm.set_queue_rate(2, 1000)
    for seq in range(5):
        net.hosts[1].send_at(0, frame(0, seq))
    net.sched.run()
    seen = [(int.from_bytes(f[6:8], "big"), int.from_bytes(f[8:12], "big")) for _, f in net.hosts[2].got]
    depths = [d for d, _ in seen]
    waits = [w for _, w in seen]
    assert depths == sorted(depths) and depths[0] == 0 and depths[-1] > 0  # queue grew during the burst
    assert waits == sorted(waits) and waits[-1] >= 3000  # the 5th frame waited ≥ 3 service slots of 1 ms
