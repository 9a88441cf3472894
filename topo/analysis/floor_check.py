"""Where an ALINEA law's floor alone overflows the buffer it regulates (topo/analysis/check.py).

Why: a law's floor (``r_floor``) is derived from its own link (a fiftieth of its rate, topo/analysis/derive.py),
not from what the flows cross behind the buffer it regulates. A host on a 500 Mb/s link has a 10 Mb/s
floor; if its flows cross 5 Mb/s behind its switch, the switch's buffer gains 5 Mb/s with the law at
its floor, whatever the reports say: no gain, target or forecast can hold it. The laws-together model
(topo/analysis/fluid_network.py) sees it when it runs long enough, and then blames the start-up and offers a
larger buffer, which only delays the loss.

What a law pushes at its floor is the floor, or less when its flows cannot bring that much: a host's
flows are each at most their R_max and its link; a switch passes its share of what reaches it, each
link into it at what that node lets the law there run (its R_max when the node forwards its flows
faster, else what the node forwards, never below that law's floor), the link's flows at their
sources' shares (a host's flows share its link equally in bits, each at most its r_max). What the
buffer's node forwards is each flow at its share, at most what its path behind the node takes (links
shared by several of the flows counted once per path from the node: a link reached by two paths is
counted twice, toward silence; a receiver's playout); a multicast group at its slowest copy's pace,
since the node frees the group's packet when its last copy leaves. Right after a flow starts or
stops, a switch whose frames are of several sizes drains at what its queue rate (packets/s from the
mean frame of the last 0.2 s) carries of the new mix (:meth:`_Stretch.mix_dip`), a share of what its law
runs at then: the link, or less where what is behind held that law below it before, until the backlog that
hold left behind it has drained (it moves only by its reports: :meth:`_Stretch.law_at_change`); a link that
carried none of the flows before starts that mean from their largest frame, as at the run's start (the
first frames may be the largest flow's). And u's own queue, when u is a switch, sends its law's packets/s in the new
mix's frames: when they grow (a larger-frame flow joins, a smaller-frame one stops), its floor carries
new over old mean times its bits, falling back as its window catches up (:meth:`_Stretch.mix_surge`;
the laws before u follow what it forwards), which rules the law out if the excess over what v forwards
fills the room in 0.2 s. Only after a flow starts or stops: at the run's start u's law starts from its
R_max with v's buffer empty, above a floor it can still cut to while its window fills. Checked over each
stretch of the run in which the same flows run and no link changes rate; the law is ruled out if its
floor's excess fills, within one stretch (or the 0.2 s of a mix's dip), its buffer above its target
(the law reaches its floor only above it) and every buffer behind it on its flows' paths that can fill
(the laws there forward at their own floors, so the excess may gather at the last buffer before the
slow link; one whose node drains it faster than it can be fed, by its link or a slower one before it
on the way from u, never fills; nor any from a hop whose law's floor is below what its buffer drains on:
that law cuts to the drain and holds its buffer at its target, so the excess stays before it).
A law whose floor alone sends what its path drains has no margin to take
a dip's excess back, and a dip lasts longer than the window while the new mix waits behind the old frames
in the FIFO: after a flow starts or stops (not at the run's start), any dip rules it out. A dip counts
what it gathers read by read until v forwards the floor (:meth:`_Stretch.dip_gathers`), not its excess
net of what v forwards above the floor afterwards; on BMv2's queues a packet leaves at the spacing it was
queued at, so each read's excess counts push/drain times. And a link behind v that falls to exactly what
the floor sends rules the law out (:meth:`_Stretch.drop_to_floor`): it sent more until its reports told
it, and at its floor nothing of that leaves while the drop lasts.

What the floor gathers above the target in one stretch is still there in the next (:func:`_carry`): the
check carries it, and when the flows change, v's buffer from u, one FIFO, first passes what it holds (its
target and that excess: the flows before's packets) at the pace their paths give them, the new flows'
packets behind them. And a host's floor exactly at what v forwards (no margin) is followed frame by frame
(:func:`_reading_pump`): with frames of several sizes v's count of them jitters, and the law's damping term
lifts its rate on each fall of the count while the floor clips each cut.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar

from controlplane.alinea import AlineaLaw
from controlplane.frame_size import READ_PERIOD_NS, WINDOW_SAMPLES
from controlplane.loop_analysis import r_max_with_margin
from controlplane.params import LawParams, PortParams
from controlplane.units import format_rate
from topo.net.model import Flow, Topology
from topo.net.plan import flow_frame_bytes, law_frames
from topo.net.routes import routed_paths

__all__ = ["FloorOverflow", "HeldExit", "floor_overflows"]

DirectedLink = tuple[str, str]
NS = 1_000_000_000
#: How long a switch's queue rate keeps the mean frame of the frames it sent before a flow started or
#: stopped: the span of its frame-size window (controlplane/frame_size.py)
MIX_WINDOW_NS = WINDOW_SAMPLES * READ_PERIOD_NS
#: The reports of a law's ramp from its floor followed at most (:meth:`_Stretch.start_ramp`)
MAX_RAMP_REPORTS = 20_000
#: The frames of a host's pacer followed at most by :func:`_reading_pump`
MAX_PUMP_FRAMES = 5_000
#: The phases of the pacer's pattern :func:`_reading_pump` starts from (v's buffer then holds its first frames)
PUMP_PHASES = 8


@dataclass(frozen=True)
class HeldExit:
    """v's law toward ``toward`` passes a capped unit at no more than what its flows bring (``carried_bps``,
    the caps of what it carries; :func:`_exit_at_its_r_max`): ``unit`` a group (its copy toward that node) or a
    unicast flow; ``fix_bps`` the R_max the loader derives from those caps (``r_max_with_margin``)."""

    unit: str
    toward: str
    carried_bps: float
    fix_bps: float
    group: bool = True

    def explained(self, v: str, exit_bps: float, when: str) -> tuple[str, str]:
        """The warning's (why, fix): the same load-1 queue for a group's copy and a unicast flow's exit."""
        x, cap = self.toward, format_rate(self.carried_bps)
        if self.group:
            what = (f"it sends group {self.unit}, at most {cap} (its r_max), beside other flows, and {v} passes the "
                    f"group's copy toward {x} at {format_rate(exit_bps)}{when}, exactly the most the group brings; "
                    f"{v} frees a packet of the group only when its last copy leaves, so every burst of the group")
            whom = "the group's copies"
        else:
            what = (f"it sends {self.unit} beside other flows, and {v}'s law toward {x}, which carries flows capped at "
                    f"{cap} in all (their r_max), passes them at {format_rate(exit_bps)}{when}, its R_max: at most what "
                    f"they bring, a queue at load 1, so every burst of {self.unit}")
            whom = f"{v}'s queue toward {x}"
        return (f"{what} from this law's queue (its FIFO mixes it with the others, and the law climbs on {v}'s drain "
                f"while their packets pass fast) stays in {v}'s buffer, which the law drains back only by cutting "
                f"every flow beside it: the buffer fills burst by burst",
                f"an r_max of {format_rate(self.fix_bps)} on {v}'s law toward {x} (the caps and one frame per report "
                f"interval, what the loader derives when the file gives none) would give {whom} a margin to drain "
                f"its bursts")


