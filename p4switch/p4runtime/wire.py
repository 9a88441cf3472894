"""A fast decoder for the common WriteRequest: table entries with direct actions.

Why: the installed protobuf runtime is the pure-Python one (protobuf 3.20.x has no compiled
build for Python 3.11, and p4runtime-shell pins protobuf < 3.21), and profiling a controller's
Writes showed parsing the request cost about twice as much as applying it. Most Writes a
controller makes are table entries with a match and a direct action; this module reads exactly
those from the wire into small read-only objects with the attributes ``writes.py`` uses
(``HasField``, ``WhichOneof``, the fields), and gives up on anything else - another entity, a
field it does not know, a malformed message - so that the caller parses the request with
protobuf as before (:func:`parse_write_request`). Semantics are protobuf's: later scalars
win, repeated fields append; a singular message given twice is left to protobuf.
"""

from __future__ import annotations

from typing import Any

from p4.v1 import p4runtime_pb2 as pb


class _GiveUp(Exception):
    """Not the common case: parse with protobuf instead."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _GiveUp
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos  # a 10th byte above 1 overflows: protobuf drops it
        shift += 7


def _fields(buf: bytes, pos: int, end: int) -> Any:
    """(field number, varint value or (start, end) of a length-delimited field).

    Keys, ints and lengths are nearly always one byte; reading those inline instead of
    calling _varint takes a third off a table entry's parse (tests/bench/write_parse.py)."""
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos)
        if pos >= end:
            raise _GiveUp  # a key without its value
        value = buf[pos]
        if value < 0x80:
            pos += 1
        else:
            value, pos = _varint(buf, pos)
        wt = key & 7
        if wt == 0:
            yield key >> 3, value
        elif wt == 2:
            if pos + value > end:
                raise _GiveUp
            yield key >> 3, (pos, pos + value)
            pos += value
        else:
            raise _GiveUp  # fixed32/64 and groups: not in a common Write
    if pos != end:
        raise _GiveUp


class _View:
    """Read-only message view: ``HasField`` for the singular message fields that were set."""

    __slots__ = ("_set",)

    def HasField(self, name: str) -> bool:  # noqa: N802 - protobuf's name
        return name in self._set


class _Value:
    __slots__ = ("value", "prefix_len", "mask", "low", "high")

    def __init__(self) -> None:
        self.value = self.mask = self.low = self.high = b""
        self.prefix_len = 0


class FieldMatch:
    __slots__ = ("field_id", "_kind", "exact", "lpm", "ternary", "range", "optional")

    def WhichOneof(self, _group: str) -> str | None:  # noqa: N802
        return self._kind


_MATCH_KINDS = {2: "exact", 3: "ternary", 4: "lpm", 6: "range", 7: "optional"}
_VALUE_FIELDS = {"exact": {1: "value"}, "optional": {1: "value"}, "ternary": {1: "value", 2: "mask"},
                 "lpm": {1: "value"}, "range": {1: "low", 2: "high"}}


def _field_match(buf: bytes, start: int, end: int) -> FieldMatch:
    fm = FieldMatch()
    fm.field_id, fm._kind = 0, None
    for num, v in _fields(buf, start, end):
        if num == 1 and type(v) is int:
            fm.field_id = v
            continue
        kind = _MATCH_KINDS.get(num)
        if kind is None or type(v) is int or fm._kind is not None:
            raise _GiveUp
        val = _Value()
        names = _VALUE_FIELDS[kind]
        for n2, v2 in _fields(buf, v[0], v[1]):
            if kind == "lpm" and n2 == 2 and type(v2) is int:
                val.prefix_len = v2
            elif n2 in names and type(v2) is tuple:
                setattr(val, names[n2], buf[v2[0]:v2[1]])
            else:
                raise _GiveUp
        fm._kind = kind
        setattr(fm, kind, val)
    return fm


class Param:
    __slots__ = ("param_id", "value")


class Action:
    __slots__ = ("action_id", "params")


class TableAction(_View):
    __slots__ = ("action",)

    def WhichOneof(self, _group: str) -> str:  # noqa: N802
        return "action"


def _action(buf: bytes, start: int, end: int) -> TableAction:
    ta = TableAction()
    ta._set = ("action",)
    seen = False
    for num, v in _fields(buf, start, end):
        if num != 1 or type(v) is int or seen:
            raise _GiveUp  # profile members, groups and action sets: protobuf
        seen = True
        a = Action()
        a.action_id, a.params = 0, []
        for n2, v2 in _fields(buf, v[0], v[1]):
            if n2 == 1 and type(v2) is int:
                a.action_id = v2
            elif n2 == 4 and type(v2) is tuple:
                p = Param()
                p.param_id, p.value = 0, b""
                for n3, v3 in _fields(buf, v2[0], v2[1]):
                    if n3 == 2 and type(v3) is int:
                        p.param_id = v3
                    elif n3 == 3 and type(v3) is tuple:
                        p.value = buf[v3[0]:v3[1]]
                    else:
                        raise _GiveUp
                a.params.append(p)
            else:
                raise _GiveUp
        ta.action = a
    return ta


