"""Reports that come with packets: a law whose flows reach the reporting buffer slower than one packet per
report interval runs at the packets' gap, not at its interval (topo/analysis/check.py hands it the loops).

Why: alinea.p4 reports v's buffer from u at the first arrival on that port after the interval T has passed
(docs/reference/dataplane.md, "Report generation"; a host's reporter does the same), and report polls are
off by default. When u's flows bring v fewer than one packet per T, v reports once per packet: the law is
sampled at T' = L/λ (λ the packets/s that can reach v from u), and every gain the loop analysis weighed
per interval (a = T/(C·L): a·K_P = 0.15, a·W_min = 0.003 for derived gains) acts with a' = T'/(C·L)
instead. The derived interval is half the loop's delay or 2.5 packets at the *link's* rate
(controlplane/loop_analysis.py, ``derived_interval_s``), so a short link far faster than its flows gets an
interval its reports never keep. The settled loop at T' (``spectral_radius(a', W_min, K_P, d')``, d' the
delay in gaps of T') may be unstable where the one at T is not.

What that costs on BMv2's queues: with a'·K_P near 1, the damping term alone, −K_P·(O(k) − O(k−1)), cuts
the rate by about all of the drain when the buffer gains one packet, and a switch's law stamps that cut
on every packet queued until the next command, which comes a packet's gap later (controlplane/forecast.py:
the schedule bound lets one command stamp up to half its 2 s slack). fuzz-topo seed 5's fail-1
(tests/topo/random_cases/report-gap-multicast.yaml): group m0 at 1 Mb/s over S3 -> S7 (100 Mb/s, 1 ms;
interval 1.56 ms, k_p 42.7 Mb/s on a 37-packet buffer, 1.15 Mb/s per packet), reports every 12 ms. S7's
buffer went 29 -> 30 at 2.786 s; S3's law set 46 kb/s (4 packets/s) for one report gap, and two packets
were stamped 250 ms apart: S3's queue toward S7 sent nothing from 3.056 to 3.558 s but one packet at
3.308 s. S3 frees a group packet's slot when its last copy leaves, so its buffer from S1 (37) filled
with packets whose S6 copies had gone, S6 then got nothing either, and 26 packets were dropped there
(52 lost counting receivers). The same file with the interval at 12 ms, or k_p at 4 Mb/s, loses none.
The analysis at T read the settled root modulus 0.977; at T' = 12 ms (d' = 1) it is 1.085.

So the rule, for a switch's law on BMv2's queues without report polls (a host's pacing applies a cut to
the next packet only; on a shaper a later rate undoes it; polls report every two intervals). λ is the most
that can cross u -> v in packets/s (on the paths the switches hash the flows to, topo/net/routes.py): each
unicast flow at its path's slowest link, its receiver's playout and its R_max (a fixed flow: its rate), each
multicast group once at its tree's rate, their sum at most the law's R_max and the link's rate. The law is warned when, with T' = L/λ longer than T:

* the settled loop at T' is unstable;
* v's buffer can hold a backlog: v forwards less of these flows than u may send (each at the slowest link
  after v, the laws' R_max there, the playout; a group at its slowest copy), so the law settles at O_max;
* either the stall one packet's rise stamps is more than u's buffers fed by a switch hold above their target
  (a switch upstream keeps sending what its own queue has stamped): the cut, K_P/C below λ but no lower
  than the floor and the schedule bound's rate (``schedule_floor_pps``), stamped on the two packets the
  agent expects before its next command, which leave that much later than at λ, while λ keeps arriving;
* or u holds a backlog toward v (its flows can bring u more than v forwards, ``supply_bps``): each rise of
  the law then reaches v's buffer while each cut stops at the floor, and v's buffer creeps to full
  (report-gap-own-buffer-line.yaml: 2 lost by 4 s, 33 by 20 s). A source-limited flow (the group of
  report-gap-multicast.yaml) brings u no more than v forwards: a rise sends nothing more.

An upper bound on λ, so the shortest gap the packets can keep: link-rate events, flows sharing a bottleneck
and flows that start late only lengthen it. Judged on ``python -m tests.topo.fuzz_topo --count 300 --seed 22``:
it warns none of those topologies; on variants of the case (seed 1) with its R_max counting m0 once per
receiver behind a link, as the loader then derived it, it warned two that lost nothing (S3's buffer from S1
at 74 and 200 packets: the buffer sat at 30, not at its target, when the stall came) and missed none that
lost. Derived with the group once (the loader's rule now), those variants lose nothing and it warns none. The case's numbers: ``hbh show`` (T, k_p) and ``hbh run FILE --duration 4s --seed 1``
(laws.csv, links.csv).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from controlplane.forecast import schedule_floor_pps
from controlplane.loop_analysis import Loop, delay_intervals, spectral_radius
from topo.net.model import Flow, Topology
from topo.net.multicast import tree_rate
from topo.net.routes import routed_paths

__all__ = ["SparseReports", "sparse_reports", "with_sparse_reports"]

DirectedLink = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class SparseReports:
    """A law sampled at its packets' gap: the gap, the delay in such gaps, the settled root modulus there."""

    key: DirectedLink
    gap_s: float  # T' = L / λ
    arrivals_bps: float  # λ in b/s
    delay_gaps: int  # d'
    radius: float  # spectral radius of the settled loop at T'
    interval_s: float  # T, the interval the gains were weighed for
    per_packet_bps: float  # K_P / C: the damping term's cut when the buffer gains one packet
    stall_s: float  # how much later than at λ the packets queued before the next command leave after that cut
    room_pkts: float  # the fewest packets one of u's switch-fed buffers holds above its target
    supply_bps: float  # the most the flows can bring u (supply_bps); above what v forwards: u holds a backlog

    @property
    def stalls_upstream(self) -> bool:
        """The cut on a one-packet rise stalls more packets than u's switch-fed buffers hold above target."""
        return self.stall_s / self.gap_s > self.room_pkts  # packets arriving at one per gap meanwhile

    def warning(self) -> str:
        u, v = self.key
        head = (
            f"law {u}->{v}: the loop analysis expects loss or a loop that never settles: {v} reports on "
            f"arrivals, and {u}'s flows reach it at most at {self.arrivals_bps / 1e6:.3g} Mb/s, one packet "
            f"per {self.gap_s * 1e3:.3g} ms, longer than its report interval of {self.interval_s * 1e3:g} ms: "
            f"the law runs at that gap (loop delay {self.delay_gaps} gaps), where its settled loop is "
            f"unstable (root modulus {self.radius:.3f} >= 1): one packet more in {v}'s buffer cuts "
            f"{self.per_packet_bps / 1e6:.3g} Mb/s"
        )
        if self.stalls_upstream:
            why = (f", and on BMv2's queues {u} stamps the cut on the packets queued until its next report, which "
                   f"then leave about {self.stall_s * 1e3:.3g} ms late, while {u}'s buffers fed by a switch hold "
                   f"{self.room_pkts:.3g} packets above their target")
        else:
            why = (f", and {u}'s buffers hold a backlog toward {v} (its flows can bring {u} "
                   f"{self.supply_bps / 1e6:.3g} Mb/s), so each rise of the law reaches {v}'s buffer while each cut "
                   f"stops at the floor: {v}'s buffer swings about its target and creeps to full")
        return f"{head}{why}; a report interval of at least {self.gap_s * 1e3:.3g} ms (alinea.interval) derives gains for it"