@dataclass(frozen=True)
class FloorOverflow:
    """Law u -> v at its floor sends ``push_bps``, more than v forwards of its flows (``drain_bps``),
    from ``from_s``: the room left in the buffers from v on is full ``fill_s`` later. ``slowest``: the
    multicast groups among them, each with the receiver whose copy frees its packets (None: unicast)."""

    floor_bps: float
    push_bps: float
    drain_bps: float
    from_s: float
    fill_s: float
    slowest: tuple[tuple[str, str], ...] = ()
    mix: tuple[str, float] | None = None  # (v's next hop, the share of its bits its queue rate carries)
    mix_law_bps: float | None = None  # v's law toward that hop as the mix changed, when held below its link
    surge: float | None = None  # u's queue sends this many times its law's bits in the 0.2 s after its frames grew
    kept: bool = False  # a drop behind v to exactly the floor: the excess queued before u's law heard of it stays
    ramp_from: DirectedLink | None = None  # v's law toward this hop starts at its floor (a shaper) and ramps too slowly
    head: tuple[float, float] | None = None  # v's FIFO from u first passes the old flows' backlog: (its pace, seconds)
    pump: tuple[float, int] | None = None  # a host's floor at v's drain, its damping lifted by v's jittering count:
    # (its mean frame, bytes; how many frame sizes it sends)
    held_copy: HeldExit | None = None  # a capped unit leaves v at exactly what it brings, beside other flows from u

    def _when(self) -> str:
        return f" from {self.from_s:g} s" if self.from_s > 0 else ""

    def explained(self, v: str, why: str, fix: str) -> tuple[str, str]:
        """The warning's (why, fix) (topo/analysis/check.py): these, unless the overflow is ``kept``."""
        if self.ramp_from is not None:
            _, x = self.ramp_from
            return (f"at its floor it sends {format_rate(self.push_bps)}, while {v}'s law toward {x}, on a shaper, "
                    f"starts at its floor and forwards {format_rate(self.drain_bps)} of its flows{self._when()}: it "
                    f"rises a step a report, each report reading the packet that carries it, and {v}'s buffer fills "
                    f"first (in {self.fill_s:.2g} s)",
                    f"an r_floor of at most {format_rate(self.drain_bps)} would not overflow it")
        if self.pump is not None:
            return (f"at its floor it sends {format_rate(self.push_bps)}, exactly what {v} forwards of its flows"
                    f"{self._when()}, with no margin to drain back what it sends above it: {v} counts its frames "
                    f"({self.pump[1]} sizes, {self.pump[0]:.0f} B on average) more or fewer as large or small ones "
                    f"are queued when a report leaves, and the law's damping term lifts its rate on every fall of "
                    f"that count while its floor clips every cut: {v}'s buffer fills in about {self.fill_s:.2g} s",
                    f"an r_floor below {format_rate(self.drain_bps)} would leave it a margin to drain back")
        if self.held_copy is not None:
            return self.held_copy.explained(v, self.drain_bps, self._when())
        if not self.kept:
            return why, fix
        return (f"at its floor it sends {format_rate(self.push_bps)}, exactly what {v} forwards of its flows after a "
                f"link behind {v} falls at {self.from_s:g} s: what it sent above that until its reports told it "
                f"(a loop's delay) stays in the buffers from {v} on while the drop lasts, with no margin to drain back",
                f"an r_floor below {format_rate(self.drain_bps)} would let them drain back")


def stretches(topo: Topology, alinea: list[Flow], duration_s: float
              ) -> Iterator[tuple[int, int, dict[tuple[str, str], float], list[Flow]]]:
    """The run's first ``duration_s`` cut where the ALINEA flows start or stop or a link's rate changes: each
    stretch's (start, end) in ns, the link rates then (changed links only, keyed by sorted ends) and the flows
    active. Why one place: every check that looks for the worst moment of a run (this module's, mix_step.py's, wire_backlog.py's) walks
    the same stretches."""
    end_ns = int(duration_s * NS)
    cuts = {0} | {f.start_ns for f in alinea} | {f.stop_ns for f in alinea if f.stop_ns is not None} | {
        ev.at_ns for ev in topo.events if ev.kind == "link_rate"}
    times = sorted(t for t in cuts if 0 <= t < end_ns) + [end_ns]
    events = sorted(topo.events, key=lambda e: e.at_ns)
    for t0, t1 in zip(times, times[1:]):
        rates: dict[tuple[str, str], float] = {}
        for ev in events:
            if ev.kind == "link_rate" and ev.at_ns <= t0 and ev.link is not None and ev.rate_bps is not None:
                rates[_key(*ev.link)] = ev.rate_bps
        yield t0, t1, rates, [f for f in alinea if f.start_ns <= t0 and (f.stop_ns is None or f.stop_ns > t0)]


class _Gain(Protocol):
    gained_pkts: float
    room_pkts: float


G = TypeVar("G", bound=_Gain)


def worst_per_law(topo: Topology, paths: dict[str, tuple[DirectedLink, ...]], alinea: list[Flow], duration_s: float,
                  keys: list[DirectedLink], find: Callable[[_Stretch, DirectedLink, int], G | None]
                  ) -> dict[DirectedLink, G]:
    """Each law in ``keys``: ``find``'s finding in the stretch where it overfills the buffer the most (gained
    packets beyond the room above the target), over :func:`stretches`. Why one place: the checks that look for a
    law's worst moment alone (drain_fall.py's, wire_backlog.py's) keep it alike; mix_step.py walks its own
    stretches (with the stretch before) and keeps through :func:`keep_worst`."""
    out: dict[DirectedLink, G] = {}
    for t0, t1, rates, active in stretches(topo, alinea, duration_s):
        stretch = _Stretch(topo, paths, active, rates, span=(t0, t1))
        for key in keys:
            keep_worst(out, key, find(stretch, key, t0))
    return out


def keep_worst(out: dict[DirectedLink, G], key: DirectedLink, found: G | None) -> None:
    """Keep ``found`` for ``key`` if it overfills the buffer more (gained packets beyond the room above the
    target) than the finding kept so far: one comparison for every check that keeps a law's worst stretch."""
    was = out.get(key)
    if found is not None and (was is None or found.gained_pkts - found.room_pkts > was.gained_pkts - was.room_pkts):
        out[key] = found


def floor_overflows(topo: Topology, duration_s: float) -> dict[DirectedLink, FloorOverflow]:
    """The laws whose floor fills their buffer in some stretch of the first ``duration_s`` of the run
    (the first such stretch of each)."""
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    alinea = [f for f in topo.flows if f.control == "alinea"]
    if not alinea:
        return {}
    out: dict[DirectedLink, FloorOverflow] = {}
    before: list[Flow] = []  # the flows of the stretch before
    prior: _Stretch | None = None  # the stretch before
    capacity_before: dict[DirectedLink, float] = {}  # what v could forward of u's flows in the stretch before
    backlog: dict[DirectedLink, _Backlog] = {}  # what u's floor left above v's target at the stretch's end
    for t0, t1, rates, active in stretches(topo, alinea, duration_s):
        stretch = prior = _Stretch(topo, paths, active, rates, prior=prior, span=(t0, t1))
        before, previous = active, before
        fresh_hops = {hop for f in active for hop in paths[f.name]} - {hop for f in previous for hop in paths[f.name]}
        for key, law in topo.law.items():
            if key in out or key not in stretch.crossing:
                backlog.pop(key, None)
                continue
            carried = _carry(stretch, key, backlog.pop(key, None), rates, t0, t1)
            found = _one_law(stretch, key, law, t0, t1, previous, fresh_hops, capacity_before)
            if found is None and isinstance(carried, FloorOverflow):
                found = carried
            if found is None:  # the least specific finding: a burst's, not the floor's alone
                found = _exit_at_its_r_max(stretch, key, law, stretch.push(*key), t0)
            if found is not None:
                out[key] = found
            elif isinstance(carried, _Backlog):
                backlog[key] = carried
    return out


