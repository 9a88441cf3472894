"""A Mininet switch that runs p4switch where a Mininet script ran simple_switch_grpc.

Why: P4 labs (p4lang/tutorials, p4-utils) build their networks with a Mininet ``Switch`` class
that starts ``simple_switch_grpc`` with the JSON, one ``-i PORT@IFACE`` per link, the Thrift
port and, after ``--``, the gRPC address and CPU port. :class:`P4Switch` starts ``p4switch``
with the same command line (docs/howto/p4switch-for-bmv2-users.md, "In Mininet and p4-utils"), so such a script changes its
switch class (or p4-utils' ``sw_path``) and nothing else. Mininet is imported when this module
is, so only a script that uses Mininet imports it.

    from mininet.net import Mininet
    from p4switch.mininet import P4Switch
    net = Mininet(topo=..., switch=P4Switch, controller=None)   # params: json_path=..., thrift_port=...
"""

from __future__ import annotations

import shlex
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from mininet.log import error, info
from mininet.node import Switch

__all__ = ["P4Switch", "p4switch_command"]


def p4switch_command() -> list[str]:
    """``p4switch`` on PATH, else this interpreter running the same console script."""
    found = shutil.which("p4switch")
    return [found] if found else [sys.executable, "-m", "p4switch.cli"]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class P4Switch(Switch):
    """One p4switch process per Mininet switch, its ports the switch's interfaces by number."""

    next_thrift_port = 9090
    next_grpc_port = 50051
    next_device_id = 0

    def __init__(self, name: str, json_path: str | None = None, sw_path: str | None = None,
                 thrift_port: int | None = None, grpc_port: int | None = None, device_id: int | None = None,
                 cpu_port: int | None = None, pcap_dir: str | None = None, log_file: str | None = None,
                 extra_args: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        if json_path is not None and not Path(json_path).is_file():
            error(f"p4switch: {json_path}: no such program\n")
            raise FileNotFoundError(json_path)
        self.json_path = json_path
        self.sw_path = shlex.split(sw_path) if sw_path else p4switch_command()
        self.thrift_port = thrift_port if thrift_port is not None else P4Switch.next_thrift_port
        self.grpc_port = grpc_port if grpc_port is not None else P4Switch.next_grpc_port
        self.device_id = device_id if device_id is not None else P4Switch.next_device_id
        P4Switch.next_thrift_port = max(P4Switch.next_thrift_port, self.thrift_port) + 1
        P4Switch.next_grpc_port = max(P4Switch.next_grpc_port, self.grpc_port) + 1
        P4Switch.next_device_id = max(P4Switch.next_device_id, self.device_id) + 1
        self.cpu_port = cpu_port
        self.pcap_dir = pcap_dir
        self.log_file = log_file or f"/tmp/p4switch-{name}.log"
        self.extra_args = list(extra_args or [])

    def command(self) -> list[str]:
        """simple_switch_grpc's command line, with p4switch in its place."""
        args = [*self.sw_path]
        for port, intf in sorted(self.intfs.items()):
            if intf.name != "lo" and port > 0:
                args += ["-i", f"{port}@{intf.name}"]
        args += ["--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
                 "--log-file", self.log_file]
        if self.pcap_dir:
            args += ["--pcap", self.pcap_dir]
        args += self.extra_args
        args += [self.json_path] if self.json_path else ["--no-p4"]
        args += ["--", "--grpc-server-addr", f"0.0.0.0:{self.grpc_port}",
                 "--cpu-port", "none" if self.cpu_port is None else str(self.cpu_port)]
        return args

    def start(self, controllers: Any) -> None:
        info(f"Starting p4switch {self.name}\n")
        line = " ".join(shlex.quote(a) for a in self.command())
        self.cmd(f"{line} > {shlex.quote(self.log_file)}.out 2>&1 & echo $! > /tmp/p4switch-{self.name}.pid")
        for _ in range(300):
            if _listening(self.thrift_port):
                return
            time.sleep(0.1)
        error(f"p4switch {self.name} did not start: see {self.log_file}.out\n")

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        self.cmd(f"kill $(cat /tmp/p4switch-{self.name}.pid) 2>/dev/null; wait")
        super().stop(deleteIntfs)