def _hops(topo: Topology, f: Flow) -> list[DirectedLink]:
    """The links ``f`` crosses on the path the switches hash it to (topo.net.routes), not ``Flow.path``'s
    tie-break: under ECMP the flows a law carries are those (as topo/net/plan.py's)."""
    path = routed_paths(topo)[f.name]
    return list(zip(path, path[1:]))


def _alone_bps(topo: Topology, f: Flow) -> float:
    """topo.net.multicast's ``branch_rate`` on the routed path: its slowest link, the receiver's playout, the
    flow's R_max (a fixed flow: its rate). A group's branches are never hashed (ECMP refuses groups)."""
    rates = [topo.link_between(a, b).rate_bps for a, b in _hops(topo, f)]
    rates += [r for r in (topo.nodes[f.dst].playout_bps, f.r_max_bps, f.rate_bps) if r]
    return min(rates) if rates else math.inf


def arrivals_bps(topo: Topology, u: str, v: str, law_r_max: float) -> float:
    """The most that can cross u -> v, b/s: each unicast flow at the most its branch carries alone, each
    group once at its tree's rate, at most the law's R_max and the link's rate."""
    total = 0.0
    groups: set[str] = set()
    for f in topo.flows:
        if (u, v) not in _hops(topo, f):
            continue
        if f.group is None:
            total += _alone_bps(topo, f)
        elif f.group not in groups:
            groups.add(f.group)
            total += tree_rate(topo, f.group)[0]
    return min(total, law_r_max, topo.link_between(u, v).rate_bps)


def _flows_sum(topo: Topology, u: str, v: str, rate_of: Callable[[Flow, list[DirectedLink], list[DirectedLink]], float]) -> float:
    """The sum over the flows that cross u -> v of ``rate_of(flow, hops before u -> v, hops after it)``, each
    group once at its slowest member's."""
    total = 0.0
    groups: dict[str, float] = {}
    for f in topo.flows:
        hops = _hops(topo, f)
        if (u, v) not in hops:
            continue
        i = hops.index((u, v))
        rate = rate_of(f, hops[:i], hops[i + 1 :])
        if f.group is None:
            total += rate
        else:
            groups[f.group] = min(groups.get(f.group, rate), rate)
    return total + sum(groups.values())


def supply_bps(topo: Topology, u: str, v: str) -> float:
    """The most the flows that cross u -> v can bring u, b/s: each unicast flow at the slowest link before u
    and its R_max (a fixed flow: its rate), each group once at the slowest of its links before u. More than
    v forwards of them, and u's buffers hold a backlog toward v: each rise of u's law reaches v's buffer."""

    def before(f: Flow, hops: list[DirectedLink], _after: list[DirectedLink]) -> float:
        rates = [topo.link_between(a, b).rate_bps for a, b in hops]
        rates += [r for r in (f.r_max_bps, f.rate_bps) if r]
        return min(rates) if rates else math.inf

    return _flows_sum(topo, u, v, before)


