"""``cc: cvihis-rtm`` in a netns host: a kernel TCP socket whose send rate CVIHIS RTM sets.

Why this shape. In the simulator a ``cvihis-rtm`` flow is the TCP model with its window opened and
every segment released at the CVIHIS sender's gap (``hosts/cvihis_tcp.py``). The kernel's TCP cannot
take a per-segment release, but it paces itself: a socket given ``SO_MAX_PACING_RATE`` (bytes per
second) is paced by TCP's own timer when no fq qdisc does it (``sk_pacing_status`` becomes
``SK_PACING_NEEDED`` in ``sk_setsockopt``; ``tcp_internal_pacing`` then spaces each skb by
``skb->len / sk_pacing_rate``, ``skb->len`` the TCP header and payload, and ``sk_pacing_rate`` never
exceeds ``sk_max_pacing_rate``; Linux >= 4.13, docs/howto/fabric.md). The host's tun keeps pfifo_fast
(``topo/netns/tcpflow.py``), so the kernel paces. The CVIHIS sender core (:class:`CvihisPace`, unchanged)
decides the rate; each change is written to the socket as ``rate_pps x (MTU - 20)`` bytes/s, one
full segment per CVIHIS gap.

The feedback is CVIHIS's own, as in the simulator. Every data segment the kernel sends through the
host's tun takes the next CVIHIS stamp (sequence number, send time, RTT hint), carried in a
:data:`TRAILER_BYTES` trailer after the IP packet in the Ethernet frame (the IP packet is unchanged:
the receiving host process strips the trailer before it writes the packet into its tun). The
destination runs the CVIHIS receiver core on those stamps and sends its decisions back in CVIHIS
feedback datagrams, at CVIHIS's cadence. A segment lost in the network is a gap in the CVIHIS
sequence even when TCP sends it again, so it leads to CVIHIS's MD. The trailer costs 16 bytes of
each frame: the sending host's tun MTU is lowered by as much, so that a full segment's frame stays
within the veth's 1514 bytes.

What differs from the simulator: the kernel's loss recovery and window (cubic; SACK, RACK, its RTO)
carry the bytes, not the model's with ``none``'s open window, so after a loss the send rate is the
lower of CVIHIS's and cubic's window over the RTT.

Threads: everything here runs on the host's event loop (tun reads, frames in, timers); the only
call into the sender's thread's socket is :meth:`topo.netns.tcpflow.TcpSender.set_max_pacing_rate`.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from hosts.cvihis import CvihisParams, CvihisReceiver, FeedbackError, decode_feedback, encode_feedback
from hosts.cvihis.wire import FEEDBACK_BYTES
from hosts.cvihis_host import FEEDBACK_FRAME_BYTES
from hosts.cvihis_tcp import PACED_CC, CvihisPace
from hosts.datagram import KIND_FEEDBACK, DatagramError, FrameTemplate, parse
from topo.net.model import Flow, Topology
from topo.sim.network import cvihis_params

__all__ = ["KernelPacedFlows", "TRAILER_BYTES", "KERNEL_CC", "UNPACED_SEGMENTS", "pacing_bytes_per_s", "pace_summary",
           "tcp_fields"]

_TRAILER = struct.Struct("!IQI")  # CVIHIS sequence number, send time (run ns), RTT hint (µs)
TRAILER_BYTES = _TRAILER.size
#: the kernel congestion control under a paced flow (the window that holds the bytes in flight)
KERNEL_CC = {cc: "cubic" for cc in PACED_CC}
ETH, IP_HEADER_BYTES = 14, 20
#: the kernel does not pace a connection's first 10 data segments (``tcp_update_skb_after_send``:
#: ``tp->data_segs_out >= 10``, "Original sch_fq does not pace first 10 MSS")
UNPACED_SEGMENTS = 10


def pacing_bytes_per_s(rate_pps: float, mtu: int) -> int:
    """The socket's max pacing rate for ``rate_pps`` full segments a second (skb->len = MTU - IP header)."""
    return max(1, round(rate_pps * (mtu - IP_HEADER_BYTES)))


