"""A fast encoder for the common Read answers, as wire bytes: table entries with direct actions,
and counter cells.

Why (when it was written): with protobuf's pure-Python runtime, building a ``pb.TableEntry`` and
serialising it cost about 160 µs per entry on the switch loop; a controller reading a table
ten times a second took a quarter of the switch's time from its ports (soak benchmark, issue
9). Counter cells likewise: a netns run reads every switch's drop counters each second, and
fourteen cells took 0.4 ms of the switch loop, a stall that at 256 Mb/s overflowed a buffer with
2 ms of headroom (docs/howto/netns.md, "At higher link rates"). Entries are written here straight into bytes, in the order protobuf serialises fields (by
field number), so that the gRPC client receives exactly what ``SerializeToString`` would have
produced (a test compares the two). Anything else - action profiles, one-shot action sets,
requested direct resources - is left to protobuf by the caller. Since ``make setup`` installs the
compiled runtime (controlplane/stubs_build.py) a message costs a few µs too; this encoder stays
while its property test (tests/p4runtime/test_wire_encode.py) holds its bytes equal to protobuf's.
"""

from __future__ import annotations

from collections.abc import Sequence

from p4switch.state.actions import ActionCall
from p4switch.state.bytestrings import encode_unsigned
from p4switch.state.runtime import RuntimeState
from p4switch.state.tables import Exact, Lpm, Match, MatchFieldInfo, Range, TableEntry, Ternary


def varint(n: int) -> bytes:
    """Protobuf varint; negative int32/int64 values as their 64-bit two's complement."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _len(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + varint(len(payload)) + payload


def _uint(tag: int, n: int) -> bytes:
    return bytes((tag,)) + varint(n) if n else b""


def _bytes(tag: int, data: bytes) -> bytes:
    return _len(tag, data) if data else b""


def _field_match(field_id: int, m: Match) -> bytes:
    if isinstance(m, Exact):
        body = _len(0x12, _bytes(0x0A, encode_unsigned(m.value)))
    elif isinstance(m, Lpm):
        body = _len(0x22, _bytes(0x0A, encode_unsigned(m.value)) + _uint(0x10, m.prefix_len))
    elif isinstance(m, Ternary):
        body = _len(0x1A, _bytes(0x0A, encode_unsigned(m.value)) + _bytes(0x12, encode_unsigned(m.mask)))
    elif isinstance(m, Range):
        body = _len(0x32, _bytes(0x0A, encode_unsigned(m.low)) + _bytes(0x12, encode_unsigned(m.high)))
    else:
        body = _len(0x3A, _bytes(0x0A, encode_unsigned(m.value)))
    return _len(0x12, _uint(0x08, field_id) + body)


def _action(state: RuntimeState, call: ActionCall) -> bytes:
    params = state.actions[call.action_id].params
    body = _uint(0x08, call.action_id) + b"".join(
        _len(0x22, _uint(0x10, p.id) + _bytes(0x1A, encode_unsigned(v))) for p, v in zip(params, call.params))
    return _len(0x1A, _len(0x0A, body))  # TableEntry.action (3) = TableAction{action (1)}


def table_entity(state: RuntimeState, table_id: int, fields: Sequence[MatchFieldInfo], entry: TableEntry) -> bytes:
    """``Entity{table_entry}`` as protobuf would serialise it; the entry's action must be direct."""
    parts = [_uint(0x08, table_id)]
    parts.extend(_field_match(f.id, m) for f, m in zip(fields, entry.match) if m is not None)
    if entry.action is not None:
        parts.append(_action(state, entry.action))
    parts += [_uint(0x20, entry.priority), _uint(0x28, entry.controller_metadata),
              _uint(0x40, entry.is_default), _uint(0x48, entry.idle_timeout_ns), _bytes(0x5A, entry.metadata),
              _uint(0x68, entry.is_const)]
    return _len(0x12, b"".join(parts))


def counter_entity(counter_id: int, index: int, packets: int, nbytes: int) -> bytes:
    """``Entity{counter_entry{counter_id, index{index}, data{byte_count, packet_count}}}`` as
    protobuf serialises it (both submessages always present, as the protobuf path sets them)."""
    data = _uint(0x08, nbytes) + _uint(0x10, packets)
    body = _uint(0x08, counter_id) + _len(0x12, _uint(0x08, index)) + _len(0x1A, data)
    return _len(0x3A, body)  # Entity.counter_entry (7)


#: ``ReadResponse.entities``' tag and one-byte length, for the entities under 128 bytes
_SHORT_ENTITY = [bytes((0x0A, n)) for n in range(0x80)]


def read_response(entities: Sequence[bytes]) -> bytes:
    """``ReadResponse{entities}`` from serialised entities."""
    parts = []
    for e in entities:
        n = len(e)
        parts.append(_SHORT_ENTITY[n] if n < 0x80 else b"\x0a" + varint(n))
        parts.append(e)
    return b"".join(parts)


def packet_in_response(payload: bytes, metadata: Sequence[tuple[int, bytes]]) -> bytes:
    """A StreamMessageResponse holding a PacketIn (``packet``, field 2): ``payload`` and the
    controller header's ``(metadata_id, value)`` in order, as protobuf serialises it."""
    meta = b"".join(_len(0x12, _uint(0x08, mid) + _bytes(0x12, value)) for mid, value in metadata)
    return _len(0x12, _bytes(0x0A, payload) + meta)
