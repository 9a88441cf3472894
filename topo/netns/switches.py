"""Switch processes of a netns run: their command lines (p4switch or BMv2) and their lifetime.

Why the command lines are built here, as plain lists: they are the documented ones
(``p4switch -i N@veth ... --grpc-server-addr 127.0.0.1:P --thrift-port T --cpu-port 255
--no-p4 ...``, ``simple_switch_grpc -i N@veth ... --thrift-port T --no-p4 -- --grpc-server-addr
... --cpu-port 255``), so a user can paste them from ``network.json`` and run one switch by
hand, and the unit tests check exactly what would be run without starting anything.

Each process gets ``PR_SET_PDEATHSIG(SIGKILL)``: if the runner dies (even by SIGKILL) its
switches die with it; the kernel objects are then found by prefix (:mod:`topo.netns.plumbing`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runtime.sched import RealtimeScheduler
from topo.netns.plumbing import NetnsError

__all__ = ["SwitchSpec", "p4switch_command", "bmv2_command", "bmv2_binary", "BMV2_ENV", "SwitchProcess", "free_tcp_port", "check_bmv2_tools", "PORT_TAKEN", "PORT_RETRIES",
           "pdeathsig", "child_rt_priority", "realtime_run", "switch_spin_us", "CHILD_RT_PRIORITY", "LinkEmuSpec",
           "linkemu_command", "LinkEmuProcess", "read_line", "stop_process", "NO_THRIFT", "NO_THRIFT_LOG"]

CPU_PORT = 255
START_TIMEOUT_S = 60.0
#: how long a BMv2 whose gRPC port is open may take to open its Thrift port before it is taken for
#: a build without Thrift (its log's warning, when there is one, is read sooner)
THRIFT_GRACE_S = 10.0
#: what simple_switch_grpc built without Thrift logs when given --thrift-port (BMv2 1.15)
NO_THRIFT_LOG = "compiled without Thrift support"
NO_THRIFT = ("{name}: this simple_switch_grpc has no Thrift server, and set_queue_rate (the agents' egress rates) "
             "needs it: BMv2 builds simple_switch_grpc with one only when configured with --with-thrift "
             "(targets/simple_switch_grpc: ./configure --with-thrift; docs/howto/bmv2.md)")


log = logging.getLogger(__name__)


_GIVEN: set[int] = set()
#: the lowest port handed out: Ray's workers listen on 10002-19999 by default (`ray start
#: --min-worker-port/--max-worker-port`), and a sweep or a test's Ray head runs beside the switches
LISTEN_FLOOR = 20000
#: the block of ports probed when the kernel's ephemeral range leaves no room below it
FALLBACK_PORTS = (20000, 32767)
#: the bind error a switch prints when its port was taken between the probe and its own bind
PORT_TAKEN = "address already in use"
#: how often a switch that lost its ports to another process is started again on fresh ones
PORT_RETRIES = 3


def _ephemeral_range() -> tuple[int, int]:
    with contextlib.suppress(OSError, ValueError):
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    return 32768, 60999


def _listen_block() -> tuple[int, int]:
    """Ports outside the kernel's ephemeral range: every outgoing connection of the machine (a gRPC
    client, a test's socket) is given a port from that range, so a port probed there can be taken
    before the switch binds it (CI saw "address already in use" with parallel test workers). Ray's
    worker ports are left out too (:data:`LISTEN_FLOOR`): CI saw a Ray head's port taken by them."""
    lo, hi = _ephemeral_range()
    if lo - 1 - LISTEN_FLOOR >= 2000:
        return LISTEN_FLOOR, lo - 1
    if 65535 - hi >= 2000:
        return hi + 1, 65535
    return FALLBACK_PORTS


def free_tcp_port() -> int:
    """A free port of 127.0.0.1 outside the ephemeral range, never one this process handed out before.
    Each process starts at its own place in the block (by its pid), so parallel runners probe different
    ports; the probe's socket is closed before the switch binds, so a race is still possible and the
    switch is then started again (:data:`PORT_RETRIES`)."""
    lo, hi = _listen_block()
    span = hi - lo + 1
    start = (os.getpid() * 7919) % span
    for i in range(span):
        port = lo + (start + len(_GIVEN) + i) % span
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise OSError(f"no free TCP port on 127.0.0.1 in {lo}-{hi} that this process has not handed out already")


