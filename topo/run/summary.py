"""The numbers a run is judged by, computed from what the recorder kept (summary.json).

docs/reference/metrics.md defines each one -- what it counts, over which window, in which unit, where it is
in summary.json -- and this module computes them as defined there, for both backends (the
simulator and netns record the same rows: topo/net/record.py). The buffers' reductions are in
topo/run/summary_buffers.py (shared with the figures), the reactions to events in
topo/run/summary_reaction.py.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from topo.net.model import Flow, Topology
from topo.net.multicast import multicast_block
from topo.net.plan import network_mode
from topo.net.record import FlowSample, Recorder
from topo.net.stats import bits_of_first, percentile
from topo.run.summary_buffers import BAND, BufferRows, buffer_rows, buffer_stats
from topo.run.summary_reaction import REACTION_DROP, crossing, reaction, source_reaction

__all__ = ["summarize", "run_window_start", "BAND", "REACTION_DROP", "SERIES_BIN_NS", "flow_window", "final_link_rates", "bits_of_first"]

SERIES_BIN_NS = 500_000_000  # 0.5 s


@dataclass
class _Window:
    start_ns: int
    end_ns: int
    kind: str = "second half"

    def has(self, t: int) -> bool:
        return self.start_ns <= t <= self.end_ns

    @property
    def secs(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def _owd_ms(owd: list[float]) -> dict[str, float | None]:
    """A flow's one-way delay: with no packet received no delay was measured, so every statistic is
    None (a 0 would read as a delay of 0 ms in a table or a sweep's runs.csv)."""
    if not owd:
        return {"mean": None, "p50": None, "p99": None}
    return {"mean": round(statistics.fmean(owd), 3), "p50": round(percentile(owd, 0.5), 3),
            "p99": round(percentile(owd, 0.99), 3)}


def _steady(topo: Topology, duration_ns: int) -> _Window:
    """The buffers' window: the second half of the time before the first disturbance (a link-rate
    or mode event); an ``alinea`` event only moves the target, which each report is compared with."""
    first = min((ev.at_ns for ev in topo.events if ev.kind != "alinea"), default=duration_ns)
    return _Window(first // 2, first, "steady")


def _second_half(topo: Topology, duration_ns: int) -> _Window:
    """The flows' and links' window: the run's second half, from the last disturbance (a link-rate or
    mode event) on when that is later -- a window never straddles a change of the network."""
    last = max((ev.at_ns for ev in topo.events if ev.kind != "alinea" and ev.at_ns < duration_ns), default=0)
    if last > duration_ns // 2:
        return _Window(last, duration_ns, "after the last event")
    return _Window(duration_ns // 2, duration_ns)


def run_window_start(topo: Topology, duration_ns: int) -> int:
    """Where the run window opens (its second half, or the last event's time when later): the
    simulator samples the flows' counters there too (SimNetwork.sample_flows_at)."""
    return _second_half(topo, duration_ns).start_ns


def summarize(topo: Topology, rec: Recorder, duration_ns: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    steady = _steady(topo, duration_ns)
    half = _second_half(topo, duration_ns)
    out: dict[str, Any] = {"topology": topo.name, "duration_s": duration_ns / 1e9,
                           "windows": {"steady_s": [steady.start_ns / 1e9, steady.end_ns / 1e9],
                                       "run_s": [half.start_ns / 1e9, half.end_ns / 1e9]}}
    out.update(extra or {})
    out["loss"] = _loss(topo, rec)
    buffers = buffer_rows(topo, rec)
    carried = _carried_hops(topo, rec, steady)
    out["buffers"] = {name: buffer_stats(topo, b, steady.start_ns, steady.end_ns, (b.fed_by, b.node) in carried)
                      for name, b in buffers.items()}
    out["convergence"] = _run_convergence(topo, out["buffers"])
    out["convergence_s"] = out["convergence"]["s"]
    out["rates"] = {f"{b.fed_by}->{b.node}": {"max_bps": round(max(r.rate_bps for r in b.rows)),
                                              "final_bps": round(b.rows[-1].rate_bps)}
                    for b in buffers.values()}  # end to end every rate is 0: no law sets one
    windows = {f.name: flow_window(f, rec, half) for f in topo.flows}
    out["flows"] = _flows(topo, rec, windows, half)
    out["goodput_total_bps"] = round(_total_goodput(topo, rec, half))
    out["links"] = _links(rec, half)
    if topo.groups():  # per receiver of each multicast group, against its tree's rate (topo/net/multicast.py)
        out["multicast"] = multicast_block(topo, out, rec.packets)
    out["bottleneck"] = _bottleneck(topo, rec, out, half)
    events = [e for e in topo.events if e.kind == "link_rate"]
    out["events"] = [reaction(topo, buffers, ev, duration_ns) | source_reaction(topo, rec, ev) for ev in events]
    out["series"] = _series(topo, rec, buffers, duration_ns)
    t_s = out["series"]["t_s"]
    for name, f in out["flows"].items():
        w = windows[name]
        ends = [round(t * 1e9) for t in t_s]
        f["rate_cv"] = _cv([v for p, e, v in zip([0] + ends[:-1], ends, out["series"]["flows"][name]["receive_bps"])
                            if w.start_ns <= p and e <= w.end_ns])
    return out


def _carried_hops(topo: Topology, rec: Recorder, w: _Window) -> set[tuple[str, str]]:
    """The hops (u, v) of the flows a packet of which arrived at its destination within ``w`` (every
    equal-cost path of theirs; back along it too for a control that sends feedback or ACKs): an
    empty buffer v<-u off this set was idle, not kept empty by its law.
    A flow without packet rows counts by its flows.csv received count moving within ``w``."""
    out: set[tuple[str, str]] = set()
    samples = _by_flow(rec.flows)
    for f in topo.flows:
        rows = rec.packets.get(f.name)
        counts = [s.received for s in samples.get(f.name, []) if w.has(s.t_ns)]
        if any(w.has(recv) for _, _, recv in rows) if rows else len(set(counts)) > 1:
            for p in topo.all_paths(f.src, f.dst) if topo.options.ecmp else [f.path]:
                out.update(zip(p, p[1:]))
                if f.control not in ("alinea", "fixed"):  # its feedback or ACKs come back the other way
                    out.update(zip(p[1:], p))
    return out


def _run_convergence(topo: Topology, buffers: dict[str, Any]) -> dict[str, Any]:
    """The run's convergence: the largest over the buffers that can reach their target; those that
    cannot, and those that did not settle, named with why."""
    regulated = {n: b for n, b in buffers.items() if b["target"] is not None}
    if not regulated:
        why = ("no law sets a target: end to end, buffers are measured, not regulated"
               if network_mode(topo) != "hop-by-hop" else "no regulated buffer reported")
        return {"s": None, "over": [], "cannot_reach": {}, "not_settled": {}, "why": why}
    cannot = {n: b["cannot_reach"] for n, b in regulated.items() if "cannot_reach" in b}
    over = [n for n in regulated if n not in cannot]
    unsettled = {n: "not within 3 points of its target at the end of the steady window"
                 for n in over if regulated[n]["convergence_s"] is None}
    times = [regulated[n]["convergence_s"] for n in over]
    s = max(times) if times and not unsettled else None
    why = None
    if s is None:
        why = (f"{', '.join(unsettled)} did not settle" if unsettled
               else "no buffer can reach its target")
    return {"s": s, "over": over, "cannot_reach": cannot, "not_settled": unsettled, "why": why}


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
    by_host = {h: b.dropped for h, b in sorted(_last_by(rec.buffers, "host").items()) if b.dropped}
    overflow = sum(by_host.values())
    lost_seq = sum(_lost_by_sequence(rows) for rows in rec.packets.values())
    dropped = sum(by_reason.values()) + overflow
    return {"data_packets_sent": sum(sent.values()), "data_packets_received": sum(received.values()),
            "dropped_in_network": sum(by_reason.values()), "dropped_by_reason": by_reason,
            "receiver_buffer_overflow": overflow, "receiver_buffer_overflow_by_host": by_host,
            "lost_by_sequence": lost_seq,
            "reordered": sum(_reordered(rows) for rows in rec.packets.values()),
            "total": max(dropped, lost_seq)}


def _series(topo: Topology, rec: Recorder, buffers: dict[str, BufferRows], duration_ns: int) -> dict[str, Any]:
    """Per bin (ending at t_s): each flow's send and receive rate and mean one-way delay; each
    buffer's last report at or before the bin's end and the target in force then -- the rows the
    summary's buffer statistics reduce (topo/run/summary_buffers.py), so that figure and summary agree."""
    n = max(1, -(-duration_ns // SERIES_BIN_NS))
    ends = [min(duration_ns, (i + 1) * SERIES_BIN_NS) for i in range(n)]
    flows: dict[str, Any] = {}
    by_flow = _by_flow(rec.flows)
    for f in topo.flows:
        samples = by_flow.get(f.name, [])
        sent = _at_ends(samples, ends, lambda s: s.sent)
        got = _at_ends(samples, ends, lambda s: s.received)
        owd = _at_ends(samples, ends, lambda s: s.owd_sum_ns)
        bits = bits_of_first(f)
        prev = [0] + ends[:-1]
        flows[f.name] = {
            "send_bps": [round((bits(b) - bits(a)) / ((e - p) / 1e9)) for a, b, p, e in zip([0] + sent, sent, prev, ends)],
            "receive_bps": [round((bits(b) - bits(a)) / ((e - p) / 1e9))
                            for a, b, p, e in zip([0] + got, got, prev, ends)],
            "owd_ms": [round((o1 - o0) / (r1 - r0) / 1e6, 3) if r1 > r0 else None
                       for o0, o1, r0, r1 in zip([0] + owd, owd, [0] + got, got)]}
    series_buffers = {name: _at_ends(b.rows, ends, lambda r: round(r.fraction, 4), None) for name, b in buffers.items()}
    targets = {name: [b.target_at(e) for e in ends] for name, b in buffers.items() if b.kind == "regulated"}
    return {"t_s": [e / 1e9 for e in ends], "flows": flows, "buffers": series_buffers, "targets": targets,
            "queues": {name: b.queue for name, b in buffers.items()}}


def _at_ends(rows: list[Any], ends: list[int], value: Any, initial: Any = 0) -> list[Any]:
    """The value of the last row at or before each bin end (rows sorted by t_ns)."""
    out, i, last = [], 0, initial
    for end in ends:
        while i < len(rows) and rows[i].t_ns <= end:
            last = value(rows[i])
            i += 1
        out.append(last)
    return out


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


def _tcp(f: Any, rec: Recorder, half: _Window, samples: list[Any]) -> dict[str, Any]:
    """A kernel TCP flow: both ends' totals, retransmissions and smoothed RTT from its sender's
    TCP_INFO ``samples`` (docs/howto/netns.md, "Kernel TCP flows")."""
    ends = rec.tcp_flows.get(f.name, {})
    # the smoothed RTT while the flow ran: after a sized flow completes (or a flow stops) its socket's
    # SRTT stays at its last value, and those samples made a flow done in 0.13 s of a 3 s run read
    # its final SRTT as its p50 and p99 (19 of its 21 samples)
    done = ends.get("completed_ns")
    until = min(x for x in (done if isinstance(done, int) else None, f.stop_ns, 2**63) if x is not None)
    rtt = [v / 1000 for s in samples if (v := s.get("rtt_us")) and s.t_ns <= until]
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
            "rtt_ms": {"samples": len(rtt), "p50": round(percentile(rtt, 0.5), 3) if rtt else None,
                       "p99": round(percentile(rtt, 0.99), 3) if rtt else None,
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


# ---- flows ---------------------------------------------------------------------------------------------
def flow_window(f: Flow, rec: Recorder, half: _Window) -> _Window:
    """The window a flow's rates are measured over (docs/reference/metrics.md, "Windows"): the run's window
    ``half`` (its second half, from the last event on) when the flow is active over all of it (its
    steady state), else its own lifetime, from its first packet's send time to the end of the run,
    its ``stop`` or (a sized TCP flow) its completion, and then to its last packet's arrival: a flow
    that starts or ends inside the run is not averaged over time it did not exist."""
    duration_ns = half.end_ns
    completed = rec.tcp_flows.get(f.name, {}).get("completed_ns")
    end = min(duration_ns, f.stop_ns if f.stop_ns is not None else duration_ns,
              completed if isinstance(completed, int) else duration_ns)
    if f.start_ns <= half.start_ns and end >= duration_ns:
        return half
    rows = rec.packets.get(f.name, [])
    start = min((sent for _, sent, _ in rows), default=f.start_ns)
    if end < duration_ns and rows:
        end = max(end, max(recv for _, _, recv in rows))
    return _Window(max(0, min(start, end)), end, "lifetime")


def _at(samples: list[Any], t: int, value: Any, when: Callable[[Any], int] | None = None) -> float:
    """A cumulative counter at ``t``, linear between the samples around it (0 at time 0); each
    sample at ``when(sample)`` (default its time: a netns host's read time, ``_read_times``)."""
    prev_t, prev_v = 0, 0.0
    for s in samples:
        v = value(s)
        st = s.t_ns if when is None else when(s)
        if st >= t:
            if st == prev_t:
                return float(v)
            return prev_v + (v - prev_v) * (t - prev_t) / (st - prev_t)
        prev_t, prev_v = st, float(v)
    return prev_v


def _read_times(rec: Recorder, host: str) -> Callable[[Any], int]:
    """When ``host`` read a sample's receive-side counts (played, received), for :func:`_at`'s ``when``
    (Recorder.read_at: a netns host reads them at its own wake-up, which may come late)."""
    return lambda s: rec.read_at(host, s.t_ns)


def _played_end(samples: list[FlowSample], w: _Window, when: Callable[[Any], int]) -> int:
    """A lifetime window's end for what the application played: the first sample at which the
    flow's played count reached its final value (the buffer plays out after the last arrival)."""
    final = samples[-1].played if samples else None
    return next((when(s) for s in samples if s.t_ns >= w.end_ns and s.played == final), w.end_ns)


def _sent_bits(f: Flow, samples: list[FlowSample], w: _Window, when: Callable[[Any], int]) -> float:
    """The bits a flow's source handed to its NIC over its window ``w``. Over the run window (the second
    half, or after the last event) the counter interpolated between the samples around each end. Over
    a flow's lifetime the counter at the last sample (read by its source, ``when``) at or before the
    window's start and at the first at or after its end: the window opens at the send of the flow's
    first packet received and closes after its stop or completion, when its source has stopped
    writing, so interpolating a counter that jumps (slow start, a flow done within a bin) misplaced up
    to a bin's sends -- EVERY_WINDOW's sized TCP flow of 0.13 s read 5.35 Mb/s sent against 5.98 received
    (issue 46). Counted so, what it sent is never less than what it delivered in the window, and
    exact when its source sent nothing between the sample before its first packet and that packet."""
    first = bits_of_first(f)
    if w.kind != "lifetime":
        return first(_at(samples, w.end_ns, lambda s: s.sent)) - first(_at(samples, w.start_ns, lambda s: s.sent))
    before = [s.sent for s in samples if when(s) <= w.start_ns]
    after = [s.sent for s in samples if when(s) >= w.end_ns]
    return first(after[0] if after else (samples[-1].sent if samples else 0)) - first(before[-1] if before else 0)


def _flows(topo: Topology, rec: Recorder, windows: dict[str, _Window], half: _Window) -> dict[str, Any]:
    out: dict[str, Any] = {}
    flow_samples, tcp_samples = _by_flow(rec.flows), _by_flow(rec.tcp)
    for f in topo.flows:
        w = windows[f.name]
        bits = f.packet_size * 8
        first = bits_of_first(f)
        rows = rec.packets.get(f.name, [])
        in_window = [r for r in rows if w.has(r[2])]
        owd = [(recv - sent) / 1e6 for _, sent, recv in in_window]
        received_bits = sum(first(seq + 1) - first(seq) for seq, _, _ in in_window)
        received_bps = received_bits / w.secs if w.secs > 0 else 0.0
        samples = flow_samples.get(f.name, [])
        goodput, measured = received_bps, "received"
        if samples and samples[-1].played is not None:  # its destination's application plays a buffer out
            read = _read_times(rec, f.dst)
            end = _played_end(samples, w, read) if w.kind == "lifetime" else w.end_ns
            span = (end - w.start_ns) / 1e9
            played = (_at(samples, end, lambda s: s.played or 0, read)
                      - _at(samples, w.start_ns, lambda s: s.played or 0, read))
            goodput, measured = (played * bits / span if span > 0 else 0.0), "played"
        sent = _sent_bits(f, samples, w, _read_times(rec, f.src))
        out[f.name] = {"src": f.src, "dst": f.dst, "control": f.control, "received": len(rows),
                       "send_bps": round(sent / w.secs) if w.secs > 0 else 0,
                       "receive_bps": round(received_bps), "goodput_bps": round(goodput), "goodput_of": measured,
                       "window_s": [round(w.start_ns / 1e9, 6), round(w.end_ns / 1e9, 6)], "window": w.kind,
                       "owd_ms": _owd_ms(owd)}
        if f.size_bytes is not None:
            completed = rec.tcp_flows.get(f.name, {}).get("completed_ns")
            out[f.name]["fct_s"] = round((completed - f.start_ns) / 1e9, 4) if isinstance(completed, int) else None
        if f.control == "tcp":
            out[f.name]["tcp"] = _tcp(f, rec, half, tcp_samples.get(f.name, []))
        if f.name in rec.control_stats:  # TFRC, LEDBAT, GCC, pgmcc: their cores' own view (docs/background/e2e.md)
            # beside ``control`` (the control's name, which every flow has), not over it: a key whose
            # type depends on the control made `hbh run` print the dict as the flow's control and
            # `hbh sweep` (its runs.csv's control column) fail with a traceback
            out[f.name]["control_state"] = dict(sorted(rec.control_stats[f.name].items()))
    return out


def _total_goodput(topo: Topology, rec: Recorder, half: _Window) -> float:
    """What every flow's application took over the run window, per second (each flow counted as its
    ``goodput_bps`` is: played where its host plays a buffer out, else received).

    Why not the sum of the flows' ``goodput_bps``: a flow that ends (or starts) inside the run is
    measured over its own lifetime, the others over the run window, and rates over different
    windows do not add up: five flows into a 6 Mb/s playout, one of them stopping at 3 s of 5,
    summed to 6.9 Mb/s."""
    if half.secs <= 0:
        return 0.0
    flow_samples = _by_flow(rec.flows)
    bits = 0.0
    for f in topo.flows:
        first = bits_of_first(f)
        samples = flow_samples.get(f.name, [])
        if samples and samples[-1].played is not None:
            read = _read_times(rec, f.dst)
            bits += f.packet_size * 8 * (_at(samples, half.end_ns, lambda s: s.played or 0, read)
                                         - _at(samples, half.start_ns, lambda s: s.played or 0, read))
        else:
            bits += sum(first(seq + 1) - first(seq) for seq, _, recv in rec.packets.get(f.name, []) if half.has(recv))
    return bits / half.secs


# ---- the bottleneck and fairness ---------------------------------------------------------------------
def final_link_rates(topo: Topology) -> dict[str, float]:
    """Directed link "u->v" -> its rate at the end of the run (link-rate events applied)."""
    out: dict[str, float] = {}
    for link in topo.links:
        out[f"{link.a}->{link.b}"] = out[f"{link.b}->{link.a}"] = link.rate_bps
    for ev in sorted((e for e in topo.events if e.kind == "link_rate"), key=lambda e: e.at_ns):
        a, b = ev.link  # type: ignore[misc]
        out[f"{a}->{b}"] = out[f"{b}->{a}"] = ev.rate_bps  # type: ignore[assignment]
    return out


def jain(values: list[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal shares, 1/n = one flow takes all."""
    if not values or sum(v * v for v in values) == 0:
        return None
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def _bottleneck(topo: Topology, rec: Recorder, summary: dict[str, Any], half: _Window) -> dict[str, Any]:
    """The bottleneck -- the slowest resource that carried traffic: a directed link at its rate at
    the end of the run, or a host's playout (its application's rate) -- its utilisation over the
    run window (ties: the most utilised), and Jain's index over the goodputs of the flows that
    cross it (flows that started within the run)."""
    rates = final_link_rates(topo)
    carried = [(rates.get(name, float("inf")), -(link["utilisation"] or 0), name, "link")
               for name, link in summary["links"].items() if link["utilisation"] is not None]
    playouts = _playout_utilisation(topo, rec, half)
    carried += [(topo.nodes[h].playout_bps or 0.0, -util, f"{h} playout", "playout") for h, util in playouts.items()]
    if not carried:
        return {"link": None, "kind": None, "utilisation": None, "flows": [], "jain": None,
                "why": "no link carried traffic"}
    _, neg_util, name, kind = min(carried)
    duration_ns = round(summary["duration_s"] * 1e9)
    if kind == "playout":
        host = name.removesuffix(" playout")
        flows = [f.name for f in topo.flows if f.dst == host and f.control != "tcp" and f.start_ns < duration_ns]
    else:
        u, v = name.split("->")
        flows = [f.name for f in crossing(topo, u, v) if f.start_ns < duration_ns
                 and any((f.path[i], f.path[i + 1]) == (u, v) for i in range(len(f.path) - 1))]
    goodputs = [float(summary["flows"][n]["goodput_bps"]) for n in flows]
    value = jain(goodputs) if len(goodputs) > 1 else None
    why = None
    if value is None:
        why = "one flow" if len(goodputs) == 1 else ("no flow" if not goodputs else "no goodput")
    return {"link": name, "kind": kind, "utilisation": round(-neg_util, 4), "flows": flows,
            "jain": None if value is None else round(value, 4), "why": why}


def _playout_utilisation(topo: Topology, rec: Recorder, half: _Window) -> dict[str, float]:
    """Per host with a playout buffer that datagram flows feed: what its application played over the
    run window / what its playout rate allowed."""
    out: dict[str, float] = {}
    by_host: dict[str, list[Any]] = {}
    for b in rec.buffers:
        by_host.setdefault(b.host, []).append(b)
    for host, samples in sorted(by_host.items()):
        node = topo.nodes.get(host)
        sizes = [f.packet_size for f in topo.flows if f.dst == host]
        if node is None or not node.playout_bps or not sizes or half.secs <= 0:
            continue
        if not any(f.control != "tcp" for f in topo.flows if f.dst == host):
            continue
        names = {f.name for f in topo.flows if f.dst == host}
        out[host] = _played_bits(names, sizes, samples, rec, half) / (node.playout_bps * half.secs)
    return out


def _played_bits(names: set[str], sizes: list[int], samples: list[Any], rec: Recorder, half: _Window) -> float:
    """The bits a host's application played over the window: with flows of several sizes (``names``),
    each flow's played packets at its own frame size (the playout takes each packet in its own bits'
    time); with one size, or without per-flow counts, the buffer's packets at the largest."""
    flows: dict[str, list[Any]] = {}
    for s in rec.flows:
        if s.played is not None and s.flow in names:
            flows.setdefault(s.flow, []).append(s)
    read = _read_times(rec, samples[0].host)
    if flows and len(set(sizes)) > 1:
        return sum(8 * rows[-1].packet_bytes * (_at(rows, half.end_ns, lambda s: s.played, read)
                                                - _at(rows, half.start_ns, lambda s: s.played, read))
                   for rows in flows.values())
    played = (_at(samples, half.end_ns, lambda b: b.played, read)
              - _at(samples, half.start_ns, lambda b: b.played, read))
    return played * max(sizes) * 8
