"""Serving one ``p4.v1.Entity`` of a ReadRequest, with P4Runtime's wildcards.

Wildcards: table_id 0 = all tables; no match = all entries of the table;
counter/meter/register id 0 = all instances, index unset = all cells; PRE and
digest id 0 = all; action profile id 0 = all profiles, member/group id 0 = all of
them; value set id 0 = all value sets. Direct resources of a table entry are
returned only when the request sets the matching field (``counter_data``,
``meter_config``...). A read naming an id that is not programmed (a member, a
group, a clone session...) answers nothing rather than an error, like a table
read with a match no entry has.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.actions import ActionCall
from p4switch.state.errors import Code, StateError, invalid, not_found
from p4switch.state.externs import CounterUnit, check_index
from p4switch.state.profiles import ActionProfileState
from p4switch.state.runtime import RuntimeState, bitstring_width
from p4switch.state.tables import Exact, Lpm, OptionalMatch, Range, TableEntry, TableState, Ternary

from .p4data import encode_p4data
from .translate import (
    decode_match,
    encode_action,
    encode_clone_session,
    encode_counter_data,
    encode_field_matches,
    encode_match,
    encode_meter_config,
    encode_meter_counter_data,
    encode_multicast_group,
    encode_table_action,
)
from .wire_encode import counter_entity, table_entity


def read_entity(state: RuntimeState, entity: pb.Entity, now_ns: int) -> list[pb.Entity]:
    kind = entity.WhichOneof("entity")
    if kind is None:
        raise invalid("read request entity has no type set")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise StateError(Code.UNIMPLEMENTED, f"reading {kind} is not supported")
    return handler(state, getattr(entity, kind), now_ns)


_DIRECT_RESOURCES = ("counter_data", "meter_config", "meter_counter_data", "time_since_last_hit")


def read_entity_wire(state: RuntimeState, entity: pb.Entity, now_ns: int) -> list[bytes]:
    """:func:`read_entity`'s answer, serialised: the gRPC server's path (see ``wire_encode``)."""
    if entity.WhichOneof("entity") == "counter_entry":
        ce = entity.counter_entry
        return [counter_entity(arr.id, i, *_kept(arr.unit, arr.packets[i], arr.bytes[i]))
                for arr, i in _cells(state.counters, ce.counter_id, ce, "counter")]
    te = entity.table_entry
    has = te.HasField
    if (entity.WhichOneof("entity") != "table_entry" or has("counter_data") or has("meter_config")
            or has("meter_counter_data") or has("time_since_last_hit")):  # the direct resources
        return [e.SerializeToString() for e in read_entity(state, entity, now_ns)]
    out = []
    for table in _tables(state, te):
        entries = _filtered(_selected(table, te), te)
        writer = table_writer(state, table)
        written = writer.entities(entries) if writer is not None else [None] * len(entries)
        if None not in written:  # every entry (the common case: a table of direct actions)
            out += written
            continue
        for e, wire in zip(entries, written):
            if wire is not None:  # written by the engine
                out.append(wire)
            elif e.action is None or isinstance(e.action, ActionCall):
                out.append(table_entity(state, table.id, table.fields, e))
            else:
                out.append(pb.Entity(table_entry=encode_table_entry(state, table, e, te, now_ns)).SerializeToString())
    return out


_WRITERS: weakref.WeakKeyDictionary[TableState, Any] = weakref.WeakKeyDictionary()


def table_writer(state: RuntimeState, table: TableState) -> Any:
    """The engine's writer of ``table``'s entries as wire bytes (``hbh_engine.TableEntityWriter``,
    engine/src/p4rt/p4rtread.rs: ``wire_encode.table_entity``'s bytes, written for a whole table at
    once), made at its first Read; None without the engine. It hands back entries it does not
    write (indirect actions, values over 128 bits) for :func:`read_entity_wire` to write."""
    writer = _WRITERS.get(table)
    if writer is None and _ENGINE_WRITER is not None:
        params = {aid: [p.id for p in a.params] for aid, a in state.actions.items()}
        fields = [(f.id, int(f.kind)) for f in table.fields]
        writer = _WRITERS[table] = _ENGINE_WRITER(table.id, fields, params, _WRITTEN_CLASSES)
    return writer


def _engine_writer() -> Any:
    try:
        from hbh_engine import TableEntityWriter
    except ImportError:  # an engine without it, or none: every entry written in Python
        return None
    return TableEntityWriter


_ENGINE_WRITER = _engine_writer()
_WRITTEN_CLASSES = (Exact, Lpm, Ternary, Range, OptionalMatch, ActionCall)


def _get(objects: dict[int, Any], ident: int, what: str) -> Any:
    obj = objects.get(ident)
    if obj is None:
        raise not_found(f"no {what} with id 0x{ident:08x}")
    return obj


# ------------------------------------------------------------- table entries


def _tables(state: RuntimeState, te: pb.TableEntry) -> Iterable[TableState]:
    if te.table_id:
        return [_get(state.tables, te.table_id, "table")]
    if (te.match or te.HasField("action") or te.priority or te.controller_metadata or te.metadata
            or te.is_default_action):
        raise invalid("reading with table_id 0 (all tables) allows no other filter")
    return list(state.tables.values())


def _selected(table: TableState, te: pb.TableEntry) -> list[TableEntry]:
    if te.is_default_action:
        return [table.default_entry]
    if te.match:
        canon = table.canonical_match(decode_match(table, te.match))
        if te.priority or not table.needs_priority:  # the key is whole: one lookup, not a scan
            e = table.find(canon, te.priority)
            return [e] if e is not None else []
        return [e for e in table if e.match == canon]  # a match without its priority: every priority
    return list(table)


def _filtered(entries: list[TableEntry], te: pb.TableEntry) -> list[TableEntry]:
    """The entries the request's other fields (action id, priority, metadata) select."""
    action_id = te.action.action.action_id if te.action.WhichOneof("type") == "action" else 0
    if not (action_id or te.priority or te.controller_metadata or te.metadata):
        return entries
    out = []
    for e in entries:
        if action_id and getattr(e.action, "action_id", None) != action_id:
            continue
        if te.priority and e.priority != te.priority:
            continue
        if te.controller_metadata and e.controller_metadata != te.controller_metadata:
            continue
        if te.metadata and e.metadata != te.metadata:
            continue
        out.append(e)
    return out


