"""Benchmarks of p4switch; writes docs/performance.md.

    python -m tests.bench.run --out docs/performance.md [--seed 1] [--quick] [--only sim,ns3,...]

Why a script and not numbers in a document: every figure in docs/performance.md is measured
by this script on the machine it runs on, and the file says which command, machine and seed
produced it. Measured:

1. front end on p4src/alinea.p4 (cpp, parse, check, P4Info): a fresh process (cold) and
   repeated in one process (warm); the target is < 1 s;
2. pipeline packets/s in-process: the compiled pipeline alone, and the whole v1model core
   (ingress, PRE, traffic manager, egress, deparser) in virtual time;
3. packets/s through a ``p4switch`` process between two namespaces: the switch pinned to one
   core, a raw-socket blaster pinned to the other, forwarded rate from the switch's own
   P4Runtime counters (``MyIngress.rx`` / ``MyEgress.tx``), in turns with the p4switch of
   ``NETNS_BASELINE`` (its own files and engine, this checkout's .venv); h2 drops the blast at
   its address check (``ELSEWHERE_MAC``), and a row with h2's full stack compares with older pages;
4. added latency per packet: one frame at a time h1 -> h2 through p4switch (and through the
   baseline's), minus the same over a direct veth pair (both measured with the same raw-socket code);
5. P4Runtime table inserts/s: in-process core, and over gRPC the way a controller writes
   (raw stubs, arbitration stream open, one update per Write and batches of 100:
   ``tests/bench/p4rt_writes.py``);
6. the soak (``tests/bench/soak.py``, ``--soak-minutes``, 5 by default): mixed load for minutes,
   RSS/fds/threads, forwarding gaps (also around one 10,000-update Write), reconnects, errors;
7. the simulator on paper-5router (tests/bench/sim_bench.py) against ns-3 (tests/bench/ns3_bench.py)
   and against the pure-Python simulator, where its time goes (profile), the netns backend
   (tests/bench/netns_bench.py) and ``hbh sweep`` serial vs Ray (tests/bench/sweep_bench.py);
8. the loop analysis ``hbh run`` does before a run, its CPU time against the same run's wall time, per
   topology (tests/bench/analysis_cost.py; issue 46 bounds it at a tenth of the run or 2 s).

Parts 3-5 (gRPC) need root and network namespaces; without them those rows say why they were
skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.bench.blast import ALINEA, BLASTER, _frame, _start

ROOT = Path(__file__).resolve().parents[2]
FRONT_END_TARGET_S = 1.0


@dataclass
class Row:
    what: str
    value: str
    note: str = ""


@dataclass
class Report:
    sections: dict[str, list[Row]] = field(default_factory=dict)
    load_start: float = field(default_factory=lambda: os.getloadavg()[0])

    def add(self, section: str, what: str, value: str, note: str = "") -> None:
        self.sections.setdefault(section, []).append(Row(what, value, note))
        print(f"[{section}] {what}: {value} {note}".rstrip(), flush=True)


# ---- 1. front end ----------------------------------------------------------------------------

def front_end_once() -> float:
    from p4switch.device import compile_file

    t = time.perf_counter()
    compile_file(ALINEA)
    return time.perf_counter() - t


COLD_SCRIPT = ("import time; t = time.perf_counter(); from p4switch.device import compile_file; "
               "compile_file({path!r}); print(time.perf_counter() - t)")


def bench_front_end(rep: Report, runs: int) -> None:
    cold = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", COLD_SCRIPT.format(path=str(ALINEA))], cwd=ROOT,
                             capture_output=True, text=True, timeout=120, check=True)
        cold.append(float(out.stdout.strip()))
    warm = [front_end_once() for _ in range(runs)]
    verdict = "meets" if max(cold) < FRONT_END_TARGET_S else "MISSES"
    rep.add("front end", "alinea.p4, fresh process (imports included), median of 3",
            f"{statistics.median(cold) * 1000:.0f} ms", f"max {max(cold) * 1000:.0f} ms; {verdict} the < 1 s target")
    rep.add("front end", f"alinea.p4, warm (same process), median of {runs}", f"{statistics.median(warm) * 1000:.0f} ms",
            f"min {min(warm) * 1000:.0f} ms")


# ---- 2. pipeline in-process -------------------------------------------------------------------

def _alinea_frames(rng: random.Random, n: int) -> list[bytes]:
    from tests.bench.fuzz import eth, ipv4

    frames = []
    for i in range(n):
        payload = bytes(8) + rng.randbytes(rng.choice((18, 100, 500)))
        frames.append(eth(0x020000000101, 0x020000000001, 0x0800)
                      + ipv4(0x0A000101, 0x0A000200 | (i % 200) + 1, payload=payload))
    return frames


PIPELINE_ROUNDS = 3


def _modelled_alinea(oracle: bool) -> Any:  # -> (Switch, VirtualScheduler, sink list)
    """A sim switch running alinea.p4, port 1 modelled (admission, report check) with a report
    every 10 ms of virtual time; ``oracle``: its pipeline on the closures only."""
    from p4switch.pipeline.pipeline import ORACLE_ENV
    from tests.bench.fuzz import configured_switch

    before = os.environ.get(ORACLE_ENV)
    os.environ[ORACLE_ENV] = "1" if oracle else "0"
    try:
        sw, sched, sink = configured_switch("alinea")
    finally:
        if before is None:
            del os.environ[ORACLE_ENV]
        else:
            os.environ[ORACLE_ENV] = before
    sw.tm.set_all_queue_depths(1024)
    st = sw.state
    st.tables_by_name["MyIngress.port_config"].modify(
        {"meta.model_port": 1}, action_id=st.actions_by_name["MyIngress.set_port"].id,
        params=(1000, 10_000, 1, 0x020000000101, 0x020000000001))
    return sw, sched, sink


def _pipeline_alone(pl: Any, frames: list[bytes], packets: int, start: int) -> float:
    """Seconds to run ``packets`` frames through parse, ingress, egress and deparse."""
    t = time.perf_counter()
    for i in range(start, start + packets):
        pkt = pl.new_packet(frames[i & 255], 1, i)
        pl.run_ingress(pkt)
        pl.run_egress(pkt, pkt.std("egress_spec"), i + 5)
        pl.deparse(pkt)
    return time.perf_counter() - t


def _in_turns(pipelines: dict[str, Any], frames: list[bytes], n: int) -> dict[str, float]:
    """Best seconds per pipeline over PIPELINE_ROUNDS rounds of ``n`` packets, taken in turn."""
    best: dict[str, float] = {}
    for r in range(PIPELINE_ROUNDS):
        for name, pl in pipelines.items():
            best[name] = min(best.get(name, float("inf")), _pipeline_alone(pl, frames, n, r * n))
    return best


def bench_pipeline(rep: Report, seed: int, packets: int) -> None:
    rng = random.Random(seed)
    frames = _alinea_frames(rng, 256)
    # The engine and the closures (the differential oracle) in turns, each its best round: the
    # ratio is what the engine form buys on this machine, whatever else runs on it.
    pipelines = {name: _modelled_alinea(name == "oracle")[0].pipeline for name in ("engine", "oracle")}
    n = packets // PIPELINE_ROUNDS
    best = _in_turns(pipelines, frames, n)
    rep.add("pipeline (in-process)", "alinea.p4 pipeline alone: parse, ingress (modelled port), egress, deparse",
            f"{n / best['engine']:,.0f} pkts/s", f"{best['engine'] * 1e6 / n:.1f} µs each; blocks in the engine "
            f"({', '.join(pipelines['engine'].engine_blocks)}); best of {PIPELINE_ROUNDS} rounds of {n} packets")
    rep.add("pipeline (in-process)", "the same on the closures (HBH_P4_ORACLE=1, the differential oracle)",
            f"{n / best['oracle']:,.0f} pkts/s", f"{best['oracle'] * 1e6 / n:.1f} µs each; the engine "
            f"{best['oracle'] / best['engine']:.2f}x as fast; rounds taken in turn with the engine's")
    from tests.bench.bmv2json_bench import measure as json_vs_source

    m = json_vs_source(packets, PIPELINE_ROUNDS, seed)  # p4c's BMv2 JSON against its source, in turns
    rep.add("pipeline (in-process)", "alinea.p4 loaded from p4c's BMv2 JSON / from its source (p4switch.bmv2json)",
            f"{m['pps']['json'] / m['pps']['source']:.2f}x",
            f"{m['pps']['json']:,.0f} vs {m['pps']['source']:,.0f} pkts/s, the same frames and entries, best of "
            f"{m['rounds']} rounds of {m['packets']} packets taken in turn; {m['where']}")
    sw, sched, sink = _modelled_alinea(False)
    gap_ns = 10_000  # 100 kpps offered in virtual time: reports every 10 ms are clones too
    t = time.perf_counter()
    for i in range(packets):
        sched.call_at(i * gap_ns, sw.inject, 1, frames[i & 255])
    sched.run()
    dt = time.perf_counter() - t
    forwarded = sum(1 for port, _ in sink if port == 2)
    reports = len(sink) - forwarded
    assert forwarded == packets, (len(sink), sw.core.drop_counts())
    rep.add("pipeline (in-process)", "whole v1model core (ingress, PRE, TM, egress, deparse), virtual time",
            f"{packets / dt:,.0f} pkts/s", f"{packets} packets forwarded, {reports} report clones built")


# ---- 3-5: a real switch between namespaces ------------------------------------------------------

def _netns_reason() -> str | None:
    from tests.switch.netns import netns_available

    return netns_available()


#: the p4switch measured beside today's (the commit before the TM's service, the scheduler's lock and
#: the service's timer left Python, issue 22: each packet's service was a Python call through a bound
#: method, each heap operation took a Python lock): its rows are taken in turns with today's, by the same
#: code, with its own engine (``_baseline_tree``)
NETNS_BASELINE = "55f310b"
#: the topologies whose highest link rate in netns the bench climbs to (issue 22's targets: 500 and 100 Mb/s)
RATE_TOPOLOGIES = ("paper-1router", "paper-5router")
#: each topology climbed both ways (tests/bench/netns_bench.py: ``HOW``)
RATE_CLIMBS = tuple((name, how) for how in ("scaled", "derived") for name in RATE_TOPOLOGIES)
#: the rate factors of a climb, by (how, quick); a derived climb starts at x4, to keep the part's time
#: (each run is 20 s of real time per tree)
RATE_FACTORS = {("scaled", False): (1, 2, 4, 8, 16, 32, 64), ("scaled", True): (1, 2),
                ("derived", False): (4, 8, 16, 32, 64, 128, 250), ("derived", True): (4, 8)}


@contextlib.contextmanager
def _baseline_tree(rev: str) -> Iterator[Path]:
    """The files of commit ``rev`` with its own engine built into them (``hbh_engine/`` at the tree's
    top, which its processes import before this checkout's .venv's).

    Why its own engine: a change inside the engine would otherwise be measured on both sides. The
    build goes to build/bench-base-target (kept: later runs rebuild only what changed); a tree
    without engine/ runs on this checkout's engine, as before.
    """
    from tests.bench.p4rt_writes import ServerUnavailable, commit_tree

    with commit_tree(rev) as tree:
        if (tree / "engine" / "Cargo.toml").exists():
            wheels = tree / "build" / "wheels"
            env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "build" / "bench-base-target"),
                   "PATH": f"{Path.home() / '.cargo' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
            maturin = Path(sys.executable).parent / "maturin"
            built = subprocess.run([str(maturin), "build", "--quiet", "--release", "--locked", "-m",
                                    str(tree / "engine" / "Cargo.toml"), "-i", sys.executable, "-o", str(wheels)],
                                   env=env, capture_output=True, text=True, check=False)
            found = sorted(wheels.glob("hbh_engine-*.whl"))
            if built.returncode or not found:
                raise ServerUnavailable(f"the engine of commit {rev} did not build: {built.stderr.strip()[-300:]}")
            with zipfile.ZipFile(found[0]) as whl:
                whl.extractall(tree, [n for n in whl.namelist() if n.startswith("hbh_engine/")])
        _stubs_of_its_day(tree)
        yield tree


def _stubs_of_its_day(tree: Path) -> None:
    """This checkout's P4Runtime stubs (the ``p4`` package) at the tree's top, which its processes import
    before the .venv's, without the registered method handlers today's grpcio-tools generates.

    Why: since 3643047 ``make setup`` regenerates the stubs (controlplane/stubs_build.py), and their
    ``add_P4RuntimeServicer_to_server`` also registers each method's handler, which grpcio serves
    before any generic handler. A server of a commit before that registers its own generic handlers
    for Write and Read first, "so they win over the generated handlers", as they did with the stubs
    of its day: under today's stubs its Read, which yields wire bytes, was serialised by
    ``ReadResponse.SerializeToString`` and every Read failed (UNKNOWN, "descriptor 'SerializeToString'
    ... doesn't apply to a 'bytes' object"). Without the registered handlers the dispatch is that of
    its day; a server that registers only the stubs' handlers is served by the same handlers either way.
    """
    import p4

    src = Path(p4.__file__).parent
    shutil.copytree(src, tree / "p4", ignore=shutil.ignore_patterns("__pycache__"))
    for grpc_stub in (tree / "p4").rglob("*_pb2_grpc.py"):
        text = grpc_stub.read_text()
        kept = [line for line in text.splitlines(keepends=True) if ".add_registered_method_handlers(" not in line]
        grpc_stub.write_text("".join(kept))


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _forwarding_round(tmp: Path, seconds: float, tree: Path | None, size: int,
                      elsewhere: bool = True) -> tuple[int, int, int, float, float]:
    """One blast of ``size``-byte UDP payloads through one p4switch: (offered, taken in, forwarded,
    window s, the switch's CPU s in the window). ``elsewhere``: the frames leave for ``ELSEWHERE_MAC``
    (h2 drops them at its address check), else for h2's own (its IP, UDP and ICMP take each)."""
    topo, sw, ctl = _start(tmp, cpu=0, tree=tree, elsewhere=elsewhere)
    try:
        frame = _frame(topo, size)
        rx0, tx0 = ctl.read_counter("MyIngress.rx", 1)[0], ctl.read_counter("MyEgress.tx", 2)[0]
        cpu0, t0 = _cpu_s(sw.proc.pid), time.monotonic()
        out = subprocess.run(["ip", "netns", "exec", topo.hosts["h1"].name, "taskset", "-c", "1", sys.executable,
                              "-c", BLASTER, "eth0", frame.hex(), str(seconds)],
                             capture_output=True, text=True, timeout=seconds + 30, check=True)
        sent = int(out.stdout.strip())
        time.sleep(0.5)  # let the switch drain what it took in
        dt, cpu = time.monotonic() - t0, _cpu_s(sw.proc.pid) - cpu0
        rx, tx = ctl.read_counter("MyIngress.rx", 1)[0] - rx0, ctl.read_counter("MyEgress.tx", 2)[0] - tx0
    finally:
        ctl.close()
        sw.stop()
        topo.close()
    return sent, rx, tx, dt, cpu


#: how h2 takes the blast, by ``elsewhere``: the rows' words and what the CPU row's note says it includes
_RECEIVERS = {
    True: ("h2 drops at its address check",
           "h2's receive up to its address check (the veth hands each frame to h2's stack in the sender's "
           "context); the frames leave for a MAC that is not h2's, as a receiver NIC's unicast filter would "
           "drop them before its host's CPU sees them"),
    False: ("h2's full stack",
            "h2's IP and UDP receive and its ICMP port-unreachable reply for each frame (the veth hands each "
            "frame to h2's stack in the sender's context): the bench's method before 2026-11-27"),
}


def bench_throughput(rep: Report, tmp: Path, seconds: float, trees: dict[str, Path | None], rounds: int,
                     size: int = 64, elsewhere: bool = True) -> None:
    """Forwarded packets/s of each tree's p4switch, the trees in turns, ``rounds`` times (the median),
    and forwarded packets per CPU second of the switch (what it would forward with its core to itself).

    ``elsewhere`` (the method since 2026-11-27): h2 drops the blast at its address
    check. Why: the veth delivers each frame the switch sends into h2's stack on the switch's CPU,
    and a UDP frame to a port nobody listens on costs h2 its IP and UDP receive and an ICMP reply,
    about a third of the switch's CPU at overload (perf, docs/background/engine.md): that is the bench's
    receiver's work, not the switch's. False: the old method, kept as a row to compare with.
    """
    receiver, includes = _RECEIVERS[elsewhere]
    runs: dict[str, list[tuple[int, int, int, float, float]]] = {label: [] for label in trees}
    for _ in range(rounds):
        for label, tree in trees.items():
            runs[label].append(_forwarding_round(tmp, seconds, tree, size, elsewhere))
    rates = {label: statistics.median(r[2] for r in rs) / seconds for label, rs in runs.items()}
    per_cpu = {label: statistics.median(r[2] / max(r[4], 1e-3) for r in rs) for label, rs in runs.items()}
    first = next(iter(trees))
    for label, rs in runs.items():
        sent, rx, tx, dt, cpu = sorted(rs, key=lambda r: r[2])[len(rs) // 2]
        ratio = "" if label == first else f"; {rates[first] / rates[label]:.2f}x as many by {first}"
        rep.add("p4switch between namespaces",
                f"forwarded packets/s at overload, {label} (switch on 1 core, {size}-byte UDP payload, {receiver})",
                f"{rates[label]:,.0f} pkts/s",
                f"median of {rounds} rounds taken in turns ({', '.join(f'{r[2] / seconds:,.0f}' for r in rs)}); "
                f"that round: blaster offered {sent / seconds:,.0f} pkts/s for {seconds:.0f} s, the switch took in "
                f"{rx} and forwarded {tx} (window {dt:.1f} s incl. 0.5 s drain, {cpu:.2f} CPU s){ratio}")
        ratio = "" if label == first else f"; {per_cpu[first] / per_cpu[label]:.2f}x as many by {first}"
        rep.add("p4switch between namespaces",
                f"forwarded packets per CPU second of the switch, {label} ({size}-byte UDP payload, {receiver})",
                f"{per_cpu[label]:,.0f} pkts/CPU s",
                f"median of the same rounds ({', '.join(f'{r[2] / max(r[4], 1e-3):,.0f}' for r in rs)}): the "
                f"switch process's user + system time over the window, which includes the kernel's work for its "
                f"sockets and {includes}; what one core to itself would forward{ratio}")


def _latency(send, recv_sock, frame: bytes, count: int, match: Callable[[bytes], bool]) -> list[float]:  # noqa: ANN001
    out = []
    for _ in range(count):
        t = time.perf_counter()
        send(frame)
        recv_sock.settimeout(1.0)
        while True:
            try:
                data = recv_sock.recv(65536)
            except TimeoutError:
                break
            if match(data):
                out.append(time.perf_counter() - t)
                break
        time.sleep(0.001)
    return out


def _is_bench_udp(data: bytes) -> bool:
    return len(data) >= 42 and data[12:14] == b"\x08\x00" and data[36:38] == (47001).to_bytes(2, "big")


@contextlib.contextmanager
def h1_switch_h2(tmp: Path, cpu: int | None, tree: Path | None = None,
                 elsewhere: bool = False) -> Iterator[tuple[Any, Any, Any]]:
    """(topology, raw socket on h1's eth0, raw socket on h2's eth0) around a started p4switch
    (``_start``'s arguments); the sockets, the controller, the switch and the namespaces are closed
    after, however the body ends."""
    from tests.switch import netns as N

    topo, sw, ctl = _start(tmp, cpu=cpu, tree=tree, elsewhere=elsewhere)
    try:
        with contextlib.closing(N.raw_socket(topo.hosts["h1"].name, "eth0")) as tx, \
                contextlib.closing(N.raw_socket(topo.hosts["h2"].name, "eth0")) as rx:
            yield topo, tx, rx
    finally:
        ctl.close()
        sw.stop()
        topo.close()


def _latency_through(tmp: Path, count: int, tree: Path | None) -> list[float]:
    with h1_switch_h2(tmp, cpu=0, tree=tree) as (topo, tx, rx):
        frame = _frame(topo)
        _latency(tx.send, rx, frame, 20, _is_bench_udp)  # warm up
        return _latency(tx.send, rx, frame, count, _is_bench_udp)


def _latency_direct(count: int) -> list[float]:
    """The same code over a direct veth pair between two namespaces (the baseline)."""
    from tests.switch import netns as N

    base_topo = N.Topology()
    try:
        a, b = f"{base_topo.tag}-a", f"{base_topo.tag}-b"
        for ns in (a, b):
            N.run("ip", "netns", "add", ns)
            base_topo._namespaces.append(ns)
        N.run("ip", "-n", a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b)
        for ns in (a, b):
            N.run("ip", "-n", ns, "link", "set", "eth0", "up")
        tx = N.raw_socket(a, "eth0")
        rx = N.raw_socket(b, "eth0")
        frame = _frame(None)
        _latency(tx.send, rx, frame, 20, _is_bench_udp)
        direct = _latency(tx.send, rx, frame, count, _is_bench_udp)
        tx.close()
        rx.close()
    finally:
        base_topo.close()
    return direct


def bench_latency(rep: Report, tmp: Path, count: int, trees: dict[str, Path | None]) -> None:
    through = {label: _latency_through(tmp, count, tree) for label, tree in trees.items()}
    direct = _latency_direct(count)
    med_d = statistics.median(direct)
    first = next(iter(trees))
    added = {label: statistics.median(t) - med_d for label, t in through.items()}
    for label, t in through.items():
        p99 = sorted(t)[int(0.99 * (len(t) - 1))]
        ratio = "" if label == first else f"; {added[label] / added[first]:.2f}x the added latency of {first}"
        rep.add("p4switch between namespaces", f"added latency per packet, {label} (median of {len(t)})",
                f"{added[label] * 1e6:,.0f} µs",
                f"h1->h2 via p4switch: median {statistics.median(t) * 1e6:,.0f} µs, p99 {p99 * 1e6:,.0f} µs; direct "
                f"veth: median {med_d * 1e6:,.0f} µs ({len(direct)} samples); lost {count - len(t)}{ratio}")


# The p4switch that issue 9 measured (its last commit before the work): its Writes are
# measured beside today's, on the same machine and with the same client.
WRITE_BASELINE = "409b07e"


def bench_inserts(rep: Report, tmp: Path, entries: int, grpc_ok: bool) -> None:
    from p4.v1 import p4runtime_pb2 as pb

    from controlplane.p4runtime_client import InProcessController, update
    from tests.bench.fuzz import configured_switch

    def entry_updates(names) -> list[pb.Update]:  # noqa: ANN001
        return [update(pb.Update.INSERT, names.table_entry(
            "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0B000000 | i << 8, 24)}, "MyIngress.ipv4_forward",
            {"dst_mac": 0x020000000002, "src_mac": 0x020000000102, "port": 2})) for i in range(entries)]

    sw, _sched, _ = configured_switch("alinea")
    ctl = InProcessController(sw.p4rt, election=(0, 2))
    ups = entry_updates(ctl.names)
    t = time.perf_counter()
    for u in ups:
        ctl.write(u)
    dt = time.perf_counter() - t
    rep.add("P4Runtime", "table inserts/s, in-process core (one update per WriteRequest)",
            f"{entries / dt:,.0f} /s", f"{entries} ipv4_lpm entries")
    if not grpc_ok:
        return
    from tests.bench import p4rt_writes as pw

    base = pw.resolve_commit(WRITE_BASELINE)
    if base is None:
        rep.add("P4Runtime", "table inserts/s over gRPC of the p4switch before issue 9", "not measured",
                f"commit {WRITE_BASELINE} is not in this clone (shallow clone?)")
    try:
        go_floor: Path | None = pw.build_go_floor()
    except pw.ServerUnavailable as exc:
        go_floor = None
        rep.add("P4Runtime", "table inserts/s over gRPC to an empty Go server", "not measured", str(exc))
    placements = [("placed by the OS", None, None)]
    if len(os.sched_getaffinity(0)) >= 2:
        placements.append(("client on CPU 0, servers on CPU 1", 1, {0}))
    for where, cpu, client in placements:
        try:
            _write_rows(rep, entries, base, go_floor, where, cpu, client)
        except Exception as exc:  # noqa: BLE001 - a placement that failed is a row; the others are kept
            rep.add("P4Runtime", f"table inserts/s over gRPC, {where}", "not measured",
                    f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")


def _write_rows(rep: Report, entries: int, base: str | None, go_floor: Path | None, where: str,
                cpu: int | None, client: set[int] | None) -> None:
    """Today's p4switch (its compiled front end), with its Python front end and on its Python-only
    path, the one before issue 9, the empty servers and BMv2's default and performance builds when
    they are here (pw.bmv2_builds), started together and measured in turn by the same client
    (tests/bench/p4rt_writes.py)."""
    from tests.bench import p4rt_writes as pw
    from tests.switch.simnet import program

    labels = {"p4switch": ""}
    servers = {"p4switch": pw.p4switch_server(cpu=cpu)}
    labels["grpcio"] = " of this p4switch with the Python front end (HBH_P4RT=grpcio: grpcio server; plain entries written in the engine)"
    servers["grpcio"] = pw.p4switch_server(cpu=cpu, env=pw.GRPCIO_FRONT)
    labels["python"] = " of this p4switch on its Python-only path (HBH_P4RT=python: grpcio server, general writes)"
    servers["python"] = pw.p4switch_server(cpu=cpu, env=pw.PYTHON_PATH)
    if base is not None:
        labels["base"] = f" of the p4switch before issue 9 (commit {base[:10]})"
        servers["base"] = pw.commit_server(base, cpu)
    labels["empty"] = " to an empty grpc.aio server (the ceiling: tests/bench/p4rt_floor.py)"
    servers["empty"] = pw.empty_server("aio", cpu)
    if go_floor is not None:
        labels["go"] = " to an empty Go server (a compiled gRPC runtime: tests/bench/p4rt_floor_go)"
        servers["go"] = pw.go_empty_server(go_floor, cpu)
    bmv2 = pw.bmv2_builds()  # the real BMv2 as the baseline, in the same run (p4c's alinea.json pushed)
    for build in bmv2:
        if build.exe is not None:
            detail = f", {build.detail}" if build.detail else ""
            labels[build.key] = (f" to {build.label} (simple_switch_grpc {pw.bmv2_version(build.exe)}{detail}, "
                                 "p4c's alinea.json)")
            servers[build.key] = pw.bmv2_server(cpu, build.exe)
        elif where == "placed by the OS":
            rep.add("P4Runtime", f"table inserts/s over gRPC to {build.label}", "not measured", build.absent)
    readable = [n for n in ("p4switch", "grpcio", *(b.key for b in bmv2)) if n in servers]
    results = pw.measure_servers(servers, program(str(pw.ALINEA)).p4info, entries, rounds=3, client_cpus=client,
                                 read_from=readable, echo_from=[n for n in ("p4switch", "grpcio") if n in servers])
    for name, rates in results.items():
        for batch, rate in rates.median.items():
            rounds = ", ".join(f"{r:,.0f}" for r in rates.rounds[batch])
            rep.add("P4Runtime", f"table inserts/s over gRPC{labels[name]}, {batch} update(s) per Write, {where}",
                    f"{rate:,.0f} /s", f"{entries} ipv4_lpm entries; raw p4runtime stubs, arbitration stream open; "
                    f"median of 3 rounds, taken in turn with the other servers of these rows ({rounds}) "
                    "(tests/bench/p4rt_writes.py)")
    for name in readable:
        rates = results[name]
        for kind, rate in rates.read_median.items():
            rounds = ", ".join(f"{r:,.0f}" for r in rates.read_rounds[kind])
            what = "one entry by its key" if kind == "one entry" else f"the whole table ({entries} entries)"
            rep.add("P4Runtime", f"table Reads/s over gRPC{labels[name]}, {what}, {where}",
                    f"{rate:,.0f} /s", f"{1e3 / rate:.3f} ms a Read; {pw.READS_PER_ROUND[kind]} Reads a round, "
                    f"median of 3 rounds, taken in turn with the other switches of these rows ({rounds}), after "
                    "their Write rounds (tests/bench/p4rt_writes.py)")
    for name in ("p4switch", "grpcio"):
        echoes = results[name].echo_rounds if name in results else []
        if echoes:
            rounds = ", ".join(f"{r * 1e3:.3f}" for r in echoes)
            rep.add("P4Runtime", f"PacketOut -> PacketIn round trip over the StreamChannel{labels[name]}, {where}",
                    f"{statistics.median(echoes) * 1e3:.3f} ms", f"a PacketOut to the CPU port, which alinea.p4 "
                    f"sends back; median of {pw.ECHOES_PER_ROUND} a round, median of 3 rounds ({rounds}), taken "
                    "in turn (tests/bench/p4rt_writes.py)")


def bench_soak(rep: Report, minutes: float) -> None:
    from tests.bench.soak import report_rows, run

    section = f"soak ({minutes:g} min, tests/bench/soak.py)"
    try:
        rows = report_rows(run(minutes))
    except Exception as exc:  # noqa: BLE001 - the other figures are still written
        rows = [("soak", "FAILED", f"{type(exc).__name__}: {str(exc)[:300]}")]
    for what, value, note in rows:
        rep.add(section, what, value, note)


# ---- the document --------------------------------------------------------------------------------

def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} logical CPUs; Linux {platform.release()}; "
            f"Python {platform.python_version()} ({platform.python_implementation()})")


def _cell(text: str) -> str:
    """One markdown table cell: no line breaks, no column separators."""
    return " ".join(str(text).split()).replace("|", "/")


FOOTER = ["For comparison (SOURCES.md D): BMv2's best build forwards about 80 kpps of simple IPv4; "
          "p4switch runs alinea.p4 in the compiled engine's P4 VM (docs/background/engine.md), one forwarding loop thread, with "
          "P4Runtime and Thrift in Python beside it.", "",
          "P4Runtime writes, for comparison: issue 9 measured simple_switch_grpc (BMv2) at 1,122-1,152 inserts/s "
          "with one update per Write and 2,593-2,674 with 100, with a client like this one on the machine of that report, "
          "where the p4switch of that day made 517-614 and 1,779-1,928; the rows 'of the p4switch before issue 9' run "
          "that p4switch here, beside today's, so the two rows' ratio is the speed-up on one machine. "
          "The client is Python (grpcio, protobuf's compiled runtime), "
          "and still costs a large share of every Write: the rows 'to an empty "
          "grpc.aio server' are what this client reaches against a server that does nothing, the ceiling of any "
          "server built on grpcio on this machine; the rows 'to an empty Go server' what it reaches against a "
          "compiled server that does nothing, the ceiling of any server, simple_switch_grpc's included.", "",
          "The simulator against ns-3: `make bench` installs PyPI `ns3` (pinned in tests/bench/ns3_bench.py) into "
          "build/ns3-venv, not the project's .venv, and runs tests/bench/ns3_line.py there: the paper-5router line "
          "(7 nodes, point-to-point links at the topology's rates and delays, 200-packet drop-tail queues, the "
          "traffic-control layer removed) with ns-3's compiled UdpClient/UdpServer applications only: one flow at "
          "H2's play-out rate, where the simulator's ALINEA loop settles, and a report every interval on every "
          "link, with the simulator's wire sizes; packet-hops are frames put on a link, counted by a C++ trace "
          "sink, as the simulator's links count them. The rates x10 and x50 scale rates up and delays and "
          "report intervals down, as tests/bench/netns_bench.scaled does for the simulator. Each round runs "
          "ns-3, then the simulator, in fresh processes; only the run itself is timed.", "",
          "How long `make bench` takes: the section 'time taken by each part' gives each part's minutes as it "
          "last ran and their total (a `BENCH_ONLY` run replaces the times of its parts only). The soak runs "
          "5 minutes of traffic with the same stall criteria as before (no forwarding stall of the switch's own "
          "above 20 ms); the simulator's comparisons take 2 rounds per rate (4 for ns-3 and this tree, the "
          "closest rows), each row listing them all.", ""]
TIMES = "time taken by each part"


def _old_sections(out: Path) -> dict[str, list[str]]:
    """The sections of an existing page, heading -> its lines (kept by a partial run, ``--only``)."""
    if not out.exists():
        return {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in out.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], [])
        elif current is not None and (line.startswith("|") or line.startswith("_")):
            current.append(line)
        elif current is not None and line and not line.startswith("|"):
            current = None  # the footer
    return sections


def write(rep: Report, out: Path, command: str, seed: int, partial: bool = False) -> None:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    old = _old_sections(out) if partial else {}
    lines = ["# p4switch performance", "",
             "Measured by `tests/bench/run.py`; do not edit by hand (run `make bench` to refresh; `make bench "
             "BENCH_ONLY=part,...` re-measures some parts and keeps the others' rows, each section saying when "
             "and by which command it was measured).", "",
             f"* machine: {machine()}",
             f"* seed: {seed}",
             f"* load average (1 min) at start / end: {rep.load_start:.1f} / {os.getloadavg()[0]:.1f} "
             f"(on {os.cpu_count()} CPUs: above that, other processes took CPU time from these runs)", ""]
    stamp = f"_measured {when} by `{command}`_"
    fresh = dict(rep.sections)
    if partial and TIMES in old:  # the other parts' times stay, the total is theirs and these together
        mine = {r.what for r in fresh[TIMES]}
        kept = [Row(*[c.strip() for c in line.strip("|").split("|")]) for line in old[TIMES]
                if line.startswith("| ") and line.split("|")[1].strip() not in mine | {"measurement"}]
        rows = [r for r in kept + fresh[TIMES] if not r.what.startswith("total")]
        rows.append(Row("total", f"{sum(float(r.value.split()[0]) for r in rows):.1f} min",
                        "the parts' latest times added up"))
        fresh[TIMES] = rows
    order = [s for s in old if s != TIMES]
    for i, section in enumerate(fresh):  # a new section goes after the one measured before it
        if section not in order and section != TIMES:
            before = [s for s in list(fresh)[:i] if s in order]
            order.insert(order.index(before[-1]) + 1 if before else len(order), section)
    order += [TIMES] if TIMES in fresh or TIMES in old else []
    for section in order:
        lines.append(f"## {section}")
        lines.append("")
        if section in fresh:
            lines += [stamp, "", "| measurement | result | details |", "|---|---:|---|"]
            lines += [f"| {_cell(r.what)} | {_cell(r.value)} | {_cell(r.note)} |" for r in fresh[section]]
        else:
            lines += [x for line in old[section] if line.startswith("_") for x in (line, "")]
            lines += [line for line in old[section] if line.startswith("|")]
        lines.append("")
    lines += FOOTER
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


#: the parts of the page, in the order they run (``--only`` names some of them)
PARTS = ("frontend", "pipeline", "sim", "profile", "netns", "p4rt", "netns-backend", "soak", "sweep", "analysis")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.run", description="p4switch benchmarks")
    p.add_argument("--out", default="docs/performance.md")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="fewer packets and shorter runs (a smoke test; its figures "
                   "are not the page's)")
    p.add_argument("--only", default="", help=f"comma-separated parts to measure ({', '.join(PARTS)}); the page "
                   "keeps the other parts' rows as they were")
    p.add_argument("--soak-minutes", type=float, default=None,
                   help="length of the soak benchmark (5; 1 with --quick; 0 skips it)")
    p.add_argument("--baseline", default=NETNS_BASELINE, metavar="REV",
                   help=f"the commit whose p4switch the netns parts measure beside this tree's ({NETNS_BASELINE}; "
                   "e.g. main's, to measure a branch's change)")
    args = p.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in only if x not in PARTS]
    if unknown:
        p.error(f"--only: unknown part(s) {', '.join(unknown)}; the parts are {', '.join(PARTS)}")
    soak = args.soak_minutes if args.soak_minutes is not None else (1.0 if args.quick else 5.0)
    if soak < 0:
        p.error(f"--soak-minutes {soak} must be >= 0")
    command = "python -m tests.bench.run " + " ".join(sys.argv[1:] if argv is None else argv)
    rep = Report()
    wanted = set(only or PARTS)
    with tempfile.TemporaryDirectory(prefix="p4bench") as tmpdir:
        for part, fn in _parts(args, Path(tmpdir), soak).items():
            if part in wanted:
                t = time.perf_counter()
                fn(rep)
                rep.add(TIMES, part, f"{(time.perf_counter() - t) / 60:.1f} min")
    rep.add(TIMES, "total", f"{sum(float(r.value.split()[0]) for r in rep.sections[TIMES]):.1f} min")
    write(rep, ROOT / args.out if not Path(args.out).is_absolute() else Path(args.out), command, args.seed,
          partial=bool(only))
    return 0


