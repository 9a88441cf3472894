"""The compiled P4Runtime front end (engine/src/p4rt/p4rtfront.rs) against the grpcio server alone.

The same controller session goes to a P4RuntimeServer with each front end: every answer a
client sees (responses, codes, messages, the per-update errors in grpc-status-details-bin, Read
results, arbitration updates) must be the same. The rest of tests/p4runtime/ runs on the default
front end (the compiled one); ``HBH_P4RT=grpcio`` runs it on grpcio's.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

import grpc
import pytest
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4switch.p4runtime import NullDevice, P4RuntimeCore
from p4switch.p4runtime.server import P4RuntimeServer, front_kind
from tests.p4runtime.helpers import b, compiled_front
from tests.p4runtime.p4info_builder import demo_p4info

COMPILED = compiled_front()

FPC = pb.SetForwardingPipelineConfigRequest


def _outcome(fn, *args):
    """("ok", answer) or ("error", code, message, details); a Read's entities (sorted) come with
    either, those of an error being the ones sent before it."""
    got: list[bytes] = []
    try:
        resp = fn(*args, timeout=30)
        if hasattr(resp, "__iter__") and not hasattr(resp, "SerializeToString"):
            for r in resp:
                got.extend(x.SerializeToString(deterministic=True) for x in r.entities)
            return ("ok", sorted(got))
    except grpc.RpcError as e:
        details = [(d.code, d.message, [x.SerializeToString() for x in d.details]) for d in _status(e)]
        return ("error", e.code(), e.details(), details, sorted(got))
    return ("ok", resp.SerializeToString(deterministic=True))


def _status(e: grpc.RpcError) -> list:
    for key, value in e.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return [status_pb2.Status.FromString(value)]
    return []


class _Stream:
    def __init__(self, stub, election: int) -> None:
        self.out: queue.Queue = queue.Queue()
        self.got: queue.Queue = queue.Queue()
        self.call = stub.StreamChannel(iter(self.out.get, None))
        threading.Thread(target=self._read, daemon=True).start()
        arb = pb.MasterArbitrationUpdate(device_id=1, election_id=pb.Uint128(low=election))
        self.out.put(pb.StreamMessageRequest(arbitration=arb))

    def _read(self) -> None:
        try:
            for msg in self.call:
                self.got.put(msg.SerializeToString(deterministic=True))
        except grpc.RpcError as e:
            self.got.put(("ended", e.code()))
        self.got.put(("closed",))

    def next(self):
        return self.got.get(timeout=30)

    def close(self) -> None:
        self.out.put(None)


def _lpm(ids, prefix: int, port: int, plen: int = 24) -> pb.TableEntry:
    te = pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])
    te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(prefix), prefix_len=plen))
    te.action.action.action_id = ids["MyIngress.forward"]
    te.action.action.params.add(param_id=1, value=b(port))
    te.action.action.params.add(param_id=2, value=b(0xAABB))
    return te


def _reads(ids) -> list[pb.ReadRequest]:
    """Reads with answers of every shape: one entry by its key, a miss, wildcards, one counter
    cell, direct counters, errors before any answer (device, unknown id, no entity type) and
    after some (the second of two entities names no table)."""
    te = pb.TableEntry
    lpm = ids["MyIngress.ipv4_lpm"]
    hit, miss = _lpm(ids, 0x0A000000, 2), _lpm(ids, 0x0C000000, 2)
    cell = pb.CounterEntry(counter_id=ids["MyIngress.port_pkts"], index=pb.Index(index=3))
    entities = [
        [pb.Entity(table_entry=te())],
        [pb.Entity(table_entry=te(table_id=lpm, match=hit.match))],
        [pb.Entity(table_entry=te(table_id=lpm, match=miss.match))],
        [pb.Entity(table_entry=te(table_id=lpm))],
        [pb.Entity(table_entry=te(table_id=lpm, is_default_action=True))],
        [pb.Entity(table_entry=te(table_id=lpm, counter_data=pb.CounterData()))],
        [pb.Entity(counter_entry=cell)],
        [pb.Entity(counter_entry=pb.CounterEntry(counter_id=ids["MyIngress.port_pkts"]))],
        [pb.Entity(table_entry=te(table_id=lpm)), pb.Entity(table_entry=te(table_id=0x7777))],
        [pb.Entity(table_entry=te(table_id=0x7777))],
        [pb.Entity()],
    ]
    reads = [pb.ReadRequest(device_id=1, entities=e) for e in entities]
    return [*reads, pb.ReadRequest(device_id=9, entities=entities[0])]


def _raw_read(channel: grpc.Channel):
    """Read taking the request's bytes as they are (to send one that does not parse)."""
    return channel.unary_stream(
        "/p4.v1.P4Runtime/Read", request_serializer=None, response_deserializer=pb.ReadResponse.FromString
    )