class TableEntry(_View):
    __slots__ = ("table_id", "match", "action", "priority", "controller_metadata", "is_default_action",
                 "idle_timeout_ns", "metadata", "is_const")


_TE_INTS = {1: "table_id", 4: "priority", 5: "controller_metadata", 8: "is_default_action",
            9: "idle_timeout_ns", 13: "is_const"}


def _table_entry(buf: bytes, start: int, end: int) -> TableEntry:
    te = TableEntry()
    te._set = ()
    te.table_id = te.priority = te.controller_metadata = te.idle_timeout_ns = 0
    te.is_default_action = te.is_const = False
    te.match, te.action, te.metadata = [], None, b""
    for num, v in _fields(buf, start, end):
        if type(v) is int:
            name = _TE_INTS.get(num)
            if name is None:
                raise _GiveUp
            if num in (8, 13):
                v = bool(v)  # noqa: PLW2901
            elif num in (4, 9):  # priority int32, idle_timeout_ns int64
                v = _signed(v, 32 if num == 4 else 64)  # noqa: PLW2901
            setattr(te, name, v)
        elif num == 2:
            te.match.append(_field_match(buf, *v))
        elif num == 3 and te.action is None:
            te.action = _action(buf, *v)
            te._set = ("action",)
        elif num == 11:
            te.metadata = buf[v[0]:v[1]]
        else:
            raise _GiveUp  # counter data, meter config, ...: protobuf
    return te


def _signed(v: int, bits: int) -> int:
    """int32/int64 fields arrive as 64-bit two's complement varints."""
    v &= (1 << 64) - 1
    v = v - (1 << 64) if v >> 63 else v
    if bits == 32:
        v = ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    return v


class Entity:
    __slots__ = ("table_entry",)

    def WhichOneof(self, _group: str) -> str:  # noqa: N802
        return "table_entry"


class Update:
    """An Update whose entity is a table entry; ``to_pb()`` parses its bytes with protobuf
    (for the VERIFY_AND_SAVE log, which must outlive the request)."""

    __slots__ = ("type", "entity", "_raw")

    def to_pb(self) -> pb.Update:
        return pb.Update.FromString(self._raw)


def _update(buf: bytes, start: int, end: int) -> Update:
    u = Update()
    u.type, u.entity, u._raw = 0, None, buf[start:end]
    for num, v in _fields(buf, start, end):
        if num == 1 and type(v) is int:
            u.type = _signed(v, 32)  # an enum: protobuf reads it as an int32
        elif num == 2 and type(v) is tuple and u.entity is None:
            e = Entity()
            found = False
            for n2, v2 in _fields(buf, v[0], v[1]):
                if n2 != 2 or type(v2) is int or found:
                    raise _GiveUp  # not a table entry
                e.table_entry = _table_entry(buf, *v2)
                found = True
            if not found:
                raise _GiveUp
            u.entity = e
        else:
            raise _GiveUp
    if u.entity is None:
        raise _GiveUp
    return u


class WriteRequest(_View):
    __slots__ = ("device_id", "role_id", "role", "election_id", "updates", "atomicity")


def _write_request(buf: bytes) -> WriteRequest:
    req = WriteRequest()
    req._set = ()
    req.device_id = req.role_id = req.atomicity = 0
    req.role, req.election_id, req.updates = "", pb.Uint128(), []
    for num, v in _fields(buf, 0, len(buf)):
        if num == 1 and type(v) is int:
            req.device_id = v
        elif num == 2 and type(v) is int:
            req.role_id = v
        elif num == 3 and type(v) is tuple and "election_id" not in req._set:
            req.election_id = pb.Uint128.FromString(buf[v[0]:v[1]])
            req._set = ("election_id",)
        elif num == 4 and type(v) is tuple:
            req.updates.append(_update(buf, *v))
        elif num == 5 and type(v) is int:
            req.atomicity = _signed(v, 32)  # an enum, as Update.type
        elif num == 6 and type(v) is tuple:
            req.role = buf[v[0]:v[1]].decode()
        else:
            raise _GiveUp
    return req


def parse_write_request(data: bytes) -> WriteRequest | pb.WriteRequest:
    """The fast view when the request is all table entries with direct actions, else protobuf's."""
    try:
        return _write_request(data)
    except Exception:  # noqa: BLE001 - anything odd (_GiveUp, a bad UTF-8 role): protobuf decides
        return pb.WriteRequest.FromString(data)
