"""Fuzz the switch in-process: random and mutated frames must never make it fail.

    python -m tests.bench.fuzz --frames 1000000 [--seed 1] [--program alinea|features|both]

Why: a software switch faces whatever arrives on a wire. Every frame, however short or
malformed, must end as a forwarded frame or a counted drop - never an exception, and never a
pipeline error (the core would count it as ``pipeline_error`` and carry on, which hides bugs,
so the fuzzer treats that count as a failure too). Frames go through the whole v1model core
(ingress, PRE, traffic manager, egress, deparser) of a switch in virtual time, configured so
that the interesting paths are reachable: routes, a modelled port with report clones, a
neighbour port, multicast groups, packet-outs on the CPU port.

Frames are drawn from seeds (valid IPv4/UDP, ALINEA reports, packet-outs, ARP, IPv6, MPLS,
probes) and mutated (bit flips, byte overwrites, truncation, extension, splices), plus some
entirely random. Deterministic for a seed. Exit status 1 and the offending frame (hex, port)
when something fails.
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from controlplane import dataplane_config as dp
from controlplane.report import ETH_BYTES, Report, encode

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = {"alinea": ROOT / "p4src" / "alinea.p4", "features": ROOT / "tests" / "p4programs" / "features.p4"}
PORTS = (1, 2, 3)
CPU_PORT = 255


def _csum(hdr: bytes) -> int:
    total = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(src: int, dst: int, proto: int = 17, ttl: int = 64, payload: bytes = b"", frag: int = 0) -> bytes:
    hdr = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(payload), 1, frag, ttl, proto, 0, src, dst))
    struct.pack_into("!H", hdr, 10, _csum(bytes(hdr)))
    return bytes(hdr) + payload


def eth(dst: int, src: int, etype: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big")


def seed_frames() -> list[tuple[int | None, bytes]]:
    """(port or None for any, frame) seeds reaching the programs' paths."""
    udp = struct.pack("!HHHH", 1234, 5678, 16, 0) + b"payload!"
    tcp = struct.pack("!HHIIBBHHH", 1234, 80, 1, 0, 0x50, 0x02, 1024, 0, 0)
    report = encode(Report(node_id=2, port=1, occupancy=140, capacity=200, timestamp_us=1234567, seq=42,
                           interval_us=10000))[ETH_BYTES:]
    probe = struct.pack("!BBHIIBB", 0x10, 7, 3, 9, 0, 0, 0)
    return [
        (None, eth(0x020000000101, 0x020000000001, 0x0800) + ipv4(0x0A000101, 0x0A000201, payload=udp)),
        (None, eth(0x020000000101, 0x020000000001, 0x0800) + ipv4(0x0A000101, 0x0A000301, 6, payload=tcp)),
        (None, eth(0x020000000101, 0x020000000001, 0x0800) + ipv4(0x0A000101, 0x0A000201, ttl=1, payload=udp)),
        (None, eth(0x020000000101, 0x020000000001, 0x0800) + ipv4(0xC0A80101, 0xEF010203, payload=udp)),
        (None, eth(0x020000000101, 0x020000000001, 0x0800) + ipv4(0x0A000101, 0x0A090101, payload=udp, frag=5)),
        (None, eth(0x020000000101, 0x020000000201, 0x88B5) + report),
        (CPU_PORT, b"\x00\x80" + eth(0x020000000001, 0x020000000101, 0x0800) + ipv4(1, 2, payload=udp)),
        (None, eth(0xFFFFFFFFFFFF, 0x020000000001, 0x0806) + bytes(28)),
        (None, eth(0x333300000001, 0x020000000001, 0x86DD) + bytes(40)),
        (None, eth(0x020000000101, 0x020000000001, 0x8847) + struct.pack("!IIII", 0x00064140, 0x000C8040,
                                                                         0x00190040, 0x00000140)),
        (None, eth(0x020000000101, 0x020000000001, 0x88B6) + probe),
        (None, b""),
    ]


def mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        if op == 0 and data:  # flip bits
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # overwrite a byte
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 2:  # truncate
            del data[rng.randint(0, len(data)):]
        elif op == 3:  # extend
            data += rng.randbytes(rng.randint(1, 64))
        elif op == 4 and len(data) > 2:  # splice a range elsewhere
            a = rng.randrange(len(data))
            b = rng.randint(a, len(data))
            data[rng.randrange(len(data)):rng.randrange(len(data))] = data[a:b]
        else:  # fix the IPv4 checksum so mutations get past verify_checksum
            if len(data) >= 34 and data[12:14] == b"\x08\x00" and data[14] == 0x45:
                data[24:26] = b"\0\0"
                data[24:26] = _csum(bytes(data[14:34])).to_bytes(2, "big")
    return bytes(data)