def forwards_bps(topo: Topology, u: str, v: str) -> float:
    """The most v can forward of the flows that cross u -> v, b/s: each unicast flow at the slowest of the
    links after v, the laws' R_max on them and its receiver's playout, each group once at its slowest copy.
    A buffer that u cannot feed faster than that never holds a backlog."""

    def after(f: Flow, _before: list[DirectedLink], rest: list[DirectedLink]) -> float:
        rates = [topo.link_between(a, b).rate_bps for a, b in rest]
        rates += [topo.law[hop].r_max for hop in rest if hop in topo.law]
        if topo.nodes[f.dst].playout_bps:
            rates.append(topo.nodes[f.dst].playout_bps)  # type: ignore[arg-type]
        return min(rates) if rates else math.inf

    return _flows_sum(topo, u, v, after)


#: Packets a cut is stamped on: the agent's bound counts the arrivals over two report gaps (forecast.py).
CUT_PACKETS = 2


def _stall_s(loop: Loop, rate: float, link_bps: float) -> float:
    """How much longer than at ``rate`` the ``CUT_PACKETS`` queued after a one-packet rise take to leave: the
    damping's cut, ``K_P/C``, from ``rate``, no lower than the floor nor the schedule bound's lowest rate."""
    bound = schedule_floor_pps(0, link_bps / loop.packet_bits, 0.0, CUT_PACKETS) or 0.0
    cut = max(loop.law.r_floor, rate - loop.law.k_p / loop.buffer_pkts, bound * loop.packet_bits)
    return CUT_PACKETS * loop.packet_bits * (1 / cut - 1 / rate) if cut < rate else 0.0


def _room_pkts(topo: Topology, u: str, v: str) -> float:
    """The fewest packets any of u's buffers fed by a switch with flows toward v holds above its law's target."""
    rooms = []
    for f in topo.flows:
        hops = _hops(topo, f)
        if (u, v) not in hops or hops.index((u, v)) == 0:
            continue
        t = hops[hops.index((u, v)) - 1][0]
        # a host's law applies its cut to its next packet; a switch's reaches the wire after its own queue
        if topo.nodes[t].kind != "switch":
            continue
        port = topo.ports.get((u, t))
        law = topo.law.get((t, u))
        if port is not None:
            rooms.append((1 - (law.o_max if law is not None else 0.0)) * port.capacity)
    return min(rooms) if rooms else math.inf


def sparse_reports(
    topo: Topology, loops: list[tuple[DirectedLink, Loop, float | None]]
) -> dict[DirectedLink, SparseReports]:
    """The laws of ``loops`` (check.py's ``law_loops``) whose settled loop is unstable at their packets' gap and
    whose cut on a one-packet rise stalls more than the buffers above hold."""
    if topo.options.queue_model != "bmv2" or topo.options.report_polls:
        return {}
    out: dict[DirectedLink, SparseReports] = {}
    for (u, v), loop, _ in loops:
        if topo.nodes[u].kind != "switch":
            continue
        rate = arrivals_bps(topo, u, v, loop.law.r_max)
        if not 0 < rate < math.inf:
            continue
        gap_s = loop.packet_bits / rate
        burst = min(loop.law.r_max, topo.link_between(u, v).rate_bps)
        if gap_s <= loop.interval_s or forwards_bps(topo, u, v) >= burst * (1 - 1e-9):
            continue  # reports keep the interval, or v forwards all u may send: its buffer never holds a backlog
        at_gap = dataclasses.replace(loop, interval_s=gap_s)
        d = delay_intervals(at_gap)
        radius = spectral_radius(at_gap.a, loop.law.w_min, loop.law.k_p, d)
        if radius < 1.0:
            continue
        stall_s = _stall_s(loop, rate, topo.link_between(u, v).rate_bps)
        found = SparseReports((u, v), gap_s, rate, d, radius, loop.interval_s, loop.law.k_p / loop.buffer_pkts,
                              stall_s, _room_pkts(topo, u, v), supply_bps(topo, u, v))
        # the cut stalls the buffers above, or u holds a backlog that each rise sends on (the cut stops at the
        # floor, the rise does not: open-report-gap-own-buffer-line.yaml crept to full)
        if found.stalls_upstream or found.supply_bps > forwards_bps(topo, u, v) * (1 + 1e-9):
            out[(u, v)] = found
    return out


def with_sparse_reports(
    topo: Topology, loops: list[tuple[DirectedLink, Loop, float | None]], warned: list[str]
) -> list[str]:
    """``warned`` (check.py's warnings, one per law) and a warning for each law of :func:`sparse_reports` it
    does not name."""
    named = {w.split(":", 1)[0] for w in warned}
    return warned + [
        s.warning()
        for key, s in sorted(sparse_reports(topo, loops).items())
        if f"law {key[0]}->{key[1]}" not in named
    ]
