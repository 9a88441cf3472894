"""A switch's buffer counted in packets that a run of small frames from the switch before it overflows, the next hop's
queue rate set in packets/s from a larger mean frame (topo/analysis/check.py).

Why: a switch u whose queue toward v holds a backlog sends it in arrival order, so the frames of a flow of small
frames that waited behind others leave u back to back, a run of them; a law at its R_max converts at the smallest
frame expected through its port until the port sends its rate (controlplane/frame_size.py, ``open_mean``), so the run
can leave at u's link rate (or the law's R_max), in bits. v sends them on toward w through its queue whose rate is in
packets/s, its law's bits over the mean frame v sent over the last 0.2 s: small frames leave v at that mean's packet
rate, fewer bits than come in, by ``small / mean``, and v's buffer from u, which alinea.p4 counts in packets, gains the
difference for as long as the run lasts, whatever u's law does meanwhile (the run is already queued at u, its departures
stamped). A run needs a link that brings u small frames and nothing larger toward v: a link that brings both interleaves
them at its sender (a host's pacer shares its bits by flow), and none is counted from it (stamped-mixed-backlog.yaml,
whose 200 B and 1448 B frames come from one host, loses nothing). The run is at most what u's buffers from those links
hold (packets), and at most what arrives within the mean's window (0.2 s: then v's mean has caught up).
More packets gained than v's buffer from u holds above its target: the law is ruled out. Only the mix is counted:
the run's bits above what v drains in bits are the laws' to hold (the fluid model), so with frames of one size nothing
is gained here. Seen in tests/topo/random_cases/small-frame-run-dip.yaml (make fuzz-topo seed 9, issue 46): S1 held
f3's 1500 B frames and f2's 200 B ones and sent them toward S3 at its 5 Mb/s link; S3's queue toward S2 at its 5 Mb/s
R_max in packets/s at its mean frame (about 530 B) sent f2's runs at under 2 Mb/s, and S3's 7-packet buffer from S1
swung 1-7 every ~10 ms: 1 lost (seed 1). :mod:`topo.analysis.mix_step` is the same dip when a host's frames shrink at a
flow's stop or start, :mod:`topo.analysis.frame_train` a train behind one large frame at an exit no law paces.

The mean v's queue converts at: v's flows toward w at their max-min fair shares in bits over their whole paths (the
mix the laws settle to when they use their links; 242 B in small-frame-run-dip.yaml, where S3 measured about 530 B:
a larger mean gains more). At equal shares per flow (as mix_step.py takes a host's pacer) a flow held to 20 Mb/s
upstream counted as a third of 100 Mb/s: fuzz-topo seed 18 (300 draws, --alinea-only) warned 6 more draws than
without this check, all losing nothing; 1 with the paths' shares. The run's frames are the smallest of u's toward w."""

from __future__ import annotations

import math
from dataclasses import dataclass

from controlplane.frame_size import READ_PERIOD_NS, WINDOW_SAMPLES
from topo.analysis.floor_check import NS, _unit
from topo.net.model import Flow, Topology
from topo.net.plan import buffer_for_gain, flow_frame_bytes, max_min_shares, room_above_target
from topo.net.routes import routed_paths

__all__ = ["FrameRun", "frame_runs"]

DirectedLink = tuple[str, str]


@dataclass(frozen=True)
class FrameRun:
    """Law u -> v (u a switch): a run of ``run_frames`` of u's ``small_bytes`` B frames arrives at ``in_bps`` while
    v's queue toward ``exit`` sends them at ``out_bps`` in packets/s of its ``mean_bytes`` B mean frame: v's buffer
    from u gains ``gained_pkts``, more than the ``room_pkts`` above its target."""

    exit: str
    small_bytes: int
    mean_bytes: float
    in_bps: float
    out_bps: float
    run_frames: int
    gained_pkts: float
    room_pkts: float
    need_pkts: int  # the smallest buffer (packets) whose room above the target holds the gain


def frame_runs(topo: Topology) -> dict[DirectedLink, FrameRun]:
    """For each law (u, v) between two switches: the regulated exit of v toward which a run of u's small frames
    overfills v's buffer from u the most, if one does."""
    paths = routed_paths(topo)
    alinea = [f for f in topo.flows if f.control == "alinea"]
    through: dict[tuple[str, str, str], list[Flow]] = {}  # (u, v, w) -> the flows crossing u -> v -> w
    crossing: dict[DirectedLink, list[Flow]] = {}  # (v, w) -> the flows crossing v -> w
    for f in alinea:
        path = paths[f.name]
        for i in range(len(path) - 1):
            crossing.setdefault((path[i], path[i + 1]), []).append(f)
            if i > 0:
                through.setdefault((path[i - 1], path[i], path[i + 1]), []).append(f)
    shares = max_min_shares(topo, {f.name: tuple(zip(paths[f.name], paths[f.name][1:])) for f in alinea}, alinea)
    out: dict[DirectedLink, FrameRun] = {}
    window_s = WINDOW_SAMPLES * READ_PERIOD_NS / NS
    for (u, v, w), flows in sorted(through.items()):
        if ((u, v) not in topo.law or (v, w) not in topo.law or not topo.nodes[u].is_switch
                or not topo.nodes[v].is_switch):
            continue
        port = topo.ports.get((v, u))
        if port is None:
            continue
        small = min(flow_frame_bytes(f) for f in flows)
        bits = {_unit(f): (shares[f.name], flow_frame_bytes(f)) for f in crossing[(v, w)]}
        if not all(b > 0 for b, _ in bits.values()):
            continue
        mean = sum(b for b, _ in bits.values()) / sum(b / size for b, size in bits.values())
        if small >= mean * (1 - 1e-9):
            continue
        in_bps = min(topo.link_between(u, v).rate_bps, topo.law[(u, v)].r_max)
        out_bps = min(topo.link_between(v, w).rate_bps, topo.law[(v, w)].r_max)
        # the run: the small frames u's buffers hold from the links that bring u nothing larger toward v (a link that
        # brings both interleaves them at its sender: a host's pacer shares its bits by flow)
        toward_v = crossing[(u, v)]
        if len({flow_frame_bytes(f) for f in toward_v}) < 2:
            continue
        feeds = {paths[f.name][paths[f.name].index(u) - 1] for f in flows if flow_frame_bytes(f) == small}
        pure = [x for x in feeds if all(flow_frame_bytes(f) == small for f in toward_v
                                        if paths[f.name].index(u) > 0 and paths[f.name][paths[f.name].index(u) - 1] == x)]
        held = sum(topo.ports[(u, x)].capacity for x in pure if (u, x) in topo.ports)
        run = min(held, math.floor(window_s * in_bps / (8 * small)))
        # v forwards the run at its packet rate in small frames; in bits at most what it drains (the rest is the
        # laws' to hold): per small frame in, the share it does not send on
        per = 1 - (small / mean) * out_bps / min(in_bps, out_bps)
        gained = run * per
        room = room_above_target(topo, u, v, port.capacity)
        if run <= 0 or gained <= room:
            continue
        need = buffer_for_gain(topo, u, v, gained)
        found = FrameRun(w, small, mean, in_bps, out_bps, run, gained, room, need)
        was = out.get((u, v))
        if was is None or found.gained_pkts - found.room_pkts > was.gained_pkts - was.room_pkts:
            out[(u, v)] = found
    return out