def encode_table_entry(state: RuntimeState, table: TableState, entry: TableEntry, want: pb.TableEntry | None,
                       now_ns: int) -> pb.TableEntry:
    """Full entry; ``want`` (the read request) selects the direct-resource fields."""
    out = pb.TableEntry(table_id=table.id, priority=entry.priority, controller_metadata=entry.controller_metadata,
                        metadata=entry.metadata, idle_timeout_ns=entry.idle_timeout_ns, is_const=entry.is_const,
                        is_default_action=entry.is_default)
    out.match.extend(encode_match(table, entry.match))
    if entry.action is not None:
        out.action.CopyFrom(encode_table_action(state, entry.action))
    if want is None:
        return out
    if want.HasField("counter_data") and entry.direct_counter is not None:
        out.counter_data.CopyFrom(_counter_data(table.info.direct_counter.unit, *entry.direct_counter.snapshot()))
    meter = entry.direct_meter
    if want.HasField("meter_config") and meter is not None and meter.config is not None:
        out.meter_config.CopyFrom(encode_meter_config(meter.config))
    if want.HasField("meter_counter_data") and meter is not None:
        out.meter_counter_data.CopyFrom(encode_meter_counter_data(meter))
    if want.HasField("time_since_last_hit"):
        out.time_since_last_hit.elapsed_ns = max(0, now_ns - entry.last_hit_ns)
    return out


