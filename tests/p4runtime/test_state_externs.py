"""Counters, trTCM meters, registers, the PRE and digest buffering (fake time)."""

from __future__ import annotations

import pytest

from p4switch.state import (
    GREEN,
    RED,
    YELLOW,
    CloneSession,
    Code,
    CounterArray,
    CounterUnit,
    DigestBuffer,
    DigestConfig,
    MeterArray,
    MeterConfig,
    MeterType,
    MeterUnit,
    MulticastGroup,
    PacketReplicationEngine,
    RegisterArray,
    Replica,
    StateError,
)

S = 1_000_000_000


def code_of(fn, *args) -> Code:
    with pytest.raises(StateError) as exc:
        fn(*args)
    return exc.value.code


def test_counter_array_counts_and_checks_indices():
    c = CounterArray(1, "c", CounterUnit.BOTH, 4)
    c.count(2, 100)
    c.count(2, 50)
    c.count(9, 1)  # data-plane out of range: ignored
    assert c.read(2) == (2, 150) and c.read(0) == (0, 0)
    c.write(1, 5, 6)
    assert c.read(1) == (5, 6)
    assert code_of(c.read, -1) == Code.INVALID_ARGUMENT
    assert code_of(c.read, 4) == Code.OUT_OF_RANGE
    assert code_of(c.write, 0, -1, 0) == Code.INVALID_ARGUMENT


def packet_meter(cir, cburst, pir, pburst, mtype=MeterType.TWO_RATE_THREE_COLOR):
    m = MeterArray(2, "m", MeterUnit.PACKETS, mtype, 2)
    m.configure(0, MeterConfig(cir, cburst, pir, pburst))
    return m


def test_unconfigured_meter_is_green():
    m = MeterArray(2, "m", MeterUnit.BYTES, MeterType.TWO_RATE_THREE_COLOR, 2)
    assert all(m.execute(1, t, 1500) == GREEN for t in range(100))


def test_trtcm_burst_colors_follow_bucket_sizes():
    cburst, pburst = 5, 12
    m = packet_meter(cir=10, cburst=cburst, pir=20, pburst=pburst)
    colors = [m.execute(0, 0, 64) for _ in range(30)]  # 30 packets at the same instant
    assert colors == [GREEN] * cburst + [YELLOW] * (pburst - cburst) + [RED] * (30 - pburst)
    cell = m.cell(0)
    assert (cell.colors[GREEN].packets, cell.colors[YELLOW].packets, cell.colors[RED].packets) == (5, 7, 18)