@dataclass(frozen=True)
class _Backlog:
    """What u's floor left in the buffers from v on above v's target at a stretch's end (``bits``), gathered
    since ``since_ns``: v's FIFO from u holds it, and its target, of the flows ``flows`` (those of that
    stretch, or of an earlier one whose backlog is still ahead in the FIFO: ``head_bits`` of it left)."""

    bits: float
    since_ns: int
    flows: tuple[Flow, ...]
    head_bits: float | None = None


def _carry(stretch: _Stretch, key: DirectedLink, held: _Backlog | None, rates: dict[tuple[str, str], float],
           t0: int, t1: int) -> FloorOverflow | _Backlog | None:
    """The floor's excess carried from stretch to stretch: an overflow, or what is left at this stretch's end.

    Within one stretch :func:`_one_law` counts the excess from the buffer at its target; what the floor
    gathered in the stretches before is still there (a head start fills room too). And v's buffer from u is
    one FIFO: what it holds when a flow starts or stops, its target and that backlog, is the old flows'
    packets, which leave at the pace their paths out of v give them (v's drain of the old flows, at today's
    link rates) before any of the new flows' packets behind them (multicast-start-order.yaml at seed 6: f1
    alone for 0.21 s, S1's floor 2 Mb/s into S3's FIFO toward S6's 1 Mb/s link; m0 and f2 then join toward
    faster exits, but S3's 237-packet target of f1's frames and the excess leave at 1 Mb/s first, for about
    3 s, and the buffer fills at 0.97 s). Counted only while the law is at its floor from stretch to stretch: its excess is then
    what fills the buffer above its target; a stretch whose floor v forwards drains it back at the margin."""
    u, v = key
    law = stretch.topo.law[key]
    push = stretch.push(u, v)
    if push < law.r_floor * (1 - 1e-9):
        return None  # u's flows cannot bring its floor: it passes them all, and v's buffer settles at its target
    drain = stretch.drain(u, v, push)[0]
    room = stretch.room_bits(u, v)
    left_s = (t1 - t0) / NS
    gathered, since = (held.bits, held.since_ns) if held is not None else (0.0, t0)
    gone_s = (t0 - since) / NS  # since the floor's excess began to gather
    head = None  # (the old flows' pace out of v's FIFO, the seconds their backlog takes to leave)
    flows, ahead = tuple(stretch._active), None
    if held is not None and (held.head_bits is not None or set(held.flows) != set(stretch._active)):
        old = _Stretch(stretch.topo, stretch.paths, list(held.flows), rates)
        pace = old.drain(u, v, old.push(u, v))[0]
        whole = _buffer_bits(stretch.topo, u, v)
        content = held.head_bits if held.head_bits is not None else min(law.o_max * whole + gathered, whole)
        if pace < drain * (1 - 1e-9):
            head = (pace, content / pace if pace > 0 else math.inf)
            head_s = min(left_s, head[1])
            old_room = min(room, old.room_bits(u, v))  # the new flows' packets reach no buffer behind v yet
            if push > pace and gathered + (push - pace) * head_s >= old_room:
                return FloorOverflow(law.r_floor, push, pace, since / NS,
                                     gone_s + (old_room - gathered) / (push - pace), head=head)
            gathered = max(0.0, gathered + (push - pace) * head_s)
            gone_s, left_s = gone_s + head_s, left_s - head_s
            if content > pace * head_s:  # the old flows' packets still ahead at the stretch's end
                flows, ahead = held.flows, content - pace * head_s
    if push > drain * (1 + 1e-9) and gathered + (push - drain) * left_s >= room:
        return FloorOverflow(law.r_floor, push, drain, since / NS, gone_s + (room - gathered) / (push - drain),
                             head=head)
    gathered = max(0.0, gathered + (push - drain) * left_s)
    return _Backlog(gathered, since, flows, ahead) if gathered > 0 else None


def _one_law(stretch: _Stretch, key: DirectedLink, law: LawParams, t0: int, t1: int, previous: list[Flow],
             fresh_hops: set[DirectedLink], capacity_before: dict[DirectedLink, float]) -> FloorOverflow | None:
    """Whether u's floor overflows v's buffer within this stretch, from v's buffer at its target."""
    topo, paths, active, rates = stretch.topo, stretch.paths, stretch._active, stretch.rates
    push = stretch.push(*key)
    held = stretch.room_bits(*key)
    drain, slowest = stretch.drain(*key, push)
    # (v's buffer from u is empty if u -> v carried nothing before: the room is then all of it)
    empty = held + law.o_max * _buffer_bits(topo, *key) if key in fresh_hops else held
    ramp = stretch.start_ramp(*key, push, empty, t1 - t0, fresh_hops)
    if ramp is not None:
        return FloorOverflow(law.r_floor, push, ramp[1], t0 / NS, ramp[2], slowest, ramp_from=ramp[0])
    was, capacity_before[key] = capacity_before.get(key), stretch.drain(*key, stretch.push(*key, False))[0]
    if was is not None and stretch.drop_to_floor(*key, t0, was, push):
        # a link behind v fell to exactly what u's floor sends: u's law sent more until its reports told it,
        # and what that loop's delay queued in v's buffer never leaves while the drop lasts
        # (floor-equals-dipped-drain.yaml)
        return FloorOverflow(law.r_floor, push, drain, t0 / NS, math.inf, slowest, kept=True)
    if push > drain * (1 + 1e-9) and (push - drain) * (t1 - t0) / NS >= held:
        return FloorOverflow(law.r_floor, push, drain, t0 / NS, held / (push - drain), slowest)
    pumped = _reading_pump(stretch, key, law, push, t0, t1)
    if pumped is not None:
        return pumped
    surge = stretch.mix_surge(*key, before=previous) if t0 > 0 else None
    if surge is not None and push >= law.r_floor * (1 - 1e-9):
        # the law at its floor, u's queue sends its floor's packets/s in frames larger than the window's
        # mean: the floor times the surge in bits, as far as u's link and what reaches u allow
        # (the laws before u run at what u forwards: as its queue sends more, they follow)
        lifted = _Stretch(topo, paths, active, rates, lift={key: law.r_floor * surge})
        lifted.push(*key)
        more = min(law.r_floor * surge, lifted.supply[key])
        gone, paces = stretch.drain(*key, more)
        span = min(MIX_WINDOW_NS, t1 - t0)
        if more > gone * (1 + 1e-9) and (more - gone) * span / NS >= held:
            return FloorOverflow(law.r_floor, more, gone, t0 / NS, held / (more - gone), paces, surge=surge)
    dip = stretch.mix_dip(*key, before=None if t0 == 0 else previous)
    if dip is None:
        return None
    mix, reads = dip[:2], dip[2]
    at_change = stretch.law_at_change(*mix[0])
    held_at = at_change if at_change < stretch.rate(*mix[0]) * (1 - 1e-9) else None
    # a law whose floor alone sends what its path drains, when a flow starts or stops, has no margin to
    # take the dip's excess back: the buffer stays where the dip left it, and the dip lasts longer than
    # the window while the new frames wait behind the old ones in v's FIFO (mix-dip-fifo-wait.yaml)
    # (not when v's egress carried none of the flows before: no old frames wait, as at the run's start)
    fresh = not any(mix[0] in paths[f.name] for f in previous)
    no_margin = (t0 > 0 and not fresh and push >= law.r_floor * (1 - 1e-9)
                 and abs(push - drain) <= drain * 1e-9)
    drain, slowest = stretch.drain(*key, push, dip=mix)
    span = min(MIX_WINDOW_NS, t1 - t0)
    if push > drain * (1 + 1e-9) and (no_margin or (push - drain) * span / NS >= held):
        return FloorOverflow(law.r_floor, push, drain, t0 / NS, held / (push - drain), slowest,
                             mix=(mix[0][1], mix[1]), mix_law_bps=held_at)
    # what the dip gathers before the window's mean has caught up enough for v to forward the push, not
    # the excess net of what v forwards above it afterwards: the buffer's peak (host-mix-dip-stamped.yaml)
    gathered, deepest, slowest = stretch.dip_gathers(*key, push, mix[0], reads, span)
    if gathered >= held:
        return FloorOverflow(law.r_floor, push, deepest, t0 / NS, held / (push - deepest), slowest,
                             mix=(mix[0][1], mix[1]), mix_law_bps=held_at)
    return None


