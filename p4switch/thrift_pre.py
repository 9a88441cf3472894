"""BMv2's Thrift multicast (``simple_pre`` / ``simple_pre_lag``) and mirroring calls on p4switch's PRE.

Why: ``mc_mgrp_create``, ``mc_node_create``, ``mc_node_associate`` and ``mirroring_add`` lines of a
simple_switch_CLI commands file must build the same multicast groups and clone sessions that
P4Runtime's PacketReplicationEngineEntry builds, in the one ``PacketReplicationEngine`` of the
running state. BMv2's model: a node (L1 handle) is a replication id and a port map; a group's
replicas are the ports of its associated nodes, each with the node's rid as ``egress_rid``.
A group handle is the group id. Port maps are BMv2's strings, port 0 the last character.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bm_runtime.simple_pre import ttypes as P

from p4switch.state.errors import StateError
from p4switch.state.pre import CloneSession, MulticastGroup, Replica
from p4switch.thrift_handles import LowestFree

McCode = P.McOperationErrorCode


def ports_of(port_map: str) -> list[int]:
    """The ports set in a BMv2 port map string (``"101"``: ports 0 and 2)."""
    return [p for p, c in enumerate(reversed(port_map)) if c == "1"]


class PreCalls:
    """The multicast calls, on ``holder.state.pre``, run on the switch loop."""

    def __init__(self, holder: Any, run_in_loop: Callable[[Callable[[], Any]], Any]) -> None:
        self._holder = holder
        self._run = run_in_loop
        self._nodes: dict[int, tuple[int, tuple[int, ...]]] = {}  # L1 handle -> (rid, ports)
        self._members: dict[int, list[int]] = {}  # group -> L1 handles
        self._handles = LowestFree()

    def _pre(self) -> Any:
        if self._holder.state is None:
            raise P.InvalidMcOperation(code=McCode.ERROR)
        return self._holder.state.pre

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return self._run(fn)
        except StateError:
            raise P.InvalidMcOperation(code=McCode.ERROR) from None

    def _sync(self, group: int) -> None:
        replicas = tuple(Replica(port, rid) for h in self._members.get(group, [])
                         for rid, ports in [self._nodes[h]] for port in ports)
        self._pre().modify_multicast_group(MulticastGroup(group, replicas))

    def bm_mc_mgrp_create(self, cxt_id: int, mgrp: int) -> int:
        """BMv2 answers the group id as its handle; creating an existing group changes nothing."""
        def create() -> int:
            if mgrp not in self._members:
                self._pre().insert_multicast_group(MulticastGroup(mgrp, ()))
                self._members[mgrp] = []
            return mgrp
        return self._call(create)

    def bm_mc_mgrp_destroy(self, cxt_id: int, mgrp_handle: int) -> None:
        """BMv2 succeeds whether or not the group exists; its nodes are free to join another."""
        def destroy() -> None:
            if self._members.pop(mgrp_handle, None) is not None:
                self._pre().delete_multicast_group(mgrp_handle)
        self._call(destroy)

    def bm_mc_node_create(self, cxt_id: int, rid: int, port_map: str, lag_map: str = "") -> int:
        if lag_map and "1" in lag_map:
            raise P.InvalidMcOperation(code=McCode.ERROR)  # no LAGs in p4switch
        handle = self._handles.take()  # BMv2: a context's nodes from 0, the lowest free first
        self._nodes[handle] = (rid, tuple(ports_of(port_map)))
        return handle

    def bm_mc_node_update(self, cxt_id: int, l1_handle: int, port_map: str, lag_map: str = "") -> None:
        if l1_handle not in self._nodes:
            raise P.InvalidMcOperation(code=McCode.INVALID_L1_HANDLE)
        self._nodes[l1_handle] = (self._nodes[l1_handle][0], tuple(ports_of(port_map)))
        self._call(lambda: [self._sync(g) for g, hs in self._members.items() if l1_handle in hs])

    def _group_of(self, l1_handle: int) -> int | None:
        return next((g for g, hs in self._members.items() if l1_handle in hs), None)

    def bm_mc_node_associate(self, cxt_id: int, mgrp_handle: int, l1_handle: int) -> None:
        if l1_handle not in self._nodes:
            raise P.InvalidMcOperation(code=McCode.INVALID_L1_HANDLE)
        if mgrp_handle not in self._members:
            raise P.InvalidMcOperation(code=McCode.INVALID_MGRP_HANDLE)
        if self._group_of(l1_handle) is not None:  # BMv2: a node is in one group at most
            raise P.InvalidMcOperation(code=McCode.ERROR)

        def associate() -> None:
            self._members[mgrp_handle].append(l1_handle)
            self._sync(mgrp_handle)
        self._call(associate)

    def bm_mc_node_dissociate(self, cxt_id: int, mgrp_handle: int, l1_handle: int) -> None:
        if l1_handle not in self._nodes:
            raise P.InvalidMcOperation(code=McCode.INVALID_L1_HANDLE)
        if mgrp_handle not in self._members:
            raise P.InvalidMcOperation(code=McCode.INVALID_MGRP_HANDLE)
        if l1_handle not in self._members[mgrp_handle]:
            raise P.InvalidMcOperation(code=McCode.ERROR)

        def dissociate() -> None:
            self._members[mgrp_handle].remove(l1_handle)
            self._sync(mgrp_handle)
        self._call(dissociate)

    def bm_mc_node_destroy(self, cxt_id: int, l1_handle: int) -> None:
        """BMv2 lets a node be destroyed while associated: it leaves its group first."""
        if l1_handle not in self._nodes:
            raise P.InvalidMcOperation(code=McCode.INVALID_L1_HANDLE)
        group = self._group_of(l1_handle)
        if group is not None:
            self.bm_mc_node_dissociate(cxt_id, group, l1_handle)
        del self._nodes[l1_handle]
        self._handles.release(l1_handle)


    def bm_mc_get_entries(self, cxt_id: int) -> str:
        """BMv2's JSON dump of the groups and nodes (``mc_dump``); a node's L2 handle is its L1
        handle (BMv2 takes and frees both together), no LAGs."""
        groups = [{"id": g, "l1_handles": list(hs)} for g, hs in sorted(self._members.items())]
        nodes = [{"handle": h, "rid": rid, "l2_handle": h} for h, (rid, _) in sorted(self._nodes.items())]
        l2 = [{"handle": h, "ports": sorted(ports), "lags": []} for h, (_, ports) in sorted(self._nodes.items())]
        return json.dumps({"mgrps": groups, "l1_handles": nodes, "l2_handles": l2, "lags": []})


class MirroringCalls:
    """``mirroring_session_add/delete/get`` on the PRE's clone sessions (a session to a port)."""

    def __init__(self, holder: Any, run_in_loop: Callable[[Callable[[], Any]], Any]) -> None:
        self._holder = holder
        self._run = run_in_loop

    def add(self, mirror_id: int, port: int | None) -> None:
        def add() -> None:
            pre = self._holder.state.pre
            session = CloneSession(mirror_id, (Replica(port),))
            if pre.clone_session(mirror_id) is None:
                pre.insert_clone_session(session)
            else:
                pre.modify_clone_session(session)
        self._run(add)

    def delete(self, mirror_id: int) -> None:
        self._run(lambda: self._holder.state.pre.delete_clone_session(mirror_id))

    def get(self, mirror_id: int) -> tuple[int, ...] | None:
        def get() -> tuple[int, ...] | None:
            s = self._holder.state.pre.clone_session(mirror_id)
            return None if s is None else tuple(r.port for r in s.replicas)
        return self._run(get)
