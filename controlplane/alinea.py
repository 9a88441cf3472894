"""The adaptive ALINEA rate law (Chen, Shyu, Zhan, Peeta), one module for switches and hosts.

On each control message (occupancy report) from the downstream node, for interval k::

    1. R = R + W·(O − O(k)) [− K_P·(O(k) − O(k−1)) once O has reached O_max];  R = min(R, R_max)
    2. if O < O(k) < O_max:  O = O(k);  W = max(W / 2, W_min)
    3. if O(k) > O_max:      O = O_max; W = W_min

with O = O_min and W = W_max at the start. ``R`` is the node's outgoing rate toward the
reporting neighbour (bits/s), ``O`` the desired occupancy of that neighbour's incoming buffer
and ``O(k)`` the reported occupancy, both fractions of the buffer. Steps 1-3 are the paper's
rule exactly; what the paper leaves open is chosen here and argued in docs/background/alinea.md:

* **Floor.** ``R`` never goes below ``r_floor`` (> 0): reports are triggered by arrivals, so a
  node that stopped sending would never hear from its neighbour again.
* **Damping (``k_p``).** The occupancy of a buffer integrates the rate difference, so step 1
  alone (an integral controller) leaves the loop marginally stable around O_max: it keeps
  oscillating, and with the report delay it grows. The PI-ALINEA term ``−K_P·(O(k) − O(k−1))``
  (Wang, Kosmatopoulos, Papageorgiou, Papamichail, IEEE T-ITS 2014) damps it. It is applied only
  once O has reached O_max: before that, step 2's O = O(k) already acts on the change of
  occupancy and the paper's start-up ramp is kept as written. ``k_p = 0`` is the paper's law.
  When the buffer's capacity in the node's frames moves (``packet``, 1 / capacity, follows the mean
  frame it sends: controlplane/frame_size.py), O(k−1) is first expressed on the new capacity:
  otherwise the fraction's jump reads as the buffer filling or emptying (a host's buffer at its
  first hop going from 38 to 54 frames read 4.03 -> 2.91 of itself, a buffer emptying, while it
  gained 4 packets: the rate jumped from its 4 Mb/s floor to 49 Mb/s into a buffer 90 % full).
* **Overflow.** A report whose OVERFLOW flag is set (drops since the previous report) is read as
  a full buffer (O(k) = 1, so step 3 applies) and the rate is also cut by ``OVERFLOW_CUT``; with a
  forecast, whose measured drain says what the buffer can take, no lower than
  ``OVERFLOW_DRAIN_SHARE`` of that drain: on BMv2's queues a halved rate stamps every packet
  queued until the next command at twice the spacing, and the hop's own buffer then overflows in
  turn (capacity-drop at 50 times the paper's rates: 397 packets lost up the line).
* **Stale feedback.** The owner calls :meth:`AlineaLaw.tick` periodically: when no report came
  for ``STALE_HOLD_INTERVALS`` report intervals (lost reports are tolerated that long), the rate
  is halved at each further interval down to the floor, and the next report restarts the
  adaptation (O = O_min, W = W_max), as at the start.

* **Forecast (BMv2's egress queues).** Where a rate command reaches the wire only after the
  node's own queue has drained (BMv2 fixes each packet's departure when it is queued), the owner
  passes a :class:`Forecast`: the occupancy the downstream buffer will have when a rate set now
  starts to arrive there, and the buffer's measured drain. Step 1 then acts on the forecast
  occupancy Ô instead of O(k), with W scaled by :func:`forecast_gain`; once O has reached O_max
  it reads ``R = drain + g·W·(O − Ô) − K_P·(O(k) − O(k−1))``: the rate follows the drain, the
  forecast error corrects it, and the damping acts on the measured occupancy, less a fall that what reached
  the buffer over the report gap explains (:func:`unexplained`: this node's packets, stamped a horizon before, as
  a hole in its schedule passing the buffer; docs/background/alinea.md, "On BMv2's egress queues"). Steps 2
  and 3 use Ô. The drain there is the newest drain for a
  report when that has clearly fallen (:func:`settled_base`): a capacity drop behind the buffer
  shows in its departures before its occupancy has gained a packet.
* **Start-up brake.** During the ramp (O below O_max) a forecast's rate is at most the drain plus the room
  left below O_max over the approach time (:class:`Brake`). Where every drain that cut reads is a lower bound
  of what the buffer takes (its window holds a report that found it starved, and the newest report gap began
  on one: ``Forecast.window_starved`` and the previous report), the cut is a guess, and it may leave the rate
  below what the buffer takes, which the law's own step, ``W·(O − O(k))``, makes up only at W's pace: W is
  derived for the buffer in bits, and a buffer of 69 frames of 200 B climbed 15 kb/s a report into a 10 Mb/s
  playout, at half of it for a second, while the buffers behind the hop overflowed
  (tests/topo/random_cases/brake-starved-playout-small-gain.yaml). So the law keeps the rate such a cut
  came from (``braked_from``), and at each report that finds the buffer starved again (it drains all that
  reaches it: the rate is below what it takes) the rate goes back toward it as far as the brake's cap allows
  on what the buffer is known to take, the drain it read up to the rate set, plus the room over the approach
  time: one approach step a report, from the rate it has. No new constant: the cap is the brake's own, and
  the buffer fills at most as the brake lets it. Not on the drain alone: a starved buffer's drain over a
  report gap is what this hop sent in it, bunched: read at 14 Mb/s by a law set to 5 Mb/s, it took the law
  to its R_max in one report (burst-brake-merge.yaml, seed 7). Not from a cut on a gap that began on a buffer
  holding packets: that gap's drain measures it.
  The rate to go back to is forgotten once reached, on an overflow, when the ramp ends and on a restart.
  Neither such a cut nor the way back holds the rate below what reached this node for the buffer over the newest
  report gap (``Forecast.arrival_bps``, the arrivals at its own queue; a cut never raises the rate it cuts):
  below it, the excess leaves a buffer that held no more than a packet a gap ago, room to spare, for this node's
  own, whose law upstream learns of it a report and a loop delay later. On a line of six switches and 100 Mb/s
  links (tests/topo/random_cases/brake-guess-ramp-line.yaml) a bunch of 4 packets in S4's 125-packet buffer cut
  S3's law from its R_max, 200 Mb/s, to the drain over the gap plus the room (72 Mb/s) while the host's ramp
  brought S3 75-80 Mb/s; the law then climbed 0.45 Mb/s a report, S3's 62-packet buffer from S2 filled in
  12 ms, and each hop up the line braked on the packets the one below gained (645, 825, 151 lost at seeds 1-3,
  unwarned; 0, 46, 0 with this rule). No new constant: the arrivals are counted per report, as the drain is.
* **No windup.** Once settled, a report that finds the buffer starved takes the law's own rate as the base
  (:func:`settled_base`), and the step, the whole target as error, adds to it at every such report. Where the
  buffer is starved because this node has nothing to send (its own input held upstream), that rate is never
  exercised and the climb is integrator windup: S2's law toward S1 in issue 46's 7-switch tree (fuzz seed 2)
  climbed 5.6 Mb/s a report from 27 to 379 Mb/s while S1's buffer read 1 packet and S2 sent 10 Mb/s; the next
  burst left S2 at 379 Mb/s (BMv2's queue stamps it) into a 20 Mb/s exit, and 266 packets overflowed unwarned.
  The own rate is taken without the damping term the report before added (``_damped``): that term answers one
  report's change of occupancy, the drain its base, and kept as a starved report's base it became a level (S4's law
  toward H4's receive buffer, raised from 1.0 to 1.38 Mb/s of a 1 Mb/s playout as the buffer fell from 2 packets to
  1, held it over three starved reports, and those stamps overflowed the buffer 0.6 s later:
  tests/topo/random_cases/hole-burst-receive-buffer-line.yaml).
  So on a starved buffer the rate climbs no further than the brake's cap on what the buffer drained, which is
  what this node sent (the higher of the window's and the newest gap's drain), plus the room below O_max over
  the approach time (with a brake: ``approach_bps``); a rate already above that is held, not cut. No new
  constant: where the rate is exercised, what it sends is its rate and the cap climbs with it
  (starved-two-packet-buffer.yaml's climb from the floor).

The object is a pure state machine: reports and the time in, the rate out.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.params import LawParams, validate_law

__all__ = ["AlineaLaw", "Forecast", "Brake", "forecast_gain", "OVERFLOW_CUT", "OVERFLOW_DRAIN_SHARE",
           "STALE_HOLD_INTERVALS",
           "FORECAST_DEADBAND_PKTS", "FORECAST_SPAN_PKTS", "FORECAST_BOOST", "settled_base", "unexplained", "NEWEST_FALL", "NEWEST_CAP"]

#: Multiplicative rate cut on a report that says the buffer overflowed; with a forecast, the rate
#: is cut no lower than this share of the buffer's measured drain.
OVERFLOW_CUT = 0.5
OVERFLOW_DRAIN_SHARE = 0.9
#: Report intervals without a report before the rate starts to decay.
STALE_HOLD_INTERVALS = 20
#: With a forecast, W's gain is 1 up to FORECAST_DEADBAND_PKTS packets of forecast error and rises
#: linearly to 1 + FORECAST_BOOST at FORECAST_DEADBAND_PKTS + FORECAST_SPAN_PKTS packets: small
#: errors (noise) are corrected gently, so that a hop's rate stays as steady as its drain (what the
#: hop upstream sees as its own drain), large ones (a capacity drop) fast.
FORECAST_DEADBAND_PKTS = 4.0
FORECAST_SPAN_PKTS = 10.0
FORECAST_BOOST = 7.0
#: The settled law's base rate follows the newest drain when it is more than NEWEST_FALL below the
#: drain, down to NEWEST_CAP below it at most (see settled_base).
NEWEST_FALL = 0.08
NEWEST_CAP = 0.2


@dataclass(slots=True)
class Forecast:
    """What a node whose rate reaches the wire late knows about the downstream buffer.

    Not frozen, though nobody changes one, and with an ``__init__`` of its own: an agent builds
    one per report (every 3-4 packet-hops of a simulation), and the one ``dataclass`` writes is
    Python even in the compiled module (see ``controlplane.report.Report``)."""

    occupancy: float  # forecast occupancy (fraction) when a rate set now arrives downstream
    drain_bps: float  # the downstream buffer's measured drain of this node's packets, b/s
    # start-up brake: b/s above the drain allowed per unit of forecast room below O_max (the
    # buffer in bits over the approach time); 0 = none
    approach_bps: float = 0.0
    # the damping term's scale: the usual report gap over this one (1 = a report on time)
    damp_scale: float = 1.0
    # the forecast follows a fall of the drain whose length it guesses (controlplane/forecast.py)
    guessed_fall: bool = False
    # the exact drain over the newest two departures, b/s (0: none): see settled_base
    newest_bps: float = 0.0
    # the buffer was starved at the report (it held no more than the packet that arrived): it drains all
    # that reaches it, so its measured drain is what this node sent, not what it can take (see settled_base)
    starved: bool = False
    # a report within the drain's window found it starved: the drain is then what this node sent over part
    # of the window, a lower bound of what the buffer takes, not a measure of it (0: not measured yet)
    window_starved: bool = False
    # while window_starved: the higher of the exact drain over the newest report gap and the window's drain before
    # a fall replaced it, b/s (0: none), the start-up brake's drain when higher (controlplane/forecast.py,
    # QueueForecast.law_forecast: a fall of what a starved buffer drained is this node's own spacing)
    gap_bps: float = 0.0
    # what reached this node for the buffer over the newest report gap (the arrivals at its own queue), b/s (0: none):
    # a start-up brake's guess does not hold the rate below it (see the module docstring)
    arrival_bps: float = 0.0
    # the change of the buffer's occupancy over the newest report gap that the packets this node stamped a horizon
    # before explain, fraction: what reached the buffer in the gap less the drain over the gap, a packet nearer none
    # (controlplane/forecast.py, QueueForecast._committed_change; see unexplained; 0: none)
    committed_change: float = 0.0
    # while the drain's window holds a starved report and the buffer holds no more than this node sent it over the
    # newest report gap (QueueForecast.passing): the highest lower bound of what it takes, the newest gap's drain or
    # the window's (QueueForecast._lower_bound_pps), b/s; the settled base is no lower (settled_base; 0: none)
    passing_bps: float = 0.0

    def __init__(self, occupancy: float, drain_bps: float, approach_bps: float = 0.0, damp_scale: float = 1.0,
                 guessed_fall: bool = False, newest_bps: float = 0.0, starved: bool = False,
                 window_starved: bool = False, gap_bps: float = 0.0, arrival_bps: float = 0.0,
                 committed_change: float = 0.0, passing_bps: float = 0.0) -> None:
        self.occupancy, self.drain_bps, self.approach_bps = occupancy, drain_bps, approach_bps
        self.damp_scale, self.guessed_fall, self.newest_bps = damp_scale, guessed_fall, newest_bps
        self.starved, self.window_starved, self.gap_bps = starved, window_starved, gap_bps
        self.arrival_bps, self.committed_change, self.passing_bps = arrival_bps, committed_change, passing_bps

    def brake(self) -> Brake:
        """The start-up brake on this report: its drain the higher of the window's and the newest gap's
        (both what this node sent while the buffer was starved), its approach ``approach_bps``."""
        drain = self.gap_bps if self.gap_bps > self.drain_bps else self.drain_bps
        return Brake(drain, self.approach_bps)


@dataclass(slots=True)
class Brake:
    """The start-up brake: during the ramp the rate is at most the downstream buffer's measured
    drain plus ``approach_bps`` per unit of room left below O_max (the buffer in bits over the
    approach time), so that the buffer approaches O_max instead of overrunning it."""

    drain_bps: float
    approach_bps: float

    def __init__(self, drain_bps: float, approach_bps: float) -> None:  # compiled (see Forecast)
        self.drain_bps, self.approach_bps = drain_bps, approach_bps

    def cap(self, o_max: float, occupancy: float, packet: float) -> float:
        """Aimed one packet past O_max: approached from below alone, O_max would be reached only
        in the limit, and the ramp (which ends there) would never hand over to the settled law."""
        return self.drain_bps + max(0.0, o_max + packet - occupancy) * self.approach_bps


def forecast_gain(error: float, packet: float, guessed_fall: bool = False) -> float:
    """W's gain for a forecast error ``error`` (fraction, forecast less target); ``packet`` = 1 / capacity.

    No gain for a cut while the forecast rests on a guessed fall (``guessed_fall``): its length is
    unknown (expected to last as long again as it has), and on BMv2's queues a cut is stamped on every
    packet queued until the next command, for good. Amplified, a dip of a quarter of a second stamped
    four times the deficit the dip needed, which came back a second later as a wave down the line
    (docs/results.md, "capacity-drop: a dip that ends"). A rise is amplified as ever: under a
    guessed fall the forecast errs toward a fuller buffer. The law passes ``guessed_fall`` only when
    it has the damping term, which reacts first to the fall: without it (``k_p`` = 0) the gain is
    its only fast answer, and the paper's law lost twice as much without it."""
    if not packet or (guessed_fall and error > 0):
        return 1.0
    pkts = abs(error) / packet
    past = pkts - FORECAST_DEADBAND_PKTS  # min(1, max(0, past) / span), written out (every report)
    share = (past if past > 0.0 else 0.0) / FORECAST_SPAN_PKTS
    return 1.0 + FORECAST_BOOST * (share if share < 1.0 else 1.0)


