"""p4switch's link-control socket: JSON lines in and out, one-line errors, nothing raised."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.control import ControlClient, ControlError, ControlServer
from p4switch.switch import SwitchError


def _serve(tmp_path: Path, ops: dict) -> ControlServer:
    server = ControlServer(str(tmp_path / "s.ctl"), ops, run_in_loop=lambda fn: fn(), user_errors=(SwitchError,))
    server.start()
    return server


def test_requests_run_their_operation_and_errors_come_back_as_one_line(tmp_path: Path) -> None:
    state: dict[int, int] = {}

    def set_rate(port: int, bps: int) -> None:
        if port != 3:
            raise SwitchError(f"port {port} is not an interface port of this switch (ports: 3)")
        state[port] = bps

    server = _serve(tmp_path, {"set_port_bitrate": set_rate, "port_bitrate": lambda port: state.get(port, 0)})
    client = ControlClient(server.path)
    try:
        assert client.call("set_port_bitrate", port=3, bps=1_000_000) is None
        assert client.call("port_bitrate", port=3) == 1_000_000
        with pytest.raises(ControlError, match="port 7 is not an interface port"):
            client.call("set_port_bitrate", port=7, bps=1)
        with pytest.raises(ControlError, match="unknown op; known: port_bitrate, set_port_bitrate"):
            client.call("reboot")
        with pytest.raises(ControlError, match="unexpected keyword"):
            client.call("port_bitrate", prot=3)
        assert client.call("port_bitrate", port=3) == 1_000_000  # the connection survived the errors
    finally:
        client.close()
        server.stop()
    assert not Path(server.path).exists()


def test_malformed_lines_are_answered_not_fatal(tmp_path: Path) -> None:
    server = _serve(tmp_path, {"ping": lambda: "pong"})
    try:
        assert server.answer(b"not json\n")["ok"] is False
        assert "op" in server.answer(b'{"port": 1}\n')["error"]
        assert server.answer(b'{"op": "ping"}\n') == {"ok": True, "result": "pong"}
    finally:
        server.stop()


def test_a_missing_socket_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ControlError, match="control socket .*nothing.ctl"):
        ControlClient(str(tmp_path / "nothing.ctl"))