def _exit_at_its_r_max(stretch: _Stretch, key: DirectedLink, law: LawParams, push: float,
                       t0: int) -> FloorOverflow | None:
    """A switch's law that sends a capped unit beside other flows into a buffer where the unit leaves at no more
    than what it brings: a multicast group's copy at exactly the group's r_max, or a unicast flow whose next
    law's R_max, given in the file below its link, is at most the caps of the flows that law carries (derived,
    it has one frame per report interval more, topo/analysis/derive.py: this is an override's case).

    Why: v's queue toward that exit then drains the unit at the mean rate it arrives at, with no margin: every
    burst of it that u's queue sends stays in v's buffer (a group's packet leaves it with its last copy; a
    unicast flow's queue at load 1 keeps its bursts the same way). And u's queue sends bursts: its FIFO holds
    the unit's packets among the others', and v's drain, read from the packets that leave, is fast while the
    other flows' packets pass, so the law climbs on it and sends the unit's packets queued behind them at that
    pace. The law takes a burst back only by sending less of the unit, which it does only by cutting every flow
    beside it too (the sender's pacer shares its rate equally in bits, the unit at most its r_max), and at its
    floor not at all if the unit still gets its r_max there. A host's law has no FIFO of other flows' packets
    to burst from (its pacer spaces them): paper-1router.yaml's R1 -> H2 at f1's 1.8 Mb/s is not found.
    make fuzz-topo seed 5 (multicast-paced-branch.yaml): m0 at 2 Mb/s from H1 to six hosts beside
    f1 up to 1 Gb/s, m0's copy toward S7 at S3's R_max, 2 Mb/s; S3's buffer from S1 fills burst by burst
    (384 dropped at seed 1, f1 held to 2.7 Mb/s behind m0's packets). The same file with S3's R_max toward S7
    at 2.2 Mb/s loses nothing at seeds 1-3 (f1 at 198 Mb/s), and with S1's floor at 3 Mb/s (m0 then under its
    r_max at the floor) it still loses 13-397: the margin the copy's queue lacks, not the floor, is the cause.
    Its unicast analog (unicast-capped-exit.yaml, m0 to H7 alone, S3 -> S7 given 2 Mb/s) loses 141/112 at seeds
    1/2."""
    u, v = key
    topo = stretch.topo
    units = stretch._units(u, v)
    if not topo.nodes[u].is_switch or len(units) < 2:
        return None
    for name, fs in sorted(units.items()):
        if not math.isfinite(_cap(fs)):
            continue
        for f in fs:
            hops = stretch.paths[f.name]
            i = hops.index(key)
            if i + 1 >= len(hops):
                continue
            held = _held_exit(stretch, name, fs, hops[i + 1])
            if held is not None:
                branch = topo.law.get(hops[i + 1])  # none: the group's copy leaves by a link at its r_max
                exit_bps = min(stretch.rate(*hops[i + 1]), branch.r_max if branch is not None else math.inf)
                return FloorOverflow(law.r_floor, push, exit_bps, t0 / NS, math.inf,
                                     ((name, f.dst),) if held.group else (), held_copy=held)
    return None


def _cap(fs: list[Flow]) -> float:
    """A unit's cap: its flows' least r_max (a group's copies share one), inf when one has none."""
    return min((f.r_max_bps or math.inf for f in fs), default=math.inf)


def _held_exit(stretch: _Stretch, name: str, fs: list[Flow], hop: DirectedLink) -> HeldExit | None:
    """Whether v's law toward x (``hop``) passes the unit ``name`` at no more than what its flows bring: a
    group's copy at exactly the group's r_max (its link or its law's R_max: a slower exit is the drain's to find,
    :meth:`_Stretch.drain`); a unicast flow through a law whose R_max is below its link and at most the caps of
    the units it carries (all capped): the file's R_max, since a derived one is the link's or above the caps.
    The link as the file gives it: slow-drain-creep-tree.yaml's S3 -> S1 keeps its 20 Mb/s link's rate as R_max
    when the link turns 1 Gb/s at 1.26 s, a law derived from its link, not a held exit."""
    (v, x), topo = hop, stretch.topo
    branch = topo.law.get(hop)
    link = stretch.rate(v, x)
    exit_bps = min(link, branch.r_max if branch is not None else math.inf)
    if fs[0].group is not None:
        carried = _cap(fs)
        held = abs(exit_bps - carried) <= carried * 1e-9
    else:
        carried = sum(_cap(them) for them in stretch._units(v, x).values())
        # below the file's link (not today's: a law derived from a link an event later speeds keeps its old rate)
        held = (branch is not None and branch.r_max < topo.link_between(v, x).rate_bps * (1 - 1e-9)
                and math.isfinite(carried) and branch.r_max <= carried * (1 + 1e-9))
    if not held or not math.isfinite(carried):
        return None
    port = topo.ports.get((x, v)) or topo.host_buffers.get((x, v))
    fix = carried
    if port is not None:
        _, bits = law_frames(topo, v, x, port.capacity)
        fix = r_max_with_margin(carried, topo.link_between(v, x).rate_bps, bits, port.interval_us / 1e6)
    return HeldExit(name, x, carried, fix, group=fs[0].group is not None)


