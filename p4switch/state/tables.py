"""Match-action tables: decoded entries, P4Runtime validation, fast lookups.

Entries are stored decoded (ints), keyed like P4Runtime keys them: by their
match and priority. Lookups must not scan entries per packet, so entries are
grouped by their mask signature ("tuple space search"): within a group a dict
maps the masked key to the entries; groups are visited from the highest rank
down (rank = priority for ternary/range/optional tables, prefix length for LPM
tables) and the visit stops once no group can beat the best hit. The grouping is
rebuilt lazily after writes, never per packet. All-exact tables use one dict.

Indirect tables (an action profile or selector ``implementation``) hold a
``MemberRef``/``GroupRef``/``ActionSet`` (``profiles.py``) as an entry's action instead
of an ``ActionCall``; the table tells its ``profile`` which references its entries make,
so that a member or group in use cannot be deleted. Their default entry is the
program's (P4Runtime makes it constant for indirect tables).

Every change a lookup can see (an entry added, removed or given another action, the default
action) is also sent to the engine programs that apply the table (``attach``,
``dataplane.py``), by the one mutator that makes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from p4.config.v1 import p4info_pb2

from .actions import ActionCall, ActionInfo, Scope
from .bytestrings import decode_unsigned, fits_unsigned
from .dataplane import ACT_DIRECT, ACT_GROUP, ACT_MEMBER, ACT_NONE, ACT_SET, Sinks
from .errors import Code, StateError, invalid, not_found
from .externs import CounterCell, DirectCounterInfo, DirectMeterInfo, MeterCell, MeterConfig
from .profiles import ActionProfileState, ActionSet, GroupRef, IndirectAction, MemberRef, WeightedAction

MAX_PRIORITY = (1 << 31) - 1  # TableEntry.priority is an int32
UNSIZED_KEY_BITS = 32  # width of a key field P4Info gives no bitwidth (error, plain enum)


def encode_action(act: ActionCall | IndirectAction | None) -> tuple:
    """An entry's action in the engine's form (dataplane.py): ``(kind, id, params, one-shot set)``."""
    if act is None:
        return (ACT_NONE, 0, (), ())
    if type(act) is ActionCall:
        return (ACT_DIRECT, act.action_id, act.params, ())
    if type(act) is MemberRef:
        return (ACT_MEMBER, act.member_id, (), ())
    if type(act) is GroupRef:
        return (ACT_GROUP, act.group_id, (), ())
    return (ACT_SET, 0, (), tuple((wa.action.action_id, wa.action.params, wa.weight) for wa in act.actions))


class MatchKind(IntEnum):
    """``p4.config.v1.MatchField.MatchType`` values."""

    EXACT = 2
    LPM = 3
    TERNARY = 4
    RANGE = 5
    OPTIONAL = 6


@dataclass(frozen=True, slots=True)
class Exact:
    value: int


@dataclass(frozen=True, slots=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True, slots=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True, slots=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class OptionalMatch:
    value: int


Match = Exact | Lpm | Ternary | Range | OptionalMatch
_KIND_OF = {Exact: MatchKind.EXACT, Lpm: MatchKind.LPM, Ternary: MatchKind.TERNARY,
            Range: MatchKind.RANGE, OptionalMatch: MatchKind.OPTIONAL}


@dataclass(frozen=True, slots=True)
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    kind: MatchKind

    @property
    def full_mask(self) -> int:
        return (1 << self.bitwidth) - 1


@dataclass(frozen=True)
class TableInfo:
    """What P4Info says about a table, with ids resolved."""

    id: int
    name: str
    fields: tuple[MatchFieldInfo, ...]
    action_scopes: Mapping[int, Scope]
    const_default_action_id: int
    initial_default: ActionCall | None
    size: int
    is_const: bool
    supports_idle_timeout: bool
    implementation_id: int = 0
    direct_counter: DirectCounterInfo | None = None
    direct_meter: DirectMeterInfo | None = None

    @classmethod
    def from_p4info(
        cls,
        table: p4info_pb2.Table,
        actions: Mapping[int, ActionInfo],
        direct_counter: DirectCounterInfo | None = None,
        direct_meter: DirectMeterInfo | None = None,
    ) -> TableInfo:
        name = table.preamble.name
        fields = tuple(_field_info(name, mf) for mf in table.match_fields)
        if len({f.id for f in fields}) != len(fields):
            raise invalid(f"P4Info table '{name}': duplicate match field ids")
        scopes: dict[int, Scope] = {}
        for ref in table.action_refs:
            if ref.id not in actions:
                raise invalid(f"P4Info table '{name}': unknown action id 0x{ref.id:08x}")
            scopes[ref.id] = Scope(ref.scope)
        initial = _initial_default(table, actions, scopes)
        return cls(
            id=table.preamble.id, name=name, fields=fields, action_scopes=scopes,
            const_default_action_id=table.const_default_action_id, initial_default=initial,
            size=table.size, is_const=table.is_const_table,
            supports_idle_timeout=table.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL,
            implementation_id=table.implementation_id,
            direct_counter=direct_counter, direct_meter=direct_meter,
        )


def _field_info(table: str, mf: p4info_pb2.MatchField) -> MatchFieldInfo:
    if mf.WhichOneof("match") != "match_type" or mf.match_type not in MatchKind._value2member_map_:
        kind = mf.other_match_type or p4info_pb2.MatchField.MatchType.Name(mf.match_type)
        raise StateError(Code.UNIMPLEMENTED, f"P4Info table '{table}' field '{mf.name}': match kind '{kind}' unsupported")
    if mf.bitwidth < 0:
        raise invalid(f"P4Info table '{table}' field '{mf.name}': bitwidth {mf.bitwidth} (must be > 0)")
    # bitwidth 0: a key of type error (or a plain enum), which P4Info writes without a width.
    # The pipeline numbers such values from 0; they are held as 32 bits, as BMv2 holds errors.
    width = mf.bitwidth or UNSIZED_KEY_BITS
    return MatchFieldInfo(mf.id, mf.name, width, MatchKind(mf.match_type))


def _initial_default(table: p4info_pb2.Table, actions: Mapping[int, ActionInfo],
                     scopes: Mapping[int, Scope]) -> ActionCall | None:
    """The P4 program's default action: P4Info's initial_default_action, else NoAction."""
    name = table.preamble.name
    if table.HasField("initial_default_action"):
        call = table.initial_default_action
        info = actions.get(call.action_id)
        if info is None:
            raise invalid(f"P4Info table '{name}': unknown default action id 0x{call.action_id:08x}")
        args: dict[int | str, int] = {}
        for arg in call.arguments:
            idx = info.param_index(arg.param_id)
            if idx is None:
                raise invalid(f"P4Info table '{name}': default action '{info.name}' has no param id {arg.param_id}")
            args[arg.param_id] = decode_unsigned(arg.value, info.params[idx].bitwidth,
                                                 f"P4Info table '{name}' default action argument")
        return ActionCall(info.id, info.params_from_mapping(args))
    if table.const_default_action_id:
        info = actions.get(table.const_default_action_id)
        if info is None:
            raise invalid(f"P4Info table '{name}': unknown const default action id")
        if not info.params:
            return ActionCall(info.id, ())
    for action_id in scopes:
        if actions[action_id].name in ("NoAction", ".NoAction"):
            return ActionCall(action_id, ())
    return None


class TableEntry:
    """One entry; the pipeline reads ``action`` and counts into ``direct_counter``."""

    __slots__ = ("table_id", "match", "priority", "action", "controller_metadata", "metadata",
                 "idle_timeout_ns", "is_const", "is_default", "direct_counter", "direct_meter",
                 "last_hit_ns", "_rank", "_masks", "_masked", "_ranges", "_handle")

    def __init__(self, table_id: int, match: tuple[Match | None, ...], priority: int,
                 action: ActionCall | None) -> None:
        self.table_id = table_id
        self.match = match
        self.priority = priority
        self.action = action
        self.controller_metadata = 0
        self.metadata = b""
        self.idle_timeout_ns = 0
        self.is_const = False
        self.is_default = False
        self.direct_counter: CounterCell | None = None
        self.direct_meter: MeterCell | None = None
        self.last_hit_ns = 0

    @property
    def key(self) -> tuple[tuple[Match | None, ...], int]:
        return self.match, self.priority

    def touch(self, now_ns: int) -> None:
        """Record a hit time (for ``time_since_last_hit``)."""
        self.last_hit_ns = now_ns

    def snapshot(self) -> tuple:
        """The mutable, non-key state; used to undo a MODIFY."""
        meter = self.direct_meter.config if self.direct_meter else None
        counter = self.direct_counter.snapshot() if self.direct_counter else None
        return (self.action, self.controller_metadata, self.metadata, self.idle_timeout_ns, meter, counter)

    def restore(self, snap: tuple) -> None:
        self.action, self.controller_metadata, self.metadata, self.idle_timeout_ns, meter, counter = snap
        if self.direct_meter is not None:
            self.direct_meter.configure(meter)
        if self.direct_counter is not None and counter is not None:
            self.direct_counter.set(*counter)

    def __repr__(self) -> str:
        return f"TableEntry(match={self.match}, priority={self.priority}, action={self.action})"


class _Group:
    __slots__ = ("masks", "entries", "max_rank")

    def __init__(self, masks: tuple[int, ...]) -> None:
        self.masks = masks
        self.entries: dict[tuple[int, ...], list[TableEntry]] = {}
        self.max_rank = -1


class TableState:
    """The entries of one table, with P4Runtime's write rules."""

    def __init__(self, info: TableInfo, actions: Mapping[int, ActionInfo]) -> None:
        self.info = info
        self.id = info.id
        self.name = info.name
        self.fields = info.fields
        self._actions = actions
        kinds = {f.kind for f in info.fields}
        self.needs_priority = bool(kinds & {MatchKind.TERNARY, MatchKind.RANGE, MatchKind.OPTIONAL})
        self._exact_only = kinds <= {MatchKind.EXACT}
        self._by_id = {f.id: i for i, f in enumerate(info.fields)}
        self._by_name = {f.name: i for i, f in enumerate(info.fields)}
        self._ents: dict[tuple, TableEntry] = {}  # by key: read through _entries
        self._exact: dict[tuple[int, ...], TableEntry] = {}
        self._groups: list[_Group] = []
        self._dirty = False
        self.profile: ActionProfileState | None = None  # set by RuntimeState for indirect tables
        self._sinks = Sinks()  # engine programs applying this table (dataplane.py)
        self._next_h = 0  # read through _next_handle
        #: the engine's store of this table's entries (``hbh_engine.TableWritePlan``: the P4Runtime
        #: core's Writes may apply plain entries there, p4runtime/fast_writes.py), None: not kept
        self._store: Any = None
        self._pending = False  # the store has updates this state has not taken in yet
        self.default_entry = self._new_default()

    # --------------------------------------------- the engine's entry store

    @property
    def _entries(self) -> dict[tuple, TableEntry]:
        """The entries by key, with the store's updates taken in first."""
        if self._pending:
            self._take_in()
        return self._ents

    @property
    def _next_handle(self) -> int:
        """The handle the next entry gets (handles grow; the store's updates taken in first)."""
        if self._pending:
            self._take_in()
        return self._next_h

    @_next_handle.setter
    def _next_handle(self, value: int) -> None:
        self._next_h = value

    def bind_store(self, store: Any) -> None:
        """Keep this table's entries in ``store`` too (which ``store.store_table`` made ready for
        it): its keys, handles and programs, then every change. The P4Runtime core may then apply
        a Write's plain updates there (``store.apply``) and mark this table ``_pending``: the
        entry objects are built when something here next looks at the entries."""
        if self._pending:
            self._take_in()
        for e in self._ents.values():
            store.store_add(self.id, e._masks, e._masked, e._ranges, e.priority, e._handle, e.is_const, e)
        for ref in self._sinks._refs:
            prog = ref()
            if prog is not None:
                store.store_attach(self.id, prog)
        self._store = store

    def _take_in(self) -> None:
        """Build the entries the store changed (its programs have them already): a key at a
        time, new entries in handle order - the order of their inserts, as the dict keeps it."""
        self._pending = False
        ents, exact = self._ents, self._exact if self._exact_only else None
        nxt, changed = self._store.store_take(self.id)  # the handles deleted unseen stay used
        built = []  # the new entry objects, for the store (its keyed Reads write them)
        for held, handle, (utype, _, fields, masks, masked, ranges, rank, priority, action, cm, md) in changed:
            canon = tuple(None if f is None else _STORED_MATCH[f[0]](f[1], f[2]) for f in fields)
            key = (canon, priority)
            if held is not None and held != handle or utype == 3:  # the held entry is gone
                del ents[key]
                if exact is not None:
                    del exact[tuple(m.value for m in canon)]
            if utype == 3:  # DELETE
                continue
            call = ActionCall(action[0], action[1])
            if held == handle:  # modified
                entry = ents[key]
                entry.action = call
                entry.idle_timeout_ns = 0
            else:
                entry = TableEntry(self.id, canon, priority, call)
                entry._masks, entry._masked, entry._ranges, entry._rank = masks, masked, ranges, rank
                entry._handle = handle
                ents[key] = entry
                built.append(entry)
                if exact is not None:
                    exact[tuple(m.value for m in canon)] = entry
            entry.controller_metadata = cm
            entry.metadata = md
        if built:
            self._store.store_objects(self.id, built)
        self._next_h = max(self._next_h, nxt)
        self._dirty = True

    # ------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[TableEntry]:
        return iter(list(self._entries.values()))

    def get(self, match: Mapping[int | str, Match | int], priority: int = 0) -> TableEntry | None:
        return self._entries.get((self.canonical_match(match), priority))

    def find(self, canon: tuple[Match | None, ...], priority: int = 0) -> TableEntry | None:
        """Keyed lookup by an already canonical match (see ``canonical_match``)."""
        return self._entries.get((canon, priority))

    def lookup(self, key: tuple[int, ...]) -> TableEntry | None:
        """The entry a packet with these field values hits (P4Info field order), or None."""
        if self._pending:
            self._take_in()
        if self._exact_only:
            return self._exact.get(key)
        if self._dirty:
            self._rebuild()
        best: TableEntry | None = None
        best_rank = -1
        for group in self._groups:
            if group.max_rank <= best_rank:
                break
            cands = group.entries.get(tuple([k & m for k, m in zip(key, group.masks)]))
            if not cands:
                continue
            for e in cands:
                if e._rank <= best_rank:
                    break
                if all(lo <= key[i] <= hi for i, lo, hi in e._ranges):
                    best, best_rank = e, e._rank
                    break
        return best

    # ------------------------------------------------------------ writing

    def insert(self, match: Mapping[int | str, Match | int], action_id: int | IndirectAction,
               params: Sequence[int] = (), priority: int = 0, *, controller_metadata: int = 0,
               metadata: bytes = b"", idle_timeout_ns: int = 0, counter_data: tuple[int, int] | None = None,
               meter_config: MeterConfig | None = None) -> TableEntry:
        """P4Runtime INSERT (``counter_data`` is ``(packets, bytes)``); ``action_id`` is an action
        id, or for an indirect table a MemberRef/GroupRef/ActionSet (``params`` unused)."""
        if self.info.is_const:
            raise StateError(Code.PERMISSION_DENIED, f"table '{self.name}' is const: entries cannot be inserted")
        if not self.fields:
            raise invalid(f"table '{self.name}' has no match key: only its default entry can be written")
        entry = self._build(match, priority, action_id, params)
        if entry.key in self._entries:
            raise StateError(Code.ALREADY_EXISTS, f"table '{self.name}': entry {self._describe(entry)} already exists")
        if 0 < self.info.size <= len(self._entries):
            raise StateError(Code.RESOURCE_EXHAUSTED, f"table '{self.name}' is full ({self.info.size} entries)")
        self._set_attrs(entry, controller_metadata, metadata, idle_timeout_ns)
        self._set_resources(entry, counter_data, meter_config, initial=True)
        self._add(entry)
        return entry

    def install_const_entry(self, match: Mapping[int | str, Match | int], action_id: int,
                            params: Sequence[int] = (), priority: int = 0) -> TableEntry:
        """For the device loading the program's ``const entries``: bypasses the const check."""
        entry = self._build(match, priority, action_id, params)
        if entry.key in self._entries:
            raise StateError(Code.ALREADY_EXISTS, f"table '{self.name}': duplicate const entry {self._describe(entry)}")
        entry.is_const = True
        self._set_resources(entry, None, None, initial=True)
        self._add(entry)
        return entry

    def modify(self, match: Mapping[int | str, Match | int], priority: int = 0, *,
               action_id: int | IndirectAction | None = None, params: Sequence[int] = (),
               controller_metadata: int = 0,
               metadata: bytes = b"", idle_timeout_ns: int = 0, counter_data: tuple[int, int] | None = None,
               meter_config: MeterConfig | None = None) -> TableEntry:
        """P4Runtime MODIFY: unset action keeps it, unset meter config resets it, unset counter keeps it."""
        entry = self._existing(match, priority)
        if action_id is not None and (entry.is_const or self.info.is_const):
            raise StateError(Code.PERMISSION_DENIED,
                             f"table '{self.name}': the action of const entry {self._describe(entry)} cannot change")
        call = None if action_id is None else self._check_action(action_id, params, default=False)
        self._check_resources(counter_data, meter_config)
        if call is not None:
            self._replace_action(entry, call)
        if not entry.is_const:
            self._set_attrs(entry, controller_metadata, metadata, idle_timeout_ns)
        self._set_resources(entry, counter_data, meter_config, initial=False)
        return entry

    def delete(self, match: Mapping[int | str, Match | int], priority: int = 0) -> TableEntry:
        entry = self._existing(match, priority)
        if entry.is_const or self.info.is_const:
            raise StateError(Code.PERMISSION_DENIED, f"table '{self.name}': const entry {self._describe(entry)} cannot be deleted")
        self.discard(entry)
        return entry

    def clear(self) -> None:
        """Remove every non-const entry (e.g. a controller resetting the table)."""
        for entry in list(self._entries.values()):
            if not entry.is_const:
                self.discard(entry)

    # ------------------------------------------------------ the engine's copy

    def attach(self, program: Any) -> None:
        """Send the entries and the default action to ``program`` (an ``hbh_engine.P4Program``
        applying this table), and every later change."""
        program.table_clear(self.id)
        for entry in self._entries.values():
            program.table_put(*self._put_args(entry))
        program.table_default(self.id, encode_action(self.default_entry.action))
        self._sinks.add(program)
        if self._store is not None:
            self._store.store_attach(self.id, program)

    def _put_args(self, entry: TableEntry) -> tuple:
        return (self.id, entry._handle, entry._masks, entry._masked, entry._ranges, entry._rank,
                encode_action(entry.action))

    def _send_entry(self, entry: TableEntry) -> None:
        if self._sinks:
            if entry.is_default:
                self._sinks.send("table_default", self.id, encode_action(entry.action))
            else:
                self._sinks.send("table_put", *self._put_args(entry))

    # ------------------------------------------------------ default entry

    def set_default(self, action_id: int, params: Sequence[int] = ()) -> TableEntry:
        """MODIFY of the default entry with an action."""
        return self.modify_default(action_id, params)

    def reset_default(self) -> TableEntry:
        """MODIFY of the default entry without an action: back to the program's default."""
        return self.modify_default(None)

    def modify_default(self, action_id: int | None, params: Sequence[int] = (), *,
                       controller_metadata: int = 0, metadata: bytes = b"",
                       counter_data: tuple[int, int] | None = None,
                       meter_config: MeterConfig | None = None) -> TableEntry:
        entry = self.default_entry
        if action_id is not None and self.info.const_default_action_id:
            raise StateError(Code.PERMISSION_DENIED, f"table '{self.name}' has a const default action")
        if action_id is not None and self.info.implementation_id:
            raise StateError(Code.PERMISSION_DENIED, f"table '{self.name}' is implemented by an action profile: "
                                                     "P4Runtime keeps its default entry constant")
        call = self.info.initial_default if action_id is None else self._check_action(action_id, params, default=True)
        self._check_resources(counter_data, meter_config)
        self._replace_action(entry, call)
        entry.controller_metadata = controller_metadata
        entry.metadata = metadata
        self._set_resources(entry, counter_data, meter_config, initial=False)
        return entry

    def install_program_default(self, call: ActionCall) -> None:
        """The program's ``default_action`` where P4Info gives none (the pipeline, at load)."""
        self._replace_action(self.default_entry, call)

    # ---------------------------------------------------------- rollback

    def discard(self, entry: TableEntry) -> None:
        """Remove an entry object (no rule checks: used by DELETE and by rollbacks)."""
        del self._entries[entry.key]
        if self._store is not None:
            self._store.store_remove(self.id, entry._masks, entry._masked, entry._ranges, entry.priority)
        if self.profile is not None:
            self.profile.account(entry.action, -1)
        if self._exact_only:
            del self._exact[tuple(m.value for m in entry.match)]
        self._dirty = True
        if self._sinks:
            self._sinks.send("table_remove", self.id, entry._handle)

    def restore(self, entry: TableEntry) -> None:
        """Put back an entry object removed by ``discard`` (rollback of a DELETE)."""
        self._add(entry)

    def restore_snapshot(self, entry: TableEntry, snap: tuple) -> None:
        """Undo a MODIFY: ``snap`` from ``entry.snapshot()`` taken before it."""
        self._replace_action(entry, snap[0])
        entry.restore(snap)

    # ------------------------------------------------------------ helpers

    def canonical_match(self, match: Mapping[int | str, Match | int]) -> tuple[Match | None, ...]:
        """Validate a match (by field id or name; ints mean Exact) -> P4Info-ordered tuple."""
        return canonical_match(f"table '{self.name}'", self.fields, self._by_id, self._by_name, match)

    def _check_priority(self, priority: int) -> None:
        if self.needs_priority:
            if not 0 < priority <= MAX_PRIORITY:
                raise invalid(f"table '{self.name}' has ternary/range/optional fields: priority must be in 1..{MAX_PRIORITY}, got {priority}")
        elif priority != 0:
            raise invalid(f"table '{self.name}' has no ternary/range/optional field: priority must be 0, got {priority}")

    def _check_action(self, action_id: int | IndirectAction, params: Sequence[int],
                      default: bool) -> ActionCall | IndirectAction:
        if isinstance(action_id, MemberRef | GroupRef | ActionSet):
            return self._check_indirect(action_id)
        if self.info.implementation_id:
            raise invalid(f"table '{self.name}' is implemented by an action profile: direct actions are not allowed "
                          "(use a member id, a group id or a one-shot action set)")
        return self._check_direct(action_id, params, default)

    def _check_indirect(self, ref: IndirectAction) -> IndirectAction:
        if self.profile is None:
            kind = {MemberRef: "action_profile_member_id", GroupRef: "action_profile_group_id"}.get(
                type(ref), "action_profile_action_set")
            raise invalid(f"table '{self.name}' is a direct table: '{kind}' is not allowed")
        if isinstance(ref, ActionSet):
            ref = ActionSet([WeightedAction(self._check_direct(wa.action.action_id, wa.action.params, False),
                                            wa.weight) for wa in ref.actions])
        return self.profile.check_ref(ref, self.name)

    def _check_direct(self, action_id: int, params: Sequence[int], default: bool) -> ActionCall:
        scope = self.info.action_scopes.get(action_id)
        if scope is None:
            raise invalid(f"action id 0x{action_id:08x} is not an action of table '{self.name}'")
        info = self._actions[action_id]
        if default and scope == Scope.TABLE_ONLY:
            raise StateError(Code.PERMISSION_DENIED, f"action '{info.name}' is @tableonly in table '{self.name}'")
        if not default and scope == Scope.DEFAULT_ONLY:
            raise StateError(Code.PERMISSION_DENIED, f"action '{info.name}' is @defaultonly in table '{self.name}'")
        return ActionCall(action_id, info.check_params(tuple(params)))

    def _check_resources(self, counter_data: tuple[int, int] | None, meter_config: MeterConfig | None) -> None:
        if counter_data is not None:
            if self.info.direct_counter is None:
                raise invalid(f"table '{self.name}' has no direct counter: counter data not allowed")
            if min(counter_data) < 0:
                raise invalid(f"table '{self.name}': negative direct counter value {counter_data}")
        if meter_config is not None:
            if self.info.direct_meter is None:
                raise invalid(f"table '{self.name}' has no direct meter: meter config not allowed")
            meter_config.check(self.info.direct_meter.name, self.info.direct_meter.meter_type)

    def _set_attrs(self, entry: TableEntry, controller_metadata: int, metadata: bytes, idle_timeout_ns: int) -> None:
        if idle_timeout_ns < 0:
            raise invalid(f"table '{self.name}': negative idle timeout {idle_timeout_ns}")
        if idle_timeout_ns and not self.info.supports_idle_timeout:
            raise invalid(f"table '{self.name}' does not support idle timeout")
        entry.controller_metadata = controller_metadata
        entry.metadata = metadata
        entry.idle_timeout_ns = idle_timeout_ns

    def _set_resources(self, entry: TableEntry, counter_data: tuple[int, int] | None,
                       meter_config: MeterConfig | None, initial: bool) -> None:
        self._check_resources(counter_data, meter_config)
        if self.info.direct_counter is not None:
            if entry.direct_counter is None:
                entry.direct_counter = CounterCell()
            if counter_data is not None:
                entry.direct_counter.set(*counter_data)
        if self.info.direct_meter is not None:
            if entry.direct_meter is None:
                entry.direct_meter = MeterCell(self.info.direct_meter.meter_type, self.info.direct_meter.unit)
            if meter_config is not None or not initial:
                entry.direct_meter.configure(meter_config)

    def _build(self, match: Mapping[int | str, Match | int], priority: int, action_id: int,
               params: Sequence[int]) -> TableEntry:
        canon = self.canonical_match(match)
        self._check_priority(priority)
        call = self._check_action(action_id, params, default=False)
        return TableEntry(self.id, canon, priority, call)

    def _existing(self, match: Mapping[int | str, Match | int], priority: int) -> TableEntry:
        canon = self.canonical_match(match)
        entry = self._entries.get((canon, priority))
        if entry is None:
            raise not_found(f"table '{self.name}': no entry with match {_fmt(self.fields, canon)} priority {priority}")
        return entry

    def _new_default(self) -> TableEntry:
        entry = TableEntry(self.id, (), 0, self.info.initial_default)
        entry.is_default = True
        entry.is_const = bool(self.info.const_default_action_id)
        self._set_resources(entry, None, None, initial=True)
        return entry

    def _replace_action(self, entry: TableEntry, call: ActionCall | IndirectAction | None) -> None:
        if self.profile is not None and not entry.is_default:
            self.profile.account(entry.action, -1)
            self.profile.account(call, +1)
        entry.action = call
        self._send_entry(entry)

    def _add(self, entry: TableEntry) -> None:
        self._index_fields(entry)
        self._insert(entry)

    def add_indexed(self, entry: TableEntry, masks: tuple[int, ...], masked: tuple[int, ...],
                    ranges: tuple[tuple[int, int, int], ...], rank: int) -> None:
        """``_add`` of a checked entry of a direct table whose index fields (what ``_index_fields``
        computes) the caller has (p4runtime/fast_writes.py: the engine decodes them)."""
        entry._masks, entry._masked, entry._ranges, entry._rank = masks, masked, ranges, rank
        self._insert(entry)

    def _insert(self, entry: TableEntry) -> None:
        """An indexed entry into the table and to the engine (one place for both ways in)."""
        if self.profile is not None:
            self.profile.account(entry.action, +1)
        entry._handle = self._next_handle  # handles grow: the engine's order is the writes'
        self._next_h += 1
        self._ents[entry.key] = entry
        if self._store is not None:
            self._store.store_add(self.id, entry._masks, entry._masked, entry._ranges, entry.priority,
                                  entry._handle, entry.is_const, entry)
        if self._exact_only:
            self._exact[tuple(m.value for m in entry.match)] = entry
        self._dirty = True
        self._send_entry(entry)

    def _index_fields(self, entry: TableEntry) -> None:
        masks, values, ranges, plen = [], [], [], 0
        for i, (f, m) in enumerate(zip(self.fields, entry.match)):
            mask, value = 0, 0
            if isinstance(m, Exact | OptionalMatch):
                mask, value = f.full_mask, m.value
            elif isinstance(m, Lpm):
                mask, value, plen = f.full_mask ^ (f.full_mask >> m.prefix_len), m.value, plen + m.prefix_len
            elif isinstance(m, Ternary):
                mask, value = m.mask, m.value
            elif isinstance(m, Range):
                ranges.append((i, m.low, m.high))
            masks.append(mask)
            values.append(value)
        entry._masks = tuple(masks)
        entry._masked = tuple(values)
        entry._ranges = tuple(ranges)
        entry._rank = entry.priority if self.needs_priority else plen

    def _rebuild(self) -> None:
        groups: dict[tuple[int, ...], _Group] = {}
        for e in self._entries.values():
            g = groups.get(e._masks)
            if g is None:
                g = groups[e._masks] = _Group(e._masks)
            g.entries.setdefault(e._masked, []).append(e)
            g.max_rank = max(g.max_rank, e._rank)
        for g in groups.values():
            for lst in g.entries.values():
                lst.sort(key=lambda e: -e._rank)
        self._groups = sorted(groups.values(), key=lambda g: -g.max_rank)
        self._dirty = False

    def _describe(self, entry: TableEntry) -> str:
        return f"{_fmt(self.fields, entry.match)} priority {entry.priority}"


