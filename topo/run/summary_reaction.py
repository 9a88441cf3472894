"""Reaction to a link-rate event, measured from what happened, not from a sampling bin
(docs/reference/metrics.md, "Reaction").

* **reaction** (hop by hop): the time from the event until the law of the hop that feeds the
  congested node first sets a rate ``REACTION_DROP`` below the one it set before the event (from
  the law's rows: one per report, so its resolution is the report interval);
* **source reaction** (every control): the time from the event until the sources of the flows
  that cross the link have cut their sending rate ``REACTION_DROP`` below their rate over the
  second before it, read from the packets: packets sent by time t is the highest sequence number
  received that was sent by t, plus one (a lost packet still counts as sent), and the rate at the
  send time of each packet is the packets sent over the ``window`` before it. Packets still queued
  (or lost) when the run ends have not arrived: after the last packet received, the source's own
  counter, sampled every 100 ms, says what it sent (interpolated between samples), and the rate is
  read at each sample. The window is the time of ``REACTION_PACKETS`` packets at the rate before the
  event (at least ``REACTION_MIN_WINDOW_NS``): short against the 0.5 s bins of the series; one
  packet fewer in it is the ``REACTION_DROP`` cut itself, so the count is read between the packets
  (interpolated), never rounded to a whole one. It is the measure's resolution and is recorded:
  a window that ends after the cut lags it by up to a window. If the sources were already below
  that level at the event (a sawtooth in its fall), the reaction is their first fall
  ``REACTION_DROP`` below their rate at the event: a fall that began before it is not its reaction.
"""

from __future__ import annotations

import bisect
from typing import Any

from topo.net.model import Topology
from topo.net.record import Recorder
from topo.run.summary_buffers import BufferRows, convergence

__all__ = ["REACTION_DROP", "reaction", "source_reaction", "crossing"]

REACTION_DROP = 0.05
REACTION_PACKETS = 20
REACTION_MIN_WINDOW_NS = 10_000_000


def crossing(topo: Topology, a: str, b: str) -> list[Any]:
    """The flows whose path uses the link a-b (either direction)."""
    return [f for f in topo.flows
            if any({f.path[i], f.path[i + 1]} == {a, b} for i in range(len(f.path) - 1))]


def _regulated_feeder(topo: Topology, buffers: dict[str, BufferRows], a: str,
                      b: str) -> tuple[str, str, BufferRows] | None:
    """(u, the hop feeding u, u's buffer from it) for the first flow crossing a-b (u the link's end
    it reaches first) whose buffer there a law regulates; None when no crossing flow's is.

    Why not simply the first crossing flow: in a file that mixes controls, that flow may come from
    a host that runs no law (a TFRC or TCP sender), whose buffer is only measured, while an ALINEA
    flow beside it is regulated at the same node: the hop's reaction then went missing, or not,
    with the order of the flows in the file."""
    for flow in crossing(topo, a, b):
        u = a if flow.path.index(a) < flow.path.index(b) else b
        i = flow.path.index(u)
        if i == 0:
            continue
        buf = buffers.get(f"{u}<-{flow.path[i - 1]}")
        if buf is not None and buf.kind == "regulated":
            return u, flow.path[i - 1], buf
    return None


def reaction(topo: Topology, buffers: dict[str, BufferRows], ev: Any, duration_ns: int) -> dict[str, Any]:
    """The event's entry in summary.json's ``events``: the regulating hop's reaction and the
    congested buffer's peak and recovery (hop by hop)."""
    a, b = ev.link
    result: dict[str, Any] = {"at_s": ev.at_ns / 1e9, "kind": "link_rate", "link": f"{a}-{b}",
                              "rate_bps": ev.rate_bps}
    found = _regulated_feeder(topo, buffers, a, b)
    if found is None:
        return result  # end to end: no hop sets a rate (see source_reaction_s)
    u, feeder, buf = found
    pairs = list(zip(buf.rows, buf.targets))
    before = [r for r, _ in pairs if r.t_ns <= ev.at_ns]
    after = [(r, t) for r, t in pairs if r.t_ns > ev.at_ns]
    if not before or not after or before[-1].rate_bps <= 0:
        return result
    rate0 = before[-1].rate_bps
    hit = next((r for r, _ in after if r.rate_bps <= rate0 * (1 - REACTION_DROP)), None)
    interval_us = topo.ports[(u, feeder)].interval_us if (u, feeder) in topo.ports else 0
    recovered = convergence([r for r, _ in after], [t for _, t in after], duration_ns)
    result.update({"regulator": feeder, "buffer": buf.name, "rate_before_bps": round(rate0),
                   "reaction_s": None if hit is None else round((hit.t_ns - ev.at_ns) / 1e9, 4),
                   "reaction_intervals": (None if hit is None or not interval_us
                                          else round((hit.t_ns - ev.at_ns) / 1e3 / interval_us, 2)),
                   "max_occupancy_after": round(max(r.fraction for r, _ in after), 4),
                   "recovery_s": None if recovered is None else round(recovered - ev.at_ns / 1e9, 4)})
    return result


