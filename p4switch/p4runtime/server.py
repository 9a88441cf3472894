"""gRPC binding of P4RuntimeCore (``p4.v1.P4Runtime`` over grpcio's asyncio server).

Why asyncio: a StreamChannel lives as long as its controller, so a thread per stream (the
synchronous grpcio server's model) lets idle streams exhaust the worker pool until unary
calls hang. Here one thread runs an asyncio loop with the gRPC server; a stream is two
coroutines (a reader that hands inbound messages to the core in batches, and the handler
that sends what the core queued for it), so any number of streams costs no thread and
unary calls are always answered; past ``max_streams`` a new stream is refused with
RESOURCE_EXHAUSTED.

The core must only be touched on the switch loop, so every call goes through
``submit(fn) -> concurrent.futures.Future`` (``RealtimeScheduler.submit``) and is awaited.
Inbound stream messages are read only while the previous batch is being served and at most
``stream_batch`` wait, and HTTP/2 BDP probing is off (the flow-control window stays at its
64 KiB default): a controller flooding PacketOuts is held back by flow control, never
buffered by the thousand. When a stream ends (the client closed it, or died: the kernel
closes its socket), its session is closed at once, so a dead primary's queued messages are
dropped and its election id is free again.

With the compiled front end (the default where the engine has it; ``HBH_P4RT=grpcio`` or
``python`` leave grpcio's server alone: issue 49), the engine's ``P4RuntimeFront`` (tonic,
engine/src/p4rt/p4rtfront.rs) listens on the address instead: it answers Write and Read by handing
the request's bytes to :meth:`P4RuntimeServer.write_bytes` and :meth:`P4RuntimeServer.read_bytes`
on a thread of its own (the core still runs on the switch loop, lent or submitted as here), and
serves StreamChannel itself: a stream's messages come in batches to :meth:`stream_messages`, and
the core sends to the client through the front end's ``StreamSender`` of that stream, with the
same queue limit, batches, lending and session ends as here. It hands Capabilities and the
pipeline RPCs byte for byte to this grpcio server, which then listens on a loopback port only the
front end knows. Why: the grpcio server's cost per RPC was more than a whole one-update Write
costs simple_switch_grpc, a Read handed on through it took about 1 ms, and a PacketOut ->
PacketIn round trip handed on crossed one more gRPC hop (50-100 us).

A stream message that does not parse ends its stream with INVALID_ARGUMENT, on either front end.

Listens only on the given address (loopback by default), without SO_REUSEPORT: grpcio sets
it by default, and two switches on one port would then share the clients silently; a busy
port is a :class:`ServerBindError`, found by a plain socket before gRPC tries (so gRPC
prints no log line of its own).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import logging
import socket
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from runtime import heap
from runtime.sched import NOT_LENT, RealtimeScheduler

from .core import P4RuntimeCore, p4rt_mode
from .errors import Code, P4RuntimeError
from .fast_writes import STORE_MAX_UPDATES

log = logging.getLogger(__name__)
T = TypeVar("T")
_GRPC_CODE = {sc.value[0]: sc for sc in grpc.StatusCode}
_END = object()
Submit = Callable[[Callable[[], Any]], Future]
TryCall = Callable[[Callable[[], Any]], "Future | None"]
#: ``fn()`` run at once on the switch state (its result, its exception raised) or NOT_LENT
TryNow = Callable[[Callable[[], Any]], Any]


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


_MORE = object()
#: the name Python gives the compiled front end's threads (they are the engine's: "Dummy-N" else)
FRONT_THREAD = "p4rt-front"
#: Writes of at most this many updates are applied in one loop call, not sliced: a slice is 2 ms
#: of loop time, and so few updates take well under that, so the Task and shield of a sliced
#: Write would only add hand-offs to the path most controllers use (one update per Write)
WHOLE_WRITE_UPDATES = 16
#: a compiled front end's Write of at most this many bytes is tried in the engine's entry store
#: first (P4RuntimeCore.write_wire), lent like a short Write: applied there, it costs about half a
#: µs an update (a 100-update Write is a few kB)
STORE_WRITE_BYTES = 64 * 1024


def _name_front_thread() -> None:
    """Name the compiled front end's thread calling in (the engine's: "Dummy-N" else), once."""
    me = threading.current_thread()
    if me.name != FRONT_THREAD and isinstance(me, threading._DummyThread):
        me.name = FRONT_THREAD


def _keyed_read(req: pb.ReadRequest) -> bool:
    """A Read of one table entry by its table and match, or of one counter cell: a short call."""
    if len(req.entities) != 1:
        return False
    ent = req.entities[0]
    kind = ent.WhichOneof("entity")
    if kind == "table_entry":
        return bool(ent.table_entry.table_id and ent.table_entry.match)
    if kind == "counter_entry":
        return bool(ent.counter_entry.counter_id and ent.counter_entry.HasField("index"))
    return False


def _parse_stream(raw: list[bytes]) -> tuple[list[pb.StreamMessageRequest], P4RuntimeError | None]:
    """A client's stream messages, up to the first that does not parse, and the error ending the
    stream there (None: all parsed)."""
    out: list[pb.StreamMessageRequest] = []
    for m in raw:
        try:
            out.append(pb.StreamMessageRequest.FromString(m))
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError, or worse
            return out, P4RuntimeError(
                Code.INVALID_ARGUMENT,
                f"StreamChannel: a message of {len(m)} bytes is not a p4.v1.StreamMessageRequest ({e})",
            )
    return out, None


def _serve_batch(
    core: P4RuntimeCore, session: Any, msgs: list[pb.StreamMessageRequest]
) -> P4RuntimeError | None:
    """On the switch loop: the core takes each message; the first refusal ends the stream."""
    for req in msgs:
        try:
            core.stream_message(session, req)
        except P4RuntimeError as e:
            return e
    return None


def _step(steps: Any) -> Any:
    """One slice of a sliced call: ``_MORE`` until the generator returns its result."""
    try:
        next(steps)
    except StopIteration as done:
        return done.value
    return _MORE


def _run_now(fn: Callable[[], Any]) -> Future:
    """``submit`` without a switch loop: the sans-I/O core runs at once, on the caller's thread."""
    future: Future = Future()
    try:
        future.set_result(fn())
    except BaseException as exc:  # handed to the awaiting handler
        future.set_exception(exc)
    return future


