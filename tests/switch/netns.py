"""Network-namespace fixtures for tests and benchmarks that run a real p4switch.

Why a module of its own: every netns test needs the same careful plumbing - unique names
(several runs may share a machine), addresses only on the test's own veths, cleanup even when
the test fails, and every wait bounded. Hosts live in their own namespaces; the switch runs in
the root namespace on the root-side ends of the veth pairs (like Mininet's switches).

Sockets of a host are opened by a helper thread that entered the host's namespace (``setns``
acts on the calling thread only), so tests send and capture frames in-process without
``ip netns exec`` subprocesses; a socket stays in the namespace it was created in.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000
NETNS_DIR = "/run/netns"


def netns_available() -> str | None:
    """None when namespaces can be used here, else the reason to skip."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth pairs, raw sockets)"
    if shutil.which("ip") is None:
        return "needs iproute2's `ip`"
    probe = f"p4probe{uuid.uuid4().hex[:6]}"
    proc = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
    if proc.returncode != 0:
        return f"`ip netns add` failed: {proc.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


_SKIP_REASON: list[str | None] = []


def require_netns() -> None:
    """Skip the calling test cleanly when namespaces are unavailable (checked once)."""
    if not _SKIP_REASON:
        _SKIP_REASON.append(netns_available())
    if _SKIP_REASON[0] is not None:
        pytest.skip(_SKIP_REASON[0])


