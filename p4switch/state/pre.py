"""The packet replication engine: clone sessions and multicast groups.

As P4Runtime defines them (``CloneSessionEntry``, ``MulticastGroupEntry``). The
limits are v1model's: ports are ``bit<9>``, replica instances (``egress_rid``)
``bit<16>``, multicast groups (``mcast_grp``) ``bit<16>``, class of service
(``priority``) ``bit<3>``. Id 0 is P4Runtime's wildcard, so it is never writable.

The engine's v1model walk reads a copy of the sessions and groups (``engine``, an
``hbh_engine.Pre``, engine/src/v1model/pre.rs) so that it makes clones and multicast copies without a
Python call. The dicts here stay what P4Runtime reads; the copy has one writer, ``_store``,
which every change (insert, modify, delete, a failed batch's restore) goes through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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
        self.engine: Any = _engine_pre()

    def _store(self, kind: type, ident: int, value: CloneSession | MulticastGroup | None) -> None:
        """The one writer of both dicts and of the engine's copy: ``value`` None removes."""
        store: dict = self.clone_sessions if kind is CloneSession else self.multicast_groups
        if value is None:
            store.pop(ident, None)
        else:
            store[ident] = value
        eng = self.engine
        if eng is None:
            return
        if isinstance(value, CloneSession):
            eng.set_clone_session(ident, [(r.port, r.instance) for r in value.replicas], value.class_of_service,
                                  value.packet_length_bytes)
        elif isinstance(value, MulticastGroup):
            eng.set_multicast_group(ident, [(r.port, r.instance) for r in value.replicas])
        elif kind is CloneSession:
            eng.remove_clone_session(ident)
        else:
            eng.remove_multicast_group(ident)

    def restore_clone_session(self, session_id: int, old: CloneSession | None) -> None:
        """Undo of a write in a failed batch: ``old`` None means there was none."""
        self._store(CloneSession, session_id, old)

    def restore_multicast_group(self, group_id: int, old: MulticastGroup | None) -> None:
        """Undo of a write in a failed batch: ``old`` None means there was none."""
        self._store(MulticastGroup, group_id, old)

    # ----------------------------------------------------------- clones

    def insert_clone_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.session_id in self.clone_sessions:
            raise StateError(Code.ALREADY_EXISTS, f"clone session {session.session_id} already exists")
        self._store(CloneSession, session.session_id, session)

    def modify_clone_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.session_id not in self.clone_sessions:
            raise not_found(f"clone session {session.session_id} does not exist")
        self._store(CloneSession, session.session_id, session)

    def delete_clone_session(self, session_id: int) -> CloneSession:
        self._check_id("clone session", session_id, self.limits.session_bits)
        session = self.clone_sessions.get(session_id)
        if session is None:
            raise not_found(f"clone session {session_id} does not exist")
        self._store(CloneSession, session_id, None)
        return session

    def clone_session(self, session_id: int) -> CloneSession | None:
        """Data-plane lookup (None: the packet is not cloned)."""
        return self.clone_sessions.get(session_id)

    # -------------------------------------------------------- multicast

    def insert_multicast_group(self, group: MulticastGroup) -> None:
        self._check_group(group)
        if group.group_id in self.multicast_groups:
            raise StateError(Code.ALREADY_EXISTS, f"multicast group {group.group_id} already exists")
        self._store(MulticastGroup, group.group_id, group)

    def modify_multicast_group(self, group: MulticastGroup) -> None:
        self._check_group(group)
        if group.group_id not in self.multicast_groups:
            raise not_found(f"multicast group {group.group_id} does not exist")
        self._store(MulticastGroup, group.group_id, group)

    def delete_multicast_group(self, group_id: int) -> MulticastGroup:
        self._check_id("multicast group", group_id, self.limits.group_bits)
        group = self.multicast_groups.get(group_id)
        if group is None:
            raise not_found(f"multicast group {group_id} does not exist")
        self._store(MulticastGroup, group_id, None)
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


def _engine_pre() -> Any:
    """The engine's copy (None when hbh_engine is not built: the Python walk reads the dicts)."""
    try:
        import hbh_engine
    except ImportError:
        return None
    return hbh_engine.Pre()
