"""Every ALINEA law of a topology checked against the loop analysis, before a run.

Why: a researcher who changes a link rate or delay should not silently get a lossy loop. For each
law (u regulating its rate toward v) this builds :class:`controlplane.loop_analysis.Loop` from
the topology (v's buffer and report interval, the packet size, both propagation delays, the
control plane's latency when u is a switch) and checks three things: that the settled loop is
stable (one law, its characteristic equation), that v's buffer can hold its target plus one
packet from each link that feeds its queue (packets, which a fluid model does not see), and that
the laws together do not overflow it (:mod:`topo.analysis.fluid_network`: the hops of a line start up
together, which one law's model does not see), and that no law's floor alone overflows it
(:mod:`topo.analysis.floor_check`: a floor derived from a fast link above a slow path), and that the buffer is
not shared by an exit slower than its share of the feed with exits that pass, whose departures the law
would take for the buffer's drain, nor drained as a share of a FIFO another link fills below the floor of
the law that feeds it (:mod:`topo.analysis.head_of_line`), and that it holds the small frames that arrive behind one
large frame leaving by an exit no law paces, or playing out at a receiver (:mod:`topo.analysis.frame_train`), nor a run of small frames a switch's backlog
sends into a queue whose rate in packets/s is set from a larger mean frame (:mod:`topo.analysis.frame_run`), and that
no buffer overflows in the fluid model at the rate an exit carries that runs dry under frames larger than the FIFO
its laws hold (:mod:`topo.analysis.exit_idle`), nor through a forecast over a long stamped horizon that the control
latency walks further than v's buffer has room for (:mod:`topo.analysis.stamp_lag`). ``hbh run`` prints one warning per law that fails
one, once, at start (docs/background/analysis.md, "The loop with its delay" and "The hops together").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from controlplane.frame_size import packets_for_frames
from controlplane.loop_analysis import Loop, Verdict, assess, max_stable_scale
from controlplane.units import format_rate
from topo.analysis.brake_ramp import with_brake_ramps
from topo.analysis.drain_fall import DrainFall, drain_falls
from topo.analysis.exit_idle import ExitShortfall, exit_shortfalls
from topo.analysis.floor_check import FloorOverflow, floor_overflows
from topo.analysis.fluid_network import (
    LOSS_PKTS,
    NetworkPeak,
    network_peaks,
    overflows,
    room_at_peak,
    smallest_scale,
)
from topo.analysis.frame_run import FrameRun, frame_runs
from topo.analysis.frame_train import FrameTrain, frame_trains, receiver_trains
from topo.analysis.head_of_line import (
    FifoShare,
    SharedFifo,
    SlowExit,
    fifo_shares,
    share_feeders,
    shared_fifos,
    slow_exits,
)
from topo.analysis.mix_step import MixStep, mix_steps
from topo.analysis.report_gap import sparse_reports, with_sparse_reports
from topo.analysis.stamp_lag import StampLag, stamp_lags
from topo.analysis.wire_backlog import WireBacklog, wire_backlogs
from topo.net.model import Topology
from topo.net.plan import buffer_unit_bytes, flow_frame_bytes, law_frames, port_unit_bytes
from topo.net.routes import routed_paths
from topo.net.starts import with_drawn_starts

__all__ = ["LawCheck", "law_loops", "check_topology", "warnings", "loop_delay_s", "downstream_drain", "alinea_links",
           "buffer_of", "feeding_links", "pacing_law", "path_drain", "with_remedy", "warnings_of"]

DirectedLink = tuple[str, str]
#: The remedy's model runs last this many times the latest first loss, plus the margin (s).
REMEDY_SPAN = 1.5
REMEDY_MARGIN_S = 1.0


@dataclass(frozen=True)
class LawCheck:
    key: DirectedLink
    loop: Loop
    verdict: Verdict  # the one-law analysis: the settled loop's stability, its fluid peak
    drop_at_s: float | None
    network: NetworkPeak | None = None  # the laws together: v's buffer fed by u
    inputs: int = 1  # links feeding v's queue that u's packets join (0: it drains faster than they feed it)
    scale: float | None = None  # buffers this many times as large lose nothing together (None: not found)
    events_s: tuple[float, ...] = ()  # when the topology's links change rate
    starts_s: tuple[tuple[float, str], ...] = ()  # (when, which) the ALINEA flows start, as the model starts them
    floor: FloorOverflow | None = None  # u's floor alone overflows v's buffer (topo/analysis/floor_check.py)
    slow_exit: SlowExit | None = None  # v's buffer holds a slow exit's backlog beside passing exits (head_of_line.py)
    shared_fifo: SharedFifo | None = None  # v's drain is its share of a FIFO another link fills (head_of_line.py)
    # u's own drain at v is its share of a FIFO another link fills, and the model holds v's buffer at its target or
    # above (head_of_line.py, fifo_shares; set by check_topology only then)
    fifo_share: FifoShare | None = None
    # (x, its share): u's drain at v is what v's law toward x sends, a law whose drain is a held FIFO share, and the
    # model holds v's buffer from u at its target or above (head_of_line.py, share_feeders)
    fed_share: tuple[str, FifoShare] | None = None
    train: FrameTrain | None = None  # small frames behind a large one overflow v's buffer (frame_train.py)
    step: MixStep | None = None  # a flow's stop or start shrinks u's frames faster than v's queue rate follows (mix_step.py)
    run: FrameRun | None = None  # a run of u's small frames is sent on slower in bits by v's queue (frame_run.py)
    # u's backlog waits behind its wire with its stamps past, so its cuts land late, and the model holds v's buffer at
    # its target or above (wire_backlog.py; set by check_topology only then)
    wire: WireBacklog | None = None
    # v's drain of u's flows falls in the start-up under the backlog u stamped before, and the model holds v's buffer
    # and one of u's from its feeders at their targets or above (drain_fall.py; set by check_topology only then)
    fall: DrainFall | None = None
    # u's forecast over its stamped backlog toward v errs, through the control latency, by more than the model's peak
    # leaves of v's buffer, and the model holds one of u's buffers from its feeders at its target or above
    # (stamp_lag.py; set by check_topology only then)
    lag: StampLag | None = None
    # v's buffer from u overflows in the fluid model only at the rates idle exits carry, exits whose FIFO the laws
    # feeding it hold at less than one of its large frames (exit_idle.py)
    idle: ExitShortfall | None = None
    paced: tuple[str, float] | None = None  # (next hop, floor): v's law toward it paces a shared queue (pacing_law)
    # v's law toward its next hop paces u's queue there (pacing_law, whether or not the path behind drains faster):
    # its start-up brake, which the laws-together model does not play, sets that queue's level
    braked: bool = False
    margin: float = 1  # packets the model's peak must leave room for in v's buffer (packet_margin)
    frame_bytes: int = 0  # u's frame the loop counts v's buffer in (law_frames); 0: not given
    unit_bytes: int = 0  # v's buffer unit (plan.buffer_unit_bytes; 0: its buffers count packets)

    @property
    def room_pkts(self) -> float:
        """Packets the buffer holds above its settled target (rounded to 1e-9: (1 - 0.8) * 5 is 0.999...98
        in floats, and a 5-packet buffer at 80 % was told it had less than the one packet it has)."""
        return round((1 - self.loop.law.o_max) * self.loop.buffer_pkts, 9)

    @property
    def short_of_room(self) -> bool:
        """Fewer packets above the target than links feeding v's queue, where the laws together hold v's buffer at
        its target or above (docs/background/analysis.md, "Packets: room for each feeding link").

        Why held: the room above the target is the room only where the buffer sits at its target. Where the model
        keeps it below (what reaches u is held below v's drain elsewhere: a slower link or law upstream, another
        link's share of a FIFO), u's law passes what reaches it and the buffer sits at the model's peak; the packets
        above that are :attr:`overflows`' to count (its peak must leave a packet of room for each feeding link).
        ``make fuzz-topo`` seed 23 (400 draws), traced per buffer: 38 laws warned for their room with the model's
        peak below the target (0.05-73 %), none lost a packet there; of 60 held at the target, 28 did.
        Except where v's law toward its next hop paces the queue (:func:`pacing_law`): its start-up brake cuts that
        queue's drain to what the links feed, which the model does not play, so the model's peak bounds nothing there
        (S1's buffer from S3 in tests/topo/random_cases/one-packet-buffer-paced-exit.yaml peaks at 17 % in the model
        and lost 6 packets before a cut on lower bounds climbed back at the brake's pace). And where frames of several
        sizes enter v (its buffers in bytes of the smallest): v's queue rate is set in packets/s from a mean frame and
        u's law reads the buffer in its frames, so the fluid's level bounds no packet count there (fuzz seed 37, draw
        294: S4's buffer from S1, one of S1's 764 B frames, 48 % in the model, lost 38 packets)."""
        return self.room_pkts < self.inputs and (self.network is None or self.braked or self.unit_bytes > 0
                                                 or _held(self.network, self.loop))

    @property
    def lossless(self) -> bool:
        return (self.verdict.radius_settled < 1.0 and not self.short_of_room and self.floor is None
                and self.slow_exit is None and self.shared_fifo is None and self.fifo_share is None
                and self.fed_share is None
                and self.train is None and self.step is None
                and self.run is None and self.wire is None and self.fall is None and self.idle is None
                and self.lag is None
                and not self.overflows)

    @property
    def overflows(self) -> bool:
        """The laws together overflow v's buffer in the fluid model (topo.analysis.fluid_network.overflows): its
        fluid lost, or its peak left less than its :attr:`margin` of room."""
        return self.network is not None and overflows(self.network, self.margin)

    def warning(self) -> str | None:
        """One line saying why the analysis expects loss and what would avoid it; None if it does not."""
        if self.lossless:
            return None
        v, loop = self.verdict, self.loop
        u, w = self.key
        why, fixes = [], []
        if v.radius_settled >= 1.0:
            why.append(f"the settled loop is unstable (root modulus {v.radius_settled:.3f} >= 1)")
            fixes.append(_gain_fix(loop, v.delay_intervals) if v.needed_buffer_pkts is None else
                         f"a buffer of at least {v.needed_buffer_pkts} packets ({_bdp(loop, v.needed_buffer_pkts)}) "
                         f"would settle it with these gains")
        if self.short_of_room:
            need = math.ceil(round(self.inputs / (1 - loop.law.o_max), 9))
            why.append(self._room_why())
            fixes.append(f"a buffer of at least {self._packets(need)} packets would hold them")
        if (f := self.floor) is not None:
            when = f" from {f.from_s:g} s" if f.from_s > 0 else ""
            sends = (f"at its floor it sends {format_rate(f.push_bps)} (r_floor {format_rate(f.floor_bps)})"
                     if f.push_bps >= f.floor_bps * (1 - 1e-9) else
                     f"it cannot go below its floor (r_floor {format_rate(f.floor_bps)}), above the "
                     f"{format_rate(f.push_bps)} of its flows that reach {u}, so it passes them all")
            how = "".join(f"; {w} frees a packet of group {g} only when its slowest copy (to {dst}) leaves"
                          for g, dst in f.slowest)
            if f.mix is not None:
                held = ("" if f.mix_law_bps is None else
                        f"; its law still at the {format_rate(f.mix_law_bps)} what is behind {f.mix[0]} held it to before")
                how += (f"; right after a flow starts or stops, {w}'s queue rate toward {f.mix[0]}, set in packets/s "
                        f"from the mean frame it sent over the last 0.2 s, carries about {f.mix[1]:.0%} of its "
                        f"bits in those 0.2 s (its frames are of several sizes{held})")
            if f.head is not None:
                how += (f"; {w}'s buffer from {u} is one FIFO: its target and what the floor gathered above it are "
                        f"packets of the flows that ran before, which leave at {format_rate(f.head[0])} first (for "
                        f"{f.head[1]:.2g} s) and hold the new flows' packets behind them")
            if f.surge is not None:
                how += (f"; right after a flow starts or stops, {u}'s queue rate toward {w}, set in packets/s from the "
                        f"mean frame it sent over the last 0.2 s, sends about {f.surge:.0%} of its law's bits in those "
                        f"0.2 s (its frames grow)")
            why.append(f"{sends}, more than {w} forwards of its flows{when} ({format_rate(f.drain_bps)}{how}): the "
                       f"buffers from {w} on gain {format_rate(f.push_bps - f.drain_bps)} whatever {w} reports "
                       f"(full in {f.fill_s:.2g} s)")
            fixes.append(f"an r_floor of at most {format_rate(f.drain_bps / (f.surge or 1.0))} would not overflow it")
            why[-1], fixes[-1] = f.explained(w, why[-1], fixes[-1])  # a drop to exactly the floor (floor_check.py)
        if (x := self.slow_exit) is not None:
            where = f"the flows {w} forwards toward {x.exit}" if x.exit is not None else f"the flows {w} receives"
            when = f" from {x.from_s:g} s" if x.from_s > 0 else ""
            why.append(f"{w}'s buffer from {u} holds {where} ({', '.join(x.flows)}){when}: {u} can feed them "
                       f"{format_rate(x.feed_bps)} ({x.share:.0%} of what it sends), more than their path takes "
                       f"({format_rate(x.drain_bps)}), while {w}'s other exits pass what they get; one law for the "
                       f"port holds that buffer only at {format_rate(x.hold_bps)}, and there most of the drain "
                       f"it measures is its own sending, not the buffer's (head-of-line blocking)")
            fixes.append("a per-port law cannot slow one exit: per-destination classes (options.classes) give each "
                         "its own queue and law")
        if (q := self.shared_fifo) is not None:
            when = f" from {q.from_s:g} s" if q.from_s > 0 else ""
            why.append(f"{w}'s flows toward {q.v} leave it through {q.v}'s FIFO toward {q.toward}, which {q.other} "
                       f"keeps backlogged by itself ({format_rate(q.other_bps)} for the {format_rate(q.fifo_bps)} "
                       f"{q.v} forwards){when}: {w}'s drain there is its share of that FIFO, set by the packets it "
                       f"keeps in it, not a capacity, and {w}'s law, which follows its measured drain, may sit "
                       f"anywhere down to its floor ({format_rate(q.u_floor_bps)}), below {u}'s "
                       f"(r_floor {format_rate(q.floor_bps)}): {w}'s buffer from {u} then fills")
            fixes.append(f"an r_floor of at most {format_rate(q.u_floor_bps)} would follow it")
        if (s := self.fifo_share) is not None and (n := self.network) is not None:
            when = f" from {s.from_s:.3g} s" if s.from_s > 0 else ""
            why.append(f"{u}'s flows leave {w} through its FIFO toward {s.toward}, which {s.other} keeps backlogged by "
                       f"itself ({format_rate(s.other_bps)} for the {format_rate(s.fifo_bps)} {w} forwards){when}: {u}'s "
                       f"drain there is its share of that FIFO, not a capacity, and it falls as {s.other}'s backlog "
                       f"grows; with {w}'s buffer from {u} held at its target ({n.peak:.0%} at its peak in the fluid "
                       f"model), which cell of the FIFO swings to full is the packets' order's choice, not the loop's")
            fixes.append(_share_fix(u, s, f"its drain is what {s.other} leaves it of that FIFO"))
        if self.fed_share is not None and (n := self.network) is not None:
            v2, s = self.fed_share
            why.append(f"{u}'s drain at {w} is what {w}'s law toward {v2} sends, and that law's drain is its share of "
                       f"{v2}'s FIFO toward {s.toward}, which {s.other} keeps backlogged by itself: it swings as "
                       f"{s.other}'s backlog does, and with {w}'s buffer from {u} held at its target ({n.peak:.0%} at "
                       f"its peak in the fluid model), which swing fills it is the packets' order's choice, not the loop's")
            fixes.append(_share_fix(u, s, f"its drain follows what {s.other} leaves {w} of that FIFO"))
        t = self.train
        if t is not None and t.playout:
            why.append(f"{w}'s receive buffer counts packets ({t.capacity}) and holds each until it is played out: "
                       f"while one {t.large_bytes} B frame plays out at {format_rate(t.out_bps)}, {t.frames} of {u}'s "
                       f"{t.small_bytes} B frames arrive behind it at {format_rate(t.in_bps)}, {t.need} packets, though "
                       f"the playout is faster in bits: frames that wait behind a large one on a link follow it back "
                       f"to back, a train no rate in bits avoids")
            fixes.append(f"a receive_buffer of at least {t.need} packets would hold it")
        elif t is not None:
            why.append(f"{w}'s buffer from {u} counts packets ({t.capacity}), and {t.frames} of {u}'s {t.small_bytes} B "
                       f"frames arrive at {format_rate(t.in_bps)} while one {t.large_bytes} B frame leaves toward {t.exit} "
                       f"at {format_rate(t.out_bps)} (no law paces that exit): frames that wait behind a large one on a "
                       f"link follow it back to back, a train no rate in bits avoids")
            fixes.append(f"a buffer of at least {t.need} packets would hold it")
        if (m := self.step) is not None and m.ramp:
            why.append(f"{u}'s law, at its R_max above all it carries, passes a starting host's climb as it comes: from "
                       f"{m.at_s:g} s the climb is above the {format_rate(m.drain_bps)} {w} forwards toward {m.hop}, and "
                       f"within {u}'s loop's delay and {w}'s report interval ({m.delay_s * 1e3:.2g} ms, before any "
                       f"report can cut {u}) it reaches up to {format_rate(m.push_bps)}: {w}'s buffer from {u} gains "
                       f"{m.gained_pkts:.3g} packets, more than the {m.room_pkts:.3g} it holds above its target")
            fixes.append(f"a buffer of at least {m.need_pkts} packets would hold them")
        elif (m := self.step) is not None:
            sender = ("its pacer sends its law's bits in them at once" if not m.backlog_s else
                      "its backlog, queued behind its link with its departures stamped, leaves in them at the link's bits")
            if m.through:
                sender = ("its law, at its R_max above all it carries, passes them as they come, a starting host's "
                          "law sending its floor in its smallest frame")
            within = ("within the loop's delay" if not m.backlog_s else
                      f"within the loop's delay and the {m.backlog_s * 1e3:.2g} ms the backlog its upstream laws hold takes")
            cut = f"any report can cut {u}" if not m.backlog_s else f"any cut of {u} can act"

            why.append(f"when the flows change at {m.at_s:g} s {u}'s frames shrink to {m.frame_bytes:.0f} B on average: "
                       f"{sender} (up to the {format_rate(m.push_bps)} its path carries there), while {w}'s queue toward "
                       f"{m.hop}, set in packets/s from the mean frame it sent over the last 0.2 s, forwards "
                       f"{format_rate(m.drain_bps)} of them ({m.share:.0%} of its rate): {within} "
                       f"({m.delay_s * 1e3:.2g} ms), before {cut}, {w}'s buffer from {u} gains "
                       f"{m.gained_pkts:.3g} packets, more than the {m.room_pkts:.3g} it holds above its target")
            fixes.append(f"a buffer of at least {m.need_pkts} packets would hold them")
        if (r := self.run) is not None:
            why.append(f"{u}'s backlog toward {w} can send a run of {r.run_frames} of its {r.small_bytes} B frames (what its "
                       f"buffers from their links hold) at {format_rate(r.in_bps)}, while {w}'s queue toward {r.exit}, set in "
                       f"packets/s from the mean frame it sent over the last 0.2 s (about {r.mean_bytes:.0f} B), sends them on "
                       f"at {r.small_bytes / r.mean_bytes:.0%} of its {format_rate(r.out_bps)} in bits: {w}'s buffer from "
                       f"{u} gains {r.gained_pkts:.3g} packets, more than the {r.room_pkts:.3g} it holds above its target")
            fixes.append(f"a buffer of at least {r.need_pkts} packets would hold them")
        if (b := self.wire) is not None:
            when = f" from {b.from_s:g} s" if b.from_s > 0 else ""
            why.append(f"{u}'s flows toward {w} come in frames of several sizes and{when} bring it "
                       f"{format_rate(b.feed_bps)} for its {format_rate(b.link_bps)} link, so the laws upstream hold a "
                       f"backlog in {u} ({b.backlog_s * 1e3:.2g} ms of the link) that waits behind the wire with its "
                       f"departures stamped in the past (its queue rate at R_max, from the mean frame it sent over the "
                       f"last 0.2 s, can exceed the link's packets/s): a cut of {u}'s law spaces only the packets queued "
                       f"after it, which leave at the link's rate until their stamps catch up, and at a cut to the "
                       f"{format_rate(b.drain_bps)} {w} forwards of them {w}'s buffer from {u} gains "
                       f"{b.gained_pkts:.3g} packets beyond what the law expects, more than the {b.room_pkts:.3g} it "
                       f"holds above its target")
            fixes.append(f"a buffer of at least {b.need_pkts} packets would hold them, or an r_max for {u} -> {w} a few "
                         f"percent below its link keeps that backlog in its queue's stamps")
        if (d := self.fall) is not None:
            why.append(_fall_why(u, w, d))
            fixes.append(f"a buffer of at least {d.need_pkts} packets would hold them")
        if (g := self.lag) is not None:
            why.append(_lag_why(u, w, g, self.network))
            fixes.append(f"a buffer of at least {g.need_pkts} packets would hold them")
        if (i := self.idle) is not None:
            why.append(_idle_why(u, w, i))
            fixes.append(_idle_fix(i))
        n = self.network
        if n is not None and self.overflows and n.lost_pkts < LOSS_PKTS:
            peak = (f"fills ({n.lost_pkts:.2g} packets of fluid lost from {n.first_loss_s:.2f} s)" if n.first_loss_s
                    is not None else "reaches full" if room_at_peak(n) <= 0 else
                    f"comes within {room_at_peak(n):.2g} packets of full (its peak {n.peak:.1%})")
            room = ("" if not self.margin else
                    f", leaving less than a packet for each link feeding its queue ({self.margin:g})"
                    if self.margin == int(self.margin) else
                    f", leaving less than the {self.margin:.2g} packets of room whole packets can need beyond the fluid "
                    f"there")
            why.append(f"with every law running, {w}'s buffer of {n.capacity} packets {peak} in the fluid model"
                       f"{_twin(n)}{room}: in packets it overflows")
        elif n is not None and self.overflows:
            past = [t for t in self.events_s if t <= (n.first_loss_s or 0.0)]
            # the flow that joined the running network last before the loss, if one did (the head-of-line fabric's
            # last incast joins a FIFO behind the others' backlog: tests/topo/analysis/test_fluid_fifo_order.py)
            first = min((t for t, _ in self.starts_s), default=0.0)
            joined = max((s for s in self.starts_s if first < s[0] <= (n.first_loss_s or 0.0)), default=None)
            what = "after the capacity drop" if self.drop_at_s is not None and (n.first_loss_s or 0) >= self.drop_at_s \
                else f"after the link-rate change at {max(past):g} s" if past \
                else "as the hops start up together" + ("" if joined is None else
                                                        f" after flow {joined[1]} joins at {joined[0]:.3g} s")
            why.append(f"with every law running, {w}'s buffer overflows {what} (about {n.lost_pkts:.0f} packets from "
                       f"{n.first_loss_s:.2f} s in the fluid model{_twin(n)})")
        if n is not None and self.overflows and self.floor is None:  # a larger buffer only delays what the floor overflows
            fixes.append("buffers up to 64 times these still overflow in the model" if self.scale is None else
                         f"buffers {self.scale:.3g} times these (here {math.ceil(round(n.capacity * self.scale, 9))} "
                         f"packets, {_bdp(loop, math.ceil(loop.buffer_pkts * self.scale))}) would not overflow")
        return (f"law {u}->{w}: the loop analysis expects loss or a loop that never settles: loop delay "
                f"{v.delay_intervals} report intervals of {loop.interval_s * 1e3:g} ms; {' and '.join(why)}; "
                f"{'; '.join(fixes)}")

    def _room_why(self) -> str:
        """Why the packet-room rule fires, in the frames the law counts the buffer in."""
        (u, w), (held, pinned) = self.key, self._buffer_text()
        why = (f"{held}, less than one for each link feeding its queue ({self.inputs}), each of which can hand it "
               f"a packet at once{pinned}")
        if (p := self.paced) is not None:
            nxt, floor = p
            why += (f"; {w} sends that queue toward {nxt} at the rate of its law toward {nxt}, not at what the path "
                    f"behind drains: the start-up brake cuts that law to the drain it measures, what the links then "
                    f"feed, and it climbs back at its gain (from as low as its floor, {format_rate(floor)}), so {u}'s "
                    f"share falls when another link's flow starts")
        return why

    def _buffer_text(self) -> tuple[str, str]:
        """v's buffer from u as the law counts it (in u's frames where v's buffers are in a smaller unit) and the
        packets it holds above its target; and, when one packet is above the target, that every report says so
        (else "")."""
        loop, (u, w) = self.loop, self.key
        o_max, size = loop.law.o_max, loop.buffer_pkts
        counted = (f"{size} of {u}'s {self.frame_bytes} B frames" if 0 < self.unit_bytes < self.frame_bytes
                   else f"{size} packet{'s' if size != 1 else ''}")
        held = f"{w}'s buffer from {u}, {counted}, holds {self.room_pkts:.2g} packets above its target"
        if round(size * o_max, 9) >= 1:
            return held, ""
        # no packet at or below the target: a report counts the packet that sent it
        return held, (f"; one packet is {1 / size:.0%} of it: every report, which counts the packet that sent it, "
                      f"reads it above its target ({o_max:.0%}), and the law only follows its measured drain")

    def _packets(self, frames: int) -> int:
        """The fewest packets a topology file's ``buffer:`` may give v's buffer for u's law to count ``frames`` of
        its frames there."""
        return packets_for_frames(frames, self.unit_bytes, self.frame_bytes)


def _fall_why(u: str, w: str, d: DrainFall) -> str:
    """Why a drain that falls under u's stamped backlog overfills w's buffer (drain_fall.py)."""
    when = f" from {d.from_s:.3g} s" if d.from_s > 0 else ""
    return (f"{u}'s flows toward {w} can bring it {format_rate(d.supply_bps)}{when}, more than the "
            f"{format_rate(d.stamp_bps)} its law starts at, so the laws of {', '.join(d.feeders)} hold a backlog in {u} (about "
            f"{d.backlog_pkts:.3g} packets at their targets) that its queue stamps at that rate; {w} passes them at "
            f"first at up to {format_rate(d.start_bps)}, then its law cuts to the {format_rate(d.drain_bps)} the path "
            f"behind forwards, and what {u} stamped before cannot be taken back: {w}'s buffer from {u} gains up to "
            f"{d.gained_pkts:.3g} packets, more than the {d.room_pkts:.3g} it holds above its target")


def _lag_why(u: str, w: str, g: StampLag, n: NetworkPeak | None) -> str:
    """Why the stamped-horizon rule fires (topo/analysis/stamp_lag.py)."""
    peak = "" if n is None else f", more than the {room_at_peak(n):.2g} its peak in the fluid model leaves"
    return (f"{u}'s laws upstream ({', '.join(g.feeders)}) hold {g.backlog_pkts:.0f} packets in {u} stamped ahead of "
            f"the {format_rate(g.drain_bps)} {w} forwards of them, so {u}'s law acts through a horizon it rebuilds from "
            f"its commands; each takes effect {g.latency_s * 1e3:.2g} ms (the control latency) after the report it "
            f"answers, {g.latched:.0%} of a report gap of {g.gap_s * 1e3:.2g} ms, and the packets queued meanwhile keep "
            f"the rate before a one-packet cut of {format_rate(g.step_bps)} (k_p over the buffer): the forecast walks "
            f"to about {g.gained_pkts:.3g} packets (twice its typical excursion){peak}")


def _idle_why(u: str, w: str, i: ExitShortfall) -> str:
    """Why the idle-exit rule fires (topo/analysis/exit_idle.py)."""
    exits = "; ".join(f"{e.v}'s exit toward {e.w}, which no law paces, carries about {1 - e.idle:.1%} of its rate: the "
                      f"laws feeding it hold its FIFO at about {e.target_bytes:.0f} B, less than one of its "
                      f"{e.large_bytes} B frames, and it runs dry for the rest of each large frame's bits (its flows' "
                      f"frames are of several sizes; a fluid has none)" for e in i.exits)
    p = i.peak
    peak = (f"fills ({p.lost_pkts:.2g} packets of fluid lost from {p.first_loss_s:.2f} s)" if p.first_loss_s is not None
            else f"peaks at {p.peak:.1%}")
    return f"{exits}; at that rate {w}'s buffer from {u} {peak} in the fluid model, the laws behind their loops"


def _idle_fix(i: ExitShortfall) -> str:
    """The idle-exit rule's remedy: the FIFO held at a large frame or more."""
    return "; ".join(f"buffers at {e.v} from the links feeding its exit toward {e.w} whose targets hold a "
                     f"{e.large_bytes} B frame would keep it busy" for e in i.exits)


def _twin(n: NetworkPeak) -> str:
    """Where the model's peak is a twin buffer's (fluid_network.py, ``_Network._twins``): which, and why it counts."""
    if n.twin is None:
        return ""
    v, u = n.twin
    return (f", as its twin, {v}'s buffer from {u}, does there (their flows' paths are alike hop for hop; which twin "
            f"swings deepest is decided by the packets' order in the FIFO they share downstream)")


def _gain_fix(loop: Loop, d: int) -> str:
    law = loop.law
    scale = max_stable_scale(loop.a, law.w_min, law.k_p, d)
    if scale <= 0:
        return "no buffer up to 2^19 packets avoids it, and no smaller gains were found stable: shorten the delay"
    return (f"no buffer up to 2^19 packets avoids it (at this delay the gains decide); k_p <= "
            f"{law.k_p * scale / 1e6:.3g} Mb/s with w_min <= {law.w_min * scale * scale / 1e3:.3g} kb/s would be "
            f"stable")


def _bdp(loop: Loop, pkts: int) -> str:
    bdp = loop.drain_bps * 2 * loop.delay_s / loop.packet_bits
    return f"{pkts / bdp:.1f} x the bandwidth-delay product" if bdp > 0 else "no delay"


def _hops(path: tuple[str, ...]) -> list[DirectedLink]:
    return list(zip(path, path[1:]))


def loop_delay_s(topo: Topology, u: str, v: str, bits: int) -> float:
    """Command to effect, the report's sampling aside: the link's propagation both ways, one
    packet's serialization, and when u is a switch the control latency. On BMv2's queues a rate
    also waits behind u's own queue, but the agents forecast past it (controlplane/forecast.py,
    docs/howto/bmv2.md), so to first order both queue models have this delay."""
    link = topo.link_between(u, v)
    delay_ns = 2 * link.delay_ns + bits * 1e9 / link.rate_bps
    if topo.nodes[u].is_switch:
        delay_ns += topo.options.control_latency_ns
    return delay_ns / 1e9


def alinea_links(topo: Topology) -> set[DirectedLink]:
    """The directed links an ALINEA flow crosses (the laws that regulate traffic)."""
    paths = routed_paths(topo)
    return {(a, b) for f in topo.flows if f.control == "alinea" for a, b in _hops(paths[f.name])}


def downstream_drain(topo: Topology, u: str, v: str) -> float:
    """What v forwards of the flows that cross u -> v: per flow the slowest link behind v (and
    the receiver's playout), summed, but flows that leave v by one link (or that v receives) share
    it: together no more than its rate (or v's playout). Two flows on one 1 Mb/s line counted 2 Mb/s,
    and a buffer fed at 1 Mb/s looked as if it drained faster than its feed (it never would build,
    so needed no room for a packet: tests/topo/random_cases/equal-rates-two-packets.yaml). A
    multicast group counts once, at its slowest branch behind v: v frees a packet of it when its
    last copy leaves (docs/howto/multicast.md)."""
    shares: dict[str | None, float] = {}  # v's next hop (None: v receives) -> its unicast flows' drains
    groups: dict[str, float] = {}
    paths = routed_paths(topo)
    for f in topo.flows:
        hops = _hops(paths[f.name])
        if (u, v) not in hops:
            continue
        rest = hops[hops.index((u, v)) + 1:]
        rates = [topo.link_between(a, b).rate_bps for a, b in rest]
        playout = topo.nodes[f.dst].playout_bps
        if playout:
            rates.append(playout)
        drain = min(rates) if rates else topo.link_between(u, v).rate_bps
        if f.group is None:
            nxt = rest[0][1] if rest else None
            shares[nxt] = shares.get(nxt, 0.0) + drain
        else:
            groups[f.group] = min(groups.get(f.group, drain), drain)
    total = sum(min(share, topo.link_between(v, nxt).rate_bps if nxt is not None
                    else topo.nodes[v].playout_bps or topo.link_between(u, v).rate_bps)
                for nxt, share in shares.items())
    return total + sum(groups.values())


def buffer_of(topo: Topology, u: str, v: str) -> tuple[int, int]:
    """(capacity in packets, report interval in µs) of v's buffer fed by u."""
    port = topo.ports.get((v, u)) or topo.host_buffers[(v, u)]
    return port.capacity, port.interval_us


def law_loops(topo: Topology) -> list[tuple[DirectedLink, Loop, float | None]]:
    """(law, its loop, when its drain drops) for every law whose link carries an ALINEA flow."""
    out = []
    used = alinea_links(topo)
    for (u, v), law in sorted(topo.law.items()):
        if (u, v) not in used:
            continue
        capacity, interval_us = buffer_of(topo, u, v)
        capacity, bits = law_frames(topo, u, v, capacity)  # the buffer in u's frames (docs/background/alinea.md, "Bits, not packets")
        drain = min(downstream_drain(topo, u, v), law.r_max)
        delay_ns = loop_delay_s(topo, u, v, bits) * 1e9
        loop = Loop(law, capacity, bits, interval_us / 1e6, delay_ns / 1e9, drain)
        drop_at = None
        for ev in topo.events:
            if ev.kind == "link_rate" and ev.link is not None and ev.rate_bps is not None:
                after = _drain_after(topo, u, v, ev.link, ev.rate_bps)
                if after < drain:
                    loop = Loop(law, capacity, bits, interval_us / 1e6, delay_ns / 1e9, drain, after)
                    drop_at = ev.at_ns / 1e9
                    break
        out.append(((u, v), loop, drop_at))
    return out


def _drain_after(topo: Topology, u: str, v: str, link: tuple[str, str], rate_bps: float) -> float:
    saved = topo.link_between(*link)
    index = topo.links.index(saved)
    topo.links[index] = type(saved)(saved.a, saved.b, rate_bps, saved.delay_ns, saved.buffer, line=saved.line)
    try:
        return min(downstream_drain(topo, u, v), topo.law[(u, v)].r_max)
    finally:
        topo.links[index] = saved


def feeding_links(topo: Topology, u: str, v: str) -> int:
    """The links whose ALINEA packets share v's queue with u's: while v sends one of another link's
    packets, u's wait, so each such link is a packet the buffer must have room for. 0 when that
    queue drains faster than those links can feed it (it never builds). A drain only as fast as the
    feed is not faster: a pause of it (one of v's packets leaving late) queues a packet the feed never
    lets it make up. Nor is a queue that several links feed and v's law toward its next hop paces
    (:func:`pacing_law`)."""
    feeders, _, feed_bps = _queue_feed(topo, u, v)
    return len(feeders) if path_drain(topo, u, v) <= feed_bps or pacing_law(topo, u, v) is not None else 0


def packet_margin(topo: Topology, u: str, v: str, inputs: int) -> float:
    """The packets the laws-together model's peak must leave room for in v's buffer of u's law, whose queue ``inputs``
    links feed (:func:`feeding_links`): one for each; none where that queue drains faster than they feed it (0), one
    frame size enters v (its buffers count packets) and no law of v paces it: each packet leaves before the next
    arrives, so the links hand it none the fluid does not hold (topo.analysis.fluid_network.overflows). A law of v
    toward the queue's next hop can cut its drain below the feed, and the queue builds as any other: one
    (tests/topo/random_cases/sparse-report-start-fabric.yaml: S2's buffer from S3, paced by S2's law toward H4,
    97 % in the model, lost 7 packets when found). Where frames of several sizes enter
    v, its queue rate is set in packets/s from a mean frame, and a run of small frames drains slower in bits than the
    links feed it: one (fuzz seed 37, draw 394: S3's buffer from S1, one of S1's 544 B frames, fed at 2 Mb/s and
    drained at 5 Mb/s, 18 % in the model, lost 55 packets).

    Where u's link alone feeds the buffer and one frame size enters v, the margin is derived from the queue instead,
    whether it builds or not, paced or not (:func:`_single_feed_margin`): at a switch one fewer than the queues u's
    flows leave v by (none where they are one multicast group's, copied to each), at a receiver its playout over
    the link's rate, at most one."""
    _, onward, _ = _queue_feed(topo, u, v)
    paced = any((v, nxt) in topo.law for nxt in onward if nxt is not None)
    margin = inputs or (1 if paced or buffer_unit_bytes(topo, v) > 0 else 0)
    single = _single_feed_margin(topo, u, v) if inputs <= 1 else None
    return margin if single is None else min(margin, single)


def _single_feed_margin(topo: Topology, u: str, v: str) -> float | None:
    """The packets of room v's buffer from u needs beyond the fluid's peak where u's link alone feeds it and one frame
    size enters v: at a switch whose queues of u's flows no other link feeds (:func:`feeding_links` 1), the number of
    those queues less one (none for one multicast group's packets, copied to each); at a receiver its playout over the slowest rate u's link runs at, at most one packet;
    None where that does not hold.

    Why (docs/background/analysis.md, "The hops together"): alinea.p4 frees a packet's slot when the queue releases
    it to the wire (``release``, at egress), so the buffer counts the packets waiting, not the one on the wire. A
    queue serves its packets one at a time at its rate (BMv2 stamps ``max(now, last + 1/rate)``; a shaper spaces
    them at service), a FIFO whose waiting count is the work it holds less the packet being served, rounded up:
    C packets wait (the next is dropped) only when it holds more than C packets' work. Whole packets arrive no later
    than a fluid of the same packets would, and that fluid has brought all of them each time the next packet arrives,
    so at each arrival (when a packet is admitted or dropped) the packets' queue holds no more work than that
    fluid's (the queue's backlog is the largest arrivals-less-service over the past, and arrivals that came earlier
    only leave more time to serve them). A drop then needs the fluid itself above C: a peak at full, no packet of
    margin. Where u's flows leave by k queues of v, the count is their sum, and each queue other than the one a
    packet arrives at may hold the part of its last packet that its fluid has not yet brought: k - 1.

    A receiver (engine/src/hosts/host.rs, PlayoutBuffer) keeps the frame playing out until its last bit has played:
    C frames are held only from more than (C - 1) frames' work L. The packet arriving at t came at r over the L/r
    before t, which the fluid of the same packets holds at t, and the window the packets' backlog is taken over may
    begin inside an earlier frame's bits, which that fluid had partly brought; moving the window's start back to
    that frame's first bit costs at most what the playout μ takes meanwhile, μ·L/r. So just before it joins, the
    packets hold no more than the fluid's work at t less L·(1 - min(1, μ/r)), and a drop needs that fluid above
    C·L - L·min(1, μ/r): a peak within min(1, μ/r) of a packet of full (tests/topo/analysis/test_packet_margin.py
    checks it on packets drawn by hypothesis). The same bound at a switch gives the sum over its queues of
    min(1, μ_i/r), less one, below k - 1 where an exit drains slower than u's link, but there the model's fluid is not
    the packets' own closely enough: fuzz seed 83, draw 158, S2's buffer from S1 (two exits, 0.2 of a packet by that
    bound) came within 0.43 packets of full in the model and lost 3 at seed 1; the k - 1 packets stay.
    Except where every flow over u -> v is a branch of one multicast group (:func:`_one_group`): alinea.p4 copies each
    packet to every one of the k queues and holds its slot until its last copy leaves (``mcast_left``); the queues take
    the same packets in the same order, so the packets with a copy still waiting are those the fullest queue has
    waiting, each queue a FIFO one link alone feeds, as above; the fluid model frees what the slowest copy has sent
    (engine/src/analysis/fluid.rs, ``pending``), so its level is the fullest queue's fluid: a peak at full, no margin
    (tests/topo/analysis/test_packet_margin.py; counted per copy, the sum, it would not hold).
    Not where frames of several sizes enter v (its queue rate in packets/s from a mean frame bounds no packet count
    by the fluid, and a receiver plays each frame at its own bits), nor where another link feeds the queue (u's
    packets wait behind its packets, which the fluid interleaves finer; any flow's, ALINEA's or not)."""
    node = topo.nodes[v]
    paths = routed_paths(topo)
    if not node.is_switch:
        sizes = {flow_frame_bytes(f) for f in topo.flows if v in paths[f.name][1:]}
        return min(1.0, node.playout_bps / min(_rates(topo, u, v))) if node.playout_bps and len(sizes) == 1 else None
    if buffer_unit_bytes(topo, v) > 0:
        return None
    pairs = {(path[i - 1], path[i + 1] if i + 1 < len(path) else None)  # every flow's, ALINEA's or not
             for path in (paths[f.name] for f in topo.flows) for i in range(1, len(path)) if path[i] == v}
    onward = {nxt for p, nxt in pairs if p == u}
    if None in onward or any(p != u for p, nxt in pairs if nxt in onward):
        return None
    return 0 if _one_group(topo, u, v) else len(onward) - 1


def _one_group(topo: Topology, u: str, v: str) -> bool:
    """Every flow over u -> v (ALINEA's or not) is a branch of one multicast group: each of u's packets at v is
    copied to every queue they leave by (:func:`_single_feed_margin`'s multicast case)."""
    paths = routed_paths(topo)
    groups = {f.group for f in topo.flows if (u, v) in zip(paths[f.name], paths[f.name][1:])}
    return len(groups) == 1 and None not in groups


def _rates(topo: Topology, a: str, b: str) -> list[float]:
    """The rates the link between a and b runs at over the run: its own and every link-rate event's."""
    link = topo.link_between(a, b)
    return [link.rate_bps] + [ev.rate_bps for ev in topo.events if ev.kind == "link_rate" and ev.rate_bps is not None
                              and ev.link is not None and {ev.link[0], ev.link[1]} == {a, b}]


def pacing_law(topo: Topology, u: str, v: str) -> tuple[str, float] | None:
    """(the next hop, the floor of v's law toward it) when that law paces a queue at v that u's flows share
    with another link's, from a floor below what those links can feed it; None otherwise.

    Such a queue drains at the law's rate, not at what the path behind it drains (:func:`path_drain`): the
    start-up brake cuts the law to the drain it measures, which behind a starved buffer is what the links
    then feed, and the law climbs back at its gain, so for a while the queue drains only as fast as it is fed
    (:func:`feeding_links`), and u's share of it falls when another link's flow starts. S1's buffer from S3,
    2 packets (1 ms at 20 Mb/s), drained toward H8, whose receive buffer plays out at 50 Mb/s: S1's law
    toward H8 held R_max until the brake cut it to 26 Mb/s at 0.6 s, as f4 started from S2 into that queue;
    S3's share fell from 18.5 to 12 Mb/s and its buffer overflowed (6 lost at 0.687-0.702 s, seed 1),
    unwarned while the playout counted as a drain faster than the feed
    (tests/topo/random_cases/one-packet-buffer-paced-exit.yaml; without f4, or without H8's receive buffer
    and so its law, nothing was lost). Alone in such a queue, u's packets are all the brake measures, and u's
    law follows the law that paces them: a 1-packet buffer at S1 from S0 toward a receive buffer lost nothing.
    A law whose floor is at least the feed never lets the queue build, nor one whose own buffer at the next hop
    drains faster than v can send it (a switch's law starts at its R_max, and the brake cuts it only once that
    buffer gains a packet): without that, ``make fuzz-topo`` seed 13 (300 draws, --alinea-only) warned five more
    topologies, none of which lost a packet, S1's queue toward S2 there drained at 50 Mb/s behind a 20 Mb/s
    link."""
    feeders, onward, feed_bps = _queue_feed(topo, u, v)
    if len(feeders) < 2:
        return None
    for nxt in sorted(n for n in onward if n is not None):
        law = topo.law.get((v, nxt))
        # the brake cuts the law only once its own buffer gains a packet: v must be able to send faster than
        # nxt drains, or the law stays at what it starts from, its R_max, and the queue drains at that
        if (law is not None and law.r_floor < feed_bps
                and path_drain(topo, v, nxt) <= min(law.r_max, topo.link_between(v, nxt).rate_bps)):
            return nxt, law.r_floor
    return None


def _paced_only(topo: Topology, u: str, v: str) -> tuple[str, float] | None:
    """:func:`pacing_law` where it alone makes :func:`feeding_links` count the links (the path behind v drains
    faster than they feed it), for the warning's words."""
    _, _, feed_bps = _queue_feed(topo, u, v)
    return pacing_law(topo, u, v) if path_drain(topo, u, v) > feed_bps else None


def _queue_feed(topo: Topology, u: str, v: str) -> tuple[set[str], set[str | None], float]:
    """(the links feeding v's queues of u's ALINEA flows, those queues' next hops (None: v receives), the
    feeding links' rates summed)."""
    pairs = set()  # (the link's far end, where the packets go on from v; None: v receives them)
    paths = routed_paths(topo)
    for f in topo.flows:
        if f.control != "alinea":
            continue
        path = paths[f.name]
        for i in range(1, len(path)):
            if path[i] == v:
                pairs.add((path[i - 1], path[i + 1] if i + 1 < len(path) else None))
    onward = {nxt for p, nxt in pairs if p == u}
    feeders = {p for p, nxt in pairs if nxt in onward} or {u}
    return feeders, onward, sum(topo.link_between(p, v).rate_bps for p in feeders)


def path_drain(topo: Topology, u: str, v: str) -> float:
    """What v can forward of the flows that cross u -> v, every link behind v shared by the flows that
    cross it (at most its rate for all of them), every receiver's playout by the flows it receives.

    :func:`downstream_drain` shares only v's own next link: three flows that cross a 10 Mb/s link behind v
    and then one 5 Mb/s link into their receiver counted 5 Mb/s each, and a 1-packet buffer fed at 10 Mb/s
    seemed to drain at 25 Mb/s, faster than its feed, so to need no room for a packet; it overflowed
    (tests/topo/random_cases/open-head-of-line-slow-branch.yaml: 63 lost at S2, unwarned). Equal to
    :func:`downstream_drain` where the flows behind v share no link beyond v's next one (every shipped
    file). Multicast groups as there (each at its slowest branch, once). Paths that part behind v and meet
    again (ECMP) count a link behind the meeting point once per route: a bound from above, toward
    silence, as :mod:`topo.analysis.floor_check`'s."""
    paths = routed_paths(topo)
    rests: list[tuple[str, tuple[DirectedLink, ...]]] = []  # (the flow's receiver, its hops after v)
    groups: dict[str, float] = {}
    for f in topo.flows:
        hops = _hops(paths[f.name])
        if (u, v) not in hops:
            continue
        rest = tuple(hops[hops.index((u, v)) + 1:])
        if f.group is None:
            rests.append((f.dst, rest))
            continue
        rates = [topo.link_between(a, b).rate_bps for a, b in rest]
        if topo.nodes[f.dst].playout_bps:
            rates.append(topo.nodes[f.dst].playout_bps)
        drain = min(rates) if rates else topo.link_between(u, v).rate_bps
        groups[f.group] = min(groups.get(f.group, drain), drain)
    link_uv = topo.link_between(u, v).rate_bps
    ending = sum(1 for _, rest in rests if not rest)
    here = min(ending * link_uv, topo.nodes[v].playout_bps or link_uv) if ending else 0.0
    onward: dict[DirectedLink, list[tuple[str, tuple[DirectedLink, ...]]]] = {}
    for dst, rest in rests:
        if rest:
            onward.setdefault(rest[0], []).append((dst, rest[1:]))
    return here + sum(_beyond(topo, hop, group) for hop, group in onward.items()) + sum(groups.values())


def _beyond(topo: Topology, hop: DirectedLink, rests: list[tuple[str, tuple[DirectedLink, ...]]]) -> float:
    """What crosses ``hop`` of the flows whose hops after it are ``rests``: its rate at most, and what the
    links and receivers behind it take of them."""
    a, b = hop
    out = 0.0
    if any(not rest for _, rest in rests):
        out += topo.nodes[b].playout_bps or math.inf
    onward: dict[DirectedLink, list[tuple[str, tuple[DirectedLink, ...]]]] = {}
    for dst, rest in rests:
        if rest:
            onward.setdefault(rest[0], []).append((dst, rest[1:]))
    out += sum(_beyond(topo, nxt, group) for nxt, group in onward.items())
    return min(out, topo.link_between(a, b).rate_bps)


def check_topology(topo: Topology, duration_s: float = 60.0, seed: int | None = None,
                   backend: str = "sim") -> list[LawCheck]:
    """Every law's checks; the laws-together model runs once for the topology. ``seed``: a run's on ``backend``
    (``"sim"`` or ``"netns"``), whose flows start where its hosts draw them
    (:func:`topo.net.starts.with_drawn_starts`); None: at the file's starts (``hbh show``, ``make map``)."""
    if seed is not None:
        topo = with_drawn_starts(topo, seed, backend)
    loops = law_loops(topo)
    peaks = {p.buffer: p for p in network_peaks(topo, duration_s)} if loops else {}
    events = tuple(sorted(ev.at_ns / 1e9 for ev in topo.events if ev.kind == "link_rate"))
    starts = tuple(sorted((f.start_ns / 1e9, f.name) for f in topo.flows if f.control == "alinea"))
    floors = floor_overflows(topo, duration_s) if loops else {}
    exits = slow_exits(topo, duration_s, _beyond) if loops else {}
    fifos = shared_fifos(topo, duration_s) if loops else {}
    law_loops_of = {key: loop for key, loop, _ in loops}
    shares = {key: s for key, s in (fifo_shares(topo, duration_s) if loops else {}).items()
              if key in law_loops_of and _held(peaks.get(key[::-1]), law_loops_of[key])}
    feeders = {key: f for key, f in share_feeders(topo, shares).items()
               if key in law_loops_of and _held(peaks.get(key[::-1]), law_loops_of[key])}
    laws = {key for key, _, _ in loops}
    trains = {**frame_trains(topo, laws), **receiver_trains(topo, laws)} if loops else {}
    steps = mix_steps(topo, duration_s, {key: loop.delay_s for key, loop, _ in loops}) if loops else {}
    runs = frame_runs(topo) if loops else {}
    wires = {key: b for key, b in (wire_backlogs(topo, duration_s) if loops else {}).items()
             if key in law_loops_of and _held(peaks.get(key[::-1]), law_loops_of[key])}
    falls = {key: b for key, b in (drain_falls(topo, duration_s) if loops else {}).items()
             if key in law_loops_of and _held(peaks.get(key[::-1]), law_loops_of[key])
             and any(_held(peaks.get((key[0], x)), law_loops_of[(x, key[0])]) for x in b.feeders
                     if (x, key[0]) in law_loops_of)}
    lags = {key: g for key, g in (stamp_lags(topo, duration_s) if loops else {}).items()
            if key in law_loops_of and (n := peaks.get(key[::-1])) is not None and g.gained_pkts > room_at_peak(n)
            and any(_held(peaks.get((key[0], x)), law_loops_of[(x, key[0])]) for x in g.feeders
                    if (x, key[0]) in law_loops_of)}
    inputs = {key: feeding_links(topo, *key) for key in laws}
    margins = {key: packet_margin(topo, *key, n) for key, n in inputs.items()}
    idles = exit_shortfalls(topo, duration_s, peaks, margins) if loops else {}
    # one assessment per distinct loop: a fabric's laws are a few loops many times over (the 12 x 4
    # head-of-line fabric's 16 laws are 4), and each runs a fluid model over the whole run
    verdicts: dict[tuple[Loop, float | None], Verdict] = {}
    for _, loop, drop_at in loops:
        if (loop, drop_at) not in verdicts:
            verdicts[(loop, drop_at)] = assess(loop, duration_s, drop_at)
    return [LawCheck(key, loop, verdicts[(loop, drop_at)], drop_at, peaks.get(key[::-1]),
                     inputs[key], events_s=events, starts_s=starts, floor=floors.get(key), slow_exit=exits.get(key),
                     shared_fifo=fifos.get(key), fifo_share=shares.get(key), fed_share=feeders.get(key),
                     train=trains.get(key), step=steps.get(key), run=runs.get(key), wire=wires.get(key), fall=falls.get(key), lag=lags.get(key),
                     idle=idles.get(key), paced=_paced_only(topo, *key),
                     braked=pacing_law(topo, *key) is not None, margin=margins[key], frame_bytes=loop.packet_bits // 8,
                     unit_bytes=port_unit_bytes(topo, *key))
            for key, loop, drop_at in loops]


def _share_fix(u: str, share: FifoShare, why: str) -> str:
    """The fix a FIFO share's warning names. No setting of u's law holds it (``why``); per-flow caps at the hosts
    (``fairness: per-flow``) bound what each link brings to its flows' share, and where that keeps any link from
    backlogging the FIFO alone fifo_shares finds no share (the head-of-line fabrics with them lost nothing and were
    not warned, 48 runs: test_fluid_fifo_order.py); with them already on, the file's caps are what remains."""
    if share.per_flow:
        return f"no setting of {u}'s law holds it: {why}, even with the file's per-flow caps"
    return (f"no setting of {u}'s law holds it ({why}); options: {{fairness: per-flow}} caps each host's flows at their "
            f"share, which keeps a link from backlogging that FIFO alone where their caps sum below its rate")


def _held(peak: NetworkPeak | None, loop: Loop) -> bool:
    """The model holds the law's buffer at its target or above (head_of_line.py, ``fifo_shares``): below it the law
    passes what reaches it, and its drain's swings are the FIFO's to absorb (the random cases whose laws take a FIFO
    share peak at 4-59 % of their buffers and lose nothing there)."""
    return peak is not None and peak.peak >= loop.law.o_max


def warnings(topo: Topology, duration_s: float = 60.0, seed: int | None = None, backend: str = "sim") -> list[str]:
    """One line per law the analysis expects to lose packets (hop-by-hop runs only). ``seed``: the analysis of
    the run of that seed on ``backend`` (``"sim"`` or ``"netns"``, whose hosts draw from the seed differently),
    its flows started where the run starts them (up to 200 ms after the file's starts: topo/net/starts.py);
    None: at the file's starts (``hbh show``, ``make map``: no run).

    Why the seed: which flows start together decides how the hops start up. f1 configured at 0 s and m0 and
    f2 at 0.1 s, from one host: at the file's starts f1 alone settled S3's buffer before the others came and
    the model saw nothing; the run started them at 0.153, 0.136 and 0.117 s and S3's buffer from S1
    overflowed (26 lost from 0.41 s; the model at those starts: 107 packets from 0.39 s;
    tests/topo/random_cases/multicast-start-order.yaml)."""
    if seed is not None:
        topo = with_drawn_starts(topo, seed, backend)
    return warnings_of(topo, check_topology(topo, duration_s), duration_s)


def warnings_of(topo: Topology, checks: list[LawCheck], duration_s: float) -> list[str]:
    """The warnings of ``checks`` (:func:`check_topology`'s for ``duration_s``): each law's, with the buffers'
    remedy, then the laws that run at their packets' gap (topo/analysis/report_gap.py), then those whose buffer a
    start-up brake's cut under the sources' ramp overruns (topo/analysis/brake_ramp.py). ``hbh run`` and
    ``hbh show`` both print these, so neither can miss a rule the other has."""
    loops = [(c.key, c.loop, c.drop_at_s) for c in checks]
    # a law whose settled loop is unstable at its packets' gap swings as report_gap.py says, not by a settled law's
    # one-packet steps (the walk stamp_lag.py counts): that rule names it (report-gap-own-buffer-line.yaml)
    unstable = sparse_reports(topo, loops).keys() if any(c.lag is not None for c in checks) else set()
    checks = [dataclasses.replace(c, lag=None) if c.key in unstable else c for c in checks]
    warned = [w for c in with_remedy(topo, checks, duration_s) if (w := c.warning()) is not None]
    return with_brake_ramps(topo, loops, with_sparse_reports(topo, loops, warned), path_drain)


def with_remedy(topo: Topology, checks: list[LawCheck], duration_s: float) -> list[LawCheck]:
    """``checks`` with the buffers' remedy filled in when the laws together overflow one: the
    model runs again with larger buffers, up to a while after the last first loss (what
    overflows is a transient)."""
    over = [c for c in checks if c.overflows]
    if not any(c.floor is None for c in over):  # a floor's overflow names no buffer remedy (``LawCheck.warning``)
        return checks
    # a peak without a loss has no time in the model: the remedy's model then runs the whole run
    latest = max(c.network.first_loss_s or duration_s for c in over if c.network is not None)
    horizon = min(duration_s, REMEDY_SPAN * latest + REMEDY_MARGIN_S)
    scale = smallest_scale(topo, horizon, packets={c.key[::-1]: c.margin for c in checks})
    return [dataclasses.replace(c, scale=scale) for c in checks]
