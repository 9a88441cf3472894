"""Forecast of a downstream buffer for a hop whose rate reaches the wire late (BMv2's queues).

BMv2 fixes a packet's departure when it is queued: ``max(now, last_sent + 1/rate)``. A rate the
agent sets now therefore spaces only the packets queued from now on, and they leave after every
packet already queued: the rate reaches the downstream buffer after the horizon
``h = last_sent − now`` (about ``Q / r``, 0.6-1 s at the paper's targets). Until then the
downstream buffer receives exactly the ``Q`` packets already queued, whatever the agent does. So
the occupancy it will have when a rate set now arrives there is forecast as (a Smith predictor
on the known part of the future)::

    Ô = O(k) + Q − μ·h

with ``μ`` the buffer's drain of this hop's packets, and no less than the excess of every newest part of
the queued packets over what drains while they arrive: the buffer never goes below empty, so where a hole
in the queue's schedule (packets stamped slower than the drain) empties it, the drain it misses there is
not taken off the packets stamped behind the hole (``_committed_pkts``). Everything comes from what the
agent can know on BMv2:

* ``Q`` and this hop's departures: two wrapping counters that alinea.p4 keeps per egress port and
  copies into the packet-in of every report arriving on that port (``fwd_pkts``: IPv4 packets
  routed to the port; ``deq_pkts``: those that have left its queue; docs/reference/wire-format.md);
* ``h``: ``last_sent`` rebuilt as BMv2 builds it: a ledger of the queued packets' spacings, each
  report's arrivals (the growth of ``fwd_pkts``) at the rate the agent had set meanwhile, from
  which each report's departures (the growth of ``deq_pkts``) are taken off the front. An estimate
  that only added arrivals (``last_sent += arrivals / r``) drifted: every error (a rate applied
  later than set, a packet queued while the queue was idle) stayed in it for good, and at 100 Mb/s
  with 0.1 ms links it read 48 ms for 140 packets at 8,700 packets/s (16 ms), forecast the
  downstream buffer empty while it was full, and lost 1,939 packets;
* ``μ``: the downstream buffer's departures of this hop's packets over the last ``h``: from the
  report's own ``drained`` count and the time its last packet left (``drained_ts``), exact, or
  without them (a version-1 reporter) ``Δdeq_pkts − ΔO(k)`` between reports, a packet off at either
  end (the packets in flight between the two counters). Over the last ``h`` (at most ``DRAIN_WINDOW_S``, at least ``DRAIN_WINDOW_MIN_S``);
  when the short window (``DRAIN_SHORT_PKTS`` of the drain, at least one report gap and
  ``DRAIN_SHORT_S``) falls below that by more than ``DRAIN_SHIFT_PPS`` and ``DRAIN_SHIFT_PKTS``
  over the window (a capacity drop downstream, not noise) the short window is used. Only a fall:
  on real links the packets in flight between this hop's departures and the buffer's arrivals
  make the short window noisy, and a spike upward would send the queue's schedule at the spike's rate (seen in netns).
  With the exact drain the short window is the newest ``DRAIN_FALL_PKTS`` departures and a fall
  counts once it exceeds the spread of the window's earlier drains: at high rates a capacity drop
  downstream shows at the first report after it, where the counts needed the buffer to gain
  packets first (docs/background/alinea.md, "The drain, exactly").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from controlplane.alinea import Brake, Forecast

__all__ = ["QueueForecast", "DRAIN_WINDOW_S", "DRAIN_WINDOW_MIN_S", "DRAIN_SHORT_S", "DRAIN_SHIFT_PPS",
           "DRAIN_SHIFT_PKTS", "DRAIN_SHIFT_SHARE", "SCHEDULE_BOUND_S", "schedule_floor_pps", "BRAKE_GAPS",
           "drain_noise", "NEWEST_PKTS", "WINDOW_COMPACT", "round_even"]

COUNTER_MASK: Final = (1 << 32) - 1
NS: Final = 1_000_000_000
#: Longest window of the drain estimate, s (and the shortest).
DRAIN_WINDOW_S: Final = 1.0
DRAIN_WINDOW_MIN_S: Final = 0.1
#: The short window: long enough for DRAIN_SHORT_PKTS of the drain, at most DRAIN_SHORT_S and at
#: least DRAIN_SHORT_GAPS report gaps; and the difference from the long one, packets/s, that makes
#: it the estimate. In packets, because a capacity drop fills the buffer's headroom in a time that
#: shrinks with the rate: at 100 Mb/s the paper's 60 packets of headroom last 5 report intervals
#: after a drop from 60 to 50 Mb/s, and a window of 3 gaps, two of them from before the drop, read
#: 57.7 Mb/s on the first report after it: the hop upstream cut too little (32 packets lost).
DRAIN_SHORT_S: Final = 0.2
DRAIN_SHORT_PKTS: Final = 50
DRAIN_SHORT_GAPS: Final = 1
DRAIN_SHIFT_PPS: Final = 8.0
#: ... and at least this many packets over the short window (8 packets/s over 0.2 s: the same at
#: the paper's rates): the count of a short window is noisy by a packet at its ends, and with 8
#: packets/s alone a one-gap window at 100 Mb/s fell "below" the long one on noise, every other
#: report: the drain read low and held H2 (paper-1router at x50) 8 packets under its target.
DRAIN_SHIFT_PKTS: Final = 1.6
#: With the exact drain, the share of the long window's drain a fall must exceed: the drain of one
#: port's packets from a buffer that other ports share comes in bunches (their packets interleave).
DRAIN_SHIFT_SHARE: Final = 0.05
#: ... and this many times the spread of the window's earlier drains (their noise, read from
#: successive differences: see ``drain_noise``), of which it needs DRAIN_SPREAD_GAPS.
DRAIN_SHIFT_SIGMAS: Final = 3.0
DRAIN_SPREAD_GAPS: Final = 4
#: Departures a drain is read over (the short window and each stretch of the spread).
DRAIN_FALL_PKTS: Final = 8
#: A fall of the drain is expected to last this many times as long again as it has lasted so far
#: (the median of a duration known only to have lasted so long, if its scale is unknown).
FALL_PERSISTENCE: Final = 1.0
#: No rate command may stamp more than this much schedule beyond what the link itself would take
#: to send the queued packets (s): a cut cannot be undone on BMv2, so it must not freeze the queue.
SCHEDULE_BOUND_S: Final = 2.0
#: The share of the schedule's slack one rate command may use.
COMMAND_SHARE: Final = 0.5
#: Smoothing time of the arrival rate and the report gap, s; the shortest gap assumed, s.
ARRIVAL_SMOOTH_S: Final = 0.1
MIN_GAP_S: Final = 0.01
#: How long the longest reception gap is remembered (it decays with this time constant, s), and
#: the margin on it for the next command's own latency.
SLOW_GAP_MEMORY_S: Final = 2.0
SLOW_GAP_MARGIN: Final = 1.5
#: The start-up brake's approach time, in report gaps (docs/background/alinea.md, "Start-up brake").
BRAKE_GAPS: Final = 6
#: The newest drain (``newest_pps``) is read over the newest stretch that holds this many departures:
#: two spacings, the fewest in which a capacity drop downstream shows at the paper's rates before the
#: buffer has gained a packet (docs/background/alinea.md, "The newest drain"). The law follows it for one report
#: at a time, bounded, and never extrapolates it over the horizon.
NEWEST_PKTS: Final = 2
#: A downstream buffer at or below this many packets is starved (its drain is our sending rate). While the
#: drain's window holds a report that found it so, the drain is a lower bound of what the buffer takes
#: (``QueueForecast.law_forecast``; docs/background/alinea.md, "Start-up brake").
IDLE_PKTS: Final = 1
#: ``QueueForecast._tail_spacing`` when no empty entry follows the ledger's last (a spacing is never negative).
NO_SPACING: Final = -1.0
#: ``QueueForecast._stretch_starts`` of an entry whose stretch has not been asked for yet (-1 is "none").
UNREAD: Final = -2
#: Entries out of the drain's window are deleted from its list once there are this many, and half of it.
WINDOW_COMPACT: Final = 64


def drain_noise(rates: list[float]) -> float:
    """The noise of successive drain readings, from their successive differences (von Neumann's
    mean square successive difference: ``sqrt(mean((x[i] - x[i+1])**2) / 2)``, the standard
    deviation for independent readings around a constant mean).

    Why not their standard deviation: at start-up the drain the window holds is a trend, not noise
    (the hop downstream ramps at its R_max, then is cut as the buffer behind it fills), and a
    trend is spread. Read as noise, it hid the fall of the drain from the gate: at 100 Mb/s with
    1 ms links R1 kept reading R2's drain at R2's R_max while R2 was cut, and R2's buffer
    overflowed (paper-5router x50 in docs/map.md lost 192 packets; 0 with the successive
    differences). A trend moves successive readings little; noise moves them as much as ever."""
    if len(rates) < 2:
        return 0.0
    # sum((a - b) ** 2 for a, b in zip(rates, rates[1:])) written out: the same squares added in the same
    # order from 0.0 (Python 3.11's sum of floats), without a generator and a copy of the list per call
    # (a candidate fall of the loop analysis's fluid model asks it over a window of ~150 stretches); each
    # square as math.pow(d, 2.0), the C pow that float's ** calls (of |d|: the same square), which the
    # compiled module calls directly where ``d ** 2`` went through the interpreter's number protocol
    total = 0.0
    before = rates[0]
    for i in range(1, len(rates)):
        now = rates[i]
        total += math.pow(before - now, 2.0)
        before = now
    return math.sqrt(total / (2 * (len(rates) - 1)))


def round_even(x: float) -> int:
    """``round(x)`` of a float: the nearest whole number, a half to the even one.

    Why not the builtin: compiled, ``round`` is looked up in the builtins and called through the interpreter
    with the float boxed, twice per report of a switch's law in the loop analysis's fluid model (its
    forecast's occupancy and its queue rate, controlplane/agent.py ``rate_to_pps``; issue 46). ``x - floor(x)``
    is exact (a float's fraction below 1), so the comparisons with 0.5 are exact too."""
    whole = math.floor(x)
    rest = x - whole
    return whole + 1 if rest > 0.5 or (rest == 0.5 and whole % 2 == 1) else whole


def schedule_floor_pps(queued: int, link_pps: float, horizon_s: float = 0.0, arrivals: float = 1.0,
                       bound_s: float = SCHEDULE_BOUND_S) -> float | None:
    """Lowest rate (packets/s) that keeps the queue's schedule within ``bound_s`` of what the link
    needs once the ``arrivals`` expected before the next command are stamped behind the current
    ``horizon_s``: ``h + n/r <= (Q + n)/link + bound``, and that lets one command take only
    ``COMMAND_SHARE`` of the slack left (the next command may come late: a slow control channel
    stamps more arrivals than expected). Returns ``None`` when the schedule already runs past the
    bound (the caller chooses: any spacing extends it)."""
    if link_pps <= 0:
        return 0.0
    n = arrivals if arrivals > 1.0 else 1.0  # max(1.0, arrivals), without a builtin call
    slack = (queued + n) / link_pps + bound_s - horizon_s
    if slack <= n / link_pps:
        return None
    return n / (n / link_pps + (slack - n / link_pps) * COMMAND_SHARE)


class _PathNode:
    """A stretch of the exact drain in ``_TrendSums``: the one ending at its entry, and the sums of the least-squares
    fit over it and the stretches before it, back to its chain's root (a stretch that began before the window)."""

    def __init__(self, parent: int, depth: int, flat: int, jump: int, x: int, xx: int, r: float, xr: float,
                 dd: float) -> None:
        self.parent = parent  # the entry its stretch starts at (list index; -1: a root, whose stretch is not counted)
        self.depth = depth  # stretches counted from the root to it (0: the root)
        self.flat = flat  # the depth where the run of stretches with its drain (the same float) ending at it begins
        self.jump = jump  # an older entry of its chain, for the search of the window's oldest stretch (see below)
        # the sums over the counted stretches up to it: x, each stretch's midpoint as the sum of its two ends' times
        # less twice _TrendSums.ref_ns (ns, exact integers), x², the drain r less _TrendSums.ref_pps, x·r, and the
        # square of the drain's difference from the stretch before's
        self.x = x
        self.xx = xx
        self.r = r
        self.xr = xr
        self.dd = dd


class _TrendSums:
    """The least-squares line of ``QueueForecast._follow_trend`` without its walk over the window's stretches.

    The stretches a report reads end at its newest entry, each starting where the one before it ends: a chain
    along ``QueueForecast._start_of`` back to the window's start. Successive reports read different chains (at
    1 Gb/s with reports every 20 µs the DRAIN_FALL_PKTS departures of a stretch span ~4 reports: ~4 interleaved
    chains, which join where a report brought no departure), so the sums are kept per entry, from its chain's root
    to it, each set once from those of the entry its stretch starts at. A chain's sums over the window are the newest
    entry's less those of the entry where the window's oldest stretch starts, found by Myers's jump pointers
    (E. W. Myers, "An applicative random-access stack", 1983): O(log n) steps for n stretches, where the walk took n
    at every report (paper-5router at 1 Gb/s, reports every 20 µs: ~940 stretches over ~3,800 entries, the median
    of its fits in tests/bench/sim_bench.py's 0.4 s run of that row). Times are integer ns from ``ref_ns``, the
    window's start when the entries before it were last deleted (every sum is then set again from there): the sums
    of times are exact and the others span a few windows, so the line is the walk's to rounding
    (tests/controlplane/test_drain_trend.py)."""

    def __init__(self) -> None:
        self.nodes: list[_PathNode | None] = []  # beside QueueForecast._hist: None until a fit needs it
        # times are summed from ref_ns and drains from ref_pps (the window's start and drain when the sums were set
        # last): the sums of x·r then hold neither a drain times a long time nor a time times a high drain
        self.ref_ns = 0
        self.ref_pps = 0.0

    def line(self, f: QueueForecast, end: int) -> tuple[int, float, float, float, float] | None:
        """The line through the window's stretches before ``hist[end]`` (their drains at their midpoints): their
        number, the slope (packets/s per s), the sum of the squared deviations of their midpoints from their mean
        (s²), the noise of successive drains (``drain_noise``) and the line's value at ``hist[end]``'s time; None
        with fewer than ``DRAIN_SPREAD_GAPS + 1`` stretches. ``_follow_trend``'s walk computed the same, up to
        rounding."""
        first, nodes = f._first, self.nodes
        newest = self._node(f, end)
        if newest.parent < first:
            return None
        node = newest  # the oldest stretch within the window: the oldest node of the chain whose parent is in it
        while True:
            parent = nodes[node.parent]
            if parent is None or parent.parent < first:
                break
            jumped = nodes[node.jump]
            node = jumped if jumped is not None and jumped.parent >= first else parent
        n = newest.depth - node.depth + 1
        if n < DRAIN_SPREAD_GAPS + 1:
            return None
        base = nodes[node.parent]
        assert base is not None
        sx, sr = newest.x - base.x, newest.r - base.r  # sr: the drains less ref_pps
        spread_ns2 = n * (newest.xx - base.xx) - sx * sx  # n² times the variance of x: exact
        if spread_ns2 <= 0:
            return None
        sxx = spread_ns2 / (n * 4 * NS * NS)  # s² (a midpoint is x / 2 ns)
        if newest.flat <= node.depth:
            # one drain across the window: a flat line, exactly (the sums would give a slope of rounding, which a
            # noise of 0 does not hide: a paced drain of 625 packets/s read as a fall)
            return n, 0.0, sxx, 0.0, f._stretch_rates[end]
        slope = (newest.xr - base.xr - sx * sr / n) / (2 * NS) / sxx
        dd = newest.dd - node.dd
        noise = math.sqrt((dd if dd > 0.0 else 0.0) / (2 * (n - 1)))
        now = self.ref_pps + sr / n + slope * ((2 * n * (f._hist[end][0] - self.ref_ns) - sx) / (2 * n * NS))
        return n, slope, sxx, noise, now

    def _node(self, f: QueueForecast, end: int) -> _PathNode:
        """The node of ``hist[end]``, with those of its chain back to one already set or to the window's start."""
        nodes = self.nodes
        if not nodes:
            self.ref_ns, self.ref_pps = f._hist[f._first][0], f.window_pps
        while len(nodes) < len(f._hist):
            nodes.append(None)
        known = nodes[end]
        if known is not None:
            return known
        chain: list[int] = []
        i = end
        while True:
            chain.append(i)
            start = f._start_of(i)
            if start < f._first or nodes[start] is not None:
                break
            i = start
        for k in range(len(chain) - 1, -1, -1):
            i = chain[k]
            start = f._start_of(i)
            nodes[i] = self._grow(f, i, start if start >= f._first else -1)
        return nodes[end]  # type: ignore[return-value]

    def _grow(self, f: QueueForecast, i: int, start: int) -> _PathNode:
        """The node of ``hist[i]``, whose stretch starts at ``hist[start]`` (-1: before the window, a root)."""
        if start < 0:
            return _PathNode(-1, 0, 0, i, 0, 0, 0.0, 0.0, 0.0)
        nodes, rates = self.nodes, f._stretch_rates
        parent = nodes[start]
        assert parent is not None
        x = f._hist[start][0] + f._hist[i][0] - 2 * self.ref_ns
        rate = rates[i]
        d = rate - rates[start] if parent.depth > 0 else 0.0
        r = rate - self.ref_pps
        up = nodes[parent.jump]
        assert up is not None
        further = nodes[up.jump]
        assert further is not None
        # Myers's rule: jump twice as far as the parent's jump when it and the jump's own are the same length
        jump = up.jump if parent.depth - up.depth == up.depth - further.depth else start
        flat = parent.flat if parent.depth > 0 and d == 0.0 else parent.depth + 1
        return _PathNode(start, parent.depth + 1, flat, jump, parent.x + x, parent.xx + x * x, parent.r + r,
                         parent.xr + x * r, parent.dd + d * d)

    def drop(self, f: QueueForecast, count: int) -> None:
        """``f`` deleted the oldest ``count`` entries of its list: the nodes set are set again, from its new
        first entry's time, chains rooted in the window (what the sums span stays a few windows)."""
        kept = self.nodes[count:]
        if not kept:
            self.nodes = kept
            return
        self.nodes = [None] * len(kept)
        self.ref_ns, self.ref_pps = f._hist[0][0], f.window_pps
        for i in range(len(kept)):
            node = kept[i]
            if node is not None:
                self.nodes[i] = self._grow(f, i, node.parent - count if node.parent >= count else -1)


@dataclass
class QueueForecast:
    """One regulated egress port: its queue's horizon and the downstream buffer's forecast."""

    t_ns: int | None = None
    fwd: int = 0
    deq: int = 0
    occupancy: int = 0
    queued: int = 0  # Q, packets
    last_sent_ns: int = 0  # BMv2's last_sent, as rebuilt
    horizon_s: float = 0.0  # h
    drain_pps: float = 0.0  # μ, measured
    expected_pps: float = 0.0  # the mean drain expected over the horizon (μ, unless in a fall)
    forecast_pkts: float = 0.0  # Ô, packets
    newest_pps: float = 0.0  # the exact drain over the newest NEWEST_PKTS departures (0: none, or starved)
    arrival_pps: float = 0.0  # packets routed to this hop's queue per second (smoothed)
    gap_s: float = 0.0  # time between reports (smoothed)
    last_gap_s: float = 0.0  # the last gap between reports, on the reporter's clock
    slow_gap_s: float = 0.0  # the longest recent gap between reports as the agent received them
    _usual_gap_s: float = 0.0
    _recv_ns: int | None = None
    _drained: int = 0  # cumulative departures of this hop's packets from the downstream buffer
    _reported: int | None = None  # the reporter's last ``drained`` count (exact drain), wrapping
    _exact: bool = False  # the reports carry the drain (their hist times are departure times)
    _falling: bool = False  # the exact drain's fall is followed
    _fall_start_ns: int = 0  # when the fall followed began (the start of its first stretch)
    _trend_pps: float = 0.0  # the drain a steady fall's trend gave at this report, outside a fall (0: none followed)
    _before_pps: float = 0.0  # ... at the report before the fall followed began (0: none): its drain before
    # The ledger, oldest first: packets and the spacing (ns) each report's arrivals were queued with,
    # and their product (the time they take: a column of its own, so that the schedule is one C-level
    # sum of floats, each computed once, where a sum of products made ~50 float objects per report);
    # and the packets' total (exact: integers).
    # Lists, not deques, though their oldest leave first: the compiled module indexes a list
    # natively and a deque through the interpreter's protocol, and they hold tens of entries.
    # Reports with no arrivals add nothing to the schedule: the ledger keeps only the entries with
    # packets (a fluid model's 1 ms reports at a few packets a second are mostly empty: three
    # quarters of a fabric's ledger, summed at every report). What the empty ones left is where the
    # ledger's oldest spacing comes from (a count that outgrows the ledger is spaced at it): _leads[i]
    # is the spacing of the oldest entry after entry i - 1, empty or not (entry i's own if none
    # empty came between), _tail_spacing that of the oldest empty entry after the last (NO_SPACING:
    # none). The same schedule, to the bit: an empty entry's product is 0.0, and adding 0.0 to a sum
    # of non-negative floats leaves it as it is.
    # The ledger is the lists' entries from _ledger_first on: the entries whose packets have left stay
    # until they are half of the lists and WINDOW_COMPACT or more, then go at once (as _hist's: a deletion
    # at the front per report moved the whole ledger). _fold is the sum of _products[_ledger_first:_folded]
    # as _schedule_ns adds them (-1: none): while no packet leaves (a queue behind another's, as in the
    # head-of-line fabric: two thirds of its reports), the oldest entries stay as they were and the sum goes
    # on from it over the entries appended since, the same floats added in the same order.
    _counts: list[int] = field(default_factory=list)
    _spacings: list[float] = field(default_factory=list)
    _products: list[float] = field(default_factory=list)
    _leads: list[float] = field(default_factory=list)
    _tail_spacing: float = NO_SPACING
    _stamped: int = 0
    _ledger_first: int = 0
    _fold: float = 0.0
    _folded: int = -1
    # The drain's window is _hist[_first:], oldest first: entries that leave it stay in the list
    # until they are half of it, then go at once (one move of the rest, where a deletion per report
    # moved the whole window: at 1 Gb/s it holds tens of thousands). Indices below are the list's.
    _hist: list[tuple[int, int]] = field(default_factory=list)
    _first: int = 0
    # For each entry of _hist: the stretch of the exact drain ending there (_chunk_rates), UNREAD
    # until asked: the absolute number (entries deleted from the list so far + index) of the entry
    # it starts at (-1: none), and beside it the drain over it; and how many entries were deleted.
    # Two lists, not one of pairs: every walk along the stretches reads the starts (~150 a candidate
    # fall of the loop analysis's model), and a pair a report was a tuple and a float to make and free.
    _stretch_starts: list[int] = field(default_factory=list)
    _stretch_rates: list[float] = field(default_factory=list)
    _popped: int = 0
    # The absolute number of the oldest entry from which _hist is in order (neither its times nor
    # its departures ever fall from an entry to the next): where _stretch may start from the stretch before.
    _ordered_from: int = 0
    _timed_from: int = 0  # ... and the oldest from which its times are (the short window's walk)
    _starved_ns: int = -1  # the newest report that found the buffer starved (reporter's clock; -1: none)
    starved_in_window: bool = False  # ... within the drain window's length of this report
    gap_pps: float = 0.0  # the exact drain over the newest report gap: between its two newest departures seen (0: none)
    window_pps: float = 0.0  # the drain over the whole window, before a fall replaced it (drain_pps otherwise)
    gap_arrival_pps: float = 0.0  # this hop's arrivals toward the buffer (at its queue) over the newest report gap, packets/s
    sent_pps: float = 0.0  # this hop's departures toward the buffer over the newest report gap, packets/s (0: none yet)
    report_gap_s: float = 0.0  # the newest report gap on the reporter's clock, s (0: none yet)
    # what reached the buffer over the newest report gap, packets: its occupancy's change plus its departures (exact,
    # or without them this hop's departures, ``sent``); all of it this hop's packets, stamped a horizon before
    gap_arrived: int = 0
    passing: bool = False  # the buffer holds no more than this hop sent it since the last report (see _lower_bound_pps)
    follows_trend: bool = True  # a steady fall of the exact drain is followed (``_follow_trend``; not in the fluid model)
    counts_stamps: bool = True  # a starved report counts the queue's stamps (``_starved_forecast``; not in the fluid model)
    # The drain while the buffer held a backlog (see _note_backlog_drain): the newest report gaps that began and
    # ended on more than IDLE_PKTS packets, oldest first, departures, the departures' sum; and their drain (0: none).
    # The gaps are the lists' entries from _busy_first on: older ones stay until they are half of the lists and
    # WINDOW_COMPACT or more, then go at once (as _hist's; deleting one per report moved every list's whole length).
    _busy_pkts: list[int] = field(default_factory=list)
    _busy_pkts_sum: int = 0
    _busy_from: list[int] = field(default_factory=list)  # when each of those gaps began (the reporter's clock)
    _busy_first: int = 0
    # For ``_busy_since``: per gap, the departures and ns (report to report) of every gap noted before it (all since
    # the start: integers, exact), and their running totals; and the list index from which ``_busy_from`` never falls
    # (the gaps' starts are the reports' times, in order unless the reporter's clock went back)
    _busy_pkts_before: list[int] = field(default_factory=list)
    _busy_ns_before: list[int] = field(default_factory=list)
    _busy_pkts_total: int = 0
    _busy_ns_total: int = 0
    _busy_sorted: int = 0
    _busy_at: int = 0  # where the last search found the window's first gap (a hint: checked before it is taken)
    _busy_spans: list[int] = field(default_factory=list)  # ... each timed by its departures (see _note_backlog_drain)
    _busy_spans_sum: int = 0
    _busy_end_ns: int = -1  # where the newest of those spans ended (-1: none)
    busy_pps: float = 0.0
    # The newest departures, (time, departures so far) of the reports that saw some, oldest first: as few as hold
    # DRAIN_SHORT_PKTS departures (kept only where a starved report counts the stamps); and the highest drain over them
    # at a starved report since the newest backlog gap (see _starved_forecast; 0: none).
    _short: list[tuple[int, int]] = field(default_factory=list)
    starved_peak_pps: float = 0.0
    window_busy_pps: float = 0.0  # ... over those that began within the drain's window (0: none)
    _trend: _TrendSums = field(default_factory=_TrendSums)  # the sums of _follow_trend's line
    # The latest BMv2's last_sent can be (the reporter's clock, ns; -1: no report yet): each report's arrivals
    # stamped at the rate in force after the later of the newest stamp before and the report (see _note_stamps)
    stamps_end_ns: float = -1.0
    stamp_lag_s: float = 0.0  # how far the ledger's schedule ends after that (0: not behind; see _note_stamps)

    def update(self, now_ns: int, occupancy: int, fwd: int, deq: int, pps: int, recv_ns: int | None = None,
               drained: int | None = None, drained_ns: int = 0) -> float:
        """One report: the downstream ``occupancy`` (packets), the packet-in's counters and the
        queue rate in force since the previous report (0: unlimited). ``now_ns`` is on the
        reporter's clock (steady), ``recv_ns`` when the agent got it (with the control channel's
        jitter); ``drained`` and ``drained_ns`` the report's drain (the buffer's departures so far
        and when the last left, on the reporter's clock; None: the report has none). Returns Ô in
        packets."""
        # Every report of every regulated port comes through here (one per 10 ms per link at the
        # paper's rates, one per 0.2 ms at x50): the steps are written out with locals, each the
        # same expression as in its own method before, so the same integers and floats.
        self._note_reception(now_ns if recv_ns is None else recv_ns)
        drained_before = self._drained
        queued = (fwd - deq) & COUNTER_MASK
        exact = self._exact = drained is not None and drained_ns > 0
        t_prev = self.t_ns
        if t_prev is None:  # what is queued already was spaced at the rate in force, as far as we know
            arrivals = queued
        else:
            arrivals = (fwd - self.fwd) & COUNTER_MASK
            self._smooth(arrivals, (now_ns - t_prev) / NS)
            if not exact:
                self._drained += ((deq - self.deq) & COUNTER_MASK) - (occupancy - self.occupancy)
        spacing = NS / pps if pps > 0 else 0.0
        if arrivals:  # the ledger: this report's arrivals at the rate in force
            tail = self._tail_spacing
            self._leads.append(spacing if tail == NO_SPACING else tail)
            self._tail_spacing = NO_SPACING
            self._counts.append(arrivals)
            self._spacings.append(spacing)
            self._products.append(arrivals * spacing)
            self._stamped += arrivals
        elif self._tail_spacing == NO_SPACING:
            self._tail_spacing = spacing
        if exact:
            if self._reported is not None:
                self._drained += (drained - self._reported) & COUNTER_MASK  # type: ignore[operator]
            self._reported = drained
        last_sent = self.last_sent_ns = now_ns + int(self._schedule_ns(queued))
        self._note_stamps(now_ns, arrivals * spacing, last_sent, queued)
        sent = (deq - self.deq) & COUNTER_MASK
        self.passing = t_prev is not None and occupancy <= sent
        self.sent_pps = sent * NS / (now_ns - t_prev) if t_prev is not None and now_ns > t_prev else 0.0
        self.report_gap_s = (now_ns - t_prev) / NS if t_prev is not None and now_ns > t_prev else 0.0
        self.gap_arrived = occupancy - self.occupancy + self._drained - drained_before if t_prev is not None else 0
        self.gap_arrival_pps = arrivals * NS / (now_ns - t_prev) if t_prev is not None and now_ns > t_prev else 0.0
        before = self.occupancy
        self.t_ns, self.fwd, self.deq, self.occupancy, self.queued = now_ns, fwd, deq, occupancy, queued
        ahead = last_sent - now_ns
        horizon_s = self.horizon_s = (ahead if ahead > 0 else 0) / NS
        hist, starts, rates = self._hist, self._stretch_starts, self._stretch_rates
        t_hist = drained_ns if exact else now_ns
        if hist:
            if t_hist < hist[-1][0]:
                self._ordered_from = self._timed_from = self._popped + len(hist)
            elif self._drained < hist[-1][1]:
                self._ordered_from = self._popped + len(hist)
        hist.append((t_hist, self._drained))
        starts.append(UNREAD)
        rates.append(0.0)
        if self.counts_stamps:
            self._note_short(t_hist)
        window_s = DRAIN_WINDOW_MIN_S if horizon_s < DRAIN_WINDOW_MIN_S else horizon_s  # min(max()) written out
        window_ns = (window_s if window_s < DRAIN_WINDOW_S else DRAIN_WINDOW_S) * NS
        first = self._first
        while len(hist) - first > 2 and now_ns - hist[first + 1][0] >= window_ns:
            first += 1
        if first >= WINDOW_COMPACT and 2 * first >= len(hist):
            del hist[:first]
            del starts[:first]
            del rates[:first]
            self._popped += first
            self._trend.drop(self, first)
            first = 0
        self._first = first
        if occupancy <= IDLE_PKTS:
            self._starved_ns = now_ns
        self.starved_in_window = self._starved_ns >= 0 and now_ns - self._starved_ns < window_ns
        t0, d0 = hist[-2] if exact and len(hist) > 1 else hist[-1]
        t1, d1 = hist[-1]
        self.gap_pps = (d1 - d0) * NS / (t1 - t0) if t1 > t0 else 0.0
        self.drain_pps = self.window_pps = self._rate_since(hist[first])
        if exact:
            self._follow_exact_fall()  # (reads _trend_pps as the report before left it)
            self._trend_pps = 0.0
            if not self._falling:
                self._follow_trend(len(hist) - 1)
                self.expected_pps = self.drain_pps
                if self.drain_pps < self.window_pps:
                    self._trend_pps = self.drain_pps
        else:
            self._follow_counted_fall()
            self.expected_pps = self.drain_pps
        self.newest_pps = self._newest_drain() if exact and occupancy > IDLE_PKTS else 0.0
        if t_prev is not None and before > IDLE_PKTS and occupancy > IDLE_PKTS:
            self._note_backlog_drain(t_prev, now_ns)
        self.window_busy_pps = self._busy_since(now_ns - window_ns)
        if occupancy <= IDLE_PKTS:  # a starved buffer drains whatever arrives: the measured drain is
            self.forecast_pkts = self._starved_forecast(occupancy)  # our own sending rate, not its capacity
        elif self._takes_backlog_drain():
            self.forecast_pkts = self._committed_pkts(occupancy, self.window_busy_pps)  # _backlog_drain_pps
        else:  # O + Q - μ·h, or more where a hole in the schedule empties the buffer before the stamps behind it
            self.forecast_pkts = self._committed_pkts(occupancy, self.expected_pps)
        if self.stamp_lag_s > 0.0 and not self.starved_in_window:
            self.forecast_pkts += self.expected_pps * self.stamp_lag_s
        return self.forecast_pkts

    def _note_stamps(self, now_ns: int, stamped_ns: float, ledger_end_ns: int, queued: int) -> None:
        """How far BMv2's stamps lag the ledger's schedule (``stamp_lag_s``), from the latest the stamps can end.

        The ledger's schedule starts at the report: the queue's oldest packet leaves now, the rest at their spacings.
        On a queue whose wire sends fewer packets/s than its stamps (a queue rate at the link's rate converted at a
        mean frame smaller than the frames leaving: issue 46), the packets wait for the wire with their stamps in the
        past, and BMv2 stamps the next packet after the newest stamp, not after the ledger's end: a rate set now
        spaces packets from up to ``stamp_lag_s`` earlier than the ledger says, and once the wire has sent the
        backlog they leave at the wire's rate until their stamps catch up with it. So the buffer receives what that
        lag carries at the law's rate beyond the forecast; at the drain (the rate a law holding the buffer sets),
        ``expected_pps * stamp_lag_s`` packets, which ``update`` adds to Ô. Not while the drain's window holds a
        report that found the buffer starved: the drain is then a lower bound of what it takes (what this hop sent
        it, ``_starved_forecast``), no rate a law holds the buffer at, and the stamps' lag is the wire's own backlog.
        Added there too, it cut S1 toward a 2 Mb/s link whose 100 Mb/s exit drains all it sends
        (tests/topo/random_cases/mix-dip-behind-slow-link.yaml: 0/38/0 lost at seeds 1-3 became 49/97/34), and
        host-floor-mix-dip-tree.yaml, mixed-sizes-floor-line.yaml and unicast-capped-exit.yaml lost 340 more.

        The newest stamp is at most the later of the one before and the report, plus the report's arrivals at the
        spacing in force (each stamp is the later of its arrival and the stamp before plus the spacing): a bound from
        above, so the lag read is no longer than the real one, and with stamps that keep the wire it is none
        (tests/controlplane/test_forecast.py). Not in the loop analysis's fluid model (``counts_stamps`` False): its
        stamps keep the wire (it converts at one exact mean frame)."""
        end = self.stamps_end_ns
        if self.t_ns is None or end < 0.0:
            end = float(ledger_end_ns)
        else:
            end = (end if end > now_ns else float(now_ns)) + stamped_ns
        self.stamps_end_ns = end
        # the ledger's end less the oldest queued packet's own spacing: with stamps that keep the wire that packet
        # leaves within it of now, so BMv2's stamps end no earlier than this
        head = self._ledger_first
        lead = self._spacings[head] if queued > 0 and head < len(self._spacings) else 0.0
        lag_ns = ledger_end_ns - lead - end  # the ledger's end is in whole ns: a lag within one is its rounding
        self.stamp_lag_s = lag_ns / NS if lag_ns > 1.0 and self.counts_stamps else 0.0

    def _note_backlog_drain(self, t0: int, t1: int) -> None:
        """The report gap from ``t0`` to ``t1`` began and ended on a buffer holding a backlog (more than ``IDLE_PKTS``):
        its departures over it are what the buffer takes, not what this hop sent it (none: it took none, this hop's
        packets waiting behind others'). ``busy_pps`` is the drain over the newest such gaps that hold
        ``DRAIN_SHORT_PKTS`` departures (all of them while fewer): a stretch of a few departures of mixed frame
        sizes is noisy.

        ``busy_pps`` (what the starved forecast takes the buffer to drain) times the gaps by their departures, with
        the exact drain: from the newest departure the report before saw to the newest this one saw, a gap without
        departures to the report (a stall), each no earlier than the one before ended, so that a backlog's spans
        tile its departures. Why: a gap timed by the reports holds its departures ± 1, and at start-up one gap is
        the whole measure: 2 departures of H2's 1,250 packets/s playout in a gap of 1.06 ms read 1,881 packets/s,
        every starved report after it took the stamps of S1's queue toward H2 up to that rate as drained, S1's law
        climbed to 2,019 packets/s over an 80 ms horizon and the 20-packet buffer lost 7
        (tests/topo/random_cases/busy-gap-multicast-receiver.yaml). A span that begins at a departure the buffer
        then went idle after reads low: a lower bound, which errs toward a larger forecast there. Not the law's
        drain (``window_busy_pps``, by the reports' times): read low, it cut S1's law toward a buffer that a
        1448 B frame's 11.6 ms made look backlogged to 0.36 Mb/s of a 1 Mb/s link, and H2's buffer at S1 behind
        it overflowed (fuzz seed 17). In the fluid model a report's departures are timed at the report: the two
        are one."""
        hist = self._hist
        if len(hist) < 2 or t1 <= t0:
            return
        e0, d0 = hist[-2]
        e1, d1 = hist[-1]
        if d1 < d0:
            return
        span = t1 - t0
        if self._exact:
            start = e0 if e0 > self._busy_end_ns else self._busy_end_ns
            end = e1 if d1 > d0 else t1
            if end > start:
                span = end - start
                self._busy_end_ns = end
        pkts, spans, starts = self._busy_pkts, self._busy_spans, self._busy_from
        if starts and t0 < starts[-1]:
            self._busy_sorted = len(starts)
        pkts.append(d1 - d0)
        spans.append(span)
        starts.append(t0)
        self._busy_pkts_before.append(self._busy_pkts_total)
        self._busy_ns_before.append(self._busy_ns_total)
        self._busy_pkts_total += d1 - d0
        self._busy_ns_total += t1 - t0
        self._busy_pkts_sum += d1 - d0
        self._busy_spans_sum += span
        first = self._busy_first
        while len(pkts) - first > 1 and self._busy_pkts_sum - pkts[first] >= DRAIN_SHORT_PKTS:
            self._busy_pkts_sum -= pkts[first]
            self._busy_spans_sum -= spans[first]
            first += 1
        if first >= WINDOW_COMPACT and 2 * first >= len(pkts):
            del pkts[:first]
            del spans[:first]
            del starts[:first]
            del self._busy_pkts_before[:first]
            del self._busy_ns_before[:first]
            self._busy_sorted = self._busy_sorted - first if self._busy_sorted > first else 0
            self._busy_at = self._busy_at - first if self._busy_at > first else 0
            first = 0
        self._busy_first = first
        self.busy_pps = self._busy_pkts_sum * NS / self._busy_spans_sum if self._busy_spans_sum > 0 else 0.0
        self.starved_peak_pps = 0.0

    def _busy_since(self, since_ns: float) -> float:
        """The drain over the backlogged gaps (``_note_backlog_drain``) that began at ``since_ns`` or later (0: none):
        the newest gaps back to the first that began earlier.

        Why searched: every report asks it, and where a buffer's backlog drains a few packets a gap (the head-of-line
        fabric's spines, whose packets wait behind others' in leaf 2's FIFO) the gaps pile up, and the walk back over
        the drain window's (~800 of 1.2 ms in the fluid model) was a fifth of the loop analysis's cost (issue 46).
        Where the starts never fall (``_busy_sorted`` on) the gaps that began at ``since_ns`` or later are the ones
        after a binary search's point, which the walk back would stop at too; below it the walk goes on as before.
        The sums are of integers from the running totals: the same ``n`` and ``span`` as the walk's."""
        starts, first = self._busy_from, self._busy_first
        since = math.ceil(since_ns)  # a start (an integer) is at or after since_ns if and only if at or after this
        end = len(starts)
        bottom = self._busy_sorted if self._busy_sorted > first else first
        # the first gap of [bottom, end) that began at or after since: where the last report's was or the gap after
        # it (the window moves on by about a report gap a report), else searched
        i = self._busy_at
        if not bottom <= i < end or starts[i] < since:
            i += 1
        if not (bottom <= i <= end and (i == bottom or starts[i - 1] < since) and (i == end or starts[i] >= since)):
            lo, hi = bottom, end
            while lo < hi:
                mid = (lo + hi) // 2
                if starts[mid] >= since:
                    hi = mid
                else:
                    lo = mid + 1
            i = lo
        self._busy_at = i
        if i == bottom:
            while i > first and starts[i - 1] >= since:
                i -= 1
        if i == end:
            return 0.0
        n = self._busy_pkts_total - self._busy_pkts_before[i]
        span = self._busy_ns_total - self._busy_ns_before[i]
        return n * NS / span if span > 0 else 0.0

    def _starved_forecast(self, occupancy: int) -> float:
        """Ô on a report that found the buffer starved: its occupancy, or more if the packets this hop has
        queued already (BMv2 fixed their departures when they were queued) will fill it when they arrive.

        The buffer drains all that reaches it, so its measured drain is what this hop sent, a lower bound of
        what it takes, and read as its capacity in ``O + Q - μ·h`` it forecast a cut the buffer did not need.
        What it takes is known from the last time it held a backlog (``busy_pps``); with none yet, nothing is
        known and Ô is the occupancy. Each queued packet leaves at the spacing it was stamped with, the buffer
        drains at no less than the higher of ``busy_pps`` and the lower bounds (``_lower_bound_pps``, and the
        window's drain), and it cannot fall below empty: Ô is the largest excess of the ledger's newest packets
        over what the buffer takes while they arrive (a fluid queue's occupancy at the horizon, the reflection
        at empty), on top of the occupancy if the whole ledger exceeds it.

        Why: read as the occupancy alone, the law raised its rate at every starved report while the queue still
        held packets stamped at the rate before; the rise reached the buffer a horizon later, after the law had
        raised it for a horizon (S5 at 10.7 Mb/s into S2's 5 Mb/s drain: 56 lost, fz3b-fail-2 in
        tests/topo/random_cases/; S4 at 6.6 Mb/s into a 5 Mb/s playout, cut to its floor when the buffer filled,
        the line swinging 0-100 % at a fifth of the bottleneck: fz2-fail-2).

        Not in the loop analysis's fluid model (``counts_stamps`` False: controlplane/fluid_laws.py). ``busy_pps``
        is the drain of the last backlog, kept while the buffer stays starved; the run's BMv2 queue holds what its
        stamps say, but the model's queue toward a buffer that drains it dry can hold a standing backlog whose
        ledger runs ahead of that old drain: in stamped-mixed-backlog.yaml (seed 1) the model's S2 -> S5 queue held
        ~995 packets stamped at ~1,960/s over a 0.5 s horizon from 1.15 s, S5's buffer empty at every report, and
        the forecast read ~200 packets of S5's 26 on every other report (1,587/s, the drain of a backlog long
        gone): S2's law swung, the model filled S5's buffer and warned where the run loses nothing. The rule only
        raises the forecast on a starved report: without it the model's laws rise there as they did before it,
        and the model errs toward a warning (committed-starved-tree.yaml stays warned on S5 -> S2).

        ``busy_pps`` is what the buffer took then; what it has drained since is a lower bound of what it takes now,
        and the drain counts no lower than the highest drain over ``DRAIN_SHORT_PKTS`` departures (``_short``) at a
        starved report since the newest backlog gap (``starved_peak_pps``; that many departures, as ``busy_pps``
        holds: a report gap's few are bunched). Why: what a buffer takes grows while it is starved (the hop behind it
        raises its own law), and its backlog's drain, the newest gap's and the window's (a mix of this hop's slower
        past) all fell below what it drained. lagging-mean-brake-tree.yaml at seed 1: S3's buffer from S6 held a
        backlog at start-up drained at 7,300/s (S3's law toward S1 converted at f3's 1500 B frames), then took all S6
        sent, up to 12,000/s, starved for 0.5 s while S3's own law climbed; S6's forecast counted its stamps above
        7,300/s as filling S3's buffer (100-140 packets of its 79, S3 reading 1), its law held ~7,000/s, and H4's
        buffer behind H3's ~950 packets in S6's FIFO overflowed (60 lost, the buffer read in its frames)."""
        base = float(occupancy)
        mu = self.busy_pps
        if mu <= 0.0 or not self.counts_stamps:
            return base
        low = self._lower_bound_pps()
        mu = low if low > mu else mu
        mu = self.drain_pps if self.drain_pps > mu else mu
        short = self._short  # the newest DRAIN_SHORT_PKTS departures, drained at a starved report
        if len(short) > 1 and short[-1][1] - short[0][1] >= DRAIN_SHORT_PKTS and short[-1][0] > short[0][0]:
            drain = (short[-1][1] - short[0][1]) * NS / (short[-1][0] - short[0][0])
            self.starved_peak_pps = drain if drain > self.starved_peak_pps else self.starved_peak_pps
        peak = self.starved_peak_pps
        mu = peak if peak > mu else mu
        peak = self._committed_pkts(occupancy, mu)
        return peak if peak > base else base

    def _note_short(self, t_ns: int) -> None:
        """The newest departures (``_short``): a report that saw some adds its time and count, and the oldest go while
        the rest hold ``DRAIN_SHORT_PKTS``; a time or a count that went back (a wrap, a reporter restarted) starts over."""
        short, drained = self._short, self._drained
        if short and (drained < short[-1][1] or t_ns < short[-1][0]):
            short.clear()
        if short and drained == short[-1][1]:
            return
        short.append((t_ns, drained))
        while len(short) > 2 and drained - short[1][1] >= DRAIN_SHORT_PKTS:
            del short[0]

    def _backlog_drain_pps(self) -> float:
        """The drain the forecast and the law take on a report that found the buffer holding a backlog while the
        drain's window holds a report that found it starved: the drain over the gaps within the window that it held
        one over (``window_busy_pps``), if any, unless a fall of the drain is followed (the fall is then the drain);
        else, and on every other report, the expected drain.

        Why: the window's drain then mixes what this hop sent the starved buffer (a lower bound of what it takes)
        with what it took while it held a backlog, and is neither. Read as what it takes, it forecast 111 packets
        in H4's 20-packet receive buffer at the first report that found 2 there after S4 had sent it 2.9 Mb/s of its
        5 Mb/s playout, and S4's law fell to its floor (tests/topo/random_cases/committed-starved-playout-line.yaml).
        Only the gaps within the window: a backlog's drain from before it is not what the buffer takes now (a spine's
        packets waiting in a leaf's FIFO behind another spine's: tests/topo/analysis/test_fluid_fifo_order.py)."""
        return self.window_busy_pps if self._takes_backlog_drain() else self.expected_pps

    def _takes_backlog_drain(self) -> bool:
        """The newest report found a backlog, the window a starved report, and no fall is followed."""
        return (self.starved_in_window and self.window_busy_pps > 0.0 and self.occupancy > IDLE_PKTS
                and self.expected_pps >= self.window_pps)

    def _committed_pkts(self, occupancy: int, mu: float) -> float:
        """The buffer's occupancy when the newest queued packet reaches it, each queued packet arriving at the
        spacing it was stamped with and the buffer draining ``mu`` packets/s, never below empty: the largest of
        ``O + Q - mu·h`` and the excess of each newest part of the ledger over what drains while it arrives.

        Why on every report, not only those that read the buffer starved: a buffer that holds a backlog now
        empties just as well in a hole further down the ledger. ``O + Q - mu·h`` took the drain it missed there off
        the packets stamped behind the hole: S4's law toward H4's 20-packet receive buffer (1 Mb/s playout, 217
        packets/s) read 19 packets there, 205 queued over a horizon of 1.05 s that held the floor's hole stamped a
        second before, as bound for empty (Ô 0), and its rate jumped from 1 to 2.8-3.3 Mb/s; the stamps behind the
        hole refilled the buffer, and the jump overflowed it a horizon later
        (tests/topo/random_cases/hole-burst-receive-buffer-line.yaml, issue 46)."""
        counts, products = self._counts, self._products
        n = 0.0
        span_ns = 0.0
        peak = 0.0
        for i in range(len(counts) - 1, self._ledger_first - 1, -1):
            n += counts[i]
            span_ns += products[i]
            excess = n - mu * span_ns / NS
            peak = excess if excess > peak else peak
        whole = occupancy + n - mu * span_ns / NS
        return whole if whole > peak else peak

    def _newest_drain(self) -> float:
        """Packets/s over the newest stretch of ``NEWEST_PKTS`` or more departures the reports saw
        (from a departure to a departure: exact); 0 if the window holds none."""
        hist = self._hist
        t1, d1 = hist[-1]
        for j in range(len(hist) - 2, self._first - 1, -1):
            t0, d0 = hist[j]
            if d1 - d0 >= NEWEST_PKTS:
                return (d1 - d0) * NS / (t1 - t0) if t1 > t0 else 0.0
        return 0.0

    @property
    def guessed_fall(self) -> bool:
        """The expected drain rests on a guess of how long a fall of the exact drain will last."""
        return self._exact and self._falling

    def _follow_counted_fall(self) -> None:
        """A fall (capacity drop) of the counted drain is followed fast; a rise at the long window's pace."""
        hist, now_ns = self._hist, self.t_ns or 0
        short_s = self.short_window_s()
        j, first = len(hist) - 1, self._first
        short_ns = short_s * NS  # once, not per entry walked (a host's report walks ~20)
        if self._timed_from <= self._popped + first:
            # The window in order (its times never fall): the entries within the short window of now
            # are the newest ones, and the walk down from the newest ends at the newest entry past it
            # (or at the window's first): found by bisection (at 1 ms reports the walk crossed ~100).
            lo = first
            while lo < j:
                mid = (lo + j + 1) // 2
                if now_ns - hist[mid][0] < short_ns:
                    j = mid - 1
                else:
                    lo = mid
        else:
            while j > first and now_ns - hist[j][0] < short_ns:
                j -= 1
        short = self._rate_since(hist[j], short_s / 4)
        span_s = (now_ns - hist[j][0]) / NS
        if span_s > short_s / 4 and short < self.drain_pps - max(DRAIN_SHIFT_PPS, DRAIN_SHIFT_PKTS / span_s):
            self.drain_pps = short

    def _follow_exact_fall(self) -> None:
        """The exact drain over the newest ``DRAIN_FALL_PKTS`` departures (at least the last report
        gap) replaces the long window's when it is lower by more than ``DRAIN_SHIFT_PPS``,
        ``DRAIN_SHIFT_SHARE`` of it and ``DRAIN_SHIFT_SIGMAS`` times the spread of the window's
        earlier drains over as many departures; once in a fall it is followed while it lasts (the
        fall's own stretches then widen the spread). A rise is followed at the long window's pace.

        Why so many departures: on BMv2's queues the downstream hop's packets leave at spacings it
        stamped up to a second earlier, and its rate steps lengthen a spacing or two; a drain read
        from one or two of them and extrapolated over a horizon of a second moved the forecast by
        tens of packets (seen at the paper's rates: one 8.2 ms spacing in a 6.6 ms stream read as
        135 then 85 packets/s, the hop upstream cut to 7 packets/s and the line swung for ten
        seconds). At high rates one report gap holds that many departures, so a capacity drop is
        followed at the first report after it.

        The drain before the fall, which the horizon's mean weighs against the fallen one (``_over_horizon``), is the
        window's, or where a steady fall of it was followed up to the report before the fall began, no more than the
        trend's value then (``_follow_trend``): the window's drain is that of its middle. In
        silent-before-start-merge.yaml (seed 3) S1's law toward S3 had followed a trend to 14,555 packets/s, the window's 16,745, when a stretch fell past the gate: the window's drain over
        the 15 ms horizon raised the expected drain to 16,612, the forecast fell by 31 packets, the law rose
        3.4 Mb/s for 10 ms, and S1's stamped backlog brought it into S3's full buffer 20 ms later: 1 lost, unwarned
        (none with the trend's). Only the horizon's mean: the gate still compares the fall with the window's drain
        (compared with the trend's, fewer falls were followed and frames-capacity-drop-line.yaml lost 85-127 where
        it lost 35-39); and the trend as it stood before the fall (a line through the fall's own stretches reads a
        step as a slope)."""
        end = len(self._hist) - 1
        newest = self._newest_stretch(end, DRAIN_SPREAD_GAPS + 1)
        if newest is None:
            self._falling = False
            return
        short, start_ns = newest
        was_falling = self._falling
        # The spread only lowers the bar a fall must pass (max of the terms, then subtracted): a
        # drain above the bar without it is above it with it, so the whole walk and the spread
        # are needed only for a candidate fall (at x50 the window holds ~70 stretches: the walk
        # and the spread were a quarter of a simulation). Already falling: the spread is 0.
        if not short < self.drain_pps - max(DRAIN_SHIFT_PPS, DRAIN_SHIFT_SHARE * self.drain_pps):
            self._falling = False
            return
        spread = 0.0 if was_falling else self._earlier_noise(end)
        self._falling = short < self.drain_pps - max(DRAIN_SHIFT_PPS, DRAIN_SHIFT_SHARE * self.drain_pps,
                                                     DRAIN_SHIFT_SIGMAS * spread)
        if not self._falling:
            return
        if not was_falling:
            self._fall_start_ns = start_ns
            self._before_pps = self._trend_pps  # a steady fall followed up to the report before: its value then
        before = self.drain_pps if not 0 < self._before_pps < self.drain_pps else self._before_pps
        self.expected_pps = self._over_horizon(short, before, (self._hist[-1][0] - self._fall_start_ns) / NS)
        self.drain_pps = short

    def _follow_trend(self, end: int) -> None:
        """A steady fall of the exact drain across the window replaces the window's drain with the trend's value
        now: the least-squares line through the window's stretches (``DRAIN_FALL_PKTS`` departures each, at
        their midpoints), taken when its slope is a fall by more than ``DRAIN_SHIFT_SIGMAS`` of its standard
        error, the noise read from successive differences (``drain_noise``: a trend moves them little). Only a
        fall, as the fall's gate, and only down to the trend's value now, never extrapolated over the horizon.

        Why: the window's drain is the drain of its middle. A drain that falls slowly (the buffer's own law
        cutting as the buffer behind it fills) stays under it by the slope times half the window, report after
        report, and no single stretch falls by more than the spread: the gate above never opens. The law's rate
        followed the window's drain 0.4-0.7 Mb/s above what S3 took, its target rose with the occupancy, and
        S3's 61-packet buffer for S6's packets crept from 3 to full in 130 ms (tests/topo/random_cases/
        slow-drain-creep-tree.yaml). Noise has no slope beyond its error: a starved buffer's dips are not
        followed.

        Not in the loop analysis's fluid model (``follows_trend`` False: controlplane/fluid_laws.py). Its drain
        readings are fluid counts at a report's sample time, the run's the exact times of departures that other
        ports' packets space unevenly, so the gate opens at other reports in the two: in
        silent-before-start-merge.yaml (seed 1) the model's S1 -> S3 followed a trend from 0.087 s, the run's
        only from 0.133 s; the model cut earlier and S3's buffer peaked 6.5 packets short of full where the run
        lost 38, unwarned. The rule only lowers the drain a law expects: without it the model errs toward a
        warning (the head-of-line 2 x 2, per port: the run's loss moved from leaf1 -> spine1 to leaf1 -> spine2,
        which the model without it warns and with it did not).

        Not everywhere: on BMv2's queues a lowered drain can take the law to its floor, and BMv2 stamps every
        packet queued meanwhile a floor's spacing after the one before (20 ms at 0.4 Mb/s of 1000 B frames): a
        hole in the queue's schedule, which the forecast reads as drain (``h`` grows, ``Q`` barely), so the law
        rises behind it and what it stamps there reaches the buffer after the hole, in a burst. The head-of-line
        2 x 2 with classes, seed 7: spine2's law toward leaf2 (its drain a share of leaf2's FIFO toward h2_1) took
        the line's 404 packets/s where its window read 476 and the newest stretch 455, a forecast 4 packets
        fuller, past the forecast gain's deadband, and cut to its floor at 2.24 s; the hole left spine2 about
        2.30 s, the law stamped ~60 packets at its class R_max behind it, and they reached leaf2's buffer from
        spine2 at 2.36-2.44 s while its share of the FIFO had halved: 2 lost, unwarned (the model's laws, which
        leave the rule out, never reach their floor there). Holding the line no lower than the newest stretch's
        drain removes that loss but makes slow-drain-creep-tree.yaml and sparse-report-start-fabric.yaml lose more
        (the latter unwarned at seed 3), so the rule stays as it is (issue 46's notes hold the measurements)."""
        if not self.follows_trend:
            return
        newest = self._newest_stretch(end, 1)
        if newest is None or not newest[0] < self.drain_pps:
            return
        line = self._trend.line(self, end)
        if line is None:
            return
        _, slope, sxx, noise, now = line
        if not slope < 0 or -slope * math.sqrt(sxx) <= DRAIN_SHIFT_SIGMAS * noise:
            return
        if 0 < now < self.drain_pps:
            self.drain_pps = now

    def _over_horizon(self, short: float, long: float, lasted_s: float) -> float:
        """The mean drain expected over the horizon when a fall has lasted ``lasted_s``: the fallen rate for
        ``FALL_PERSISTENCE`` times as long again, the rate before it after that.

        Why not the fallen rate over the whole horizon: a fall may end (a software switch short of
        CPU for 0.1 s, seen in real time on this machine; a burst of other traffic), and on BMv2's
        queues a cut is stamped on every packet queued before the next command, irreversibly. The
        fallen rate read over a horizon of a second put R4's buffer at 120 % after a 0.15 s dip of
        its drain, R3 cut to the floor, its queue froze for a second and its own buffer overflowed
        (docs/howto/bmv2.md). A fall that lasts is believed over the whole horizon once it has lasted
        ``1 / (1 + FALL_PERSISTENCE)`` of it: after a capacity drop the buffer downstream rises
        meanwhile, and its occupancy is in the forecast as measured."""
        h = self.horizon_s
        lasting = FALL_PERSISTENCE * max(0.0, lasted_s)
        if h <= lasting or h <= 0:
            return short
        return (short * lasting + long * (h - lasting)) / h

    def _chunk_rates(self, end: int, limit: int | None = None) -> list[tuple[float, int]]:
        """The exact drain over successive stretches of the window before ``hist[end]``, newest
        first, each ending at a departure a report saw and holding ``DRAIN_FALL_PKTS`` or more,
        with the time the stretch starts; the newest ``limit`` of them only, if given.

        Why the stored stretches: the stretch ending at an entry starts at the newest earlier entry
        ``DRAIN_FALL_PKTS`` or more departures and some time before it, which depends on the
        entries up to it alone (they never change; the window only loses its oldest). So each
        entry's stretch is found once (``_stretch``) and the stretches are a walk along them:
        rescanning the window for every report took a fifth of a simulation at the paper's rates.
        Found when first asked, over the window then: an entry popped since was older than any
        left, so a stretch that starts at a popped entry means none in the window."""
        out: list[tuple[float, int]] = []
        while limit is None or len(out) < limit:
            step = self._older(end)
            if step is None:
                return out
            end, rate = step
            out.append((rate, self._hist[end][0]))
        return out

    def _earlier_rates(self, end: int) -> list[float]:
        """``[r for r, _ in self._chunk_rates(end)[1:]]``: the drains of the window's stretches before the
        newest one, newest first, walked without the list of pairs."""
        rates, first = self._stretch_rates, self._first
        out: list[float] = []
        start = self._start_of(end)
        while start >= first:
            end, start = start, self._start_of(start)
            if start >= first:
                out.append(rates[end])
        return out

    def _earlier_noise(self, end: int) -> float:
        """``drain_noise(self._earlier_rates(end))``, summed along the walk: the same squares added in the same order
        from 0.0, without the list of drains and a second pass over it (every candidate fall of the loop analysis's
        fluid model asks it over a window of ~150 stretches; issue 46)."""
        rates, first = self._stretch_rates, self._first
        total = 0.0
        count = 0
        before = 0.0
        start = self._start_of(end)
        while start >= first:
            end, start = start, self._start_of(start)
            if start >= first:
                now = rates[end]
                if count:
                    total += math.pow(before - now, 2.0)
                before = now
                count += 1
        return math.sqrt(total / (2 * (count - 1))) if count > 1 else 0.0

    def _start_of(self, end: int) -> int:
        """The window index where the stretch ending at ``hist[end]`` starts (below ``_first``: before the
        window), the stretch found once and stored: the one step of every walk along the stretches."""
        start = self._stretch_starts[end]
        if start == UNREAD:
            start, self._stretch_rates[end] = self._stretch(end)
            self._stretch_starts[end] = start
        return start - self._popped

    def _older(self, end: int) -> tuple[int, float] | None:
        """(index where the stretch ending at ``hist[end]`` starts, its drain); None if it starts before the
        window."""
        start = self._start_of(end)
        return None if start < self._first else (start, self._stretch_rates[end])

    def _newest_stretch(self, end: int, count: int) -> tuple[float, int] | None:
        """``_chunk_rates(end, count)[0]`` if the window holds ``count`` stretches before
        ``hist[end]``, else None: the same walk without its list (every report asks it)."""
        newest = None
        for _ in range(count):  # every report walks DRAIN_SPREAD_GAPS + 1
            start = self._start_of(end)
            if start < self._first:
                return None
            if newest is None:
                newest = (self._stretch_rates[end], self._hist[start][0])
            end = start
        return newest

    def _stretch(self, end: int) -> tuple[int, float]:
        """(absolute number of the newest entry before ``hist[end]`` with ``DRAIN_FALL_PKTS`` or
        more departures and some time between them, the drain since it); (-1, 0) if none."""
        hist, popped = self._hist, self._popped
        t1, d1 = hist[end]
        before = self._stretch_starts[end - 1] if end > 0 and end == len(hist) - 1 else UNREAD
        if before != UNREAD and before >= self._ordered_from:
            # The newest entry, in order from where the stretch before it starts: the entries
            # that qualify (as many departures or more before it, and time) are the oldest up to
            # one, the last that qualified for the entry before qualifies for this one, and the
            # newest that does is the first past it that does not, less one (every report asks
            # this: the walk back from the newest crossed ~40 entries of a fluid model's window).
            j = before - popped
            j = j if j > -1 else -1  # (the entries before the list's first are older than the window)
            while j + 1 < end:
                t0, d0 = hist[j + 1]
                if d1 - d0 >= DRAIN_FALL_PKTS and t1 > t0:
                    j += 1
                else:
                    break
            if j < self._first:
                return -1, 0.0
            t0, d0 = hist[j]
            return j + popped, (d1 - d0) * NS / (t1 - t0)
        for j in range(end - 1, self._first - 1, -1):
            t0, d0 = hist[j]
            if d1 - d0 >= DRAIN_FALL_PKTS and t1 > t0:
                return j + popped, (d1 - d0) * NS / (t1 - t0)
        return -1, 0.0

    def _schedule_ns(self, queued: int) -> float:
        """What the ``queued`` packets still take to leave: the newest ``queued`` of the ledger, each
        at the spacing it was queued with (the older ones have left). The sum of the entries'
        products, oldest first: the same floats, added in the same order, as the sum of
        ``count * spacing`` over the ledger."""
        counts, spacings, products, leads = self._counts, self._spacings, self._products, self._leads
        head, folded = self._ledger_first, self._folded
        extra = self._stamped - queued
        while extra > 0 and head < len(counts):
            folded = -1  # the oldest entries change: the sum starts again
            first = counts[head]
            if extra < first:
                counts[head] = first = first - extra
                products[head] = first * spacings[head]
                leads[head] = spacings[head]  # the empty entries before it have gone
                extra = 0
                break
            extra -= first
            head += 1
        if extra > 0:  # (with the empty entries after the last)
            self._tail_spacing = NO_SPACING
        elif extra < 0:  # more queued than the ledger holds (a wrap, a restart): at the oldest spacing
            folded = -1
            tail = self._tail_spacing
            spacing = leads[head] if head < len(leads) else (0.0 if tail == NO_SPACING else tail)
            if head > 0:  # in the place of the newest entry gone
                head -= 1
                counts[head], spacings[head], products[head], leads[head] = -extra, spacing, -extra * spacing, spacing
            else:
                counts.insert(0, -extra)
                spacings.insert(0, spacing)
                products.insert(0, -extra * spacing)
                leads.insert(0, spacing)
        if head >= WINDOW_COMPACT and 2 * head >= len(counts):
            del counts[:head]
            del spacings[:head]
            del products[:head]
            del leads[:head]
            folded = folded - head if folded >= 0 else -1
            head = 0
        self._ledger_first = head
        self._stamped = queued
        # sum(products[head:]) written out: the same floats added in the same order from 0.0, as Python 3.11's sum
        # adds floats (no compensation), without a call through the builtins per report; from _fold where the
        # entries it summed are still the oldest
        total, start = (0.0, head) if folded < 0 else (self._fold, folded)
        end = len(products)
        for i in range(start, end):
            total += products[i]
        self._fold, self._folded = total, end
        return total

    def _note_reception(self, recv_ns: int) -> None:
        if self._recv_ns is not None:
            # every report comes here: max() written out (the same value: the first on a tie)
            gap_ns = recv_ns - self._recv_ns
            gap = (gap_ns if gap_ns > 0 else 0) / NS
            kept = self.slow_gap_s * math.exp(-gap / SLOW_GAP_MEMORY_S)
            self.slow_gap_s = kept if kept > gap else gap
        self._recv_ns = recv_ns

    def _smooth(self, arrivals: int, gap_s: float) -> None:
        if gap_s <= 0:
            return
        self.last_gap_s = gap_s
        self._usual_gap_s = self.gap_s  # before this gap counts in it
        k = min(1.0, gap_s / ARRIVAL_SMOOTH_S)
        self.gap_s += k * (gap_s - self.gap_s) if self.gap_s else gap_s
        self.arrival_pps += k * (arrivals / gap_s - self.arrival_pps)

    def arrivals_before_next_command(self) -> float:
        """Packets expected to be stamped before the next rate command: the arrival rate over
        twice the report gap (the gap itself, plus a margin for the control plane's latency), or
        over the longest recent gap between receptions (a slow control channel), if longer."""
        gap_s = MIN_GAP_S if self.gap_s < MIN_GAP_S else self.gap_s  # max() written out (every report)
        span_s, slow_s = 2 * gap_s, SLOW_GAP_MARGIN * self.slow_gap_s
        return self.arrival_pps * (slow_s if slow_s > span_s else span_s)

    def span_scale(self) -> float:
        """The usual gap over the last one (at most 1): a change of occupancy seen over a longer
        gap than usual (a stall of the reporter or of the path) is a slower change than it looks."""
        if self.last_gap_s <= 0 or self._usual_gap_s <= 0:
            return 1.0
        scale = self._usual_gap_s / self.last_gap_s
        return scale if scale < 1.0 else 1.0

    def approach_bps(self, capacity: int, packet_bits: int) -> float:
        """The start-up brake's b/s per unit of room below O_max: the buffer over BRAKE_GAPS gaps."""
        return capacity * packet_bits / (BRAKE_GAPS * (MIN_GAP_S if self.gap_s < MIN_GAP_S else self.gap_s))

    # ---- what a law's owner hands it (one composition: the agents, the hosts, topo/analysis/fluid_control.py) ----
    def law_forecast(self, pkts: float, capacity: int, packet_bits: int, held_bits: int = 0) -> Forecast:
        """The law's :class:`Forecast` after :meth:`update` returned ``pkts`` (Ô, packets) of a buffer of ``capacity``
        packets: its drains in b/s at ``packet_bits`` a packet, the start-up brake's room (the buffer in bits) at
        ``held_bits`` a packet, the bits of the packets it holds (0: ``packet_bits``; controlplane/agent.py,
        ``SwitchAgentCore._held_frame``).

        While the drain's window holds a report that found the buffer starved (``starved_in_window``), its
        drain is what this hop sent then, lagging the sources' ramp (0 until the window spans its shortest
        time), and the start-up brake's drain is no lower than the drain over the newest report gap
        (``Forecast.gap_bps``): departures of a buffer that now holds packets, the freshest measure of what it
        takes. Read per report, a burst of 2-3 packets off a faster link in a buffer that drains faster than it
        is fed was taken as a regulated buffer, and the brake cut to the window's drain plus the room over the
        approach time: 1 Gb/s to 55 Mb/s under ~110 Mb/s of arrivals (grant-burst-line.yaml), 100 to 3.1 Mb/s
        into a 50 Mb/s playout with the drain not yet measured (brake-starved-receiver-line.yaml), and 50 Mb/s
        to the floor in front of a 5 Mb/s exit, whose cut, stamped on BMv2's queue, came back as a burst of 185
        packets (brake-starved-multicast-release.yaml; tests/topo/random_cases/). With it the brake aims as
        designed: 100 -> 50.5 Mb/s (the gap's 47.5 plus the room), and 6.6 -> 5.1 Mb/s as the 5 Mb/s buffer
        approaches O_max. The window's drain is kept where it is higher (a gap is one report's noise), and once
        no report in the window found the buffer starved, the window's drain alone measures it."""
        whole = round_even(pkts)
        starved = self.starved_in_window
        drain = self._backlog_drain_pps()
        return Forecast((whole if whole > 0 else 0) / capacity, drain * packet_bits,
                        self.approach_bps(capacity, held_bits or packet_bits), self.span_scale(), self.guessed_fall,
                        self.newest_pps * packet_bits, self.occupancy <= IDLE_PKTS, starved,
                        self._lower_bound_pps() * packet_bits if starved else 0.0, self.gap_arrival_pps * packet_bits,
                        self._committed_change(drain) / capacity,
                        self._lower_bound_pps() * packet_bits if starved and self.passing else 0.0)

    def _committed_change(self, drain_pps: float) -> float:
        """What reached the buffer over the newest report gap less what it drains over the gap at ``drain_pps``, packets,
        a packet nearer none: the count of a gap is known to a packet (the packet in service at either end), so only
        the rest is this hop's stamps for sure (``Forecast.committed_change``)."""
        excess = self.gap_arrived - drain_pps * self.report_gap_s
        if excess < -1.0:
            return excess + 1.0
        return excess - 1.0 if excess > 1.0 else 0.0

    def _lower_bound_pps(self) -> float:
        """While the drain's window holds a starved report: the highest of its lower bounds of what the buffer takes,
        the drain over the newest report gap, or, while the buffer holds no more than this hop sent it since the last
        report (``passing``: each packet in it came within the gap), over the whole window (``window_pps``, before a
        fall replaced it).

        Why the window's: the buffer drained all that reached it, so a stretch of fewer departures is this hop's
        own spacing, not a fall of what the buffer takes: frames of several sizes make a count of one report gap
        noisy (one 1448 B frame is 7.7 Mb/s of a 1.6 ms gap), and a cut is read back as the next fall. Read as a
        fall, a dip of 23 departures where 27 were usual cut S2's ramp from 44.4 to 39.3 Mb/s, its own cut read
        back cut it to 35.7, and S5 behind it, still at 44 Mb/s, overflowed S2's 66-packet buffer (43 lost:
        tests/topo/random_cases/starved-drain-dip-tree.yaml). Not once the buffer holds more than a gap brought: a
        drain that falls behind a backlog (the head-of-line fabric: spine1's packets wait in leaf2's FIFO behind
        another spine's, and its drain reads 0 while its buffer there gains 20-47 packets) is then a fall of what the
        buffer takes. The fall stays in the forecast occupancy and the settled law's base either way."""
        window = self.window_pps if self.passing else 0.0
        return self.gap_pps if self.gap_pps > window else window

    def floor_pps(self, link_pps: float) -> float | None:
        """The lowest queue rate that keeps the BMv2 schedule within its bound (None: already past it)."""
        return schedule_floor_pps(self.queued, link_pps, self.horizon_s, self.arrivals_before_next_command())

    def hold_pps(self, link_pps: float) -> float:
        """What a rate must not fall below on BMv2's queues, so that a cut stamps no far-future
        schedule: the bound's floor, or once older stamps ran past it the expected drain (not the
        link's rate: that would flood the buffer downstream)."""
        floor = self.floor_pps(link_pps)
        return self.expected_pps if floor is None else floor

    def brake(self, capacity: int, packet_bits: int) -> Brake:
        """The start-up brake of a law without a forecast (a host, whose packets leave as paced)."""
        return Brake(self.drain_pps * packet_bits, self.approach_bps(capacity, packet_bits))

    def short_window_s(self) -> float:
        """The short drain window: ``DRAIN_SHORT_PKTS`` at the drain, within [1 gap, 0.2 s]."""
        lo = DRAIN_SHORT_GAPS * max(self.gap_s, MIN_GAP_S)
        packets_s = DRAIN_SHORT_PKTS / self.drain_pps if self.drain_pps > 0 else DRAIN_SHORT_S
        return min(DRAIN_SHORT_S, max(lo, packets_s))

    def _rate_since(self, then: tuple[int, int], min_span_s: float = 0.05) -> float:
        """Packets/s drained since ``then``. With the exact drain the span ends at the last
        departure, unless the buffer has been silent since for longer than its mean spacing (a
        stall): then at the report, less one spacing."""
        t0, d0 = then
        n = self._drained - d0
        if not self._exact:
            span = (self.t_ns - t0) / NS  # type: ignore[operator]
            return n / span if span > min_span_s else 0.0
        t_last = self._hist[-1][0]
        if n <= 0 or t_last <= t0:
            return 0.0
        spacing = (t_last - t0) / n
        span_ns, stall_ns = t_last - t0, self.t_ns - t0 - spacing  # type: ignore[operator]
        span = (stall_ns if stall_ns > span_ns else span_ns) / NS
        return n / span if span > min_span_s else 0.0
