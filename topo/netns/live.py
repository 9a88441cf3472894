"""A netns run as a live network: ``hbh shell``, ``hbh clean``, and run directories.

Why: while ``hbh run --backend netns`` runs, its switches are real P4Runtime/Thrift servers.
The run writes ``DIR/network.json`` (every switch's gRPC address, device id, Thrift port,
interfaces, log and pcap paths) as soon as they are up; the commands here (and ``hbh params
--run DIR --switch NAME``) find a switch by its topology name there.

``hbh shell`` opens p4runtime-shell on a switch. Its election id is (0, 5), BELOW the agent's
(:data:`topo.netns.network.AGENT_ELECTION_ID`), so the shell is a backup controller: it reads
everything (tables, counters, the P4Info it fetched from the switch) and cannot write, and the
agent keeps running the law. ``--primary`` uses p4runtime-shell's default (1, 0) instead: the
shell can write, the agent loses the primary role until the shell exits (its queue calls go
over Thrift and go on; any P4Runtime write it would make is refused meanwhile).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from controlplane import params_cli
from controlplane.params import LAW_FIELDS, ParamError

__all__ = ["LiveError", "load_network", "run_ended", "switch_info", "switch_address", "switch_ports", "port_records", "shell_command",
           "register", "SHELL_ELECTION_ID"]

SHELL_ELECTION_ID = (0, 5)
PRIMARY_ELECTION_ID = (1, 0)


class LiveError(Exception):
    """A run directory or switch name that does not lead to a running switch."""


def load_network(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / "network.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise LiveError(f"--run {run_dir}: no network.json there (is it the --out of a netns run?)") from None
    except (OSError, ValueError) as exc:
        raise LiveError(f"--run {run_dir}: cannot read {path}: {exc}") from None


def run_ended(run_dir: str | Path, net: dict[str, Any]) -> str | None:
    """Why the run that wrote ``run_dir/network.json`` has ended, or None while it may still run.

    Why: its switches die with it, and a command that connects to a dead switch's address waits for
    a timeout and then reports a connection error that does not say the run is over. The runner's
    pid is in network.json; a process with that pid started after the file was written is another
    one. A network.json without the pid (an older run) is taken as running."""
    path = Path(run_dir) / "network.json"
    pid = net.get("runner_pid")
    if not isinstance(pid, int):
        return None
    try:
        written = path.stat().st_mtime
    except OSError:
        return None
    summary = Path(run_dir) / "summary.json"
    if summary.exists() and summary.stat().st_mtime >= written:
        return f"its results are written ({summary})"
    started = process_start_time(pid)
    if started is None or started > written + 1.0:
        return f"its runner, pid {pid}, is gone"
    return None


def process_start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, counted after the command's ")"
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def switch_info(run_dir: str | Path, name: str) -> dict[str, Any]:
    net = load_network(run_dir)
    why = run_ended(run_dir, net)
    if why is not None:
        raise LiveError(f"--run {run_dir}: that run has ended ({why}); its switches are gone")
    switches = net.get("switches", {})
    if name not in switches:
        raise LiveError(f"--switch {name!r}: not a switch of run {run_dir} (switches: "
                        f"{', '.join(sorted(switches)) or 'none'})")
    return switches[name]


def shell_command(info: dict[str, Any], primary: bool = False, python: str = sys.executable) -> list[str]:
    election = PRIMARY_ELECTION_ID if primary else SHELL_ELECTION_ID
    return [python, "-m", "p4runtime_sh", "--grpc-addr", info["grpc_addr"], "--device-id", str(info["device_id"]),
            "--election-id", f"{election[0]},{election[1]}"]


def switch_address(run_dir: str, name: str) -> tuple[str, int]:
    """(P4Runtime address, device id) of switch ``name`` of the run in ``run_dir``: ``hbh params --run``."""
    try:
        info = switch_info(run_dir, name)
    except LiveError as exc:
        raise ParamError(str(exc)) from None
    return info["grpc_addr"], info["device_id"]


def port_records(topo: Any, switch: str) -> dict[str, dict[str, Any]]:
    """What the topology resolved for each port of ``switch`` (network.json's ``ports``): the
    port's link rate (for ``hbh params set --w-min 0.25C``), and its law's values and where each
    came from (``hbh params show --run``)."""
    out: dict[str, dict[str, Any]] = {}
    for nb in topo.neighbours(switch):
        record: dict[str, Any] = {"toward": nb, "link_rate_bps": topo.link_between(switch, nb).rate_bps}
        law = topo.law.get((switch, nb))
        if law is not None:
            origins = topo.provenance.get((switch, nb), {})
            record["law"] = {f: getattr(law, f) for f in LAW_FIELDS}
            record["origins"] = {f: origins.get(f, "file") for f in LAW_FIELDS}
        out[str(topo.port(switch, nb))] = record
    return out


def switch_ports(run_dir: str, name: str) -> dict[int, dict[str, Any]]:
    """``port_records`` of switch ``name`` as the run in ``run_dir`` wrote them."""
    try:
        info = switch_info(run_dir, name)
    except LiveError as exc:
        raise ParamError(str(exc)) from None
    return {int(port): record for port, record in info.get("ports", {}).items()}


def register(sub: argparse._SubParsersAction) -> None:
    # `hbh params`, with --run DIR --switch NAME
    params_cli.register(sub, locate=switch_address, describe=switch_ports)
    p = sub.add_parser("shell", help="p4runtime-shell on a switch of a running netns experiment",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("switch", help="the switch's name in the topology, e.g. R1")
    p.add_argument("--run", required=True, metavar="DIR", help="the running experiment's directory (--out)")
    p.add_argument("--primary", action="store_true",
                   help="become the primary controller (writes allowed; the agent loses the role meanwhile)")
    p.set_defaults(func=_shell)
    c = sub.add_parser("clean", help="remove leftovers of netns runs that died (namespaces, veths, processes, control sockets)",
                       description="Find by name prefix and remove what netns runs killed without cleaning up "
                                   "left behind; runs still alive are not touched.")
    c.add_argument("--prefix", help="only this run's prefix (hbhXXXXX), even if its runner is alive")
    c.set_defaults(func=_clean)


def _shell(args: argparse.Namespace) -> int:
    try:
        info = switch_info(args.run, args.switch)
    except LiveError as exc:
        print(f"hbh shell: {exc}", file=sys.stderr)
        return 2
    cmd = shell_command(info, args.primary)
    role = "primary (the agent loses the role meanwhile)" if args.primary else "backup (read-only)"
    print(f"hbh shell: {args.switch} at {info['grpc_addr']}, device {info['device_id']}, as {role}", file=sys.stderr)
    os.execv(cmd[0], cmd)
    return 0  # pragma: no cover - execv does not return


def _clean(args: argparse.Namespace) -> int:
    from topo.netns.plumbing import PREFIX_RE, NetnsError, clean, require_root

    if args.prefix is not None and not PREFIX_RE.fullmatch(args.prefix):
        print(f"hbh clean: --prefix {args.prefix!r}: expected hbh and 5 hex digits, e.g. hbh1a2b3", file=sys.stderr)
        return 2
    try:
        require_root()
    except NetnsError as exc:
        print(f"hbh clean: {exc}", file=sys.stderr)
        return 2
    found = clean(args.prefix)
    print(f"hbh clean: removed {found.summary()}")
    return 0
