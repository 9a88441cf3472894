"""``hbh show FILE...``: print a topology as the loader resolved it.

Why: the file states defaults, selectors and derived values (r_max, ports, routes); this shows
what the backends will actually get, so a file can be checked without running it, and the
resolved values quoted in docs/reference/topologies.md come from a command. A broken file prints its
one-line ``FILE:LINE: PATH: ...`` error and exits 1.
"""

from __future__ import annotations

import sys

from controlplane.units import format_duration, format_rate
from runtime.arguments import ValueParser
from topo.analysis.check import check_topology, warnings_of
from topo.file.schema import TopologyError, load_topology
from topo.net.model import BufferTime, Topology

__all__ = ["describe", "main"]


def _ipv4(value: int) -> str:
    return ".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0))


def _mac(value: int) -> str:
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -1, -8))


def _buffer(packets: int, time: BufferTime | None) -> str:
    """A buffer as the file gave it: ``200``, or ``250 packets (5ms at 400Mbps, 1000 B)`` from a duration."""
    if time is None:
        return str(packets)
    return f"{packets} packets ({format_duration(time.ns)} at {format_rate(time.rate_bps)}, {time.packet_size} B)"


def _nodes(t: Topology) -> list[str]:
    out = ["nodes:"]
    for n in t.nodes.values():
        if n.is_switch:
            ports = ", ".join(f"{t.port(n.name, nb)}->{nb} {_mac(t.mac(n.name, nb))}" for nb in t.neighbours(n.name))
            out.append(f"  {n.name}: switch, id {n.index}, ports {ports}")
        else:
            buffer = (f", receive_buffer {_buffer(n.receive_buffer, n.receive_buffer_time)}, playout {format_rate(n.playout_bps or 0)}"
                      if n.receive_buffer is not None else "")
            out.append(f"  {n.name}: host, id {n.index}, {_ipv4(t.ip(n.name))} {_mac(t.mac(n.name))}{buffer}")
    return out


def _links_and_flows(t: Topology) -> list[str]:
    out = ["links:"]
    out += [f"  {ln.a} -- {ln.b}: {format_rate(ln.rate_bps)}, {format_duration(ln.delay_ns)}, buffer {_buffer(ln.buffer, ln.buffer_time)}"
            for ln in t.links]
    out.append("flows:")
    for f in t.flows:
        cap = f"rate {format_rate(f.rate_bps)}" if f.rate_bps is not None else (
            f"r_max {format_rate(f.r_max_bps)}" if f.r_max_bps is not None else "r_max (none)")
        if f.control == "tcp":
            cap = f"cc {f.cc}, " + (f"size {f.size_bytes} B" if f.size_bytes is not None else "bulk") + ", records of"
        if f.control == "gcc" and f.gcc is not None:
            g = f.gcc
            top = format_rate(g.max_rate_bps) if g.max_rate_bps is not None else "its first link's rate"
            cap = (f"gcc {format_rate(g.min_rate_bps)} .. {top} from {format_rate(g.start_bps())}, "
                   f"{g.filter} filter, {g.gains} gains")
        stop = format_duration(f.stop_ns) if f.stop_ns is not None else "end"
        n = len(t.all_paths(f.src, f.dst)) if t.options.ecmp else 1
        path = " -> ".join(f.path) + (f" (one of {n} equal-cost paths: the 5-tuple hash picks)" if n > 1 else "")
        out.append(f"  {f.name}: {f.control} {path}, {cap}, {f.packet_size} B, "
                   f"{format_duration(f.start_ns)} .. {stop}")
    return out


def _origins(t: Topology, key: tuple[str, str]) -> str:
    """Where the values came from, unless all from the file: "; derived: ...; default: ..."."""
    origins = t.provenance.get(key, {})
    parts = [f"{kind}: {', '.join(k for k, o in origins.items() if o == kind)}" for kind in ("derived", "default")
             if any(o == kind for o in origins.values())]
    return "".join(f"; {p}" for p in parts)


def _laws_and_ports(t: Topology) -> list[str]:
    out = ["laws (u -> v: u's rate toward v, on v's reports):"]
    for (u, v), p in t.law.items():
        out.append(f"  {u} -> {v}: o_min {p.o_min:g}, o_max {p.o_max:g}, w_max {format_rate(p.w_max)}, "
                   f"w_min {format_rate(p.w_min)}, k_p {format_rate(p.k_p)}, r_max {format_rate(p.r_max)}, "
                   f"r_floor {format_rate(p.r_floor)}{_origins(t, (u, v))}")
    out.append("ports (switch <- neighbour):")
    out += [f"  {v} <- {u}: capacity {p.capacity}, interval {p.interval_us} us" for (v, u), p in t.ports.items()]
    out.append("host receive buffers (host <- neighbour):")
    out += [f"  {h} <- {u}: capacity {p.capacity}, interval {p.interval_us} us"
            for (h, u), p in t.host_buffers.items()]
    return out


def _events(t: Topology) -> list[str]:
    out = ["events:"]
    for e in t.events:
        when = format_duration(e.at_ns)
        if e.kind == "link_rate" and e.link is not None:
            out.append(f"  {when}: link {e.link[0]} -- {e.link[1]} rate {format_rate(e.rate_bps or 0)}")
        else:
            targets = ", ".join(f"{u}->{v}" for u, v in e.targets)
            changes = ", ".join(f"{k} {v:g}" for k, v in e.law_changes)
            interval = f", interval {e.interval_us} us" if e.interval_us is not None else ""
            out.append(f"  {when}: alinea {targets}: {changes}{interval}")
    return out


def _analysis(t: Topology) -> list[str]:
    """The loop analysis of every law that carries an ALINEA flow (docs/background/analysis.md), its flows at
    the file's starts: ``hbh show`` analyses no run, so no seed's or backend's draws (topo/net/starts.py)."""
    out = ["loop analysis (docs/background/analysis.md, \"The loop with its delay\"):"]
    checks = check_topology(t, 60.0)
    for c in checks:
        v = c.verdict
        together = "" if c.network is None else (f", with every law {c.network.peak:.1%}"
                                                  + (f" ({c.network.lost_pkts:.0f} packets lost)" if c.network.lost_pkts >= 1 else ""))
        out.append(f"  {c.key[0]} -> {c.key[1]}: delay {c.loop.delay_s * 1e3:.3g} ms = {v.delay_intervals} report "
                   f"intervals, settled root modulus {v.radius_settled:.3f}, fluid peak alone {v.peak:.1%}{together}"
                   + (f", {c.room_pkts:.3g} packets above the target for {c.inputs} feeding link(s)" if c.inputs else
                      ", drains faster than it is fed")
                   + ("" if c.lossless else " -- expects loss or no settling"))
    out += [f"  warning: {w}" for w in warnings_of(t, checks, 60.0)]  # what `hbh run` prints (check.py)
    return out


def describe(t: Topology) -> str:
    """Every resolved value of ``t``, one item a line."""
    head = [f"{t.name} ({t.source})" + (f": {t.description}" if t.description else ""),
            f"options: report_loss {t.options.report_loss:g}, queue_model {t.options.queue_model}"
            + (", ecmp" if t.options.ecmp else "") + (f", network {t.options.network}" if t.options.network else "")]
    return "\n".join(head + _nodes(t) + _links_and_flows(t) + _laws_and_ports(t) + _events(t) + _analysis(t)) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = ValueParser(prog="hbh show", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="topology YAML files")
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        try:
            sys.stdout.write(describe(load_topology(path)))
        except TopologyError as exc:
            print(exc, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
