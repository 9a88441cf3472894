"""pgmcc's sans-I/O cores (hosts/pgmcc): the message codec, the receivers' loss estimate and ACK mask,
the acker election, the TCP-like window, repairs and the timeout, and sender and receivers closed in a
loop over a toy network of one bottleneck and per-receiver branches (independent of the simulator)."""

from __future__ import annotations

import heapq
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hosts.pgmcc import (
    ACK,
    NAK,
    NO_SEQ,
    AckerElection,
    DataTag,
    Feedback,
    PgmccParams,
    PgmccReceiver,
    PgmccSender,
    decode_data,
    decode_feedback,
    encode_data,
    encode_feedback,
    throughput,
)
from hosts.pgmcc.window import Window

MS = 1_000_000
S = 1_000_000_000


# ---- wire ----------------------------------------------------------------------------------------------------
@given(st.integers(0, 2**32 - 1), st.integers(0, 65535), st.booleans())
def test_data_tag_round_trips(seq: int, acker: int, repair: bool) -> None:
    tag = DataTag(seq, acker, repair)
    assert decode_data(encode_data(tag)) == tag


@given(
    st.sampled_from([ACK, NAK]),
    st.integers(1, 65534),
    st.integers(0, 2**32 - 1),
    st.floats(0, 1),
    st.integers(-(2**62), 2**62),
    st.integers(0, 4_000_000).map(lambda us: us * 1000),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
)
def test_feedback_round_trips(
    typ: int, rid: int, rx: int, p: float, ts: int, hold: int, seq: int, mask: int
) -> None:
    fb = Feedback(typ, rid, rx, p, ts, hold, seq, mask)
    back = decode_feedback(encode_feedback(fb))
    assert back.p == pytest.approx(p, abs=2**-31)
    assert (back.type, back.rid, back.rx_max, back.ts_echo_ns, back.hold_ns, back.nak_seq, back.mask) == (
        typ,
        rid,
        rx,
        ts,
        hold,
        seq,
        mask,
    )


def test_bad_feedback_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="need"):
        decode_feedback(b"\x01" * 5)
    with pytest.raises(ValueError, match="type 9"):
        decode_feedback(b"\x09" + bytes(31))


def test_bad_params_name_the_value() -> None:
    with pytest.raises(ValueError, match="switch_ratio 1.5"):
        PgmccParams(switch_ratio=1.5)
    with pytest.raises(ValueError, match="timeout"):
        PgmccParams(timeout_ns=0)
    with pytest.raises(ValueError, match="loss_weight"):
        PgmccParams(loss_weight=1.0)


# ---- the receiver -------------------------------------------------------------------------------------------
@given(st.lists(st.booleans(), min_size=1, max_size=400), st.floats(0.001, 0.5))
def test_loss_estimate_is_the_filter_over_transmissions(arrived: list[bool], w: float) -> None:
    """Differential: the receiver's p against the filter run by hand over the same loss indicators
    (transmissions after the last arrival are not yet known lost)."""
    arrived = [True, *arrived]
    r = PgmccReceiver(1, PgmccParams(loss_weight=w))
    for seq, ok in enumerate(arrived):
        if ok:
            r.on_data(seq * MS, seq, seq, 0, seq * MS)
    last = max(i for i, ok in enumerate(arrived) if ok)
    p = 0.0
    for ok in arrived[: last + 1]:
        p = (1 - w) * p + (0.0 if ok else w)
    assert r.p == pytest.approx(p, rel=1e-9, abs=1e-12)
    assert r.lost == arrived[: last + 1].count(False)


@given(st.sets(st.integers(0, 120), min_size=1), st.randoms(use_true_random=False))
def test_ack_mask_shows_exactly_the_transmissions_received(got: set[int], rng: random.Random) -> None:
    """Whatever the order of arrival, the last ACK's bit i says whether rx_max - 1 - i arrived."""
    order = sorted(got)
    rng.shuffle(order)
    r = PgmccReceiver(7)
    acks = [fb for i, seq in enumerate(order) for fb in r.on_data(i, seq, seq, 7, i) if fb.type == ACK]
    assert len(acks) == len(order)
    last = acks[-1]
    assert last.rx_max == max(got)
    for i in range(32):
        s = last.rx_max - 1 - i
        shown = bool(last.mask >> i & 1)
        assert shown == (s in got and s >= 0 and last.rx_max - s < 64), (i, s)


