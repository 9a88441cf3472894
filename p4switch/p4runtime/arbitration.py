"""Client arbitration (P4Runtime spec, "Client Arbitration and Controller Replication").

Sans-I/O: one ``StreamSession`` per StreamChannel; ``update`` applies a
MasterArbitrationUpdate and returns the sessions to notify. The primary is the
live client whose election id equals the highest id ever accepted as primary
(``election_id_past``); a client without an election id is a backup forever.
Only the default role ("") is served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.errors import Code

from .errors import P4RuntimeError


def uint128(msg: pb.Uint128) -> int:
    return (msg.high << 64) | msg.low


def to_uint128(value: int) -> pb.Uint128:
    return pb.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def election_id_of(msg: pb.MasterArbitrationUpdate | pb.WriteRequest | pb.SetForwardingPipelineConfigRequest) -> int | None:
    return uint128(msg.election_id) if msg.HasField("election_id") else None


def check_role(role: str, role_id: int = 0) -> None:
    if role or role_id:
        raise P4RuntimeError(Code.NOT_FOUND, f"role {role or role_id!r} unknown: only the default role is served")


@dataclass(eq=False)
class StreamSession:
    """One StreamChannel; ``send`` delivers a StreamMessageResponse to its client.

    ``packet_in``, when set (an in-process client only), takes each packet-in as
    ``(payload, {metadata name: int})`` instead of a PacketIn message; ``wire`` (a gRPC stream)
    takes a packet-in as the serialised StreamMessageResponse (``bytes``): see
    ``P4RuntimeCore.open_stream``.
    """

    send: Callable[[pb.StreamMessageResponse | bytes], None]
    packet_in: Callable[[bytes, dict[str, int]], None] | None = None
    wire: bool = False
    arbitrated: bool = False
    device_id: int = 0
    election_id: int | None = None
    closed: bool = False
    info: dict = field(default_factory=dict)


class Arbitration:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.sessions: list[StreamSession] = []
        self.election_id_past: int | None = None
        self.primary: StreamSession | None = None

    def is_primary(self, election_id: int | None) -> bool:
        p = self.primary
        return p is not None and election_id is not None and p.election_id == election_id

    def update(self, s: StreamSession, upd: pb.MasterArbitrationUpdate) -> list[StreamSession]:
        """Apply an arbitration message; raises P4RuntimeError to terminate the stream."""
        self._validate(s, upd)
        eid = election_id_of(upd)
        if not s.arbitrated:
            s.arbitrated, s.device_id = True, upd.device_id
            self.sessions.append(s)
        was_primary = self.primary is s
        s.election_id = eid
        if eid is not None and (self.election_id_past is None or eid >= self.election_id_past):
            self.election_id_past = eid
            self.primary = s
            return list(self.sessions)
        if was_primary:
            self.primary = None
            return list(self.sessions)
        return [s]

    def remove(self, s: StreamSession) -> list[StreamSession]:
        """A stream ended; if it was the primary, everyone left learns there is none."""
        if s not in self.sessions:
            return []
        self.sessions.remove(s)
        if self.primary is s:
            self.primary = None
            return list(self.sessions)
        return []

    def status_for(self, s: StreamSession) -> tuple[Code, str]:
        if self.primary is s:
            return Code.OK, "you are the primary"
        if self.primary is not None:
            return Code.ALREADY_EXISTS, "a primary client exists; you are a backup"
        return Code.NOT_FOUND, "there is no primary client"

    def _validate(self, s: StreamSession, upd: pb.MasterArbitrationUpdate) -> None:
        if s.arbitrated:
            if upd.device_id != s.device_id:
                raise P4RuntimeError(Code.FAILED_PRECONDITION,
                                     f"device id {upd.device_id} differs from this stream's {s.device_id}")
            if upd.role.name or upd.role.id:
                raise P4RuntimeError(Code.FAILED_PRECONDITION, "this stream has the default role; open a new stream to change role")
        else:
            if upd.device_id != self.device_id:
                raise P4RuntimeError(Code.NOT_FOUND, f"unknown device id {upd.device_id} (this server is device {self.device_id})")
            check_role(upd.role.name, upd.role.id)
        if upd.role.HasField("config"):
            raise P4RuntimeError(Code.INVALID_ARGUMENT, "role.config is not supported (no role scheme agreed)")
        eid = election_id_of(upd)
        if eid is not None and any(o is not s and o.election_id == eid for o in self.sessions):
            raise P4RuntimeError(Code.INVALID_ARGUMENT, f"election id {eid} is already used by another live client")
