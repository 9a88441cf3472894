"""``p4switch`` started on a busy P4Runtime address says so in one line (issue 9, item 7)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_address_in_use_is_one_clean_line_without_grpc_log() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "p4switch.cli", "--no-p4", "--no-thrift",
                               "--grpc-server-addr", f"127.0.0.1:{port}"],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1
    assert len(lines) == 1, proc.stderr
    assert "already in use" in lines[0] and f"127.0.0.1:{port}" in lines[0]
