"""The simulator's TCP model (hosts/tcp): its estimator, window laws and recovery, as properties.

The loop tests drive a sender and a receiver through a fixed-delay, fixed-rate pipe with chosen
losses (no simulator), so each RFC rule is seen on its own."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.tcp import Cubic, Reno, TcpReceiver, TcpSender, congestion_control
from hosts.tcp.cubic import ALPHA, BETA, C
from hosts.tcp.reno import AckInfo
from hosts.tcp.rto import INITIAL_RTO_NS, MAX_RTO_NS, MIN_VAR_TERM_NS, RtoEstimator
from tests.hosts.tcp_pipe import Pipe

MS = 1_000_000


# ---- RFC 6298 ---------------------------------------------------------------------------------------
def test_first_sample_and_initial_rto() -> None:
    e = RtoEstimator()
    assert e.rto_ns == INITIAL_RTO_NS
    e.on_sample(100 * MS)
    assert e.srtt_ns == 100 * MS and e.rttvar_ns == 50 * MS
    assert e.rto_ns == 100 * MS + max(MIN_VAR_TERM_NS, 4 * 50 * MS)


@given(st.lists(st.integers(1, 5_000 * MS), min_size=1, max_size=50), st.integers(0, 30))
def test_rto_bounds_and_backoff(samples: list[int], expiries: int) -> None:
    e = RtoEstimator()
    for s in samples:
        e.on_sample(s)
    base = e.rto_ns
    assert base >= e.srtt_ns + MIN_VAR_TERM_NS - 1
    for _ in range(expiries):
        e.on_expiry()
    assert e.rto_ns == min(MAX_RTO_NS, base << min(expiries, 16))
    e.on_sample(samples[-1])
    assert e.backoff == 0


# ---- window laws ------------------------------------------------------------------------------------
def ack(now: int, acked: int, rtt: int = 100 * MS, una: int = 0, nxt: int = 0) -> AckInfo:
    return AckInfo(now, acked, rtt, float(rtt), rtt, una, nxt)


@pytest.mark.parametrize("cc", [Reno(), Cubic(hystart=False)])
def test_slow_start_doubles_per_window_with_delayed_acks(cc: Reno | Cubic) -> None:
    start = cc.cwnd
    for _ in range(int(start) // 2):  # one window acknowledged two segments at a time
        cc.on_ack(ack(0, 2))
    assert cc.cwnd == 2 * start


def test_reno_congestion_avoidance_adds_one_segment_per_window() -> None:
    r = Reno()
    r.ssthresh = r.cwnd = 40.0
    for _ in range(20):
        r.on_ack(ack(0, 2))
    assert 40.9 < r.cwnd < 41.1


@given(st.floats(1, 10_000), st.integers(0, 20_000))
def test_reno_halves_cwnd_not_flight_and_ends_recovery_at_ssthresh(cwnd: float, flight: int) -> None:
    """Linux's tcp_reno_ssthresh: max(cwnd >> 1, 2) in whole segments, whatever the flight (with
    SACK it also counts what is SACKed above the holes)."""
    r = Reno()
    r.cwnd = cwnd
    assert r.on_loss(0, flight) == max(int(cwnd) // 2, 2)
    r.cwnd = 999.0
    r.on_recovered(0)
    assert r.cwnd == r.ssthresh
    r.on_timeout(0, flight)
    assert r.cwnd == 1


@given(st.floats(4, 5000))
def test_cubic_reduction_and_curve(cwnd: float) -> None:
    c = Cubic()
    c.cwnd = cwnd
    assert c.on_loss(0, int(cwnd)) == pytest.approx(max(cwnd * BETA, 2))
    c.on_recovered(0)
    c.on_ack(ack(0, 1))  # the epoch starts: the curve passes through W_max at K
    assert c.w_cubic(c.k_s) == pytest.approx(c.w_max)
    assert c.k_s == pytest.approx(((c.w_max - c.cwnd_epoch) / C) ** (1 / 3), rel=1e-6)


@given(st.floats(10, 500), st.floats(0.05, 20), st.integers(1, 400), st.integers(1, 400))
@settings(max_examples=50, deadline=None)
def test_cubic_aims_one_minimum_rtt_ahead_whatever_the_smoothed_rtt(cwnd: float, t_s: float, min_rtt_ms: int,
                                                                    queue_ms: int) -> None:
    """Linux's bictcp_update: the target is the curve at t + delay_min; a queue that inflates the
    smoothed RTT does not make the window grow faster."""
    grown = []
    for srtt_ms in (min_rtt_ms, min_rtt_ms + queue_ms):
        c = Cubic(hystart=False)
        c.cwnd = cwnd
        c.on_loss(0, int(cwnd))
        c.on_recovered(0)
        c.on_ack(AckInfo(0, 1, min_rtt_ms * MS, float(srtt_ms * MS), min_rtt_ms * MS, 0, 0))  # the epoch starts
        before = c.cwnd
        now = int(t_s * 1e9)
        c.on_ack(AckInfo(now, 1, min_rtt_ms * MS, float(srtt_ms * MS), min_rtt_ms * MS, 0, 0))
        grown.append(c.cwnd)
    assert grown[0] == grown[1]
    if c.w_cubic(t_s) < c.w_est:  # the Reno-friendly region: Reno's estimate sets the window
        assert grown[1] == pytest.approx(max(before, c.w_est))
    else:
        target = min(max(c.w_cubic(t_s + min_rtt_ms / 1e3), before), 1.5 * before)
        assert grown[1] == pytest.approx(before + (target - before) / before)


def test_cubic_fast_convergence_lowers_w_max() -> None:
    c = Cubic()
    c.cwnd = 100.0
    c.on_loss(0, 100)
    c.cwnd = 80.0  # lost again below the previous W_max
    c.on_loss(0, 80)
    assert c.w_max == pytest.approx(80 * (1 + BETA) / 2)


@given(st.floats(10, 2000), st.integers(1, 100))
@settings(max_examples=30, deadline=None)
def test_cubic_never_grows_more_than_half_a_window_per_rtt(cwnd: float, rtts: int) -> None:
    c = Cubic(hystart=False)
    c.cwnd = cwnd
    c.on_loss(0, int(cwnd))
    c.on_recovered(0)
    now = 0
    for _ in range(rtts):
        before = c.cwnd
        for _ in range(max(1, int(before) // 2)):
            c.on_ack(ack(now, 2))
        assert c.cwnd <= 1.5 * before + 1e-6
        now += 100 * MS


def test_cubic_short_rtt_runs_in_the_reno_friendly_region() -> None:
    """At 1 ms RTT the cubic curve barely moves in 200 RTTs; Reno's estimate sets the window."""
    c = Cubic(hystart=False)
    c.cwnd = 20.0
    c.on_loss(0, 20)
    c.on_recovered(0)
    now = 0
    for _ in range(200):
        for _ in range(int(c.cwnd) // 2):
            c.on_ack(ack(now, 2, rtt=MS))
        now += MS
    assert c.cwnd == pytest.approx(c.w_est) and c.cwnd > c.w_cubic((now - c.t_epoch_ns) / 1e9)


@given(st.integers(10, 60), st.integers(50, 300))
@settings(max_examples=20, deadline=None)
def test_cubic_reno_estimate_grows_by_alpha_even_past_the_last_maximum(cwnd: int, rtts: int) -> None:
    """Linux's tcp_friendliness: Reno's estimate grows by 3(1 - beta)/(1 + beta) per RTT throughout
    (RFC 9438's 1 past the previous W_max is not Linux's)."""
    c = Cubic(hystart=False)
    c.cwnd = float(cwnd)
    c.on_loss(0, cwnd)
    c.on_recovered(0)
    start, now = c.cwnd, 0
    for _ in range(rtts):  # 1 ms RTTs: the cubic curve barely moves, Reno's estimate sets the window
        for _ in range(int(c.cwnd) // 2):
            c.on_ack(ack(now, 2, rtt=MS))
        now += MS
    assert c.cwnd > cwnd  # well past the window before the reduction
    assert c.cwnd - start == pytest.approx(ALPHA * rtts, rel=0.1)


@given(st.integers(16, 200), st.integers(5, 300), st.integers(100, 1900))
@settings(max_examples=40, deadline=None)
def test_hystart_ack_train_leaves_slow_start_once_it_spans_half_the_path(cwnd: int, min_rtt_ms: int,
                                                                        spacing_us: int) -> None:
    """Linux's ACK train: ACKs at most 2 ms apart, from the round's first, for more than
    (min RTT + 1 ms) / 2 end slow start; without a rising RTT the delay test says nothing."""
    c = Cubic()
    c.cwnd = float(cwnd)
    spacing, threshold = spacing_us * 1000, (min_rtt_ms * MS + MS) // 2
    now, seq = 10**9, 1000
    while math.isinf(c.ssthresh) and now - 10**9 <= threshold + spacing:
        c.on_ack(AckInfo(now, 1, min_rtt_ms * MS, float(min_rtt_ms * MS), min_rtt_ms * MS, seq, 10**6))
        now, seq = now + spacing, seq + 1
    assert not math.isinf(c.ssthresh)
    assert now - spacing - 10**9 > threshold  # not before the train spans the threshold


def test_hystart_ack_train_needs_acks_close_together() -> None:
    c = Cubic()
    c.cwnd = 32.0
    for i in range(200):  # 3 ms apart: no train, and the RTT never rises
        c.on_ack(AckInfo(10**9 + 3 * MS * i, 1, 20 * MS, 20.0 * MS, 20 * MS, 1000 + i, 10**6))
    assert math.isinf(c.ssthresh)


@given(st.floats(20, 500), st.integers(1, 200))
@settings(max_examples=30, deadline=None)
def test_cubic_grows_5_percent_per_rtt_before_its_first_reduction(cwnd: float, rtt_ms: int) -> None:
    """Linux's bictcp_update caps cnt at 20 while last_max_cwnd is 0: the curve starts at the window
    itself and would barely move; after a reduction the curve alone sets the growth."""
    fresh = Cubic(hystart=False)
    fresh.cwnd = fresh.ssthresh = cwnd  # slow start left (HyStart) without a loss
    reduced = Cubic(hystart=False)
    reduced.cwnd = cwnd / BETA
    reduced.on_loss(0, int(cwnd))
    reduced.on_recovered(0)
    reduced.w_max = reduced.cwnd = cwnd  # the plateau at the last maximum
    for c in (fresh, reduced):
        start = c.cwnd
        for _ in range(int(start) // 2):  # one RTT of ACKs at the start of the epoch
            c.on_ack(ack(0, 2, rtt=rtt_ms * MS))
        c.growth = c.cwnd / start  # type: ignore[attr-defined]
    assert fresh.growth >= 1 + 0.05 * (int(cwnd) // 2 * 2) / cwnd - 1e-9  # type: ignore[attr-defined]
    assert reduced.growth < fresh.growth  # type: ignore[attr-defined]


def test_a_timeout_forgets_cubics_curve_and_hystarts_verdict() -> None:
    c = Cubic()
    c.cwnd = 100.0
    c.on_loss(0, 100)
    c.on_timeout(MS, 70)
    assert c.cwnd == 1 and c.ssthresh == pytest.approx(100 * BETA)
    assert c.w_max == 0 and not c.reduced


def test_hystart_leaves_slow_start_when_the_rtt_rises() -> None:
    c = Cubic()
    c.cwnd = 32.0
    for i in range(8):  # a round whose first 8 samples are 10 ms above the 20 ms minimum
        c.on_ack(AckInfo(0, 1, 30 * MS, 25.0 * MS, 20 * MS, 100 + i, 200))
    assert c.ssthresh == pytest.approx(c.cwnd, abs=1)
    quiet = Cubic()
    quiet.cwnd = 32.0
    for i in range(8):
        quiet.on_ack(AckInfo(0, 1, 21 * MS, 21.0 * MS, 20 * MS, 100 + i, 200))
    assert math.isinf(quiet.ssthresh)


def test_unknown_cc_is_named() -> None:
    with pytest.raises(ValueError, match=r"'bbr' is not modelled \(modelled: reno, cubic, none, cvihis-rtm\)"):
        congestion_control("bbr")


# ---- receiver ----------------------------------------------------------------------------------------
def test_receiver_quick_acks_then_every_second_segment_or_40ms() -> None:
    rx = TcpReceiver(quickacks=2)
    assert rx.on_syn(0, 5).syn
    acks = [rx.on_segment(i, i, 1448, 0, i + 1) for i in range(6)]
    assert [len(a) for a in acks] == [1, 1, 0, 1, 0, 1]
    assert rx.on_segment(10, 6, 1448, 0, 11) == [] and rx.next_timer_ns() == 10 + 40 * MS
    (late,) = rx.on_timer(10 + 40 * MS)
    assert late.ack == 7 and late.ts_echo_ns == 11


def test_receiver_answers_out_of_order_at_once_and_echoes_the_window_edge() -> None:
    rx = TcpReceiver(quickacks=0)
    rx.on_segment(0, 0, 1448, 0, 100)
    rx.on_segment(1, 1, 1448, 0, 101)  # ACK 2, echoes 100 (first of the two)
    dup = rx.on_segment(2, 3, 1448, 0, 103)  # 2 lost
    assert [(a.ack, a.ts_echo_ns) for a in dup] == [(2, 100)]
    fill = rx.on_segment(3, 2, 1448, 0, 104)  # the retransmission fills the hole
    assert [(a.ack, a.ts_echo_ns) for a in fill] == [(4, 104)]
    assert [s for s, _, _ in rx.take_delivered()] == [0, 1, 2, 3]


# ---- sender and receiver through a pipe --------------------------------------------------------------
def test_fast_retransmit_repairs_one_loss_without_a_timeout() -> None:
    tx = TcpSender(Reno(), start_ns=0, total_bytes=200 * 1448)
    p = Pipe(tx, TcpReceiver(), lambda n: n == 30)
    p.run(10_000 * MS)
    assert p.delivered == list(range(200))
    assert tx.retransmissions == 1 and tx.rto.backoff == 0 and tx.phase == "done"
    assert tx.cc.ssthresh < 1e9  # one reduction


def test_a_lost_window_tail_is_repaired_by_the_timer() -> None:
    tx = TcpSender(Cubic(), start_ns=0, total_bytes=20 * 1448)
    p = Pipe(tx, TcpReceiver(), lambda n: n >= 18)  # the last segments, and their first copies, lost once
    lost = set(range(18, 21))
    p.lose = lambda n: n in lost
    p.run(20_000 * MS)
    assert p.delivered == list(range(20)) and tx.cc.cwnd >= 1 and tx.retransmissions >= 2


@given(st.sets(st.integers(1, 400), max_size=40), st.sampled_from(["reno", "cubic", "none"]),
       st.sampled_from(["prr", "inflation"]), st.sampled_from(["flight", "dupacks"]))
@settings(max_examples=60, deadline=None)
def test_every_segment_arrives_once_in_order_whatever_is_lost(lost: set[int], cc: str, recovery: str,
                                                              pipe: str) -> None:
    tx = TcpSender(congestion_control(cc), start_ns=0, total_bytes=300 * 1448 - 100, recovery=recovery, pipe=pipe)
    p = Pipe(tx, TcpReceiver(), lambda n: n in lost)
    p.run(3_000_000 * MS)
    assert p.delivered == list(range(300))
    assert tx.phase == "done" and tx.bytes_acked == 300 * 1448 - 100


def test_without_congestion_control_a_loss_leaves_the_window_and_the_bytes_still_arrive() -> None:
    """``cc: none`` (the fabric's ``none`` control): the model's recovery repairs every loss while the
    window stays wide open, where Reno's halves."""
    outcomes = {}
    for name in ("none", "reno"):
        tx = TcpSender(congestion_control(name), start_ns=0, total_bytes=200 * 1448)
        p = Pipe(tx, TcpReceiver(), lambda n: n in (30, 31, 90))
        p.run(10_000 * MS)
        assert p.delivered == list(range(200)) and tx.phase == "done"
        outcomes[name] = tx.cc.cwnd
    assert outcomes["none"] >= 200 > outcomes["reno"]


def test_bulk_sender_stops_writing_at_stop() -> None:
    tx = TcpSender(Reno(), start_ns=0, stop_ns=500 * MS)
    p = Pipe(tx, TcpReceiver(), lambda n: False)
    p.run(2_000 * MS)
    assert p.delivered == list(range(tx.written)) and tx.snd_una == tx.written


def test_sender_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="total_bytes 0"):
        TcpSender(Reno(), start_ns=0, total_bytes=0)
    with pytest.raises(ValueError, match="recovery 'sack'"):
        TcpSender(Reno(), start_ns=0, recovery="sack")
    with pytest.raises(ValueError, match="pipe 'rfc'"):
        TcpSender(Reno(), start_ns=0, pipe="rfc")


def test_recovery_sends_in_proportion_while_the_flight_is_above_ssthresh() -> None:
    """PRR: entering recovery with 40 segments out and ssthresh 20, each duplicate ACK lets about
    half a segment go (ssthresh / RecoverFS), not one per ACK as window inflation would."""
    tx = TcpSender(Reno(), start_ns=0)
    tx.on_timer(0)
    tx.on_syn_ack(1, 1)
    tx.cc.cwnd = tx.cc.ssthresh = 40.0
    tx.on_ack(2, 0, 1)  # fill the window: 40 segments out
    sent = [s for i in range(3) for s in tx.on_ack(3 + i, 0, 1)]  # three duplicate ACKs: fast retransmit
    assert [s.seq for s in sent if s.retransmission] == [0] and tx.in_recovery and tx.cc.ssthresh == 20
    new = [s for i in range(20) for s in tx.on_ack(10 + i, 0, 1)]
    assert 9 <= len(new) <= 11 and not any(s.retransmission for s in new)


def test_receive_window_opens_with_in_order_data_and_never_shrinks() -> None:
    rx = TcpReceiver(quickacks=100)
    edges = [rx.on_syn(0, 1).window_end]
    for i in range(60):
        edges += [a.window_end for a in rx.on_segment(i, i, 1448, 0, i + 1)]
    assert edges[0] == 20 and edges == sorted(edges) and edges[-1] > 60
    hole = [a.window_end for i in range(61, 200) for a in rx.on_segment(i, i, 1448, 0, i + 1)]  # 60 lost
    assert set(hole) == {edges[-1]}  # nothing read while the hole is open: the edge stays


def test_sender_never_sends_past_the_window() -> None:
    tx = TcpSender(Reno(), start_ns=0)
    tx.on_timer(0)
    first = tx.on_syn_ack(10, 1, window_end=5)
    assert [s.seq for s in first] == [0, 1, 2, 3, 4]
    assert tx.on_ack(20, 2, 10, window_end=5) == []  # cwnd would allow more; the window does not
    assert [s.seq for s in tx.on_ack(30, 2, 10, window_end=8)] == [5, 6, 7]  # an update, not a duplicate ACK
    assert tx.dupacks == 0
