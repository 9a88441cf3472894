"""CVIHIS RTM setting the pace of the TCP model (``cc: cvihis-rtm``): CVIHIS's rate law over TCP's
reliability, so that sized flows can run under CVIHIS (the fabric workload, docs/howto/fabric.md).

Why this split: CVIHIS's sender paces datagrams and never retransmits; the TCP model recovers every
loss but sets its rate by a window. Here the model's window is opened as for ``none``
(``hosts/tcp/nocc.py``) and each of its data segments, new or retransmitted, waits for the CVIHIS
sender's gap (:class:`CvihisPace`, the model's ``pacer``); one loss-recovery scheme (the model's) and
one CVIHIS law (``hosts/cvihis``' cores, unchanged).

The CVIHIS receiver sees every data segment as a CVIHIS packet: its own sequence number (one per
transmission, so a lost segment is a gap even when TCP sends it again) and the sender's RTT hint
ride in the segment (the tag below and the datagram header's RTT field); its send timestamp is the
segment's. The receiving side is CVIHIS's receiver itself (``hosts/cvihis/receiver.py``). Its feedback goes back in CVIHIS's own feedback datagrams (``hosts/cvihis/wire.py``), at
CVIHIS's own cadence (a third of the RTT, and at once on a loss), not on TCP's ACKs: the ACK wire
stays the model's, and the decisions keep their published timing instead of the ACKs' (one per one
or two segments, none when the flow is idle).

Sans-I/O: times in, decisions out; ``topo/sim/tcp.py`` binds it to a simulated host.
"""

from __future__ import annotations

import struct
from collections import deque

from hosts.cvihis import CvihisParams, CvihisSender, Feedback, Mode

__all__ = ["CvihisPace", "TAG_BYTES", "encode_tag", "decode_tag", "PACED_CC"]

#: the TCP model's congestion controls that a CVIHIS core paces, and the CVIHIS mode each runs
PACED_CC = {"cvihis-rtm": Mode.RTM}
_TAG = struct.Struct("!I")
#: the CVIHIS sequence number, after the model's data fields: it fits every data frame (the headers
#: leave 4 bytes beyond the payload, ``hosts/tcp/wire.py``), so a paced segment is no longer on the wire
TAG_BYTES = _TAG.size


def encode_tag(cvihis_seq: int) -> bytes:
    return _TAG.pack(cvihis_seq & 0xFFFFFFFF)


def decode_tag(tag: bytes) -> int:
    if len(tag) < TAG_BYTES:
        raise ValueError(f"CVIHIS tag: {len(tag)} bytes, need {TAG_BYTES}")
    return _TAG.unpack_from(tag)[0]


class CvihisPace:
    """The TCP sender's pacer: a segment may leave one CVIHIS gap after the last (``release_ns``);
    each that leaves takes the next CVIHIS stamp (sequence number, timestamp, RTT hint), which the
    binding puts in that segment's frame (``take_stamp``, in the order the segments left)."""

    def __init__(self, params: CvihisParams) -> None:
        self.core = CvihisSender(params)
        self._stamps: deque[tuple[int, int, int]] = deque()

    def release_ns(self, now_ns: int) -> int:
        return self.core.next_send_ns(now_ns)

    def on_release(self, now_ns: int) -> None:
        self._stamps.append(self.core.stamp(now_ns))

    def take_stamp(self) -> tuple[int, int, int]:
        """The oldest stamp not yet put in a frame: (CVIHIS sequence number, timestamp, RTT hint in ns)."""
        if not self._stamps:
            raise RuntimeError("CvihisPace: a data segment left without a release (the sender bypassed its pacer)")
        return self._stamps.popleft()

    def on_feedback(self, now_ns: int, fb: Feedback) -> None:
        self.core.on_feedback(now_ns, fb)

    @property
    def rate_bps(self) -> float:
        return self.core.rate_bps
