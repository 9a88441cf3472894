"""TFRC, LEDBAT and GCC flows at the hosts: their sans-I/O cores behind the interface the host
bindings drive for CVIHIS (``hosts/cvihis_host.py``): ``next_send_ns`` / ``take`` / ``stamp`` /
``on_feedback`` at the source, ``on_data`` / ``on_timer`` / ``next_timer_ns`` at the receiver,
whose feedback payloads the binding carries back in datagrams of kind ``feedback_kind``.

Why one interface: the simulator and the netns host process run the same host object
(``topo/sim/network.py``'s ``SimHostNode``), so a control written against it runs in both backends.
Each host has its own clock (``offset_ns``); TFRC uses echoed timestamps and LEDBAT differences
of one-way delays, so an offset changes nothing.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from hosts.datagram import KIND_GCC_REPORT, KIND_LEDBAT_ACK, KIND_TFRC_REPORT
from hosts.gcc import REPORT_BYTES as GCC_REPORT_BYTES
from hosts.gcc import GccParams, GccReceiver, GccSender
from hosts.gcc import decode_report as decode_gcc_report
from hosts.gcc import encode_report as encode_gcc_report
from hosts.ledbat import LedbatSender
from hosts.ledbat.sender import TARGET_NS
from hosts.sender import SenderFlow
from hosts.tfrc import TfrcReceiver, TfrcSender
from hosts.tfrc.wire import REPORT_BYTES, decode_report, encode_report

__all__ = ["TfrcSource", "TfrcSink", "LedbatSource", "LedbatSink", "GccSource", "GccSink", "LEDBAT_ACK_BYTES",
           "RTT_UNIT_NS", "encode_ledbat_ack", "decode_ledbat_ack"]

RTT_UNIT_NS = 100_000  # the datagram header's RTT hint unit (as CVIHIS)
_ACK = struct.Struct("!Iq")
LEDBAT_ACK_BYTES = _ACK.size


def encode_ledbat_ack(seq: int, owd_ns: int) -> bytes:
    return _ACK.pack(seq & 0xFFFF_FFFF, owd_ns)


def decode_ledbat_ack(data: bytes) -> tuple[int, int]:
    if len(data) < LEDBAT_ACK_BYTES:
        raise ValueError(f"LEDBAT ack: {len(data)} bytes, need {LEDBAT_ACK_BYTES}")
    seq, owd = _ACK.unpack_from(data)
    return seq, owd


def _rtt_units(rtt_ns: float | None) -> int:
    return 0 if not rtt_ns else math.ceil(rtt_ns / RTT_UNIT_NS)


@dataclass
class TfrcSource:
    flow: SenderFlow
    packet_bytes: int
    max_rate_bps: float | None = None
    offset_ns: int = 0
    core: TfrcSender = field(init=False)
    feedback_kind: int = KIND_TFRC_REPORT
    feedback_bytes: int = REPORT_BYTES

    def __post_init__(self) -> None:
        self.core = TfrcSender(self.packet_bytes, max_rate_bps=self.max_rate_bps)

    def next_send_ns(self, now_ns: int) -> int | None:
        if self.flow.stop_ns is not None and now_ns >= self.flow.stop_ns:
            return None
        return max(self.core.next_send_ns(now_ns + self.offset_ns) - self.offset_ns, self.flow.start_ns)

    def take(self, now_ns: int) -> SenderFlow | None:
        self.core.on_timer(now_ns + self.offset_ns)
        return self.flow if self.flow.active(now_ns) else None

    def stamp(self, now_ns: int) -> tuple[int, int, int]:
        self.core.on_sent(now_ns + self.offset_ns)
        return self.flow.take_seq(), now_ns + self.offset_ns, _rtt_units(self.core.rtt_ns)

    def on_feedback(self, now_ns: int, payload: bytes) -> None:
        self.core.on_report(now_ns + self.offset_ns, decode_report(payload))

    def stats(self) -> dict[str, object]:
        c = self.core
        return {"rate_bps": round(c.rate_bps), "rtt_ms": None if c.rtt_ns is None else round(c.rtt_ns / 1e6, 3),
                "reports": c.reports}


@dataclass
class TfrcSink:
    packet_bytes: int
    offset_ns: int = 0
    core: TfrcReceiver = field(init=False)

    def __post_init__(self) -> None:
        self.core = TfrcReceiver(self.packet_bytes)

    def on_data(self, now_ns: int, seq: int, ts_ns: int, size: int, rtt_units: int) -> list[bytes]:
        return [encode_report(r) for r in self.core.on_data(now_ns + self.offset_ns, seq, ts_ns, size,
                                                            rtt_units * RTT_UNIT_NS)]

    def on_timer(self, now_ns: int) -> list[bytes]:
        return [encode_report(r) for r in self.core.on_timer(now_ns + self.offset_ns)]

    def next_timer_ns(self) -> int | None:
        t = self.core.next_timer_ns()
        return None if t is None else t - self.offset_ns

    def stats(self) -> dict[str, object]:
        """The receiver's reading: p, and the packets it called lost (``late``: of those, the ones
        that arrived after all -- reordering read as loss)."""
        ev = self.core.events
        return {"loss_event_rate": round(ev.loss_event_rate(), 6), "loss_events": ev.events,
                "counted_lost": ev.lost, "late": ev.late}


@dataclass
class LedbatSource:
    flow: SenderFlow
    packet_bytes: int
    target_ns: int = TARGET_NS
    offset_ns: int = 0
    core: LedbatSender = field(init=False)
    feedback_kind: int = KIND_LEDBAT_ACK
    feedback_bytes: int = LEDBAT_ACK_BYTES

    def __post_init__(self) -> None:
        self.core = LedbatSender(self.packet_bytes, target_ns=self.target_ns)

    def next_send_ns(self, now_ns: int) -> int | None:
        if self.flow.stop_ns is not None and now_ns >= self.flow.stop_ns:
            return None
        if now_ns < self.flow.start_ns:
            return self.flow.start_ns
        if self.core.can_send():
            return now_ns
        t = self.core.next_timer_ns()
        return None if t is None else t - self.offset_ns  # the binding re-arms on every ack anyway

    def take(self, now_ns: int) -> SenderFlow | None:
        self.core.on_timer(now_ns + self.offset_ns)
        return self.flow if self.flow.active(now_ns) and self.core.can_send() else None

    def stamp(self, now_ns: int) -> tuple[int, int, int]:
        seq = self.core.on_sent(now_ns + self.offset_ns)
        self.flow.next_seq = seq + 1
        return seq, now_ns + self.offset_ns, _rtt_units(self.core.rtt_ns)

    def on_feedback(self, now_ns: int, payload: bytes) -> None:
        seq, owd = decode_ledbat_ack(payload)
        self.core.on_ack(now_ns + self.offset_ns, seq, owd)

    def stats(self) -> dict[str, object]:
        c = self.core
        return {"cwnd_bytes": round(c.cwnd), "target_ms": c.target_ns / 1e6, "losses": c.losses,
                "queuing_delay_ms": round(c.delays.queuing_delay_ns / 1e6, 3) if c.delays.ready else None}


@dataclass
class LedbatSink:
    """Echoes each packet's one-way delay (this host's clock minus the sender's stamp)."""

    offset_ns: int = 0

    def on_data(self, now_ns: int, seq: int, ts_ns: int, size: int, rtt_units: int) -> list[bytes]:
        return [encode_ledbat_ack(seq, now_ns + self.offset_ns - ts_ns)]

    def on_timer(self, now_ns: int) -> list[bytes]:
        return []

    def next_timer_ns(self) -> int | None:
        return None

    def stats(self) -> dict[str, object]:
        return {}


