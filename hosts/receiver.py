"""The receiving host as sans-I/O cores: per-flow records, the application buffer, its reports.

* :class:`FlowRecord` (the engine's) -- what a receiver learns from sequence numbers and timestamps: packets
  and bytes received, one-way delays, loss (sequence numbers skipped and never seen) and
  reordering (a packet older than the newest seen), counted apart, and duplicates.
* :class:`PlayoutBuffer` (the engine's) -- the paper's receiver buffer: ``capacity`` packets, drained by the
  application at ``playout_bps``; an arrival to a full buffer is dropped (counted).
* :class:`HostReporter` -- the receiver reports its buffer to its last-hop switch exactly as a
  switch port does (docs/wire-format.md): at the first arrival after ``interval_us`` has
  elapsed, a report with the occupancy, the capacity, a per-port sequence number and the drops
  since the previous report, and the packets the application has taken (the buffer's drain).
"""

from __future__ import annotations

from dataclasses import dataclass

import hbh_engine as _engine

from controlplane.report import FLAG_OVERFLOW, Report

__all__ = ["FlowRecord", "PlayoutBuffer", "HostReporter"]



#: ``FlowRecord(name)``: ``on_packet(seq, sent_ns, now_ns, size)``; ``received``, ``bytes``,
#: ``duplicates``, ``reordered``, ``highest``, ``owd_sum_ns``, ``lost``, ``packets`` (the engine's:
#: engine/src/host.rs, where the per-packet bookkeeping runs).
FlowRecord = _engine.FlowRecord
#: ``PlayoutBuffer(capacity, playout_bps, packet_bytes)``: ``on_arrival(now)`` (False: dropped),
#: ``drain(now)``, ``next_drain_ns()``; ``occupancy``, ``dropped``, ``played``, ``played_bytes``.
PlayoutBuffer = _engine.PlayoutBuffer


@dataclass
class HostReporter:
    node_id: int
    capacity: int
    interval_us: int
    port: int = 1
    src_mac: int = 0
    dst_mac: int = 0
    seq: int = 0
    _last_us: int | None = None
    _drops_reported: int = 0

    def on_arrival(self, now_ns: int, occupancy: int, drops_total: int, drained: int = 0,
                   drained_ns: int = 0) -> Report | None:
        """``drained``: packets the application has taken so far, the last at ``drained_ns``."""
        now_us = now_ns // 1000
        if self._last_us is not None and now_us - self._last_us < self.interval_us:
            return None
        self._last_us = now_us
        self.seq = (self.seq + 1) & 0xFFFF_FFFF
        drops, self._drops_reported = drops_total - self._drops_reported, drops_total
        return Report(node_id=self.node_id, port=self.port, occupancy=occupancy, capacity=self.capacity,
                      timestamp_us=now_us, seq=self.seq, drops=drops, interval_us=self.interval_us,
                      flags=FLAG_OVERFLOW if drops else 0, drained=drained & 0xFFFF_FFFF,
                      drained_ts_us=drained_ns // 1000, dst_mac=self.dst_mac, src_mac=self.src_mac)
