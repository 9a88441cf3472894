"""P4Runtime Write throughput measured the way a controller writes.

    python -m tests.bench.p4rt_writes [--entries 1000] [--rounds 3] [--floor] [--baseline REV] [--bmv2]
                                      [--compiled] [--python-path] [--pin] [--reads]

Why its own module: the figure that matters to a user is what a controller sees over gRPC,
not the in-process core. So a ``p4switch`` process runs ``p4src/alinea.p4`` (no ports needed),
the client uses the raw ``p4runtime`` stubs, keeps its arbitration StreamChannel open (as
every controller does), and inserts ``ipv4_lpm`` entries into the 1024-entry table, one
update per Write and 100 per Write (at least 100 Writes a round: the 1000 entries ten times
over for the second), deleting them again between passes. Rounds of the two
batch sizes alternate, so machine load drifts hit both alike; the median round is reported.
Other servers measured beside it (empty ones - grpcio's and a Go one, tests/bench/p4rt_floor*
-, the p4switch of an earlier commit, the real BMv2 (its default build on PATH, and its
performance build - logging macros and event logger compiled out - at /opt/bmv2-perf or
``$HBH_BMV2_PERF``, when there is one), and this p4switch with the Python
P4Runtime front end, ``HBH_P4RT=grpcio`` (its default is the compiled one), and on its
Python-only path, ``HBH_P4RT=python``: the grpcio server and the general write path) are started
at the same time and take their rounds in turn with it, for the same reason. With ``--reads``
(and in ``make bench``), the switches among them then hold all the entries and their Reads are
measured the same way, in turns: one entry by its whole key (the entries in turn) and the whole
table; and a PacketOut to the p4switches' CPU port until its PacketIn comes back on the same
StreamChannel (BMv2 runs without a CPU port here).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALINEA = ROOT / "p4src" / "alinea.p4"


@dataclass
class WriteRates:
    """Median inserts/s per batch size, and every round's rate (for the details column); with
    Reads measured, the same of Reads/s per kind of Read (:data:`READ_KINDS`)."""

    median: dict[int, float]
    rounds: dict[int, list[float]]
    read_median: dict[str, float] = field(default_factory=dict)
    read_rounds: dict[str, list[float]] = field(default_factory=dict)
    #: each round's median PacketOut -> PacketIn round trip (s), when measured
    echo_rounds: list[float] = field(default_factory=list)


#: the Reads measured: one entry by its whole key (the entries in turn), and the whole table
READ_KINDS = ("one entry", "whole table")
READS_PER_ROUND = {"one entry": 500, "whole table": 20}


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

    def read(self, entities: list) -> int:
        """A Read of ``entities``; how many entities came back."""
        req = self.pb.ReadRequest(device_id=self.device_id, entities=entities)
        return sum(len(r.entities) for r in self.stub.Read(req, timeout=self.timeout))

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


WRITE_TIMEOUT_S = 60  # one Write waited over 10 s on a machine at a load average of 30
START_TIMEOUT_S = 180  # compiling alinea.p4 at start took over 30 s on a loaded 2-core machine
MIN_WRITES_PER_ROUND = 100  # so that a rare slow Write (gRPC's, ~40 ms) counts at its own frequency


def _round(ctl: RawController, inserts: list, deletes: list, batch: int) -> float:
    """Insert every entry ``batch`` per Write (timed), then delete them again (untimed); as
    many times as it takes to make at least MIN_WRITES_PER_ROUND timed Writes."""
    writes = -(-len(inserts) // batch)
    elapsed = 0.0
    cycles = -(-MIN_WRITES_PER_ROUND // writes)
    for _ in range(cycles):
        t = time.perf_counter()
        for i in range(0, len(inserts), batch):
            ctl.write(inserts[i:i + batch])
        elapsed += time.perf_counter() - t
        for i in range(0, len(deletes), 500):
            ctl.write(deletes[i:i + 500])
    return cycles * len(inserts) / elapsed


@contextlib.contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Every thread of this process (gRPC's own included) on ``cpus`` until the block ends."""
    if not cpus:
        yield
        return
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    before = {}
    for tid in tids:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, cpus)
    try:
        yield
    finally:
        for tid, mask in before.items():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, mask)