def test_only_the_named_acker_acks_and_a_join_report_is_sent_while_there_is_none() -> None:
    r = PgmccReceiver(3)
    first = r.on_data(0, 0, 0, 0, 0)
    assert [(f.type, f.nak_seq) for f in first] == [(NAK, NO_SEQ)]
    assert r.on_data(1, 1, 1, 5, 1) == []
    (ack,) = r.on_data(2, 2, 2, 3, 2)
    assert ack.type == ACK and ack.rx_max == 2 and ack.mask & 0b11 == 0b11


def test_gaps_in_data_are_nakked_once_then_again_until_repaired_or_given_up() -> None:
    r = PgmccReceiver(2, PgmccParams(nak_retries=2))
    r.on_data(0, 0, 0, 9, 0)
    naks = r.on_data(10 * MS, 1, 3, 9, 10 * MS, rtt_hint_ns=50 * MS)  # data 1 and 2 lost
    assert sorted(f.nak_seq for f in naks) == [1, 2]
    assert r.next_timer_ns() == 10 * MS + 100 * MS
    r.on_data(20 * MS, 2, 1, 9, 20 * MS)  # the repair of 1
    assert r.repaired == 1 and r.missing == 1
    again = r.on_timer(110 * MS)
    assert [f.nak_seq for f in again] == [2] and again[0].hold_ns == 90 * MS
    r.on_timer(210 * MS)
    assert r.on_timer(310 * MS) == [] and r.unrecovered == 1 and r.next_timer_ns() is None


# ---- the election -------------------------------------------------------------------------------------------
@given(st.floats(1e-4, 0.5), st.floats(1, 1000), st.floats(1e-4, 0.5), st.floats(1, 1000), st.floats(0.1, 1))
def test_a_receiver_takes_over_iff_its_throughput_is_below_c_times_the_ackers(
    p_j: float, rtt_j: float, p_i: float, rtt_i: float, c: float
) -> None:
    e = AckerElection(c)
    assert e.on_report(0, 1, p_j, rtt_j * MS)  # the first report elects
    took = e.on_report(1, 2, p_i, rtt_i * MS)

    def m(rtt: float, p: float) -> float:  # the draft's 1/T (section 2.4), constants dropped
        return rtt * math.sqrt(p) * (1 + 9 * p * (1 + 32 * p**2))

    expected = 1 / m(rtt_i, p_i) < c / m(rtt_j, p_j)
    assert took == expected
    assert e.acker == (2 if expected else 1)
    assert len(e.switches) == 1 + took


def test_the_estimate_is_the_drafts_equation_with_its_timeout_term() -> None:
    """Draft section 2.4: the 9p(1 + 32p²) term makes a lossy receiver worse than 1/√p alone says: 8 %
    loss at half the RTT of a 2 % receiver reads as the worse one (with 1/(RTT·√p) they would tie)."""
    assert throughput(200 * MS, 0.08) < throughput(400 * MS, 0.02)
    assert throughput(100 * MS, 0.01) == pytest.approx(1e9 / (100 * MS * 0.1 * (1 + 0.09 * (1 + 32e-4))))


def test_the_defaults_are_the_drafts() -> None:
    """RTT on the clock (section 2.5.4), the loss filter's 500/65536 (section 2.6), c the seed's 2/3."""
    d = PgmccParams()
    assert d.rtt == "time"
    assert d.loss_weight == 500 / 65536
    assert d.switch_ratio == pytest.approx(2 / 3)


def test_no_loss_reads_as_infinite_throughput() -> None:
    assert throughput(100 * MS, 0.0) == math.inf
    e = AckerElection(2 / 3)
    e.on_report(0, 1, 0.0, 10 * MS)
    assert e.on_report(1, 2, 0.001, 10 * MS)  # any loss beats a lossless acker
    assert not e.on_report(2, 3, 0.0, 500 * MS)  # a lossless receiver never takes over