@dataclass
class GccSource:
    """A GCC sender (hosts/gcc/sender.py): its video-like source paced at the target rate.
    ``params`` must carry the flow's max_rate (the binding's cap)."""

    flow: SenderFlow
    packet_bytes: int
    params: GccParams
    offset_ns: int = 0
    core: GccSender = field(init=False)
    feedback_kind: int = KIND_GCC_REPORT
    feedback_bytes: int = GCC_REPORT_BYTES

    def __post_init__(self) -> None:
        self.core = GccSender(self.params, self.packet_bytes)

    def next_send_ns(self, now_ns: int) -> int | None:
        if self.flow.stop_ns is not None and now_ns >= self.flow.stop_ns:
            return None
        if now_ns < self.flow.start_ns:
            return self.flow.start_ns
        return self.core.next_send_ns(now_ns + self.offset_ns) - self.offset_ns

    def take(self, now_ns: int) -> SenderFlow | None:
        return self.flow if self.flow.active(now_ns) and self.core.can_send(now_ns + self.offset_ns) else None

    def stamp(self, now_ns: int) -> tuple[int, int, int]:
        self.core.on_sent(now_ns + self.offset_ns)
        return self.flow.take_seq(), now_ns + self.offset_ns, _rtt_units(self.core.rtt_ns)

    def on_feedback(self, now_ns: int, payload: bytes) -> None:
        self.core.on_report(now_ns + self.offset_ns, decode_gcc_report(payload))

    def stats(self) -> dict[str, object]:
        c = self.core
        return {"rate_bps": round(c.target_bps), "loss_based_bps": round(c.loss.rate_bps),
                "remb_bps": None if c.loss.remb_bps is None else round(c.loss.remb_bps),
                "rtt_ms": None if c.rtt_ns is None else round(c.rtt_ns / 1e6, 3), "reports": c.reports,
                "frames": c.frames}


@dataclass
class GccSink:
    """A GCC receiver (hosts/gcc/receiver.py): the delay-based estimate, reported with the loss."""

    filter_name: str = "trendline"
    offset_ns: int = 0
    gains: str = "draft"
    core: GccReceiver = field(init=False)

    def __post_init__(self) -> None:
        self.core = GccReceiver(self.filter_name, self.gains)

    def on_data(self, now_ns: int, seq: int, ts_ns: int, size: int, rtt_units: int) -> list[bytes]:
        return [encode_gcc_report(r) for r in self.core.on_data(now_ns + self.offset_ns, seq, ts_ns, size,
                                                                rtt_units * RTT_UNIT_NS)]

    def on_timer(self, now_ns: int) -> list[bytes]:
        return [encode_gcc_report(r) for r in self.core.on_timer(now_ns + self.offset_ns)]

    def next_timer_ns(self) -> int | None:
        t = self.core.next_timer_ns()
        return None if t is None else t - self.offset_ns

    def stats(self) -> dict[str, object]:
        """The receiver's reading: its estimate, the detector's threshold, how often it over-used."""
        c = self.core
        return {"delay_estimate_bps": None if c.rate.rate_bps is None else round(c.rate.rate_bps),
                "filter": c.filter.name, "gains": self.gains, "threshold_ms": round(c.detector.threshold.gamma, 3),
                "overuse_signals": c.detector.overuses, "decreases": c.rate.decreases,
                "receiver_reports": c.reports}
