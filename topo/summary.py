"""The numbers a run is judged by, computed from what the recorder kept (summary.json).

Definitions (docs/results.md repeats them next to the results):

* **loss** -- data packets the sources sent that were dropped anywhere: switch drop counters (by
  reason), egress queues that were full, receivers' full buffers; plus sequence numbers that
  never arrived (``lost_by_sequence``, which also catches a packet lost on a link). Reordering
  is counted apart and is not loss.
* **occupancy** of each regulated buffer (``v<-u``: node v's buffer fed by u), as reported to
  u, over the second half of the run (or of the time before the first event): mean and
  standard deviation in percentage points, against the target (the law's O_max).
* **convergence** -- the first time from which a buffer stays within ``BAND`` points of its
  target until the end of the steady window; the run's is the largest over buffers.
* **goodput** -- bits the destination's application took (played out) per second over the
  second half; without a playout buffer, and for TCP flows (their application reads the socket at
  once), bits received.
* **utilisation** of a directed link -- bits carried over the second half / what its rate
  allowed in that time.
* **one-way delay** -- per received packet, receive time minus send time (p50, p99, mean).
* **reaction** to a link-rate drop on u->v -- the time until the rate into u (set by the hop
  that feeds u) first falls ``REACTION_DROP`` below its value at the event, also in report
  intervals; **recovery** -- the time until u's buffer is back within ``BAND`` points of its
  target and stays there.
* **source reaction** (end-to-end controls, where no hop sets a rate) -- the time until the
  sending rate of the flows that cross the shrunken link, summed at their SOURCES over
  ``SERIES_BIN_NS`` bins, first falls ``REACTION_DROP`` below its mean over the second before
  the event.
* **rate CV** of a flow -- standard deviation / mean of its receive rate in ``SERIES_BIN_NS``
  bins over the second half (0: perfectly steady).
* **series** -- per ``SERIES_BIN_NS`` bin: each flow's send and receive rate and mean one-way
  delay, each buffer's last reported occupancy; small enough to keep in a sweep's results,
  so ``hbh compare`` can overlay controls without keeping whole recordings.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from topo.model import Topology
from topo.plan import network_mode
from topo.record import LawRow, Recorder

__all__ = ["summarize", "BAND", "REACTION_DROP", "SERIES_BIN_NS"]

BAND = 0.03  # 3 percentage points
REACTION_DROP = 0.05
SERIES_BIN_NS = 500_000_000  # 0.5 s


@dataclass
class _Window:
    start_ns: int
    end_ns: int

    def has(self, t: int) -> bool:
        return self.start_ns <= t <= self.end_ns


def _buffer_name(u: str, v: str) -> str:
    return f"{v}<-{u}"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[k]


def _targets(topo: Topology) -> dict[tuple[str, str], float]:
    """O_max of every law at the end of the run (timed events applied); none end to end,
    where no law runs."""
    if network_mode(topo) != "hop-by-hop":
        return {}
    targets = {k: p.o_max for k, p in topo.law.items()}
    for ev in topo.events:
        changes = dict(ev.law_changes)
        if "o_max" in changes:
            for key in ev.targets:
                targets[key] = changes["o_max"]
    return targets


def summarize(topo: Topology, rec: Recorder, duration_ns: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    first_event = min((ev.at_ns for ev in topo.events), default=duration_ns)
    steady = _Window(first_event // 2, first_event)
    half = _Window(duration_ns // 2, duration_ns)
    out: dict[str, Any] = {"topology": topo.name, "duration_s": duration_ns / 1e9}
    out.update(extra or {})
    out["loss"] = _loss(topo, rec)
    out["buffers"] = _buffers(topo, rec, steady)
    conv = [b["convergence_s"] for b in out["buffers"].values()]
    out["convergence_s"] = None if not conv or None in conv else max(conv)
    out["rates"] = {f"{u}->{v}": {"max_bps": round(max(r.rate_bps for r in rows)), "final_bps": round(rows[-1].rate_bps)}
                    for (u, v), rows in sorted(_law_rows(rec).items())}
    out["flows"] = _flows(topo, rec, half)
    out["links"] = _links(rec, half)
    out["events"] = [_reaction(topo, rec, ev, duration_ns) for ev in topo.events if ev.kind == "link_rate"]
    out["series"] = _series(topo, rec, duration_ns)
    for name, f in out["flows"].items():
        f["rate_cv"] = _cv([v for t, v in zip(out["series"]["t_s"], out["series"]["flows"][name]["receive_bps"])
                            if half.has(int(t * 1e9))])
    for ev, result in zip([e for e in topo.events if e.kind == "link_rate"], out["events"]):
        result["source_reaction_s"] = _source_reaction(topo, out["series"], ev)
    return out


def _cv(values: list[float]) -> float | None:
    mean = statistics.fmean(values) if values else 0.0
    return round(statistics.pstdev(values) / mean, 4) if len(values) > 1 and mean > 0 else None


def _by_flow(samples: Any) -> dict[str, list[Any]]:
    """Samples grouped by their ``flow``, each group in the samples' order: one pass, so that a
    workload of thousands of flows does not scan every sample once per flow."""
    out: dict[str, list[Any]] = {}
    for s in samples:
        out.setdefault(s.flow, []).append(s)
    return out


def _series(topo: Topology, rec: Recorder, duration_ns: int) -> dict[str, Any]:
    """Per-bin rates, delays and occupancies (bin ends at t_s)."""
    n = max(1, -(-duration_ns // SERIES_BIN_NS))
    ends = [min(duration_ns, (i + 1) * SERIES_BIN_NS) for i in range(n)]
    flows: dict[str, Any] = {}
    by_flow = _by_flow(rec.flows)
    for f in topo.flows:
        samples = by_flow.get(f.name, [])
        sent = _at_ends(samples, ends, lambda s: s.sent)
        got = _at_ends(samples, ends, lambda s: s.received)
        owd = _at_ends(samples, ends, lambda s: s.owd_sum_ns)
        bits = f.packet_size * 8
        prev = [0] + ends[:-1]
        flows[f.name] = {
            "send_bps": [round((b - a) * bits / ((e - p) / 1e9)) for a, b, p, e in zip([0] + sent, sent, prev, ends)],
            "receive_bps": [round((b - a) * bits / ((e - p) / 1e9)) for a, b, p, e in zip([0] + got, got, prev, ends)],
            "owd_ms": [round((o1 - o0) / (r1 - r0) / 1e6, 3) if r1 > r0 else None
                       for o0, o1, r0, r1 in zip([0] + owd, owd, [0] + got, got)]}
    buffers: dict[str, list[float | None]] = {}
    for (u, v), rows in sorted(_law_rows(rec).items()):
        buffers[_buffer_name(u, v)] = _at_ends(rows, ends, lambda r: round(r.fraction, 4), None)
    return {"t_s": [e / 1e9 for e in ends], "flows": flows, "buffers": buffers}


def _at_ends(rows: list[Any], ends: list[int], value: Any, initial: Any = 0) -> list[Any]:
    """The value of the last row at or before each bin end (rows sorted by t_ns)."""
    out, i, last = [], 0, initial
    for end in ends:
        while i < len(rows) and rows[i].t_ns <= end:
            last = value(rows[i])
            i += 1
        out.append(last)
    return out


def _source_reaction(topo: Topology, series: dict[str, Any], ev: Any) -> float | None:
    a, b = ev.link
    names = [f.name for f in topo.flows if a in f.path and b in f.path]
    if not names:
        return None
    t = series["t_s"]
    total = [sum(series["flows"][n]["send_bps"][i] for n in names) for i in range(len(t))]
    at = ev.at_ns / 1e9
    before = [v for ts, v in zip(t, total) if at - 1.0 < ts <= at]
    if not before or statistics.fmean(before) <= 0:
        return None
    rate0 = statistics.fmean(before)
    return next((round(ts - at, 3) for ts, v in zip(t, total) if ts > at and v <= rate0 * (1 - REACTION_DROP)), None)


def _loss(topo: Topology, rec: Recorder) -> dict[str, Any]:
    final: dict[tuple[str, int, str], int] = {}
    for d in rec.drops:
        final[(d.switch, d.port, d.reason)] = d.packets
    by_reason: dict[str, int] = {}
    for (_sw, _port, reason), n in sorted(final.items()):
        if reason != "spoofed_report":
            by_reason[reason] = by_reason.get(reason, 0) + n
    sent = {f.name: 0 for f in topo.flows}
    received = dict(sent)
    for s in rec.flows:
        sent[s.flow], received[s.flow] = s.sent, s.received
    overflow = sum(b.dropped for b in _last_by(rec.buffers, "host").values())
    lost_seq = sum(_lost_by_sequence(rows) for rows in rec.packets.values())
    dropped = sum(by_reason.values()) + overflow
    return {"data_packets_sent": sum(sent.values()), "data_packets_received": sum(received.values()),
            "dropped_in_network": sum(by_reason.values()), "dropped_by_reason": by_reason,
            "receiver_buffer_overflow": overflow, "lost_by_sequence": lost_seq,
            "reordered": sum(_reordered(rows) for rows in rec.packets.values()),
            "total": max(dropped, lost_seq)}


def _lost_by_sequence(rows: list[tuple[int, int, int]]) -> int:
    if not rows:
        return 0
    seqs = {seq for seq, _, _ in rows}
    return max(seqs) + 1 - len(seqs)


def _reordered(rows: list[tuple[int, int, int]]) -> int:
    highest, n = -1, 0
    for seq, _, _ in rows:
        if seq < highest:
            n += 1
        highest = max(highest, seq)
    return n


def _last_by(rows: list[Any], attr: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in rows:
        out[getattr(r, attr)] = r
    return out


def _law_rows(rec: Recorder) -> dict[tuple[str, str], list[LawRow]]:
    out: dict[tuple[str, str], list[LawRow]] = {}
    for r in rec.laws:
        out.setdefault((r.node, r.toward), []).append(r)
    return out


def _convergence(rows: list[LawRow], target: float, end_ns: int) -> float | None:
    inside_since: int | None = None
    for r in rows:
        if r.t_ns > end_ns:
            break
        if abs(r.fraction - target) <= BAND:
            if inside_since is None:
                inside_since = r.t_ns
        else:
            inside_since = None
    return None if inside_since is None else inside_since / 1e9


def _buffers(topo: Topology, rec: Recorder, steady: _Window) -> dict[str, Any]:
    targets = _targets(topo)
    out: dict[str, Any] = {}
    for (u, v), rows in sorted(_law_rows(rec).items(), key=lambda kv: _path_order(topo, kv[0])):
        window = [r.fraction for r in rows if steady.has(r.t_ns)]
        target = targets.get((u, v))  # None: no law (an end-to-end run's output FIFO)
        mean = statistics.fmean(window) if window else 0.0
        std = statistics.pstdev(window) if len(window) > 1 else 0.0
        out[_buffer_name(u, v)] = {
            "node": v, "fed_by": u, "target": target, "mean": round(mean, 4), "std": round(std, 4),
            "max": round(max((r.fraction for r in rows), default=0.0), 4),
            "within_band": None if target is None else bool(window) and abs(mean - target) <= BAND and std <= BAND,
            "convergence_s": None if target is None else _convergence(rows, target, steady.end_ns),
            "reports": len(rows)}
    return out


def _path_order(topo: Topology, key: tuple[str, str]) -> tuple[int, str, str]:
    for f in topo.flows:
        if key[0] in f.path and key[1] in f.path:
            return (f.path.index(key[1]), key[0], key[1])
    return (len(topo.nodes), key[0], key[1])


def _flows(topo: Topology, rec: Recorder, half: _Window) -> dict[str, Any]:
    out: dict[str, Any] = {}
    buffers = {}
    for b in rec.buffers:
        buffers.setdefault(b.host, []).append(b)
    flow_samples, tcp_samples = _by_flow(rec.flows), _by_flow(rec.tcp)
    for f in topo.flows:
        rows = rec.packets.get(f.name, [])
        owd = [(recv - sent) / 1e6 for _, sent, recv in rows]
        in_half = [r for r in rows if half.has(r[2])]
        secs = (half.end_ns - half.start_ns) / 1e9
        received_bps = sum(f.packet_size * 8 for _ in in_half) / secs if secs else 0.0
        goodput = received_bps
        # A TCP flow's application reads its socket at once (both backends): the host's playout buffer is
        # for datagram flows, so a TCP flow's goodput is what it received.
        samples = [b for b in buffers.get(f.dst, []) if half.has(b.t_ns)] if f.control != "tcp" else []
        if len(samples) > 1:
            played = samples[-1].played - samples[0].played
            span = (samples[-1].t_ns - samples[0].t_ns) / 1e9
            goodput = played * f.packet_size * 8 / span if span else 0.0
        sent = [s for s in flow_samples.get(f.name, []) if half.has(s.t_ns)]
        send_bps = ((sent[-1].sent - sent[0].sent) * f.packet_size * 8 / ((sent[-1].t_ns - sent[0].t_ns) / 1e9)
                    if len(sent) > 1 and sent[-1].t_ns > sent[0].t_ns else 0.0)
        out[f.name] = {"src": f.src, "dst": f.dst, "control": f.control, "received": len(rows),
                       "send_bps": round(send_bps), "receive_bps": round(received_bps), "goodput_bps": round(goodput),
                       "owd_ms": {"mean": round(statistics.fmean(owd), 3) if owd else None,
                                  "p50": round(_percentile(owd, 0.5), 3), "p99": round(_percentile(owd, 0.99), 3)}}
        if f.control == "tcp":
            out[f.name]["tcp"] = _tcp(f, rec, half, tcp_samples.get(f.name, []))
        if f.name in rec.control_stats:  # TFRC, LEDBAT: their cores' own view (docs/e2e.md)
            out[f.name]["control"] = dict(sorted(rec.control_stats[f.name].items()))
    return out


def _tcp(f: Any, rec: Recorder, half: _Window, samples: list[Any]) -> dict[str, Any]:
    """A kernel TCP flow: both ends' totals, retransmissions and smoothed RTT from its sender's
    TCP_INFO ``samples`` (docs/netns.md, "Kernel TCP flows")."""
    ends = rec.tcp_flows.get(f.name, {})
    rtt = [v / 1000 for s in samples if (v := s.get("rtt_us"))]
    last = samples[-1] if samples else None
    in_half = [s for s in samples if half.has(s.t_ns)]

    def total(name: str) -> int | None:
        return None if last is None else last.get(name)

    def grew(name: str) -> int | None:
        values = [s.get(name) for s in in_half]
        return values[-1] - values[0] if len(values) > 1 and None not in values else None  # type: ignore[operator]

    completed = ends.get("completed_ns")
    return {"cc": f.cc, "sack": ends.get("sack"), "size_bytes": f.size_bytes, "bytes_sent": ends.get("bytes_sent", 0),
            "bytes_received": ends.get("bytes_received", 0), "bytes_acked": total("bytes_acked"),
            "completed": completed is not None,
            "completion_s": None if completed is None else round((completed - f.start_ns) / 1e9, 4),
            "retransmissions": total("total_retrans"), "retransmissions_second_half": grew("total_retrans"),
            "bytes_retransmitted": total("bytes_retrans"),
            "rtt_ms": {"samples": len(rtt), "p50": round(_percentile(rtt, 0.5), 3) if rtt else None,
                       "p99": round(_percentile(rtt, 0.99), 3) if rtt else None,
                       "min": round(last.get("min_rtt_us") / 1000, 3) if last and last.get("min_rtt_us") else None},
            "cwnd_max_pkts": max((s.get("snd_cwnd") or 0 for s in samples), default=None),
            "errors": [e for e in (ends.get("sender_error"), ends.get("receiver_error")) if e]} \
        | ({"pace": ends["pace"]} if "pace" in ends else {}) \
        | ({"local_port": ends["local_port"]} if "local_port" in ends else {})  # netns: the kernel's source port


def _links(rec: Recorder, half: _Window) -> dict[str, Any]:
    by: dict[tuple[str, str], list[Any]] = {}
    for s in rec.links:
        if half.has(s.t_ns):
            by.setdefault((s.src, s.dst), []).append(s)
    out: dict[str, Any] = {}
    for (u, v), rows in sorted(by.items()):
        if len(rows) < 2 or rows[-1].bytes == rows[0].bytes:
            continue
        allowed = sum(a.rate_bps * (b.t_ns - a.t_ns) / 1e9 for a, b in zip(rows, rows[1:]))
        carried = (rows[-1].bytes - rows[0].bytes) * 8
        out[f"{u}->{v}"] = {"utilisation": round(carried / allowed, 4) if allowed else None,
                            "carried_bps": round(carried / ((rows[-1].t_ns - rows[0].t_ns) / 1e9))}
    return out


def _reaction(topo: Topology, rec: Recorder, ev: Any, duration_ns: int) -> dict[str, Any]:
    a, b = ev.link
    flow = next((f for f in topo.flows if a in f.path and b in f.path), None)
    result: dict[str, Any] = {"at_s": ev.at_ns / 1e9, "kind": "link_rate", "link": f"{a}-{b}",
                              "rate_bps": ev.rate_bps}
    if flow is None:
        return result
    u, v = (a, b) if flow.path.index(a) < flow.path.index(b) else (b, a)
    i = flow.path.index(u)
    if i == 0:
        return result
    feeder = flow.path[i - 1]
    rows = _law_rows(rec).get((feeder, u), [])
    before = [r for r in rows if r.t_ns <= ev.at_ns]
    after = [r for r in rows if r.t_ns > ev.at_ns]
    if not before or not after:
        return result
    rate0 = before[-1].rate_bps
    if rate0 <= 0:  # end to end: no hop sets a rate (reports are only measurements); see source_reaction_s
        return result
    hit = next((r for r in after if r.rate_bps <= rate0 * (1 - REACTION_DROP)), None)
    interval_us = topo.ports[(u, feeder)].interval_us if (u, feeder) in topo.ports else 0
    target = _targets(topo)[(feeder, u)]
    recovered = _convergence(after, target, duration_ns)
    result.update({"regulator": feeder, "buffer": _buffer_name(feeder, u), "rate_before_bps": round(rate0),
                   "reaction_s": None if hit is None else round((hit.t_ns - ev.at_ns) / 1e9, 4),
                   "reaction_intervals": (None if hit is None or not interval_us
                                          else round((hit.t_ns - ev.at_ns) / 1e3 / interval_us, 2)),
                   "max_occupancy_after": round(max(r.fraction for r in after), 4),
                   "recovery_s": None if recovered is None else round(recovered - ev.at_ns / 1e9, 4)})
    return result