@dataclass
class FuzzResult:
    frames: int = 0
    seconds: float = 0.0
    drops: Counter = field(default_factory=Counter)
    transmitted: int = 0
    failure: str | None = None


def configured_switch(name: str):  # -> (Switch, VirtualScheduler, sink list)
    """A sim switch running ``name`` with tables and PRE filled through P4Runtime."""
    from controlplane.p4runtime_client import InProcessController, clone_session, multicast_group
    from p4switch.device import compile_file
    from p4switch.switch import Switch, SwitchOptions
    from runtime.sched import VirtualScheduler

    sched = VirtualScheduler()
    sw = Switch(sched, SwitchOptions(seed=7))
    sink: list[tuple[int, bytes]] = []

    class Sink:
        def __init__(self, number: int) -> None:
            self.number, self.name, self.on_receive = number, f"p{number}", None

        def send(self, frame: bytes) -> int:
            sink.append((self.number, frame))
            return 0

    for p in PORTS:
        sw.add_port(Sink(p))
    prog = compile_file(PROGRAMS[name])
    ctl = InProcessController(sw.p4rt)
    ctl.set_pipeline(prog.p4info, prog.device_config)
    if name == "alinea":
        for p in PORTS:
            ctl.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000 | p << 8, 24)},
                             "MyIngress.ipv4_forward", {"dst_mac": 0x0200000000 << 8 | p, "src_mac": 0x020000000100 | p,
                                                        "port": p})
        ctl.insert_entry("MyIngress.port_config", {"meta.model_port": 1}, "MyIngress.set_port",
                         {"capacity_pkts": 16, "report_interval_us": 0, "node_id": 1, "port_mac": 0x020000000101,
                          "upstream_mac": 0x020000000001})
        ctl.insert(clone_session(1001, [(1, 1)]))
        dp.accept_reports(ctl, 2)
    else:
        ctl.insert(multicast_group(1, [(p, 0) for p in PORTS]))
        ctl.insert(multicast_group(2, [(2, 5), (3, 6)]))
        ctl.insert_entry("MyIngress.lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, "MyIngress.forward",
                         {"dmac": 0x020000000022, "port": 2})
        ctl.insert_entry("MyIngress.lpm", {"hdr.ipv4.dstAddr": (0xEF000000, 8)}, "MyIngress.mcast", {"grp": 2})
        ctl.insert_entry("MyIngress.dmac", {"hdr.ethernet.dstAddr": 0x020000000101}, "MyIngress.l2_forward",
                         {"port": 3})
    sw.tm.set_all_queue_depths(8)  # full queues are a path too
    return sw, sched, sink


def fuzz(name: str, frames: int, seed: int) -> FuzzResult:
    sw, sched, sink = configured_switch(name)
    rng = random.Random(seed)
    seeds = seed_frames()
    result = FuzzResult()
    start = time.perf_counter()
    for i in range(frames):
        port, frame = rng.choice(seeds)
        if rng.random() < 0.05:
            frame = rng.randbytes(rng.randint(0, 128))
        elif rng.random() < 0.9:
            frame = mutate(rng, frame)
        if port is None or rng.random() < 0.02:
            port = rng.choice((*PORTS, CPU_PORT, rng.randrange(511)))
        try:
            sw.inject(port, frame)
            if i % 16 == 15 or rng.random() < 0.1:
                sched.run_for(rng.randint(0, 200_000))
        except Exception as exc:  # noqa: BLE001 - the finding
            result.failure = f"{type(exc).__name__}: {exc}; frame {i} on port {port}: {frame.hex()}"
            break
        if sw.core.drops.get("pipeline_error"):
            result.failure = f"pipeline error (logged above); frame {i} on port {port}: {frame.hex()}"
            break
        result.frames += 1
    else:
        try:
            sched.run()
        except Exception as exc:  # noqa: BLE001
            result.failure = f"{type(exc).__name__} while draining the queues: {exc}"
    result.seconds = time.perf_counter() - start
    result.drops = Counter(sw.core.drops)
    result.transmitted = len(sink)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.fuzz", description=__doc__.split("\n\n")[1])
    p.add_argument("--frames", type=int, default=100_000, help="frames per program (default 100000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--program", choices=("alinea", "features", "both"), default="both")
    args = p.parse_args(argv)
    names = ("alinea", "features") if args.program == "both" else (args.program,)
    status = 0
    for name in names:
        r = fuzz(name, args.frames, args.seed)
        drops = ", ".join(f"{k}={v}" for k, v in sorted(r.drops.items())) or "none"
        print(f"{name}: {r.frames} frames in {r.seconds:.1f} s ({r.frames / max(r.seconds, 1e-9):.0f} frames/s), "
              f"{r.transmitted} transmitted; architecture drops: {drops}")
        if r.failure:
            print(f"{name}: FAILURE (seed {args.seed}): {r.failure}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