def unexplained(change: float, committed: float) -> float:
    """The part of a fall of the buffer's occupancy over a report gap (``change``, fraction) that the damping acts
    on, given the change ``committed`` that the packets this node stamped explain (``Forecast.committed_change``:
    what reached the buffer in the gap less the drain over it): where both fall, only the fall beyond that part
    (none if that part is the larger), that is the buffer draining more than the drain the law counts; a rise, or a
    fall the arrivals do not explain, whole.

    Why: on BMv2's queues what reaches the buffer in a gap was stamped a horizon before, and the forecast Ô already
    counts it. A hole in the stamped schedule (packets stamped at the floor a second before) passing the buffer
    read as the buffer emptying: S4's law toward H4's 20-packet receive buffer (1 Mb/s playout) saw 10, 5, then 1
    packet as the hole arrived, and the damping raised the rate from 0.98 to 1.73 Mb/s while Ô read 16-20 packets;
    its stamps overflowed the buffer a horizon later (tests/topo/random_cases/hole-burst-receive-buffer-line.yaml).
    Only a fall: a rise the arrivals explain is damped whole, as it was (the cut is what keeps the buffer from
    overflowing): left undamped too (this hop's departures for the arrivals), they cost tests/topo/random_cases/ 325
    packets more at seeds 1-3 (7,300 -> 7,625, measured before a starved report's base left the damping out;
    ramp-drain-fall-tree.yaml 111 -> 147 at each seed). Never more than the change measured, nor against it: the
    damping stays on the occupancy."""
    if change >= 0.0 or committed >= 0.0:
        return change
    rest = change - committed
    return rest if rest < 0.0 else 0.0


