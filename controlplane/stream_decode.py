"""A StreamChannel response read from the wire: a packet-in without protobuf, the rest with it.

Why: a netns agent reads a packet-in per report from its switch (every 1.25 ms per port at eight
times the paper's rates), and pure-Python protobuf's parse of each one was a seventh of the
runner's GIL time. A packet-in is three fields deep (``StreamMessageResponse.packet``:
``payload``, then each ``PacketMetadata``'s ``metadata_id`` and ``value``); this reads those and
hands back an object the agent reads as it reads the message (``WhichOneof("update")``,
``packet.payload``, ``packet.metadata[i].metadata_id`` / ``.value``). Anything else, or any field
this does not know, goes to protobuf, so no message is read differently.

Its varint reader has the shape of p4switch/p4runtime/wire.py's (the switch's Write reader): the
control plane may import neither the switch nor ``runtime/`` (tests/test_layers.py), and eight
lines do not warrant a package of their own below both.
"""

from __future__ import annotations

from typing import NamedTuple

from p4.v1 import p4runtime_pb2 as pb

__all__ = ["PacketInMessage", "decode_stream_response"]


class _Unknown(Exception):
    """Not a plain packet-in: protobuf reads it."""


class Metadata(NamedTuple):
    metadata_id: int
    value: bytes


class PacketIn(NamedTuple):
    payload: bytes
    metadata: list[Metadata]


class PacketInMessage:
    """A StreamMessageResponse whose ``update`` is ``packet``, as far as a stream reader asks."""

    __slots__ = ("packet",)

    def __init__(self, packet: PacketIn) -> None:
        self.packet = packet

    def WhichOneof(self, _group: str) -> str:  # noqa: N802 - protobuf's name
        return "packet"

    def __repr__(self) -> str:
        return f"PacketInMessage({self.packet!r})"


def _varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise _Unknown
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7


def _chunk(data: bytes, i: int) -> tuple[bytes, int]:
    n, i = _varint(data, i)
    if i + n > len(data):
        raise _Unknown
    return data[i:i + n], i + n


def _metadata(data: bytes) -> Metadata:
    mid, value, i = 0, b"", 0
    while i < len(data):
        tag, i = _varint(data, i)
        if tag == 0x08:
            mid, i = _varint(data, i)
            if mid >= 1 << 32:
                raise _Unknown
        elif tag == 0x12:
            value, i = _chunk(data, i)
        else:
            raise _Unknown
    return Metadata(mid, value)


def _packet_in(data: bytes) -> PacketIn:
    payload, meta, i = b"", [], 0
    while i < len(data):
        tag, i = _varint(data, i)
        if tag == 0x0A:
            payload, i = _chunk(data, i)
        elif tag == 0x12:
            chunk, i = _chunk(data, i)
            meta.append(_metadata(chunk))
        else:
            raise _Unknown
    return PacketIn(payload, meta)


def decode_stream_response(data: bytes) -> PacketInMessage | pb.StreamMessageResponse:
    """``data`` (a serialised StreamMessageResponse) as a :class:`PacketInMessage` when it is a
    packet-in and nothing more, else as protobuf's message."""
    try:
        if not data or data[0] != 0x12:
            raise _Unknown
        body, end = _chunk(data, 1)
        if end != len(data):
            raise _Unknown
        return PacketInMessage(_packet_in(body))
    except _Unknown:
        return pb.StreamMessageResponse.FromString(data)