@pytest.mark.parametrize("unit", ["time", "packets"])
def test_the_election_rtt_is_the_clocks_or_the_transmissions_since_the_reports_rx_max(unit: str) -> None:
    s = PgmccSender(PgmccParams(rtt=unit))
    s.take(0)
    s.on_feedback(50 * MS, Feedback(NAK, 1, 0, 0.01, 0, 0, NO_SEQ))  # elects 1
    now = 100 * MS
    for _ in range(6):  # a few round trips with the acker: the window opens, next_tx moves on
        sent = []
        while s.can_send():
            sent.append(s.take(now).tx_seq)
        now += 100 * MS
        s.on_feedback(now, Feedback(ACK, 1, sent[-1], 0.01, now - 100 * MS, 0, mask=2**32 - 1))
    assert s.next_tx > 20
    assert s.election.acker_rtt_ns == (s.next_tx - sent[-1] if unit == "packets" else 100 * MS)
    # the throughput compared is 1 / (RTT · sqrt(p)) in the same unit for everyone
    assert s.election.acker_throughput() == pytest.approx(
        (1 if unit == "packets" else 1e9) / (s.election.acker_rtt_ns * math.sqrt(0.01) * (1 + 0.09 * 1.0032))
    )
    s.on_feedback(now + 30 * MS, Feedback(NAK, 2, s.next_tx - 7, 0.02, now - 10 * MS, 5 * MS, 3))
    p, rtt = s.receivers[2]
    assert p == 0.02
    assert rtt == (7 if unit == "packets" else 35 * MS)


# ---- the window ----------------------------------------------------------------------------------------------
def test_window_opens_exponentially_to_4_then_halves_once_and_holds_for_an_rtt() -> None:
    """Draft section 2.2: SSTHRESH fixed at 4 packets; a loss halves W once, and W does not move again
    until an ACK reports the first transmission sent after the cut."""
    w = Window(1000)
    for s in range(4):
        w.on_sent(s)
    assert w.on_ack(3, 0b111, 4) == 4
    cwnd = 4.0  # 1 -> 4 exponentially, the fourth ACK linear
    cwnd += 1 / cwnd
    assert w.cwnd == pytest.approx(cwnd) and w.ssthresh == 4
    for s in range(4, 12):
        w.on_sent(s)
    # 4 and 5 lost, 6..11 received: one cut for both, and no growth from 6..11 (sent before the cut)
    mask = sum(1 << (11 - 1 - s) for s in range(6, 11))
    w.on_ack(11, mask, 12)
    assert w.cuts == 1 and w.losses == 2 and not w.inflight
    assert w.cwnd == pytest.approx(cwnd / 2) and w.recover == 12
    w.on_sent(12)
    w.on_ack(12, 0xFFFF_FFFF, 13)  # feedback for the first transmission after the cut: growth again
    assert w.cwnd == pytest.approx(cwnd / 2 + 1)  # below the threshold of 4: exponential


def test_a_loss_needs_three_later_transmissions_acknowledged() -> None:
    """Draft section 2.2: an unacknowledged packet is lost once 3 acknowledged ones follow it; later
    transmissions that are missing too do not count."""
    w = Window(1000, cwnd=20)
    for s in range(6):
        w.on_sent(s)
    w.on_ack(5, 0b00001, 6)  # 0..3 missing, 4 and 5 received: 2 acknowledged after each
    assert w.losses == 0 and list(w.inflight) == [0, 1, 2, 3]
    w.on_sent(6)
    w.on_ack(6, 0b00011, 7)  # 6 too: 0..3 now have 3 acknowledged after them
    assert w.losses == 4 and w.cuts == 1 and not w.inflight


def test_a_transmission_the_acks_can_no_longer_report_leaves_the_window_neither_acked_nor_lost() -> None:
    """Older than the ACK's mask reaches (here after 40 ACKs lost): not declared lost (no cut, no
    growth), and out of the window: kept, it would hold a place for good, since the ACKs that keep
    coming re-arm the timeout that alone would clear it."""
    w = Window(1000, cwnd=60)
    for s in range(41):
        w.on_sent(s)
    cwnd = w.cwnd
    w.on_ack(40, 0xFFFF_FFFF, 41)  # reports 8..40 received; 0..7 beyond its reach
    assert w.cuts == 0 and w.losses == 0 and w.unreported == 8 and w.acked == 33 and not w.inflight
    assert w.cwnd > cwnd  # the 33 acknowledged ones open it; the 8 unreported do not