def entry_key(table: TableState, entry: TableEntry) -> pb.TableEntry:
    """Only the key fields, as in DirectCounterEntry/DirectMeterEntry answers."""
    out = pb.TableEntry(table_id=table.id, priority=entry.priority, is_default_action=entry.is_default)
    out.match.extend(encode_match(table, entry.match))
    return out


def _read_table_entries(state: RuntimeState, te: pb.TableEntry, now_ns: int) -> list[pb.Entity]:
    out = []
    for table in _tables(state, te):
        for e in _filtered(_selected(table, te), te):
            out.append(pb.Entity(table_entry=encode_table_entry(state, table, e, te, now_ns)))
    return out


# ------------------------------------------------------------------ counters


def _kept(unit: CounterUnit, packets: int, nbytes: int) -> tuple[int, int]:
    """Only the units the counter keeps (read-write symmetry for PACKETS/BYTES counters)."""
    return packets if unit != CounterUnit.BYTES else 0, nbytes if unit != CounterUnit.PACKETS else 0


def _counter_data(unit: CounterUnit, packets: int, nbytes: int) -> pb.CounterData:
    return encode_counter_data(*_kept(unit, packets, nbytes))


#: One counter cell a Read names, found: (the counter's packet cells, its byte cells, the index,
#: whether it keeps packets, whether it keeps bytes).
CellRef = tuple[Any, Any, int, bool, bool]


def counter_cell_refs(state: RuntimeState, cells: Iterable[tuple[int, int]]) -> list[CellRef]:
    """Each (counter id, index) of ``state`` found and checked as a Read of it is: a counter of no such
    id, an index out of range raise StateError. A state's counters are made with it (none comes or
    goes later, a Write changes their values in place), so the refs hold while the state does."""
    counters = state.counters
    out = []
    for counter_id, index in cells:
        arr = _get(counters, counter_id, "counter")
        check_index(arr.name, index, arr.size)
        out.append((arr.packets, arr.bytes, index, arr.unit != CounterUnit.BYTES, arr.unit != CounterUnit.PACKETS))
    return out


def read_cell_refs(refs: list[CellRef]) -> list[tuple[int, int]]:
    """(packets, bytes) of each cell now: what a Read of them answers (the units the counter keeps)."""
    return [(packets[i] if pk else 0, nbytes[i] if bk else 0) for packets, nbytes, i, pk, bk in refs]


