"""gRPC binding of P4RuntimeCore (``p4.v1.P4Runtime`` over grpcio).

grpcio runs handlers on a thread pool; the core must only be touched from the
switch loop, so every call goes through ``run_in_loop(fn) -> result`` (run fn on
the loop thread, wait, return or re-raise). Each StreamChannel gets an outbound
queue that the core's ``send`` fills (from the loop thread) and the handler
drains; a reader thread feeds inbound messages to the core. Listens only on
the given address (loopback by default), without SO_REUSEPORT: grpcio sets it by
default, and two switches on one port would then share the clients silently; a busy
port is a :class:`ServerBindError` instead.
"""

from __future__ import annotations

import errno
import logging
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from .core import P4RuntimeCore
from .errors import P4RuntimeError

log = logging.getLogger(__name__)
T = TypeVar("T")
_GRPC_CODE = {sc.value[0]: sc for sc in grpc.StatusCode}
_END = object()


class ServerBindError(OSError):
    """The server cannot listen on its address; the message names the address and why."""


class _Abort:
    def __init__(self, err: P4RuntimeError) -> None:
        self.err = err


class SerialCaller:
    """Default ``run_in_loop`` when no switch loop exists: calls under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return fn()


def _fail(context: grpc.ServicerContext, err: P4RuntimeError) -> None:
    """End the RPC with err's code; per-item p4.v1.Error go in grpc-status-details-bin."""
    if err.details:
        status = status_pb2.Status(code=int(err.code), message=err.message)
        for d in err.details:
            packed = any_pb2.Any()
            packed.Pack(d)
            status.details.append(packed)
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(_GRPC_CODE[int(err.code)], err.message)


class _Servicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, server: P4RuntimeServer) -> None:
        self._srv = server
        self._core = server.core

    def _call(self, fn: Callable[[], T], context: grpc.ServicerContext) -> T:
        try:
            return self._srv.run_in_loop(fn)
        except P4RuntimeError as e:
            _fail(context, e)
            raise  # not reached: abort raises
        except Exception as e:  # a bug must not kill the server thread silently
            log.exception("P4Runtime handler failed")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
            raise

    def Capabilities(self, request: pb.CapabilitiesRequest, context: grpc.ServicerContext) -> pb.CapabilitiesResponse:
        return self._call(lambda: self._core.capabilities(request), context)

    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call(lambda: self._core.set_forwarding_pipeline_config(request), context)

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call(lambda: self._core.get_forwarding_pipeline_config(request), context)

    def Write(self, request: pb.WriteRequest, context: grpc.ServicerContext) -> pb.WriteResponse:
        return self._call(lambda: self._core.write(request), context)

    def Read(self, request: pb.ReadRequest, context: grpc.ServicerContext) -> Iterator[pb.ReadResponse]:
        result = self._call(lambda: self._core.read(request), context)
        yield from result.responses
        if result.error is not None:
            _fail(context, result.error)

    def StreamChannel(self, request_iterator: Iterator[pb.StreamMessageRequest],
                      context: grpc.ServicerContext) -> Iterator[pb.StreamMessageResponse]:
        out: queue.Queue = queue.Queue()
        limit = self._srv.max_queue

        def send(msg: pb.StreamMessageResponse) -> None:
            # packet-ins and digests may be dropped for a slow client, arbitration never
            if msg.WhichOneof("update") != "arbitration" and out.qsize() >= limit:
                self._srv.dropped_stream_messages += 1
                return
            out.put(msg)

        session = self._call(lambda: self._core.open_stream(send), context)
        context.add_callback(lambda: out.put(_END))
        reader = threading.Thread(target=self._read_stream, args=(request_iterator, session, out),
                                  name="p4rt-stream-reader", daemon=True)
        reader.start()
        try:
            while True:
                item = out.get()
                if item is _END:
                    return
                if isinstance(item, _Abort):
                    _fail(context, item.err)
                yield item
        finally:
            self._srv.run_in_loop(lambda: self._core.close_stream(session))

    def _read_stream(self, requests: Iterator[pb.StreamMessageRequest], session: Any, out: queue.Queue) -> None:
        """Feed inbound messages to the core. When the client half-closes, the session
        ends and the server finishes the stream, as PI/BMv2 do (p4runtime-shell's
        teardown waits for that)."""
        try:
            for req in requests:
                try:
                    self._srv.run_in_loop(lambda r=req: self._core.stream_message(session, r))
                except P4RuntimeError as e:
                    out.put(_Abort(e))
                    return
        except grpc.RpcError:
            pass  # the client went away
        except Exception:
            log.exception("P4Runtime stream reader failed")
        self._srv.run_in_loop(lambda: self._core.close_stream(session))
        out.put(_END)


class P4RuntimeServer:
    """``start()`` binds and serves; ``stop(grace)`` ends every RPC and stream."""

    def __init__(self, core: P4RuntimeCore, address: str = "127.0.0.1:9559",
                 run_in_loop: Callable[[Callable[[], Any]], Any] | None = None,
                 max_workers: int = 16, max_queue: int = 4096) -> None:
        self.core = core
        self.address = address
        self.run_in_loop = run_in_loop or SerialCaller()
        self.max_workers = max_workers
        self.max_queue = max_queue
        self.dropped_stream_messages = 0
        self.port: int | None = None
        self._server: grpc.Server | None = None

    def start(self) -> int:
        """Start serving; returns the bound port (useful with a ``:0`` address)."""
        if self._server is not None:
            raise RuntimeError("P4Runtime server already started")
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="p4rt"),
                             options=[("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(_Servicer(self), server)
        try:
            port = server.add_insecure_port(self.address)
        except RuntimeError:  # grpcio says only "Failed to bind"; find out why
            port = 0
        if port == 0:
            server.stop(None)
            raise _bind_error(self.address)
        server.start()
        self._server, self.port = server, port
        return port

    def stop(self, grace: float | None = 1.0) -> None:
        if self._server is not None:
            self._server.stop(grace).wait(timeout=(grace or 0) + 5)
            self._server = None


def _bind_error(address: str) -> ServerBindError:
    """Why ``address`` cannot be bound, found by binding it with a plain socket (grpcio's own
    reason only goes to its log). EADDRINUSE is reported as such, with errno set."""
    what = f"P4Runtime server cannot listen on {address}"
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit():
        return ServerBindError(f"{what}: expected HOST:PORT")
    host = host.strip("[]") or "0.0.0.0"
    try:
        infos = socket.getaddrinfo(host, int(port_text), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, OverflowError) as exc:
        return ServerBindError(f"{what}: cannot resolve {host!r}: {getattr(exc, 'strerror', None) or exc}")
    for family, kind, proto, _name, sockaddr in infos:
        try:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC: TIME_WAIT is no conflict
                s.bind(sockaddr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                err = ServerBindError(f"{what}: address already in use (another switch or server listens there)")
                err.errno = errno.EADDRINUSE
                return err
            return ServerBindError(f"{what}: {exc.strerror or exc}")
    return ServerBindError(f"{what}: gRPC could not bind it (GRPC_VERBOSITY=debug shows its reason)")