def _reading_pump(stretch: _Stretch, key: DirectedLink, law: LawParams, push: float, t0: int,
                  t1: int) -> FloorOverflow | None:
    """A host law whose floor is exactly what v forwards of its flows, pumped above it by its own damping term
    as v's count of the host's frames of several sizes jitters from report to report (floor-at-drain-jitter.yaml:
    H1's 2 Mb/s floor, a fiftieth of its link, into S1's 9-packet buffer toward H2's 2 Mb/s).

    Why: with the floor at the drain the law has no margin below it: whatever it sends above its floor stays
    in the buffers from v on, and only a reading above its target holds it at the floor. v's buffer holds a
    steady number of bits, but as a count of frames of several sizes it reads more or fewer packets as the
    large frames or the small ones are queued when a report leaves (a report rides on an arrival), and the
    law's damping term (``-K_P·(O(k) - O(k-1))``, applied once its target is O_max) lifts the rate on every
    fall of that count while the floor clips every cut: the rate above the floor is the count's fall from its
    highest reading, held until it rises again. With frames of one size the count at an arrival is steady.

    How: the host's frames in the pacer's order (equal bits among its flows, each at most its r_max; each
    flow's frames evenly spaced in its share of the bits, merged by when each one's bits are done), sent at
    the law's rate from v's buffer at the law's target (O_max of it in the host's frames), drained at the
    floor; at each arrival v counts its packets, and a report leaves on the first arrival an interval after
    the last. The law itself (:class:`controlplane.alinea.AlineaLaw`, settled: its target at O_max, W at
    W_min) reads each report as the host does (the count over the buffer in the host's mean frames). Overflow:
    the count at an arrival above the buffer's capacity (the data plane admits packets). Followed for at most
    ``MAX_PUMP_FRAMES`` frames; the bits it gathered over them then go on at their mean rate to the stretch's
    end. The pattern's phase when the stretch begins is the run's: the earliest fill of ``PUMP_PHASES`` phases.
    Lossless with one frame size, or with 1500 and 576 B frames alone, where the count is steady (the
    variants in tests/topo/random/cases/test_floor_at_drain_jitter_cases.py)."""
    u, v = key
    topo = stretch.topo
    port = topo.host_buffers.get((v, u)) or topo.ports.get((v, u))
    if topo.nodes[u].is_switch or port is None or law.k_p <= 0 or port.interval_us <= 0:
        return None
    if abs(push - law.r_floor) > law.r_floor * 1e-9:
        return None  # the floor does not bind: u's flows bring less
    most = stretch.drain(u, v, stretch.push(u, v, False))[0]
    if abs(most - push) > push * 1e-9:
        return None  # v forwards more than the floor (a margin to drain back) or less (the check above)
    flows = stretch.crossing[key]
    sizes = [flow_frame_bytes(f) for f in flows]
    if len(set(sizes)) < 2:
        return None
    frames, bits = law_frames(topo, u, v, port.capacity)
    share = _water_fill(push, [f.r_max_bps or math.inf for f in flows])
    span = (t1 - t0) / NS
    seq = _paced_frames(sizes, share, min(MAX_PUMP_FRAMES, math.ceil(2 * push * span / (8 * min(sizes))) + 64)
                        + PUMP_PHASES)
    if seq is None:
        return None
    mean = sum(seq) / len(seq)
    fill = min(_pump_fill([8 * b for b in seq[phase:]], law, port, push, span, frames, bits)
               for phase in range(PUMP_PHASES))
    if fill > span:
        return None
    return FloorOverflow(law.r_floor, law.r_floor, push, t0 / NS, fill, pump=(mean, len(set(sizes))))


def _pump_fill(order: list[float], law: LawParams, port: PortParams, push: float, span: float, frames: int,
               bits: int) -> float:
    """:func:`_reading_pump`'s model over the frames ``order`` (bits each), the first of them queued in v's buffer
    to the law's target: the seconds until an arrival finds it full (inf: not within ``span``)."""
    packet = 1 / frames
    target = law.o_max * frames * bits  # v's buffer at the law's target, bits
    queued, held = 0, 0.0
    while held < target and queued < len(order):
        held += order[queued]
        queued += 1
    alinea = AlineaLaw(law)
    alinea.o, alinea.w = law.o_max, law.w_min
    alinea.last_occupancy, alinea.last_packet = queued * packet, packet
    rate, interval = law.r_floor, port.interval_us / 1e6
    now, last_report = 0.0, -math.inf
    arrived, departed, head, peak = held, 0.0, 0, queued
    j = queued
    while j < len(order) and now < span:
        # frame j arrives at ``now``: v has begun to send every frame whose bits before it the drain has carried
        # (it idles only empty); one on the wire no longer counts in v's buffer
        gone = min(push * now, arrived)
        while head < j and departed <= gone:
            departed += order[head]
            head += 1
        count = j + 1 - head
        peak = max(peak, count)
        if count > port.capacity:
            return now
        if now - last_report >= interval:
            rate = alinea.on_report(count * packet, packet=packet)
            last_report = now
        arrived += order[j]
        now += order[j] / rate
        j += 1
    if 0 < now < span:  # followed as far as MAX_PUMP_FRAMES: its gain goes on at its mean rate
        gain = (arrived - held - push * now) / now  # b/s above the drain
        mean = (arrived - held) / (j - queued)
        if gain > 0:
            return now + (port.capacity - peak + 1) * mean / gain
    return math.inf


def _water_fill(total: float, caps: list[float]) -> list[float]:
    """``total`` shared equally among len(caps) parts, each at most its cap (the rest to the others)."""
    out = [0.0] * len(caps)
    left, open_ = total, sorted(range(len(caps)), key=lambda i: caps[i])
    while open_:
        each = left / len(open_)
        i = open_[0]
        if caps[i] <= each:
            out[i], left = caps[i], left - caps[i]
            open_.pop(0)
            continue
        for i in open_:
            out[i] = each
        break
    return out


def _paced_frames(sizes: list[int], shares: list[float], count: int) -> list[int] | None:
    """The first ``count`` frames (bytes) of flows of ``sizes`` sharing a pacer in bits by ``shares``: each
    flow's frames evenly spaced in its share, merged by when each one's bits are done (the pacer's turns in
    bytes come to that order). None if no flow has a share."""
    live = [(b, r) for b, r in zip(sizes, shares) if r > 0]
    if not live:
        return None
    done = [8 * b / r for b, r in live]  # when each flow's next frame's bits are done, at its share
    out = []
    for _ in range(count):
        i = min(range(len(live)), key=done.__getitem__)
        out.append(live[i][0])
        done[i] += 8 * live[i][0] / live[i][1]
    return out


def _window_reads(mean: float, old: float) -> tuple[float, ...]:
    """The bits a queue rate set from a window starting at ``old`` bytes carries of frames of ``mean`` bytes,
    as a share of what it is set to, between each read of the counters and the next over the window's span:
    each read moves the window's mean a WINDOW_SAMPLES-th of the way."""
    return tuple(mean / (old + (mean - old) * k / WINDOW_SAMPLES) for k in range(WINDOW_SAMPLES))


def _window_share(mean: float, old: float) -> float:
    """:func:`_window_reads` over the window's span: the mean of the reads' shares."""
    reads = _window_reads(mean, old)
    return sum(reads) / len(reads)


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _buffer_bits(topo: Topology, u: str, v: str) -> float:
    """v's buffer fed by u, bits (0: none)."""
    port = topo.ports.get((v, u)) or topo.host_buffers.get((v, u))
    if port is None:
        return 0.0
    frames, bits = law_frames(topo, u, v, port.capacity)
    return frames * bits