def _lend(fn):
    """``try_call`` of an idle switch loop: the call runs at once on the caller's thread."""
    future: Future = Future()
    future.set_result(fn())
    return future


def _session(front: str, lend: bool = False) -> list:
    """One controller's session against a fresh server; every answer, in order. With ``lend``,
    the server may run its short calls on its own threads, as with an idle switch loop."""
    core = P4RuntimeCore(NullDevice(), device_id=1)
    srv = P4RuntimeServer(core, address="127.0.0.1:0", front=front, try_call=_lend if lend else None)
    port = srv.start()
    out: list = []
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        p4info, ids = demo_p4info()
        el = pb.Uint128(low=10)
        config = pb.ForwardingPipelineConfig(p4info=p4info, p4_device_config=b"cfg")
        fpc = FPC(device_id=1, election_id=el, action=FPC.VERIFY_AND_COMMIT, config=config)
        out.append(_outcome(stub.Capabilities, pb.CapabilitiesRequest()))
        out.append(_outcome(stub.SetForwardingPipelineConfig, fpc))  # not primary yet
        primary = _Stream(stub, 10)
        out.append(primary.next())
        out.append(_outcome(stub.SetForwardingPipelineConfig, fpc))
        ins = [
            pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=_lpm(ids, 0x0A000000 | i << 8, 2)))
            for i in range(3)
        ]
        w = pb.WriteRequest(device_id=1, election_id=el)
        out.append(_outcome(stub.Write, pb.WriteRequest(device_id=1, election_id=el, updates=ins[:2])))
        for atomicity in (pb.WriteRequest.CONTINUE_ON_ERROR, pb.WriteRequest.ROLLBACK_ON_ERROR):
            w = pb.WriteRequest(device_id=1, election_id=el, updates=ins, atomicity=atomicity)
            out.append(_outcome(stub.Write, w))  # the first two exist
        out.append(
            _outcome(stub.Write, pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=3), updates=ins))
        )
        out.append(_outcome(stub.Write, pb.WriteRequest(device_id=7, election_id=el, updates=ins)))
        bad = _lpm(ids, 0x0A000001, 2)  # bits beyond the prefix
        out.append(
            _outcome(
                stub.Write,
                pb.WriteRequest(
                    device_id=1,
                    election_id=el,
                    updates=[pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=bad))],
                ),
            )
        )
        many = [
            pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=_lpm(ids, 0x0B000000 | i << 8, 3)))
            for i in range(40)
        ]  # past the table's size: RESOURCE_EXHAUSTED, sliced path
        out.append(_outcome(stub.Write, pb.WriteRequest(device_id=1, election_id=el, updates=many)))
        for read in _reads(ids):
            out.append(_outcome(stub.Read, read))
        out.append(_outcome(_raw_read(channel), b"\xff\xff"))  # not a ReadRequest
        out.append(
            _outcome(stub.GetForwardingPipelineConfig, pb.GetForwardingPipelineConfigRequest(device_id=1))
        )
        backup = _Stream(stub, 5)
        out.append(backup.next())
        primary.close()
        out.append(primary.next())
        out.append(backup.next())  # the backup hears the primary has gone
        backup.close()
    finally:
        channel.close()
        srv.stop(grace=0.5)
    return out


class _Echo(NullDevice):
    """Answers a PacketOut with a PacketIn (the payload reversed, the egress port as ingress port)."""

    core: P4RuntimeCore | None = None

    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> None:
        super().packet_out(payload, metadata)
        self.core.packet_in(payload[::-1], {"ingress_port": metadata["egress_port"], "reason": 2})


class _Chan:
    """A StreamChannel of raw messages (bytes, or a StreamMessageRequest); what it gets, in order:
    each message's bytes, then ("ended", code, message) if it failed, then ("closed",)."""

    def __init__(self, channel: grpc.Channel, first=None) -> None:
        self.out: queue.Queue = queue.Queue()
        self.got: queue.Queue = queue.Queue()
        call = channel.stream_stream(
            "/p4.v1.P4Runtime/StreamChannel", request_serializer=None, response_deserializer=None
        )
        self.call = call(iter(self.out.get, None), timeout=60)
        threading.Thread(target=self._read, daemon=True).start()
        if first is not None:
            self.send(first)

    def _read(self) -> None:
        try:
            for raw in self.call:
                msg = pb.StreamMessageResponse.FromString(raw)
                self.got.put(msg.SerializeToString(deterministic=True))
        except grpc.RpcError as e:
            self.got.put(("ended", e.code(), e.details()))
        self.got.put(("closed",))

    def send(self, msg) -> None:
        self.out.put(msg if isinstance(msg, bytes) else msg.SerializeToString())

    def next(self):
        return self.got.get(timeout=30)

    def rest(self) -> list:
        """Everything until the stream is over."""
        out = [self.next()]
        while out[-1] != ("closed",):
            out.append(self.next())
        return out

    def close(self) -> None:
        self.out.put(None)