@given(st.lists(st.booleans(), min_size=1, max_size=200))
def test_every_transmission_is_resolved_once(arrived: list[bool]) -> None:
    """Acked + declared lost + still in flight = sent, whatever the acker received."""
    w = Window(10_000)
    r = PgmccReceiver(1)
    for s, ok in enumerate(arrived):
        w.on_sent(s)
        if ok:
            (ack,) = [f for f in r.on_data(s, s, s, 1, s) if f.type == ACK]
            w.on_ack(ack.rx_max, ack.mask, s + 1)
    assert w.acked + w.losses + w.unreported + len(w.inflight) == len(arrived)
    assert w.acked == arrived.count(True)


# ---- the sender ----------------------------------------------------------------------------------------------
def test_nothing_is_acked_before_an_acker_and_the_first_report_elects_and_restarts() -> None:
    s = PgmccSender()
    tx = s.take(0)
    assert tx.tag.acker == 0 and not s.can_send()
    s.on_feedback(30 * MS, Feedback(NAK, 4, 0, 0.0, 0, 0))
    assert s.acker == 4 and s.can_send() and s.take(30 * MS).tag.acker == 4


@pytest.mark.parametrize("fixed", [None, 3 * S])
def test_a_timeout_returns_to_one_packet(fixed: int | None) -> None:
    s = PgmccSender(PgmccParams(timeout_ns=fixed))
    s.take(0)  # before any report: no acker, RFC 6298's initial RTO
    assert s.next_timer_ns() == (fixed if fixed else 1 * S)
    s.on_feedback(50 * MS, Feedback(NAK, 1, 0, 0.0, 0, 0))  # elects 1; it measured 50 ms
    s.take(50 * MS)
    deadline = s.next_timer_ns()
    assert deadline == 50 * MS + (fixed if fixed else 250 * MS)  # R + max(200 ms, 2R) from the report's R
    s.on_timer(deadline - 1)
    assert s.timeouts == 0
    s.on_timer(deadline)
    assert s.timeouts == 1 and s.window.cwnd == 1 and s.can_send()
    assert s.initial_rto_timeouts == 0


def test_a_timeout_before_any_report_is_counted_as_armed_from_the_initial_rto() -> None:
    s = PgmccSender()
    s.take(0)
    s.on_timer(1 * S)
    assert s.timeouts == 1 and s.initial_rto_timeouts == 1 and s.acker == 0


def test_a_new_ackers_timer_starts_from_the_rtt_its_electing_report_measured() -> None:
    """Not from state kept since it was last the acker: its path's queue may have grown since (draft
    section 2.7 restarts SRTT and RTTVAR on a change of acker; RFC 6298 2.2 starts them from one sample)."""
    s = PgmccSender()
    s.on_feedback(100 * MS, Feedback(NAK, 2, 0, 0.05, 0, 0))
    t = 100 * MS
    for _ in range(30):  # receiver 2 acks every packet 100 ms later: a tight RTO
        tx = s.take(t)
        t += 100 * MS
        s.on_feedback(t, Feedback(ACK, 2, tx.tx_seq, 0.05, t - 100 * MS, 0, mask=0xFFFF_FFFF))
    assert s.rto.rto_ns < 400 * MS
    s.on_feedback(t, Feedback(NAK, 1, 0, 0.5, t - 200 * MS, 0, nak_seq=NO_SEQ))  # 1 far worse: takes over
    assert s.acker == 1
    s.on_feedback(t + 1 * S, Feedback(NAK, 2, 0, 0.9, t - 200 * MS, 0, nak_seq=NO_SEQ))  # 2 back, at 1.2 s
    assert s.acker == 2 and s.rto.srtt_ns == 1200 * MS
    tx = s.take(t + 1 * S)
    assert tx.tag.acker == 2 and s.next_timer_ns() == t + 1 * S + 1200 * MS + 2400 * MS