#: the engine's match kinds (P4Info's MatchType numbers) -> the state's matches
_STORED_MATCH: dict[int, Callable[[int, int], Match]] = {
    2: lambda v, _b: Exact(v),
    3: Lpm,
    4: Ternary,
    5: Range,
    6: lambda v, _b: OptionalMatch(v),
}


def canonical_match(where: str, fields: Sequence[MatchFieldInfo], by_id: Mapping[int, int],
                    by_name: Mapping[str, int], match: Mapping[int | str, Match | int]) -> tuple[Match | None, ...]:
    """Validate a match given by field id or name (ints mean Exact) -> a tuple in field order,
    None for don't care. ``where`` names the table or value set in errors."""
    out: list[Match | None] = [None] * len(fields)
    for key, m in match.items():
        idx = by_id.get(key) if isinstance(key, int) else by_name.get(key)
        if idx is None:
            raise invalid(f"{where} has no match field {key!r}")
        if out[idx] is not None:
            raise invalid(f"{where}: match field '{fields[idx].name}' given twice")
        out[idx] = check_match_field(f"{where} field '{fields[idx].name}'", fields[idx],
                                     Exact(m) if isinstance(m, int) else m)
    for f, m in zip(fields, out):
        if m is None and f.kind == MatchKind.EXACT:
            raise invalid(f"{where}: exact match field '{f.name}' missing")
    return tuple(out)


