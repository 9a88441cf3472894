"""No congestion control: the TCP model's reliability (fast retransmit, NewReno recovery, RTO) with a
window that never shrinks for congestion, so that a flow sends as fast as its link lets it.

Why a window control and not a datagram sender: the fabric workload's flows are sized and must end
when delivered; without a control (``none``) something must still carry the bytes reliably. The
model's sender already recovers every loss; this class only takes the reaction to loss away, so
``none`` differs from ``tcp`` by the congestion control alone (docs/howto/fabric.md). Simulator only: no
kernel offers it.
"""

from __future__ import annotations

from hosts.tcp.reno import AckInfo, WindowControl

__all__ = ["NoControl", "NO_CONTROL_WINDOW"]

#: Segments in flight at most: above any flow of the fabric workload (its largest, 300 kB at
#: x0.01, is 208 segments), so that only the link and the receiver's window limit a sender.
NO_CONTROL_WINDOW = 4096.0


class NoControl(WindowControl):
    """A constant window: loss, timeouts and recovery leave it where it is (the sender's recovery
    may lower it for one step; the next ACK restores it)."""

    name = "none"

    def __init__(self, window: float = NO_CONTROL_WINDOW) -> None:
        self.cwnd = self.ssthresh = window

    def on_ack(self, ack: AckInfo) -> None:
        self.cwnd = self.ssthresh

    def on_loss(self, now_ns: int, flight: int) -> float:
        return self.ssthresh

    def on_timeout(self, now_ns: int, flight: int) -> None:
        self.cwnd = self.ssthresh
