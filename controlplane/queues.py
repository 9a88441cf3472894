"""Egress queue rate and depth through the BMv2 SimpleSwitch Thrift interface.

Why Thrift: P4Runtime cannot set queues (SOURCES.md D); on BMv2 an agent uses the
``simple_switch`` service's ``set_egress_queue_rate`` / ``set_egress_queue_depth``, exactly what
``simple_switch_CLI``'s ``set_queue_rate`` / ``set_queue_depth`` call, and, for one priority queue
of a port (``--priority-queues``), ``set_egress_priority_queue_rate`` / ``_depth``. :class:`QueueClient`
is that client, built on the generated ``sswitch_runtime`` classes with the per-priority calls of
``bmv2_thrift.priority_queues``, over one of two transports:

* :func:`connect` -- TCP to a switch's Thrift port (p4switch or BMv2; the netns binding);
* :func:`in_process` -- a loopback transport that hands each serialized request to the
  switch's own Thrift processor (the sim binding), so the simulator exercises the same client,
  the same wire encoding and the same server-side checks as a real run.
"""

from __future__ import annotations

import io
from typing import Any

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException, TException
from thrift.transport import TSocket, TTransport

from bmv2_thrift import priority_queues

__all__ = ["QueueClient", "QueueError", "connect", "in_process"]


class QueueError(Exception):
    """The switch refused a queue call or could not be reached; the message says which."""


class QueueClient:
    """``set_queue_rate`` / ``set_queue_depth`` of one switch (rates in packets per second): of every
    priority queue of a port (``priority=None``), or of one."""

    def __init__(self, transport: TTransport.TTransportBase, where: str) -> None:
        self._transport = transport
        self.where = where
        proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport), "simple_switch")
        self._client = priority_queues.Client(proto)

    def set_queue_rate(self, port: int, pps: int, priority: int | None = None) -> None:
        if priority is None:
            self._call("set_queue_rate", self._client.set_egress_queue_rate, port, pps)
        else:
            self._call("set_queue_rate", self._client.set_egress_priority_queue_rate, port, priority, pps)

    def set_queue_depth(self, port: int, depth: int, priority: int | None = None) -> None:
        if priority is None:
            self._call("set_queue_depth", self._client.set_egress_queue_depth, port, depth)
        else:
            self._call("set_queue_depth", self._client.set_egress_priority_queue_depth, port, priority, depth)

    def _call(self, what: str, fn: Any, *args: int) -> None:
        try:
            fn(*args)
        except TApplicationException as exc:
            raise QueueError(f"{self.where}: {what} {' '.join(map(str, args))}: {exc.message or exc}") from None
        except (TException, OSError) as exc:
            raise QueueError(f"{self.where}: {what}: {exc}") from None

    def close(self) -> None:
        self._transport.close()


def connect(host: str, port: int, timeout_s: float = 5.0) -> QueueClient:
    """A client over TCP to ``host:port`` (the switch's ``--thrift-port``)."""
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_s * 1000)
    transport = TTransport.TBufferedTransport(sock)
    try:
        transport.open()
    except TException as exc:
        raise QueueError(f"Thrift {host}:{port}: cannot connect ({exc})") from None
    return QueueClient(transport, f"Thrift {host}:{port}")


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
    return QueueClient(_Loopback(processor), f"{name} (in-process Thrift)")
