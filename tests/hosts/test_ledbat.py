"""LEDBAT's core (hosts/ledbat): delay estimates and the window law, as properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hosts.e2e_host import decode_ledbat_ack, encode_ledbat_ack
from hosts.ledbat import DelayEstimates, LedbatSender
from hosts.ledbat.delays import BASE_INTERVAL_NS
from hosts.ledbat.sender import MIN_CWND

MS = 1_000_000


@given(st.lists(st.integers(-10**12, 10**12), min_size=1, max_size=100), st.integers(-10**12, 10**12))
def test_queuing_delay_is_offset_free_and_non_negative(owds: list[int], offset: int) -> None:
    a, b = DelayEstimates(), DelayEstimates()
    for i, d in enumerate(owds):
        a.on_sample(i * MS, d)
        b.on_sample(i * MS, d + offset)
    assert a.queuing_delay_ns == b.queuing_delay_ns >= 0


def test_base_delay_ages_out_after_its_history() -> None:
    e = DelayEstimates(base_history=2)
    e.on_sample(0, 10 * MS)  # minute 0: an old, low base
    e.on_sample(BASE_INTERVAL_NS, 50 * MS)
    e.on_sample(2 * BASE_INTERVAL_NS, 50 * MS)  # minute 0 has left the history
    assert e.queuing_delay_ns == 0


def drive(tx: LedbatSender, queuing_ms: float, acks: int) -> None:
    now = 0
    for _ in range(acks):
        while tx.can_send():
            tx.on_sent(now)
        seq = min(tx.outstanding)
        now += MS
        tx.on_ack(now, seq, 50 * MS + round(queuing_ms * MS))


def test_window_grows_below_target_and_shrinks_above() -> None:
    tx = LedbatSender(1000, target_ns=100 * MS)
    tx.on_sent(0)
    tx.on_ack(1, 0, 50 * MS)  # base delay 50 ms
    drive(tx, 0, 200)
    grown = tx.cwnd
    assert grown > 10_000
    drive(tx, 150, 200)  # 150 ms of queue: above target
    assert tx.cwnd < grown


@given(st.floats(0, 300), st.integers(1, 300))
def test_window_stays_within_its_bounds(queuing_ms: float, acks: int) -> None:
    tx = LedbatSender(1000)
    tx.on_sent(0)
    tx.on_ack(1, 0, 50 * MS)
    drive(tx, queuing_ms, acks)
    assert tx.cwnd >= MIN_CWND * 1000
    assert tx.cwnd <= tx.flight_bytes + 2 * 1000 + 1e-6  # never far above what is in flight (ALLOWED_INCREASE)


def test_loss_halves_once_per_rtt_and_timeout_falls_to_one_packet() -> None:
    tx = LedbatSender(1000)
    tx.cwnd = 20_000.0
    for _ in range(20):
        tx.on_sent(0)
    tx.on_ack(10 * MS, 5, 50 * MS)  # 0, 1 and 2 are three or more behind: lost
    assert tx.losses == 3 and tx.cwnd == pytest.approx(10_000, rel=0.01)
    tx.on_ack(11 * MS, 6, 50 * MS)  # 3 lost too, within the same RTT: no second halving
    assert tx.losses == 4 and tx.cwnd == pytest.approx(10_000, rel=0.05)
    t = tx.next_timer_ns()
    assert t is not None
    tx.on_timer(t)
    assert tx.cwnd == 1000 and not tx.outstanding


def test_sender_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="target 0 ns"):
        LedbatSender(1000, target_ns=0)


@given(st.integers(0, 2**32 - 1), st.integers(-2**63, 2**63 - 1))
def test_ack_codec_round_trip(seq: int, owd: int) -> None:
    assert decode_ledbat_ack(encode_ledbat_ack(seq, owd)) == (seq, owd)