@dataclass
class SwitchSpec:
    """One switch of a run: what its command line says and where its files go."""

    name: str
    device_id: int
    interfaces: list[tuple[int, str]]  # (port, root-namespace interface)
    grpc_port: int
    thrift_port: int
    log_file: str
    pcap_dir: str | None = None
    bitrates: dict[int, int] = field(default_factory=dict)  # port -> b/s (p4switch's link model)
    delays: dict[int, int] = field(default_factory=dict)  # port -> ns
    control_socket: str | None = None  # p4switch's link-control socket (rates at run time, tail drops)
    link_loss: dict[int, float] = field(default_factory=dict)  # EtherType -> fraction lost (p4switch)
    seed: int | None = None
    queue_model: str = "bmv2"  # p4switch's egress queues (p4switch.tm); BMv2 itself has only "bmv2"
    priority_queues: int = 1  # egress priority queues per port (per-destination classes: classes + 1)
    spin_us: int | None = None  # p4switch's --spin-us (None: its default); :func:`switch_spin_us`

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


def p4switch_command(spec: SwitchSpec, python: str = sys.executable) -> list[str]:
    cmd = [python, "-m", "p4switch.cli"]
    for port, ifname in spec.interfaces:
        cmd += ["-i", f"{port}@{ifname}"]
    cmd += ["--device-id", str(spec.device_id), "--grpc-server-addr", spec.grpc_addr,
            "--thrift-port", str(spec.thrift_port), "--cpu-port", str(CPU_PORT), "--no-p4",
            "--log-file", spec.log_file]
    if spec.pcap_dir:
        cmd += ["--pcap", spec.pcap_dir]
    if spec.bitrates:  # the topology's rates count frame bytes, as the simulator's links do
        cmd += ["--port-overhead", "0", "--port-min-frame", "0"]
    for port, bps in sorted(spec.bitrates.items()):
        cmd += ["--port-bitrate", f"{port}={bps}"]
    for port, ns in sorted(spec.delays.items()):
        if ns:
            cmd += ["--port-delay", f"{port}={ns}ns"]
    if spec.control_socket:
        cmd += ["--control-socket", spec.control_socket]
    for ethertype, fraction in sorted(spec.link_loss.items()):
        cmd += ["--link-loss", f"{ethertype:#06x}={fraction:g}"]
    if spec.seed is not None:
        cmd += ["--seed", str(spec.seed)]
    if spec.queue_model != "bmv2":
        cmd += ["--queue-model", spec.queue_model]
    if spec.priority_queues != 1:
        cmd += ["--priority-queues", str(spec.priority_queues)]
    if spec.spin_us is not None:
        cmd += ["--spin-us", str(spec.spin_us)]
    return cmd


def switch_spin_us(processes: int, cpus: int) -> int:
    """The ``--spin-us`` of a run's p4switch processes: p4switch's default spin where each of the
    run's ``processes`` (switches, hosts, the runner) can have one of the ``cpus`` cores to itself,
    0 (sleep until each timer) where they share them.

    Why: past a few hundred Mb/s a switch's timers come closer than the spin, and its loop spins
    all the time, a core's worth of real-time priority. On two cores that core came from the hosts
    and the runner, and it pushed a core past the kernel's real-time budget (the 30-40 ms stalls
    docs/howto/netns.md describes). The exact times the port dates its frames with
    (runtime/link.py, ``RealtimeWire.busy_due``) make a late wake-up cost no rate: paper-1router at
    500 Mb/s, derived, lost 826-1,191 packets without the spin against 2,170-2,250 with it, and its
    switch used 0.65 of a core instead of 0.8 (docs/howto/netns.md)."""
    return RealtimeScheduler.SPIN_NS // 1000 if cpus >= processes else 0


#: environment variable naming the simple_switch_grpc binary to run (default: the one on PATH)
BMV2_ENV = "HBH_BMV2"


def bmv2_binary() -> str:
    """``$HBH_BMV2`` or ``simple_switch_grpc``. Why: BMv2's default (logging) and performance
    builds live in different prefixes, and what a switch costs the machine differs between them
    (docs/howto/bmv2.md); this picks one per run without changing PATH."""
    return os.environ.get(BMV2_ENV) or "simple_switch_grpc"


def bmv2_command(spec: SwitchSpec) -> list[str]:
    """simple_switch_grpc's own options, then ``--`` and its target (gRPC) options."""
    cmd = [bmv2_binary(), "--device-id", str(spec.device_id)]
    for port, ifname in spec.interfaces:
        cmd += ["-i", f"{port}@{ifname}"]
    cmd += ["--thrift-port", str(spec.thrift_port), "--log-file", spec.log_file, "--log-flush"]
    if spec.pcap_dir:
        cmd += ["--pcap", spec.pcap_dir]
    cmd += ["--no-p4", "--", "--grpc-server-addr", spec.grpc_addr, "--cpu-port", str(CPU_PORT)]
    if spec.priority_queues != 1:  # a target option of simple_switch_grpc
        cmd += ["--priority-queues", str(spec.priority_queues)]
    return cmd


