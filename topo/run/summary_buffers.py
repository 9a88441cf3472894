"""A run's buffers as the summary and the figures both see them (docs/reference/metrics.md, "Buffers").

Why one module: the summary's numbers (mean, std, convergence) and the figures' lines must be
reduced from the same rows against the same targets, or they disagree. Three things are decided
here once:

* **which rows are one buffer.** A row is a report a law applied (hop by hop), a report kept as a
  measurement (a host's receive buffer in an end-to-end run), or an end-to-end run's sample of an
  output FIFO (``LawRow.fifo``). The FIFO of u toward v and v's own receive buffer are both
  "v<-u" by the naming rule (the buffer of link u->v); they are different queues, so the FIFO of
  a host's link is named ``v<-u (FIFO at u)`` when v has a receive buffer.
* **its physical queue** (``queue``): where the packets wait, one name across controls, so that a
  comparison draws the same queue in one panel: ``u->v`` for the packets waiting at u for link
  u->v (an end-to-end FIFO, or a hop-by-hop ingress buffer at u whose flows all leave by u->v),
  ``H receive buffer`` for a host's playout buffer.
* **its target in force** at each report: the O_max the law applied it with (``LawRow.o_max``, so
  that ``hbh params set`` and timed ``alinea`` events move it from their time on); rows without it
  take the topology's O_max with the timed events applied at their times.
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass, field
from typing import Any

from topo.net.model import Topology
from topo.net.plan import network_mode
from topo.net.record import LawRow, Recorder

__all__ = ["BAND", "BufferRows", "buffer_rows", "buffer_stats", "convergence", "idle_why", "in_band", "runs_law", "target_changes"]

BAND = 0.03  # 3 percentage points
#: a law whose rate stays at this share of its R_max or above is not what limits its buffer's inflow
AT_CEILING = 0.95


@dataclass
class BufferRows:
    """One buffer's rows, oldest first, with the target in force at each (None: no law)."""

    name: str  # summary.json's key
    node: str  # whose buffer (v)
    fed_by: str  # u
    kind: str  # "regulated" (a law), "measured" (reports, no law), "fifo" (an end-to-end output FIFO)
    queue: str  # the physical queue (see the module)
    rows: list[LawRow] = field(default_factory=list)
    targets: list[float | None] = field(default_factory=list)
    _times: list[int] = field(default_factory=list, repr=False)

    def target_at(self, t_ns: int) -> float | None:
        """The target in force at ``t_ns`` (that of the last row at or before it; the first row's before)."""
        if not self.targets:
            return None
        if len(self._times) != len(self.rows):
            self._times = [r.t_ns for r in self.rows]
        i = bisect.bisect_right(self._times, t_ns)
        return self.targets[max(0, i - 1)]


def buffer_rows(topo: Topology, rec: Recorder) -> dict[str, BufferRows]:
    """Every buffer's rows, keyed by summary name, in path order."""
    hop_by_hop = network_mode(topo) == "hop-by-hop"
    grouped: dict[tuple[str, str, bool], list[LawRow]] = {}
    for r in rec.laws:
        grouped.setdefault((r.node, r.toward, bool(getattr(r, "fifo", False))), []).append(r)
    out: dict[str, BufferRows] = {}
    for (u, v, fifo), rows in sorted(grouped.items(), key=lambda kv: _path_order(topo, kv[0][:2]) + (kv[0][2],)):
        rows.sort(key=lambda r: r.t_ns)
        receive = not fifo and v in topo.nodes and not topo.nodes[v].is_switch
        name = f"{v}<-{u}"
        if fifo and v in topo.nodes and topo.nodes[v].receive_buffer is not None:
            name = f"{v}<-{u} (FIFO at {u})"
        if fifo:
            kind, queue = "fifo", f"{u}->{v}"
        else:
            kind = "regulated" if hop_by_hop and (u, v) in topo.law and runs_law(topo, u) else "measured"
            queue = f"{v} receive buffer" if receive else _ingress_queue(topo, u, v)
        b = BufferRows(name, v, u, kind, queue, rows)
        b.targets = [_row_target(topo, r) for r in rows] if kind == "regulated" else [None] * len(rows)
        out[name] = b
    return out


def runs_law(topo: Topology, u: str) -> bool:
    """Does u set its rate toward its neighbours from their reports? A switch does (hop by hop); a
    host only when it sends an ALINEA flow: its other flows' rates are their controls' own (TCP's
    segments and ACKs, an end-to-end control's packets and feedback, a fixed rate), and the reports
    it gets are kept as measurements (laws.csv: rate 0, no ``o_max``). The buffer such a host feeds
    has no target: counted as regulated, the file's O_max stood as one, and the buffer, which
    nothing steers to it, kept the run's convergence at "none" (a TCP receiver's ACKs at 1 % of an
    80 % target)."""
    node = topo.nodes.get(u)
    if node is None or node.is_switch:
        return True
    return any(f.src == u and f.control == "alinea" and f.sends for f in topo.flows)


def _ingress_queue(topo: Topology, u: str, v: str) -> str:
    """Where the packets of v's ingress buffer from u wait: v's output queue, when all its flows
    leave v by one link; else the logical buffer itself."""
    nexts = {f.path[i + 1] for f in topo.flows for i in range(1, len(f.path) - 1)
             if f.path[i - 1] == u and f.path[i] == v}
    return f"{v}->{nexts.pop()}" if len(nexts) == 1 else f"{v}<-{u}"


def _path_order(topo: Topology, key: tuple[str, str]) -> tuple[int, str, str]:
    for f in topo.flows:
        if key[0] in f.path and key[1] in f.path:
            return (f.path.index(key[1]), key[0], key[1])
    return (len(topo.nodes), key[0], key[1])