def _never_lent(fn: Callable[[], Any]) -> Any:
    """``try_now`` without a switch loop that lends its state."""
    return NOT_LENT


def _try_now_by(try_call: TryCall) -> TryNow:
    """``try_now`` made of a ``try_call`` (a caller that gives only that)."""

    def now(fn: Callable[[], Any]) -> Any:
        future = try_call(fn)
        return NOT_LENT if future is None else future.result()

    return now


def _read_answer(read: Callable[[], Any]) -> tuple[list[bytes], tuple[int, str, bytes] | None] | None:
    """The compiled front end's answer of a Read: ``read()`` gives ``core.read_wire``'s result,
    or NOT_LENT (then None: not answered)."""
    try:
        result = read()
        if result is NOT_LENT:
            return None
    except P4RuntimeError as e:
        return [], (int(e.code), e.message, _status_details(e))
    except Exception as e:  # noqa: BLE001 - a bug must not kill the server silently
        log.exception("P4Runtime handler failed")
        return [], (
            int(grpc.StatusCode.INTERNAL.value[0]),
            f"internal error: {type(e).__name__}: {e}",
            b"",
        )
    err = result.error
    return result.responses, None if err is None else (int(err.code), err.message, _status_details(err))


def _status_details(err: P4RuntimeError) -> bytes:
    """grpc-status-details-bin of ``err``: a google.rpc.Status with its p4.v1.Error details (b"": none)."""
    if not err.details:
        return b""
    status = status_pb2.Status(code=int(err.code), message=err.message)
    for d in err.details:
        packed = any_pb2.Any()
        packed.Pack(d)
        status.details.append(packed)
    return status.SerializeToString()


async def _fail(context: grpc.aio.ServicerContext, err: P4RuntimeError) -> None:
    """End the RPC with err's code; per-item p4.v1.Error go in grpc-status-details-bin."""
    details = _status_details(err)
    if details:
        context.set_trailing_metadata((("grpc-status-details-bin", details),))
    await context.abort(_GRPC_CODE[int(err.code)], err.message)


