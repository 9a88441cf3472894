"""TFRC's cores (hosts/tfrc): the equation, the loss event rate, the sender's rules, the report codec."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hosts.tfrc import LossEvents, TfrcReceiver, TfrcReport, TfrcSender, loss_rate_for, throughput_Bps
from hosts.tfrc.loss_events import WEIGHTS
from hosts.tfrc.sender import T_MBI_S
from hosts.tfrc.wire import decode_report, encode_report

MS = 1_000_000


# ---- the equation ------------------------------------------------------------------------------------
def test_equation_as_sources_state_it() -> None:
    s, r, p = 1000, 0.1, 0.01
    expected = s / (r * math.sqrt(2 * p / 3) + 4 * r * 3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p * p))
    assert throughput_Bps(s, r, p) == pytest.approx(expected)


@given(st.floats(1e-6, 0.5), st.floats(1e-6, 0.5), st.floats(0.001, 2), st.integers(100, 9000))
def test_equation_falls_with_loss_and_rtt(p1: float, p2: float, rtt: float, s: int) -> None:
    lo, hi = sorted((p1, p2))
    assert throughput_Bps(s, rtt, lo) >= throughput_Bps(s, rtt, hi)
    assert throughput_Bps(s, rtt, lo) >= throughput_Bps(s, rtt * 2, lo)


@given(st.floats(1e-5, 0.9), st.floats(0.005, 1.0))
def test_loss_rate_for_inverts_the_equation(p: float, rtt: float) -> None:
    x = throughput_Bps(1000, rtt, p)
    assert loss_rate_for(x, 1000, rtt) == pytest.approx(p, rel=1e-6)


@pytest.mark.parametrize(("args", "what"), [((0, 0.1, 0.1), "s 0"), ((1000, 0.1, 0.0), "loss event rate 0"),
                                            ((1000, 0.1, 1.5), "loss event rate 1.5")])
def test_equation_refuses_nonsense(args: tuple[float, float, float], what: str) -> None:
    with pytest.raises(ValueError, match=what):
        throughput_Bps(*args)


# ---- loss events ---------------------------------------------------------------------------------------
def feed(ev: LossEvents, seqs: list[int], gap_ns: int = MS, rtt_ns: int = 10 * MS) -> int:
    return sum(ev.on_packet(s, s * gap_ns, rtt_ns) for s in seqs)


def test_a_loss_needs_three_later_packets() -> None:
    ev = LossEvents()
    assert feed(ev, [0, 1, 3, 4]) == 0 and ev.lost == 0
    assert feed(ev, [5]) == 1 and ev.lost == 1


def test_reordering_within_three_is_not_loss_beyond_is() -> None:
    ev = LossEvents()
    feed(ev, [0, 1, 3, 4, 2, 5, 6])  # 2 overtaken by two
    assert ev.lost == 0 and ev.late == 0
    feed(ev, [7, 9, 10, 11, 8, 12])  # 8 overtaken by three: lost, then late
    assert ev.lost == 1 and ev.late == 1 and ev.events == 1


def test_losses_within_one_rtt_are_one_event() -> None:
    ev = LossEvents()
    seqs = [s for s in range(200) if s not in (50, 52, 54, 150)]
    feed(ev, seqs, gap_ns=MS, rtt_ns=10 * MS)  # 50..54 within 10 ms, 150 a new event
    assert ev.lost == 4 and ev.events == 2 and ev.intervals == [100]


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=12), st.integers(1, 10_000))
def test_loss_event_rate_is_the_weighted_mean_with_or_without_the_open_interval(closed: list[int], current: int) -> None:
    ev = LossEvents()
    ev.intervals = closed[:8]
    ev.current = current
    w = WEIGHTS

    def mean(vals: list[int]) -> float:
        return sum(v * x for v, x in zip(vals, w)) / sum(w[:len(vals)])

    expected = 1 / max(mean(closed[:8]), mean([current, *closed][:8]))
    assert ev.loss_event_rate() == pytest.approx(expected)
    assert ev.loss_event_rate() <= 1 / mean(closed[:8]) + 1e-12  # the open interval can only lower p


def test_no_loss_no_rate() -> None:
    ev = LossEvents()
    feed(ev, list(range(100)))
    assert ev.loss_event_rate() == 0.0


# ---- receiver and sender --------------------------------------------------------------------------------
def test_receiver_reports_once_per_rtt_and_at_once_on_a_new_event() -> None:
    rx = TfrcReceiver(1000)
    assert rx.on_data(0, 0, 0, 1000, 20 * MS) == []
    assert rx.next_timer_ns() == 20 * MS
    (r,) = rx.on_timer(20 * MS)
    assert r.p == 0 and r.x_recv_Bps == pytest.approx(1000 / 0.02)
    got = [rep for s in range(1, 40) if s != 20 for rep in rx.on_data(20 * MS + s, s, s, 1000, 20 * MS)]
    assert len(got) == 1 and got[0].p > 0  # the loss of 20, reported at once, with a seeded interval


def test_sender_initial_rate_then_equation_then_floor() -> None:
    tx = TfrcSender(1000)
    assert tx.rate_bps == 8000  # one packet per second before any report
    tx.on_sent(0)
    tx.on_report(100 * MS, TfrcReport(0, 0, 50_000, 0.0))
    assert tx.rtt_ns == 100 * MS and tx.x_Bps == pytest.approx(min(4 * 1000, max(2 * 1000, 4380)) / 0.1)  # W_init / R
    tx.on_report(200 * MS, TfrcReport(100 * MS, 0, 1e9, 0.01))
    assert tx.x_Bps == pytest.approx(throughput_Bps(1000, 0.1, 0.01))
    tx.on_report(300 * MS, TfrcReport(200 * MS, 0, 10.0, 0.5))
    assert tx.x_Bps == pytest.approx(max(20.0, 1000 / T_MBI_S))  # min(X_calc, 2 X_recv), not below s/t_mbi


def test_sender_halves_without_feedback() -> None:
    tx = TfrcSender(1000)
    tx.on_sent(0)
    tx.on_report(100 * MS, TfrcReport(0, 0, 50_000, 0.0))
    rate, t = tx.x_Bps, tx.nofeedback_ns
    assert t is not None
    tx.on_timer(t - 1)
    assert tx.x_Bps == rate
    tx.on_timer(t)
    assert tx.x_Bps == rate / 2


@given(st.integers(0, 2**63), st.integers(0, 2**40), st.floats(0, 1e12), st.floats(0, 1))
def test_report_codec_round_trip(t: int, d: int, x: float, p: float) -> None:
    assert decode_report(encode_report(TfrcReport(t, d, x, p))) == TfrcReport(t, d, x, p)


def test_report_codec_refuses_garbage() -> None:
    with pytest.raises(ValueError, match="need 32"):
        decode_report(b"\0" * 5)
    with pytest.raises(ValueError, match="out of range"):
        decode_report(encode_report(TfrcReport(0, 0, 1.0, 0.5))[:24] + b"\x40" * 8)
