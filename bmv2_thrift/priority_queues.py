"""simple_switch's per-priority queue calls over Thrift, which the pinned ``sswitch_runtime`` lacks.

Why: BMv2 gives every egress port up to 8 strict-priority queues (``--priority-queues``), each
with its own rate and depth, set by two methods of the ``simple_switch`` service that came after
the generated package pinned in requirements.lock (IDL facts from behavioral-model's
targets/simple_switch/thrift/simple_switch.thrift)::

    i32 set_egress_priority_queue_depth(1:i32 port_num, 2:i32 priority, 3:i32 depth_pkts);
    i32 set_egress_priority_queue_rate(1:i32 port_num, 2:i32 priority, 3:i64 rate_pps);

Neither declares an exception. This module writes and reads exactly those messages with the
``thrift`` library's protocol primitives: :class:`Client` is ``SimpleSwitch.Client`` plus the
two calls (what the agents use, so a real simple_switch accepts them), :class:`Processor` is
``SimpleSwitch.Processor`` plus their dispatch to the handler's methods of the same names (what
p4switch serves). It is a package of its own because both the server (``p4switch``) and the
client (``controlplane``) need it and neither may import the other (docs/architecture.md).
"""

from __future__ import annotations

import logging
from typing import Any

from sswitch_runtime import SimpleSwitch
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TTransport

__all__ = ["METHODS", "Client", "Processor", "write_args", "read_args"]

log = logging.getLogger(__name__)

#: method -> its arguments (name, Thrift type), field ids 1, 2, 3 in this order; each returns i32.
METHODS: dict[str, tuple[tuple[str, int], ...]] = {
    "set_egress_priority_queue_depth": (("port_num", TType.I32), ("priority", TType.I32), ("depth_pkts", TType.I32)),
    "set_egress_priority_queue_rate": (("port_num", TType.I32), ("priority", TType.I32), ("rate_pps", TType.I64)),
}
_SUCCESS_ID = 0  # a result struct's field 0 holds the return value


def _write_value(oprot: Any, ttype: int, value: int) -> None:
    (oprot.writeI64 if ttype == TType.I64 else oprot.writeI32)(value)


def _read_value(iprot: Any, ttype: int) -> int:
    return iprot.readI64() if ttype == TType.I64 else iprot.readI32()


def write_args(oprot: Any, method: str, values: tuple[int, ...]) -> None:
    """The ``<method>_args`` struct."""
    oprot.writeStructBegin(f"{method}_args")
    for fid, ((name, ttype), value) in enumerate(zip(METHODS[method], values, strict=True), start=1):
        oprot.writeFieldBegin(name, ttype, fid)
        _write_value(oprot, ttype, value)
        oprot.writeFieldEnd()
    oprot.writeFieldStop()
    oprot.writeStructEnd()


def read_args(iprot: Any, method: str) -> tuple[int | None, ...]:
    """The ``<method>_args`` struct; a field that is missing or of another type is None (skipped),
    as generated code leaves it."""
    fields = METHODS[method]
    values: list[int | None] = [None] * len(fields)
    iprot.readStructBegin()
    while True:
        _name, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        if 1 <= fid <= len(fields) and ftype == fields[fid - 1][1]:
            values[fid - 1] = _read_value(iprot, ftype)
        else:
            iprot.skip(ftype)
        iprot.readFieldEnd()
    iprot.readStructEnd()
    return tuple(values)


def _write_result(oprot: Any, method: str, success: int) -> None:
    oprot.writeStructBegin(f"{method}_result")
    oprot.writeFieldBegin("success", TType.I32, _SUCCESS_ID)
    oprot.writeI32(success)
    oprot.writeFieldEnd()
    oprot.writeFieldStop()
    oprot.writeStructEnd()


def _read_result(iprot: Any) -> int | None:
    success = None
    iprot.readStructBegin()
    while True:
        _name, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        if fid == _SUCCESS_ID and ftype == TType.I32:
            success = iprot.readI32()
        else:
            iprot.skip(ftype)
        iprot.readFieldEnd()
    iprot.readStructEnd()
    return success


class Client(SimpleSwitch.Client):
    """``SimpleSwitch.Client`` with the two per-priority calls."""

    def set_egress_priority_queue_depth(self, port_num: int, priority: int, depth_pkts: int) -> int:
        return self._priority_call("set_egress_priority_queue_depth", port_num, priority, depth_pkts)

    def set_egress_priority_queue_rate(self, port_num: int, priority: int, rate_pps: int) -> int:
        return self._priority_call("set_egress_priority_queue_rate", port_num, priority, rate_pps)

    def _priority_call(self, method: str, *values: int) -> int:
        self._oprot.writeMessageBegin(method, TMessageType.CALL, self._seqid)
        write_args(self._oprot, method, values)
        self._oprot.writeMessageEnd()
        self._oprot.trans.flush()
        iprot = self._iprot
        _fname, mtype, _rseqid = iprot.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            exc = TApplicationException()
            exc.read(iprot)
            iprot.readMessageEnd()
            raise exc
        success = _read_result(iprot)
        iprot.readMessageEnd()
        if success is None:
            raise TApplicationException(TApplicationException.MISSING_RESULT, f"{method} failed: unknown result")
        return success


def _process(method: str) -> Any:
    """The processor function of ``method``: read its arguments, call the handler's method of the same
    name, answer its i32, or the TApplicationException it raised (others: INTERNAL_ERROR, logged)."""

    def process(self: Processor, seqid: int, iprot: Any, oprot: Any) -> None:
        values = read_args(iprot, method)
        iprot.readMessageEnd()
        try:
            if None in values:
                missing = [name for (name, _t), v in zip(METHODS[method], values) if v is None]
                raise TApplicationException(TApplicationException.PROTOCOL_ERROR,
                                            f"{method}: argument {', '.join(missing)} missing or of the wrong type")
            success = getattr(self._handler, method)(*values)
        except TTransport.TTransportException:
            raise
        except TApplicationException as exc:
            oprot.writeMessageBegin(method, TMessageType.EXCEPTION, seqid)
            exc.write(oprot)
        except Exception:
            log.exception("%s: unexpected exception in handler", method)
            oprot.writeMessageBegin(method, TMessageType.EXCEPTION, seqid)
            TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error").write(oprot)
        else:
            oprot.writeMessageBegin(method, TMessageType.REPLY, seqid)
            _write_result(oprot, method, success)
        oprot.writeMessageEnd()
        oprot.trans.flush()

    return process


class Processor(SimpleSwitch.Processor):
    """``SimpleSwitch.Processor`` that also dispatches the two per-priority calls to ``handler``."""

    def __init__(self, handler: Any) -> None:
        super().__init__(handler)
        for method in METHODS:
            self._processMap[method] = _process(method)