class _Servicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, server: P4RuntimeServer) -> None:
        self._srv = server
        self._core = server.core

    async def _call(self, fn: Callable[[], T], context: grpc.aio.ServicerContext, lend: bool = False) -> T:
        try:
            result = await self._srv.run(fn, lend)
            while result is _MORE:  # a sliced Write: the next slice in a later loop turn
                result = await self._srv.run(fn, lend)
            return result
        except P4RuntimeError as e:
            await _fail(context, e)
            raise  # not reached: abort raises
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug must not kill the server silently
            if isinstance(e, grpc.aio.AbortError):
                raise
            log.exception("P4Runtime handler failed")
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
            raise

    async def Capabilities(self, request: pb.CapabilitiesRequest, context: Any) -> pb.CapabilitiesResponse:
        """Answered here: it reads no switch state, so a busy switch loop does not delay it."""
        return self._core.capabilities(request)

    async def SetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        async with self._srv.write_lock:
            return await self._call(lambda: self._core.set_forwarding_pipeline_config(request), context)

    async def GetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        return await self._call(lambda: self._core.get_forwarding_pipeline_config(request), context)

    async def Write(self, request: pb.WriteRequest, context: Any) -> pb.WriteResponse:
        """Run in slices of ``write_slice_ns`` of loop time, one slice per loop turn, so the
        ports are served in between; Writes and pipeline changes run one at a time."""
        async with self._srv.write_lock:
            if len(request.updates) <= WHOLE_WRITE_UPDATES:  # one loop call, nothing to shield
                return await self._call(lambda: self._core.write(request), context, lend=True)
            steps = self._core.write_steps(request, self._srv.write_slice_ns)
            # shielded: a client that gives up mid-batch does not leave it half applied; the
            # collector off meanwhile, as its full passes would walk the batch (runtime/heap.py)
            with heap.collector_paused():
                drive = asyncio.ensure_future(self._call(lambda: _step(steps), context))
                try:
                    return await asyncio.shield(drive)
                except asyncio.CancelledError:
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await drive
                    raise

    async def Read(self, request: pb.ReadRequest, context: Any) -> AsyncIterator[bytes]:
        result = await self._call(lambda: self._core.read_wire(request), context)
        for response in result.responses:
            yield response
        if result.error is not None:
            await _fail(context, result.error)

    async def StreamChannel(
        self, request_iterator: AsyncIterator[pb.StreamMessageRequest], context: Any
    ) -> AsyncIterator[pb.StreamMessageResponse]:
        srv = self._srv
        if srv.open_streams >= srv.max_streams:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many open StreamChannels ({srv.open_streams}; at most {srv.max_streams})",
            )
        srv.open_streams += 1
        try:
            outbox = _Outbox(asyncio.get_running_loop(), srv)
            session = await self._call(lambda: self._core.open_stream(outbox.send, wire=True), context)
            reader = asyncio.create_task(self._read_stream(request_iterator, session, outbox))
            try:
                async for item in outbox.items():
                    if isinstance(item, _Abort):
                        await _fail(context, item.err)
                    yield item
            finally:
                reader.cancel()
                outbox.closed = True
                srv.submit(lambda: self._core.close_stream(session))  # at once: frees a dead primary's id
        finally:
            srv.open_streams -= 1

    async def _read_stream(self, requests: AsyncIterator[bytes], session: Any, outbox: _Outbox) -> None:
        """Hand inbound messages (their bytes: one that does not parse ends the stream, after
        those before it) to the core, a batch per switch-loop call. When the client
        half-closes, the session ends and the server finishes the stream, as PI/BMv2 do
        (p4runtime-shell's teardown waits for that)."""
        inbox: asyncio.Queue = asyncio.Queue(maxsize=self._srv.stream_batch)
        feeder = asyncio.create_task(self._feed(inbox, session, outbox))
        try:
            async for req in requests:
                await inbox.put(req)
                if feeder.done():
                    break
        except (grpc.RpcError, asyncio.CancelledError):
            feeder.cancel()
            raise
        except grpc.aio.AbortError:  # the handler ended the stream with an error: nothing more to read
            feeder.cancel()
            return
        except Exception:
            log.exception("P4Runtime stream reader failed")
        if not feeder.done():
            await inbox.put(_END)
            await feeder

    async def _feed(self, inbox: asyncio.Queue, session: Any, outbox: _Outbox) -> None:
        while True:
            batch = [await inbox.get()]
            while not inbox.empty() and len(batch) < self._srv.stream_batch:
                batch.append(inbox.get_nowait())
            ended = batch[-1] is _END
            msgs, err = _parse_stream(batch[:-1] if ended else batch)
            if msgs:
                served = await self._srv.run(
                    lambda m=msgs: _serve_batch(self._core, session, m), lend=len(msgs) == 1
                )
                err = served or err
            if err is not None:
                outbox.put(_Abort(err))
                return
            if ended:
                await self._srv.run(lambda: self._core.close_stream(session))
                outbox.put(_END)
                return


