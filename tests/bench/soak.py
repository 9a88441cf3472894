"""Soak benchmark: p4switch under mixed load for minutes; does it leak or stall?

    python -m tests.bench.soak [--minutes 10] [--load 0.8]

Why: the failures of issue 9 showed up only under use as a user's (several controllers, a
controller that dies, a large batch during traffic). This runs ``p4src/alinea.p4`` between two
namespaces and, for ``--minutes``: UDP traffic h1 -> h2 at ``--load`` times the forwarding
capacity measured first: RFC 2544's throughput (the highest rate forwarded without loss, by a
binary search of short trials) while the soak's controller works - the control plane and the
packets share the switch's one interpreter, so that is the capacity the traffic has; overload
runs with and without a controller are reported beside it. Then a controller process that writes and deletes
entries, reads the table and sends PacketOuts (some come back as PacketIns), SIGKILLed and
restarted with the same election id every minute. The switch has core 0 to itself and the
harness runs on the other cores (capacity search included). Reported: the switch process's RSS, open file
descriptors and threads at the start, after the first minute and at the end; the longest
forwarding stall of the switch: for each frame, the time from when the switch could have
forwarded it (the sender stamped it, and the frame before it had arrived) until it arrived, on
the kernel's arrival timestamps so that the receiver's own scheduling does not count - a pause
of the sender (a Python process too) is then not blamed on the switch, as a plain gap between
two arrivals would be (that gap and the sender's longest pause are reported beside it); frames
lost; every reconnect's time to primary; errors.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format

from tests.bench.hiccup import Meters, attribute

ROOT = Path(__file__).resolve().parents[2]
DPORT = 47001
BACKLOG_S = 0.05  # a trial of the capacity search passes only if the switch kept up this closely

SENDER = textwrap.dedent("""
    import json, socket, sys, time
    ifname, hexframe, rate, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    frame = bytearray.fromhex(hexframe)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    n, t0 = 0, time.monotonic()
    last, pause = t0, 0.0
    late = []  # [stamp, sent] of the frames whose send ended over 10 ms after their stamp (the first 20,000)
    while True:
        now = time.monotonic()
        pause, last = max(pause, now - last), now
        if now - t0 >= seconds:
            break
        due = int((now - t0) * rate)
        burst = 0
        while n < due and burst < 256:
            frame[-8:] = n.to_bytes(8, "big")
            stamp = time.time_ns()
            frame[-16:-8] = stamp.to_bytes(8, "big")  # CLOCK_REALTIME, as the receiver's stamps
            try:
                s.send(frame)
            except BlockingIOError:
                break
            done = time.time_ns()
            if done - stamp > 10_000_000 and len(late) < 20_000:  # this process paused after the stamp
                late.append([stamp * 1e-9, done * 1e-9])
            n += 1
            burst += 1
        if n >= due:
            time.sleep(0.0002)
    print(json.dumps({"sent": n, "sender_max_pause_s": pause, "end_s": time.time(), "late_sends": late}))