def _read_round(ctl: RawController, inserts: list, kind: str) -> float:
    """Reads/s of ``kind`` (:data:`READ_KINDS`) against a table holding ``inserts``' entries; a
    wrong answer (an entity too many or missing) is an error, not a figure."""
    from p4.v1 import p4runtime_pb2 as pb

    n = READS_PER_ROUND[kind]
    whole = [pb.Entity(table_entry=pb.TableEntry(table_id=inserts[0].entity.table_entry.table_id))]
    keyed = [[pb.Entity(table_entry=u.entity.table_entry)] for u in inserts]
    t = time.perf_counter()
    for i in range(n):
        got = ctl.read(keyed[i % len(keyed)] if kind == "one entry" else whole)
        want = 1 if kind == "one entry" else len(inserts)
        if got != want:
            raise RuntimeError(f"a Read of {kind} answered {got} entities, not {want}")
    return n / (time.perf_counter() - t)


def packet_out(names_cpm: object, port: int, payload: bytes) -> object:  # -> pb.StreamMessageRequest
    """A PacketOut of ``payload`` out of ``port``, its metadata named as the program's ``packet_out``
    header (``names_cpm``: its ControllerPacketMetadata) names them."""
    from p4.v1 import p4runtime_pb2 as pb

    msg = pb.StreamMessageRequest()
    msg.packet.payload = payload
    for md in names_cpm.metadata:
        value = port if md.name == "egress_port" else 0
        msg.packet.metadata.add(metadata_id=md.id, value=value.to_bytes(max(1, (md.bitwidth + 7) // 8), "big"))
    return msg


def frame(dport: int) -> bytes:
    """A UDP frame from h1 to h2 with a valid header checksum (alinea.p4 drops a bad one)."""
    udp = (40000).to_bytes(2, "big") + dport.to_bytes(2, "big") + (8 + 18).to_bytes(2, "big") + bytes(2) + bytes(18)
    ip = bytearray([0x45, 0, 0, 20 + len(udp), 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 2, 1])
    total = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[10:12] = (~total & 0xFFFF).to_bytes(2, "big")  # alinea.p4 drops a bad header checksum
    return bytes.fromhex("020000000002020000000102") + b"\x08\x00" + ip + udp


ECHOES_PER_ROUND = 300


def _echo_round(ctl: RawController, p4info: object) -> float:
    """The median time from a PacketOut to the CPU port (alinea.p4 sends it back) until its
    PacketIn arrives on the same StreamChannel: what one stream message costs each way."""
    cpm = next(c for c in p4info.controller_packet_metadata if c.preamble.name == "packet_out")
    msg = packet_out(cpm, 255, frame(47009))
    times = []
    for _ in range(ECHOES_PER_ROUND):
        t = time.perf_counter()
        ctl.send(msg)
        while ctl.received.get(timeout=WRITE_TIMEOUT_S).WhichOneof("update") != "packet":
            pass
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure_servers(servers: dict[str, AbstractContextManager[str]], p4info: object, entries: int = 1000,
                    rounds: int = 3, batches: tuple[int, ...] = (1, 100),
                    client_cpus: set[int] | None = None, read_from: Collection[str] = (),
                    echo_from: Collection[str] = ()) -> dict[str, WriteRates]:
    """Start every server, then measure them round-robin: server after server, batch size after
    batch size, ``rounds`` times, so a drift in machine load hits each of them alike. With
    ``client_cpus`` the client runs only there (start the servers on other CPUs). The servers
    named in ``read_from`` then get all the entries and their Reads are measured the same way;
    those in ``echo_from`` (p4switches: their CPU port) the PacketOut -> PacketIn round trip."""
    from p4.v1 import p4runtime_pb2 as pb

    inserts = lpm_updates(p4info, pb.Update.INSERT, entries)
    deletes = lpm_updates(p4info, pb.Update.DELETE, entries)
    out = {name: {b: [] for b in batches} for name in servers}
    reads: dict[str, dict[str, list[float]]] = {name: {k: [] for k in READ_KINDS} for name in read_from}
    with contextlib.ExitStack() as stack:
        stack.enter_context(pinned(client_cpus))
        ctls = {}
        for name, server in servers.items():
            ctls[name] = RawController(stack.enter_context(server), timeout=WRITE_TIMEOUT_S)
            stack.callback(ctls[name].close)
        for _ in range(rounds):
            for name, ctl in ctls.items():
                for batch in batches:
                    out[name][batch].append(_round(ctl, inserts, deletes, batch))
        for name in reads:
            for i in range(0, len(inserts), 500):
                ctls[name].write(inserts[i:i + 500])
        echoes: dict[str, list[float]] = {name: [] for name in echo_from}
        for _ in range(rounds):
            for name, kinds in reads.items():
                for kind, rates in kinds.items():
                    rates.append(_read_round(ctls[name], inserts, kind))
            for name, times in echoes.items():
                times.append(_echo_round(ctls[name], p4info))
    return {name: WriteRates({b: statistics.median(r) for b, r in rates.items()}, rates,
                             {k: statistics.median(r) for k, r in reads.get(name, {}).items()}, reads.get(name, {}),
                             echoes.get(name, []))
            for name, rates in out.items()}


@contextlib.contextmanager
def p4switch_server(tree: Path = ROOT, cpu: int | None = None, env: dict[str, str] | None = None) -> Iterator[str]:
    """A p4switch process of the checkout at ``tree`` (alinea.p4, no ports, on ``cpu`` if given,
    with ``env`` added to its environment); yields its address."""
    from tests.switch.netns import SwitchProcess

    with tempfile.TemporaryDirectory(prefix="p4rtw") as tmp:
        with _environment(env or {}):  # only while it starts: the next servers get their own
            sw = SwitchProcess(["--log-level", "warn", str(tree / "p4src" / "alinea.p4")],
                               str(Path(tmp) / "p4switch.log"), cpu=cpu, cwd=str(tree)).start(timeout=START_TIMEOUT_S)
        try:
            yield sw.grpc_addr
        finally:
            sw.stop()


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` in os.environ while the block starts a process (SwitchProcess inherits it)."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


#: the environment of a p4switch on its Python-only P4Runtime path (grpcio server, general writes)
PYTHON_PATH = {"HBH_P4RT": "python"}
#: ... and of one with grpcio's server as its front end, not the engine's (p4switch/p4runtime/server.py)
GRPCIO_FRONT = {"HBH_P4RT": "grpcio"}


@contextlib.contextmanager
def _listening(name: str, args: list[str], cpu: int | None) -> Iterator[str]:
    """Run ``args`` + ``--port N`` (on ``cpu`` if given) until the block ends; yields its address."""
    import subprocess

    from tests.switch.netns import free_tcp_port, wait_tcp

    port = free_tcp_port()
    cmd = [*args, "--port", str(port)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not wait_tcp(port, 30):
            raise RuntimeError(f"the {name} did not listen on {port}")
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def empty_server(kind: str, cpu: int | None = None) -> AbstractContextManager[str]:
    """tests/bench/p4rt_floor.py: what the client and gRPC cost alone."""
    return _listening(f"empty {kind} server", [sys.executable, "-m", "tests.bench.p4rt_floor", "--kind", kind], cpu)


class ServerUnavailable(RuntimeError):
    """A server to compare with cannot run here: a commit the clone lacks, no Go toolchain."""


BMV2_JSON = ROOT / "tests" / "fixtures" / "bmv2-json"  # p4c's alinea.json: its ipv4_lpm is the source's


def bmv2_version(exe: str) -> str:
    import subprocess

    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.stdout.strip() or out.stderr.strip() or "?").splitlines()[0]


#: environment variable naming the simple_switch_grpc of BMv2's performance build (default: BMV2_PERF_DEFAULT)
BMV2_PERF_ENV = "HBH_BMV2_PERF"
#: where BMv2's performance build is installed when the variable is unset (its own prefix, /usr/local left
#: to the default build: /root/logs/bmv2perf/build.md is the recipe)
BMV2_PERF_DEFAULT = Path("/opt/bmv2-perf/bin/simple_switch_grpc")


@dataclass(frozen=True)
class Bmv2Build:
    """One build of the real BMv2 measured beside the p4switch. ``exe`` None: not here, ``absent`` says why."""

    key: str  # its name among the servers (tests/bench/run.py's rows)
    label: str  # what the rows call it
    exe: str | None
    absent: str = ""
    #: what sets it apart, for the rows' labels
    detail: str = ""


def bmv2_builds() -> list[Bmv2Build]:
    """The BMv2 builds to measure: the default one (simple_switch_grpc on PATH) and the performance
    build BMv2's docs/performance.md names (configure --disable-logging-macros --disable-elogger; CMake
    -DENABLE_LOGGING_MACROS=OFF -DENABLE_ELOGGER=OFF), at ``$HBH_BMV2_PERF`` or BMV2_PERF_DEFAULT."""
    import shutil

    on_path = shutil.which("simple_switch_grpc")
    builds = [Bmv2Build("bmv2", "the real BMv2", on_path, "" if on_path else "simple_switch_grpc is not on PATH")]
    named = os.environ.get(BMV2_PERF_ENV)
    perf = named or str(BMV2_PERF_DEFAULT)
    if os.path.isfile(perf) and os.access(perf, os.X_OK):
        absent, exe = "", perf
    elif named:
        absent, exe = f"{BMV2_PERF_ENV}={named}: not an executable file (it should name a simple_switch_grpc)", None
    else:
        absent, exe = f"no {perf} (BMv2's performance build; {BMV2_PERF_ENV} names another)", None
    builds.append(Bmv2Build("bmv2-perf", "the real BMv2's performance build", exe, absent,
                            "logging macros and event logger compiled out"))
    return builds


@contextlib.contextmanager
def bmv2_server(cpu: int | None = None, exe: str | None = None) -> Iterator[str]:
    """The real BMv2 (``exe``, by default simple_switch_grpc on PATH) running p4c's alinea.json,
    pushed over P4Runtime as a controller does; yields its address. ServerUnavailable when it is absent."""
    import shutil
    import subprocess

    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2 as pb

    from tests.switch.netns import free_tcp_port, wait_tcp

    exe = exe or shutil.which("simple_switch_grpc")
    if exe is None:
        raise ServerUnavailable("simple_switch_grpc (real BMv2) is not on PATH")
    port, thrift = free_tcp_port(), free_tcp_port()
    cmd = [exe, "--no-p4", "--thrift-port", str(thrift), "--", "--grpc-server-addr", f"127.0.0.1:{port}"]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_tcp(port, 30):
            raise ServerUnavailable(f"simple_switch_grpc did not listen on {port}")
        addr = f"127.0.0.1:{port}"
        info = text_format.Parse((BMV2_JSON / "alinea.p4info.txtpb").read_text(), p4info_pb2.P4Info())
        ctl = RawController(addr)
        config = pb.ForwardingPipelineConfig(p4info=info, p4_device_config=(BMV2_JSON / "alinea.json").read_bytes())
        ctl.stub.SetForwardingPipelineConfig(pb.SetForwardingPipelineConfigRequest(
            device_id=0, election_id=ctl.election, config=config,
            action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT), timeout=60)
        ctl.close()
        time.sleep(0.5)  # the stream's end reaches BMv2 before the measuring client arbitrates
        yield addr
    finally:
        proc.kill()
        proc.wait(timeout=10)


GO_FLOOR = ROOT / "tests" / "bench" / "p4rt_floor_go"


def build_go_floor() -> Path:
    """Build tests/bench/p4rt_floor_go into build/ (its modules come from the Go module proxy,
    pinned by go.sum); ServerUnavailable says why not."""
    import shutil
    import subprocess

    go = shutil.which("go")
    if go is None:
        raise ServerUnavailable("no Go toolchain on PATH")
    out = ROOT / "build" / "p4rt-floor-go"
    try:
        done = subprocess.run([go, "build", "-o", str(out), "."], cwd=GO_FLOOR, capture_output=True, text=True,
                              timeout=600)
    except subprocess.TimeoutExpired:
        raise ServerUnavailable("go build of tests/bench/p4rt_floor_go took over 10 min") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ServerUnavailable(f"go build of tests/bench/p4rt_floor_go failed: {last}")
    return out


def go_empty_server(binary: Path, cpu: int | None = None) -> AbstractContextManager[str]:
    """The empty server in Go (see build_go_floor): the ceiling for a compiled server."""
    return _listening("empty Go server", [str(binary)], cpu)


def resolve_commit(rev: str) -> str | None:
    """The full id of commit ``rev`` in this repository, or None when the clone lacks it."""
    import subprocess

    try:
        found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout.strip() if found.returncode == 0 else None


#: the first lines of a script run in another tree (``commit_tree``'s, cwd the tree): the project's packages
#: from that tree's files only. Why: this checkout's .venv installs the project editable, and its finder
#: (last on sys.meta_path) lends any module the tree lacks from this checkout, so in a commit before issue 51
#: ``from topo.file.schema import ...`` would load today's topo/file/schema.py on that commit's other
#: modules instead of failing; with the finder gone it fails, and the script falls back to the old names
TREE_ONLY = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
"""


@contextlib.contextmanager
def commit_tree(rev: str) -> Iterator[Path]:
    """The files of commit ``rev`` of this repository in a temporary directory (git archive)."""
    import subprocess

    full = resolve_commit(rev)
    if full is None:
        raise ServerUnavailable(f"commit {rev} is not in this clone (shallow clone?)")
    with tempfile.TemporaryDirectory(prefix="p4rtw-base") as tmp:
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", full], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise ServerUnavailable(f"git archive {rev} failed")
        yield Path(tmp)


@contextlib.contextmanager
def commit_server(rev: str, cpu: int | None = None) -> Iterator[str]:
    """The p4switch of commit ``rev``, run from its own files with this checkout's .venv."""
    with commit_tree(rev) as tree, p4switch_server(tree, cpu) as addr:
        yield addr


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.p4rt_writes", description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--floor", action="store_true",
                   help="also measure the same client against empty servers: grpc.aio, sync grpcio, Go")
    p.add_argument("--baseline", metavar="REV", action="append", default=[],
                   help="also measure the p4switch of commit REV (repeatable), alternated with this one")
    p.add_argument("--bmv2", action="store_true",
                   help="also measure the real BMv2 (simple_switch_grpc on PATH) running p4c's alinea.json, and "
                        f"its performance build when there is one ({BMV2_PERF_DEFAULT} or ${BMV2_PERF_ENV})")
    p.add_argument("--grpcio", action="store_true",
                   help="also measure this p4switch with the Python P4Runtime front end (HBH_P4RT=grpcio)")
    p.add_argument("--python-path", action="store_true",
                   help="also measure this p4switch on its Python-only path (HBH_P4RT=python)")
    p.add_argument("--pin", action="store_true",
                   help="client on CPU 0, every server on CPU 1 (steadier figures than the OS's placement)")
    p.add_argument("--reads", action="store_true",
                   help="also measure Reads (one entry by its key, the whole table) of the switches: "
                        "this p4switch, with its Python front end, BMv2; and the p4switches' PacketOut -> PacketIn")
    args = p.parse_args(argv)
    from tests.switch.simnet import program

    if args.pin and len(os.sched_getaffinity(0)) < 2:
        p.error("--pin needs CPUs 0 and 1")
    cpu, client = (1, {0}) if args.pin else (None, None)
    servers: dict[str, AbstractContextManager[str]] = {"p4switch": p4switch_server(cpu=cpu)}
    if args.grpcio:
        servers["p4switch, HBH_P4RT=grpcio"] = p4switch_server(cpu=cpu, env=GRPCIO_FRONT)
    if args.python_path:
        servers["p4switch, HBH_P4RT=python"] = p4switch_server(cpu=cpu, env=PYTHON_PATH)
    for rev in args.baseline:
        servers[f"p4switch at {rev}"] = commit_server(rev, cpu)
    if args.bmv2:
        for build in bmv2_builds():
            if build.exe is None and build.key != "bmv2":  # the default build's absence stops the run, as it did
                print(f"p4rt_writes: {build.label} is left out: {build.absent}", file=sys.stderr)
                continue
            name = "BMv2 simple_switch_grpc" if build.key == "bmv2" else "BMv2 performance build simple_switch_grpc"
            servers[name] = bmv2_server(cpu, build.exe)
    try:
        if args.floor:
            for kind in ("aio", "sync"):
                servers[f"empty {kind} server"] = empty_server(kind, cpu)
            try:
                servers["empty Go server"] = go_empty_server(build_go_floor(), cpu)
            except ServerUnavailable as exc:
                print(f"p4rt_writes: the empty Go server is left out: {exc}", file=sys.stderr)
        readable = [n for n in servers if n.startswith(("p4switch", "BMv2"))] if args.reads else []
        echo = [n for n in servers if n.startswith("p4switch")] if args.reads else []
        results = measure_servers(servers, program(str(ALINEA)).p4info, args.entries, args.rounds, client_cpus=client,
                                  read_from=readable, echo_from=echo)
    except ServerUnavailable as exc:
        print(f"p4rt_writes: {exc}", file=sys.stderr)
        return 2
    for name, rates in results.items():
        for batch, rate in rates.median.items():
            rounds = ", ".join(f"{r:,.0f}" for r in rates.rounds[batch])
            print(f"{name}: {batch} update(s) per Write: median {rate:,.0f} inserts/s (rounds: {rounds})")
        for kind, rate in rates.read_median.items():
            rounds = ", ".join(f"{r:,.0f}" for r in rates.read_rounds[kind])
            print(f"{name}: Reads of {kind}: median {rate:,.0f} Reads/s, {1e3 / rate:.3f} ms each (rounds: {rounds})")
        if rates.echo_rounds:
            rounds = ", ".join(f"{r * 1e3:.3f}" for r in rates.echo_rounds)
            print(f"{name}: PacketOut -> PacketIn: median {statistics.median(rates.echo_rounds) * 1e3:.3f} ms "
                  f"(rounds: {rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