def run(*cmd: str, ns: str | None = None, check: bool = True, timeout: float = 10) -> str:
    """Run a command (in namespace ``ns``), bounded in time; the error names the command."""
    full = ["ip", "netns", "exec", ns, *cmd] if ns else list(cmd)
    proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(full)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def in_netns(ns: str, fn: Callable[[], Any], timeout: float = 10) -> Any:
    """Run ``fn`` in a thread that entered namespace ``ns`` and return its result."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    box: dict[str, Any] = {}

    def body() -> None:
        fd = os.open(f"{NETNS_DIR}/{ns}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns({ns}) failed")
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            os.close(fd)

    t = threading.Thread(target=body, name=f"in-netns-{ns}")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError(f"in_netns({ns}) did not finish within {timeout} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def raw_socket(ns: str, ifname: str) -> socket.socket:
    """An AF_PACKET socket bound to ``ifname`` inside namespace ``ns``."""

    def open_it() -> socket.socket:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((ifname, ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        return s

    return in_netns(ns, open_it)


def udp_socket(ns: str, addr: tuple[str, int] | None = None) -> socket.socket:
    """A UDP socket created inside namespace ``ns`` (bound to ``addr`` if given)."""

    def open_it() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if addr is not None:
            s.bind(addr)
        return s

    return in_netns(ns, open_it)


def recv_until(sock: socket.socket, accept: Callable[[bytes], bool], timeout: float,
               max_frames: int = 100_000) -> list[tuple[float, bytes]]:
    """Frames (monotonic arrival time, bytes) read until ``accept`` is true for one, or timeout.

    Returns everything read; the last element is the accepted frame when one came.
    """
    return _receive(sock, lambda _: True, accept, timeout, max_frames)


def collect(sock: socket.socket, keep: Callable[[bytes], bool], duration: float,
            max_frames: int = 1_000_000, want: int | None = None, linger: float = 0.3) -> list[tuple[float, bytes]]:
    """Every frame ``keep`` accepts during ``duration`` seconds (with arrival times).

    With ``want``: ``duration`` is only an upper bound; the frames once ``want`` of them have come
    and ``linger`` s have passed without another (so a duplicate or an extra one is still seen).
    Why: a fixed listening time is a timing assertion in disguise; on a loaded machine the frames
    come later, and the test would fail on load, not on what the switch did."""
    if want is None:
        return _receive(sock, keep, lambda _: False, duration, max_frames)
    out = _receive(sock, keep, _after(want, keep), duration, max_frames)
    while len(out) >= want and (more := _receive(sock, keep, keep, linger, max_frames)):
        out += more  # one more kept frame within ``linger``: listen on
    return out


def _after(want: int, keep: Callable[[bytes], bool]) -> Callable[[bytes], bool]:
    """A stop predicate that is true at the ``want``-th frame ``keep`` accepts."""
    seen = [0]

    def stop(data: bytes) -> bool:
        seen[0] += keep(data)
        return seen[0] >= want

    return stop


def _receive(sock: socket.socket, keep: Callable[[bytes], bool], stop: Callable[[bytes], bool],
             timeout: float, max_frames: int) -> list[tuple[float, bytes]]:
    """The one bounded receive loop: at most ``max_frames`` frames and ``timeout`` seconds."""
    out: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + timeout
    for _ in range(max_frames):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        if keep(data):
            out.append((time.monotonic(), data))
        if stop(data):
            break
    return out


def mac_of(ns: str | None, ifname: str) -> str:
    path = f"/sys/class/net/{ifname}/address"
    if ns is None:
        with open(path) as f:
            return f.read().strip()
    return run("cat", path, ns=ns).strip()


@dataclass
class Host:
    """A host namespace with one interface ``eth0`` joined to switch port ``port``."""

    name: str  # namespace name
    port: int
    ip: str
    prefix: int
    gateway: str
    switch_if: str  # root-side veth name (the switch's interface)
    mac: str = ""
    gw_mac: str = ""
    ifname: str = "eth0"


@dataclass
class Topology:
    """Uniquely named host namespaces, each joined by a veth pair to the root namespace."""

    tag: str = field(default_factory=lambda: f"p4t{uuid.uuid4().hex[:5]}")
    hosts: dict[str, Host] = field(default_factory=dict)
    _namespaces: list[str] = field(default_factory=list)
    _links: list[str] = field(default_factory=list)

    def add_host(self, short: str, port: int, ip: str, prefix: int, gateway: str, gw_mac: str) -> Host:
        """Namespace ``<tag>-<short>`` with eth0 = ``ip/prefix``, default route via ``gateway``
        (whose MAC is set statically: the switch answers no ARP) and IPv6 off (no noise)."""
        ns = f"{self.tag}-{short}"
        sw_if = f"{self.tag}s{port}"
        run("ip", "netns", "add", ns)
        self._namespaces.append(ns)
        run("ip", "link", "add", sw_if, "type", "veth", "peer", "name", f"{self.tag}h{port}")
        self._links.append(sw_if)
        run("ip", "link", "set", f"{self.tag}h{port}", "netns", ns)
        run("ip", "-n", ns, "link", "set", f"{self.tag}h{port}", "name", "eth0")
        for where, ifname in ((None, sw_if), (ns, "eth0")):
            run("sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.disable_ipv6=1", ns=where, check=False)
        run("ip", "link", "set", sw_if, "up")
        run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        run("ip", "-n", ns, "addr", "add", f"{ip}/{prefix}", "dev", "eth0")
        run("ip", "-n", ns, "route", "add", "default", "via", gateway, "dev", "eth0")
        run("ip", "-n", ns, "neigh", "replace", gateway, "lladdr", gw_mac, "dev", "eth0", "nud", "permanent")
        host = Host(ns, port, ip, prefix, gateway, sw_if, mac_of(ns, "eth0"), gw_mac)
        self.hosts[short] = host
        return host

    def close(self) -> None:
        """Delete what was created (idempotent, never raises: it runs in finalizers)."""
        for ns in self._namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
        for link in self._links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=10)
        self._namespaces.clear()
        self._links.clear()


@contextlib.contextmanager
def topology() -> Iterator[Topology]:
    topo = Topology()
    try:
        yield topo
    finally:
        topo.close()


# ---- a p4switch process ------------------------------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_tcp_port() -> int:
    """A loopback TCP port nobody listens on right now, never one handed out before in this process."""
    from topo.netns.switches import free_tcp_port as pick

    return pick()


def wait_tcp(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


@dataclass
class SwitchProcess:
    """``p4switch`` run as a subprocess of its CLI, with its own gRPC and Thrift ports."""

    args: list[str]
    log_path: str
    grpc_port: int = field(default_factory=free_tcp_port)
    thrift_port: int = field(default_factory=free_tcp_port)
    proc: subprocess.Popen | None = None
    cpu: int | None = None
    cwd: str = REPO  # another checkout runs its own p4switch (the Write benchmark's baseline)

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def command(self) -> list[str]:
        import sys

        cmd = [sys.executable, "-m", "p4switch.cli", "--grpc-server-addr", self.grpc_addr,
               "--thrift-port", str(self.thrift_port), "--log-file", self.log_path, *self.args]
        if self.cpu is not None and shutil.which("taskset"):
            cmd = ["taskset", "-c", str(self.cpu), *cmd]
        return cmd

    def start(self, timeout: float = 120) -> SwitchProcess:
        """Start and wait until both servers accept connections (bounded). The bound guards against a
        switch that never comes up, not a slow start: at a load average of 30 (a shared machine
        during make test) the interpreter's imports alone took more than 30 s."""
        self._stderr = open(self.log_path + ".stderr", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.command(), cwd=self.cwd, stdout=subprocess.DEVNULL, stderr=self._stderr)
        deadline = time.monotonic() + timeout
        for port in (self.grpc_port, self.thrift_port):
            if not wait_tcp(port, max(0.1, deadline - time.monotonic())):
                self.stop()
                raise RuntimeError(f"p4switch did not start listening on {port} within {timeout} s:\n{self.output()}")
            if self.proc.poll() is not None:
                raise RuntimeError(f"p4switch exited with {self.proc.returncode}:\n{self.output()}")
        return self

    def output(self) -> str:
        text = ""
        for path in (self.log_path + ".stderr", self.log_path):
            with contextlib.suppress(OSError), open(path) as f:
                text += f.read()
        return text[-4000:]

    def stop(self, timeout: float = 10) -> int | None:
        """SIGTERM, wait (bounded), SIGKILL if needed; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        with contextlib.suppress(Exception):
            self._stderr.close()
        return self.proc.returncode


def skip_unless_kept_up(summary: dict, what: str) -> None:
    """Skip when a real-time run fell behind while other work loaded the machine: its numbers
    (loss, occupancy, agreement with the simulator) then measure the machine, as the run itself
    says (topo/netns/keepup.py). Why both conditions: a run that falls behind on an idle machine is a
    regression, and fails.

    The evidence, measured by the run: its keep-up verdict, the load average at its end and the
    cores its own processes kept busy; the load above those is other work. Not counted as other
    work: the suite's other pytest-xdist workers (``make test`` runs two), one core each of the
    simulator's tests at normal priority, which the run's real-time priority preempts; on an idle
    machine they would otherwise turn every fall behind into a skip."""
    from topo.netns.keepup import verdict

    rt = summary.get("realtime") or {}
    said = verdict(rt)
    own = (rt.get("cpu_cores") or {}).get("total", 0.0)
    siblings = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) - 1
    others = rt.get("load_1min", 0.0) - own - siblings
    if said.startswith("no") and others >= 0.5:
        import pytest

        pytest.skip(f"{what}: the run fell behind real time ({said.removeprefix('no: ')}) with a load average of "
                    f"{rt.get('load_1min')} of which its own processes {own:g} and the suite's other workers "
                    f"{siblings}: its numbers measure the machine")