def settled_base(forecast: Forecast, rate: float = 0.0, below: bool = True) -> float:
    """The settled law's base rate (b/s): the drain, or the newest drain when it has clearly fallen;
    on a starved buffer (``forecast.starved``) no less than the law's own ``rate``; while the drain's
    window holds a starved report (``forecast.window_starved``) the drain itself, or the law's own
    ``rate`` if the window has not measured one yet (0), and, while the forecast is at or below the law's
    target (``below``), no less than the lower bound of what the buffer takes while it holds no more than this
    node sent it over the newest gap (``forecast.passing_bps``), up to the law's own ``rate``.

    Why that bound: while the window holds a starved report, the drain is a lower bound too (what this node
    sent, or the backlog's drain over gaps timed by the reports), and the law settled on it follows its own
    rate down. A buffer that holds no more than the newest gap brought it turned over all it held within the
    gap, so the gap's departures (and the window's) are what it took of all it was given, no more than it
    takes: the base is the higher of the known lower bounds, as the start-up brake's drain is. Without it, S4's
    law toward S3's 5-packet buffer in front of a 20 Mb/s exit (1500 B and 200 B frames, which read 1 and 3
    packets by turns) sat at the window's backlog drain, 15.3 Mb/s, while each gap's drain read 17-21, and the
    buffer of S4 behind it overflowed (tests/topo/random_cases/mixed-frame-exit-shortfall-long-link.yaml:
    9/30/0 lost at seeds 1-3, 16.7 Mb/s at seed 2; with it 0/0/0, 19.9 Mb/s). Not while the buffer holds more
    than a gap brought: its packets are then a backlog's, the gap's drain one report's count of what it takes
    (the window's backlog drain measures that over more gaps); taken there too, S4's law toward H4's 20-packet
    receive buffer rose from 0.94 to 1.00 Mb/s (its 1 Mb/s playout) at a report that found 2 packets there, one
    a gap, and the floor's hole passing then overflowed the buffer: 3 lost at each of seeds 1-3, 0 without
    (tests/topo/random_cases/hole-burst-receive-buffer-line.yaml). Nor above the target: the law then cuts, and a
    base that errs low errs toward the cut the buffer asks for; taken there, S3's law toward S1, its forecast 66
    packets of a 20-packet buffer, cut less deep, and the stamps at its floor trickled out more
    (floor-stamped-trickle.yaml: 9 -> 27 lost at each of seeds 1-3). Up to the law's own rate: the bound keeps
    the law from following a lower-bound drain below the rate it holds, it is no reason to raise it (the step
    does that); above it, over tests/topo/random_cases/ at seeds 1-3, 7,566 lost where 7,501 were
    (brake-guess-small-buffers-line.yaml 472 -> 541), 7,496 with it.

    Why not the newest drain while the window holds a starved report: the drain is then what this node
    sent, not what the buffer takes, and a newest drain below it is this node's own spacing (a few
    packets of mixed sizes after the buffer emptied), not a capacity drop behind the buffer. Followed,
    it cut a law on a 10 Mb/s link whose buffer emptied every few reports by up to 20 % at each report
    that found 2-7 packets there (S4 -> S5 in tests/topo/random_cases/burst-brake-merge.yaml, seed 1:
    7-10 Mb/s, the link carrying 8.7 then 8.0 Mb/s over 1.4-1.6 and 1.6-2 s, 9.6 and 9.8 without it);
    every buffer up the line of 10 Mb/s links gained what it lost, and S2's buffer from S1 overflowed
    (15 lost). Why the own rate before a drain is measured: a drain of 0 is none, and as the base it cut
    the law to its floor at the report its ramp ended, a floor that BMv2's queue stamps on every packet
    queued until the next command (issue 46's binary tree of 7 switches, four senders to one sink).

    Why the own rate on a starved buffer: a buffer that holds no more than the packet just arrived
    drains everything that reaches it, so its drain measures what this node sent, not what the
    buffer can take, and it reads 0 until the drain's window spans its shortest time. Taken as the
    base, the law follows its own rate down and never back up: a 2-packet buffer (its 80 % target
    not a whole packet, so it reads 1 packet at every report) settled on its second report, its
    drain still unmeasured (0), and the law fell from 19.9 Mb/s to its floor, 1.5 % of a link whose
    buffer behind it never held a second packet; the hop upstream, at its own floor above that,
    overflowed (tests/topo/random_cases/starved-two-packet-buffer.yaml). The buffer's drain is at
    least what it receives, and the step (the buffer is below its target) then raises the rate.

    Why: after a capacity drop behind the buffer, its occupancy gains its first packet only when
    the excess has made one (at 0.2 Mb/s over the new capacity at the paper's rates: up to 40 ms,
    four report intervals, depending on where the departures fell between the arrivals), while the
    drop shows at the first departure that leaves late. The newest two departures (8 ms apart
    against 6.7 before) tell it at the first report that holds them. Not trusted further than
    this: the base rate falls to the newest drain for that report only (it is never extrapolated
    over the horizon, as a fall of the drain is in the forecast), by at most ``NEWEST_CAP``, and
    only past ``NEWEST_FALL``, above the settled drain's spread (one late departure in a steady
    stream costs one report at most 20 % slower: two packets stamped a little apart). Not while
    the forecast follows a fall of the drain (``guessed_fall``): the fall is then in the drain,
    expected to end (docs/background/alinea.md, "The newest drain")."""
    base, newest = forecast.drain_bps, forecast.newest_bps
    if forecast.starved or (forecast.window_starved and base <= 0.0):
        return rate if rate > base else base
    if forecast.window_starved:
        bound = forecast.passing_bps if below else 0.0
        bound = bound if bound < rate else rate
        return bound if bound > base else base
    if forecast.guessed_fall or not 0.0 < newest < base * (1 - NEWEST_FALL):
        return base
    floor = base * (1 - NEWEST_CAP)
    return newest if newest > floor else floor