def _arb(election: int | None, device: int = 1, role: str = "") -> pb.StreamMessageRequest:
    msg = pb.StreamMessageRequest()
    msg.arbitration.device_id = device
    if election is not None:
        msg.arbitration.election_id.low = election
    if role:
        msg.arbitration.role.name = role
    return msg


def _packet(
    port: int, payload: bytes = b"\x0a\x00\x00\x01abc", pad: bytes | None = b"\x00"
) -> pb.StreamMessageRequest:
    msg = pb.StreamMessageRequest()
    msg.packet.payload = payload
    msg.packet.metadata.add(metadata_id=1, value=bytes([port]))
    if pad is not None:
        msg.packet.metadata.add(metadata_id=2, value=pad)
    return msg


def _stream_session(front: str) -> list:
    """Stream shapes against a fresh server: arbitration (primary, backups, take-over, refusals),
    packet-out -> packet-in, refused packet-outs, digests and their acks, a client that
    disconnects, one that never arbitrates, a message that does not parse, the stream limit."""
    device = _Echo()
    core = P4RuntimeCore(device, device_id=1)
    device.core = core
    srv = P4RuntimeServer(core, address="127.0.0.1:0", front=front, max_streams=4)
    port = srv.start()
    out: list = []
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        p4info, ids = demo_p4info()
        a = _Chan(channel, _arb(10))
        out.append(a.next())  # primary
        fpc = FPC(
            device_id=1,
            election_id=pb.Uint128(low=10),
            action=FPC.VERIFY_AND_COMMIT,
            config=pb.ForwardingPipelineConfig(p4info=p4info),
        )
        out.append(_outcome(stub.SetForwardingPipelineConfig, fpc))
        b = _Chan(channel, _arb(5))
        out.append(b.next())  # backup: only b is told
        for msg in (_packet(3), _packet(4, b"\x0b"), _packet(7, pad=None), _packet(3, pad=b"\xff\xff")):
            a.send(msg)
            out.append(a.next())  # a packet-in, or the stream error naming the packet-out
        b.send(_packet(3))
        out.append(b.next())  # PERMISSION_DENIED: a backup
        cfg = pb.DigestEntry.Config(max_timeout_ns=0, max_list_size=1, ack_timeout_ns=10**12)
        digest = pb.Update(
            type=pb.Update.INSERT,
            entity=pb.Entity(digest_entry=pb.DigestEntry(digest_id=ids["learn_t"], config=cfg)),
        )
        out.append(
            _outcome(
                stub.Write, pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=10), updates=[digest])
            )
        )
        device.state.digests[ids["learn_t"]].add((0xAABBCCDDEEFF, 3), 1_000)
        got = a.next()
        out.append(got)
        (dl,) = [pb.StreamMessageResponse.FromString(got).digest]
        for who, did in ((b, ids["learn_t"]), (a, 0x1234)):  # a backup's ack; an unknown digest
            ack = pb.StreamMessageRequest()
            ack.digest_ack.digest_id, ack.digest_ack.list_id = did, dl.list_id
            who.send(ack)
            out.append(who.next())
        ack.digest_ack.digest_id = ids["learn_t"]
        a.send(ack)  # acked: no answer
        other = pb.StreamMessageRequest()
        other.other.type_url = "type.googleapis.com/x.Unknown"
        a.send(other)
        out.append(a.next())  # UNIMPLEMENTED, after the ack: the same digest is learnable again
        device.state.digests[ids["learn_t"]].add((0xAABBCCDDEEFF, 3), 2_000)
        out.append(a.next())
        b.send(_arb(12))
        out += [b.next(), a.next()]  # b takes over: both are told
        a.send(_arb(10))
        out.append(a.next())  # a re-arbitrates below b: a backup
        c = _Chan(channel, _arb(12))  # b's election id
        out += c.rest()
        d = _Chan(channel, _arb(1, device=9))
        out += d.rest()
        e = _Chan(channel, _arb(1, role="sdn"))
        out += e.rest()
        idle = _Chan(channel)  # never arbitrates
        idle.send(_packet(3))
        out.append(idle.next())  # PERMISSION_DENIED
        f = _Chan(channel, _arb(2))
        out.append(f.next())
        g = _Chan(channel, _arb(3))  # a fifth stream: beyond max_streams
        out += g.rest()
        f.send(b"\xff\xff")  # not a StreamMessageRequest
        out += f.rest()
        b.call.cancel()  # the primary disconnects: everyone left learns there is none
        out += [b.rest(), a.next()]
        h = _Chan(channel, _arb(12))  # its election id is free again
        out.append(h.next())
        out.append(a.next())
        a.send(_packet(5))  # a backup again
        out.append(a.next())
        h.send(_packet(5))
        out.append(h.next())
        h.close()  # half-close: the server ends the stream; a hears there is no primary
        out += [h.rest(), a.next()]
        for s in (a, idle):
            s.close()
            out.append(s.rest())
        out.append(srv.open_streams)
    finally:
        channel.close()
        srv.stop(grace=0.5)
    return out


