"""The TCP model's pacing hook (``TcpSender(pacer=...)``) and CVIHIS as its pacer (``hosts/cvihis_tcp.py``):
no data segment, new or retransmitted, leaves before the pacer allows it, and the model's recovery still
delivers every byte."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.cvihis import Command, CvihisParams, Feedback
from hosts.cvihis_tcp import CvihisPace, decode_tag, encode_tag
from hosts.tcp import NoControl, TcpReceiver, TcpSender

from .tcp_pipe import MS, Pipe


class FixedGap:
    """A pacer at one segment per ``gap_ns``; it logs each release."""

    def __init__(self, gap_ns: int) -> None:
        self.gap_ns = gap_ns
        self.releases: list[int] = []

    def release_ns(self, now_ns: int) -> int:
        return self.releases[-1] + self.gap_ns if self.releases else now_ns

    def on_release(self, now_ns: int) -> None:
        self.releases.append(now_ns)


class LoggingPipe(Pipe):
    """A pipe that also logs when each data segment left the sender."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.departures: list[tuple[int, int, bool]] = []  # (time, seq, retransmission)

    def send(self, now: int, segs: list) -> None:
        self.departures += [(now, s.seq, s.retransmission) for s in segs if not s.syn]
        super().send(now, segs)


def paced_run(gap_ns: int, lost: set[int], size: int = 120 * 1448) -> tuple[LoggingPipe, FixedGap, TcpSender]:
    pacer = FixedGap(gap_ns)
    tx = TcpSender(NoControl(), start_ns=0, total_bytes=size, pacer=pacer)
    # the link (0.1 ms a segment) is faster than the pace: only the pacer spaces the segments
    p = LoggingPipe(tx, TcpReceiver(), lambda n: False, delay=5 * MS, seg_ns=MS // 10, sack=True,
                    drop=lambda s: s.seq in lost and not s.retransmission)
    p.run(60_000 * MS)
    return p, pacer, tx


@settings(max_examples=25, deadline=None)
@given(st.integers(MS // 2, 3 * MS), st.sets(st.integers(0, 119), max_size=15))
def test_no_segment_leaves_faster_than_the_pace_and_recovery_delivers_everything(gap_ns, lost):
    p, pacer, tx = paced_run(gap_ns, lost)
    assert tx.phase == "done" and sorted(set(p.delivered)) == list(range(120))
    times = [t for t, _seq, _rtx in p.departures]
    assert times == pacer.releases  # every segment, retransmissions included, was released by the pacer
    assert all(b - a >= gap_ns for a, b in zip(times, times[1:]))
    assert sum(rtx for _t, _seq, rtx in p.departures) >= len(lost)


def test_an_unblocked_paced_flow_sends_at_exactly_the_pace():
    """With a window that never limits (none's) and no loss, the pace alone sets every gap: the send
    rate is the pacer's."""
    p, _pacer, _tx = paced_run(2 * MS, set())
    times = [t for t, _seq, _rtx in p.departures]
    assert {b - a for a, b in zip(times, times[1:])} == {2 * MS}


def test_a_paced_sender_needs_sack():
    with pytest.raises(ValueError, match="a paced sender needs sack=True"):
        TcpSender(NoControl(), start_ns=0, total_bytes=10_000, sack=False, pacer=FixedGap(MS))


def feedback(seq: int, command: Command, step: float, echo_ts: int) -> Feedback:
    return Feedback(fb_seq=seq, command=command, area=0, step_milli=round(step * 1000), gradient=0, loss=False,
                    rtm=True, echo_ts_ns=echo_ts, echo_delay_ns=0, lost_total=0)


def test_the_cvihis_pace_is_the_cvihis_senders_gap_and_follows_its_commands():
    """Each release waits the CVIHIS sender's current gap, and a command that raises its rate shortens
    the next gap (MD lengthens it): the paced rate is CVIHIS's."""
    pace = CvihisPace(CvihisParams(packet_size_bytes=1514, initial_rate_bps=1e6, max_rate_bps=10e6))
    assert pace.release_ns(5) == 5  # nothing sent yet: now
    pace.on_release(5)
    gap0 = pace.core.gap_ns
    assert pace.release_ns(6) == 5 + gap0
    pace.on_feedback(4 * MS, feedback(1, Command.STRONG_INCREASE, 0.7, echo_ts=5))
    assert pace.core.gap_ns < gap0 and pace.release_ns(6) == 5 + pace.core.gap_ns
    faster = pace.core.gap_ns
    pace.on_feedback(5 * MS, feedback(2, Command.MD, 0, echo_ts=5))
    assert pace.core.gap_ns > faster
    seq, ts, _hint = pace.take_stamp()
    assert (seq, ts) == (0, 5)
    with pytest.raises(RuntimeError, match="without a release"):
        pace.take_stamp()


@given(st.integers(0, 2**32 - 1))
def test_the_tag_carries_the_cvihis_sequence_number(seq):
    assert decode_tag(encode_tag(seq)) == seq
    with pytest.raises(ValueError, match="need 4"):
        decode_tag(encode_tag(seq)[:3])
