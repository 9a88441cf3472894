"""Egress queue rate and depth through the BMv2 SimpleSwitch Thrift interface.

Why Thrift: P4Runtime cannot set queues (SOURCES.md D); on BMv2 an agent uses the
``simple_switch`` service's ``set_egress_queue_rate`` / ``set_egress_queue_depth``, exactly what
``simple_switch_CLI``'s ``set_queue_rate`` / ``set_queue_depth`` call, and, for one priority queue
of a port (``--priority-queues``), ``set_egress_priority_queue_rate`` / ``_depth``. :class:`QueueClient`
is that client: the agent's one interface to a switch's queues. What it calls is a ``simple_switch``
service, the methods of BMv2's IDL with their arguments as values; three kinds are given to it:

* :func:`connect` -- the generated ``sswitch_runtime`` client (with the per-priority calls of
  ``bmv2_thrift.priority_queues``) over TCP to a switch's Thrift port (p4switch or BMv2; the netns
  binding);
* :func:`direct` -- the switch's own Thrift *handler* (the sim binding: p4switch's
  ``thrift_server.in_process_handler``), called with the values: the same code validates and applies
  each call as behind the Thrift server, without serializing a request and its answer per report;
* :func:`in_process` -- the same generated client over a loopback transport into the switch's
  Thrift processor: the wire encoding and the processor's dispatch in one process (tests of the
  server).

Before any call the client checks each argument the way the wire would take it (an integer in its
Thrift type's range: ``i32``, or ``i64`` for a rate), so a bad value is the same :class:`QueueError`
whichever service is behind it, never a ``struct.error`` out of the encoder.
"""

from __future__ import annotations

import io
import operator
from typing import Any

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException, TException
from thrift.transport import TSocket, TTransport

from bmv2_thrift import priority_queues

__all__ = ["QueueClient", "QueueError", "connect", "direct", "in_process"]

I32 = (-(2**31), 2**31 - 1)
I64 = (-(2**63), 2**63 - 1)


class QueueError(Exception):
    """The switch refused a queue call or could not be reached; the message says which."""


class QueueClient:
    """``set_queue_rate`` / ``set_queue_depth`` of one switch (rates in packets per second): of every
    priority queue of a port (``priority=None``), or of one."""

    def __init__(self, service: Any, where: str, transport: TTransport.TTransportBase | None = None) -> None:
        self._client = service
        self.where = where
        self._transport = transport

    def set_queue_rate(self, port: int, pps: int, priority: int | None = None) -> None:
        if priority is None:
            self._call("set_queue_rate", self._client.set_egress_queue_rate, (port, I32), (pps, I64))
        else:
            self._call("set_queue_rate", self._client.set_egress_priority_queue_rate,
                       (port, I32), (priority, I32), (pps, I64))

    def set_queue_depth(self, port: int, depth: int, priority: int | None = None) -> None:
        if priority is None:
            self._call("set_queue_depth", self._client.set_egress_queue_depth, (port, I32), (depth, I32))
        else:
            self._call("set_queue_depth", self._client.set_egress_priority_queue_depth,
                       (port, I32), (priority, I32), (depth, I32))

    def _call(self, what: str, fn: Any, *typed: tuple[int, tuple[int, int]]) -> None:
        args = []
        for value, bounds in typed:  # a plain int in range as it is (a rate call every few reports)
            args.append(value if type(value) is int and bounds[0] <= value <= bounds[1]
                        else self._wire_value(what, value, bounds))
        try:
            fn(*args)
        except TApplicationException as exc:
            raise QueueError(f"{self.where}: {what} {' '.join(map(str, args))}: {exc.message or exc}") from None
        except (TException, OSError) as exc:
            raise QueueError(f"{self.where}: {what}: {exc}") from None

    def _wire_value(self, what: str, value: Any, bounds: tuple[int, int]) -> int:
        """``value`` as the Thrift encoder would take it (``struct.pack``: anything with ``__index__``)."""
        try:
            v = operator.index(value)
        except TypeError:
            raise QueueError(f"{self.where}: {what}: {value!r} is not an integer") from None
        if not bounds[0] <= v <= bounds[1]:
            kind = "i32" if bounds == I32 else "i64"
            raise QueueError(f"{self.where}: {what}: {v} is out of the range of a Thrift {kind}")
        return v

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def _thrift_client(transport: TTransport.TTransportBase, where: str) -> QueueClient:
    proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport), "simple_switch")
    return QueueClient(priority_queues.Client(proto), where, transport)


def connect(host: str, port: int, timeout_s: float = 5.0) -> QueueClient:
    """A client over TCP to ``host:port`` (the switch's ``--thrift-port``)."""
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_s * 1000)
    transport = TTransport.TBufferedTransport(sock)
    try:
        transport.open()
    except TException as exc:
        raise QueueError(f"Thrift {host}:{port}: cannot connect ({exc})") from None
    return _thrift_client(transport, f"Thrift {host}:{port}")


class _Loopback(TTransport.TTransportBase):
    """A transport whose peer is a Thrift processor in this process."""

    def __init__(self, processor: Any) -> None:
        self._processor = processor
        self._request = io.BytesIO()
        self._response = TTransport.TMemoryBuffer()

    def isOpen(self) -> bool:  # noqa: N802 - Thrift's name
        return True

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def write(self, buf: bytes) -> None:
        self._request.write(buf)

    def flush(self) -> None:
        request = TTransport.TMemoryBuffer(self._request.getvalue())
        self._request = io.BytesIO()
        response = TTransport.TMemoryBuffer()
        self._processor.process(TBinaryProtocol.TBinaryProtocol(request), TBinaryProtocol.TBinaryProtocol(response))
        self._response = TTransport.TMemoryBuffer(response.getvalue())

    def read(self, sz: int) -> bytes:
        return self._response.read(sz)


def in_process(processor: Any, name: str = "switch") -> QueueClient:
    """A client of a switch's own Thrift ``processor`` (anything with Thrift's ``process(iprot, oprot)``;
    the simulator passes p4switch's ``thrift_server.in_process_processor``), in this process."""
    return _thrift_client(_Loopback(processor), f"{name} (in-process Thrift)")


def direct(handler: Any, name: str = "switch") -> QueueClient:
    """A client of a switch's ``simple_switch`` Thrift *handler* (the simulator passes p4switch's
    ``thrift_server.in_process_handler``), called with values: no request or answer is serialized.
    The handler raises the ``TApplicationException`` the server would answer, so errors read the same."""
    return QueueClient(handler, f"{name} (in-process Thrift handler)")
