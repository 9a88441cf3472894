"""The receiving host as sans-I/O cores: per-flow records, the application buffer, its reports.

* :class:`FlowRecord` (the engine's) -- what a receiver learns from sequence numbers and timestamps: packets
  and bytes received, one-way delays, loss (sequence numbers skipped and never seen) and
  reordering (a packet older than the newest seen), counted apart, and duplicates.
* :class:`PlayoutBuffer` (the engine's) -- the paper's receiver buffer: ``capacity`` packets, drained by the
  application at ``playout_bps`` in bits (each packet takes its own bits' time, so a mix of sizes plays
  ``playout_bps``); an arrival to a full buffer is dropped (counted). Its clock never runs back: an
  arrival stamped before the latest ``drain(now)`` (a netns host reads its buffer at a sample, then takes
  frames its kernel stamped earlier) joins at that time, so what a read said was played stays true.
* :class:`HostReporter` (the engine's) -- the receiver reports its buffer to its last-hop switch exactly as a
  switch port does (docs/reference/wire-format.md): at the first arrival after ``interval_us`` has
  elapsed, a report with the occupancy, the capacity, a per-port sequence number and the drops
  since the previous report, and the packets the application has taken (the buffer's drain).
* :class:`HostReceiver` (the engine's) -- a host's receive of ordinary data packets in one engine
  call: the record, the buffer, the report when one is due; Python for every other frame.
"""

from __future__ import annotations

import hbh_engine as _engine

__all__ = ["FlowRecord", "PlayoutBuffer", "HostReporter", "HostReceiver"]

#: ``FlowRecord(name)``: ``on_packet(seq, sent_ns, now_ns, size)``; ``received``, ``bytes``,
#: ``duplicates``, ``reordered``, ``highest``, ``owd_sum_ns``, ``lost``, ``packets`` (the engine's:
#: engine/src/hosts/host.rs, where the per-packet bookkeeping runs).
FlowRecord = _engine.FlowRecord
#: ``PlayoutBuffer(capacity, playout_bps, packet_bytes)``: ``on_arrival(now, flow=0, nbytes=packet_bytes)``
#: (False: dropped),
#: ``drain(now)``, ``next_drain_ns()``; ``occupancy``, ``dropped``, ``played``, ``played_bytes``,
#: ``played_by_flow`` (flow id -> packets played: the buffer is FIFO, so a shared host plays each flow's share).
PlayoutBuffer = _engine.PlayoutBuffer
#: ``HostReporter(node_id, capacity, interval_us, port=1, src_mac=0, dst_mac=0, seq=0)``:
#: ``on_arrival(now_ns, occupancy, drops_total, drained=0, drained_ns=0)`` is the report's frame
#: (Ethernet and report, as ``controlplane.report.encode`` writes it) when one is due, else None;
#: ``interval_us`` may be changed; ``seq`` is the last report's number (the engine's: it runs in the
#: host's receive, engine/src/hosts/hostrecv.rs).
HostReporter = _engine.HostReporter
#: ``HostReceiver``: the base class of a simulated host (topo/sim/network.py's ``SimHostNode``) whose
#: ``receive(frame)`` accounts ordinary data packets in the engine (engine/src/hosts/hostrecv.rs) and
#: hands every other frame to the subclass's ``_receive_python``; ``bind_receive``,
#: ``receive_flow``, ``receive_counts()``.
HostReceiver = _engine.HostReceiver
