"""p4switch.mininet.P4Switch in a real Mininet (Debian's package), as a P4 lab's script uses it:
the switch runs p4c's JSON, a simple_switch_CLI commands file configures it, hosts ping."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


def _mininet_ready() -> str | None:
    if os.geteuid() != 0:
        return "Mininet needs root"
    if shutil.which("mn") is None:
        return "Debian's mininet package is not installed (apt-get install mininet)"
    if shutil.which("ping") is None:
        return "ping is not installed (apt-get install iputils-ping)"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import mininet.net"], capture_output=True)
    if probe.returncode != 0:
        return "the system python3 cannot import mininet"
    return None


def test_a_mininet_script_runs_p4switch_in_place_of_simple_switch_grpc() -> None:
    reason = _mininet_ready()
    if reason:
        pytest.skip(reason)
    cli = Path(sys.executable).with_name("simple_switch_CLI")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([SYSTEM_PYTHON, str(ROOT / "tests" / "p4switch" / "mininet_script.py"),
                           str(ROOT / "tests" / "fixtures" / "bmv2-json" / "basic_forward.json"),
                           f"{sys.executable} -m p4switch.cli", str(cli)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    subprocess.run(["mn", "-c"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    cmd = out["command"]
    assert cmd[cmd.index("--") + 1:] == ["--grpc-server-addr", "0.0.0.0:50590", "--cpu-port", "none"]
    assert cmd[cmd.index("-i"):cmd.index("-i") + 2] == ["-i", "1@s1-eth1"]
    assert out["cli"].count("Entry has been added") == 2
    assert " 0% packet loss" in out["ping"], out["ping"]