def test_two_successive_timeouts_drop_the_acker_and_the_receivers_elect_again() -> None:
    """Draft sections 2.7 and 3: after RETRY_MAX (2) timeouts with no feedback between them the sender
    names no acker; a receiver seeing such a packet reports once, and that report elects."""
    s = PgmccSender()
    s.on_feedback(0, Feedback(NAK, 1, 0, 0.0, 0, 0))
    s.take(0)
    t = s.next_timer_ns() or 0
    s.on_timer(t)
    assert s.acker == 1 and s.timeouts == 1
    s.on_feedback(t, Feedback(NAK, 2, 0, 0.0, t, 0))  # feedback ends the run (2 is no worse than 1)
    s.take(t)
    t = s.next_timer_ns() or 0
    s.on_timer(t)
    assert s.acker == 1 and s.timeouts == 2
    s.take(t)
    t = s.next_timer_ns() or 0
    s.on_timer(t)
    assert s.acker == 0 and s.reelections == 1
    tx = s.take(t)
    assert tx.tag.acker == 0
    r = PgmccReceiver(2)
    r.on_data(0, 0, 0, 1, 0)
    (report,) = r.on_data(1, tx.tx_seq, 1, 0, 1)
    assert report.type == NAK and report.nak_seq == NO_SEQ
    assert r.on_data(2, tx.tx_seq + 1, 2, 0, 2) == []  # once per acker-less spell
    s.on_feedback(t + 1, report)
    assert s.acker == 2 and s.can_send()


def test_after_a_switch_the_old_ackers_acks_only_vote_and_the_new_ackers_ack_resolves_the_window() -> None:
    """Draft sections 2.3 and 3: a switch leaves W alone; an ACK of the old acker still in flight is a
    report for the election (it can take the role back), never a window update; the new acker's first
    ACK acknowledges, from its mask, the transmissions that named the old acker."""
    s = PgmccSender()
    s.on_feedback(0, Feedback(NAK, 1, 0, 0.001, 0, 0))
    s.window.cwnd = 8.0
    sent = [s.take(0).tx_seq for _ in range(8)]
    assert not s.can_send()
    s.on_feedback(10 * MS, Feedback(NAK, 2, 3, 0.05, 0, 0, nak_seq=NO_SEQ))  # far worse: takes over
    assert s.acker == 2 and s.window.cwnd == 8.0
    s.on_feedback(20 * MS, Feedback(ACK, 1, sent[2], 0.001, 0, 0, mask=0b11))
    assert s.acker == 2 and s.stale_acks == 1 and len(s.window.inflight) == 8 and s.window.acked == 0
    s.on_feedback(30 * MS, Feedback(ACK, 1, sent[3], 0.2, 0, 0, mask=0b111))  # now the worst: back
    assert s.acker == 1 and s.window.acked == 0
    s.on_feedback(40 * MS, Feedback(NAK, 2, 5, 0.3, 0, 0, nak_seq=NO_SEQ))  # 2 again
    assert s.acker == 2
    s.on_feedback(50 * MS, Feedback(ACK, 2, sent[7], 0.3, 0, 0, mask=0b1111111))
    assert s.window.acked == 8 and not s.window.inflight and s.window.cuts == 0


def test_a_switch_with_the_window_full_sends_one_packet_naming_the_new_acker_and_times_it() -> None:
    """The new acker ACKs only packets that name it, and the old acker's ACKs only vote: with the window
    full and no token, the sender would wait for its timeout after every switch. One token (the draft's
    section 3 gives one to a newly elected acker) sends one packet naming it; its timeout starts then;
    the new acker's ACK of it resolves the window and clocks the loop again."""
    s = PgmccSender()
    s.on_feedback(0, Feedback(NAK, 1, 0, 0.001, 0, 0))
    for _ in range(20):  # a warm loop with receiver 1: its RTO state
        tx = s.take(0)
        s.on_feedback(100 * MS, Feedback(ACK, 1, tx.tx_seq, 0.001, 0, 0, mask=0xFFFF_FFFF))
    s.window.cwnd = 8.0
    sent = [s.take(100 * MS).tx_seq for _ in range(8)]
    assert not s.can_send()
    s.on_feedback(150 * MS, Feedback(NAK, 2, 3, 0.05, 50 * MS, 0, nak_seq=NO_SEQ))  # far worse: takes over
    assert s.acker == 2 and s.can_send()
    tx = s.take(150 * MS)
    assert tx.tag.acker == 2 and not s.can_send() and s.switch_tokens == 1 and len(s.window.inflight) == 9
    assert s.next_timer_ns() == 150 * MS + s.rto.rto_ns  # the new acker's timer, from this packet
    s.on_feedback(200 * MS, Feedback(ACK, 1, sent[-1], 0.001, 0, 0, mask=0xFF))  # the old acker: a vote
    assert not s.can_send() and s.window.acked == 20
    s.on_feedback(260 * MS, Feedback(ACK, 2, tx.tx_seq, 0.05, 150 * MS, 0, mask=0x1FF))
    assert s.window.acked == 29 and not s.window.inflight and s.can_send() and s.timeouts == 0


