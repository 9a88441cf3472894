"""The receiving host as sans-I/O cores: per-flow records, the application buffer, its reports.

* :class:`FlowRecord` -- what a receiver learns from sequence numbers and timestamps: packets
  and bytes received, one-way delays, loss (sequence numbers skipped and never seen) and
  reordering (a packet older than the newest seen), counted apart, and duplicates.
* :class:`PlayoutBuffer` -- the paper's receiver buffer: ``capacity`` packets, drained by the
  application at ``playout_bps``; an arrival to a full buffer is dropped (counted).
* :class:`HostReporter` -- the receiver reports its buffer to its last-hop switch exactly as a
  switch port does (docs/wire-format.md): at the first arrival after ``interval_us`` has
  elapsed, a report with the occupancy, the capacity, a per-port sequence number and the drops
  since the previous report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controlplane.report import FLAG_OVERFLOW, Report

__all__ = ["FlowRecord", "PlayoutBuffer", "HostReporter"]

NS_PER_S = 1_000_000_000


@dataclass
class FlowRecord:
    name: str
    received: int = 0
    bytes: int = 0
    duplicates: int = 0
    reordered: int = 0
    highest: int = -1
    owd_sum_ns: int = 0
    missing: set[int] = field(default_factory=set)
    # per packet: (seq, send ns, receive ns); one-way delay = receive - send (+ clock offset)
    packets: list[tuple[int, int, int]] = field(default_factory=list)

    def on_packet(self, seq: int, sent_ns: int, now_ns: int, size: int) -> None:
        if seq > self.highest:
            self.missing.update(range(self.highest + 1, seq))
            self.highest = seq
        elif seq in self.missing:
            self.missing.discard(seq)
            self.reordered += 1
        else:
            self.duplicates += 1
            return
        self.received += 1
        self.bytes += size
        self.owd_sum_ns += now_ns - sent_ns
        self.packets.append((seq, sent_ns, now_ns))

    @property
    def lost(self) -> int:
        """Sequence numbers below the newest one received that never arrived."""
        return len(self.missing)


@dataclass
class PlayoutBuffer:
    capacity: int
    playout_bps: float
    packet_bytes: int
    occupancy: int = 0
    dropped: int = 0
    played: int = 0
    played_bytes: int = 0
    _next_ns: int | None = None

    @property
    def gap_ns(self) -> int:
        return round(self.packet_bytes * 8 * NS_PER_S / self.playout_bps)

    def on_arrival(self, now_ns: int) -> bool:
        """A packet arrives; False if the buffer was full and it is dropped."""
        self.drain(now_ns)
        if self.occupancy >= self.capacity:
            self.dropped += 1
            return False
        self.occupancy += 1
        if self._next_ns is None:
            self._next_ns = now_ns + self.gap_ns
        return True

    def next_drain_ns(self) -> int | None:
        return self._next_ns

    def drain(self, now_ns: int) -> None:
        """The application takes every packet whose play-out time has come."""
        while self._next_ns is not None and self._next_ns <= now_ns:
            self.occupancy -= 1
            self.played += 1
            self.played_bytes += self.packet_bytes
            self._next_ns = self._next_ns + self.gap_ns if self.occupancy else None


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

    def on_arrival(self, now_ns: int, occupancy: int, drops_total: int) -> Report | None:
        now_us = now_ns // 1000
        if self._last_us is not None and now_us - self._last_us < self.interval_us:
            return None
        self._last_us = now_us
        self.seq = (self.seq + 1) & 0xFFFF_FFFF
        drops, self._drops_reported = drops_total - self._drops_reported, drops_total
        return Report(node_id=self.node_id, port=self.port, occupancy=occupancy, capacity=self.capacity,
                      timestamp_us=now_us, seq=self.seq, drops=drops, interval_us=self.interval_us,
                      flags=FLAG_OVERFLOW if drops else 0, dst_mac=self.dst_mac, src_mac=self.src_mac)
