"""Applying one ``p4.v1.Update`` to the runtime state.

Each handler validates, applies, and returns an undo callable, so that the core
can roll a batch back (ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC). Refusals raise
StateError with the code the P4Runtime specification gives for the case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.digests import DigestConfig
from p4switch.state.errors import Code, StateError, invalid, not_found
from p4switch.state.externs import check_index
from p4switch.state.profiles import ActionProfileState
from p4switch.state.runtime import RuntimeState, bitstring_width
from p4switch.state.tables import TableEntry, TableState
from p4switch.state.value_sets import ValueSetState

from .p4data import decode_p4data
from .translate import (
    check_meter_counter_data,
    check_watch,
    decode_action,
    decode_clone_session,
    decode_counter_data,
    decode_field_matches,
    decode_match,
    decode_meter_config,
    decode_multicast_group,
    decode_table_action,
)

Undo = Callable[[], None]
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE


def _noop() -> None:
    return None


def apply_update(state: RuntimeState, update: pb.Update) -> Undo:
    if update.type not in (INSERT, MODIFY, DELETE):
        raise invalid(f"update type {pb.Update.Type.Name(update.type)} is not INSERT, MODIFY or DELETE")
    kind = update.entity.WhichOneof("entity")
    if kind is None:
        raise invalid("update has no entity")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise StateError(Code.UNIMPLEMENTED, f"writing {kind} is not supported")
    return handler(state, update.type, getattr(update.entity, kind))


def lookup_id(objects: Mapping[int, Any], ident: int, what: str) -> Any:
    if ident == 0:
        raise invalid(f"{what} id 0 is not valid in a write")
    obj = objects.get(ident)
    if obj is None:
        raise not_found(f"no {what} with id 0x{ident:08x}")
    return obj


def _modify_only(utype: int, what: str) -> None:
    if utype != MODIFY:
        raise invalid(f"{what} only supports MODIFY, got {pb.Update.Type.Name(utype)}")


# ------------------------------------------------------------- table entries


def _table_entry(state: RuntimeState, utype: int, te: pb.TableEntry) -> Undo:
    table: TableState = lookup_id(state.tables, te.table_id, "table")
    if te.is_const:
        raise invalid(f"table '{table.name}': is_const must be false in a write")
    if te.HasField("time_since_last_hit"):
        raise invalid(f"table '{table.name}': time_since_last_hit must be unset in a write")
    opts: dict[str, Any] = {"controller_metadata": te.controller_metadata, "metadata": te.metadata}
    if te.HasField("counter_data"):
        opts["counter_data"] = decode_counter_data(te.counter_data, f"table '{table.name}'")
    if te.HasField("meter_config"):
        opts["meter_config"] = decode_meter_config(te.meter_config)
    if te.HasField("meter_counter_data"):
        if table.info.direct_meter is None:
            raise invalid(f"table '{table.name}' has no direct meter: meter_counter_data not allowed")
        check_meter_counter_data(te.meter_counter_data, f"table '{table.name}'")
    if te.is_default_action:
        undo, entry = _default_entry(state, table, utype, te, opts)
    else:
        undo, entry = _match_entry(state, table, utype, te, opts)
    if te.HasField("meter_counter_data") and entry is not None and entry.direct_meter is not None:
        entry.direct_meter.reset_colors()
    return undo


def _default_entry(state: RuntimeState, table: TableState, utype: int, te: pb.TableEntry,
                   opts: dict[str, Any]) -> tuple[Undo, TableEntry]:
    if utype != MODIFY:
        raise invalid(f"table '{table.name}': the default entry can only be modified")
    if te.match or te.priority:
        raise invalid(f"table '{table.name}': the default entry has no match and priority 0")
    if te.idle_timeout_ns:
        raise invalid(f"table '{table.name}': the default entry has no idle timeout")
    action_id, params = None, ()
    if te.HasField("action"):
        action_id, params = decode_table_action(table, state, te.action)
    entry = table.default_entry
    snap = entry.snapshot()
    table.modify_default(action_id, params, **opts)
    return lambda: table.restore_snapshot(entry, snap), entry


def _match_entry(state: RuntimeState, table: TableState, utype: int, te: pb.TableEntry,
                 opts: dict[str, Any]) -> tuple[Undo, TableEntry | None]:
    match = decode_match(table, te.match)
    if utype == DELETE:
        entry = table.delete(match, te.priority)
        return lambda: table.restore(entry), None
    action_id, params = None, ()
    if te.HasField("action"):
        action_id, params = decode_table_action(table, state, te.action)
    opts["idle_timeout_ns"] = te.idle_timeout_ns
    if utype == INSERT:
        if action_id is None:
            raise invalid(f"table '{table.name}': INSERT needs an action")
        entry = table.insert(match, action_id, params, te.priority, **opts)
        return lambda: table.discard(entry), entry
    existing = table.get(match, te.priority)
    snap = existing.snapshot() if existing is not None else None
    entry = table.modify(match, te.priority, action_id=action_id, params=params, **opts)
    return lambda: table.restore_snapshot(entry, snap), entry


def find_entry(state: RuntimeState, te: pb.TableEntry, what: str) -> tuple[TableState, TableEntry]:
    """The entry a DirectCounterEntry/DirectMeterEntry addresses (NOT_FOUND if absent)."""
    table: TableState = lookup_id(state.tables, te.table_id, "table")
    if te.is_default_action:
        return table, table.default_entry
    entry = table.get(decode_match(table, te.match), te.priority)
    if entry is None:
        raise not_found(f"{what}: table '{table.name}' has no such entry")
    return table, entry


# ------------------------------------------------------------------ counters


def _counter_entry(state: RuntimeState, utype: int, ce: pb.CounterEntry) -> Undo:
    _modify_only(utype, "CounterEntry")
    arr = lookup_id(state.counters, ce.counter_id, "counter")
    indices = [check_index(arr.name, ce.index.index, arr.size)] if ce.HasField("index") else range(arr.size)
    if not ce.HasField("data"):
        return _noop
    packets, nbytes = decode_counter_data(ce.data, f"counter '{arr.name}'")
    old = [(i, arr.packets[i], arr.bytes[i]) for i in indices]
    for i in indices:
        arr.write(i, packets, nbytes)

    def undo() -> None:
        for i, p, b in old:
            arr.write(i, p, b)
    return undo


def _direct_counter_entry(state: RuntimeState, utype: int, dce: pb.DirectCounterEntry) -> Undo:
    _modify_only(utype, "DirectCounterEntry")
    table, entry = find_entry(state, dce.table_entry, "DirectCounterEntry")
    if entry.direct_counter is None:
        raise invalid(f"table '{table.name}' has no direct counter")
    if not dce.HasField("data"):
        return _noop
    cell = entry.direct_counter
    old = cell.snapshot()
    cell.set(*decode_counter_data(dce.data, f"direct counter of table '{table.name}'"))
    return lambda: cell.set(*old)


# -------------------------------------------------------------------- meters


def _meter_entry(state: RuntimeState, utype: int, me: pb.MeterEntry) -> Undo:
    _modify_only(utype, "MeterEntry")
    arr = lookup_id(state.meters, me.meter_id, "meter")
    config = decode_meter_config(me.config).check(arr.name, arr.meter_type) if me.HasField("config") else None
    if me.HasField("counter_data"):
        check_meter_counter_data(me.counter_data, f"meter '{arr.name}'")
    if me.HasField("index"):
        indices = [check_index(arr.name, me.index.index, arr.size)]
    else:
        indices = range(arr.size) if config is not None else list(arr.cells)
    old = {i: arr.config(i) for i in indices}
    for i in indices:
        arr.configure(i, config)
        if me.HasField("counter_data"):
            arr.cell(i).reset_colors()

    def undo() -> None:
        for i, cfg in old.items():
            arr.configure(i, cfg)
    return undo


def _direct_meter_entry(state: RuntimeState, utype: int, dme: pb.DirectMeterEntry) -> Undo:
    _modify_only(utype, "DirectMeterEntry")
    table, entry = find_entry(state, dme.table_entry, "DirectMeterEntry")
    cell = entry.direct_meter
    if cell is None or table.info.direct_meter is None:
        raise invalid(f"table '{table.name}' has no direct meter")
    config = None
    if dme.HasField("config"):
        config = decode_meter_config(dme.config).check(table.info.direct_meter.name, cell.meter_type)
    if dme.HasField("counter_data"):
        check_meter_counter_data(dme.counter_data, f"direct meter of table '{table.name}'")
        cell.reset_colors()
    old = cell.config
    cell.configure(config)
    return lambda: cell.configure(old)


# ----------------------------------------------------------------- registers


def _register_entry(state: RuntimeState, utype: int, re: pb.RegisterEntry) -> Undo:
    _modify_only(utype, "RegisterEntry")
    arr = lookup_id(state.registers, re.register_id, "register")
    spec = state.register_specs[arr.id]
    if bitstring_width(spec) is None:
        raise StateError(Code.UNIMPLEMENTED, f"register '{arr.name}': only bit<W>, int<W> and bool cells are writable")
    if not re.HasField("data"):
        raise invalid(f"register '{arr.name}': data missing")
    value = int(decode_p4data(re.data, spec, state.p4info, f"register '{arr.name}'"))
    indices = [check_index(arr.name, re.index.index, arr.size)] if re.HasField("index") else range(arr.size)
    old = [(i, arr.cells[i]) for i in indices]
    for i in indices:
        arr.set(i, value)

    def undo() -> None:
        for i, v in old:
            arr.cells[i] = v
    return undo


# ----------------------------------------------------------------------- PRE


def _pre_entry(state: RuntimeState, utype: int, pe: pb.PacketReplicationEngineEntry) -> Undo:
    pre = state.pre
    kind = pe.WhichOneof("type")
    if kind == "clone_session_entry":
        sid = pe.clone_session_entry.session_id
        old_session = pre.clone_sessions.get(sid)
        if utype == DELETE:
            pre.delete_clone_session(sid)
        else:
            session = decode_clone_session(pe.clone_session_entry)
            (pre.insert_clone_session if utype == INSERT else pre.modify_clone_session)(session)
        return lambda: pre.restore_clone_session(sid, old_session)
    if kind == "multicast_group_entry":
        gid = pe.multicast_group_entry.multicast_group_id
        old_group = pre.multicast_groups.get(gid)
        if utype == DELETE:
            pre.delete_multicast_group(gid)
        else:
            group = decode_multicast_group(pe.multicast_group_entry)
            (pre.insert_multicast_group if utype == INSERT else pre.modify_multicast_group)(group)
        return lambda: pre.restore_multicast_group(gid, old_group)
    raise invalid("PacketReplicationEngineEntry has neither a clone session nor a multicast group")


# ------------------------------------------------------------------- digests


def _digest_entry(state: RuntimeState, utype: int, de: pb.DigestEntry) -> Undo:
    buf = lookup_id(state.digests, de.digest_id, "digest")
    old = buf.config
    if utype == DELETE:
        if old is None:
            raise not_found(f"digest '{buf.name}' is not enabled")
        buf.configure(None)
        return lambda: buf.configure(old)
    if not de.HasField("config"):
        raise invalid(f"digest '{buf.name}': config missing")
    c = de.config
    config = DigestConfig(c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns).check(buf.name)
    if utype == INSERT and old is not None:
        raise StateError(Code.ALREADY_EXISTS, f"digest '{buf.name}' is already enabled (use MODIFY)")
    if utype == MODIFY and old is None:
        raise not_found(f"digest '{buf.name}' is not enabled (use INSERT)")
    buf.configure(config)
    return lambda: buf.configure(old)


# ------------------------------------------------------------ action profiles


def _profile_member(state: RuntimeState, utype: int, m: pb.ActionProfileMember) -> Undo:
    prof: ActionProfileState = lookup_id(state.action_profiles, m.action_profile_id, "action profile")
    mid = m.member_id
    if utype == DELETE:
        member = prof.delete_member(mid)
        return lambda: prof.restore_member(member)
    if not m.HasField("action"):
        raise invalid(f"action profile '{prof.name}' member {mid}: action missing")
    action_id, params = decode_action(state, m.action)
    if utype == INSERT:
        prof.insert_member(mid, action_id, params)
        return lambda: prof.drop_member(mid)
    old = prof.modify_member(mid, action_id, params)
    return lambda: prof.set_member_action(mid, old)


def _profile_group(state: RuntimeState, utype: int, g: pb.ActionProfileGroup) -> Undo:
    prof: ActionProfileState = lookup_id(state.action_profiles, g.action_profile_id, "action profile")
    gid = g.group_id
    if utype == DELETE:
        group = prof.delete_group(gid)
        return lambda: prof.put_group(group)
    members = []
    for gm in g.members:
        check_watch(gm.watch, gm.watch_port, f"action selector '{prof.name}' group {gid} member {gm.member_id}")
        members.append((gm.member_id, gm.weight))
    if utype == INSERT:
        prof.insert_group(gid, members, g.max_size)
        return lambda: prof.drop_group(gid)
    old = prof.modify_group(gid, members, g.max_size)
    return lambda: prof.put_group(old)


# ---------------------------------------------------------------- value sets


def _value_set_entry(state: RuntimeState, utype: int, vse: pb.ValueSetEntry) -> Undo:
    vs: ValueSetState = lookup_id(state.value_sets, vse.value_set_id, "value set")
    if utype != MODIFY:
        raise invalid(f"value set '{vs.name}' can only be modified as a whole (MODIFY), "
                      f"not {pb.Update.Type.Name(utype)}")
    where = f"value set '{vs.name}'"
    members = [decode_field_matches(where, vs.fields, m.match) for m in vse.members]
    old = vs.set_members(members)
    return lambda: vs.restore(old)


_HANDLERS: dict[str, Callable[[RuntimeState, int, Any], Undo]] = {
    "table_entry": _table_entry,
    "counter_entry": _counter_entry,
    "direct_counter_entry": _direct_counter_entry,
    "meter_entry": _meter_entry,
    "direct_meter_entry": _direct_meter_entry,
    "register_entry": _register_entry,
    "packet_replication_engine_entry": _pre_entry,
    "digest_entry": _digest_entry,
    "action_profile_member": _profile_member,
    "action_profile_group": _profile_group,
    "value_set_entry": _value_set_entry,
}