def test_a_switch_token_is_one_packet_not_a_credit() -> None:
    """With room in the window the token changes nothing; it does not outlive the next packet, nor a
    timeout."""
    s = PgmccSender()
    s.on_feedback(0, Feedback(NAK, 1, 0, 0.001, 0, 0))
    s.window.cwnd = 4.0
    s.take(0)
    s.on_feedback(10 * MS, Feedback(NAK, 2, 0, 0.05, 0, 0, nak_seq=NO_SEQ))
    assert s.acker == 2
    for _ in range(3):
        s.take(10 * MS)
    assert not s.can_send() and s.switch_tokens == 0
    s.on_feedback(20 * MS, Feedback(NAK, 1, 0, 0.5, 0, 0, nak_seq=NO_SEQ))  # back to 1
    t = s.next_timer_ns() or 0
    s.on_timer(t)
    assert s.timeouts == 1 and s.can_send()
    s.take(t)
    assert not s.can_send()  # one packet: the window of 1, the token gone with the timeout


def test_repairs_go_first_and_one_loss_is_repaired_once_per_rtt() -> None:
    s = PgmccSender()
    s.on_feedback(0, Feedback(NAK, 1, 0, 0.0, 0, 0))
    for _ in range(3):
        s.window.cwnd = 10
        s.take(0)
    for rid in (1, 2, 3):  # three receivers lost data 1
        s.on_feedback(10 * MS, Feedback(NAK, rid, 2, 0.01, 0, 0, nak_seq=1))
    tx = s.take(10 * MS)
    assert tx.tag == DataTag(1, s.acker, True)
    assert s.take(11 * MS).tag == DataTag(3, s.acker, False)  # no second repair for the same loss
    assert s.repairs_sent == 1


# ---- the loop over a toy network ---------------------------------------------------------------------------------
class ToyNet:
    """One sender, a drop-tail bottleneck (rate, queue, delay), then per-receiver branches (extra delay,
    independent random loss); feedback comes back over the same delays without loss."""

    def __init__(
        self,
        rate_pps: float,
        queue: int,
        delay_ns: int,
        branches: dict[int, tuple[int, float]],
        params: PgmccParams,
        seed: int = 1,
    ) -> None:
        self.gap = round(S / rate_pps)
        self.queue, self.delay = queue, delay_ns
        self.branches = branches
        self.rng = random.Random(seed)
        self.sender = PgmccSender(params)
        self.receivers = {rid: PgmccReceiver(rid, params) for rid in branches}
        self.events: list[tuple[int, int, str, object]] = []
        self.n = 0
        self.busy_until = 0
        self.backlog: list[int] = []  # departure times of the queued packets
        self.drops = 0
        self.timers: set[int] = set()
        self.rtimers: set[tuple[int, int]] = set()

    def at(self, t: int, what: str, arg: object) -> None:
        self.n += 1
        heapq.heappush(self.events, (t, self.n, what, arg))

    def pump(self, now: int) -> None:
        while self.sender.can_send():
            tx = self.sender.take(now)
            self.backlog = [d for d in self.backlog if d > now]
            if len(self.backlog) >= self.queue:
                self.drops += 1
                continue
            self.busy_until = max(self.busy_until, now) + self.gap
            self.backlog.append(self.busy_until)
            for rid, (extra, loss) in self.branches.items():
                if self.rng.random() >= loss:
                    self.at(self.busy_until + self.delay + extra, "data", (rid, tx, now))
        t = self.sender.next_timer_ns()
        if t is not None and t not in self.timers:  # one event per deadline
            self.timers.add(t)
            self.at(t, "timer", None)

    def run(self, until: int) -> None:
        self.pump(0)
        while self.events and self.events[0][0] <= until:
            now, _, what, arg = heapq.heappop(self.events)
            if what == "data":
                rid, tx, ts = arg  # type: ignore[misc]
                r = self.receivers[rid]
                for fb in r.on_data(now, tx.tx_seq, tx.tag.data_seq, tx.tag.acker, ts, tx.rtt_hint_ns):
                    self.at(now + self.delay + self.branches[rid][0], "fb", fb)
                t = r.next_timer_ns()
                if t is not None and (t, rid) not in self.rtimers:
                    self.rtimers.add((t, rid))
                    self.at(t, "rtimer", rid)
            elif what == "rtimer":
                r = self.receivers[arg]  # type: ignore[index]
                for fb in r.on_timer(now):
                    self.at(now + self.delay + self.branches[arg][0], "fb", fb)  # type: ignore[index]
                t = r.next_timer_ns()
                if t is not None and (t, arg) not in self.rtimers:
                    self.rtimers.add((t, arg))  # type: ignore[arg-type]
                    self.at(t, "rtimer", arg)
            elif what == "fb":
                self.sender.on_feedback(now, arg)  # type: ignore[arg-type]
            else:
                self.sender.on_timer(now)
            self.pump(now)


