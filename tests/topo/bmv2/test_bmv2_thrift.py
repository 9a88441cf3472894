"""A simple_switch_grpc without its Thrift server is said in one line (no BMv2 needed).

BMv2 1.15 builds simple_switch_grpc with a Thrift server only when configured ``--with-thrift``;
such a switch accepts ``--thrift-port`` with a warning in its log and never opens the port, while its
gRPC server runs. A fake ``simple_switch_grpc`` on PATH does exactly that (or stays silent, or opens
both ports), and :class:`topo.netns.switches.SwitchProcess` must tell the first two from a switch
that is merely slow, naming ``set_queue_rate`` and ``--with-thrift``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from topo.netns import switches as netns_switches
from topo.netns.plumbing import NetnsError
from topo.netns.switches import NO_THRIFT_LOG, SwitchProcess, SwitchSpec, bmv2_command, free_tcp_port

FAKE = """#!{python}
# A stand-in for simple_switch_grpc: its gRPC port opens; the Thrift port per MODE.
import socket, sys, time
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
thrift = int(args[args.index("--thrift-port") + 1])
grpc = int(args[args.index("--grpc-server-addr") + 1].rsplit(":", 1)[1])
mode = {mode!r}
socks = []
def listen(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(4)
    socks.append(s)
time.sleep(0.2)
listen(grpc)
if mode == "warns":
    with open(log, "a") as f:
        f.write("[12:00:00.000] [bmv2] [W] [thread 1] You used the '--thrift-port' command-line option, but "
                "this target was compiled without Thrift support. You can enable Thrift support (not "
                "recommended) by providing '--with-thrift' to configure.\\n")
elif mode == "both":
    listen(thrift)
time.sleep(60)
"""


def _switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> SwitchProcess:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "simple_switch_grpc"
    fake.write_text(FAKE.format(python=sys.executable, mode=mode))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    spec = SwitchSpec(name="R1", device_id=1, interfaces=[(1, "lo")], grpc_port=free_tcp_port(),
                      thrift_port=free_tcp_port(), log_file=str(tmp_path / "R1.log"))
    return SwitchProcess(spec, bmv2_command(spec), tmp_path)


@pytest.mark.parametrize("mode", ["warns", "silent"])
def test_a_bmv2_without_thrift_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   mode: str) -> None:
    # A silent switch is found out when the grace period ends (short here); one that warns, from its
    # log long before (the grace is a minute: a loaded machine does not stretch the fake's 0.2 s start
    # to that, so an answer before it was read from the log).
    grace = 60.0 if mode == "warns" else 1.5
    monkeypatch.setattr(netns_switches, "THRIFT_GRACE_S", grace)
    sw = _switch(tmp_path, monkeypatch, mode)
    try:
        started = time.monotonic()
        with pytest.raises(NetnsError) as err:
            sw.wait_ready(time.monotonic() + 2 * grace + 30)
        msg = str(err.value)
        assert "\n" not in msg
        assert msg.startswith("switch R1: ") and "no Thrift server" in msg
        assert "set_queue_rate" in msg and "--with-thrift" in msg and "docs/howto/bmv2.md" in msg
        if mode == "warns":  # read from the log, before the grace period is over
            assert NO_THRIFT_LOG in sw.log_text()
            assert time.monotonic() - started < grace
    finally:
        sw.stop()


def test_a_bmv2_with_thrift_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sw = _switch(tmp_path, monkeypatch, "both")
    try:
        sw.wait_ready(time.monotonic() + 30)
        assert sw.proc.poll() is None
    finally:
        sw.stop()


def test_a_switch_that_dies_is_not_taken_for_one_without_thrift(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "simple_switch_grpc"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('bad option', file=sys.stderr)\nsys.exit(3)\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    spec = SwitchSpec(name="R2", device_id=2, interfaces=[(1, "lo")], grpc_port=free_tcp_port(),
                      thrift_port=free_tcp_port(), log_file=str(tmp_path / "R2.log"))
    sw = SwitchProcess(spec, bmv2_command(spec), tmp_path)
    try:
        with pytest.raises(NetnsError, match=r"did not start listening .*exit status 3.*bad option"):
            sw.wait_ready(time.monotonic() + 30)
    finally:
        sw.stop()