def _parts(args: argparse.Namespace, tmp: Path, soak: float) -> dict[str, Callable[[Report], None]]:
    """Each part of the page as a function of the report (parts that need namespaces say why they were skipped)."""
    from tests.bench import netns_bench as nb
    from tests.bench.analysis_cost import bench_analysis_cost
    from tests.bench.sim_bench import bench_profile, bench_simulator
    from tests.bench.sweep_bench import bench_sweep

    quick, base_rev = args.quick, args.baseline
    reason = _netns_reason()

    def netns_only(fn: Callable[[Report], None], section: str, what: str) -> Callable[[Report], None]:
        return fn if reason is None else (lambda rep: rep.add(section, what, "skipped", reason))

    def soak_part(rep: Report) -> None:
        if soak:
            netns_only(lambda r: bench_soak(r, soak), "soak", "soak benchmark")(rep)

    def netns_part(rep: Report) -> None:
        from tests.bench.p4rt_writes import ServerUnavailable

        try:
            with _baseline_tree(base_rev) as base:
                trees = {"this tree": None, f"commit {base_rev}": base}
                for size in (64, 1000):
                    bench_throughput(rep, tmp, 1.0 if quick else 5.0, trees, 1 if quick else 3, size)
                bench_throughput(rep, tmp, 1.0 if quick else 5.0, trees, 1 if quick else 3, 64, elsewhere=False)
                bench_latency(rep, tmp, 100 if quick else 1000, trees)
        except ServerUnavailable as exc:
            rep.add("p4switch between namespaces", f"p4switch of commit {base_rev}", "not measured", str(exc))
            trees = {"this tree": None}
            bench_throughput(rep, tmp, 1.0 if quick else 5.0, trees, 1 if quick else 3)
            bench_throughput(rep, tmp, 1.0 if quick else 5.0, trees, 1 if quick else 3, elsewhere=False)
            bench_latency(rep, tmp, 100 if quick else 1000, trees)

    def netns_backend(rep: Report) -> None:
        from tests.bench.p4rt_writes import ServerUnavailable

        nb.bench_cpu_5router(rep, tmp, 10 if quick else 20)
        seconds = 10 if quick else 20
        try:
            with _baseline_tree(base_rev) as base:
                trees: dict[str, Path | None] = {", this tree": None, f", commit {base_rev}": base}
                for name, how in RATE_CLIMBS:
                    nb.bench_max_rate(rep, tmp, name, seconds, RATE_FACTORS[how, quick], trees, how)
        except ServerUnavailable as exc:
            rep.add("netns backend", f"p4switch of commit {base_rev}", "not measured", str(exc))
            for name, how in RATE_CLIMBS:
                nb.bench_max_rate(rep, tmp, name, seconds, RATE_FACTORS[how, quick], how=how)

    return {
        "frontend": lambda rep: bench_front_end(rep, 3 if quick else 10),
        "pipeline": lambda rep: bench_pipeline(rep, args.seed, 5_000 if quick else 50_000),
        "sim": lambda rep: bench_simulator(rep, quick),
        "profile": lambda rep: bench_profile(rep, quick),
        "netns": netns_only(netns_part, "p4switch between namespaces", "packets/s and added latency"),
        "p4rt": lambda rep: bench_inserts(rep, tmp, 200 if quick else 1000, reason is None),
        "netns-backend": netns_only(netns_backend, "netns backend", "CPU of a paper-5router run, highest "
                                    "rates of paper-1router and paper-5router"),
        "soak": soak_part,
        "sweep": lambda rep: bench_sweep(rep, "2s" if quick else "10s", 100 if quick else 1000),
        "analysis": lambda rep: bench_analysis_cost(rep, quick),
    }


if __name__ == "__main__":
    sys.exit(main())
