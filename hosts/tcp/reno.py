"""NewReno's window growth (RFC 5681 as Linux counts it) and its reaction to loss.

Why growth by the number of segments acknowledged (RFC 3465's byte counting) and not one segment
per ACK: the receiver delays ACKs (one per two segments), and Linux's ``tcp_slow_start`` /
``tcp_cong_avoid_ai`` count acknowledged segments, so that slow start still doubles per RTT and
congestion avoidance adds one segment per RTT. The fast recovery itself (RFC 6582) is the
sender's (:mod:`hosts.tcp.sender`); a congestion control only says how the window grows on new
ACKs and what the slow-start threshold becomes after a loss.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Reno", "WindowControl", "AckInfo", "MIN_SSTHRESH"]

MIN_SSTHRESH = 2.0


@dataclass(frozen=True, slots=True)
class AckInfo:
    """What a congestion control learns from one ACK of new data."""

    now_ns: int
    acked: int  # segments newly acknowledged
    rtt_ns: int | None  # this ACK's RTT sample (timestamps), None if it gave none
    srtt_ns: float  # smoothed RTT after the sample
    min_rtt_ns: int
    snd_una: int  # first unacknowledged segment, after this ACK
    snd_nxt: int  # next segment to send


class WindowControl:
    """What every congestion control here does alike once ``on_loss`` has set ssthresh: an RTO
    leaves one segment (RFC 5681 (4), (5); RFC 9438 4.8 for CUBIC), and the end of fast recovery
    deflates the window to ssthresh (RFC 6582 3.2 step 3). Subclasses give ``on_ack`` and
    ``on_loss``."""

    cwnd: float
    ssthresh: float

    def on_loss(self, now_ns: int, flight: int) -> float:
        raise NotImplementedError

    def slow_start(self, acked: int) -> int:
        """RFC 5681 3.1: one segment per segment acknowledged, up to ssthresh; returns what is
        left of ``acked`` for congestion avoidance."""
        grown = min(self.cwnd + acked, max(self.ssthresh, self.cwnd))
        acked -= int(grown - self.cwnd)
        self.cwnd = grown
        return acked

    def on_timeout(self, now_ns: int, flight: int) -> None:
        """RTO expiry: the loss reduction, then a window of one segment."""
        self.on_loss(now_ns, flight)
        self.cwnd = 1.0

    def on_recovered(self, now_ns: int) -> None:
        """Fast recovery ended (a full ACK): the window deflates to ssthresh."""
        self.cwnd = self.ssthresh


class Reno(WindowControl):
    """cwnd and ssthresh in segments; growth on ACKs outside recovery, halving on loss."""

    name = "reno"

    def __init__(self, initial_cwnd: float = 10.0) -> None:
        self.cwnd = float(initial_cwnd)
        self.ssthresh = float("inf")

    def on_ack(self, ack: AckInfo) -> None:
        """New data acknowledged (``ack.acked`` segments) while not in recovery."""
        acked = ack.acked
        if self.cwnd < self.ssthresh:
            acked = self.slow_start(acked)
            if acked <= 0:
                return
        self.cwnd += acked / self.cwnd

    def on_loss(self, now_ns: int, flight: int) -> float:
        """Entering recovery (or a timeout): ssthresh = max(cwnd / 2, 2) in whole segments, as Linux's
        ``tcp_reno_ssthresh`` (net/ipv4/tcp_cong.c: ``max(tcp_snd_cwnd(tp) >> 1U, 2U)``), not RFC 5681's
        half of FlightSize: with SACK the flight (HighData - HighACK) also counts the segments
        SACKed above the holes, so half the flight left the model's sawtooth a few segments above
        the kernel's. ``flight`` is not used."""
        self.ssthresh = max(float(int(self.cwnd) >> 1), MIN_SSTHRESH)
        return self.ssthresh
