"""TFRC's report on the wire: 32 bytes after our datagram header (hosts/datagram.py, kind
``KIND_TFRC_REPORT``): t_recvdata (8, ns, the sender's clock), t_delay (8, ns), X_recv (8,
float, bytes/s), p (8, float)."""

from __future__ import annotations

import math
import struct

from hosts.tfrc.sender import TfrcReport

__all__ = ["REPORT_BYTES", "encode_report", "decode_report"]

_R = struct.Struct("!QQdd")
REPORT_BYTES = _R.size


def encode_report(r: TfrcReport) -> bytes:
    return _R.pack(r.t_recvdata_ns & (2**64 - 1), max(r.t_delay_ns, 0), r.x_recv_Bps, r.p)


def decode_report(data: bytes) -> TfrcReport:
    """ValueError on a short or nonsensical report."""
    if len(data) < REPORT_BYTES:
        raise ValueError(f"TFRC report: {len(data)} bytes, need {REPORT_BYTES}")
    t, d, x, p = _R.unpack_from(data)
    if not (math.isfinite(x) and x >= 0 and 0 <= p <= 1):
        raise ValueError(f"TFRC report: X_recv {x}, p {p} out of range")
    return TfrcReport(t, d, x, p)
