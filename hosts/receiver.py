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
* :class:`HostReceiver` (the engine's) -- a host's receive of ordinary data packets in one engine
  call: the record, the buffer, and the reporter's due time; Python for every other frame.
"""

from __future__ import annotations

import hbh_engine as _engine

from controlplane.report import FLAG_OVERFLOW, Report

__all__ = ["FlowRecord", "PlayoutBuffer", "HostReporter", "HostReceiver"]



#: ``FlowRecord(name)``: ``on_packet(seq, sent_ns, now_ns, size)``; ``received``, ``bytes``,
#: ``duplicates``, ``reordered``, ``highest``, ``owd_sum_ns``, ``lost``, ``packets`` (the engine's:
#: engine/src/host.rs, where the per-packet bookkeeping runs).
FlowRecord = _engine.FlowRecord
#: ``PlayoutBuffer(capacity, playout_bps, packet_bytes)``: ``on_arrival(now)`` (False: dropped),
#: ``drain(now)``, ``next_drain_ns()``; ``occupancy``, ``dropped``, ``played``, ``played_bytes``.
PlayoutBuffer = _engine.PlayoutBuffer


#: ``HostReceiver``: the base class of a simulated host (topo/simnet.py's ``SimHostNode``) whose
#: ``receive(frame)`` accounts ordinary data packets in the engine (engine/src/hostrecv.rs) and
#: hands every other frame to the subclass's ``_receive_python``; ``bind_receive``,
#: ``receive_flow``, ``receive_counts()``.
HostReceiver = _engine.HostReceiver


class HostReporter:
    """A host's report of its buffer (see the module); ``seq`` is the last report's number.

    ``due_us`` is the first µs (the receiver's clock) at which an arrival makes a report, None
    for the next arrival: the engine's receive reads it to call Python only then. It follows
    every report and every change of ``interval_us``."""

    def __init__(self, node_id: int, capacity: int, interval_us: int, port: int = 1, src_mac: int = 0,
                 dst_mac: int = 0, seq: int = 0) -> None:
        self.node_id = node_id
        self.capacity = capacity
        self.port = port
        self.src_mac = src_mac
        self.dst_mac = dst_mac
        self.seq = seq
        self._last_us: int | None = None
        self._drops_reported = 0
        self.due_us: int | None = None
        self.interval_us = interval_us

    @property
    def interval_us(self) -> int:
        return self._interval_us

    @interval_us.setter
    def interval_us(self, value: int) -> None:
        self._interval_us = value
        self.due_us = None if self._last_us is None else self._last_us + value

    def on_arrival(self, now_ns: int, occupancy: int, drops_total: int, drained: int = 0,
                   drained_ns: int = 0) -> Report | None:
        """``drained``: packets the application has taken so far, the last at ``drained_ns``."""
        now_us = now_ns // 1000
        if self.due_us is not None and now_us < self.due_us:  # less than interval_us since the last
            return None
        self._last_us = now_us
        self.due_us = now_us + self._interval_us
        self.seq = (self.seq + 1) & 0xFFFF_FFFF
        drops, self._drops_reported = drops_total - self._drops_reported, drops_total
        return Report(node_id=self.node_id, port=self.port, occupancy=occupancy, capacity=self.capacity,
                      timestamp_us=now_us, seq=self.seq, drops=drops, interval_us=self._interval_us,
                      flags=FLAG_OVERFLOW if drops else 0, drained=drained & 0xFFFF_FFFF,
                      drained_ts_us=drained_ns // 1000, dst_mac=self.dst_mac, src_mac=self.src_mac)
