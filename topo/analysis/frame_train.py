"""A buffer counted in packets that a train of small frames behind one large frame overflows (topo/analysis/check.py).

Why: a link sends a frame in its own bits' time, so frames that wait behind a large one leave after it back to back, at
the link's rate; each hop that sends the large frame first holds them behind it again. At a switch v whose exit toward
w no law paces (its queue is served at the link's rate: no report comes from w), the large frame leaves toward w in
``8·large / C_out`` while the small ones behind it arrive from u one every ``8·small / C_in``: ``large·C_in /
(small·C_out)`` of them wait in v's buffer from u, which alinea.p4 counts in packets (docs/reference/dataplane.md, "The
buffer model"), whatever their bytes. More than its capacity: the excess is lost within a report gap, the report finding
the buffer nearly empty before and after, at any rate the laws set (they set rates in bits, and the train is the
frames' own spacing on the wire). Seen in make fuzz-topo seed 3 (fail-3 and fail-4, issue 46): 1448 B frames and 200 B
ones from S2 toward H3 through S1, whose buffer from S2 is 5 packets (1 ms at 50 Mb/s in 1448 B frames), 50 Mb/s on
both sides: the 200 B frames behind one 1448 B frame arrived 32 µs apart, 7 while it left, and the 6th and 7th were
lost (2 lost at seed 1, the report before and after reading 1 packet). A paced exit (a law toward w) is left out: its
queue sends every frame after the spacing of its rate, not of the frame ahead; and an exit slower than the link from
u: the train is as long as the frames bunched behind the large one upstream, at most what u's paced queue sends while
the large frame crosses u -> v, and what builds behind a slower exit is the laws' to hold, in bits (the fluid model and
the room rule of topo/analysis/check.py): counted as ``large·C_in / (small·C_out)`` it warned a host's buffer of 37
frames where 3 were lost (tests/topo/random_cases/small-frames-shared-fifo.yaml, for another reason).

A receiver's buffer (``receive_buffer``) is the same buffer with its application for the exit: no law paces the
playout, which takes each frame in its own bits' time, and the buffer holds a frame until it has been played out
(hosts/receiver.py), so the large frame is one of the packets it counts. The small frames that arrive strictly
before the large one has played out, ``ceil(large·C_in / (small·playout)) - 1``, and the large frame itself must
fit; a playout slower than the link is left to the fluid model and the room rule, as a slow exit is. Seen in make
fuzz-topo seed 5 (fail-4, issue 46; tests/topo/random_cases/receiver-frame-train.yaml): H2's buffer of 2 packets
(1 ms at 20 Mb/s in 1448 B frames), fed at 10 Mb/s with 200 B and 1448 B frames: the 200 B frames behind a 1448 B
one arrived 160 µs apart, 3 within its 579 µs of playout, and 21 were lost at seed 1, one or two after each 1448 B
frame, although the playout is twice the link in bits. S3's law toward H2 paces its queue in packets/s, but the
frames whose departures fall due while a 1448 B frame takes 1.16 ms on the link leave after it back to back: only
a rate under about one small frame per large frame's time on the link would avoid it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from topo.net.model import Topology
from topo.net.plan import flow_frame_bytes, streams_over
from topo.net.routes import routed_paths

__all__ = ["FrameTrain", "frame_trains", "frames_during_playout", "receiver_trains"]

DirectedLink = tuple[str, str]


@dataclass(frozen=True)
class FrameTrain:
    """v's buffer from u overflows with the small frames that wait behind one large frame leaving toward ``exit``."""

    exit: str  # v's next hop the frames leave by, at its link's rate (no law paces it)
    large_bytes: int
    small_bytes: int
    in_bps: float  # the link u -> v
    out_bps: float  # the link v -> exit
    frames: int  # small frames that arrive from u while one large frame leaves
    capacity: int  # v's buffer from u, packets
    playout: bool = False  # v is a receiver, ``exit`` itself: its buffer holds the large frame too until it is played

    @property
    def need(self) -> int:
        """The packets v's buffer must hold: the train, and the large frame where it stays until played out."""
        return self.frames + self.playout


def frame_trains(topo: Topology, paced: set[DirectedLink]) -> dict[DirectedLink, FrameTrain]:
    """For each law (u, v) in ``topo.law``: the exit of v, not in ``paced`` (the directed links a law regulates), by
    which a train of u's small frames behind a large one overflows v's buffer from u, if one does (the longest)."""
    paths = routed_paths(topo)
    sizes: dict[tuple[str, str, str], set[int]] = {}  # (u, v, w) -> the frame sizes of the flows crossing u -> v -> w
    for f in topo.flows:
        path = paths[f.name]
        for i in range(1, len(path) - 1):
            sizes.setdefault((path[i - 1], path[i], path[i + 1]), set()).add(flow_frame_bytes(f))
    out: dict[DirectedLink, FrameTrain] = {}
    for (u, v, w), mix in sorted(sizes.items()):
        if (u, v) not in topo.law or (v, w) in paced or len(mix) < 2 or not topo.nodes[v].is_switch:
            continue
        port = topo.ports.get((v, u))
        if port is None:
            continue
        large, small = max(mix), min(mix)
        in_bps, out_bps = topo.link_between(u, v).rate_bps, topo.link_between(v, w).rate_bps
        if in_bps > out_bps:  # an exit slower than the feed: what builds there is in bits (the fluid model's)
            continue
        frames = int(large * in_bps // (small * out_bps))
        if frames > port.capacity and ((u, v) not in out or frames > out[(u, v)].frames):
            out[(u, v)] = FrameTrain(w, large, small, in_bps, out_bps, frames, port.capacity)
    return out


def frames_during_playout(large: int, small: int, in_bps: float, playout_bps: float) -> int:
    """Small frames arriving back to back at ``in_bps`` strictly before a ``large`` frame that arrived just ahead of
    them has played out at ``playout_bps``: the k >= 1 with ``k·small/in_bps < large/playout_bps`` (exact: at a
    tie the played frame leaves first, as the engine's buffer drains before it admits)."""
    return math.ceil(Fraction(large) * Fraction(in_bps) / (Fraction(small) * Fraction(playout_bps))) - 1


def receiver_trains(topo: Topology, laws: set[DirectedLink]) -> dict[DirectedLink, FrameTrain]:
    """For each law (u, h) in ``laws`` toward a host h with a ``receive_buffer``: the train of u's small frames behind
    a large one that overflows h's buffer while the large frame plays out, if one does. A playout slower than the
    link is left out (what builds there is in bits: the fluid model's and the room rule's)."""
    out: dict[DirectedLink, FrameTrain] = {}
    for u, h in sorted(laws):
        node = topo.nodes[h]
        port = topo.host_buffers.get((h, u))
        if node.is_switch or port is None or not node.playout_bps:
            continue
        mix = {flow_frame_bytes(f) for f in streams_over(topo, u, h)}
        in_bps, play_bps = topo.link_between(u, h).rate_bps, node.playout_bps
        if len(mix) < 2 or in_bps > play_bps:
            continue
        large, small = max(mix), min(mix)
        frames = frames_during_playout(large, small, in_bps, play_bps)
        if frames + 1 > port.capacity:
            out[(u, h)] = FrameTrain(h, large, small, in_bps, play_bps, frames, port.capacity, playout=True)
    return out