_GONE = object()


class _FrontStream:
    """A compiled front end's stream: its core session (a handle the front end keeps)."""

    __slots__ = ("session",)

    def __init__(self, session: Any) -> None:
        self.session = session


class _Outbox:
    """What the core sends to one stream: ``send`` may be called from any thread (the switch
    loop); items are queued on the asyncio loop. Packet-ins and digests beyond ``max_queue``
    are dropped for a client that does not read, arbitration updates never."""

    def __init__(self, loop: asyncio.AbstractEventLoop, server: P4RuntimeServer) -> None:
        self._loop = loop
        self._srv = server
        self._queue: collections.deque = collections.deque()
        self._ready = asyncio.Event()
        self.closed = False

    def send(self, msg: pb.StreamMessageResponse | bytes) -> None:
        if self.closed:
            return
        try:
            self._loop.call_soon_threadsafe(self.put, msg)
        except RuntimeError:  # the server's loop is closed: the stream is gone
            self.closed = True

    def put(self, item: Any) -> None:
        droppable = isinstance(item, bytes) or (
            isinstance(item, pb.StreamMessageResponse) and item.WhichOneof("update") != "arbitration"
        )
        if droppable and len(self._queue) >= self._srv.max_queue:  # bytes: a packet-in (wire_encode)
            self._srv._dropped += 1
            return
        self._queue.append(item)
        self._ready.set()

    async def items(self) -> AsyncIterator[Any]:
        """Queued items until _END."""
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            item = self._queue.popleft()
            if item is _END:
                return
            yield item


