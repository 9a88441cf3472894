"""Micro-benchmark (not a test): packets per second of the pipeline on alinea.p4.

One UDP packet (64-byte payload) per iteration: ``new_packet`` + ``run_ingress`` +
``run_egress`` + ``deparse``, with a route installed. Two cases: the arrival port is not
modelled (routing only) and modelled (``port_config`` entry: admission, report check and
release on every packet). Single core, CPython, no sockets.

    .venv/bin/python tests/bench/pipeline_bench.py [--packets N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4switch.frontend.p4info import build_p4info
from p4switch.frontend.passes import compile_file
from p4switch.pipeline import load_pipeline
from p4switch.state import Lpm, RuntimeState

ROOT = Path(__file__).resolve().parents[2]


def build(modelled: bool):  # -> (pipeline, frame)
    checked = compile_file(ROOT / "p4src" / "alinea.p4", [ROOT / "p4src" / "include"])
    info = build_p4info(checked)
    state = RuntimeState.from_p4info(info)
    pl = load_pipeline(checked, info, state)
    lpm = state.tables_by_name["MyIngress.ipv4_lpm"]
    lpm.insert({"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, state.actions_by_name["MyIngress.ipv4_forward"].id,
               (0x020000000302, 0x020000000301, 2))
    if modelled:
        state.tables_by_name["MyIngress.port_config"].insert(
            {"meta.model_port": 1}, state.actions_by_name["MyIngress.set_port"].id,
            (1 << 30, 4_000_000_000, 1, 0x020000000101, 0x020000000201))
    frame = bytes(Ether(dst="02:00:00:00:03:01", src="02:00:00:00:00:09")
                  / IP(src="10.0.1.1", dst="10.0.2.2", ttl=64) / UDP(sport=1, dport=2) / Raw(b"x" * 64))
    return pl, frame


def run(modelled: bool, n: int) -> float:
    pl, frame = build(modelled)
    new_packet, run_ingress, run_egress, deparse = pl.new_packet, pl.run_ingress, pl.run_egress, pl.deparse
    for i in range(1000):  # warm up
        pkt = new_packet(frame, 1, i)
        run_ingress(pkt)
        run_egress(pkt, 2, i + 5)
        deparse(pkt)
    t0 = time.perf_counter()
    for i in range(n):
        pkt = new_packet(frame, 1, i)
        run_ingress(pkt)
        run_egress(pkt, 2, i + 5)
        deparse(pkt)
    dt = time.perf_counter() - t0
    assert not pkt.marked_to_drop, "benchmark packet was dropped"
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=50_000)
    args = ap.parse_args()
    for modelled in (False, True):
        pps = run(modelled, args.packets)
        label = "modelled port (admission + report check)" if modelled else "routing only"
        print(f"alinea.p4 {label}: {pps:,.0f} packets/s")


if __name__ == "__main__":
    main()
