"""What an experiment records, the same way in both backends, and its CSV files.

Rows are kept in memory as plain tuples during the run (cheap to append) and written once at
the end in a fixed order with fixed number formats, so the same run writes byte-identical
files. Times in files are seconds with 6 decimals (µs).

Files (docs/results.md explains each column):

* ``laws.csv`` -- every report a law applied: who regulates whom, the reported occupancy, the
  rate it set, its O and W; on BMv2's queues also the forecast occupancy, the drain and the
  newest drain (two departures) the switch agent's law ran on (docs/background/alinea.md); the O_max in force
  (the target, blank where no law runs) and whether the row is an end-to-end run's FIFO sample;
* ``flows.csv`` -- per flow and per sampling period: packets sent and received, rates, mean
  one-way delay, packets its destination's application played out (blank: no playout buffer);
* ``buffers.csv`` -- receiving hosts' application buffers, sampled;
* ``links.csv`` -- bytes carried per directed link, sampled (cumulative);
* ``drops.csv`` -- drop counters per switch, port and reason, sampled (cumulative);
* ``tcp.csv`` -- kernel TCP flows only (``control: tcp``): the sender's TCP_INFO, sampled;
* ``pgmcc.csv`` -- pgmcc sources (``control: pgmcc``), sampled: the acker, the window, data packets
  sent, repairs sent, timeouts (cumulative); ``pgmcc_switches.csv`` -- every acker election or switch:
  when, from whom (``-``: none), to whom, and both throughput estimates 1/(RTT·√p) in packets/s;
* ``packets_<flow>.csv`` -- every packet received: sequence number, send and receive time,
  one-way delay.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.agent import LawTrace

__all__ = ["Recorder", "LawRow", "FlowSample", "BufferSample", "LinkSample", "DropSample", "TcpSample", "PgmccSample",
           "PgmccSwitch"]


#: One report a law applied (or, end-to-end, one FIFO's sample): the switch agent's trace as it
#: comes (``controlplane.agent.LawTrace``), which names its node and neighbour, so that a binding
#: records it without a Python step per report; hosts and FIFO samples build the same rows.
LawRow = LawTrace


@dataclass(frozen=True, slots=True)
class FlowSample:
    t_ns: int
    flow: str
    sent: int  # cumulative packets
    received: int  # cumulative packets
    owd_sum_ns: int  # cumulative, over received packets
    packet_bytes: int = 0
    # cumulative packets of this flow its destination's application took from the host's playout
    # buffer (None: no playout buffer there, or a TCP flow, whose application reads its socket)
    played: int | None = None


@dataclass(frozen=True, slots=True)
class BufferSample:
    t_ns: int
    host: str
    occupancy: int
    capacity: int
    played: int  # cumulative packets handed to the application
    dropped: int  # cumulative arrivals refused (buffer full)


@dataclass(frozen=True, slots=True)
class LinkSample:
    t_ns: int
    src: str
    dst: str
    bytes: int  # cumulative
    rate_bps: float  # the link's rate at that time


@dataclass(frozen=True, slots=True)
class DropSample:
    t_ns: int
    switch: str
    port: int
    reason: str
    packets: int  # cumulative


@dataclass(frozen=True, slots=True)
class TcpSample:
    """A kernel TCP flow's sender, sampled: what the application wrote and the socket's TCP_INFO."""

    t_ns: int
    flow: str
    bytes_sent: int  # handed to the socket by the application (cumulative)
    info: tuple[tuple[str, int], ...]  # TCP_INFO fields (topo.netns.tcpflow.TCPI_FIELDS) at t_ns

    def get(self, name: str) -> int | None:
        return dict(self.info).get(name)


@dataclass(frozen=True, slots=True)
class PgmccSample:
    t_ns: int
    flow: str  # the group's lead branch
    acker: str  # "-": none elected yet
    cwnd: float
    data_sent: int  # cumulative
    repairs: int  # cumulative
    timeouts: int  # cumulative


@dataclass(frozen=True, slots=True)
class PgmccSwitch:
    t_ns: int
    flow: str
    old: str  # "-": the first election
    new: str
    t_old: float  # the estimates compared, packets/s (rtt: packets: per packet sent; inf: no loss seen)
    t_new: float


@dataclass
class Recorder:
    laws: list[LawRow] = field(default_factory=list)
    flows: list[FlowSample] = field(default_factory=list)
    buffers: list[BufferSample] = field(default_factory=list)
    links: list[LinkSample] = field(default_factory=list)
    drops: list[DropSample] = field(default_factory=list)
    packets: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)  # flow -> (seq, sent, recv)
    tcp: list[TcpSample] = field(default_factory=list)
    tcp_flows: dict[str, dict[str, object]] = field(default_factory=dict)  # flow -> both ends' totals
    # flow -> what its control's cores saw at the end (TFRC, LEDBAT: hosts/e2e_host.py), both ends merged
    control_stats: dict[str, dict[str, object]] = field(default_factory=dict)
    pgmcc: list[PgmccSample] = field(default_factory=list)
    pgmcc_switches: list[PgmccSwitch] = field(default_factory=list)
    # (host, sample time) -> when the host read that sample's receive-side counts, where not at the
    # sample's time: a netns host reads them at its own wake-up, which may come late (the invariants
    # compare those counts at these times: topo/net/invariants.py, host_capacity)
    read_ns: dict[tuple[str, int], int] = field(default_factory=dict)

    def read_at(self, host: str, t_ns: int) -> int:
        """When ``host`` read its receive-side counts of the sample at ``t_ns``: that time, unless it
        read them later (a netns host's wake-up). The one lookup the summary and the invariants share."""
        return self.read_ns.get((host, t_ns), t_ns)

    def write(self, out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        written = [
            _write(out / "laws.csv", ["t_s", "node", "toward", "occupancy_pkts", "capacity_pkts", "fraction",
                                      "drops", "rate_bps", "target_o", "weight_w", "forecast", "drain_bps",
                                      "newest_bps", "o_max", "fifo"],
                   ([_t(r.t_ns), r.node, r.toward, r.occupancy, r.capacity, f"{r.fraction:.4f}", r.drops,
                     f"{r.rate_bps:.0f}", f"{r.o:.4f}", f"{r.w:.0f}",
                     "" if r.forecast is None else f"{r.forecast:.4f}",
                     "" if r.drain_bps is None else f"{r.drain_bps:.0f}",
                     "" if r.newest_bps is None else f"{r.newest_bps:.0f}",
                     "" if r.o_max is None else f"{r.o_max:.4f}", int(r.fifo)] for r in self.laws)),
            _write(out / "flows.csv", ["t_s", "flow", "sent_pkts", "received_pkts", "send_rate_bps",
                                       "receive_rate_bps", "owd_mean_ms", "played_pkts"], _flow_rows(self.flows)),
            _write(out / "buffers.csv", ["t_s", "host", "occupancy_pkts", "capacity_pkts", "played_pkts",
                                         "dropped_pkts"],
                   ([_t(s.t_ns), s.host, s.occupancy, s.capacity, s.played, s.dropped] for s in self.buffers)),
            _write(out / "links.csv", ["t_s", "from", "to", "bytes", "rate_bps"],
                   ([_t(s.t_ns), s.src, s.dst, s.bytes, f"{s.rate_bps:.0f}"] for s in self.links)),
            _write(out / "drops.csv", ["t_s", "switch", "port", "reason", "packets"],
                   ([_t(s.t_ns), s.switch, s.port, s.reason, s.packets] for s in self.drops)),
        ]
        if self.tcp:
            written.append(_write(out / "tcp.csv", ["t_s", "flow", "bytes_sent", "bytes_acked", "retrans_total",
                                                    "retrans", "rtt_ms", "rttvar_ms", "min_rtt_ms", "cwnd_pkts",
                                                    "ssthresh_pkts", "ca_state", "rwnd_limited_ms", "app_limited"],
                                  _tcp_rows(self.tcp)))
        if self.pgmcc:
            written.append(_write(out / "pgmcc.csv", ["t_s", "flow", "acker", "cwnd_pkts", "data_sent_pkts",
                                                      "repairs_pkts", "timeouts"],
                                  ([_t(r.t_ns), r.flow, r.acker, f"{r.cwnd:.3f}", r.data_sent, r.repairs, r.timeouts]
                                   for r in self.pgmcc)))
            written.append(_write(out / "pgmcc_switches.csv", ["t_s", "flow", "from", "to", "t_from_pps", "t_to_pps"],
                                  ([_t(r.t_ns), r.flow, r.old, r.new, f"{r.t_old:.3f}", f"{r.t_new:.3f}"]
                                   for r in self.pgmcc_switches)))
        for flow, rows in sorted(self.packets.items()):
            written.append(_write(out / f"packets_{flow}.csv", ["seq", "sent_s", "received_s", "owd_us"],
                                  ([seq, _t(sent), _t(recv), f"{(recv - sent) / 1000:.1f}"]
                                   for seq, sent, recv in rows)))
        return written


def _flow_rows(samples: list[FlowSample]) -> list[list[object]]:
    """Cumulative samples -> per-period rates and mean one-way delay (first period from t = 0)."""
    rows: list[list[object]] = []
    last: dict[str, FlowSample] = {}
    for s in samples:
        p = last.get(s.flow, FlowSample(0, s.flow, 0, 0, 0, s.packet_bytes))
        dt = (s.t_ns - p.t_ns) / 1e9
        got = s.received - p.received
        rows.append([_t(s.t_ns), s.flow, s.sent, s.received,
                     f"{(s.sent - p.sent) * 8 * s.packet_bytes / dt:.0f}" if dt > 0 else "",
                     f"{got * 8 * s.packet_bytes / dt:.0f}" if dt > 0 else "",
                     f"{(s.owd_sum_ns - p.owd_sum_ns) / got / 1e6:.3f}" if got else "",
                     "" if s.played is None else s.played])
        last[s.flow] = s
    return rows


def _ssthresh(value: int | None) -> object:
    """Linux's ssthresh before the first reduction is TCP_INFINITE_SSTHRESH (0x7fffffff): blank, as unset."""
    return "" if value is None or value >= 0x7FFFFFFF else value


def _tcp_rows(samples: list[TcpSample]) -> list[list[object]]:
    """TCP_INFO samples; ``retrans`` is the retransmissions since the flow's previous sample."""
    rows: list[list[object]] = []
    last: dict[str, int] = {}
    for s in sorted(samples, key=lambda s: (s.t_ns, s.flow)):
        info = dict(s.info)
        total = info.get("total_retrans", 0)
        rows.append([_t(s.t_ns), s.flow, s.bytes_sent, info.get("bytes_acked", ""), total,
                     total - last.get(s.flow, 0), *(_ms(info.get(k)) for k in ("rtt_us", "rttvar_us", "min_rtt_us")),
                     info.get("snd_cwnd", ""), _ssthresh(info.get("snd_ssthresh")), info.get("ca_state", ""),
                     _ms(info.get("rwnd_limited_us")), "" if "flags" not in info else info["flags"] & 1])
        last[s.flow] = total
    return rows


def _ms(us: int | None) -> str:
    return "" if us is None else f"{us / 1000:.3f}"


def _t(ns: int) -> str:
    return f"{ns / 1e9:.6f}"


def _write(path: Path, header: list[str], rows: object) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)  # type: ignore[arg-type]
    return path