def counter_cells(state: RuntimeState, cells: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """(packets, bytes) of each (counter id, index): what a Read of those cells answers, as values
    (for in-process clients: ``P4RuntimeCore.read_counter_cells``). Raises StateError as the Read would."""
    return read_cell_refs(counter_cell_refs(state, cells))


def _cells(arrays: Mapping[int, Any], array_id: int, entry: Any, what: str) -> Iterator[tuple[Any, int]]:
    """(array, index) pairs a read names: id 0 = every array, no index = every cell (P4Runtime
    wildcards); an index is only meaningful with an id."""
    for arr in [_get(arrays, array_id, what)] if array_id else arrays.values():
        if array_id and entry.HasField("index"):
            yield arr, check_index(arr.name, entry.index.index, arr.size)
        else:
            yield from ((arr, i) for i in range(arr.size))


def _read_counters(state: RuntimeState, ce: pb.CounterEntry, now_ns: int) -> list[pb.Entity]:
    out = []
    for arr, i in _cells(state.counters, ce.counter_id, ce, "counter"):
        data = _counter_data(arr.unit, arr.packets[i], arr.bytes[i])
        out.append(pb.Entity(counter_entry=pb.CounterEntry(counter_id=arr.id, index=pb.Index(index=i), data=data)))
    return out


def _direct_targets(state: RuntimeState, te: pb.TableEntry, has: Callable[[TableState], bool],
                    what: str) -> Iterable[tuple[TableState, TableEntry]]:
    if not te.table_id:
        return [(t, e) for t in state.tables.values() if has(t) for e in t]
    table = _get(state.tables, te.table_id, "table")
    if not has(table):
        raise invalid(f"table '{table.name}' has no {what}")
    if te.is_default_action:
        return [(table, table.default_entry)]
    if not te.match:
        return [(table, e) for e in table]
    e = table.get(decode_match(table, te.match), te.priority)
    if e is None:
        raise not_found(f"{what}: table '{table.name}' has no such entry")
    return [(table, e)]


def _read_direct_counters(state: RuntimeState, dce: pb.DirectCounterEntry, now_ns: int) -> list[pb.Entity]:
    out = []
    targets = _direct_targets(state, dce.table_entry, lambda t: t.info.direct_counter is not None, "direct counter")
    for table, e in targets:
        data = _counter_data(table.info.direct_counter.unit, *e.direct_counter.snapshot())
        msg = pb.DirectCounterEntry(table_entry=entry_key(table, e), data=data)
        out.append(pb.Entity(direct_counter_entry=msg))
    return out


# -------------------------------------------------------------------- meters


def _read_meters(state: RuntimeState, me: pb.MeterEntry, now_ns: int) -> list[pb.Entity]:
    out = []
    for arr, i in _cells(state.meters, me.meter_id, me, "meter"):
        msg = pb.MeterEntry(meter_id=arr.id, index=pb.Index(index=i))
        cfg = arr.config(i)
        if cfg is not None:
            msg.config.CopyFrom(encode_meter_config(cfg))
        if me.HasField("counter_data"):
            msg.counter_data.CopyFrom(encode_meter_counter_data(arr.cell(i)))
        out.append(pb.Entity(meter_entry=msg))
    return out


def _read_direct_meters(state: RuntimeState, dme: pb.DirectMeterEntry, now_ns: int) -> list[pb.Entity]:
    out = []
    targets = _direct_targets(state, dme.table_entry, lambda t: t.info.direct_meter is not None, "direct meter")
    for table, e in targets:
        msg = pb.DirectMeterEntry(table_entry=entry_key(table, e))
        if e.direct_meter.config is not None:
            msg.config.CopyFrom(encode_meter_config(e.direct_meter.config))
        if dme.HasField("counter_data"):
            msg.counter_data.CopyFrom(encode_meter_counter_data(e.direct_meter))
        out.append(pb.Entity(direct_meter_entry=msg))
    return out


# ----------------------------------------------------------------- registers


def _read_registers(state: RuntimeState, re: pb.RegisterEntry, now_ns: int) -> list[pb.Entity]:
    out = []
    for arr, i in _cells(state.registers, re.register_id, re, "register"):
        spec = state.register_specs[arr.id]
        if bitstring_width(spec) is None:
            raise StateError(Code.UNIMPLEMENTED, f"register '{arr.name}': only bit<W>, int<W> and bool cells are readable")
        value = arr.get(i)
        data = encode_p4data(bool(value) if spec.HasField("bool") else value, spec, state.p4info)
        out.append(pb.Entity(register_entry=pb.RegisterEntry(register_id=arr.id, index=pb.Index(index=i), data=data)))
    return out


# ----------------------------------------------------------------- PRE, digests


def _read_pre(state: RuntimeState, pe: pb.PacketReplicationEngineEntry, now_ns: int) -> list[pb.Entity]:
    kind = pe.WhichOneof("type")
    out = []
    if kind in (None, "clone_session_entry"):
        sid = pe.clone_session_entry.session_id
        sessions = [state.pre.clone_sessions[sid]] if sid in state.pre.clone_sessions else []
        for s in sessions if sid else state.pre.clone_sessions.values():
            msg = pb.PacketReplicationEngineEntry(clone_session_entry=encode_clone_session(s))
            out.append(pb.Entity(packet_replication_engine_entry=msg))
    if kind in (None, "multicast_group_entry"):
        gid = pe.multicast_group_entry.multicast_group_id
        groups = [state.pre.multicast_groups[gid]] if gid in state.pre.multicast_groups else []
        for g in groups if gid else state.pre.multicast_groups.values():
            msg = pb.PacketReplicationEngineEntry(multicast_group_entry=encode_multicast_group(g))
            out.append(pb.Entity(packet_replication_engine_entry=msg))
    return out


def _read_digests(state: RuntimeState, de: pb.DigestEntry, now_ns: int) -> list[pb.Entity]:
    bufs = [_get(state.digests, de.digest_id, "digest")] if de.digest_id else state.digests.values()
    out = []
    for buf in bufs:
        if buf.config is None:
            continue
        c = buf.config
        cfg = pb.DigestEntry.Config(max_timeout_ns=c.max_timeout_ns, max_list_size=c.max_list_size,
                                    ack_timeout_ns=c.ack_timeout_ns)
        out.append(pb.Entity(digest_entry=pb.DigestEntry(digest_id=buf.id, config=cfg)))
    return out


# ------------------------------------------------------------ action profiles


def _profiles(state: RuntimeState, profile_id: int, ident: int, what: str) -> list[ActionProfileState]:
    if profile_id:
        return [_get(state.action_profiles, profile_id, "action profile")]
    if ident:
        raise invalid(f"reading a {what} id needs its action profile id (0 means all profiles)")
    return list(state.action_profiles.values())


def _read_profile_members(state: RuntimeState, m: pb.ActionProfileMember, now_ns: int) -> list[pb.Entity]:
    out = []
    for prof in _profiles(state, m.action_profile_id, m.member_id, "member"):
        members = [prof.members[m.member_id]] if m.member_id in prof.members else []
        for mem in members if m.member_id else prof.members.values():
            msg = pb.ActionProfileMember(action_profile_id=prof.id, member_id=mem.member_id,
                                         action=encode_action(state, mem.action))
            out.append(pb.Entity(action_profile_member=msg))
    return out


def _read_profile_groups(state: RuntimeState, g: pb.ActionProfileGroup, now_ns: int) -> list[pb.Entity]:
    out = []
    for prof in _profiles(state, g.action_profile_id, g.group_id, "group"):
        groups = [prof.groups[g.group_id]] if g.group_id in prof.groups else []
        for grp in groups if g.group_id else prof.groups.values():
            msg = pb.ActionProfileGroup(action_profile_id=prof.id, group_id=grp.group_id, max_size=grp.max_size)
            for mid, weight in grp.members:
                msg.members.add(member_id=mid, weight=weight)
            out.append(pb.Entity(action_profile_group=msg))
    return out


# ---------------------------------------------------------------- value sets


def _read_value_sets(state: RuntimeState, vse: pb.ValueSetEntry, now_ns: int) -> list[pb.Entity]:
    sets = [_get(state.value_sets, vse.value_set_id, "value set")] if vse.value_set_id else state.value_sets.values()
    out = []
    for vs in sets:
        msg = pb.ValueSetEntry(value_set_id=vs.id)
        for member in vs.members:
            msg.members.add().match.extend(encode_field_matches(vs.fields, member))
        out.append(pb.Entity(value_set_entry=msg))
    return out


_HANDLERS: dict[str, Callable[[RuntimeState, Any, int], list[pb.Entity]]] = {
    "table_entry": _read_table_entries,
    "counter_entry": _read_counters,
    "direct_counter_entry": _read_direct_counters,
    "meter_entry": _read_meters,
    "direct_meter_entry": _read_direct_meters,
    "register_entry": _read_registers,
    "packet_replication_engine_entry": _read_pre,
    "digest_entry": _read_digests,
    "action_profile_member": _read_profile_members,
    "action_profile_group": _read_profile_groups,
    "value_set_entry": _read_value_sets,
}