def tcp_fields(packet: bytes) -> tuple[int, int, int, int] | None:
    """(source IP, destination IP, destination port, payload bytes) of an IPv4 TCP packet, else None."""
    if len(packet) < IP_HEADER_BYTES or packet[0] >> 4 != 4 or packet[9] != 6:
        return None
    ihl = (packet[0] & 0x0F) * 4
    total = struct.unpack_from("!H", packet, 2)[0]
    if len(packet) < ihl + 20 or total > len(packet):
        return None
    src, dst = struct.unpack_from("!II", packet, 12)
    port = struct.unpack_from("!H", packet, ihl + 2)[0]
    return src, dst, port, total - ihl - (packet[ihl + 12] >> 4) * 4


def pace_summary(rates: list[tuple[int, float]], stamps: list[int], feedbacks: int, frame_bits: int) -> dict[str, Any]:
    """What the pace did: the rates set (``rates``: (time, segments/s); reported in b/s of
    ``frame_bits`` frames), and the segments sent after the kernel's :data:`UNPACED_SEGMENTS`
    against the segments the rates allowed between the first and the last of them
    (``sent_over_paced``: 1 when the pace alone held the flow, below 1 when its window or its data
    did; the kernel's credit for its own lateness lets it run a few % over)."""
    if not rates:
        return {"feedbacks": feedbacks, "segments": len(stamps)}
    allowed = 0.0
    paced = stamps[UNPACED_SEGMENTS:]
    if len(paced) > 1:
        t0, t1 = paced[0], paced[-1]
        points = [(max(t, t0), r) for t, r in rates if t < t1]
        for (ta, ra), (tb, _rb) in zip(points, [*points[1:], (t1, 0.0)]):
            allowed += ra * max(0, tb - ta) / 1e9
    bps = [round(r * frame_bits) for _t, r in rates]
    return {"feedbacks": feedbacks, "rate_changes": len(rates) - 1, "segments": len(stamps),
            "rate_bps": {"initial": bps[0], "min": min(bps), "max": max(bps), "last": bps[-1]},
            "sent_over_paced": round((len(paced) - 1) / allowed, 3) if allowed > 0 else None}


@dataclasses.dataclass
class _PacedSender:
    flow: Flow
    pace: CvihisPace
    dst_ip: int
    port: int
    set_rate: Callable[[int], None] | None = None  # the socket's SO_MAX_PACING_RATE
    rates: list[tuple[int, float]] = dataclasses.field(default_factory=list)  # (t, segments/s)
    stamps: list[int] = dataclasses.field(default_factory=list)
    feedbacks: int = 0


@dataclasses.dataclass
class _PacedSink:
    core: CvihisReceiver
    src_ip: int
    port: int
    feedback: FrameTemplate
    timer: Any = None