""")

RECEIVER = textwrap.dedent("""
    import json, socket, sys, time
    SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h); Python 3.11 does not name it
    ifname, dport, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((ifname, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # arrival times from the kernel
    s.settimeout(0.2)
    got, outs, first, last, gap, over, stall, stalls = 0, 0, None, None, 0.0, 0, 0.0, 0
    spans = []  # [start, end] of the stalls over 20 ms (the first 1,000), to attribute them
    short = 0.0  # the longest stall not over 20 ms
    end = time.monotonic() + seconds
    print("ready", flush=True)
    while time.monotonic() < end:
        try:
            data, anc, _, _ = s.recvmsg(2048, 64)
        except TimeoutError:
            continue
        now = next((int.from_bytes(d[:8], "little") + int.from_bytes(d[8:16], "little") * 1e-9
                    for lvl, typ, d in anc if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS),
                   time.time())
        if len(data) < 42 or data[12:14] != b"\\x08\\x00" or data[23] != 17:
            continue
        port = int.from_bytes(data[36:38], "big")
        if port == dport + 1:
            outs += 1
            continue
        if port != dport:
            continue
        got += 1
        sent = int.from_bytes(data[-16:-8], "big") * 1e-9
        if last is not None:
            g = now - last
            gap = max(gap, g)
            over += g > 0.020
            # the switch held this frame from when it could have forwarded it (sent, and the
            # previous frame out) until it did: a stall of the switch, not of the sender
            st = now - max(sent, last)
            stall = max(stall, st)
            stalls += st > 0.020
            if st > 0.020 and len(spans) < 1000:
                spans.append([now - st, now])
            elif st <= 0.020:
                short = max(short, st)
        else:
            first = now
        last = now
    print(json.dumps({"received": got, "packet_outs_received": outs, "max_gap_s": gap, "gaps_over_20ms": over,
                      "max_stall_s": stall, "stalls_over_20ms": stalls, "stall_spans": spans,
                      "max_short_stall_s": short, "last_s": last}))
""")


#: The compiled P4Runtime front end's threads (engine/src/p4rt/p4rtfront.rs): the thread that runs its
#: runtime, one worker, the caller thread (short Writes and Reads) and at most four blocking threads,
#: which tokio starts when first needed and keeps for the runtime's life. A pool that fills late in the
#: soak is not a leak; one past this bound is.
FRONT_THREAD = "p4rt-front"
FRONT_THREADS_MAX = 1 + 1 + 1 + 4


@dataclass
class ProcStats:
    rss_kib: int
    fds: int
    threads: int
    front_threads: int = 0  # of ``threads``, the front end's (FRONT_THREAD)


def proc_stats(pid: int) -> ProcStats:
    """RSS, open fds and threads of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {line.split(":")[0]: line.split(":")[1].strip() for line in status if ":" in line}
    front = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            front += Path(f"/proc/{pid}/task/{task}/comm").read_text().strip() == FRONT_THREAD
    return ProcStats(int(fields["VmRSS"].split()[0]), len(os.listdir(f"/proc/{pid}/fd")), int(fields["Threads"]),
                     front)


def no_growth(before: ProcStats, end: ProcStats) -> bool:
    """No fd and no thread more at the end, but for the front end's pool, which must stay in its bound."""
    others = end.threads - end.front_threads <= before.threads - before.front_threads
    return end.fds <= before.fds and others and end.front_threads <= FRONT_THREADS_MAX


@dataclass
class SoakResult:
    minutes: float
    capacity_pps: float  # measured with the soak's controller at work: what the switch has for traffic then
    rate_pps: float
    idle_capacity_pps: float = 0.0  # overload run, no controller
    flood_capacity_pps: float = 0.0  # overload run, controller at work
    stats: dict[str, ProcStats] = field(default_factory=dict)
    sender: dict = field(default_factory=dict)
    receiver: dict = field(default_factory=dict)
    reconnect_s: list[float] = field(default_factory=list)
    controller: dict = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    batch: dict = field(default_factory=dict)
    meters: dict[int, dict] = field(default_factory=dict)  # hiccup meters during the soak, by core

    def own_stalls(self) -> dict | None:
        """The receiver's stalls over 20 ms less the pauses of the switch's core (hiccup.py)
        and the sender's own (:func:`own_stalls`); None when that core's meter could not run at
        real-time priority."""
        return own_stalls(self.receiver, self.meters, self.sender)

    def verdicts(self) -> dict[str, bool]:
        growth = f"no fd or thread growth (the front end's pool within {FRONT_THREADS_MAX} threads)"
        """The done-criteria of issue 9's soak."""
        s1, end = self.stats.get("after 1 min"), self.stats.get("end")
        start = self.stats.get("start")
        ok: dict[str, bool] = {}
        if s1 and end:
            ok["RSS within 10 % of its value after the first minute"] = abs(end.rss_kib - s1.rss_kib) <= 0.1 * s1.rss_kib
            ok[growth] = no_growth(s1, end)
        elif start and end:
            ok[growth] = no_growth(start, end)
        own = self.own_stalls()
        over = self.receiver.get("stalls_over_20ms", 1) if own is None else own["own_over"]
        ok["no forwarding gap above 20 ms (the switch's own)"] = over == 0
        ok["every reconnect accepted within 1 s"] = bool(self.reconnect_s) and max(self.reconnect_s) < 1.0
        return ok


def union(intervals: list[list[float]]) -> list[list[float]]:
    """[start, end] intervals merged where they overlap, in order (hiccup.overlap wants them
    disjoint)."""
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def own_stalls(receiver: dict, meters: dict[int, dict], sender: dict | None = None) -> dict | None:
    """The receiver's stalls less the pauses that were not the switch's: its core's (the
    SCHED_FIFO meter's late wake-ups) and the sender's between a frame's stamp and the end of
    its send (``late_sends``; in ``sender``, or in ``receiver`` when both outputs are merged).
    Why the sender's: a sender descheduled between the two - most of its loop, so where most of
    its pauses fall - sends a frame stamped before the pause, which then looks held by the
    switch for the whole pause (a 950 ms "stall" of the soak's with the sender's longest pause
    950.0 ms, the switch's core meter quiet)."""
    meter = meters.get(SWITCH_CPU)
    if not meter or not meter.get("rt") or meter.get("failed"):
        return None
    late = (sender if sender is not None else receiver).get("late_sends", [])
    res = attribute(receiver.get("stall_spans", []), union(meter["hiccups"] + late))
    spans = receiver.get("stall_spans", [])
    res["own_over"] += receiver.get("stalls_over_20ms", 0) - len(spans)  # unlisted ones count as the switch's
    # the stalls not over 20 ms are not attributed: each counts as the switch's own
    res["own_max_s"] = max(res["own_max_s"], receiver.get("max_short_stall_s", receiver.get("max_stall_s", 0.0)))
    res["core_pauses"] = len(meter["hiccups"])
    res["core_max_pause_s"] = meter["max_s"]
    return res


def _meters(seconds: float) -> Meters:
    return Meters(list(range(os.cpu_count() or 1)), seconds).start()


def _ns_python(ns: str, script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", script, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _capacity(topo, frame: bytes, seconds: float, ctl) -> float:  # noqa: ANN001
    from tests.bench.blast import BLASTER

    tx0 = ctl.read_counter("MyEgress.tx", 2)[0]
    subprocess.run(["ip", "netns", "exec", topo.hosts["h1"].name, sys.executable, "-c", BLASTER, "eth0",
                    frame.hex(), str(seconds)], capture_output=True, text=True, timeout=seconds + 30, check=True)
    time.sleep(0.5)
    return (ctl.read_counter("MyEgress.tx", 2)[0] - tx0) / seconds


def _lossless(topo, frame: bytes, rate: float, seconds: float) -> bool:  # noqa: ANN001
    """One trial: ``rate`` pkts/s for ``seconds``; did h2 receive every frame, the last one
    within ``BACKLOG_S`` of the sender's end? (A switch falling behind builds a backlog in its
    receive buffer - about a second of traffic - that a short trial would hide.)"""
    dport = int.from_bytes(frame[36:38], "big")
    rx = _ns_python(topo.hosts["h2"].name, RECEIVER, "eth0", str(dport), str(seconds + 1.5))
    rx.stdout.readline()
    tx = _ns_python(topo.hosts["h1"].name, SENDER, "eth0", frame.hex(), str(rate), str(seconds))
    sent = json.loads(tx.communicate(timeout=seconds + 60)[0].strip().splitlines()[-1])
    got = json.loads(rx.communicate(timeout=60)[0].strip().splitlines()[-1])
    return got["received"] >= sent["sent"] and (got["last_s"] or 0) - sent["end_s"] < BACKLOG_S


def zero_loss_rate(topo, frame: bytes, ceiling: float, trials: int = 6,  # noqa: ANN001
                   seconds: float = 4.0) -> float:
    """The highest rate forwarded without loss (RFC 2544's throughput): a binary search of
    ``trials`` short runs between 20 % and 100 % of ``ceiling`` (an overload run's rate)."""
    lo, hi = 0.2 * ceiling, ceiling
    for _ in range(trials):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _lossless(topo, frame, mid, seconds) else (lo, mid)
    return lo


def batch_gap(topo, addr: str, p4info, frame: bytes, rate: float) -> dict:  # noqa: ANN001
    """Traffic for 10 s; 2 s in, one Write of 10,000 updates (MODIFYs of 1,000 entries, ten
    times each). Returns the receiver's figures and the Write's duration."""
    from p4.v1 import p4runtime_pb2 as pb

    from tests.bench.p4rt_writes import RawController, lpm_updates
    from tests.bench.soak_controller import delete_leftovers

    ctl = RawController(addr, election_low=10, timeout=300)  # the soak controllers' id; slow on a loaded machine
    try:
        delete_leftovers(ctl, p4info)  # of the controller killed during the capacity search
        inserts = lpm_updates(p4info, pb.Update.INSERT, 1000, first_octet=13)
        for i in range(0, 1000, 100):
            ctl.write(inserts[i:i + 100])
        modifies = lpm_updates(p4info, pb.Update.MODIFY, 1000, first_octet=13) * 10
        meters = _meters(12)
        rx = _ns_python(topo.hosts["h2"].name, RECEIVER, "eth0", str(DPORT), "11")
        rx.stdout.readline()
        tx = _ns_python(topo.hosts["h1"].name, SENDER, "eth0", frame.hex(), str(rate), "10")
        time.sleep(2)
        t = time.monotonic()
        ctl.write(modifies)
        write_s = time.monotonic() - t
        out = json.loads(rx.communicate(timeout=60)[0].strip().splitlines()[-1])
        out.update(json.loads(tx.communicate(timeout=60)[0].strip().splitlines()[-1]))
        out["own"] = own_stalls(out, meters.results())
        ctl.write(lpm_updates(p4info, pb.Update.DELETE, 1000, first_octet=13))
    finally:
        ctl.close()
    out["write_s"] = write_s
    return out


class Controllers:
    """Runs soak_controller processes one after another, each SIGKILLed after ``period`` s."""

    def __init__(self, addr: str, info_path: str, period: float, total: float) -> None:
        self.addr, self.info_path, self.period, self.total = addr, info_path, period, total
        self.reconnect_s: list[float] = []
        self.totals: dict[str, int] = {}
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True, name="soak-controllers")

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join(self.total + 60)

    def _run(self) -> None:
        end = time.monotonic() + self.total
        while time.monotonic() < end - 1:
            life = min(self.period, end - time.monotonic())
            self._one(life)

    def _one(self, life: float) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "tests.bench.soak_controller", self.addr, self.info_path, "10",
                                 str(life + 30)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        time.sleep(life)
        proc.send_signal(signal.SIGKILL)  # the controller dies without a word
        proc.wait(10)
        reader.join(5)
        last: dict = {}
        for line in lines:
            data = json.loads(line)
            if "primary_after_s" in data:
                self.reconnect_s.append(data["primary_after_s"])
            else:
                last = data
        if not any("primary_after_s" in line for line in lines):
            self.errors.append(f"a controller never became primary: {proc.stderr.read()[-300:]}")
        for key, value in last.items():
            if isinstance(value, int):
                self.totals[key] = self.totals.get(key, 0) + value
            elif key == "last_error":
                self.errors.append(value)


#: the core the switch has to itself during the soak
SWITCH_CPU = 0


@contextlib.contextmanager
def _harness_off_core(cpu: int) -> Iterator[None]:
    """Run this process, and every process it starts (senders, receivers, controllers: they
    inherit the affinity), on the cores other than ``cpu``, which the switch gets to itself.
    Why: the harness is Python too, and a controller process that starts every minute spends a
    few hundred ms of CPU on its imports; sharing a core with the switch, such a burst shows
    as a forwarding stall that is not the switch's. On one CPU nothing changes."""
    before = os.sched_getaffinity(0)
    rest = before - {cpu}
    if cpu in before and rest:
        os.sched_setaffinity(0, rest)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def run(minutes: float, load: float = 0.8, log: bool = True) -> SoakResult:
    from tests.bench.blast import ALINEA, _frame, _start
    from tests.switch.simnet import program

    with tempfile.TemporaryDirectory(prefix="p4soak") as tmpdir, _harness_off_core(SWITCH_CPU):
        tmp = Path(tmpdir)
        topo, sw, ctl = _start(tmp, cpu=SWITCH_CPU if os.cpu_count() and os.cpu_count() > 1 else None)
        try:
            frame = bytearray(_frame(topo, size=26))
            probe = bytearray(frame)
            probe[36:38] = (DPORT + 4).to_bytes(2, "big")  # frames still queued from it are not counted
            info_path = tmp / "p4info.txt"
            info_path.write_text(text_format.MessageToString(program(str(ALINEA)).p4info))
            idle = _capacity(topo, bytes(probe), 3.0, ctl)
            busy = Controllers(sw.grpc_addr, str(info_path), 40.0, 40.0)  # the soak's controller at work
            busy.start()
            time.sleep(2)
            flood = _capacity(topo, bytes(probe), 3.0, ctl)
            capacity = zero_loss_rate(topo, bytes(probe), flood)
            busy.join()
            ctl.close()
            rate = load * capacity
            seconds = minutes * 60
            res = SoakResult(minutes, capacity, rate, idle_capacity_pps=idle, flood_capacity_pps=flood)
            res.errors.extend(busy.errors)
            res.batch = batch_gap(topo, sw.grpc_addr, program(str(ALINEA)).p4info, bytes(frame), rate)
            if log:
                print(f"soak: 10,000-update Write during traffic: {res.batch}", flush=True)
            res.stats["start"] = proc_stats(sw.proc.pid)
            meters = _meters(seconds + 4)
            rx = _ns_python(topo.hosts["h2"].name, RECEIVER, "eth0", str(DPORT), str(seconds + 3))
            rx.stdout.readline()  # "ready"
            tx = _ns_python(topo.hosts["h1"].name, SENDER, "eth0", bytes(frame).hex(), str(rate), str(seconds))
            ctls = Controllers(sw.grpc_addr, str(info_path), 60.0, seconds)
            ctls.start()
            t0 = time.monotonic()
            if minutes >= 1:
                time.sleep(max(0.0, 60 - (time.monotonic() - t0)))
                res.stats["after 1 min"] = proc_stats(sw.proc.pid)
                if log:
                    print(f"soak: after 1 min {res.stats['after 1 min']}", flush=True)
            res.sender = json.loads(tx.communicate(timeout=seconds + 120)[0].strip().splitlines()[-1])
            res.receiver = json.loads(rx.communicate(timeout=60)[0].strip().splitlines()[-1])
            res.meters = meters.results()
            ctls.join()
            res.stats["end"] = proc_stats(sw.proc.pid)
            res.reconnect_s, res.controller, res.errors = ctls.reconnect_s, ctls.totals, ctls.errors
        finally:
            sw.stop()
            topo.close()
    return res


def report_rows(res: SoakResult) -> list[tuple[str, str, str]]:
    """(what, value, details) rows for docs/performance.md."""
    rows = []
    for when, st in res.stats.items():
        rows.append((f"switch process at {when}", f"{st.rss_kib / 1024:,.1f} MiB RSS",
                     f"{st.fds} open fds, {st.threads} threads ({st.front_threads} of them the P4Runtime "
                     f"front end's)"))
    rx, tx = res.receiver, res.sender
    lost = tx.get("sent", 0) - rx.get("received", 0)
    rows.append(("traffic h1 -> h2", f"{res.rate_pps:,.0f} pkts/s offered",
                 f"{res.rate_pps / res.capacity_pps:.0%} of the {res.capacity_pps:,.0f} pkts/s forwarded without loss "
                 f"with the controller at work (found first; overload runs: {res.flood_capacity_pps:,.0f} with the "
                 f"controller, {res.idle_capacity_pps:,.0f} without); sent "
                 f"{tx.get('sent', 0):,}, received {rx.get('received', 0):,} (lost {lost:,}); the switch on core "
                 f"{SWITCH_CPU} alone, the harness on the other cores"))
    rows.append(("longest forwarding stall of the switch", f"{rx.get('max_stall_s', 0) * 1e3:,.1f} ms",
                 f"{rx.get('stalls_over_20ms', 0)} over 20 ms: a frame held from when it could have been "
                 "forwarded (sent, and the frame before it out) until it arrived"))
    rows.append(_own_row("longest stall of the switch's own (machine pauses taken out)", res.own_stalls()))
    rows.append(("longest gap between two frames at the receiver", f"{rx.get('max_gap_s', 0) * 1e3:,.1f} ms",
                 f"{rx.get('gaps_over_20ms', 0)} gaps over 20 ms, the sender's own pauses included (its longest: "
                 f"{tx.get('sender_max_pause_s', 0) * 1e3:,.1f} ms)"))
    b = res.batch
    if b:
        rows.append(("longest forwarding stall around one 10,000-update Write", f"{b['max_stall_s'] * 1e3:,.1f} ms",
                     f"10 s of traffic at the same rate, the Write ({b['write_s']:.2f} s) 2 s in; "
                     f"{b['stalls_over_20ms']} stalls over 20 ms; longest gap at the receiver "
                     f"{b['max_gap_s'] * 1e3:,.1f} ms, sender's longest pause {b['sender_max_pause_s'] * 1e3:,.1f} ms; "
                     f"sent {b['sent']:,}, received {b['received']:,}{_lost(b['sent'], b['received'])}"))
        rows.append(_own_row("... of the switch's own, around that Write", b.get("own")))
    rec = res.reconnect_s
    rows.append(("controller SIGKILLed and reconnected every minute (same election id)",
                 f"{max(rec) * 1e3:,.0f} ms worst" if rec else "none",
                 f"{len(rec)} connections accepted as primary; median {sorted(rec)[len(rec) // 2] * 1e3:,.0f} ms"
                 if rec else "no controller became primary"))
    c = res.controller
    rows.append(("controller work", f"{c.get('writes', 0):,} Writes",
                 f"{c.get('reads', 0):,} Reads, {c.get('packet_outs', 0):,} PacketOuts, "
                 f"{c.get('packet_ins', 0):,} PacketIns, {rx.get('packet_outs_received', 0):,} PacketOuts seen at h2"))
    errs = "; ".join(sorted(set(res.errors)))[:300]
    rows.append(("errors", f"{c.get('errors', 0) + len(res.errors):,}", errs or "none"))
    for what, ok in res.verdicts().items():
        rows.append((f"done: {what}", "yes" if ok else "NO", ""))
    return rows


def _lost(sent: int, received: int) -> str:
    """", lost N (x %): ..." when frames were lost: the Write's parse and slices share the switch's one
    core with forwarding, whose capacity was measured with a lighter controller at work."""
    if received >= sent:
        return ""
    return (f", lost {sent - received:,} ({(sent - received) / sent:.1%}): the Write shares the switch's core "
            f"with forwarding, at a rate set by a lighter controller's load")


def _own_row(what: str, own: dict | None) -> tuple[str, str, str]:
    if own is None:
        return (what, "not measured", "the hiccup meter of the switch's core could not run at real-time priority "
                "(needs root); the stalls above are then all counted as the switch's")
    return (what, f"{own['own_max_s'] * 1e3:,.1f} ms",
            f"{own['own_over']} over 20 ms; {own['paused']} stalls over 20 ms fell in pauses of the switch's core "
            f"itself (a SCHED_FIFO meter pinned there woke late {own['core_pauses']:,} times by over 5 ms, "
            f"at most {own['core_max_pause_s'] * 1e3:,.1f} ms: tests/bench/hiccup.py)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.soak", description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--load", type=float, default=0.8, help="fraction of the measured forwarding capacity")
    args = p.parse_args(argv)
    if args.minutes <= 0 or not 0 < args.load <= 1:
        p.error(f"--minutes {args.minutes} must be > 0 and --load {args.load} in (0, 1]")
    for what, value, note in report_rows(run(args.minutes, args.load)):
        print(f"{what}: {value} {note}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
