"""Namespaces, veth pairs and leftovers of netns runs, all named with a per-run prefix.

Why one module: every kernel object a netns run creates carries its run's prefix
(``hbh`` + 5 hex digits), so that two runs coexist and the leftovers of a run that died
without cleaning up (SIGKILL, power cut) can be found again by name: namespaces
``PREFIX-HOST``, root-namespace interfaces ``PREFIX<switch index>p<port>`` (and
``PREFIX<host index>h`` while a host end is created; with link emulators, their ends
``PREFIX<switch index>p<port>e`` and ``PREFIX<host index>he``), processes whose command line
names the prefix, control sockets ``/tmp/PREFIX-NAME.ctl`` (a switch's or a link emulator's;
a process killed by SIGKILL cannot remove its own). A live run keeps a marker ``/run/hbh/PREFIX.pid`` holding its pid; :func:`clean`
removes only what belongs to runs whose marker is gone or whose pid is dead.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NetnsError", "Plumbing", "new_prefix", "clean", "leftovers", "require_root", "PREFIX_RE",
           "switch_ifname", "emulator_ifname", "control_socket_path", "MARKER_DIR", "SOCKET_DIR"]

PREFIX_RE = re.compile(r"hbh[0-9a-f]{5}")
MARKER_DIR = Path("/run/hbh")
#: where control sockets go: a short path (a Unix socket's path is limited to 107 bytes)
SOCKET_DIR = Path("/tmp")
IFNAME_MAX = 15
CMD_TIMEOUT_S = 15


class NetnsError(Exception):
    """The netns backend cannot do what was asked; the message says what and why."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise NetnsError("the netns backend needs root (network namespaces, veth pairs, raw sockets): "
                         "run it with sudo")
    if not _which("ip"):
        raise NetnsError("the netns backend needs iproute2's `ip` on PATH")


def _which(cmd: str) -> bool:
    import shutil

    return shutil.which(cmd) is not None


def new_prefix() -> str:
    return f"hbh{secrets.token_hex(3)[:5]}"


def switch_ifname(prefix: str, switch_index: int, port: int) -> str:
    name = f"{prefix}{switch_index}p{port}"
    if len(name) > IFNAME_MAX:
        raise NetnsError(f"interface name {name!r} is longer than {IFNAME_MAX} characters (switch index "
                         f"{switch_index}, port {port}): too many nodes for the netns backend")
    return name


def emulator_ifname(ifname: str) -> str:
    """The link emulator's end of the veth pair whose other end is ``ifname``."""
    name = f"{ifname}e"
    if len(name) > IFNAME_MAX:
        raise NetnsError(f"interface name {name!r} (the link emulator's end of {ifname}) is longer than "
                         f"{IFNAME_MAX} characters: too many nodes for the netns backend with link emulators")
    return name


def control_socket_path(prefix: str, name: str) -> str:
    """A run's control socket for a switch or a link (``/tmp/PREFIX-NAME.ctl``), found again by :func:`clean`."""
    return str(SOCKET_DIR / f"{prefix}-{name}.ctl")


def ip(*args: str, check: bool = True) -> str:
    """Run ``ip ARGS`` (bounded); a failure raises NetnsError naming the command and its error."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if check and proc.returncode != 0:
        raise NetnsError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def _sysctl(ns: str | None, key: str, value: str) -> None:
    cmd = ["sysctl", "-q", "-w", f"{key}={value}"]
    if ns is not None:
        cmd = ["ip", "netns", "exec", ns, *cmd]
    subprocess.run(cmd, capture_output=True, timeout=CMD_TIMEOUT_S)


@dataclass
class Plumbing:
    """The kernel objects of one run; :meth:`close` removes them (idempotent, never raises)."""

    prefix: str
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # root-namespace ends (deleting one deletes its peer)

    def mark(self) -> None:
        MARKER_DIR.mkdir(parents=True, exist_ok=True)
        (MARKER_DIR / f"{self.prefix}.pid").write_text(f"{os.getpid()}\n")

    def add_namespace(self, host: str) -> str:
        ns = f"{self.prefix}-{host}"
        ip("netns", "add", ns)
        self.namespaces.append(ns)
        ip("-n", ns, "link", "set", "lo", "up")
        return ns

    def add_switch_link(self, a: str, b: str) -> None:
        """A veth pair with both ends in the root namespace (two switch ports)."""
        ip("link", "add", a, "type", "veth", "peer", "name", b)
        self.links.append(a)
        for end in (a, b):
            self._quiet(None, end)
            ip("link", "set", end, "up")

    def add_host_link(self, switch_end: str, ns: str, host_tmp: str, mac: str, ifname: str = "eth0") -> None:
        """A veth pair: ``switch_end`` in the root namespace, the other end ``ifname`` in ``ns``.

        The host end gets the topology's MAC and no IP address: the host process speaks raw
        frames, and without an address the host's kernel neither answers them (ICMP port
        unreachable) nor sends anything of its own (IPv6 is off on both ends).
        """
        ip("link", "add", switch_end, "type", "veth", "peer", "name", host_tmp)
        self.links.append(switch_end)
        ip("link", "set", host_tmp, "netns", ns)
        ip("-n", ns, "link", "set", host_tmp, "name", ifname)
        ip("-n", ns, "link", "set", ifname, "address", mac)
        self._quiet(None, switch_end)
        self._quiet(ns, ifname)
        ip("link", "set", switch_end, "up")
        ip("-n", ns, "link", "set", ifname, "up")

    @staticmethod
    def _quiet(ns: str | None, ifname: str) -> None:
        """No IPv6 (router solicitations, MLD) on a port: only the experiment's frames."""
        _sysctl(ns, f"net.ipv6.conf.{ifname}.disable_ipv6", "1")

    def close(self) -> None:
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=CMD_TIMEOUT_S)
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=CMD_TIMEOUT_S)
        self.namespaces.clear()
        self.links.clear()
        with contextlib.suppress(OSError):
            (MARKER_DIR / f"{self.prefix}.pid").unlink()


