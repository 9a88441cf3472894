"""A name-based P4Runtime client, in the spirit of p4runtime-shell's P4Info-driven helpers.

Why not p4runtime-shell itself: it keeps one global client, so one switch per process, and
the project's controllers drive many switches. This client speaks P4Runtime by P4Info *name*
(table entries, clone sessions, counters, packet-in/out, digests) either in-process on a
switch's ``P4RuntimeCore`` (sim binding) or over gRPC (netns binding, or real BMv2), with one
API.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

FPC = pb.SetForwardingPipelineConfigRequest
MATCH_KIND = p4info_pb2.MatchField


def uint128(msg: Any) -> int:
    """A P4Runtime Uint128 as an int."""
    return (msg.high << 64) | msg.low


def uint128_of(pair: tuple[int, int]) -> int:
    return (pair[0] << 64) | pair[1]


class ClientError(Exception):
    """A request named something the P4Info does not have, or came before a pipeline."""


def enc(value: int) -> bytes:
    """Canonical (shortest) big-endian bytestring of a non-negative int."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def dec(data: bytes) -> int:
    return int.from_bytes(data, "big")


class Names:
    """P4Info lookups by name: ids, match fields, parameters, controller metadata."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.tables = {t.preamble.name: t for t in p4info.tables}
        self.actions = {a.preamble.name: a for a in p4info.actions}
        self.counters = {c.preamble.name: c for c in p4info.counters}
        self.meters = {m.preamble.name: m for m in p4info.meters}
        self.digests = {d.preamble.name: d for d in p4info.digests}
        self.cpm = {c.preamble.name: c for c in p4info.controller_packet_metadata}
        self.action_profiles = {p.preamble.name: p for p in p4info.action_profiles}
        self._packet_in_names: dict[int, str] | None = None
        #: counter ids by name: an agent reads its ports' counters every 50 ms (read_counters)
        self.counter_ids = {name: c.preamble.id for name, c in self.counters.items()}

    def table_entry(self, table: str, match: Mapping[str, Any], action: str | None = None,
                    params: Mapping[str, int] | None = None, priority: int = 0) -> pb.TableEntry:
        """``match`` values: int (exact/optional), (value, prefix_len) (lpm), (value, mask)
        (ternary), (low, high) for range."""
        t = _lookup(self.tables, table, "table")
        fields = {f.name: f for f in t.match_fields}
        te = pb.TableEntry(table_id=t.preamble.id, priority=priority)
        for name, value in match.items():
            f = _lookup(fields, name, f"match field of {table}")
            m = te.match.add(field_id=f.id)
            if f.match_type == MATCH_KIND.EXACT:
                m.exact.value = enc(value)
            elif f.match_type == MATCH_KIND.LPM:
                m.lpm.value, m.lpm.prefix_len = enc(value[0]), value[1]
            elif f.match_type == MATCH_KIND.TERNARY:
                m.ternary.value, m.ternary.mask = enc(value[0]), enc(value[1])
            elif f.match_type == MATCH_KIND.RANGE:
                m.range.low, m.range.high = enc(value[0]), enc(value[1])
            else:
                m.optional.value = enc(value)
        if action is not None:
            te.action.action.CopyFrom(self.action(action, params))
        return te

    def action(self, action: str, params: Mapping[str, int] | None = None) -> pb.Action:
        a = _lookup(self.actions, action, "action")
        out = pb.Action(action_id=a.preamble.id)
        pids = {p.name: p.id for p in a.params}
        for pname, pvalue in (params or {}).items():
            pid = _lookup(pids, pname, f"parameter of {action}")
            out.params.add(param_id=pid, value=enc(pvalue))
        return out

    def profile_member(self, profile: str, member_id: int, action: str,
                       params: Mapping[str, int] | None = None) -> pb.Entity:
        """An ActionProfileMember of ``profile`` (an action profile or selector) running ``action``."""
        prof = _lookup(self.action_profiles, profile, "action profile")
        return pb.Entity(action_profile_member=pb.ActionProfileMember(
            action_profile_id=prof.preamble.id, member_id=member_id, action=self.action(action, params)))

    def profile_group(self, profile: str, group_id: int, member_ids: Iterable[int], max_size: int = 0) -> pb.Entity:
        """An ActionProfileGroup of ``profile`` holding ``member_ids``, each of weight 1."""
        prof = _lookup(self.action_profiles, profile, "action profile")
        group = pb.ActionProfileGroup(action_profile_id=prof.preamble.id, group_id=group_id, max_size=max_size)
        for m in member_ids:
            group.members.add(member_id=m, weight=1)
        return pb.Entity(action_profile_group=group)

    def group_entry(self, table: str, match: Mapping[str, Any], group_id: int) -> pb.TableEntry:
        """An entry of indirect ``table`` pointing to action-profile group ``group_id``."""
        te = self.table_entry(table, match)
        te.action.action_profile_group_id = group_id
        return te

    def counter_id(self, counter: str) -> int:
        return _lookup(self.counter_ids, counter, "counter")

    def counter_entry(self, counter: str, index: int | None = None) -> pb.CounterEntry:
        ce = pb.CounterEntry(counter_id=self.counter_id(counter))
        if index is not None:
            ce.index.index = index
        return ce

    def packet_out(self, payload: bytes, metadata: Mapping[str, int]) -> pb.PacketOut:
        ids = {m.name: m.id for m in _lookup(self.cpm, "packet_out", "controller header").metadata}
        po = pb.PacketOut(payload=payload)
        for name, value in metadata.items():
            po.metadata.add(metadata_id=_lookup(ids, name, "packet_out metadata"), value=enc(value))
        return po

    def packet_in_metadata(self, pin: pb.PacketIn) -> dict[str, int]:
        names = self._packet_in_names
        if names is None:
            names = self._packet_in_names = {m.id: m.name for m in self.cpm["packet_in"].metadata}
        return {names[m.metadata_id]: int.from_bytes(m.value, "big") for m in pin.metadata}


def _lookup(mapping: Mapping[str, Any], name: str, what: str) -> Any:
    try:
        return mapping[name]
    except KeyError:
        known = ", ".join(sorted(mapping)) or "none"
        raise ClientError(f"unknown {what} {name!r} (known: {known})") from None


def clone_session(session_id: int, replicas: Iterable[tuple[int, int]], packet_length_bytes: int = 0) -> pb.Entity:
    e = pb.Entity()
    cs = e.packet_replication_engine_entry.clone_session_entry
    cs.session_id = session_id
    cs.packet_length_bytes = packet_length_bytes
    for port, instance in replicas:
        cs.replicas.add(egress_port=port, instance=instance)
    return e


def multicast_group(group_id: int, replicas: Iterable[tuple[int, int]]) -> pb.Entity:
    e = pb.Entity()
    mg = e.packet_replication_engine_entry.multicast_group_entry
    mg.multicast_group_id = group_id
    for port, instance in replicas:
        mg.replicas.add(egress_port=port, instance=instance)
    return e


def update(kind: int, entity: pb.Entity | pb.TableEntry | pb.CounterEntry | pb.DigestEntry | pb.MeterEntry
           ) -> pb.Update:
    if not isinstance(entity, pb.Entity):
        field = {pb.TableEntry: "table_entry", pb.CounterEntry: "counter_entry", pb.DigestEntry: "digest_entry",
                 pb.MeterEntry: "meter_entry"}[type(entity)]
        entity = pb.Entity(**{field: entity})
    return pb.Update(type=kind, entity=entity)


class _ClientBase:
    """Common request building; subclasses provide _call(method, request) and the stream."""

    device_id: int
    election: tuple[int, int]
    _names: Names | None = None
    received: list[pb.StreamMessageResponse]

    @property
    def names(self) -> Names:
        if self._names is None:
            raise ClientError("no P4Info yet: call set_pipeline() or use_p4info() first")
        return self._names

    @names.setter
    def names(self, value: Names) -> None:
        self._names = value

    def _stamp(self, req: Any) -> Any:
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = self.election
        return req

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        req = self._stamp(FPC(action=FPC.VERIFY_AND_COMMIT))
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        self._call("set_forwarding_pipeline_config", req)
        self.names = Names(p4info)

    def use_p4info(self, p4info: p4info_pb2.P4Info) -> None:
        self.names = Names(p4info)

    def write(self, *updates: pb.Update, atomicity: int = 0) -> None:
        req = self._stamp(pb.WriteRequest(atomicity=atomicity))
        req.updates.extend(updates)
        self._call("write", req)

    def insert(self, entity: Any) -> None:
        self.write(update(pb.Update.INSERT, entity))

    def modify(self, entity: Any) -> None:
        self.write(update(pb.Update.MODIFY, entity))

    def delete(self, entity: Any) -> None:
        self.write(update(pb.Update.DELETE, entity))

    def insert_entry(self, table: str, match: Mapping[str, Any], action: str,
                     params: Mapping[str, int] | None = None, priority: int = 0) -> None:
        self.insert(self.names.table_entry(table, match, action, params, priority))

    def read_counter(self, counter: str, index: int) -> tuple[int, int]:
        return self.read_counters([(counter, index)])[0]

    def read_counters(self, cells: Sequence[tuple[str, int]]) -> list[tuple[int, int]]:
        """(packets, bytes) of each (counter name, index), in one Read."""
        names = self.names
        got = {}
        for ent in self.read(*(pb.Entity(counter_entry=names.counter_entry(c, i)) for c, i in cells)):
            ce = ent.counter_entry
            got[ce.counter_id, ce.index.index] = ce.data.packet_count, ce.data.byte_count
        try:
            return [got[names.counter_id(c), i] for c, i in cells]
        except KeyError:
            missing = next((c, i) for c, i in cells if (names.counter_id(c), i) not in got)
            raise ClientError(f"the switch did not answer counter {missing[0]}[{missing[1]}]") from None

    def send_packet_out(self, payload: bytes, **metadata: int) -> None:
        self._stream_send(pb.StreamMessageRequest(packet=self.names.packet_out(payload, metadata)))

    def ack_digest(self, digest_id: int, list_id: int) -> None:
        self._stream_send(pb.StreamMessageRequest(digest_ack=pb.DigestListAck(digest_id=digest_id, list_id=list_id)))

    def of(self, kind: str) -> list[Any]:
        return [getattr(m, kind) for m in list(self.received) if m.WhichOneof("update") == kind]

    def rearbitrate(self, above: int | None = None) -> None:
        """Send the arbitration request again, with an election id above ``above`` if given (the
        server accepts a primary only at or above the highest election id it has seen)."""
        if above is not None and uint128_of(self.election) <= above:
            self.election = ((above + 1) >> 64, (above + 1) & ((1 << 64) - 1))
        self._stream_send(self._arbitration_request())

    def _arbitration_request(self) -> pb.StreamMessageRequest:
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election
        return req

    # provided by subclasses
    def _call(self, method: str, req: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stream_send(self, req: pb.StreamMessageRequest) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def read(self, *entities: pb.Entity) -> list[pb.Entity]:  # pragma: no cover - abstract
        raise NotImplementedError


#: the sets of counter cells an in-process client keeps a reader for (read_counters); more are read again
MAX_COUNTER_READERS = 64


class InProcessController(_ClientBase):
    """A primary client calling a ``P4RuntimeCore`` directly (the sim binding).

    Stream messages are kept in ``received`` unless ``on_message`` is given, in which case each
    one is handed to it instead (an agent that runs for hours should not keep them all).
    ``on_packet_in(payload, {metadata name: int})``, if given, takes the packet-ins instead of
    ``on_message``: the core hands them over without building a PacketIn message, which the
    client would only decode again (``P4RuntimeCore.open_stream``).
    """

    def __init__(self, core: Any, election: tuple[int, int] = (0, 1),
                 on_message: Callable[[pb.StreamMessageResponse], None] | None = None,
                 on_packet_in: Callable[[bytes, dict[str, int]], None] | None = None) -> None:
        self.core = core
        self.device_id = core.device_id
        self.election = election
        self.received = []
        self._counter_readers: dict[tuple[tuple[str, int], ...], tuple[Names, Callable[[], list[tuple[int, int]]]]] = {}
        self.session = core.open_stream(on_message or self.received.append, on_packet_in)
        core.stream_message(self.session, self._arbitration_request())
        state = core.device.state
        if state is not None:
            self.names = Names(state.p4info)

    def _call(self, method: str, req: Any) -> Any:
        return getattr(self.core, method)(req)

    def _stream_send(self, req: pb.StreamMessageRequest) -> None:
        self.core.stream_message(self.session, req)

    def read(self, *entities: pb.Entity) -> list[pb.Entity]:
        result = self.core.read(pb.ReadRequest(device_id=self.device_id, entities=entities))
        if result.error is not None:
            raise result.error
        return [e for r in result.responses for e in r.entities]

    def read_counters(self, cells: Sequence[tuple[str, int]]) -> list[tuple[int, int]]:
        """As a Read does, but as values (``P4RuntimeCore.read_counter_cells``): in one process
        the messages would only be built to be taken apart again. The cells read before (an agent
        reads the same ones every 50 ms, the simulator its drop counters every second) keep their
        reader (``P4RuntimeCore.counter_cells_reader``) while the P4Info is the same."""
        key = tuple(cells)
        names = self.names
        kept = self._counter_readers.get(key)
        if kept is None or kept[0] is not names:
            try:
                ids = [(names.counter_ids[c], i) for c, i in key]
            except KeyError:
                ids = [(names.counter_id(c), i) for c, i in key]  # raises ClientError, naming the counter
            if len(self._counter_readers) >= MAX_COUNTER_READERS:
                self._counter_readers.clear()
            kept = self._counter_readers[key] = (names, self.core.counter_cells_reader(ids))
        return kept[1]()


class GrpcController(_ClientBase):
    """A primary client over gRPC (the netns binding); a thread collects stream messages."""

    def __init__(self, addr: str, device_id: int = 0, election: tuple[int, int] = (0, 1),
                 timeout: float = 10.0, *, stream: bool = True,
                 on_message: Callable[[pb.StreamMessageResponse], None] | None = None) -> None:
        """``stream=False``: no StreamChannel, no arbitration -- enough for Read (a monitor).
        ``on_message`` is called on the reader thread for each stream message."""
        import grpc
        from p4.v1 import p4runtime_pb2_grpc

        self.device_id = device_id
        self.election = election
        self.timeout = timeout
        self.received = []
        self.on_message = on_message
        self._channel = grpc.insecure_channel(addr)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise ClientError(f"no P4Runtime server answered at {addr} within {timeout:g} s") from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._out: queue.Queue = queue.Queue()
        self._reader: threading.Thread | None = None
        if not stream:
            return
        self._stream = self._stub.StreamChannel(self._requests())
        self._reader = threading.Thread(target=self._read_stream, daemon=True, name="grpc-controller")
        self._reader.start()
        self._stream_send(self._arbitration_request())
        self.wait_for(lambda: any(m.WhichOneof("update") == "arbitration" for m in self.received), timeout)

    def fetch_p4info(self) -> p4info_pb2.P4Info:
        """The P4Info of the pipeline the switch runs (GetForwardingPipelineConfig)."""
        req = pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        resp = self._stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        if not resp.config.HasField("p4info"):
            raise ClientError("the switch has no pipeline yet (nothing pushed with SetForwardingPipelineConfig)")
        self.names = Names(resp.config.p4info)
        return resp.config.p4info

    def _requests(self) -> Iterator[pb.StreamMessageRequest]:
        while True:
            item = self._out.get()
            if item is None:
                return
            yield item

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                if self.on_message is None or msg.WhichOneof("update") != "packet":
                    self.received.append(msg)  # with on_message, packets are not also kept
                if self.on_message is not None:
                    self.on_message(msg)
        except Exception:  # noqa: BLE001 - the stream ends when the channel closes
            return

    def arbitration_status(self) -> tuple[int, int] | None:
        """(status code, election_id_past) of the last arbitration message, None before any."""
        for msg in reversed(list(self.received)):
            if msg.WhichOneof("update") == "arbitration":
                a = msg.arbitration
                return a.status.code, (a.election_id.high << 64) | a.election_id.low
        return None

    def claim_primary(self, timeout: float = 5.0) -> None:
        """Become primary if we are not: arbitrate again one above the highest election id the
        switch has accepted. Why: P4Runtime keeps that id (``election_id_past``) after its
        holder leaves, so a client with a fixed lower id could never be primary again."""
        status = self.arbitration_status()
        if status is not None and status[0] != 0:
            n = len(self.received)
            self.rearbitrate(above=status[1])
            self.wait_for(lambda: len(self.received) > n and (self.arbitration_status() or (1, 0))[0] == 0, timeout)
            status = self.arbitration_status()
        if status is None or status[0] != 0:
            raise ClientError(f"could not become the primary controller (arbitration status {status})")

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.01)
        return predicate()

    _METHODS = {"set_forwarding_pipeline_config": "SetForwardingPipelineConfig", "write": "Write"}

    def _call(self, method: str, req: Any) -> Any:
        return getattr(self._stub, self._METHODS[method])(req, timeout=self.timeout)

    def _stream_send(self, req: pb.StreamMessageRequest) -> None:
        self._out.put(req)

    def read(self, *entities: pb.Entity) -> list[pb.Entity]:
        req = pb.ReadRequest(device_id=self.device_id, entities=entities)
        return [e for r in self._stub.Read(req, timeout=self.timeout) for e in r.entities]

    def close(self) -> None:
        self._out.put(None)
        self._channel.close()
        if self._reader is not None:
            self._reader.join(2)
