"""Start a switch (real ``simple_switch_grpc`` or p4switch) on a BMv2 JSON and run a
``simple_switch_CLI`` commands file against it.

Why: the way to know that p4switch's Thrift server gives "the same results as on BMv2" is to
run one commands file through the stock CLI against both and compare what the CLI prints.
Both switches are started by the same command line (simple_switch_grpc's), free ports each.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.paths import ROOT
from topo.netns.switches import free_tcp_port

CLI = Path(sys.executable).with_name("simple_switch_CLI")
P4SWITCH = [sys.executable, "-m", "p4switch.cli"]


def free_port() -> int:
    """A port outside the ephemeral range (see topo.netns.switches.free_tcp_port)."""
    return free_tcp_port()


def bmv2() -> list[str] | None:
    """The real simple_switch_grpc, when it is on PATH."""
    exe = shutil.which("simple_switch_grpc")
    return [exe] if exe else None


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"switch exited with status {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"no Thrift server on port {port} after {timeout} s")


@contextlib.contextmanager
def switch(command: list[str], program: Path, log: Path | None = None) -> Iterator[int]:
    """Run ``command [options] program -- --grpc-server-addr ...``; yields its Thrift port."""
    thrift, grpc = free_port(), free_port()
    argv = [*command, "--thrift-port", str(thrift), str(program), "--", "--grpc-server-addr",
            f"127.0.0.1:{grpc}"]
    out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
    root = ROOT
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=root, env=env)
    try:
        _wait_port(thrift, proc)
        yield thrift
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log is not None:
            out.close()  # type: ignore[union-attr]


def run_cli(port: int, commands: str, timeout: float = 120.0) -> str:
    """What the stock CLI prints for ``commands`` (its stdout and stderr)."""
    proc = subprocess.run([str(CLI), "--thrift-port", str(port)], input=commands, capture_output=True,
                          text=True, timeout=timeout)
    return proc.stdout + proc.stderr


def run_on(command: list[str], program: Path, commands: str) -> str:
    with switch(command, program) as port:
        return run_cli(port, commands)
