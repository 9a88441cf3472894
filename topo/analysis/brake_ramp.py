"""A start-up brake's cut that the sources' ramp overruns: u's buffer from t fills before t's law can act on it
(topo/analysis/check.py hands it the loops).

Why: every switch law starts at its R_max while the hosts' laws ramp their flows up, one step of W·(O − O(k)) a
report (controlplane/alinea.py, the paper's start-up). Where a switch x past u's next hop v sends faster than the
path behind its own next hop y forwards them (its R_max or its link above check.py's ``path_drain``), y's buffer
gathers bunches of packets and x's start-up brake cuts its law to the drain it measures plus the room
(controlplane/forecast.py, ``QueueForecast.law_forecast``); x's buffers then gain what x no longer sends, and the
brake of each switch before x cuts in turn, up the line to u's law toward v. Each cut is to a drain, what u sent
over a window that ends a loop's delay ago. Even a cut to exactly what reaches u when it cuts (the floor
``Forecast.arrival_bps`` puts under a cut on a guess) leaves the ramp bringing u more: its slope s less what u's
own law climbs back (at most W_max at O_min a report: W halves at each rise of O), s'. u's buffer from t gains
that rise until t's law acts on a report of it: a report interval of t's law (u reports at the first arrival
after it) and the loop's delay (check.py's ``loop_delay_s``), D. So it gains ``∫₀ᴰ min(s'·τ, R) dτ`` bits, R the
rise left to come when u's law can first cut (what can cross t -> u less the ramp over one report interval and
the loop's delay of u's law: a host whose ramp is a step has reached its rate by then, and a cut to what reaches
u holds it), and the law t -> u is warned when that is more than the buffer holds above the one packet it holds
while starved.

Seen in tests/topo/random_cases/brake-guess-small-buffers-line.yaml (tests.topo.fuzz_topo --count 2000 --seed
7, fail-3): H1's law ramps ~0.16 Mb/s a ms down six switches of 100 Mb/s links with 21-packet buffers of 200 B
frames; S3's law (R_max 200 Mb/s) brakes on S4's 100 Mb/s exit, S2's on S3's buffer, and at seed 1 S2 cut to 57.9
Mb/s while H1's ramp brought it 64 and more; S1's law, reporting every 10.5 ms across a 10 ms link, could not act
before S2's buffer from S1 (32 kbit) overflowed: 195, 100 and 144 packets lost at seeds 1-3 (the rule: 82 kbit
gained in D = 31.5 ms). brake-guess-ramp-line.yaml is the same line with 5 ms buffers (62 packets of 200 B frames,
99 kbit): 46 lost at seed 2 (the rule: 315 kbit); at seeds 1 and 3 the cuts that came were guesses, held at the
arrivals, and nothing was lost: warned, as the rule cannot tell a guess before the run. Not modelled: whether a
cut is a guess, the host's starting rate (the ramp is counted from zero) and u's climb back from a guess at the
brake's pace (controlplane/alinea.py, ``braked_from``), faster than its W; each errs toward a warning. On every
random case file (seeds 1-3) and shipped topology, it warns no other law that the other rules do not already.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from controlplane.loop_analysis import Loop
from topo.analysis.report_gap import supply_bps
from topo.net.model import Topology
from topo.net.routes import routed_paths

__all__ = ["BrakeRamp", "brake_ramps", "with_brake_ramps"]

DirectedLink = tuple[str, str]
#: What the path behind a law's next hop forwards of its flows, b/s (check.py's ``path_drain``, handed in: check.py
#: imports this module).
Drain = Callable[[Topology, str, str], float]


@dataclass(frozen=True)
class BrakeRamp:
    """u's buffer from t (``key``: t's law toward u) overrun by the ramp after u's brake cuts toward ``onward``."""

    key: DirectedLink
    onward: str  # v: u's law toward v brakes
    root: DirectedLink  # the first law past u -> v that sends faster than the path behind its next hop forwards
    hosts: tuple[str, ...]  # the hosts whose laws ramp the flows
    ramp_bps_s: float  # s': the hosts' ramp less u's own climb, b/s per s
    rise_bps: float  # R: the rise left to come when u's law can first cut, b/s
    react_s: float  # D: t's report interval and its loop's delay
    interval_s: float  # t's report interval at u
    gained_bits: float
    room_bits: float
    packet_bits: int  # t's frame, as its law counts u's buffer

    def warning(self) -> str:
        (t, u), v, (x, y) = self.key, self.onward, self.root
        need = math.ceil(self.gained_bits / self.packet_bits) + 1
        return (f"law {t}->{u}: the loop analysis expects loss or a loop that never settles: the switches start at "
                f"their R_max while {', '.join(self.hosts)} ramp{'s' if len(self.hosts) == 1 else ''} the flows up "
                f"({self.ramp_bps_s / 1e9:.3g} Mb/s a ms beyond what {u}'s law climbs back); {x} sends faster than "
                f"what passes {y} forwards, so its start-up brake cuts on the packets that gather there, and each "
                f"switch's brake before it, {u}'s toward {v} among them, cuts to the drain it measures, what it sent: "
                f"the ramp then brings {u} more than it sends, up to {self.rise_bps / 1e6:.3g} Mb/s more, and over "
                f"the {self.react_s * 1e3:.3g} ms before {t}'s law can act on {u}'s report (its report interval, "
                f"{self.interval_s * 1e3:.3g} ms, and the loop's delay) {u}'s buffer from {t} gains "
                f"{self.gained_bits / 1e3:.3g} kbit, more than the {self.room_bits / 1e3:.3g} kbit it holds; a "
                f"buffer of at least {need} packets would hold it")


