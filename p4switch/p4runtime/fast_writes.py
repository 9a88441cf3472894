"""The common Write, applied in one pass: plain table entries (issue 49, item 7).

Why: a Write's updates went through the general path (``writes.apply_update``: decoding into
dicts, ``TableState.insert`` and its checks, one undo closure each), about 28 µs an update,
four times simple_switch_grpc's cost. Nearly every Write a controller makes is a batch of
INSERT/MODIFY/DELETE of plain entries - exact, LPM, ternary, range and optional matches with a
direct action - so this module does only that: the engine decodes the request's wire bytes
(``hbh_engine.TableWritePlan``, engine/src/p4rt/p4rtwrite.rs: the one decoder of this path, with the
tables' field and parameter widths resolved when the pipeline is loaded) and this builds, for
each update, the entry the general path would build.

It never refuses anything itself: an update it does not know (another entity, an action
profile, counter data, an idle timeout, a default entry...) or one that would fail (an id it
does not know, a value that does not fit, an entry that exists or is missing...) makes the
engine's decode answer None or :meth:`FastWriter.apply_decoded` return None; the core then
undoes what this pass applied and runs the whole Write through the general path, which gives
the errors and codes it always gave. So an accepted update leaves exactly the state the
general path would leave, and every refusal is the general path's own
(tests/p4runtime/test_fast_writes.py checks both against random Write sequences). Without the
engine every Write takes the general path.

Entries kept in the engine (:meth:`FastWriter.apply`): even that pass cost a one-update Write
about 40 µs of Python (entry objects, the engine's copy, the response), and the compiled front
end stayed below simple_switch_grpc. So the engine keeps the keys and handles of every entry
of a table without direct counters, meters or an action profile (``TableWritePlan``'s store,
which the table's state tells of each change of its own), and a Write whose updates are all
plain ones of such tables, from the primary, all succeeding, is applied there in one call: the
keys, the programs' entries, and a journal of the updates. The table's state builds the entry
objects from the journal when anything next looks at its entries (``TableState._take_in``:
Read, Thrift, the oracle, a general-path Write), exactly as this pass would have built them.
Any other request - an update that would fail, a saved config, another entity - finds the
store unchanged and takes the paths above.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.actions import ActionCall
from p4switch.state.runtime import RuntimeState
from p4switch.state.tables import Exact, Lpm, OptionalMatch, Range, Scope, TableEntry, TableState, Ternary

from .reads import table_writer

Undo = Callable[[], None]
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
#: the engine's match kinds (P4Info's MatchType numbers) -> the state's matches
_MATCH: dict[int, Callable[[int, int], Any]] = {
    2: lambda v, _b: Exact(v),
    3: Lpm,
    4: Ternary,
    5: Range,
    6: lambda v, _b: OptionalMatch(v),
}


class _Plan:
    """What one table's entries need: its fields (id, kind, width) and, for each action it may
    run in an entry, its parameters (id, width) in order."""

    __slots__ = ("table", "fields", "actions", "resources")

    def __init__(self, st: RuntimeState, table: TableState) -> None:
        self.table = table
        self.fields = [(f.id, int(f.kind), f.bitwidth) for f in table.fields]
        self.actions = {
            aid: [(p.id, p.bitwidth) for p in st.actions[aid].params]
            for aid, scope in table.info.action_scopes.items()
            if scope != Scope.DEFAULT_ONLY
        }
        self.resources = table.info.direct_counter is not None or table.info.direct_meter is not None


def _engine() -> Any:
    try:
        import hbh_engine
    except ImportError:
        return None
    return hbh_engine


def _plannable(table: TableState) -> bool:
    info = table.info
    return bool(table.fields) and not info.is_const and not info.implementation_id


#: most updates a Write applied in the engine's store may have (in one call, unsliced: about
#: half a µs each); a larger one takes the sliced path
STORE_MAX_UPDATES = 1024


class FastWriter:
    """The one-pass path for the tables of one runtime state (built when the state is)."""

    def __init__(self, st: RuntimeState) -> None:
        self.state = st
        self.plans = {tid: _Plan(st, t) for tid, t in st.tables.items() if _plannable(t)}
        #: the engine's decoder of these tables' updates (None: an engine without it)
        self.wire: Any = None
        #: the tables whose entries the engine keeps (``apply``), by id
        self.stored: dict[int, TableState] = {}
        #: whether the engine answers keyed Reads of the stored tables (``read_keyed``)
        self.reads = False
        plan_class = getattr(_engine(), "TableWritePlan", None)
        if plan_class is not None:
            self.wire = plan_class({tid: (p.fields, p.actions) for tid, p in self.plans.items()})
            if hasattr(self.wire, "apply"):
                for tid, p in self.plans.items():
                    if not p.resources and self.wire.store_table(tid, max(p.table.info.size, 0)):
                        p.table.bind_store(self.wire)
                        self.stored[tid] = p.table
                        writer = table_writer(st, p.table) if hasattr(self.wire, "read_keyed") else None
                        if writer is not None:
                            self.wire.store_writer(tid, writer)
                            self.reads = True

    @classmethod
    def of(cls, st: RuntimeState) -> FastWriter:
        """The one FastWriter of ``st`` (made at its first Write): one store per table."""
        fast = st.__dict__.get("_fast_writer")
        if fast is None:
            fast = st.__dict__["_fast_writer"] = cls(st)
        return fast

    def apply(self, raw: bytes, device_id: int, election_id: int) -> bool:
        """Apply a WriteRequest's bytes in the engine's store (the module's doc); False, with
        nothing changed, when the paths above must take it. ``device_id`` and ``election_id``:
        the server's and its primary's (the request must carry them, with no role)."""
        if not self.stored:
            return False
        touched = self.wire.apply(raw, device_id, election_id, STORE_MAX_UPDATES)
        if touched is None:
            return False
        stored = self.stored
        for tid in touched:
            stored[tid]._pending = True
        return True

    def read_keyed(self, raw: bytes, device_id: int) -> bytes | None:
        """A ReadRequest's bytes answered by the engine's store: the ReadResponse's bytes when it
        asks for one entry of a stored table by its whole key and nothing else (the bytes the
        Python path answers, ``read_entity_wire``); None, nothing read, for the Python path.
        The caller owns the switch state (the entries are read as they are)."""
        return self.wire.read_keyed(raw, device_id) if self.reads else None

    def decode(self, req: pb.WriteRequest, raw: bytes | None = None) -> Any:
        """The updates of a WriteRequest decoded by the engine from its wire bytes (``raw``, or
        serialized here): a ``DecodedWrite`` (``len()`` and ``update(i)``, for
        :meth:`apply_decoded`); None: the general path takes the request."""
        if self.wire is None:
            return None
        return self.wire.decode(req.SerializeToString() if raw is None else raw)

    def apply_decoded(self, d: tuple) -> Undo | None:
        """Apply an update :meth:`decode` gave and return its undo, or None (nothing changed) if
        the general path must take it."""
        utype, tid, fields, masks, masked, ranges, rank, priority, action, cm, md = d
        canon = tuple(None if f is None else _MATCH[f[0]](f[1], f[2]) for f in fields)
        call = None if action is None else ActionCall(action[0], action[1])
        plan = self.plans[tid]
        table = plan.table
        key = (canon, priority)
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
            entry = TableEntry(tid, canon, priority, call)
            entry.controller_metadata = cm
            entry.metadata = md
            if plan.resources:
                table._set_resources(entry, None, None, initial=True)
            table.add_indexed(entry, masks, masked, ranges, rank)
            return lambda: table.discard(entry)
        entry = table._entries.get(key)
        if entry is None or entry.is_const:
            return None
        snap = entry.snapshot()
        table._replace_action(entry, call)
        entry.controller_metadata = cm
        entry.metadata = md
        entry.idle_timeout_ns = 0
        if plan.resources:
            table._set_resources(entry, None, None, initial=False)
        return lambda: table.restore_snapshot(entry, snap)