def check_match_field(where: str, f: MatchFieldInfo, m: Match) -> Match:
    """P4Runtime's match-format rules for one field (don't care must be omitted)."""
    kind = _KIND_OF.get(type(m))
    if kind != f.kind:
        raise invalid(f"{where} is {f.kind.name.lower()}, got a {type(m).__name__} match")
    w = f.bitwidth
    values = (m.low, m.high) if isinstance(m, Range) else (m.value,)
    for v in values + ((m.mask,) if isinstance(m, Ternary) else ()):
        if not isinstance(v, int) or not fits_unsigned(v, w):
            raise invalid(f"{where}: {v!r} does not fit bit<{w}>")
    if isinstance(m, Lpm):
        if not 0 < m.prefix_len <= w:
            raise invalid(f"{where}: prefix length {m.prefix_len} not in 1..{w} (omit the field for don't care)")
        if m.value & (f.full_mask >> m.prefix_len):
            raise invalid(f"{where}: value 0x{m.value:x} has bits set beyond the /{m.prefix_len} prefix")
    elif isinstance(m, Ternary):
        if m.mask == 0:
            raise invalid(f"{where}: mask 0 (omit the field for don't care)")
        if m.value & ~m.mask:
            raise invalid(f"{where}: value 0x{m.value:x} has bits outside mask 0x{m.mask:x}")
    elif isinstance(m, Range):
        if m.low > m.high:
            raise invalid(f"{where}: range low {m.low} > high {m.high}")
        if m.low == 0 and m.high == f.full_mask:
            raise invalid(f"{where}: the full range must be omitted (don't care)")
    return m


def _fmt(fields: Sequence[MatchFieldInfo], match: Sequence[Match | None]) -> str:
    parts = [f"{f.name}={m}" for f, m in zip(fields, match) if m is not None]
    return "{" + ", ".join(parts) + "}"