def test_trtcm_long_run_rates_approach_cir_and_pir():
    cir, pir, rate, seconds = 100, 300, 1000, 20
    m = packet_meter(cir=cir, cburst=10, pir=pir, pburst=30)
    counts = [0, 0, 0]
    for i in range(rate * seconds):
        counts[m.execute(0, i * S // rate, 1)] += 1
    # green: committed rate; green+yellow: peak rate (plus the initial bursts)
    assert abs(counts[GREEN] - cir * seconds) <= 10 + 2
    assert abs(counts[GREEN] + counts[YELLOW] - pir * seconds) <= 30 + 2


def test_srtcm_and_config_rules():
    assert code_of(MeterConfig(10, 5, 20, 5, eburst=3).check, "m", MeterType.TWO_RATE_THREE_COLOR) == Code.INVALID_ARGUMENT
    assert code_of(MeterConfig(20, 5, 10, 5).check, "m", MeterType.TWO_RATE_THREE_COLOR) == Code.INVALID_ARGUMENT
    assert code_of(MeterConfig(10, 5, 20, 5).check, "m", MeterType.SINGLE_RATE_THREE_COLOR) == Code.INVALID_ARGUMENT
    m = MeterArray(3, "sr", MeterUnit.PACKETS, MeterType.SINGLE_RATE_THREE_COLOR, 1)
    m.configure(0, MeterConfig(10, 4, 10, 4, eburst=6))
    colors = [m.execute(0, 0, 1) for _ in range(12)]
    assert colors == [GREEN] * 4 + [YELLOW] * 6 + [RED] * 2


def test_register_wraps_in_data_plane_and_checks_control_plane():
    r = RegisterArray(4, "r", 8, 4)
    r.write(1, 0x1FF)
    assert r.read(1) == 0xFF and r.read(99) == 0
    assert code_of(r.set, 0, 256) == Code.INVALID_ARGUMENT
    assert code_of(r.get, 4) == Code.OUT_OF_RANGE
    s = RegisterArray(5, "s", 8, 1, signed=True)
    s.set(0, -3)
    assert s.get(0) == -3 and s.read(0) == 0xFD


def test_clone_sessions_and_multicast_groups():
    pre = PacketReplicationEngine()
    s = CloneSession(5, (Replica(1, 0), Replica(2, 1)), class_of_service=2, packet_length_bytes=128)
    pre.insert_clone_session(s)
    assert pre.clone_session(5) == s
    assert code_of(pre.insert_clone_session, s) == Code.ALREADY_EXISTS
    assert code_of(pre.insert_clone_session, CloneSession(0, ())) == Code.INVALID_ARGUMENT
    assert code_of(pre.insert_clone_session, CloneSession(6, (), class_of_service=8)) == Code.INVALID_ARGUMENT
    assert code_of(pre.insert_clone_session, CloneSession(6, (Replica(512),))) == Code.INVALID_ARGUMENT
    assert code_of(pre.insert_clone_session, CloneSession(6, (Replica(1), Replica(1)))) == Code.INVALID_ARGUMENT
    assert code_of(pre.modify_clone_session, CloneSession(7, ())) == Code.NOT_FOUND
    pre.modify_clone_session(CloneSession(5, (Replica(3),)))
    assert pre.clone_session(5).replicas == (Replica(3),)
    pre.delete_clone_session(5)
    assert pre.clone_session(5) is None
    assert code_of(pre.delete_clone_session, 5) == Code.NOT_FOUND
    g = MulticastGroup(1, (Replica(1, 1), Replica(2, 1)))
    pre.insert_multicast_group(g)
    assert pre.multicast_group(1) == g
    assert code_of(pre.insert_multicast_group, MulticastGroup(1 << 16, ())) == Code.INVALID_ARGUMENT


def test_digest_batches_by_size_and_timeout_with_fake_time():
    d = DigestBuffer(7, "learn")
    assert not d.add((1, 2), 0)  # disabled until configured
    d.configure(DigestConfig(max_timeout_ns=1000, max_list_size=3, ack_timeout_ns=5000))
    assert d.add((1, 1), 100) and d.add((2, 2), 200)
    assert not d.add((1, 1), 250)  # duplicate of a pending message
    assert d.poll(500) == [] and d.next_deadline_ns() == 1100
    d.add((3, 3), 600)  # list full -> due now
    (lst,) = d.poll(600)
    assert lst.data == ((1, 1), (2, 2), (3, 3)) and lst.list_id == 1
    assert not d.add((2, 2), 700)  # in the unacknowledged cache
    d.add((4, 4), 800)
    assert d.poll(1700) == [] and d.poll(1800)[0].data == ((4, 4),)  # by timeout
    assert d.ack(1) and d.add((2, 2), 1900)  # learnable again after the ack
    assert not d.ack(1)


def test_digest_cache_expires_after_ack_timeout():
    d = DigestBuffer(7, "learn")
    d.configure(DigestConfig(max_timeout_ns=0, max_list_size=1, ack_timeout_ns=1000))
    d.add(("a",), 0)
    assert len(d.poll(0)) == 1
    assert not d.add(("a",), 500)
    assert d.next_deadline_ns() == 1000
    d.poll(1000)
    assert d.add(("a",), 1000)
    d.configure(DigestConfig(0, 1, 0))  # ack_timeout 0: no cache at all
    d.poll(1000)
    d.add(("b",), 1001)
    d.poll(1001)
    assert d.add(("b",), 1002)


def test_byte_meter_charges_packet_length():
    m = MeterArray(6, "bytes", MeterUnit.BYTES, MeterType.TWO_RATE_THREE_COLOR, 1)
    m.configure(0, MeterConfig(cir=1000, cburst=3000, pir=2000, pburst=4500))
    colors = [m.execute(0, 0, 1500) for _ in range(4)]
    assert colors == [GREEN, GREEN, YELLOW, RED]  # 3000 committed bytes, 4500 peak bytes
    assert m.cell(0).colors[GREEN].bytes == 3000
