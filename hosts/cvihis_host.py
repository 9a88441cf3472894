"""CVIHIS flows at the hosts: the sans-I/O cores of ``hosts/cvihis`` behind the interface the
host bindings drive (``next_send_ns`` / ``take`` / ``stamp`` at the source; data in, feedback
out at the receiver).

Each host has its own clock: ``offset_ns`` is added to the binding's time for every reading
the cores see (send timestamps, arrival times, timers), and removed again from the times they
ask to be called at. CVIHIS only uses differences of one-way delays, so an offset between the
two hosts must change nothing (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hosts.cvihis import CvihisParams, CvihisReceiver, CvihisSender, Feedback
from hosts.cvihis.wire import FEEDBACK_BYTES
from hosts.datagram import HEADER_BYTES, OFFSET
from hosts.sender import SenderFlow

__all__ = ["CvihisSource", "CvihisSink", "RTT_UNIT_NS", "FEEDBACK_FRAME_BYTES"]

RTT_UNIT_NS = 100_000  # the datagram header carries the RTT hint in units of 100 µs
FEEDBACK_FRAME_BYTES = OFFSET + HEADER_BYTES + FEEDBACK_BYTES  # Ethernet/IPv4/UDP, our header, the feedback


@dataclass
class CvihisSource:
    flow: SenderFlow
    params: CvihisParams
    offset_ns: int = 0
    core: CvihisSender = field(init=False)

    def __post_init__(self) -> None:
        self.core = CvihisSender(self.params)

    def next_send_ns(self, now_ns: int) -> int | None:
        if self.flow.stop_ns is not None and now_ns >= self.flow.stop_ns:
            return None
        t = self.core.next_send_ns(now_ns + self.offset_ns) - self.offset_ns
        return max(t, self.flow.start_ns)

    def take(self, now_ns: int) -> SenderFlow | None:
        return self.flow if self.flow.active(now_ns) else None

    def stamp(self, now_ns: int) -> tuple[int, int, int]:
        """(seq, send timestamp in this host's clock, RTT hint in header units) of a packet sent now."""
        seq, ts, rtt_ns = self.core.stamp(now_ns + self.offset_ns)
        return seq, ts, -(-rtt_ns // RTT_UNIT_NS)

    def on_feedback(self, now_ns: int, fb: Feedback) -> None:
        self.core.on_feedback(now_ns + self.offset_ns, fb)


@dataclass
class CvihisSink:
    params: CvihisParams
    mode: str
    offset_ns: int = 0
    core: CvihisReceiver = field(init=False)

    def __post_init__(self) -> None:
        self.core = CvihisReceiver(self.params, self.mode)

    def on_data(self, now_ns: int, seq: int, ts_ns: int, size: int, rtt_units: int) -> list[Feedback]:
        return self.core.on_data(now_ns + self.offset_ns, seq, ts_ns, size, rtt_units * RTT_UNIT_NS)

    def on_timer(self, now_ns: int) -> list[Feedback]:
        return self.core.on_timer(now_ns + self.offset_ns)

    def next_timer_ns(self) -> int | None:
        t = self.core.next_update_ns
        return None if t is None else t - self.offset_ns
