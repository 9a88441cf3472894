"""The simulator's TCP flows (``control: tcp``): the sans-I/O model of ``hosts/tcp`` bound to a
host's link and scheduler.

Why a binding of its own: the kernel's TCP in the netns backend (``topo/netns/tcpflow.py``) records
a flow as application records (their send stamps, one-way delays, TCP_INFO samples); this module
gives the model's flows the same records, so both backends write the same CSVs and summary
fields: ``flows.csv`` and ``packets_<flow>.csv`` from the records the receiver delivers in order,
``tcp.csv`` from the sender's state sampled like TCP_INFO (``rtt_us``: the last RTT sample,
``rttvar_us``, ``snd_cwnd``, ``total_retrans``, ``bytes_acked``, ``min_rtt_us``,
``bytes_retrans``). Times are the run's true time (the kernel's stamps are CLOCK_MONOTONIC, the
same in every namespace), not a host's offset clock.

``cc: cvihis-rtm`` flows (``hosts/cvihis_tcp.py``): the sender's pacer is a CVIHIS sender's gap, each
data segment carries that sender's stamp (its CVIHIS sequence number in the tag after the data fields,
its RTT hint in the header), the destination runs a CVIHIS receiver on them and sends its feedback
back in CVIHIS feedback datagrams (``receive_feedback`` takes them at the source).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hosts.cvihis import CvihisParams, CvihisReceiver, Feedback, decode_feedback, encode_feedback
from hosts.cvihis.wire import FEEDBACK_BYTES
from hosts.cvihis_host import FEEDBACK_FRAME_BYTES, RTT_UNIT_NS
from hosts.cvihis_tcp import PACED_CC, TAG_BYTES, CvihisPace, decode_tag, encode_tag
from hosts.datagram import (
    KIND_FEEDBACK,
    KIND_TCP_ACK,
    KIND_TCP_DATA,
    KIND_TCP_SYN,
    Datagram,
    FrameTemplate,
)
from hosts.receiver import FlowRecord
from hosts.tcp import TcpReceiver, TcpSender, congestion_control
from hosts.tcp.receiver import Ack
from hosts.tcp.sender import Segment
from hosts.tcp.wire import (
    DATA_FIELDS_BYTES,
    SACK_PERMITTED,
    SYN_FRAME_BYTES,
    ack_frame_bytes,
    data_frame_bytes,
    decode_ack,
    decode_data,
    decode_syn_ack,
    encode_ack,
    encode_data,
    encode_syn_ack,
)
from topo.net.model import Flow
from topo.net.record import TcpSample

__all__ = ["SimTcpFlows", "TCP_KINDS"]

TCP_KINDS = frozenset({KIND_TCP_DATA, KIND_TCP_ACK, KIND_TCP_SYN})
#: Linux's ``enum tcp_ca_state`` (include/net/tcp.h) for TCP_INFO's ``ca_state``: the model is Open,
#: in recovery or, after a timeout until an ACK of new data, in Loss (it has no Disorder or CWR).
CA_OPEN, CA_RECOVERY, CA_LOSS = 0, 3, 4


class SimTcpFlows:
    """A host's ends of the model's TCP flows: senders of the flows it sends, receivers of those
    it receives. ``send(frame)`` puts a frame on the host's link; ``template(fid, size, kind, to)``
    makes a frame template toward host ``to``; ``pace_params(flow)``: a paced flow's CVIHIS parameters."""

    def __init__(self, sched: Any, host: str, flows: dict[int, Flow],
                 send: Callable[[bytes], None], template: Callable[[int, int, int, str], FrameTemplate],
                 pace_params: Callable[[Flow], CvihisParams] = lambda f: CvihisParams()) -> None:
        self.sched = sched
        self.host = host
        self.flows = flows
        self._send = send
        self._template = template
        self._templates: dict[tuple[int, int, int], FrameTemplate] = {}
        self.senders: dict[int, TcpSender] = {}
        self.receivers: dict[int, TcpReceiver] = {}
        self.records: dict[int, FlowRecord] = {}
        self.completed_ns: dict[int, int] = {}
        self._timers: dict[tuple[str, int], Any] = {}
        self.pacers: dict[int, CvihisPace] = {}  # cvihis-rtm flows sent here
        self.pace_sinks: dict[int, CvihisReceiver] = {}  # cvihis-rtm flows received here
        # data segments put out (retransmissions included) and data segments that came in, per flow:
        # the run's end checks that what is missing was dropped or is still in flight (topo/net/invariants.py)
        self.segments_out: dict[int, int] = {}
        self.segments_in: dict[int, int] = {}
        for fid, f in flows.items():
            paced = f.cc in PACED_CC
            if f.src == host:
                if paced:
                    self.pacers[fid] = CvihisPace(pace_params(f))
                self.senders[fid] = TcpSender(congestion_control(f.cc or "cubic"), start_ns=f.start_ns,
                                              stop_ns=f.stop_ns, total_bytes=f.size_bytes, sack=f.sack,
                                              pacer=self.pacers.get(fid))
            if f.dst == host:
                self.receivers[fid] = TcpReceiver(sack=f.sack)
                self.records[fid] = FlowRecord(f.name)
                if paced:
                    self.pace_sinks[fid] = CvihisReceiver(pace_params(f), PACED_CC[f.cc])

    def start(self) -> None:
        for fid in self.senders:
            self._arm("tx", fid)

    # ---- frames out ------------------------------------------------------------------------------
    def _frame(self, fid: int, size: int, kind: int, toward: str) -> FrameTemplate:
        key = (fid, size, kind)
        if key not in self._templates:
            self._templates[key] = self._template(fid, size, kind, toward)
        return self._templates[key]

    def _emit_segments(self, fid: int, segments: list[Segment]) -> None:
        f = self.flows[fid]
        for s in segments:
            if s.syn:
                options = SACK_PERMITTED if s.sack_ok else b"\x00\x00"
                self._send(self._frame(fid, SYN_FRAME_BYTES, KIND_TCP_SYN, f.dst).frame(0, s.ts_ns, 0, options))
            else:
                self.segments_out[fid] = self.segments_out.get(fid, 0) + 1
                frame = self._frame(fid, data_frame_bytes(s.length), KIND_TCP_DATA, f.dst)
                pacer = self.pacers.get(fid)
                if pacer is None:
                    self._send(frame.frame(s.seq, s.ts_ns, 0, encode_data(s.stamp_ns, s.length)))
                    continue
                cvihis_seq, _ts, rtt_ns = pacer.take_stamp()
                self._send(frame.frame(s.seq, s.ts_ns, -(-rtt_ns // RTT_UNIT_NS),
                                       encode_data(s.stamp_ns, s.length) + encode_tag(cvihis_seq)))

    def _emit_feedback(self, fid: int, feedbacks: list[Feedback]) -> None:
        for fb in feedbacks:
            frame = self._frame(fid, FEEDBACK_FRAME_BYTES, KIND_FEEDBACK, self.flows[fid].src)
            self._send(frame.frame(fb.fb_seq, self.sched.now_ns(), 0, encode_feedback(fb)))

    def _emit_acks(self, fid: int, acks: list[Ack]) -> None:
        f = self.flows[fid]
        for a in acks:
            if a.syn:
                frame = self._frame(fid, SYN_FRAME_BYTES, KIND_TCP_SYN, f.src)
                self._send(frame.frame(a.ack, a.ts_echo_ns, 0, encode_syn_ack(a.window_end, a.sack_ok)))
            else:
                frame = self._frame(fid, ack_frame_bytes(len(a.sack)), KIND_TCP_ACK, f.src)
                self._send(frame.frame(a.ack, a.ts_echo_ns, 0, encode_ack(a.window_end, a.sack)))

    # ---- timers ---------------------------------------------------------------------------------
    def _arm(self, side: str, fid: int) -> None:
        old = self._timers.pop((side, fid), None)
        if old is not None:
            old.cancel()
        t = self.pace_sinks[fid].next_update_ns if side == "pace" else \
            (self.senders[fid] if side == "tx" else self.receivers[fid]).next_timer_ns()
        if t is not None:
            self._timers[(side, fid)] = self.sched.call_at(max(t, self.sched.now_ns()), self._fire, side, fid)

    def _fire(self, side: str, fid: int) -> None:
        self._timers.pop((side, fid), None)
        now = self.sched.now_ns()
        if side == "tx":
            self._emit_segments(fid, self.senders[fid].on_timer(now))
        elif side == "pace":
            self._emit_feedback(fid, self.pace_sinks[fid].on_timer(now))
        else:
            self._emit_acks(fid, self.receivers[fid].on_timer(now))
        self._arm(side, fid)

    # ---- frames in -------------------------------------------------------------------------------
    def receive(self, now_ns: int, d: Datagram) -> None:
        fid = d.flow
        if fid in self.receivers and d.kind in (KIND_TCP_DATA, KIND_TCP_SYN):
            rx = self.receivers[fid]
            if d.kind == KIND_TCP_SYN:
                self._emit_acks(fid, [rx.on_syn(now_ns, d.ts_ns, d.payload(2) == SACK_PERMITTED)])
                return
            self.segments_in[fid] = self.segments_in.get(fid, 0) + 1
            try:
                stamp, length = decode_data(d.payload(DATA_FIELDS_BYTES))
            except ValueError:
                return
            self._emit_acks(fid, rx.on_segment(now_ns, d.seq, length, stamp, d.ts_ns))
            self._deliver(fid, now_ns)
            self._arm("rx", fid)
            if fid in self.pace_sinks:
                self._pace_segment(now_ns, fid, d)
        elif fid in self.senders and d.kind in (KIND_TCP_ACK, KIND_TCP_SYN):
            tx = self.senders[fid]
            try:
                if d.kind == KIND_TCP_SYN:
                    (window_end, sack_ok), blocks = decode_syn_ack(d.payload(6)), ()
                else:
                    (window_end, blocks), sack_ok = decode_ack(d.payload(d.size)), False
            except ValueError:
                return
            if d.kind == KIND_TCP_SYN:
                self._emit_segments(fid, tx.on_syn_ack(now_ns, d.ts_ns, window_end, sack_ok))
            else:
                self._emit_segments(fid, tx.on_ack(now_ns, d.seq, d.ts_ns, window_end, blocks))
            self._arm("tx", fid)

    def _pace_segment(self, now_ns: int, fid: int, d: Datagram) -> None:
        """A paced flow's data segment, as its CVIHIS receiver sees it: a CVIHIS packet."""
        tag = d.payload(DATA_FIELDS_BYTES + TAG_BYTES)[DATA_FIELDS_BYTES:]
        self._emit_feedback(fid, self.pace_sinks[fid].on_data(now_ns, decode_tag(tag), d.ts_ns, d.size,
                                                              d.rtt_100us * RTT_UNIT_NS))
        self._arm("pace", fid)

    def receive_feedback(self, now_ns: int, d: Datagram) -> bool:
        """CVIHIS feedback for a paced flow sent here (False: not one of this host's paced flows;
        ``FeedbackError`` for a corrupt one, counted by the caller)."""
        pacer = self.pacers.get(d.flow)
        if pacer is None:
            return False
        pacer.on_feedback(now_ns, decode_feedback(d.payload(FEEDBACK_BYTES)))
        self._emit_segments(d.flow, self.senders[d.flow].repace(now_ns))
        self._arm("tx", d.flow)
        return True

    def _deliver(self, fid: int, now_ns: int) -> None:
        rec, rx, f = self.records[fid], self.receivers[fid], self.flows[fid]
        for seq, length, stamp in rx.take_delivered():
            rec.on_packet(seq, stamp, now_ns, length)
        if f.size_bytes is not None and rx.bytes_received >= f.size_bytes and fid not in self.completed_ns:
            self.completed_ns[fid] = now_ns

    # ---- what the recorder takes -----------------------------------------------------------------
    def sample(self, t_ns: int, fid: int) -> TcpSample:
        """The sender's state in TCP_INFO's terms (topo/netns/tcpflow.py's TCPI_FIELDS)."""
        tx = self.senders[fid]
        est = tx.rto
        info = {"rtt_us": round((est.srtt_ns or 0) / 1000), "rttvar_us": round(est.rttvar_ns / 1000),
                "snd_cwnd": int(tx.cc.cwnd), "total_retrans": tx.retransmissions, "bytes_acked": tx.bytes_acked,
                "min_rtt_us": round((est.min_rtt_ns or 0) / 1000), "bytes_retrans": tx.bytes_retransmitted,
                "ca_state": CA_RECOVERY if tx.in_recovery else CA_LOSS if est.backoff > 0 else CA_OPEN}
        if tx.cc.ssthresh != float("inf"):
            info["snd_ssthresh"] = int(tx.cc.ssthresh)
        return TcpSample(t_ns, self.flows[fid].name, tx.bytes_written, tuple(info.items()))

    def sender_totals(self, fid: int) -> dict[str, Any]:
        tx = self.senders[fid]
        return {"cc": self.flows[fid].cc, "bytes_sent": tx.bytes_written, "records_sent": tx.written,
                "connected_ns": tx.connected_ns, "sack": tx.sack, "sender_error": None}

    def receiver_totals(self, fid: int) -> dict[str, Any]:
        rx = self.receivers[fid]
        return {"bytes_received": rx.bytes_received, "records_received": self.records[fid].received,
                "completed_ns": self.completed_ns.get(fid), "receiver_error": None}