@pytest.mark.skipif(not COMPILED, reason="the engine was built without the compiled front end (make engine)")
def test_compiled_front_streams_as_the_grpcio_server() -> None:
    compiled, python = _stream_session("compiled"), _stream_session("python")
    for i, (x, y) in enumerate(zip(compiled, python)):
        assert x == y, f"step {i}: compiled {x!r}, grpcio {y!r}"
    assert len(compiled) == len(python)
    ended = [o for o in _flat(compiled) if isinstance(o, tuple) and o[0] == "ended"]
    assert {o[1] for o in ended} >= {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.CANCELLED,
    }


def _oversized(front: str) -> list:
    """A request message over 4 MiB to every kind of RPC: each refused as grpcio refuses it."""
    core = P4RuntimeCore(NullDevice(), device_id=1)
    srv = P4RuntimeServer(core, address="127.0.0.1:0", front=front)
    port = srv.start()
    big = b"\x0a" + bytes(5 << 20)
    out: list = []
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)])
    try:
        for name in ("Write", "Capabilities", "SetForwardingPipelineConfig"):
            call = channel.unary_unary(f"/p4.v1.P4Runtime/{name}", request_serializer=None)
            out.append(_outcome(call, big))
        out.append(_outcome(_raw_read(channel), big))
        chan = _Chan(channel, _arb(1))
        out.append(chan.next())
        chan.send(big)
        out += chan.rest()
        out.append(core.arbitration.primary is None)  # its session ended with it
    finally:
        channel.close()
        srv.stop(grace=0.5)
    return out


@pytest.mark.skipif(not COMPILED, reason="the engine was built without the compiled front end (make engine)")
def test_compiled_front_refuses_oversized_messages_as_the_grpcio_server() -> None:
    compiled, python = _oversized("compiled"), _oversized("python")
    assert compiled == python
    assert [o[1] for o in compiled if isinstance(o, tuple) and o[0] in ("error", "ended")] == [
        grpc.StatusCode.RESOURCE_EXHAUSTED
    ] * 5


def _flat(items: list) -> list:
    return [y for x in items for y in (x if isinstance(x, list) else [x])]


@pytest.mark.skipif(not COMPILED, reason="the engine was built without the compiled front end (make engine)")
@pytest.mark.parametrize("lend", [False, True])
def test_compiled_front_answers_as_the_grpcio_server(lend: bool) -> None:
    """Also with short calls lent (answered on the front end's runtime thread: write_now, read_now)."""
    compiled, python = _session("compiled", lend), _session("python", lend)
    assert compiled == python
    assert [o[0] for o in compiled if isinstance(o, tuple) and o and o[0] in ("ok", "error")].count(
        "error"
    ) >= 6


def test_front_option(monkeypatch) -> None:
    with pytest.raises(ValueError, match="expected 'compiled' or 'python'"):
        front_kind("fast")
    assert front_kind("python") == "python"
    monkeypatch.delenv("HBH_P4RT", raising=False)
    # the compiled one where the engine has it
    assert front_kind(None) == ("compiled" if COMPILED else "python")
    for grpcio in ("grpcio", "python"):
        monkeypatch.setenv("HBH_P4RT", grpcio)
        assert front_kind(None) == "python"
    monkeypatch.setenv("HBH_P4RT", "quick")
    with pytest.raises(ValueError, match="HBH_P4RT='quick': expected 'compiled', 'grpcio' or 'python'"):
        front_kind(None)
    if COMPILED:
        monkeypatch.setenv("HBH_P4RT", "compiled")
        assert front_kind(None) == "compiled"
