"""controlplane/stream_decode.py: a packet-in read from the wire as protobuf reads it, anything else by protobuf."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from controlplane.stream_decode import PacketInMessage, decode_stream_response

METADATA = st.lists(st.tuples(st.integers(0, (1 << 32) - 1), st.binary(max_size=16)), max_size=6)


def _as_read(msg: object) -> tuple:
    """What a stream reader (the switch agent) reads of a message."""
    kind = msg.WhichOneof("update")  # type: ignore[attr-defined]
    if kind != "packet":
        return (kind,)
    p = msg.packet  # type: ignore[attr-defined]
    return kind, p.payload, [(m.metadata_id, m.value) for m in p.metadata]


@settings(max_examples=200)
@given(st.binary(max_size=300), METADATA)
def test_a_packet_in_reads_as_protobufs(payload: bytes, metadata: list[tuple[int, bytes]]) -> None:
    resp = pb.StreamMessageResponse()
    resp.packet.payload = payload
    for mid, value in metadata:
        resp.packet.metadata.add(metadata_id=mid, value=value)
    wire = resp.SerializeToString()
    got = decode_stream_response(wire)
    assert isinstance(got, PacketInMessage)
    assert _as_read(got) == _as_read(pb.StreamMessageResponse.FromString(wire))


def _packet_in_wire(payload: bytes, metadata: list[tuple[int, bytes]]) -> bytes:
    resp = pb.StreamMessageResponse()
    resp.packet.payload = payload
    for mid, value in metadata:
        resp.packet.metadata.add(metadata_id=mid, value=value)
    return resp.SerializeToString()


@st.composite
def _damaged_packet_ins(draw: st.DrawFn) -> bytes:
    """A packet-in's bytes with one byte changed, some cut off or some added."""
    data = bytearray(_packet_in_wire(draw(st.binary(max_size=40)), draw(METADATA)))
    how = draw(st.sampled_from(["flip", "cut", "add"]))
    if how == "flip" and data:
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    elif how == "cut":
        del data[draw(st.integers(0, len(data))):]
    else:
        data += draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


@settings(max_examples=400)
@given(st.one_of(st.binary(max_size=80), _damaged_packet_ins()))
def test_any_bytes_read_as_protobuf_reads_them_or_fail_as_it_does(data: bytes) -> None:
    try:
        want = _as_read(pb.StreamMessageResponse.FromString(data))
    except Exception as exc:  # noqa: BLE001 - protobuf refuses: so must the decoder
        try:
            decode_stream_response(data)
        except Exception as got:  # noqa: BLE001
            assert type(got) is type(exc)
            return
        raise AssertionError("decoded what protobuf refuses") from None
    assert _as_read(decode_stream_response(data)) == want


def test_other_messages_are_protobufs() -> None:
    resp = pb.StreamMessageResponse()
    resp.arbitration.device_id = 1
    got = decode_stream_response(resp.SerializeToString())
    assert isinstance(got, pb.StreamMessageResponse) and got == resp
    resp = pb.StreamMessageResponse()
    resp.packet.payload = b"x"
    resp.packet.metadata.add(metadata_id=1, value=b"\x02")
    extra = resp.SerializeToString() + pb.StreamMessageResponse(digest=pb.DigestList(digest_id=3)).SerializeToString()
    assert isinstance(decode_stream_response(extra), pb.StreamMessageResponse)  # a packet-in and more: protobuf's
