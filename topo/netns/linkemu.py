"""A link emulator on AF_PACKET: a link's rate and delay where ``tc netem`` is missing.

Why: BMv2 has no link model, and netem (``sch_netem``) is a kernel module some machines do
not have. Without it a ``--target bmv2`` run would carry its frames at veth speed, which is
not the topology. This process sits between a switch's interface and its neighbour's (two
veth pairs, ``A`` and ``B``, see :mod:`topo.netns.network`), reads frames on ``A`` and hands them to
``B`` as the project's own link model says: a :class:`~runtime.link.Transmitter` on a
:class:`~runtime.link.LinkModel` (bit rate, frame bytes only, as the topology counts them)
serializes them back to back in arrival order, and each leaves on ``B`` at the end of its
serialization plus the propagation delay. Frames waiting or in flight are limited to
``--limit`` (10000, netem's ``limit`` as the backend sets it); beyond that a frame is dropped
and counted. ``B`` to ``A`` is forwarded at once, or shaped the same way with ``--both-ways``
(a switch-switch link: both directions leave a switch).

The ports are p4switch's :class:`~runtime.ports.PacketSocketPort` (checksum and GSO offloads
finished as p4switch finishes them), on one :class:`~runtime.sched.RealtimeScheduler` loop.

    python -m topo.netns.linkemu --a IF_A --b IF_B --rate BPS --delay-ns NS [--both-ways]
                           [--limit N] [--control-socket PATH]

It prints ``ready`` on stdout once both ports are open and ends cleanly on SIGTERM or SIGINT
(the control socket removed, counters on stderr). The control socket (a
:class:`p4switch.control.ControlServer`, one JSON line each way) changes the rate at run time::

    {"op": "set_bitrate", "bps": 1000000}   -> both shaped directions, from the next frame on
    {"op": "bitrate"}                        -> {"a->b": 1000000, "b->a": null}
    {"op": "stats"}                          -> per direction: frames carried, dropped, queued,
                                                backlog (waiting now) and peak_backlog

**Backlog.** A frame *waits* while another is on the wire ahead of it: its serialization has not
started. ``backlog`` counts those frames now, ``peak_backlog`` the most there ever were (frames
being serialized or propagating are not counted: a long link holds many in flight and none of them
is a queue). On BMv2 the switch's egress queue of the port paces at the link's rate
(:mod:`topo.netns.link_pacing`), so the backlog of a slow link forms in the switch, where its data plane
counts it; the emulator then holds at most the one frame on its wire, and a run whose emulators
waited more frames says so (docs/howto/bmv2.md, "No hidden queue on an emulated link").
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import signal
import struct
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from runtime.link import LinkModel, Transmitter
from runtime.ports import PacketSocketPort, PortError
from runtime.realtime import enter_realtime
from runtime.sched import RealtimeScheduler

__all__ = ["LinkEmulator", "Direction", "DEFAULT_LIMIT", "main"]

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10_000  # frames waiting or in flight per direction (netem's limit as the backend sets it)
#: SCHED_FIFO priority of the delivery loop (runtime/realtime.py; 0: normal priority)
REALTIME_PRIORITY = 10
SIOCGSTAMPNS = 0x8907  # the kernel's receive time (CLOCK_REALTIME) of the last frame a socket read
_TIMESPEC = struct.Struct("qq")
MAX_LEAD_NS = 300_000  # the most a frame is handed to the loop ahead of its time (see Direction.lead_ns)


def frame_bytes_model(bitrate_bps: int, delay_ns: int) -> LinkModel:
    """The topology's links count frame bytes only (as p4switch's ``--port-overhead 0 --port-min-frame 0``)."""
    return LinkModel(bitrate_bps=bitrate_bps, delay_ns=delay_ns, overhead_bytes=0, min_frame_bytes=0)


@dataclass
class Direction:
    """One direction of the emulated link: into ``out`` through a Transmitter, or at once."""

    sched: RealtimeScheduler
    into: PacketSocketPort  # frames arrive here ...
    out: PacketSocketPort  # ... and leave here
    tx: Transmitter | None  # None: unshaped
    limit: int = DEFAULT_LIMIT
    carried: int = 0
    dropped: int = 0
    queued: int = 0  # serializing or in flight
    #: how late the loop runs a delivery (EWMA, ns): deliveries are scheduled that much early
    lead_ns: int = 0
    _last_at: int = 0  # the latest delivery time scheduled (frames never overtake)
    #: serialization end times of the frames on the wire or waiting for it, oldest first
    _ends: deque[int] = field(default_factory=deque)
    peak_backlog: int = 0  # the most frames ever waiting behind the one on the wire

    def carry(self, _port: int, frame: bytes) -> None:
        tx = self.tx
        if tx is None:
            self.carried += 1
            self.out.send(frame)
            return
        if self.queued >= self.limit:
            self.dropped += 1
            return
        arrival = self.arrival_ns()
        _start, end = tx.transmit(arrival, len(frame))
        self._ends.append(end)
        waiting = self.backlog(arrival)
        if waiting > self.peak_backlog:
            self.peak_backlog = waiting
        self.queued += 1
        due = end + tx.model.delay_ns
        at = self._last_at = max(self._last_at, due - self.lead_ns)
        self.sched.call_at(at, self._deliver, frame, at)

    def arrival_ns(self) -> int:
        """When the frame just read reached the interface, on the loop's clock.

        Why not ``now_ns()``: the loop wakes up some 0.1 ms after a frame arrives (more on a
        busy machine); the kernel's receive timestamp takes that out of the link's delay.
        """
        now = self.sched.now_ns()
        try:
            sec, nsec = _TIMESPEC.unpack(fcntl.ioctl(self.into.fileno(), SIOCGSTAMPNS, bytes(16)))
        except OSError:  # no timestamp (yet): the first call turns them on
            return now
        return now - min(max(0, time.time_ns() - (sec * 1_000_000_000 + nsec)), 10_000_000)

    def _deliver(self, frame: bytes, at: int) -> None:
        """Out on ``out``; the loop's lateness (a wake-up from its poll takes some 0.1 ms) is
        learnt, so that later frames are handed to the loop that much ahead of their time."""
        late = self.sched.now_ns() - at
        self.lead_ns = min(MAX_LEAD_NS, max(0, self.lead_ns + (late - self.lead_ns) // 4 + (late > 0)))
        self.queued -= 1
        self.carried += 1
        self.out.send(frame)

    def backlog(self, now_ns: int) -> int:
        """Frames waiting at ``now_ns`` behind the one on the wire (whose serialization has not started)."""
        ends = self._ends
        while ends and ends[0] <= now_ns:
            ends.popleft()
        return len(ends) - 1 if len(ends) > 1 else 0

    def set_bitrate(self, bps: int) -> None:
        """From the next frame on; frames already serialized keep their times (as a replaced netem)."""
        if self.tx is not None:
            self.tx.model = replace(self.tx.model, bitrate_bps=bps)

    def stats(self) -> dict[str, int]:
        return {"carried": self.carried, "dropped": self.dropped, "queued": self.queued,
                "backlog": self.backlog(self.sched.now_ns()), "peak_backlog": self.peak_backlog}


class LinkEmulator:
    """Two AF_PACKET ports and the two directions between them, on ``sched``'s loop."""

    def __init__(self, sched: RealtimeScheduler, a: str, b: str, model: LinkModel, *, both_ways: bool = False,
                 limit: int = DEFAULT_LIMIT) -> None:
        self.sched = sched
        self.port_a = PacketSocketPort(1, a, sched)
        try:
            self.port_b = PacketSocketPort(2, b, sched)
        except Exception:
            self.port_a.close()
            raise
        self.ways = {
            "a->b": Direction(sched, self.port_a, self.port_b, Transmitter(model), limit),
            "b->a": Direction(sched, self.port_b, self.port_a, Transmitter(model) if both_ways else None, limit),
        }
        for way in self.ways.values():
            way.arrival_ns()  # turns the sockets' receive timestamps on
        self.port_a.on_receive = self.ways["a->b"].carry
        self.port_b.on_receive = self.ways["b->a"].carry

    def set_bitrate(self, bps: int) -> None:
        if isinstance(bps, bool) or not isinstance(bps, int) or bps < 0:
            raise ValueError(f"bps must be an integer >= 0, got {bps!r}")
        for way in self.ways.values():
            way.set_bitrate(bps)

    def bitrate(self) -> dict[str, int | None]:
        return {name: way.tx.model.bitrate_bps if way.tx is not None else None for name, way in self.ways.items()}

    def stats(self) -> dict[str, dict[str, int]]:
        return {name: way.stats() for name, way in self.ways.items()}

    def close(self) -> None:
        self.port_a.close()
        self.port_b.close()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m topo.netns.linkemu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, metavar="IF", help="the interface frames are shaped FROM (a switch's peer)")
    p.add_argument("--b", required=True, metavar="IF", help="the interface they leave on (the neighbour's peer)")
    p.add_argument("--rate", type=int, required=True, metavar="BPS", help="bit rate, frame bytes counted (0: none)")
    p.add_argument("--delay-ns", type=int, default=0, metavar="NS", help="one-way propagation delay")
    p.add_argument("--both-ways", action="store_true", help="shape B to A as well (else it is forwarded at once)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                   help=f"frames waiting or in flight per direction before drops (default {DEFAULT_LIMIT})")
    p.add_argument("--control-socket", metavar="PATH", help="Unix socket for set_bitrate / bitrate / stats")
    p.add_argument("--realtime-priority", type=int, default=REALTIME_PRIORITY, metavar="N",
                   help=f"SCHED_FIFO priority of the delivery loop, 0 = normal (default {REALTIME_PRIORITY}; "
                        "back to normal if it keeps a core busy)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s linkemu %(levelname)s: %(message)s")
    try:
        model = frame_bytes_model(args.rate, args.delay_ns)
    except ValueError as exc:
        print(f"linkemu: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    sched = RealtimeScheduler()
    try:
        emu = LinkEmulator(sched, args.a, args.b, model, both_ways=args.both_ways, limit=args.limit)
    except PortError as exc:
        sched.stop()
        print(f"linkemu: {exc}", file=sys.stderr)
        return 2
    sched.start()
    try:
        raised = sched.run_sync(lambda: enter_realtime(args.realtime_priority))
    except ValueError as exc:
        sched.run_sync(emu.close)
        sched.stop()
        print(f"linkemu: {exc}", file=sys.stderr)
        return 2
    control = None
    try:
        if args.control_socket:
            from p4switch.control import ControlServer

            ops = {"set_bitrate": emu.set_bitrate, "bitrate": emu.bitrate, "stats": emu.stats}
            control = ControlServer(args.control_socket, ops, lambda fn: sched.run_sync(fn, timeout=10))
            control.start()
        from runtime import heap

        heap.settle()  # no full collection of the start-up objects stalls the loop later
        log.info("%s -> %s: %d b/s, %d ns%s; loop at %s", args.a, args.b, args.rate, args.delay_ns,
                 " (both ways)" if args.both_ways else f"; {args.b} -> {args.a} unshaped",
                 f"SCHED_FIFO {args.realtime_priority}" if raised else "normal priority")
        print("ready", flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        if control is not None:
            control.stop()
        stats: Any = sched.run_sync(emu.stats)
        sched.run_sync(emu.close)
        sched.stop()
        log.info("stopped: %s", stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