def check_bmv2_tools() -> None:
    chosen = os.environ.get(BMV2_ENV)
    if chosen and not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
        raise NetnsError(f"{BMV2_ENV}={chosen}: not an executable file (it should name a simple_switch_grpc binary)")
    missing = [t for t in ("p4c", chosen or "simple_switch_grpc") if shutil.which(t) is None]
    if missing:
        raise NetnsError(f"--target bmv2 needs {' and '.join(missing)} on PATH (see docs/howto/bmv2.md); "
                         "use --target p4switch otherwise")


def pdeathsig() -> None:
    """In the child, before exec: die with the runner (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


#: ``SCHED_RR`` priority of a netns run's processes (below the link emulators' loop, 10);
#: ``HBH_NETNS_RT_PRIORITY=0`` keeps them at normal priority.
CHILD_RT_PRIORITY = 5


def child_rt_priority() -> int:
    """The priority a netns run takes (:func:`realtime_run`): 0 unless root, and 0 when the runner
    already runs at a real-time priority (``chrt``), which the children inherit."""
    try:
        wanted = int(os.environ.get("HBH_NETNS_RT_PRIORITY", CHILD_RT_PRIORITY))
    except ValueError:
        raise NetnsError(f"HBH_NETNS_RT_PRIORITY={os.environ['HBH_NETNS_RT_PRIORITY']!r}: give a whole number "
                         f"(0 = normal priority, 1-{os.sched_get_priority_max(os.SCHED_RR)})") from None
    if wanted <= 0 or os.geteuid() != 0 or os.sched_getscheduler(0) != os.SCHED_OTHER:
        return 0
    return min(wanted, os.sched_get_priority_max(os.SCHED_RR))


@contextlib.contextmanager
def realtime_run(priority: int) -> Iterator[None]:
    """Every thread of this process at ``SCHED_RR`` ``priority`` (0: none) while a run lasts; the
    processes it starts inherit it. Back to ``SCHED_OTHER`` after, every thread.

    Why: a run emulates its network in real time, and at normal priority its processes wait behind
    everything else runnable: at the paper's rates the five switches of paper-5router use a fifth
    of a core each, the runner (agents, hosts' control) about half of one, and without a real-time
    priority the runner's wake-ups came 110-150 ms late at the 99th percentile on an idle two-core
    machine. On BMv2's queues such a stall is a fall of a switch's drain, and one run in three of
    paper-5router lost packets to it. The children alone at a real-time priority starved the
    runner (wake-ups 1.8 s late): all of the run's processes share the priority, as under ``chrt``
    (docs/howto/netns.md). The link emulators raise their own loop higher (runtime/realtime.py); the
    kernel's real-time throttling keeps 5 % of each core for the rest."""
    if priority <= 0:
        yield
        return
    raised = _set_threads(os.SCHED_RR, priority)
    try:
        yield
    finally:
        if raised:
            _set_threads(os.SCHED_OTHER, 0)


def _set_threads(policy: int, priority: int) -> bool:
    done = False
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setscheduler(int(tid), policy, os.sched_param(priority))
            done = True
        except OSError:  # the thread has ended, or the kernel refuses
            continue
    return done


def _wait_tcp(port: int, deadline: float, proc: subprocess.Popen) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


class SwitchProcess:
    """A started switch; :meth:`stop` ends it (SIGTERM, bounded wait, then SIGKILL)."""

    def __init__(self, spec: SwitchSpec, command: list[str], cwd: Path) -> None:
        self.spec = spec
        self.command = command
        self._err_path = spec.log_file + ".stderr"
        self._err = open(self._err_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=self._err,
                                     stderr=self._err, preexec_fn=pdeathsig)

    def wait_ready(self, deadline: float) -> None:
        for port in (self.spec.grpc_port, self.spec.thrift_port):
            if port == self.spec.thrift_port and self.is_bmv2():
                self._wait_thrift(deadline)
                continue
            if not _wait_tcp(port, deadline, self.proc):
                raise NetnsError(f"switch {self.spec.name} did not start listening on 127.0.0.1:{port} "
                                 f"(exit status {self.proc.poll()}): {self.output()}")

    def lost_port(self) -> bool:
        """The switch exited because another process bound one of its ports first."""
        return self.proc.poll() is not None and PORT_TAKEN in self.log_text().lower()

    def is_bmv2(self) -> bool:
        return self.command[0] == bmv2_binary() or Path(self.command[0]).name == "simple_switch_grpc"

    def _wait_thrift(self, deadline: float) -> None:
        """BMv2's gRPC port is open: its Thrift port should follow. A build without Thrift says so in
        its log (once ``--thrift-port`` is given) and never opens it: that is said in one line."""
        grace = min(deadline, time.monotonic() + THRIFT_GRACE_S)
        while True:
            if _wait_tcp(self.spec.thrift_port, min(grace, time.monotonic() + 0.5), self.proc):
                return
            if NO_THRIFT_LOG in self.log_text() or (time.monotonic() >= grace and self.proc.poll() is None):
                raise NetnsError(f"switch {NO_THRIFT.format(name=self.spec.name)}")
            if time.monotonic() >= grace or self.proc.poll() is not None:
                raise NetnsError(f"switch {self.spec.name} did not start listening on "
                                 f"127.0.0.1:{self.spec.thrift_port} (exit status {self.proc.poll()}): "
                                 f"{self.output()}")

    def log_text(self) -> str:
        """The switch's log and its stderr (BMv2 logs to ``--log-file``; the console goes to stderr)."""
        text = ""
        for path in (self.spec.log_file, self._err_path):
            with contextlib.suppress(OSError):
                text += Path(path).read_text(errors="replace")
        return text

    def output(self) -> str:
        with contextlib.suppress(OSError):
            return Path(self._err_path).read_text()[-2000:].strip()
        return ""

    def stop(self, timeout_s: float = 10.0) -> int | None:
        stop_process(self.proc, f"switch {self.spec.name}", timeout_s)
        with contextlib.suppress(Exception):
            self._err.close()
        return self.proc.returncode


def stop_process(proc: subprocess.Popen, what: str, timeout_s: float = 10.0) -> None:
    """SIGTERM, a bounded wait, then SIGKILL (said in the log)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("%s did not exit within %.0f s of SIGTERM; killed", what, timeout_s)
            proc.kill()
            proc.wait(5)


def read_line(proc: subprocess.Popen, deadline: float) -> str | None:
    """The child's next stdout line, waiting at most until ``deadline`` (monotonic s)."""
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], min(0.2, max(0.0, deadline - time.monotonic())))
        if ready:
            line = proc.stdout.readline()
            return line.strip() if line else None
        if proc.poll() is not None:
            return None
    return None


