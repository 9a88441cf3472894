"""A GCC receiver report on the wire: 32 bytes after our datagram header (hosts/datagram.py, kind
``KIND_GCC_REPORT``), an RTCP receiver report and a REMB in one (docs/reference/wire-format.md, "GCC receiver report").

    0  remb_bps        8  u64  the delay-based estimate A_hat, b/s (0: none yet)
    8  echo_ts_ns      8  u64  send timestamp of the newest data packet received (sender's clock)
    16 hold_us         4  u32  µs between that packet's arrival and this report (RTT = now - echo - hold)
    20 highest_seq     4  u32  highest sequence number received
    24 cumulative_lost 4  u32  packets lost since the flow began (expected - received, at least 0)
    28 fraction_lost   1  u8   lost / expected since the last regular report, in 1/256 (RTCP's)
    29 flags           1  u8   bit 0: REMB valid; bit 1: early (a REMB sent at once on a decrease: its
                               loss fields repeat the last regular report's, the sender ignores them)
    30 usage           1  u8   the detector's signal (0 normal, 1 over-use, 2 under-use)
    31 rate_state      1  u8   the rate controller's state (0 hold, 1 increase, 2 decrease)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["GccReport", "REPORT_BYTES", "encode_report", "decode_report", "FLAG_REMB", "FLAG_EARLY"]

_R = struct.Struct("!QQIIIBBBB")
REPORT_BYTES = _R.size
FLAG_REMB, FLAG_EARLY = 0x01, 0x02


@dataclass(frozen=True, slots=True)
class GccReport:
    remb_bps: int | None
    echo_ts_ns: int
    hold_us: int
    highest_seq: int
    cumulative_lost: int
    fraction_lost: int  # 0..255
    early: bool = False
    usage: int = 0
    rate_state: int = 1

    @property
    def loss_fraction(self) -> float:
        return self.fraction_lost / 256


def encode_report(r: GccReport) -> bytes:
    flags = (FLAG_REMB if r.remb_bps is not None else 0) | (FLAG_EARLY if r.early else 0)
    return _R.pack(r.remb_bps or 0, r.echo_ts_ns & (2**64 - 1), min(max(r.hold_us, 0), 2**32 - 1),
                   r.highest_seq & 0xFFFF_FFFF, min(max(r.cumulative_lost, 0), 2**32 - 1),
                   min(max(r.fraction_lost, 0), 255), flags, r.usage, r.rate_state)


def decode_report(data: bytes) -> GccReport:
    """ValueError on a short or nonsensical report."""
    if len(data) < REPORT_BYTES:
        raise ValueError(f"GCC report: {len(data)} bytes, need {REPORT_BYTES}")
    remb, echo, hold, seq, lost, frac, flags, usage, state = _R.unpack_from(data)
    if flags & ~(FLAG_REMB | FLAG_EARLY) or usage > 2 or state > 2:
        raise ValueError(f"GCC report: flags {flags:#x}, usage {usage}, rate state {state} out of range")
    if flags & FLAG_REMB and remb == 0:
        raise ValueError("GCC report: a REMB of 0 b/s")
    return GccReport(remb if flags & FLAG_REMB else None, echo, hold, seq, lost, frac, bool(flags & FLAG_EARLY),
                     usage, state)