class AlineaLaw:
    """One law instance: one node regulating its rate toward one downstream neighbour."""

    def __init__(self, params: LawParams, rate: float | None = None) -> None:
        self.params = validate_law(params)  # (the setter below: its fields too)
        self.rate = params.r_floor if rate is None else self._clamp(rate)
        self.o = params.o_min
        self.w = params.w_max
        self.last_occupancy: float | None = None
        self.last_packet = 0.0  # the previous report's ``packet`` (0: none), to rescale last_occupancy
        self.reports = 0
        self.stale = False
        # the ramp's rate a start-up brake cut on lower bounds of the drain came from (0: none; module docstring)
        self.braked_from = 0.0
        # the damping term's cut of the newest settled report with a forecast, b/s (negative: a raise; 0: none)
        self._damped = 0.0
        self.last_report_ns: int | None = None
        self.interval_ns = 0
        self._silent = 0

    @property
    def params(self) -> LawParams:
        return self._params

    @params.setter
    def params(self, params: LawParams) -> None:
        """The parameters, and each of their fields in an attribute of the law's own: a report reads them ~15 times.

        Why: ``LawParams`` is a plain class (native_class=False, to be copied and pickled), so a compiled law read
        each field by name, a dictionary lookup and a float unboxed each time: a tenth of the loop analysis's
        answers (issue 46). The fields are the same objects (a frozen dataclass's: they never change), so every
        expression that reads them computes what it did."""
        self._params = params
        self._o_min, self._o_max = params.o_min, params.o_max
        self._w_min, self._w_max = params.w_min, params.w_max
        self._r_floor, self._r_max = params.r_floor, params.r_max
        self._k_p = params.k_p

    # ---- the rule ----------------------------------------------------------------------------
    def on_report(self, occupancy: float, overflow: bool = False, now_ns: int | None = None,
                  interval_ns: int = 0, packet: float = 0.0, forecast: Forecast | None = None,
                  brake: Brake | None = None) -> float:
        """Apply one report (``occupancy`` as a fraction of the buffer); returns the new rate.

        ``now_ns`` and the report's ``interval_ns`` let :meth:`tick` notice when reports stop;
        ``packet`` is one packet as a fraction of the buffer (1 / capacity), for the resting rule
        and the forecast gain; ``forecast``: see the module's docstring; ``brake``: the start-up
        brake for a law without a forecast (a host, whose packets leave as they are paced).
        """
        if now_ns is not None:
            self.last_report_ns, self.interval_ns, self._silent = now_ns, interval_ns, 0
        if self.stale:
            self.restart()
        measured = 1.0 if overflow else (occupancy if occupancy > 0.0 else 0.0)  # max(0, O(k))
        if packet and self.last_packet and packet != self.last_packet and self.last_occupancy is not None:
            self.last_occupancy *= packet / self.last_packet  # O(k-1) on this report's capacity
        damp = bool(self._k_p) and self.o >= self._o_max and self.last_occupancy is not None
        if forecast is None:
            occ = measured
            rate = self.rate + self.w * (self.o - occ)
            if damp:
                rate -= self._k_p * (occ - self.last_occupancy)  # type: ignore[operator]
            elif brake is not None and occ > packet:
                rate = min(rate, brake.cap(self._o_max, occ, packet))
        else:
            occ = 1.0 if overflow else (forecast.occupancy if forecast.occupancy > 0.0 else 0.0)
            # without the damping term (k_p = 0, the paper's law) the gain is the law's only fast answer
            step = forecast_gain(occ - self.o, packet, forecast.guessed_fall and bool(self._k_p)) * self.w * (self.o - occ)
            if damp:
                change = forecast.damp_scale * unexplained(measured - self.last_occupancy,  # type: ignore[operator]
                                                           forecast.committed_change)
                damped = self._k_p * change
                rate = settled_base(forecast, self.rate + self._damped, occ <= self.o) + step - damped
                self._damped = damped
                if forecast.starved and forecast.approach_bps and rate > self.rate:  # no windup (module docstring)
                    cap = forecast.brake().cap(self._o_max, occ, packet)
                    cap = cap if cap > self.rate else self.rate
                    rate = rate if rate < cap else cap
            else:
                rate = self.rate + step
                if forecast.approach_bps:  # the ramp: approach O_max, don't overrun it
                    brake = forecast.brake()
                    if occ > packet:
                        cap = brake.cap(self._o_max, occ, packet)
                        if rate > cap:
                            if forecast.window_starved and rate > self.braked_from and self._was_starved(packet):
                                self.braked_from = self._clamp(rate)  # a cut on lower bounds of the drain alone
                                arrived = forecast.arrival_bps  # ... is a guess: not below what reaches this node
                                if arrived > cap:
                                    cap = arrived if arrived < rate else rate
                            rate = cap
                    elif self.braked_from > rate:  # starved again after such a cut: back at the brake's pace
                        drain = brake.drain_bps
                        taken = drain if drain < self.rate else self.rate  # known taken at the rate set
                        back = Brake(taken, forecast.approach_bps).cap(self._o_max, occ, packet)
                        if forecast.arrival_bps > back:  # ... and no lower than what reaches this node
                            back = forecast.arrival_bps
                        back = back if back < self.braked_from else self.braked_from
                        rate = back if back > rate else rate
        if not damp or forecast is None:
            self._damped = 0.0
        if damp or overflow or rate >= self.braked_from:
            self.braked_from = 0.0
        if overflow:
            cut = self.rate * OVERFLOW_CUT
            if forecast is not None:
                cut = max(cut, forecast.drain_bps * OVERFLOW_DRAIN_SHARE)
            rate = min(rate, cut)
        self.rate = self._clamp(rate)
        if self.o < occ < self._o_max:
            self.o = occ
            self.w = max(self.w / 2, self._w_min)
        elif packet and abs(occ - self.o) < packet / 2 and self.o < self._o_max:
            self.o = min(self.o + packet, self._o_max)  # at rest on the target: raise it by one packet
            self.w = max(self.w / 2, self._w_min)
        elif occ > self._o_max:
            self.o = self._o_max
            self.w = self._w_min
        self.last_occupancy, self.last_packet = measured, packet
        self.reports += 1
        return self.rate

    def _was_starved(self, packet: float) -> bool:
        """The previous report found the buffer starved (no more than one packet; none yet counts as starved):
        the newest report gap's drain then began on an empty buffer, a lower bound like the window's."""
        last = self.last_occupancy  # a whole number of packets, as a fraction (rescaled: up to rounding)
        return last is None or (round(last / packet) <= 1 if packet > 0.0 else last <= 0.0)

    def hold_at_least(self, rate: float) -> None:
        """Raise the rate to ``rate`` if it is below (within [floor, R_max])."""
        self.rate = self._clamp(rate if rate > self.rate else self.rate)

    def tick(self, now_ns: int) -> bool:
        """Called periodically by the owner; True if the rate changed because reports stopped.

        Each whole report interval of silence beyond ``STALE_HOLD_INTERVALS`` halves the rate
        (down to the floor) once.
        """
        if self.last_report_ns is None or self.interval_ns <= 0:
            return False
        silent = (now_ns - self.last_report_ns) // self.interval_ns
        if silent <= self._silent:
            return False
        changed = False
        for n in range(self._silent + 1, silent + 1):
            if n > STALE_HOLD_INTERVALS:
                self.stale = True
                before, self.rate = self.rate, self._clamp(self.rate / 2)
                changed = changed or self.rate != before
        self._silent = silent
        return changed

    def restart(self) -> None:
        """Start the adaptation again (O = O_min, W = W_max), keeping the current rate."""
        self.o, self.w = self._o_min, self._w_max
        self.last_occupancy = None
        self.braked_from = 0.0
        self.stale = False

    # ---- parameters ----------------------------------------------------------------------------
    def set_params(self, params: LawParams) -> None:
        """New parameters, effective from the next report.

        The state is carried over into the new ranges: a target pinned at the old O_max stays
        pinned at the new one (the loop keeps regulating), otherwise O and W are clamped into
        [O_min, O_max] and [W_min, W_max]; the rate is clamped into [floor, R_max] now.
        """
        if params is self.params:  # validated when it was set (an agent hands the same object per report)
            return
        validate_law(params)
        if params == self.params:
            self.params = params  # the same values: the next report's check is one of identity
            return
        pinned = self.o >= self.params.o_max
        self.params = params
        self.o = params.o_max if pinned else min(max(self.o, params.o_min), params.o_max)
        self.w = min(max(self.w, params.w_min), params.w_max)
        self.rate = self._clamp(self.rate)

    def _clamp(self, rate: float) -> float:
        """``min(max(rate, r_floor), r_max)``, written out: twice per report."""
        floor, top = self._r_floor, self._r_max
        rate = floor if floor > rate else rate
        return top if top < rate else rate
