"""``hbh params``/``hbh shell --run DIR`` on a run that has ended, and a ``--port`` the switch does not
have: refused from network.json alone, before any connection is attempted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controlplane import params_cli
from hbh.cli import main as hbh_main
from topo.netns.live import LiveError, run_ended, switch_info

PORTS = {"1": {"toward": "H1", "link_rate_bps": 2e6}, "2": {"toward": "R2", "link_rate_bps": 3e6}}


def write_run(tmp_path: Path, runner_pid: int | None) -> Path:
    net = {"runner_pid": runner_pid, "switches": {"R1": {"grpc_addr": "127.0.0.1:1", "device_id": 2,
                                                         "thrift_port": 9091, "ports": PORTS}}}
    (tmp_path / "network.json").write_text(json.dumps(net))
    return tmp_path


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def no_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kw: object) -> None:
        raise AssertionError("connected to a switch")

    monkeypatch.setattr(params_cli, "_connect", refuse)


def test_a_live_runner_is_running_and_a_dead_one_has_ended(tmp_path: Path) -> None:
    run = write_run(tmp_path, os.getpid())
    assert run_ended(run, json.loads((run / "network.json").read_text())) is None
    assert run_ended(run, {"switches": {}}) is None  # no pid recorded: cannot tell, taken as running
    pid = dead_pid()
    assert f"pid {pid}, is gone" in (run_ended(write_run(tmp_path, pid), {"runner_pid": pid}) or "")


def test_a_reused_pid_is_not_the_runner(tmp_path: Path) -> None:
    run = write_run(tmp_path, os.getpid())
    hour_ago = time.time() - 3600  # the file was written before this process started
    os.utime(run / "network.json", (hour_ago, hour_ago))
    assert "is gone" in (run_ended(run, {"runner_pid": os.getpid()}) or "")


def test_written_results_mean_the_run_has_ended(tmp_path: Path) -> None:
    run = write_run(tmp_path, os.getpid())
    (run / "summary.json").write_text("{}")
    assert "results are written" in (run_ended(run, {"runner_pid": os.getpid()}) or "")
    with pytest.raises(LiveError, match="that run has ended"):
        switch_info(run, "R1")


@pytest.mark.parametrize("command", [
    ["params", "set", "--switch", "R1", "--port", "1", "--o-max", "70%"],
    ["params", "show", "--switch", "R1"],
    ["shell", "R1"],
])
def test_commands_on_an_ended_run_say_so_without_connecting(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            no_connection: None, command: list[str]) -> None:
    run = write_run(tmp_path, dead_pid())
    assert hbh_main([*command, "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"--run {run}: that run has ended" in err and len(err.strip().splitlines()) == 1


def test_a_port_the_switch_does_not_have_is_refused_before_connecting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_connection: None) -> None:
    run = write_run(tmp_path, os.getpid())
    assert hbh_main(["params", "set", "--run", str(run), "--switch", "R1", "--port", "7", "--o-max", "70%"]) == 2
    err = capsys.readouterr().err
    assert "--port = 7: switch R1 of run" in err and "1 (toward H1), 2 (toward R2)" in err
    # a port it has goes on to the switch (here the stand-in that refuses connections)
    assert hbh_main(["params", "set", "--run", str(run), "--switch", "R1", "--port", "2", "--o-max", "70%"]) == 1
    assert "connected to a switch" in capsys.readouterr().err