def _row_target(topo: Topology, r: LawRow) -> float | None:
    o_max = getattr(r, "o_max", None)
    return o_max if o_max is not None else static_target(topo, r.node, r.toward, r.t_ns)


def static_target(topo: Topology, u: str, v: str, t_ns: int) -> float | None:
    """The file's O_max of law (u, v) with the timed ``alinea`` events up to ``t_ns`` applied."""
    if (u, v) not in topo.law:
        return None
    target = topo.law[(u, v)].o_max
    for ev in sorted(topo.events, key=lambda e: e.at_ns):
        if ev.at_ns <= t_ns and (u, v) in ev.targets and "o_max" in dict(ev.law_changes):
            target = dict(ev.law_changes)["o_max"]
    return target


def in_band(error: float) -> bool:
    """|error| <= BAND, at the occupancies' own resolution. A report's fraction is packets over a
    capacity, so 77 of 100 packets against 80 % is exactly 3 points; in binary floating point
    0.77 - 0.80 reads 0.030000000000000027 and 0.83 - 0.80 reads 0.029999999999999916, so a plain
    comparison put 77 outside the band and 83 inside it, and moved convergence times by seconds."""
    return round(abs(error), 9) <= BAND


def target_changes(b: BufferRows) -> list[list[float]]:
    """[[t_s, target], ...]: the target at the first row and at every change after."""
    out: list[list[float]] = []
    for r, target in zip(b.rows, b.targets):
        if target is not None and (not out or out[-1][1] != target):
            out.append([round(r.t_ns / 1e9, 6), target])
    return out


def convergence(rows: list[LawRow], targets: list[float | None], end_ns: int) -> float | None:
    """The first time from which the buffer stays within BAND of the target in force at every
    report until ``end_ns`` (s); None if the last report before ``end_ns`` is outside."""
    inside_since: int | None = None
    for r, target in zip(rows, targets):
        if r.t_ns > end_ns:
            break
        if target is not None and in_band(r.fraction - target):
            if inside_since is None:
                inside_since = r.t_ns
        else:
            inside_since = None
    return None if inside_since is None else inside_since / 1e9


def buffer_stats(topo: Topology, b: BufferRows, start_ns: int, end_ns: int,
                 carried: bool | None = None) -> dict[str, Any]:
    """summary.json's entry of one buffer over the steady window [start_ns, end_ns]; ``carried``:
    whether a packet of the flows through it arrived at its destination in the window (None: not
    known, and an empty buffer is then not called idle)."""
    inside = [(r, t) for r, t in zip(b.rows, b.targets) if start_ns <= r.t_ns <= end_ns]
    window = [r.fraction for r, _ in inside]
    target = b.target_at(end_ns)
    # against the target in force at each report: a target changed inside the window is not spread
    errors = [r.fraction - t for r, t in inside if t is not None]
    mean = statistics.fmean(window) if window else 0.0
    spread = errors if target is not None and errors else window
    std = statistics.pstdev(spread) if len(spread) > 1 else 0.0
    out: dict[str, Any] = {
        "node": b.node, "fed_by": b.fed_by, "kind": b.kind, "queue": b.queue, "target": target,
        "mean": round(mean, 4), "std": round(std, 4),
        "max": round(max((r.fraction for r in b.rows), default=0.0), 4),
        "within_band": None if target is None else bool(errors) and in_band(statistics.fmean(errors))
        and in_band(std),
        "convergence_s": None if target is None else convergence(b.rows, b.targets, end_ns),
        "reports": len(b.rows)}
    changes = target_changes(b)
    if len(changes) > 1:
        out["targets"] = changes
    idle = idle_why([r for r, _ in inside], carried)
    if idle is not None:
        out["idle"] = idle
    if target is not None:
        why = _unreachable(topo, b, inside)
        if why is not None:
            out["cannot_reach"] = why
    return out


def idle_why(inside: list[LawRow], carried: bool | None) -> str | None:
    """Why the buffer's steady-window mean measured no traffic, or None. Its ``mean`` stays in the
    summary (0.0 where no report came), but a 0.0 % read as "the law keeps it empty" for a buffer
    nothing crossed: `hbh run` prints ``idle`` there, as convergence says ``cannot_reach: idle``."""
    if not inside:
        return "no report over the steady window"
    if carried is False and all(r.fraction == 0 for r in inside):
        return "empty at every report of the steady window, and no packet of its flows arrived then"
    return None


def _unreachable(topo: Topology, b: BufferRows, inside: list[tuple[LawRow, float | None]]) -> str | None:
    """Why the buffer cannot reach its target, or None: over the steady window it never came within
    BAND of it while its law let the feeder send at (nearly) its R_max -- the law asked for more
    than arrives, so the buffer drains at least as fast as it can be fed (it is not a bottleneck)."""
    law = topo.law.get((b.fed_by, b.node))
    if law is None:
        return None
    if not inside:
        # its flows stopped before the window (or start after it): it had reported before, so
        # counted as one that can reach its target it stood as "did not settle" and took the
        # run's convergence with it, for a buffer nothing crossed while it was measured
        return "idle: no report over the steady window (no packet of its flows reached it then)"
    if any(t is not None and (r.fraction >= t or in_band(r.fraction - t)) for r, t in inside):
        return None
    rates = [r.rate_bps for r, _ in inside]
    if statistics.fmean(rates) < AT_CEILING * law.r_max:
        return None
    peak = max(r.fraction for r, _ in inside)
    return (f"never fills: {b.fed_by} may send at its R_max ({law.r_max / 1e6:g} Mb/s) and {b.node} drains this "
            f"buffer as fast as it arrives (at most {100 * peak:.1f}% against a target of "
            f"{100 * (inside[-1][1] or 0):.1f}%): not a bottleneck")
