"""The common Write, applied in one pass: exact and LPM table entries (issue 49, item 7).

Why: a Write's updates went through the general path (``writes.apply_update``: decoding into
dicts, ``TableState.insert`` and its checks, one undo closure each), about 28 µs an update,
four times simple_switch_grpc's cost. Nearly every Write a controller makes is a batch of
INSERT/MODIFY/DELETE of plain entries in tables matched exactly or by prefix, so this module
does only that, decoding each field once with the table's plan (field and parameter widths
resolved when the pipeline is loaded) and building the entry the general path would build.

It never refuses anything itself: an update it does not know (another entity, a ternary or
range table, an action profile, counter data, an idle timeout, a default entry...) or one that
would fail (an id it does not know, a value that does not fit, an entry that exists or is
missing...) makes :meth:`FastWriter.apply` return None, the core undoes what this pass applied
and runs the whole Write through the general path, which gives the errors and codes it always
gave. So an accepted update leaves exactly the state the general path would leave, and every
refusal is the general path's own (tests/p4switch/test_p4runtime_fast_writes.py checks both
against random Write sequences).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.actions import ActionCall
from p4switch.state.runtime import RuntimeState
from p4switch.state.tables import Exact, Lpm, MatchKind, Scope, TableEntry, TableState

Undo = Callable[[], None]
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
_EXACT, _LPM = int(MatchKind.EXACT), int(MatchKind.LPM)


class _Plan:
    """What one table's entries need: fields by id (index, kind, width, mask), and for each
    action it may run in an entry: its parameters by id (index, width) and their count."""

    __slots__ = ("table", "fields", "nfields", "exact", "actions", "resources")

    def __init__(self, st: RuntimeState, table: TableState) -> None:
        self.table = table
        self.fields = {f.id: (i, int(f.kind), f.bitwidth, f.full_mask) for i, f in enumerate(table.fields)}
        self.nfields = len(table.fields)
        self.exact = [i for i, f in enumerate(table.fields) if f.kind == MatchKind.EXACT]
        self.actions: dict[int, tuple[dict[int, tuple[int, int]], int]] = {}
        for aid, scope in table.info.action_scopes.items():
            if scope != Scope.DEFAULT_ONLY:
                info = st.actions[aid]
                self.actions[aid] = (
                    {p.id: (i, p.bitwidth) for i, p in enumerate(info.params)},
                    len(info.params),
                )
        self.resources = table.info.direct_counter is not None or table.info.direct_meter is not None


def _engine() -> Any:
    try:
        import hbh_engine
    except ImportError:
        return None
    return hbh_engine


def _plannable(table: TableState) -> bool:
    info = table.info
    return (
        bool(table.fields)
        and not info.is_const
        and not info.implementation_id
        and all(f.kind in (MatchKind.EXACT, MatchKind.LPM) for f in table.fields)
    )


class FastWriter:
    """The one-pass path for the tables of one runtime state (built when the state is)."""

    def __init__(self, st: RuntimeState) -> None:
        self.state = st
        self.plans = {tid: _Plan(st, t) for tid, t in st.tables.items() if _plannable(t)}
        #: the engine's decoder of these tables' updates (None: an engine without it)
        self.wire: Any = None
        plan_class = getattr(_engine(), "TableWritePlan", None)
        if plan_class is not None:
            self.wire = plan_class(
                {
                    tid: (
                        [(f.id, int(f.kind), f.bitwidth) for f in p.table.fields],
                        {
                            aid: [
                                (pid, width)
                                for pid, (_i, width) in sorted(params.items(), key=lambda kv: kv[1][0])
                            ]
                            for aid, (params, _n) in p.actions.items()
                        },
                    )
                    for tid, p in self.plans.items()
                }
            )

    def decode(self, raw: bytes | None) -> list[tuple] | None:
        """The updates of a WriteRequest's wire bytes decoded by the engine (``TableWritePlan``),
        for :meth:`apply_decoded`; None: decode them in Python (:meth:`apply`)."""
        if raw is None or self.wire is None:
            return None
        return self.wire.decode(raw)

    def apply(self, update: pb.Update) -> Undo | None:
        """Apply ``update`` and return its undo, or None (nothing changed) if the general path
        must take it."""
        if update.entity.WhichOneof("entity") != "table_entry":
            return None
        te = update.entity.table_entry
        plan = self.plans.get(te.table_id)
        if plan is None or te.is_const or te.is_default_action or te.priority or te.idle_timeout_ns:
            return None
        has = te.HasField
        if (
            has("counter_data")
            or has("meter_config")
            or has("meter_counter_data")
            or has("time_since_last_hit")
        ):
            return None
        found = self._match(plan, te)
        if found is None:
            return None
        utype = update.type
        call = None
        if utype != DELETE and te.HasField("action"):
            call = self._action(plan, te.action)
        return self._apply(plan, utype, *found, call, te.controller_metadata, te.metadata)

    def apply_decoded(self, d: tuple) -> Undo | None:
        """:meth:`apply` of an update :meth:`decode` gave."""
        utype, tid, fields, masks, masked, rank, action, controller_metadata, metadata = d
        canon = tuple(
            None if f is None else Exact(f[1]) if f[0] == _EXACT else Lpm(f[1], f[2]) for f in fields
        )
        call = None if action is None else ActionCall(action[0], action[1])
        return self._apply(
            self.plans[tid], utype, canon, masks, masked, rank, call, controller_metadata, metadata
        )

    @staticmethod
    def _apply(
        plan: _Plan,
        utype: int,
        canon: tuple,
        masks: tuple,
        masked: tuple,
        rank: int,
        call: ActionCall | None,
        controller_metadata: int,
        metadata: bytes,
    ) -> Undo | None:
        table = plan.table
        key = (canon, 0)
        if utype == DELETE:
            entry = table._entries.get(key)
            if entry is None or entry.is_const:
                return None
            table.discard(entry)
            return lambda: table.restore(entry)
        if (utype != INSERT and utype != MODIFY) or call is None:
            return None
        if utype == INSERT:
            if key in table._entries or 0 < table.info.size <= len(table._entries):
                return None
            entry = TableEntry(table.id, canon, 0, call)
            entry.controller_metadata = controller_metadata
            entry.metadata = metadata
            if plan.resources:
                table._set_resources(entry, None, None, initial=True)
            table.add_indexed(entry, masks, masked, rank)
            return lambda: table.discard(entry)
        entry = table._entries.get(key)
        if entry is None or entry.is_const:
            return None
        snap = entry.snapshot()
        table._replace_action(entry, call)
        entry.controller_metadata = controller_metadata
        entry.metadata = metadata
        entry.idle_timeout_ns = 0
        if plan.resources:
            table._set_resources(entry, None, None, initial=False)
        return lambda: table.restore_snapshot(entry, snap)

    @staticmethod
    def _match(plan: _Plan, te: pb.TableEntry) -> tuple | None:
        """(match, masks, masked values, rank) as TableState would index them, or None."""
        n = plan.nfields
        out: list[Any] = [None] * n
        masks = [0] * n
        masked = [0] * n
        rank = 0
        fields = plan.fields
        for fm in te.match:
            f = fields.get(fm.field_id)
            if f is None:
                return None
            i, kind, width, full = f
            if out[i] is not None:
                return None
            which = fm.WhichOneof("field_match_type")
            if kind == _EXACT:
                if which != "exact":
                    return None
                raw = fm.exact.value
                if not raw:
                    return None
                value = int.from_bytes(raw, "big")
                if value >> width:
                    return None
                out[i] = Exact(value)
                masks[i] = full
            else:
                if which != "lpm":
                    return None
                lpm = fm.lpm
                raw, plen = lpm.value, lpm.prefix_len
                if not raw or not 0 < plen <= width:
                    return None
                value = int.from_bytes(raw, "big")
                if value >> width or value & (full >> plen):
                    return None
                out[i] = Lpm(value, plen)
                masks[i] = full ^ (full >> plen)
                rank += plen
            masked[i] = value
        for i in plan.exact:
            if out[i] is None:
                return None
        return tuple(out), tuple(masks), tuple(masked), rank

    @staticmethod
    def _action(plan: _Plan, ta: pb.TableAction) -> ActionCall | None:
        if ta.WhichOneof("type") != "action":
            return None
        action = ta.action
        spec = plan.actions.get(action.action_id)
        if spec is None:
            return None
        by_id, n = spec
        values: list[Any] = [None] * n
        for p in action.params:
            found = by_id.get(p.param_id)
            if found is None:
                return None
            i, width = found
            raw = p.value
            if values[i] is not None or not raw:
                return None
            value = int.from_bytes(raw, "big")
            if width > 0 and value >> width:
                return None
            values[i] = value
        if None in values:
            return None
        return ActionCall(action.action_id, tuple(values))
