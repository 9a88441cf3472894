"""The ``p4switch`` command: clear errors without tracebacks, device configs, clean shutdown."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.cli import main
from p4switch.device import compile_device_config, p4info_mismatch
from tests.switch.netns import REPO, free_tcp_port, wait_tcp

ALINEA = str(Path(REPO) / "p4src" / "alinea.p4")


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4switch.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize(("args", "code", "message"), [
    (["-i", "veth1", ALINEA], 2, "bad interface spec 'veth1': expected <port>@<interface>"),
    (["-i", "600@veth1", ALINEA], 2, "port 600 out of range"),
    ([], 2, "no P4 program"),
    (["--no-p4", ALINEA], 2, "either FILE.p4 or --no-p4"),
    (["/nonexistent/prog.json"], 1, "/nonexistent/prog.json: error: cannot open"),
    (["--cpu-port", "511", ALINEA], 2, "511 is the drop port"),
    (["/nonexistent/x.p4"], 1, "/nonexistent/x.p4: error: cannot open P4 source"),
    (["--no-grpc", "--no-thrift", "-i", "1@p4nosuch0", ALINEA], 1, "interface 'p4nosuch0' does not exist"),
    (["--no-grpc", "--no-thrift", "--cpu-port", "1", "-i", "1@lo", ALINEA], 1, "port 1 is the CPU port"),
])
def test_errors_are_one_clear_message_and_a_nonzero_exit(capsys: pytest.CaptureFixture[str], args: list[str],
                                                        code: int, message: str) -> None:
    try:
        rc = main(args)
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == code
    assert message in err
    assert "Traceback" not in err


def test_p4_errors_point_at_file_line_col(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    source = Path(ALINEA).read_text().replace("hdr.ipv4.ttl - 8w1;", "hdr.ipv4.ttl - nosuch;")
    bad.write_text(source)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "nosuch" in text)
    proc = run_cli("--no-grpc", "--no-thrift", "-I", str(Path(REPO) / "p4src" / "include"), str(bad))
    assert proc.returncode == 1
    assert f"{bad}:{line}:" in proc.stderr and "error: unknown identifier 'nosuch'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_device_config_written_by_the_cli_compiles_to_the_same_p4info(tmp_path: Path) -> None:
    out, info = tmp_path / "build" / "alinea.p4switch.bin", tmp_path / "build" / "alinea.p4info.txtpb"
    assert main(["--device-config", str(out), "--p4info", str(info), ALINEA]) == 0
    written = text_format.Parse(info.read_text(), p4info_pb2.P4Info())
    compiled = compile_device_config(out.read_bytes())
    assert p4info_mismatch(written, compiled.p4info) is None
    assert written.pkg_info.name == "alinea"
    assert b'"' in out.read_bytes().splitlines()[0]  # starts with a line marker: positions survive


def test_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        grpc = run_cli("--no-p4", "--no-thrift", "--grpc-server-addr", f"127.0.0.1:{port}")
        thrift = run_cli("--no-p4", "--no-grpc", "--thrift-port", str(port))
    assert grpc.returncode == 1 and "already in use" in grpc.stderr and "Traceback" not in grpc.stderr
    assert thrift.returncode == 1 and "cannot listen" in thrift.stderr and "Traceback" not in thrift.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_stop_the_switch_cleanly(sig: int) -> None:
    grpc_port, thrift_port = free_tcp_port(), free_tcp_port()
    proc = subprocess.Popen([sys.executable, "-m", "p4switch.cli", "--grpc-server-addr", f"127.0.0.1:{grpc_port}",
                             "--thrift-port", str(thrift_port), ALINEA], cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_tcp(grpc_port, 30) and wait_tcp(thrift_port, 10)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert not wait_tcp(grpc_port, 0.2) and not wait_tcp(thrift_port, 0.2)  # both servers are gone
