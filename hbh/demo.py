"""`hbh demo`: the paper's one-router line in virtual time, with the data plane doing its part.

H1 —10 Mb/s— S1 —2 Mb/s— H2, 3 ms links, 1000-byte frames; S1's egress queue toward H2
is limited to R_max = 1.8 Mb/s with set_queue_rate, as in Chen et al.'s one-router run.
S1 runs p4src/alinea.p4 on p4switch: it models the 200-packet buffer behind its port 1
and reports that buffer's occupancy in-band to H1. H1 sends faster than S1 forwards
and does not yet react to the reports (the ALINEA law arrives with the control-plane
issues), so the demo shows what the data plane measures, exports and enforces: occupancy
climbing to capacity, then admission drops, and a report every interval.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

from controlplane import dataplane_config as dp
from controlplane.p4runtime_client import InProcessController
from controlplane.report import ETHERTYPE_ALINEA, decode
from p4switch.device import compile_file
from p4switch.sched import VirtualScheduler
from p4switch.switch import Switch, SwitchOptions
from topo.sim import SimHost, attach_host

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "alinea.p4"
MS = 1_000_000
H1_IP, H2_IP = "10.0.1.1", "10.0.2.1"
H_MAC = {1: 0x02_00_00_00_00_01, 2: 0x02_00_00_00_00_02}
S_MAC = {1: 0x02_00_00_00_01_01, 2: 0x02_00_00_00_01_02}


@dataclass(frozen=True)
class Scenario:
    access_bps: int = 10_000_000
    link_bps: int = 2_000_000
    r_max_bps: int = 1_800_000
    delay_ms: int = 3
    frame_bytes: int = 1000
    capacity_pkts: int = 200
    report_interval_ms: int = 10
    send_bps: int = 2_400_000
    duration_ms: int = 4000
    seed: int = 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the one-router demo in virtual time",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration-ms", type=_positive, default=Scenario.duration_ms, help="virtual run time")
    p.add_argument("--send-bps", type=_positive, default=Scenario.send_bps, help="H1's constant sending rate")
    p.add_argument("--out", default="results/demo", help="directory for reports.csv")
    p.set_defaults(func=_run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    sc = Scenario(duration_ms=args.duration_ms, send_bps=args.send_bps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = run(sc)
    _print(sc, result)
    _write_csv(out / "reports.csv", result.reports)
    print(f"\nper-report trace: {out / 'reports.csv'}")
    return 0


@dataclass
class Result:
    sent: int
    delivered: list[int]  # virtual ns of each frame H2 received
    reports: list[tuple[int, object]]  # (virtual ns at H1, Report)


def run(sc: Scenario) -> Result:
    sched = VirtualScheduler()
    switch = Switch(sched, SwitchOptions(seed=sc.seed, grpc_addr=None, thrift_port=None))
    h1 = attach_host(switch, sched, 1, "h1", bitrate=sc.access_bps, delay_ns=sc.delay_ms * MS)
    h2 = attach_host(switch, sched, 2, "h2", bitrate=sc.link_bps, delay_ns=sc.delay_ms * MS)
    _configure(switch, sc)
    frame = _udp_frame(sc.frame_bytes)
    gap_ns = sc.frame_bytes * 8 * 1_000_000_000 // sc.send_bps
    sent = 0
    for t in range(0, sc.duration_ms * MS, gap_ns):
        h1.send_at(t, frame)
        sent += 1
    sched.run_until(sc.duration_ms * MS + 100 * MS)
    return Result(sent, [t for t, _ in h2.frames(0x0800)], _reports(h1))


def _configure(switch: Switch, sc: Scenario) -> None:
    """What an operator does over P4Runtime and Thrift before traffic starts."""
    prog = compile_file(PROGRAM)
    ctl = InProcessController(switch.p4rt)
    ctl.set_pipeline(prog.p4info, prog.device_config)
    for port, ip in ((1, H1_IP), (2, H2_IP)):
        dp.add_route(ctl, dp.ip_int(ip), 32, port, dst_mac=H_MAC[port], src_mac=S_MAC[port])
    dp.model_port(ctl, 1, capacity_pkts=sc.capacity_pkts, report_interval_us=sc.report_interval_ms * 1000,
                  node_id=1, port_mac=S_MAC[1], upstream_mac=H_MAC[1])
    # The egress queue must hold every admitted packet (docs/dataplane.md): set_queue_depth.
    switch.tm.set_queue_depth(2, sc.capacity_pkts + 16)
    switch.tm.set_queue_rate(2, sc.r_max_bps // (8 * sc.frame_bytes))  # packets per second, as on BMv2


def _udp_frame(size: int) -> bytes:
    from scapy.all import IP, UDP, Ether

    head = Ether(dst=dp.mac_text(S_MAC[1]), src=dp.mac_text(H_MAC[1])) / IP(src=H1_IP, dst=H2_IP) / UDP(
        sport=4000, dport=5000)
    return bytes(head / (b"\x00" * (size - len(head))))


def _reports(host: SimHost) -> list[tuple[int, object]]:
    return [(t, decode(f)) for t, f in host.frames(ETHERTYPE_ALINEA)]


def _print(sc: Scenario, r: Result) -> None:
    print(f"hbh demo (virtual time, seed {sc.seed}): H1 —{sc.access_bps / 1e6:g} Mb/s— S1 —"
          f"{sc.link_bps / 1e6:g} Mb/s— H2, {sc.delay_ms} ms links, {sc.frame_bytes}-byte frames")
    print(f"S1's egress queue toward H2: set_queue_rate {sc.r_max_bps // (8 * sc.frame_bytes)} pps "
          f"(R_max = {sc.r_max_bps / 1e6:g} Mb/s).")
    print(f"S1 (p4switch running {PROGRAM.relative_to(ROOT)}) models the {sc.capacity_pkts}-packet buffer "
          f"behind port 1 and reports it to H1 every {sc.report_interval_ms} ms.")
    print(f"H1 sends {sc.send_bps / 1e6:g} Mb/s for {sc.duration_ms} ms and does not react yet.\n")
    print(f"{'t (ms)':>7} {'reports':>8} {'occupancy':>10} {'of cap.':>8} {'drops':>6} {'H2 rx':>6}")
    step = max(1, sc.duration_ms // 12) * MS
    for t_end in range(step, sc.duration_ms * MS + 1, step):
        seen = [rep for t, rep in r.reports if t <= t_end]
        if not seen:
            continue
        last = seen[-1]
        drops = sum(rep.drops for rep in seen)
        rx = sum(1 for t in r.delivered if t <= t_end)
        print(f"{t_end // MS:>7} {len(seen):>8} {last.occupancy:>10} {last.fraction:>8.0%} {drops:>6} {rx:>6}")
    delivered = sum(1 for t in r.delivered if t <= sc.duration_ms * MS)
    drops = sum(rep.drops for _, rep in r.reports)
    print(f"\nin {sc.duration_ms} ms: sent {r.sent}, delivered {delivered}, dropped at S1's port-1 buffer (reported) {drops}, "
          f"{len(r.reports)} reports; H2 goodput {delivered * sc.frame_bytes * 8 / (sc.duration_ms / 1000) / 1e6:.2f} "
          f"Mb/s (R_max {sc.r_max_bps / 1e6:g} Mb/s).")


def _write_csv(path: Path, reports: list[tuple[int, object]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_ms_at_h1", "seq", "occupancy", "capacity", "drops", "switch_timestamp_us"])
        for t, rep in reports:
            w.writerow([f"{t / MS:.3f}", rep.seq, rep.occupancy, rep.capacity, rep.drops, rep.timestamp_us])