def _unit(f: Flow) -> str:
    """A multicast group's branches are one sender's packets: counted once, as the group."""
    return f.group if f.group is not None else f.name


class _Stretch:
    """One stretch of the run: its flows, its link rates."""

    def __init__(self, topo: Topology, paths: dict[str, tuple[DirectedLink, ...]], active: list[Flow],
                 rates: dict[tuple[str, str], float], lift: dict[DirectedLink, float] | None = None,
                 start: bool = False, prior: _Stretch | None = None, span: tuple[int, int] = (0, 0)) -> None:
        self.topo, self.paths, self.rates, self.start = topo, paths, rates, start
        #: the stretch before (None: this one starts the run) and this one's (start, end), ns: where a law runs
        #: when this one begins (:meth:`law_at_change`)
        self.prior, self.span = prior, span
        #: a queue that sends more than its law's rate (:meth:`mix_surge`): what it forwards, at least
        self.lift = lift or {}
        #: a law held below its link (:meth:`start_ramp`): what its queue forwards, at most
        self.held: dict[DirectedLink, float] = {}
        self._active = active
        self.crossing: dict[DirectedLink, list[Flow]] = {}
        for f in active:
            for hop in paths[f.name]:
                self.crossing.setdefault(hop, []).append(f)
        # what a unit's source hands the network: its link shared equally in bits by the host's units
        # (hosts/sender.py: the pacer's flows share it so), at most the unit's r_max
        units_of: dict[str, set[str]] = {}
        for f in active:
            units_of.setdefault(f.src, set()).add(_unit(f))
        self.demand = {_unit(f): min(f.r_max_bps or math.inf,
                                     self.rate(f.src, f.path[1]) / len(units_of[f.src])) for f in active}
        self._push: dict[tuple[DirectedLink, bool | None], float] = {}
        #: what u could send toward v whatever its law: its link, its units' r_max, what reaches u for v
        self.supply: dict[DirectedLink, float] = {}
        self._dip: tuple[DirectedLink, float] | None = None
        #: what the groups' copies take of each link while :meth:`drain` counts the unicast flows
        self._taken: dict[DirectedLink, float] = {}

    def rate(self, a: str, b: str) -> float:
        return self.rates.get(_key(a, b), self.topo.link_between(a, b).rate_bps)

    def _units(self, u: str, v: str) -> dict[str, list[Flow]]:
        units: dict[str, list[Flow]] = {}
        for f in self.crossing.get((u, v), []):
            units.setdefault(_unit(f), []).append(f)
        return units

    def push(self, u: str, v: str, at_floor: bool = True) -> float:
        """What u sends toward v at the floor of its law (``at_floor``; else at its R_max): at most the
        link, what its units can bring (their r_max), and u's share of what reaches it for v."""
        if ((u, v), at_floor) in self._push:
            return self._push[((u, v), at_floor)]
        self._push[((u, v), at_floor)] = 0.0  # a cycle of routes (none here) adds nothing
        units = self._units(u, v)
        link = self.rate(u, v)
        bring = sum(min((f.r_max_bps or math.inf for f in fs), default=math.inf) for fs in units.values())
        feed = math.inf
        if self.topo.nodes[u].is_switch:
            before = {hops[hops.index((u, v)) - 1] for hops in (self.paths[f.name] for fs in units.values()
                                                                for f in fs) if hops.index((u, v)) > 0}
            feed = 0.0
            for w, _ in before:  # each link into u carries its units at their demands' shares
                theirs = {_unit(f) for f in self.crossing[(w, u)]}
                d_all = sum(self.demand[n] for n in theirs)
                mine = sum(self.demand[n] for n in theirs if n in units)
                # (at a shaper's start every law is at its floor: what reaches u is what they send there)
                feed += (self.push(w, u) if self.start else self._upstream(w, u)) * (mine / d_all if d_all > 0 else 1.0)
        law = self.topo.law.get((u, v))
        cap = (law.r_floor if at_floor else law.r_max) if law is not None else math.inf
        self.supply[(u, v)] = min(link, bring, feed)
        self._push[((u, v), at_floor)] = out = min(cap, link, bring, feed)
        return out

    def _upstream(self, w: str, u: str) -> float:
        """What the law w -> u sends: what it can (at its R_max), as far as u lets it (:meth:`allowed`)."""
        return min(self.push(w, u, at_floor=False), self.allowed(w, u))

    def allowed(self, u: str, x: str) -> float:
        """The rate x lets u's law run at: its R_max (or the link) if x forwards u's flows at least that
        fast (x's buffer from u cannot fill), else what x forwards, never below the law's floor. A law
        before u runs at its floor only when u's buffer from it fills: a floor far below the link is not
        where a law runs when what is behind it drains faster (playout-shared-link.yaml: S4 -> S3's
        0.04 Mb/s floor, at 2 Mb/s in the run)."""
        if ((u, x), None) in self._push:
            return self._push[((u, x), None)]
        self._push[((u, x), None)] = math.inf
        law = self.topo.law.get((u, x))
        top = min(self.rate(u, x), law.r_max if law is not None else math.inf)
        out = top
        if self.topo.nodes[x].is_switch:
            nxt = {hops[hops.index((u, x)) + 1] for hops in (self.paths[f.name] for f in self.crossing.get((u, x), []))
                   if hops.index((u, x)) + 1 < len(hops)}
            onward = sum(self.allowed(*hop) for hop in nxt)
            if onward < top:
                out = max(law.r_floor if law is not None else 0.0, onward)
        if (u, x) in self.lift:
            out = max(out, min(top, self.lift[(u, x)]))
        self._push[((u, x), None)] = out
        return out

    def law_at_change(self, v: str, x: str) -> float:
        """The rate v's law toward x runs at as this stretch begins (inf: its link's): what x lets it run at
        (:meth:`allowed`), and no more than an earlier stretch of v -> x's flows held it to while the backlog
        that hold left in x's buffer drains. A law moves only by its reports: one held below its link by what
        is behind x (a slow exit's backlog) still is when a flow starts or stops, and its queue rate in
        packets/s is that rate, not the link's (seed 7 fail-1: S1's law toward S3 at 4-9 Mb/s, held by H4's
        5 Mb/s exit, while its window fell from 1450 B to 504 B). When the hold lifts (a flow to a faster exit
        joins) x's buffer still holds its target of the slow exit's packets, which leave at the held rate
        first: O_max of x's buffer over that rate (fail-1 at the run's starts: f3 to H3 joined at 0.117 s,
        f2's 576 B frames at 0.153 s, S1's law toward S3 still at 4-9 Mb/s). At the run's start, or on a
        hop idle in the stretch before, the law starts from its R_max (BMv2's queues) or its last rate."""
        now = self.allowed(v, x)
        law = self.topo.law.get((v, x))
        backlog = (law.o_max if law is not None else 1.0) * _buffer_bits(self.topo, v, x)
        out = math.inf
        s = self.prior
        while s is not None and (v, x) in s.crossing:
            held = s.allowed(v, x)
            if 0 < held < now and (self.span[0] - s.span[1]) / NS < backlog / held:
                out = min(out, held)
            s = s.prior
        return min(now, out)

    def room_bits(self, u: str, v: str) -> float:
        """The room the floor's excess can fill: v's buffer above its target (u's law reaches its floor
        only with that buffer above its target), and every buffer behind it on the flows' paths, whole (the
        laws there forward at their own floors, so the excess may gather at the last before the slow link), up
        to a law whose floor is below what its buffer drains (it holds that buffer at its target).
        In u's frames: the data plane admits packets (its capacity of them), the law aims at its share of
        the buffer in bits (:func:`topo.net.plan.law_frames`)."""
        law = self.topo.law[(u, v)]
        room = 0.0
        port = self.topo.ports.get((v, u)) or self.topo.host_buffers.get((v, u))
        if port is not None:
            frames, bits = law_frames(self.topo, u, v, port.capacity)
            room = (port.capacity - law.o_max * frames) * bits
        # what can reach each buffer behind: its link, or the slowest link before it from u (what u's flows
        # cross on the way there carries their excess no faster)
        # as far as the excess can pass: a law x -> w whose floor is below what w forwards of the flows cuts to
        # that drain and holds w's buffer at its target, so the excess gathers before x, not behind it
        # (multicast-floor-held-branch.yaml: H1's 10 Mb/s floor, its group's slowest copy 5 Mb/s behind S1 -> S3,
        # whose law's 1 Mb/s floor holds S3's buffer: S1's buffer from H1 fills, S3's 2.5 Mbit never do)
        feed: dict[DirectedLink, float] = {}
        for f in self.crossing[(u, v)]:
            hops = self.paths[f.name]
            most = self.rate(u, v)
            for hop in hops[hops.index((u, v)) + 1:]:
                most = min(most, self.rate(*hop))
                law_there = self.topo.law.get(hop)
                if law_there is not None and law_there.r_floor < self.drain(*hop, most)[0] * (1 - 1e-9):
                    break
                feed[hop] = max(feed.get(hop, 0.0), most)
        # a buffer that its node drains faster than it can be fed never fills: the excess gathers before it
        # (multicast fail-1: H4's receive buffer, 1 Mb/s in, a 2 Mb/s playout out; host-floor-mix-dip-tree: S1's
        # 91-packet buffer from S2, behind S2's 2 Mb/s link, drained at 100 Mb/s)
        return room + sum(_buffer_bits(self.topo, *hop) for hop, most in feed.items()
                          if self.drain(*hop, most)[0] < most * (1 - 1e-9))

    def start_ramp(self, u: str, v: str, push: float, held: float, span_ns: int,
                   fresh: set[DirectedLink]) -> tuple[DirectedLink, float, float] | None:
        """A law v -> x on a shaper (queue_model shaper), which starts at its floor, that its flows reach in
        this stretch with v -> x carrying none before (``fresh``: the run's start, or v -> x idle until now),
        and that ramps too slowly for v's buffer from u, fed ``push``: (v -> x, what v forwards of u's flows at
        the start, the seconds the room lasts). Its law, without a forecast on a shaper, reads at each report
        the packet that carries it (reports ride on arrivals; x's queue drains faster than v feeds it while v
        ramps): ``1 / C`` of the buffer C in its frames, and steps ``W·(O − 1/C)`` a report, the first a loop
        after the start (the first packet leaves at once), then one an interval at most and one a packet of its
        at most (``8·frame / rate`` apart). With C under
        ``1 / O_max`` (one packet over the target) it only falls (shaper-start-floor.yaml). u's push, when u is a
        switch, is at most what the laws before it send at their floors, where every law on a shaper starts."""
        if self.topo.options.queue_model != "shaper" or not self.topo.nodes[v].is_switch:
            return None
        nxt = {self.paths[f.name][self.paths[f.name].index((u, v)) + 1] for f in self.crossing[(u, v)]
               if self.paths[f.name].index((u, v)) + 1 < len(self.paths[f.name])}
        if self.topo.nodes[u].is_switch:  # u's own law starts at its floor, fed by laws at theirs
            push = min(push, _Stretch(self.topo, self.paths, self._active, self.rates, start=True).push(u, v))
        for hop in sorted(nxt & fresh):
            law = self.topo.law.get(hop)
            port = self.topo.ports.get(hop[::-1]) or self.topo.host_buffers.get(hop[::-1])
            if law is None or port is None or law.r_floor >= self.rate(*hop) * (1 - 1e-9):
                continue
            frames, bits = law_frames(self.topo, *hop, port.capacity)
            # the first packet leaves at once and brings the first report back a loop later
            link = self.topo.link_between(*hop)
            first_gap = 2 * link.delay_ns / NS + bits / self.rate(*hop) + port.interval_us / 1e6
            ramp, t, gathered, first = AlineaLaw(law), 0.0, 0.0, None
            for _ in range(MAX_RAMP_REPORTS):
                self.held = {hop: ramp.rate}
                self._push.clear()
                forwarded = self.drain(u, v, push)[0]
                self.held = {}
                first = forwarded if first is None else first
                if forwarded >= push * (1 - 1e-9) or t >= span_ns / NS:
                    break
                gap = max(port.interval_us / 1e6, bits / ramp.rate) if t > 0 else first_gap
                gathered += (push - forwarded) * gap
                if gathered >= held:
                    return hop, first, t + gap
                ramp.on_report(1 / frames, packet=1 / frames)
                t += gap
            self._push.clear()
        return None

    def drop_to_floor(self, u: str, v: str, t0: int, was: float, push: float) -> bool:
        """Whether a link behind v fell at ``t0`` so that what v can forward of u's flows (``was`` before) is
        now exactly u's floor push: not u's own link (a host's law keeps its floor at its link's rate), not
        less (the floor's excess then overflows within the stretch, the check above)."""
        behind = {_key(*hop) for f in self.crossing[(u, v)]
                  for hop in self.paths[f.name][self.paths[f.name].index((u, v)) + 1:]}
        if not any(ev.kind == "link_rate" and ev.at_ns == t0 and ev.link is not None and _key(*ev.link) in behind
                   for ev in self.topo.events):
            return False
        now = self.drain(u, v, self.push(u, v, False))[0]
        law = self.topo.law[(u, v)]
        return (was > now * (1 + 1e-9) and abs(push - now) <= push * 1e-9 and push >= law.r_floor * (1 - 1e-9)
                and now < self.rate(u, v) * (1 - 1e-9))

    def mix_dip(self, u: str, v: str, before: list[Flow] | None) -> tuple[DirectedLink, float, tuple[float, ...]] | None:
        """v's regulated egress that carries u's flows, with the share of its rate in bits it carries in the
        first 0.2 s of this stretch, if less than all: the agent sets a queue rate in packets/s from the
        mean frame it sent over the last 0.2 s (controlplane/frame_size.py), so a mix of smaller frames
        than that mean is sent slower in bits, by their ratio, until the window has caught up (a quarter
        of the way at each of its reads). The means before and after: :meth:`_mix_change` (``before``:
        the flows of the stretch before, None at the run's start). Only the first hop out of v and only
        while one hop carries all of u's flows (mixed-sizes-floor-line.yaml: 1500 B frames alone, then
        576 B ones too, 10-13 Mb/s of 20)."""
        if not self.topo.nodes[v].is_switch:
            return None
        nxt = {self.paths[f.name][self.paths[f.name].index((u, v)) + 1] for f in self.crossing[(u, v)]
               if self.paths[f.name].index((u, v)) + 1 < len(self.paths[f.name])}
        if len(nxt) != 1:
            return None
        (hop,) = nxt
        if hop not in self.topo.law:
            return None
        means = self._mix_change(hop, before)
        if means is None or means[0] >= means[1] * (1 - 1e-9):
            return None
        return hop, _window_share(*means), _window_reads(*means)

    def dip_gathers(self, u: str, v: str, push: float, hop: DirectedLink, reads: tuple[float, ...],
                    span_ns: int) -> tuple[float, float, tuple[tuple[str, str], ...]]:
        """The bits v's buffer from u gathers while v's queue toward ``hop`` carries each read's share
        (``reads``, :meth:`mix_dip`) of its rate, until it forwards ``push``; with what v forwards at the
        deepest of the dip, and the groups' slowest copies then. On BMv2's queues a packet's departure is
        fixed when it is queued, at the spacing of the queue rate then: the packets queued over a read's
        ``dt`` at ``push`` leave over ``push / drain`` times ``dt``, whatever the rate is when they reach the
        head, so the backlog gains ``(push - drain) * push / drain * dt`` (not ``push - drain``: that is a
        queue served at the rate in force, the shaper's)."""
        stamped = self.topo.options.queue_model == "bmv2"
        gathered, deepest, slowest = 0.0, math.inf, ()
        left = span_ns
        for share in reads:
            dt, left = min(READ_PERIOD_NS, left), left - READ_PERIOD_NS
            if dt <= 0:
                break
            drain, paces = self.drain(u, v, push, dip=(hop, share))
            if drain < deepest:
                deepest, slowest = drain, paces
            if push <= drain * (1 + 1e-9):
                break  # the window has caught up: v forwards what u sends, and the buffer's peak is behind
            gathered += (push - drain) * (push / drain if stamped and drain > 0 else 1.0) * dt / NS
            if drain <= 0:
                gathered = math.inf
        return gathered, deepest, slowest

    def mix_surge(self, u: str, v: str, before: list[Flow]) -> float | None:
        """How many times the bits of its law's rate u's own queue toward v sends in the first 0.2 s of this
        stretch, if more: u is a switch, whose queue rate is in packets/s from the mean frame it sent over
        the last 0.2 s, so when its frames grow (a larger-frame flow joins, a smaller-frame one stops) it
        sends each of its law's packets/s in frames larger than that mean, until the window has caught up
        (mix-surge-floor.yaml: 200 B frames alone, then 1448 B ones too, 10 Mb/s sent as up to 17.6). A host's
        pacer counts bytes (hosts/sender.py): none there. Means and flows as :meth:`mix_dip`'s."""
        if not self.topo.nodes[u].is_switch:
            return None
        means = self._mix_change((u, v), before)
        if means is None or means[0] <= means[1] * (1 + 1e-9):
            return None
        return _window_share(*means)

    def _mix_change(self, hop: DirectedLink, before: list[Flow] | None) -> tuple[float, float] | None:
        """(the mean frame hop's flows send now, the mean its window starts this stretch from), at equal
        shares of the link in bits. The mean before: that of the flows of the stretch before (``before``)
        that crossed it. A hop that carried none of them (at the run's start, ``before`` None, or a later
        stretch) starts from the largest frame: the window's mean is then its first frames', and the flows
        start a little apart, the largest may come first (mixed-floor-idle-host-late-start.yaml: two flows
        starting together from a host that sent nothing before, S4's window at 1500 B, falling to 832).
        Beside flows the hop already carries, a flow that starts from a host sending nothing yet ramps up
        from its law's start (its share of the mix comes slowly) and is left out; one from a host already
        sending takes its equal share of the pacer at once."""
        then = [flow_frame_bytes(f) for f in before or [] if hop in self.paths[f.name]]
        sending = {f.src for f in before or []}
        now = [flow_frame_bytes(f) for f in self.crossing.get(hop, [])
               if not then or f in (before or []) or f.src in sending]
        if not now:
            return None
        mean = len(now) / sum(1 / b for b in now)
        return mean, (len(then) / sum(1 / b for b in then) if then else max(now))

    def drain(self, u: str, v: str, push: float,
              dip: tuple[DirectedLink, float] | None = None) -> tuple[float, tuple[tuple[str, str], ...]]:
        """What v forwards of the flows u sends it, when u sends ``push``: each unit its share of it (in
        proportion to what its source hands the network), at most what its paths out of v take (links
        shared by several flows counted once per path from v, and a receiver's playout). A group's packet
        leaves v's buffer with its last copy: the group drains at its slowest branch's pace, and every copy
        takes that pace of the links it leaves by, from the unicast flows that share them (S3 -> S6's 1 Mb/s
        counted once for f1 and m0's copies: multicast-copy-shares-link.yaml). Also the groups and the
        receiver of each one's slowest copy."""
        units = self._units(u, v)
        demand = {name: self.demand[name] for name in units}
        total = sum(demand.values())
        share = {name: push * d / total if total > 0 and math.isfinite(total) else
                 (push / len(units) if not math.isfinite(d) or total == 0 else 0.0) for name, d in demand.items()}
        if not math.isfinite(total):
            infinite = [n for n, d in demand.items() if not math.isfinite(d)]
            share = {n: push / len(infinite) if n in infinite else 0.0 for n in demand}
        rest = {f.name: self.paths[f.name][self.paths[f.name].index((u, v)) + 1:] for fs in units.values() for f in fs}
        unicast = [(fs[0], rest[fs[0].name], share[name]) for name, fs in units.items() if fs[0].group is None]
        self._dip = dip
        out = 0.0
        slowest = []
        for name, fs in units.items():
            if fs[0].group is None:
                continue
            paces = [(self._through(v, [(f, rest[f.name], share[name])], math.inf), f.dst) for f in fs]
            pace, dst = min(paces)
            out += pace
            if len(fs) > 1:
                slowest.append((name, dst))
            # every copy leaves at the group's pace: a link a copy takes is that much less for the unicast
            # flows that leave by it too (a group crosses a link once, whatever copies follow it)
            for hop in {hop for f in fs for hop in rest[f.name]}:
                self._taken[hop] = self._taken.get(hop, 0.0) + pace
        out += self._through(v, unicast, math.inf)
        self._dip, self._taken = None, {}
        return out, tuple(slowest)

    def _through(self, node: str, rest: list[tuple[Flow, tuple[DirectedLink, ...], float]], cap: float) -> float:
        ending = [(f, most) for f, hops, most in rest if not hops]
        out = sum(min(f.r_max_bps or math.inf, most) for f, most in ending)
        playout = self.topo.nodes[node].playout_bps
        if ending and playout:
            out = min(out, playout)
        onward: dict[DirectedLink, list[tuple[Flow, tuple[DirectedLink, ...], float]]] = {}
        for f, hops, most in rest:
            if hops:
                onward.setdefault(hops[0], []).append((f, hops[1:], most))
        for (a, b), group in onward.items():
            rate = self.rate(a, b)
            if self._dip is not None and self._dip[0] == (a, b):
                rate = min(rate, self.law_at_change(a, b)) * self._dip[1]
            rate = min(rate, self.held.get((a, b), math.inf))
            rate = max(0.0, rate - self._taken.get((a, b), 0.0))
            out += self._through(b, group, rate)
        return min(out, cap)