class P4RuntimeServer:
    """``start()`` binds and serves on a thread of its own; ``stop(grace)`` ends every RPC and stream.

    ``submit`` runs a callable on the switch loop and returns a Future
    (``RealtimeScheduler.submit``); ``run_in_loop`` (a blocking call, kept for callers that
    have only that) is run on a small thread pool instead; with neither, the core is called
    directly on the server's thread.
    """

    def __init__(
        self,
        core: P4RuntimeCore,
        address: str = "127.0.0.1:9559",
        run_in_loop: Callable[[Callable[[], Any]], Any] | None = None,
        submit: Submit | None = None,
        try_call: TryCall | None = None,
        try_now: TryNow | None = None,
        max_streams: int = 1024,
        max_queue: int = 4096,
        stream_batch: int = 64,
        write_slice_ns: int = 2_000_000,
        front: str | None = None,
    ) -> None:
        self.core = core
        self.front = front_kind(front)
        self._front: Any = None  # hbh_engine.P4RuntimeFront while it serves
        self.backend_port: int | None = None  # the grpcio server's own port behind the front end
        #: the compiled front end's StreamChannels: handle -> None while open (stream_open/close)
        self.front_streams: dict[_FrontStream, None] = {}
        self._front_lock = threading.Lock()
        self.address = address
        self._pool: ThreadPoolExecutor | None = None
        if submit is None and run_in_loop is not None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="p4rt-call")
            pool, blocking = self._pool, run_in_loop
            submit = lambda fn: pool.submit(blocking, fn)  # noqa: E731
        self.submit: Submit = submit or _run_now
        self.try_call: TryCall = try_call or (lambda fn: None)
        #: ``try_call`` answered on the spot, without a Future (``RealtimeScheduler.try_now``)
        self.try_now: TryNow = try_now or (_try_now_by(try_call) if try_call is not None else _never_lent)
        self.max_streams = max_streams
        self.max_queue = max_queue
        self.stream_batch = stream_batch
        self.open_streams = 0
        self.write_slice_ns = write_slice_ns
        self.write_lock = asyncio.Lock()
        self._dropped = 0
        self._front_dropped = 0  # counted by a stopped front end
        self.port: int | None = None
        self._server: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def run(self, fn: Callable[[], T], lend: bool = False) -> T:
        """``fn()`` on the switch state, handed to the switch loop (``submit``) and awaited; with
        ``lend``, at once on this thread if the loop sleeps (``try_call``: no thread hand-off).

        Only short calls are lent (a Write of a few updates, one stream message): while this
        thread runs a long one, a loop woken by a frame would first wait for the GIL held here
        (up to the 5 ms switch interval each time) and then for the call, where on its own
        thread it simply serves the frame after the call; a 10,000-update Write run lent, slice
        after slice, stalled forwarding for 20 ms in the soak benchmark."""
        out = self.try_now(fn) if lend else NOT_LENT
        if out is NOT_LENT:
            return await asyncio.wrap_future(self.submit(fn))
        return out

    def start(self) -> int:
        """Start serving; returns the bound port (useful with a ``:0`` address)."""
        if self._server is not None:
            raise RuntimeError("P4Runtime server already started")
        problem = _bind_problem(self.address)
        if problem is not None:
            raise problem
        compiled = self.front == "compiled"
        listen = "127.0.0.1:0" if compiled else self.address
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="p4rt-grpc", daemon=True)
        thread.start()
        front = server = None
        try:
            server, port = asyncio.run_coroutine_threadsafe(self._serve(listen), loop).result(timeout=30)
            if compiled:
                import hbh_engine

                self.backend_port = port
                front = hbh_engine.P4RuntimeFront(
                    _numeric_address(self.address),
                    f"127.0.0.1:{port}",
                    self.write_bytes,
                    self.read_bytes,
                    self,
                    self.stream_batch,
                    self.write_now,
                    self.read_now,
                    *((self._native_parts(),) if hasattr(hbh_engine.P4RuntimeFront, "native_answers") else ()),
                )
                port = front.start()
        except BaseException:
            if server is not None:  # the front end could not start: nothing serves
                asyncio.run_coroutine_threadsafe(server.stop(None), loop).result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            loop.close()
            raise
        self._server, self.port, self._loop, self._thread, self._front = server, port, loop, thread, front
        return port

    def _native_parts(self) -> tuple | None:
        """What the compiled front end reads to answer a Write the entry store takes, or a Read of
        one entry by its key, on its own thread with no Python run (engine/src/p4rt/p4rtnative.rs:
        :meth:`write_now`'s and :meth:`read_now`'s steps, ``RealtimeScheduler.try_now``'s lend, the
        core's ``write_wire`` and ``read_keyed_wire``); None where ``try_now`` is not a
        RealtimeScheduler's own, whose lend it follows. Why: handed to the front end's caller
        thread and back, a one-update Write crossed two thread wake-ups and took the GIL for a
        few µs of Python around an engine call (3.3 context switches and 78 µs of the server's
        CPU per Write, simple_switch_grpc's performance build 1.0 and 33)."""
        sched = getattr(self.try_now, "__self__", None)
        if not isinstance(sched, RealtimeScheduler) or getattr(self.try_now, "__func__", None) \
                is not RealtimeScheduler.try_now:
            return None
        return (sched, self.core, STORE_WRITE_BYTES, STORE_MAX_UPDATES, self._native_failed)

    @staticmethod
    def _native_failed(exc: BaseException) -> tuple[int, str, bytes]:
        """A failure inside the engine's entry store during a Write the compiled front end
        answered itself: logged, and answered as :meth:`write_now` answers it."""
        log.error("P4Runtime handler failed", exc_info=exc)
        return (int(grpc.StatusCode.INTERNAL.value[0]), f"internal error: {type(exc).__name__}: {exc}", b"")

    def write_bytes(self, raw: bytes) -> bytes | tuple[int, str, bytes]:
        """A Write for the compiled front end, on one of its threads: the response's bytes, or
        ``(code, message, grpc-status-details-bin)``. The same steps as the grpcio Write (lent
        or submitted to the switch loop, sliced past WHOLE_WRITE_UPDATES); the front end runs
        Writes and pipeline changes one at a time, and finishes a Write whose client left."""
        _name_front_thread()
        if len(raw) <= STORE_WRITE_BYTES:  # the engine's entry store first: no message at all
            try:
                out = self._wait(lambda: self.core.write_wire(raw), lend=True)
            except Exception as e:  # noqa: BLE001 - a bug must not kill the server silently
                log.exception("P4Runtime handler failed")
                return (
                    int(grpc.StatusCode.INTERNAL.value[0]),
                    f"internal error: {type(e).__name__}: {e}",
                    b"",
                )
            if out is not None:
                return out
        try:
            req = pb.WriteRequest.FromString(raw)
        except Exception:  # noqa: BLE001 - what grpcio answers a request it cannot parse
            return (int(grpc.StatusCode.INTERNAL.value[0]), "Exception deserializing request!", b"")
        try:
            if len(req.updates) <= WHOLE_WRITE_UPDATES:
                resp = self._wait(lambda: self.core.write(req, raw), lend=True)
            else:
                steps = self.core.write_steps(req, self.write_slice_ns, raw)
                with heap.collector_paused():
                    resp = self._wait(lambda: _step(steps))
                    while resp is _MORE:
                        resp = self._wait(lambda: _step(steps))
            return resp.SerializeToString()
        except P4RuntimeError as e:
            return (int(e.code), e.message, _status_details(e))
        except Exception as e:  # noqa: BLE001 - a bug must not kill the server silently
            log.exception("P4Runtime handler failed")
            return (int(grpc.StatusCode.INTERNAL.value[0]), f"internal error: {type(e).__name__}: {e}", b"")

    def write_now(self, raw: bytes) -> bytes | tuple[int, str, bytes] | None:
        """A Write for the compiled front end, on its own thread, where no other Write is under way:
        answered at once (as :meth:`write_bytes`) when the engine's entry store takes it whole and
        the switch loop lends its state; None, with nothing changed, for :meth:`write_bytes`.
        Why: handed to the switch loop, a one-update Write crossed two more thread wake-ups (the
        front end calls this on its caller thread, which runs one such call at a time)."""
        if len(raw) > STORE_WRITE_BYTES:
            return None
        _name_front_thread()
        core = self.core
        try:
            out = self.try_now(lambda: core.write_wire(raw))
            return None if out is NOT_LENT else out
        except Exception as e:  # noqa: BLE001 - a bug must not kill the server silently
            log.exception("P4Runtime handler failed")
            return (int(grpc.StatusCode.INTERNAL.value[0]), f"internal error: {type(e).__name__}: {e}", b"")

    def read_now(self, raw: bytes) -> tuple[list[bytes], tuple[int, str, bytes] | None] | None:
        """A Read of one entry or cell by its key for the compiled front end, on its own thread:
        answered at once (as :meth:`read_bytes`) when the switch loop lends its state; None for
        :meth:`read_bytes`. One table entry by its key is answered by the engine's entry store
        first (``core.read_keyed_wire``: no message parsed, no entry looked up in Python)."""
        _name_front_thread()
        core = self.core
        try:
            out = self.try_now(lambda: core.read_keyed_wire(raw))
        except Exception:  # noqa: BLE001 - a bug there must not cost the answer: the path below gives it
            log.exception("P4Runtime keyed Read in the engine failed")
            out = None
        if out is NOT_LENT:
            return None
        if out is not None:
            return [out], None
        try:
            req = pb.ReadRequest.FromString(raw)
        except Exception:  # noqa: BLE001 - read_bytes answers it
            return None
        if not _keyed_read(req):
            return None
        return _read_answer(lambda: self.try_now(lambda: core.read_wire(req)))

    def read_bytes(self, raw: bytes) -> tuple[list[bytes], tuple[int, str, bytes] | None]:
        """A Read for the compiled front end, on one of its threads: the responses' bytes, and
        None or the ``(code, message, grpc-status-details-bin)`` the stream ends with after them
        (the grpcio Read's answer). A Read of one entry or cell by its key is lent (:meth:`run`):
        short, and two thread hand-offs were most of its time; any other goes to the switch loop."""
        _name_front_thread()
        try:
            req = pb.ReadRequest.FromString(raw)
        except Exception as e:  # noqa: BLE001 - what the grpcio server answers a Read it cannot parse
            return [], (int(grpc.StatusCode.UNKNOWN.value[0]), f"Unexpected {type(e)}: {e}", b"")
        answer = None
        if _keyed_read(req):
            answer = _read_answer(lambda: self.try_now(lambda: self.core.read_wire(req)))
        if answer is None:
            answer = _read_answer(lambda: self.submit(lambda: self.core.read_wire(req)).result())
        assert answer is not None
        return answer

    @property
    def dropped_stream_messages(self) -> int:
        """Packet-ins and digest lists dropped for stream clients that did not read them."""
        front = self._front
        return self._dropped + self._front_dropped + (front.dropped if front is not None else 0)

    # The compiled front end's StreamChannels (engine/src/p4rt/p4rtfront.rs), each call on one of its
    # threads: the same steps as _Servicer.StreamChannel's.

    def stream_open(self, sender: Any) -> _FrontStream | tuple[int, str, bytes]:
        """A new stream: its handle, or the status refusing it. The core sends to the client
        through ``sender`` (an ``hbh_engine.StreamSender``, from any thread)."""
        _name_front_thread()
        with self._front_lock:
            if self.open_streams >= self.max_streams:
                return (
                    int(Code.RESOURCE_EXHAUSTED),
                    f"too many open StreamChannels ({self.open_streams}; at most {self.max_streams})",
                    b"",
                )
            self.open_streams += 1
        sender.max_queue = self.max_queue
        try:
            session = self._wait(lambda: self.core.open_stream(sender.send, wire=True), lend=True)
        except Exception as e:  # noqa: BLE001 - a bug must not kill the server silently
            with self._front_lock:
                self.open_streams -= 1
            log.exception("P4Runtime handler failed")
            return (int(Code.INTERNAL), f"internal error: {type(e).__name__}: {e}", b"")
        handle = _FrontStream(session)
        with self._front_lock:
            self.front_streams[handle] = None
        return handle

    def stream_messages(self, handle: _FrontStream, raw: list[bytes]) -> tuple[int, str, bytes] | None:
        """A batch of a stream's messages, served on the switch loop (lent if just one); None, or
        the status ending the stream (the first refusal, or a message that does not parse)."""
        _name_front_thread()
        msgs, err = _parse_stream(raw)
        try:
            if msgs:
                err = (
                    self._wait(lambda: _serve_batch(self.core, handle.session, msgs), lend=len(msgs) == 1)
                    or err
                )
        except Exception as e:  # noqa: BLE001 - a bug must not kill the server silently
            log.exception("P4Runtime stream handler failed")
            return (int(Code.INTERNAL), f"internal error: {type(e).__name__}: {e}", b"")
        return None if err is None else (int(err.code), err.message, _status_details(err))

    def stream_end(self, handle: _FrontStream) -> None:
        """The client half-closed and its messages are served: its session ends, then its stream."""
        self._wait(lambda: self.core.close_stream(handle.session))

    def stream_close(self, handle: _FrontStream) -> None:
        """The stream is over, however it ended (once per stream): its session ends now, so a
        dead primary's queued messages are dropped and its election id is free again."""
        with self._front_lock:
            if self.front_streams.pop(handle, _GONE) is _GONE:
                return
            self.open_streams -= 1
        self.submit(lambda: self.core.close_stream(handle.session))

    def _wait(self, fn: Callable[[], T], lend: bool = False) -> T:
        """:meth:`run` for a thread that may block: ``fn()`` on the switch state, its result."""
        out = self.try_now(fn) if lend else NOT_LENT
        return self.submit(fn).result() if out is NOT_LENT else out

    async def _serve(self, address: str) -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0), ("grpc.http2.bdp_probe", 0)])
        servicer = _Servicer(self)
        # one handler for the whole service, with the serialisers the servicer needs: Read's answers
        # and packet-ins come as wire bytes (wire_encode.py). Not the generated stub's own handlers:
        # registered method handlers win over generic ones, and theirs serialise messages only.
        unary, msg = grpc.unary_unary_rpc_method_handler, (lambda m: m.SerializeToString())
        handlers = {
            "Write": unary(servicer.Write, pb.WriteRequest.FromString, msg),
            "Read": grpc.unary_stream_rpc_method_handler(servicer.Read, pb.ReadRequest.FromString, bytes),
            "SetForwardingPipelineConfig": unary(
                servicer.SetForwardingPipelineConfig, pb.SetForwardingPipelineConfigRequest.FromString, msg
            ),
            "GetForwardingPipelineConfig": unary(
                servicer.GetForwardingPipelineConfig, pb.GetForwardingPipelineConfigRequest.FromString, msg
            ),
            "StreamChannel": grpc.stream_stream_rpc_method_handler(
                servicer.StreamChannel, None, _stream_bytes
            ),
            "Capabilities": unary(servicer.Capabilities, pb.CapabilitiesRequest.FromString, msg),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("p4.v1.P4Runtime", handlers),))
        try:
            port = server.add_insecure_port(address)
        except RuntimeError:  # grpcio says only "Failed to bind"; find out why
            port = 0
        if port == 0:
            await server.stop(None)
            raise _bind_problem(address) or ServerBindError(
                f"P4Runtime server cannot listen on {address}: gRPC could not bind it "
                "(GRPC_VERBOSITY=debug shows its reason)"
            )
        await server.start()
        return server, port

    def stop(self, grace: float | None = 1.0) -> None:
        server, loop, thread = self._server, self._loop, self._thread
        if server is None or loop is None or thread is None:
            return
        self._server = None
        front = self._front
        if front is not None:  # first: it ends the calls it hands on
            front.stop()
            self._front, self._front_dropped = None, self._front_dropped + front.dropped
            for handle in list(self.front_streams):  # any its stopped runtime could not close
                self.stream_close(handle)
        try:
            asyncio.run_coroutine_threadsafe(server.stop(grace), loop).result(timeout=(grace or 0) + 5)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            if not thread.is_alive():
                loop.close()
            if self._pool is not None:
                self._pool.shutdown(wait=False)