def _sent_curve(rows: list[tuple[int, int, int]], samples: list[Any]) -> tuple[list[int], list[float]]:
    """(times, packets sent by then): exact points from the received packets (a packet's send time,
    its sequence number + 1) and, after the last of them, from the source's own counter
    (``FlowSample.sent``, every 100 ms: the packets still queued, or lost, at the end of the run), the
    running maximum in time order; between two points the count is interpolated.

    Why the counter only after the packets: where packets cover the time, a sample's whole count sits
    up to a packet off the line through the packets around it (the count steps at each packet, the line
    runs between them), and one packet is the whole 5 % cut over a 20-packet window. Mixed in, the
    samples moved the reaction onto their 100 ms grid: on topo/bottleneck-drop.yaml (seed 1) TFRC
    read 0.300 s for the packets' 0.212 s (the sample at the event lowered the rate at the event, hence
    the level to cut below) and CVIHIS BLM 0.400 s for 0.542 s."""
    last_sent = max((sent for _, sent, _ in rows), default=-1)
    pts = sorted([(sent, seq + 1) for seq, sent, _ in rows]
                 + [(s.t_ns, s.sent) for s in samples if s.t_ns > last_sent])
    times: list[int] = []
    counts: list[float] = []
    top = 0
    for t, n in pts:
        top = max(top, n)
        if times and times[-1] == t:
            counts[-1] = top
        else:
            times.append(t)
            counts.append(top)
    return times, counts


def _count(curve: tuple[list[int], list[float]], t: int) -> float:
    times, counts = curve
    i = bisect.bisect_right(times, t)
    if i == 0:
        return 0.0
    if i == len(times) or times[i - 1] == t:
        return counts[i - 1]
    t0, t1 = times[i - 1], times[i]
    return counts[i - 1] + (counts[i] - counts[i - 1]) * (t - t0) / (t1 - t0)


def source_reaction(topo: Topology, rec: Recorder, ev: Any) -> dict[str, Any]:
    """``source_reaction_s`` and its ``source_reaction_window_s`` (None: no flow crosses the link, no
    packet before the event, or the sources never cut by REACTION_DROP)."""
    none = {"source_reaction_s": None, "source_reaction_window_s": None}
    a, b = ev.link
    bits = {f.name: 8 * f.packet_size for f in crossing(topo, a, b)}
    samples: dict[str, list[Any]] = {n: [] for n in bits}
    for x in rec.flows:
        if x.flow in bits:
            samples[x.flow].append(x)
    curves = [(_sent_curve(rec.packets.get(n, []), samples[n]), bits[n]) for n in sorted(bits)]
    curves = [(c, w) for c, w in curves if c[0] and c[1][-1] > 0]
    if not curves:
        return none
    at = ev.at_ns
    span = min(1_000_000_000, at)
    if span <= 0:
        return none

    def sent_by(t: int) -> float:
        """Bits sent by ``t``: the rate is in bits (docs/reference/metrics.md's units), so that where
        packet sizes differ a flow of small packets does not outweigh one of large packets by their
        count (counted in packets, a 1500-byte flow halving beside a steady 200-byte one was no cut)."""
        return sum(w * _count(c, t) for c, w in curves)

    packets0 = sum(_count(c, at) - _count(c, at - span) for c, _ in curves) / span  # packets per ns
    rate0 = (sent_by(at) - sent_by(at - span)) / span  # bits per ns
    if rate0 <= 0 or packets0 <= 0:
        return none
    window = max(REACTION_MIN_WINDOW_NS, round(REACTION_PACKETS / packets0))
    floor = rate0 * (1 - REACTION_DROP)

    def rate(t: int) -> float:
        return (sent_by(t) - sent_by(t - window)) / window

    floor = min(floor, rate(at) * (1 - REACTION_DROP))  # already falling at the event: a cut below that
    for t in sorted({t for c, _ in curves for t in c[0] if t > at}):
        if rate(t) <= floor:
            return {"source_reaction_s": round((t - at) / 1e9, 4), "source_reaction_window_s": round(window / 1e9, 4)}
    return {"source_reaction_s": None, "source_reaction_window_s": round(window / 1e9, 4)}