class KernelPacedFlows:
    """One host's ends of its ``cvihis-rtm`` kernel TCP flows: stamps out, stamps in, feedback.

    ``clock``: the run's clock (``now_ns``, ``call_at``); ``send``: a frame onto the host's uplink;
    ``port_of(fid)``: the flow's TCP destination port; ``mtu``: the sending tun's MTU."""

    def __init__(self, topo: Topology, host: str, flows: dict[int, Flow], clock: Any, send: Callable[[bytes], None],
                 port_of: Callable[[int], int], mtu: int, eth_header: bytes) -> None:
        self.clock, self._send, self.mtu = clock, send, mtu
        self.senders: dict[int, _PacedSender] = {}
        self.sinks: dict[int, _PacedSink] = {}
        for fid, f in flows.items():
            if f.cc not in PACED_CC:
                continue
            params = self.params(topo, f, mtu)
            if f.src == host:
                self.senders[fid] = _PacedSender(f, CvihisPace(params), topo.ip(f.dst), port_of(fid))
            if f.dst == host:
                tmpl = FrameTemplate(src_mac=int.from_bytes(eth_header[6:12], "big"),
                                     dst_mac=int.from_bytes(eth_header[:6], "big"), src_ip=topo.ip(host),
                                     dst_ip=topo.ip(f.src), flow=fid, size=FEEDBACK_FRAME_BYTES, kind=KIND_FEEDBACK)
                self.sinks[fid] = _PacedSink(CvihisReceiver(params, PACED_CC[f.cc]), topo.ip(f.src), port_of(fid), tmpl)

    @staticmethod
    def params(topo: Topology, f: Flow, mtu: int) -> CvihisParams:
        """A CVIHIS flow's parameters (``topo.sim.network.cvihis_params``), its packets full segments' frames."""
        return dataclasses.replace(cvihis_params(topo, f), packet_size_bytes=ETH + mtu + TRAILER_BYTES)

    # ---- the sender's side ----------------------------------------------------------------------
    def attach(self, fid: int, set_rate: Callable[[int], None]) -> int:
        """The socket's rate setter for flow ``fid``; returns the initial max pacing rate (bytes/s)."""
        s = self.senders[fid]
        s.set_rate = set_rate
        s.rates.append((self.clock.now_ns(), s.pace.core.rate_pps))
        return pacing_bytes_per_s(s.pace.core.rate_pps, self.mtu)

    def stamp(self, packet: bytes) -> bytes:
        """The trailer for a packet the kernel sent (empty unless a paced flow's data segment)."""
        fields = tcp_fields(packet) if self.senders else None
        if fields is None or fields[3] <= 0:
            return b""
        for s in self.senders.values():
            if fields[1] == s.dst_ip and fields[2] == s.port:
                now = self.clock.now_ns()
                s.pace.on_release(now)
                seq, ts, rtt_ns = s.pace.take_stamp()
                s.stamps.append(now)
                return _TRAILER.pack(seq & 0xFFFFFFFF, ts, min(-(-rtt_ns // 1000), 0xFFFFFFFF))
        return b""

    def on_feedback(self, frame: bytes) -> bool:
        """A CVIHIS feedback datagram for a paced flow sent here: the core's new rate to the socket
        (False: not one; a corrupt one is True and ignored, as a corrupt datagram is)."""
        if not self.senders:
            return False
        try:
            d = parse(frame)
        except DatagramError:
            return False
        s = self.senders.get(d.flow)
        if d.kind != KIND_FEEDBACK or s is None:
            return False
        try:
            fb = decode_feedback(d.payload(FEEDBACK_BYTES))
        except FeedbackError:
            return True
        now = self.clock.now_ns()
        before = s.pace.core.rate_pps
        s.pace.on_feedback(now, fb)
        s.feedbacks += 1
        if s.pace.core.rate_pps != before:
            s.rates.append((now, s.pace.core.rate_pps))
            if s.set_rate is not None:
                s.set_rate(pacing_bytes_per_s(s.pace.core.rate_pps, self.mtu))
        return True

    # ---- the receiver's side --------------------------------------------------------------------
    def strip(self, frame: bytes) -> bytes:
        """The IP packet of a TCP frame; a paced flow's stamp, if the frame has one, goes to its
        CVIHIS receiver (whose feedback leaves at once)."""
        packet = frame[ETH:]
        fields = tcp_fields(packet) if self.sinks else None
        if fields is None:
            return packet
        total = struct.unpack_from("!H", packet, 2)[0]
        if len(packet) - total != TRAILER_BYTES:
            return packet[:total]
        for fid, sink in self.sinks.items():
            if fields[0] == sink.src_ip and fields[2] == sink.port:
                seq, ts, rtt_us = _TRAILER.unpack_from(packet, total)
                now = self.clock.now_ns()
                self._feedback(fid, sink.core.on_data(now, seq, ts, len(frame), rtt_us * 1000))
                break
        return packet[:total]

    def _feedback(self, fid: int, feedbacks: list[Any]) -> None:
        sink = self.sinks[fid]
        now = self.clock.now_ns()
        for fb in feedbacks:
            self._send(sink.feedback.frame(fb.fb_seq, now, 0, encode_feedback(fb)))
        if sink.timer is not None:
            sink.timer.cancel()
            sink.timer = None
        t = sink.core.next_update_ns
        if t is not None:
            sink.timer = self.clock.call_at(max(t, now), self._on_timer, fid)

    def _on_timer(self, fid: int) -> None:
        sink = self.sinks[fid]
        sink.timer = None
        self._feedback(fid, sink.core.on_timer(self.clock.now_ns()))

    def results(self) -> dict[str, dict[str, Any]]:
        """Per paced flow sent here: ``{"pace": pace_summary(...)}``, merged into its TCP totals."""
        return {s.flow.name: {"pace": pace_summary(s.rates, s.stamps, s.feedbacks, s.pace.core.params.packet_bits)}
                for s in self.senders.values()}
