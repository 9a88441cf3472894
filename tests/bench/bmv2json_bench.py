"""Benchmark (not a test): alinea.p4 loaded from p4c's BMv2 JSON against the same program
loaded from source, the same frames, the same table entries, rounds taken in turn.

The JSON is tests/fixtures/bmv2-json/alinea.json (p4c 1.2.5.16) and the source the one it was
compiled from (alinea.6accfac.p4 beside it), or build/alinea.json with p4src/alinea.p4 when
``make p4`` made one with p4c. Both run on p4c's P4Info; the modelled port (admission, report
check) and a route are configured as in tests/bench/run.py's pipeline rows.

    .venv/bin/python -m tests.bench.bmv2json_bench [--packets N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.bmv2json import compile_json
from p4switch.device import build_pipeline, compile_file
from p4switch.state import Lpm

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"


def sources() -> tuple[Path, Path, Path, str]:
    """(JSON, its P4Info, its source, where they come from)."""
    built = ROOT / "build" / "alinea.json"
    info = ROOT / "build" / "alinea.p4info.txtpb"
    if built.is_file() and info.is_file():
        return built, info, ROOT / "p4src" / "alinea.p4", "build/alinea.json (make p4)"
    return (FIXTURES / "alinea.json", FIXTURES / "alinea.p4info.txtpb", FIXTURES / "alinea.6accfac.p4",
            "tests/fixtures/bmv2-json/alinea.json (p4c 1.2.5.16) and its source alinea.6accfac.p4")


def configure(state: Any) -> None:
    ids = state.actions_by_name
    state.tables_by_name["MyIngress.ipv4_lpm"].insert(
        {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, ids["MyIngress.ipv4_forward"].id, (0x020000000302, 0x020000000301, 2))
    state.tables_by_name["MyIngress.port_config"].insert(
        {"meta.model_port": 1}, ids["MyIngress.set_port"].id, (1000, 10_000, 1, 0x020000000101, 0x020000000001))


def pipelines() -> tuple[dict[str, Any], str]:
    js, info_path, src, where = sources()
    info = text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())
    out = {}
    for name, program in (("source", compile_file(src, [ROOT / "p4src" / "include"])),
                          ("json", compile_json(js.read_bytes(), info))):
        pl, state = build_pipeline(program, info, seed=1)
        configure(state)
        out[name] = pl
    return out, where


def frames(seed: int, n: int = 256) -> list[bytes]:
    from tests.bench.fuzz import eth, ipv4

    rng = random.Random(seed)
    return [eth(0x020000000101, 0x020000000001, 0x0800)
            + ipv4(0x0A000101, 0x0A000200 | (i % 200) + 1, payload=bytes(8) + rng.randbytes(rng.choice((18, 100, 500))))
            for i in range(n)]


def one_round(pl: Any, fr: list[bytes], packets: int, start: int) -> float:
    t = time.perf_counter()
    for i in range(start, start + packets):
        pkt = pl.new_packet(fr[i & 255], 1, i)
        pl.run_ingress(pkt)
        pl.run_egress(pkt, pkt.std("egress_spec"), i + 5)
        pl.deparse(pkt)
    return time.perf_counter() - t


def measure(packets: int = 50_000, rounds: int = 3, seed: int = 1) -> dict[str, Any]:
    """Best packets/s of each loading over ``rounds`` rounds taken in turn, and what ran."""
    pls, where = pipelines()
    fr = frames(seed)
    for pl in pls.values():  # both forward the frames (a dropped benchmark frame measures nothing)
        pkt = pl.new_packet(fr[0], 1, 0)
        pl.run_ingress(pkt)
        assert not pkt.marked_to_drop, "benchmark frame dropped"
    n = packets // rounds
    best = {name: float("inf") for name in pls}
    for r in range(rounds):
        for name, pl in pls.items():
            best[name] = min(best[name], one_round(pl, fr, n, r * n))
    return {"pps": {name: n / t for name, t in best.items()}, "packets": n, "rounds": rounds, "where": where,
            "engine_blocks": {name: list(pl.engine_blocks) for name, pl in pls.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=60_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    m = measure(args.packets, 3, args.seed)
    print(f"{m['where']}: best of {m['rounds']} rounds of {m['packets']} packets, in turn")
    for name, pps in m["pps"].items():
        print(f"  alinea.p4 from {name}: {pps:,.0f} packets/s (engine blocks: {', '.join(m['engine_blocks'][name])})")
    print(f"  JSON / source: {m['pps']['json'] / m['pps']['source']:.2f}")


if __name__ == "__main__":
    main()
