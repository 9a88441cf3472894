"""P4Runtime Write throughput measured the way a controller writes.

    python -m tests.bench.p4rt_writes [--entries 1000] [--rounds 3]

Why its own module: the figure that matters to a user is what a controller sees over gRPC,
not the in-process core. So a ``p4switch`` process runs ``p4src/alinea.p4`` (no ports needed),
the client uses the raw ``p4runtime`` stubs, keeps its arbitration StreamChannel open (as
every controller does), and inserts ``ipv4_lpm`` entries into the 1024-entry table, one
update per Write and 100 per Write; between rounds it deletes them again. Rounds of the two
batch sizes alternate, so machine load drifts hit both alike; the median round is reported.
"""

from __future__ import annotations

import argparse
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALINEA = ROOT / "p4src" / "alinea.p4"


@dataclass
class WriteRates:
    """Median inserts/s per batch size, and every round's rate (for the details column)."""

    median: dict[int, float]
    rounds: dict[int, list[float]]


class RawController:
    """The smallest real controller: a channel, an arbitration stream, unary Writes."""

    def __init__(self, addr: str, device_id: int = 0, election_low: int = 1, timeout: float = 10.0) -> None:
        import grpc
        from p4.v1 import p4runtime_pb2 as pb
        from p4.v1 import p4runtime_pb2_grpc

        self.pb, self.device_id, self.timeout = pb, device_id, timeout
        self.election = pb.Uint128(high=0, low=election_low)
        self.channel = grpc.insecure_channel(addr)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue = queue.Queue()
        self.received: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(self._requests())
        self._reader = threading.Thread(target=self._read, daemon=True, name="raw-controller")
        self._reader.start()
        arb = pb.MasterArbitrationUpdate(device_id=device_id, election_id=self.election)
        self._out.put(pb.StreamMessageRequest(arbitration=arb))
        first = self.received.get(timeout=timeout)
        if first.WhichOneof("update") != "arbitration" or first.arbitration.status.code != 0:
            raise RuntimeError(f"not primary: {first}")

    def _requests(self) -> Iterator:
        while (item := self._out.get()) is not None:
            yield item

    def _read(self) -> None:
        try:
            for msg in self.stream:
                self.received.put(msg)
        except Exception:  # noqa: BLE001 - the stream ends with the channel
            return

    def send(self, msg: object) -> None:
        self._out.put(msg)

    def write(self, updates: list) -> None:
        req = self.pb.WriteRequest(device_id=self.device_id, election_id=self.election, updates=updates)
        self.stub.Write(req, timeout=self.timeout)

    def close(self) -> None:
        self._out.put(None)
        self.channel.close()
        self._reader.join(2)


def lpm_updates(p4info: object, kind: int, count: int, first_octet: int = 11) -> list:
    """``count`` ipv4_lpm updates (``kind``: INSERT/DELETE) for distinct /24 prefixes."""
    from p4.v1 import p4runtime_pb2 as pb

    from controlplane.p4runtime_client import Names

    names = Names(p4info)
    return [pb.Update(type=kind, entity=pb.Entity(table_entry=names.table_entry(
        "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": ((first_octet << 24) | (i << 8), 24)},
        "MyIngress.ipv4_forward", {"dst_mac": 0x020000000002, "src_mac": 0x020000000102, "port": 2})))
        for i in range(count)]


def measure(addr: str, p4info: object, entries: int = 1000, rounds: int = 3,
            batches: tuple[int, ...] = (1, 100)) -> WriteRates:
    """Alternate rounds of each batch size against the switch at ``addr``."""
    from p4.v1 import p4runtime_pb2 as pb

    ctl = RawController(addr)
    try:
        inserts = lpm_updates(p4info, pb.Update.INSERT, entries)
        deletes = lpm_updates(p4info, pb.Update.DELETE, entries)
        out: dict[int, list[float]] = {b: [] for b in batches}
        for _ in range(rounds):
            for batch in batches:
                t = time.perf_counter()
                for i in range(0, entries, batch):
                    ctl.write(inserts[i:i + batch])
                out[batch].append(entries / (time.perf_counter() - t))
                for i in range(0, entries, 500):
                    ctl.write(deletes[i:i + 500])
    finally:
        ctl.close()
    return WriteRates({b: statistics.median(r) for b, r in out.items()}, out)


def run_against_new_switch(entries: int, rounds: int) -> WriteRates:
    """Start a p4switch process (alinea.p4, no ports), measure, stop it."""
    from tests.switch.netns import SwitchProcess
    from tests.switch.simnet import program

    with tempfile.TemporaryDirectory(prefix="p4rtw") as tmp:
        sw = SwitchProcess(["--log-level", "warn", str(ALINEA)], str(Path(tmp) / "p4switch.log")).start()
        try:
            return measure(sw.grpc_addr, program(str(ALINEA)).p4info, entries, rounds)
        finally:
            sw.stop()


def run_against_empty_server(kind: str, entries: int, rounds: int) -> WriteRates:
    """The same client against tests/bench/p4rt_floor.py: what the client and gRPC cost alone."""
    import subprocess

    from tests.switch.netns import free_tcp_port, wait_tcp
    from tests.switch.simnet import program

    port = free_tcp_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.bench.p4rt_floor", "--port", str(port), "--kind", kind],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not wait_tcp(port, 30):
            raise RuntimeError(f"the empty {kind} server did not listen on {port}")
        return measure(f"127.0.0.1:{port}", program(str(ALINEA)).p4info, entries, rounds)
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.p4rt_writes", description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--floor", action="store_true",
                   help="also measure the same client against empty grpc.aio and sync servers")
    args = p.parse_args(argv)
    runs = {"p4switch": lambda: run_against_new_switch(args.entries, args.rounds)}
    if args.floor:
        for kind in ("aio", "sync"):
            runs[f"empty {kind} server"] = lambda k=kind: run_against_empty_server(k, args.entries, args.rounds)
    for name, fn in runs.items():
        rates = fn()
        for batch, rate in rates.median.items():
            rounds = ", ".join(f"{r:,.0f}" for r in rates.rounds[batch])
            print(f"{name}: {batch} update(s) per Write: median {rate:,.0f} inserts/s (rounds: {rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