# ---- leftovers ------------------------------------------------------------------------------------
@dataclass
class Leftovers:
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    sockets: list[str] = field(default_factory=list)  # control sockets of dead runs

    def __bool__(self) -> bool:
        return bool(self.namespaces or self.links or self.pids or self.sockets)

    def summary(self) -> str:
        return (f"{len(self.namespaces)} namespaces, {len(self.links)} interfaces, {len(self.pids)} processes, "
                f"{len(self.sockets)} control sockets")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purpose
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    return False


def live_prefixes() -> set[str]:
    """Prefixes of runs whose runner is alive (by their markers)."""
    live: set[str] = set()
    if not MARKER_DIR.is_dir():
        return live
    for marker in MARKER_DIR.glob("hbh*.pid"):
        with contextlib.suppress(OSError, ValueError):
            if _alive(int(marker.read_text().strip())):
                live.add(marker.stem)
    return live


def leftovers(prefix: str | None = None) -> Leftovers:
    """Kernel objects and processes of dead runs (or of ``prefix`` only, alive or not)."""
    live = set() if prefix is not None else live_prefixes()

    def wanted(name: str) -> bool:
        m = PREFIX_RE.match(name)
        if m is None:
            return False
        return m.group(0) == prefix if prefix is not None else m.group(0) not in live

    out = Leftovers()
    for line in ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        if wanted(name):
            out.namespaces.append(name)
    for line in ip("-o", "link", "show", check=False).splitlines():
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if wanted(name):
                out.links.append(name)
    me = os.getpid()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "hbh" not in cmd or not any(k in cmd for k in ("p4switch", "topo.netns.host", "simple_switch", "linkemu")):
            continue
        for m in PREFIX_RE.finditer(cmd):
            if (prefix is None and m.group(0) not in live) or m.group(0) == prefix:
                out.pids.append(int(proc.name))
                break
    out.sockets = sorted(str(p) for p in SOCKET_DIR.glob("hbh?????-*.ctl") if wanted(p.name))
    return out


def clean(prefix: str | None = None, timeout_s: float = 10.0) -> Leftovers:
    """Kill the processes, delete the namespaces and interfaces of dead runs; returns what it found."""
    found = leftovers(prefix)
    for pid in found.pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while any(_alive(p) for p in found.pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for ns in found.namespaces:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=CMD_TIMEOUT_S)
    for link in found.links:
        subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=CMD_TIMEOUT_S)
    for path in found.sockets:  # after the processes: none of them is serving it any more
        with contextlib.suppress(OSError):
            os.unlink(path)
    for p in {PREFIX_RE.match(Path(n).name).group(0) for n in found.namespaces + found.links + found.sockets} | (  # type: ignore[union-attr]
            {prefix} if prefix else set()):
        with contextlib.suppress(OSError):
            (MARKER_DIR / f"{p}.pid").unlink()
    if prefix is None and MARKER_DIR.is_dir():
        live = live_prefixes()
        for marker in MARKER_DIR.glob("hbh*.pid"):
            if marker.stem not in live:
                with contextlib.suppress(OSError):
                    marker.unlink()
    return found
