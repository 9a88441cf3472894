"""The packet replication engine: clone sessions and multicast groups.

As P4Runtime defines them (``CloneSessionEntry``, ``MulticastGroupEntry``). The
limits are v1model's: ports are ``bit<9>``, replica instances (``egress_rid``)
``bit<16>``, multicast groups (``mcast_grp``) ``bit<16>``, class of service
(``priority``) ``bit<3>``. Id 0 is P4Runtime's wildcard, so it is never writable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import Code, StateError, invalid, not_found


@dataclass(frozen=True, slots=True)
class Replica:
    """One copy: to ``port`` with ``instance`` (``egress_rid``).

    ``port_as_bytes`` remembers whether the client used the ``port`` bytes field
    (P4Runtime 1.4) or the older ``egress_port`` integer, for read-write symmetry.
    """

    port: int
    instance: int = 0
    port_as_bytes: bool = False


@dataclass(frozen=True, slots=True)
class CloneSession:
    session_id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0  # 0: no truncation


@dataclass(frozen=True, slots=True)
class MulticastGroup:
    group_id: int
    replicas: tuple[Replica, ...]
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class PreLimits:
    port_bits: int = 9
    instance_bits: int = 16
    group_bits: int = 16
    session_bits: int = 32
    cos_bits: int = 3


class PacketReplicationEngine:
    def __init__(self, limits: PreLimits | None = None) -> None:
        self.limits = limits or PreLimits()
        self.clone_sessions: dict[int, CloneSession] = {}
        self.multicast_groups: dict[int, MulticastGroup] = {}

    # ----------------------------------------------------------- clones

    def insert_clone_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.session_id in self.clone_sessions:
            raise StateError(Code.ALREADY_EXISTS, f"clone session {session.session_id} already exists")
        self.clone_sessions[session.session_id] = session

    def modify_clone_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.session_id not in self.clone_sessions:
            raise not_found(f"clone session {session.session_id} does not exist")
        self.clone_sessions[session.session_id] = session

    def delete_clone_session(self, session_id: int) -> CloneSession:
        self._check_id("clone session", session_id, self.limits.session_bits)
        session = self.clone_sessions.pop(session_id, None)
        if session is None:
            raise not_found(f"clone session {session_id} does not exist")
        return session

    def clone_session(self, session_id: int) -> CloneSession | None:
        """Data-plane lookup (None: the packet is not cloned)."""
        return self.clone_sessions.get(session_id)

    # -------------------------------------------------------- multicast

    def insert_multicast_group(self, group: MulticastGroup) -> None:
        self._check_group(group)
        if group.group_id in self.multicast_groups:
            raise StateError(Code.ALREADY_EXISTS, f"multicast group {group.group_id} already exists")
        self.multicast_groups[group.group_id] = group

    def modify_multicast_group(self, group: MulticastGroup) -> None:
        self._check_group(group)
        if group.group_id not in self.multicast_groups:
            raise not_found(f"multicast group {group.group_id} does not exist")
        self.multicast_groups[group.group_id] = group

    def delete_multicast_group(self, group_id: int) -> MulticastGroup:
        self._check_id("multicast group", group_id, self.limits.group_bits)
        group = self.multicast_groups.pop(group_id, None)
        if group is None:
            raise not_found(f"multicast group {group_id} does not exist")
        return group

    def multicast_group(self, group_id: int) -> MulticastGroup | None:
        """Data-plane lookup (None: the packet is dropped)."""
        return self.multicast_groups.get(group_id)

    # ------------------------------------------------------- validation

    def _check_session(self, s: CloneSession) -> None:
        self._check_id("clone session", s.session_id, self.limits.session_bits)
        if not 0 <= s.class_of_service < 1 << self.limits.cos_bits:
            raise invalid(f"clone session {s.session_id}: class_of_service {s.class_of_service} "
                          f"not in 0..{(1 << self.limits.cos_bits) - 1}")
        if s.packet_length_bytes < 0:
            raise invalid(f"clone session {s.session_id}: negative packet_length_bytes {s.packet_length_bytes}")
        self._check_replicas(f"clone session {s.session_id}", s.replicas)

    def _check_group(self, g: MulticastGroup) -> None:
        self._check_id("multicast group", g.group_id, self.limits.group_bits)
        self._check_replicas(f"multicast group {g.group_id}", g.replicas)

    def _check_id(self, what: str, ident: int, bits: int) -> None:
        if not 0 < ident < 1 << bits:
            raise invalid(f"{what} id {ident} not in 1..{(1 << bits) - 1} (0 is the read wildcard)")

    def _check_replicas(self, where: str, replicas: Iterable[Replica]) -> None:
        seen = set()
        for r in replicas:
            if not 0 <= r.port < 1 << self.limits.port_bits:
                raise invalid(f"{where}: port {r.port} does not fit bit<{self.limits.port_bits}>")
            if not 0 <= r.instance < 1 << self.limits.instance_bits:
                raise invalid(f"{where}: instance {r.instance} does not fit bit<{self.limits.instance_bits}>")
            if (r.port, r.instance) in seen:
                raise invalid(f"{where}: duplicate replica (port {r.port}, instance {r.instance})")
            seen.add((r.port, r.instance))