def front_kind(front: str | None) -> str:
    """``"compiled"`` or ``"python"`` (grpcio's server alone): the front end a P4RuntimeServer
    gets. None: the compiled one when the engine has it, unless ``HBH_P4RT`` is ``grpcio`` or
    ``python``; ``HBH_P4RT=compiled`` insists on it (an engine without it is then an error)."""
    if front is None:
        mode = p4rt_mode()
        if mode not in ("", "compiled", "grpcio", "python"):
            raise ValueError(f"HBH_P4RT={mode!r}: expected 'compiled', 'grpcio' or 'python' (or unset)")
        if mode == "":
            try:
                import hbh_engine
            except ImportError:  # no engine at all: grpcio's server
                hbh_engine = None
            mode = "compiled" if hasattr(hbh_engine, "P4RuntimeFront") else "grpcio"
        front = "compiled" if mode == "compiled" else "python"
    if front not in ("compiled", "python"):
        raise ValueError(f"P4Runtime front end {front!r}: expected 'compiled' or 'python'")
    if front == "compiled":
        import hbh_engine

        if not hasattr(hbh_engine, "P4RuntimeFront"):
            raise RuntimeError(
                "the compiled P4Runtime front end needs an engine built with it: run make engine"
            )
    return front


def _numeric_address(address: str) -> str:
    """``address`` with its host resolved (the front end binds a numeric address), as
    grpcio would bind its first address: ``localhost:9559`` -> ``127.0.0.1:9559``."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family, _kind, _proto, _name, sockaddr = socket.getaddrinfo(
        host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    ip = sockaddr[0]
    return f"[{ip}]:{sockaddr[1]}" if family == socket.AF_INET6 else f"{ip}:{sockaddr[1]}"


def _stream_bytes(msg: pb.StreamMessageResponse | bytes) -> bytes:
    return msg if isinstance(msg, bytes) else msg.SerializeToString()


def _bind_problem(address: str) -> ServerBindError | None:
    """Why ``address`` cannot be bound, found by binding it with a plain socket (grpcio's own
    reason only goes to its log); None when it can be. EADDRINUSE is reported as such, with
    errno set."""
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
                err = ServerBindError(
                    f"{what}: address already in use (another switch or server listens there)"
                )
                err.errno = errno.EADDRINUSE
                return err
            return ServerBindError(f"{what}: {exc.strerror or exc}")
    return None