def _gained_bits(slope: float, rise: float, span_s: float) -> float:
    """∫₀^span min(slope·τ, rise) dτ: the excess grows with the ramp until the rise left is spent."""
    if slope <= 0 or rise <= 0:
        return 0.0
    full_s = rise / slope
    if span_s <= full_s:
        return slope * span_s * span_s / 2
    return rise * full_s / 2 + rise * (span_s - full_s)


def _sends_faster(topo: Topology, x: str, y: str, drain: Drain) -> bool:
    """x's law toward y starts faster than the path behind y forwards its flows (``drain``: check.py's
    ``path_drain``): y's buffer gathers packets."""
    law = topo.law.get((x, y))
    if law is None or topo.nodes[x].kind != "switch":
        return False
    return min(law.r_max, topo.link_between(x, y).rate_bps) > drain(topo, x, y) * (1 + 1e-9)


def _ramp_bps_s(loops: dict[DirectedLink, Loop], hosts: set[DirectedLink]) -> float:
    """The most the host laws ``hosts`` raise their rates per second while their buffers read starved: W_max times
    O_min less the packet that sends the report, once per report interval."""
    total = 0.0
    for key in hosts:
        loop = loops.get(key)
        if loop is not None and loop.interval_s > 0:
            total += loop.law.w_max * max(0.0, loop.law.o_min - 1 / loop.buffer_pkts) / loop.interval_s
    return total


def _onward(topo: Topology, t: str, u: str, drain: Drain) -> dict[str, tuple[DirectedLink, set[DirectedLink]]]:
    """v -> (the first law past u -> v that sends faster than its path forwards, the host laws that ramp the
    ALINEA flows crossing t -> u -> v) for the v whose path holds such a law: its brake's cut reaches u's law
    toward v through v's buffer."""
    out: dict[str, tuple[DirectedLink, set[DirectedLink]]] = {}
    paths = routed_paths(topo)
    for f in topo.flows:
        path = paths[f.name]
        hops = list(zip(path, path[1:]))
        if f.control != "alinea" or (t, u) not in hops or topo.nodes[path[0]].kind != "host":
            continue
        rest = hops[hops.index((t, u)) + 1:]
        root = next((hop for hop in rest[1:] if _sends_faster(topo, *hop, drain)), None)
        if root is None or rest[0] not in topo.law:
            continue
        _, hosts = out.setdefault(rest[0][1], (root, set()))
        hosts.add(hops[0])
    return out


def _overrun(topo: Topology, key: DirectedLink, loops: dict[DirectedLink, Loop], drain: Drain) -> BrakeRamp | None:
    """The most u's buffer from t (``key``) gains over the ramp after a cut of u's law toward any v, if more than
    it holds; None otherwise."""
    (t, u), loop = key, loops[key]
    reach = min(supply_bps(topo, t, u), topo.link_between(t, u).rate_bps, loop.law.r_max)
    react_s = loop.interval_s + loop.delay_s
    room = (loop.buffer_pkts - 1) * loop.packet_bits
    found: BrakeRamp | None = None
    for v, (root, hosts) in sorted(_onward(topo, t, u, drain).items()):
        onward = loops.get((u, v))
        if onward is None or onward.interval_s <= 0:
            continue
        ramp = _ramp_bps_s(loops, hosts)
        slope = ramp - onward.law.w_max * onward.law.o_min / onward.interval_s  # u's own climb back, at most
        rise = reach - ramp * (onward.interval_s + onward.delay_s)  # spent before u's law can first cut
        gained = _gained_bits(slope, rise, react_s)
        if gained > room and (found is None or gained > found.gained_bits):
            found = BrakeRamp(key, v, root, tuple(sorted(h for h, _ in hosts)), slope, rise, react_s,
                              loop.interval_s, gained, room, loop.packet_bits)
    return found


def brake_ramps(topo: Topology, loops: list[tuple[DirectedLink, Loop, float | None]],
                drain: Drain) -> dict[DirectedLink, BrakeRamp]:
    """The laws t -> u of ``loops`` (check.py's ``law_loops``; ``drain``: its ``path_drain``) whose buffer at u
    the ramp overruns after u's brake cuts (the module's docstring). On BMv2's queues only: a switch's brake acts
    through its forecast, which it does not run on a shaper's queues."""
    if topo.options.queue_model != "bmv2":
        return {}
    by_key = {key: loop for key, loop, _ in loops}
    found = {key: _overrun(topo, key, by_key, drain) for key in by_key if topo.nodes[key[1]].kind == "switch"}
    return {key: b for key, b in found.items() if b is not None}


def with_brake_ramps(
    topo: Topology, loops: list[tuple[DirectedLink, Loop, float | None]], warned: list[str], drain: Drain
) -> list[str]:
    """``warned`` and a warning for each law of :func:`brake_ramps` it does not name."""
    named = {w.split(":", 1)[0] for w in warned}
    found = sorted(brake_ramps(topo, loops, drain).items())
    return warned + [b.warning() for key, b in found if f"law {key[0]}->{key[1]}" not in named]