def test_identical_receivers_fill_the_bottleneck_without_switching() -> None:
    net = ToyNet(100, 20, 20 * MS, {1: (0, 0.0), 2: (0, 0.0), 3: (0, 0.0)}, PgmccParams())
    net.run(60 * S)
    s = net.sender
    assert net.drops > 0 and s.window.cuts > 0  # the window probes and backs off
    assert s.next_data > 0.8 * 100 * 60  # the bottleneck is kept busy most of the time
    # identical receivers see the same losses: no one is clearly worse than the first acker
    assert len(s.switches) == 1
    for r in net.receivers.values():
        assert r.unrecovered == 0 and r.delivered >= s.next_data - 50


def test_the_worst_receiver_becomes_the_acker_and_everyone_gets_every_packet() -> None:
    branches = {1: (0, 0.0), 2: (100 * MS, 0.02), 3: (10 * MS, 0.001)}
    net = ToyNet(100, 30, 10 * MS, branches, PgmccParams(), seed=3)
    net.run(120 * S)
    s = net.sender
    assert s.acker == 2  # long RTT and 2 % loss: the lowest 1/(RTT √p)
    assert s.repairs_sent > 0
    for r in net.receivers.values():
        assert r.unrecovered == 0
    # the session runs near the TCP rate of receiver 2's path, well under the bottleneck's
    assert s.next_data < 0.8 * 100 * 120


def test_a_fixed_long_timeout_stalls_longer_than_the_adaptive_one_after_a_blackout() -> None:
    """Behaviour, not a number: with the ACKs gone (every packet lost for a while), the adaptive
    timer, near a few RTTs, restarts the loop sooner than a fixed 5 s one."""
    sent = {}
    for timeout in (None, 5 * S):
        s = PgmccSender(PgmccParams(timeout_ns=timeout))
        s.on_feedback(0, Feedback(NAK, 1, 0, 0.0, 0, 0))
        t = 0
        for _ in range(50):  # a warm loop: each packet acked 40 ms later
            tx = s.take(t)
            s.on_feedback(t + 40 * MS, Feedback(ACK, 1, tx.tx_seq, 0.0, t, 0, mask=0xFFFF_FFFF))
            t += 40 * MS
        while s.can_send():
            s.take(t)
        deadline = s.next_timer_ns()
        assert deadline is not None
        sent[timeout] = deadline - t
    assert sent[None] < sent[5 * S]


def test_receivers_of_equal_throughput_trade_the_acker_without_stalling() -> None:
    """The seed's set 2 in miniature: two receivers that TCP's equation rates alike (RTT 400 ms at 0.4 %
    loss, 200 ms at 1.6 %), so noise in their estimates moves the acker back and forth. A switch comes
    with the window full; the new acker's token keeps the loop going, so switches do not end in
    timeouts."""
    branches = {1: (150 * MS, 0.004), 2: (50 * MS, 0.016)}
    net = ToyNet(800, 100, 50 * MS, branches, PgmccParams(), seed=2)
    net.run(300 * S)
    s = net.sender
    assert len(s.switches) > 4 and {sw.new for sw in s.switches} == {1, 2}
    assert s.switch_tokens > 0
    assert s.timeouts < len(s.switches) / 4
