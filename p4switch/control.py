"""p4switch's link-control socket: what an emulated network changes at run time.

Why: p4switch models each AF_PACKET port's wire (``--port-bitrate``, ``--port-delay``), which
BMv2 does not have, so neither P4Runtime nor BMv2's Thrift IDL can change it. An experiment
that drops a link's capacity mid-run (``topo/capacity-drop.yaml``) needs exactly that, and its
recorder needs the traffic manager's tail drops, which no P4 counter sees. This is a p4switch
extension (docs/reference/p4switch.md), off unless ``--control-socket PATH`` is given: a Unix stream
socket, one JSON object per line each way.

Requests and answers::

    {"op": "set_port_bitrate", "port": 3, "bps": 1000000}  -> {"ok": true, "result": null}
    {"op": "port_bitrate", "port": 3}                        -> {"ok": true, "result": 1000000}
    {"op": "egress_drops"}                                   -> {"ok": true, "result": {"3": 12}}
    {"op": "link_lost"}                                      -> {"ok": true, "result": {"3": 4}}
    {"op": "queues"}                                         -> {"ok": true, "result": {"3": [17, 40, 12]}}
    anything wrong                                           -> {"ok": false, "error": "one line"}

The server thread only decodes; every operation runs on the switch loop (``run_in_loop``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["ControlError", "ControlServer", "ControlClient"]

MAX_LINE = 64 * 1024
Operation = Callable[..., Any]


class ControlError(Exception):
    """A request the switch refused, or a socket that does not answer; the message says why."""


class ControlServer:
    """Serve ``ops`` (name -> function of the request's other keys) on a Unix socket."""

    def __init__(self, path: str, ops: dict[str, Operation], run_in_loop: Callable[[Callable[[], Any]], Any],
                 user_errors: tuple[type[Exception], ...] = ()) -> None:
        self.path = path
        self.ops = ops
        self.run_in_loop = run_in_loop
        self.user_errors = (ControlError, ValueError, TypeError, *user_errors)
        self._sock: socket.socket | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self.path)
            sock.listen(8)
        except OSError:
            sock.close()
            raise
        self._sock = sock
        threading.Thread(target=self._accept, name="p4switch-control", daemon=True).start()

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="p4switch-control-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as f:
            while not self._stop.is_set():
                line = f.readline(MAX_LINE)
                if not line:
                    return
                f.write(json.dumps(self.answer(line)).encode() + b"\n")
                f.flush()

    def answer(self, line: bytes) -> dict[str, Any]:
        """One request line -> one answer (never raises)."""
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not isinstance(req.get("op"), str):
                raise ControlError('a request is a JSON object with an "op" string')
            op = self.ops.get(req.pop("op"))
            if op is None:
                raise ControlError(f"unknown op; known: {', '.join(sorted(self.ops))}")
            return {"ok": True, "result": self.run_in_loop(lambda: op(**req))}
        except self.user_errors as exc:
            return {"ok": False, "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
        except Exception as exc:  # noqa: BLE001 - the client gets one line; the log gets the rest
            log.exception("control request failed")
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)


class ControlClient:
    """The runner's side: one connection, one request at a time."""

    def __init__(self, path: str, timeout_s: float = 5.0) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout_s)
        try:
            self._sock.connect(path)
        except OSError as exc:
            self._sock.close()
            raise ControlError(f"control socket {path}: {exc.strerror or exc}") from None
        self._file = self._sock.makefile("rwb")

    def call(self, op: str, **args: Any) -> Any:
        try:
            self._file.write(json.dumps({"op": op, **args}).encode() + b"\n")
            self._file.flush()
            line = self._file.readline(MAX_LINE)
        except OSError as exc:
            raise ControlError(f"control socket {self.path}: {exc}") from None
        if not line:
            raise ControlError(f"control socket {self.path}: the switch closed the connection")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ControlError(f"{op}: {answer.get('error')}")
        return answer.get("result")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self._sock.close()


def control_call(path: str, op: str, **args: Any) -> Any:
    """One request on a fresh connection (for callers that ask now and then)."""
    client = ControlClient(path)
    try:
        return client.call(op, **args)
    finally:
        client.close()