# ---- link emulators (where tc netem is missing) ----------------------------------------------------
@dataclass
class LinkEmuSpec:
    """One emulated link (:mod:`topo.netns.linkemu`): frames from ``a`` (a switch's peer) shaped to ``b``."""

    name: str  # "R1-R2", "R1-H2": the link, for logs and messages
    a: str
    b: str
    bitrate_bps: int
    delay_ns: int
    both_ways: bool  # switch-switch: both directions leave a switch; a host paces its own uplink
    control_socket: str
    log_file: str


def linkemu_command(spec: LinkEmuSpec, python: str = sys.executable) -> list[str]:
    cmd = [python, "-m", "topo.netns.linkemu", "--a", spec.a, "--b", spec.b, "--rate", str(spec.bitrate_bps),
           "--delay-ns", str(spec.delay_ns)]
    if spec.both_ways:
        cmd.append("--both-ways")
    return [*cmd, "--control-socket", spec.control_socket]


class LinkEmuProcess:
    """A started link emulator; :meth:`wait_ready` waits for its ``ready`` line, :meth:`stop` ends it."""

    def __init__(self, spec: LinkEmuSpec, cwd: Path, python: str = sys.executable) -> None:
        self.spec = spec
        self.command = linkemu_command(spec, python)
        self._err = open(spec.log_file, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, preexec_fn=pdeathsig)

    def wait_ready(self, deadline: float) -> None:
        if read_line(self.proc, deadline) != "ready":
            raise NetnsError(f"link emulator {self.spec.name} did not start (exit status {self.proc.poll()}): "
                             f"{self.output()}")

    def output(self) -> str:
        with contextlib.suppress(OSError):
            return Path(self.spec.log_file).read_text()[-2000:].strip()
        return ""

    def stop(self, timeout_s: float = 5.0) -> int | None:
        stop_process(self.proc, f"link emulator {self.spec.name}", timeout_s)
        with contextlib.suppress(Exception):
            self._err.close()
        if self.proc.stdout is not None:
            with contextlib.suppress(Exception):
                self.proc.stdout.close()
        return self.proc.returncode
