"""BMv2's Thrift ``standard`` table calls on p4switch's runtime state.

Why: ``simple_switch_CLI`` commands files (``table_add``, ``table_modify``, ``table_dump``,
``act_prof_create_member``, ``counter_read``, ``meter_set_rates``, ``register_write`` ...) are how
many labs configure BMv2. The CLI reads the program from ``bm_get_config`` (the BMv2 JSON the
switch runs) and sends names and byte strings; this module turns them into the same
``RuntimeState`` writes P4Runtime makes, on the switch loop (``run_in_loop``), so P4Runtime and
Thrift see each other's writes. Replies and error codes are BMv2's (behavioral-model
``Standard_server.cpp``, ``match_tables.cpp``, ``match_units.cpp``, ``action_profile.cpp``,
``meters.cpp``): handles as ``p4switch.thrift_handles`` numbers them, action data as BMv2 gives
it back (the value's own bytes, at least one), the checks in BMv2's order. Priorities: BMv2's
smaller number wins, P4Runtime's larger; a Thrift priority ``p`` is stored as ``PRIO_TOP - p``,
and a const entry shows the priority p4c wrote in the JSON.

Counters, meters and registers are in ``p4switch.thrift_externs``, action profiles and indirect
tables in ``p4switch.thrift_profiles``; this class joins them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from bm_runtime.standard import ttypes as T

from p4switch.state import Lpm
from p4switch.state.errors import StateError
from p4switch.state.profiles import GroupRef, MemberRef
from p4switch.state.tables import Exact, OptionalMatch, Range, Ternary
from p4switch.thrift_entries import kept, kept_default, match_of, table_error
from p4switch.thrift_externs import ExternCalls
from p4switch.thrift_handles import EntryBook
from p4switch.thrift_profiles import ProfileCalls

PRIO_TOP = (1 << 31) - 1


def to_int(b: bytes) -> int:
    return int.from_bytes(b, "big")


def key_bytes(v: int, width: int) -> bytes:
    """A match key value as BMv2 stores it: the field's full width in bytes."""
    return v.to_bytes(max(1, (width + 7) // 8), "big")


def data_bytes(v: int) -> bytes:
    """An action parameter as BMv2 answers it: the value's own bytes, at least one."""
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


class TableFacts:
    """What the BMv2 JSON says about a table that P4Info does not: its BMv2 type, action
    profile, const default entry or action, and the priorities of its const entries."""

    def __init__(self, table: dict) -> None:
        self.type = table.get("type", "simple")
        self.profile = table.get("action_profile")
        default = table.get("default_entry") or {}
        self.const_default_entry = bool(default.get("action_entry_const"))
        self.const_default_action = default.get("action_id") if default.get("action_const") else None
        self.immutable = "entries" in table
        self.const_priorities = [e.get("priority", -1) for e in table.get("entries", [])]
        self.direct_counter = bool(table.get("with_counters"))
        self.direct_meter = table.get("direct_meters")


def program_facts(text: str) -> tuple[dict[str, TableFacts], dict[str, int]]:
    """Table facts by name and action ids by name, from the JSON the switch runs."""
    doc = json.loads(text)
    tables = {t["name"]: TableFacts(t) for p in doc.get("pipelines", []) for t in p.get("tables", [])}
    return tables, {a["name"]: a["id"] for a in doc.get("actions", [])}


class StandardTables(ExternCalls, ProfileCalls):
    """The ``standard`` calls the CLI's table, action-profile, counter, meter and register
    commands use."""

    def __init__(self, holder: Any, run_in_loop: Callable[[Callable[[], Any]], Any]) -> None:
        self._holder = holder
        self._run = run_in_loop
        self._generation = -1
        self._books: dict[str, EntryBook] = {}
        self._facts: dict[str, TableFacts] = {}
        self._action_ids: dict[str, int] = {}
        ExternCalls.__init__(self)
        ProfileCalls.__init__(self)
        from p4switch.thrift_pre import MirroringCalls, PreCalls

        self.pre = PreCalls(holder, run_in_loop)  # simple_pre(_lag): multicast groups
        self.mirroring = MirroringCalls(holder, run_in_loop)  # simple_switch: clone sessions

    # ---- the program ------------------------------------------------------------------------
    def config(self) -> str | None:
        """The BMv2 JSON the switch runs, or None when it runs P4 source (or nothing)."""
        program = self._holder.program
        data = getattr(program, "device_config", b"") or b""
        return data.decode("utf-8") if data.lstrip()[:1] == b"{" else None

    def config_md5(self) -> bytes | None:
        text = self.config()
        return hashlib.md5(text.encode()).digest() if text is not None else None

    def _fresh(self) -> None:
        """Forget every handle when the pipeline changed (BMv2 starts a new config from 0)."""
        if self._generation != self._holder.generation:
            self._generation = self._holder.generation
            self._books = {}
            text = self.config()
            self._facts, self._action_ids = program_facts(text) if text is not None else ({}, {})
            self._reset_externs()
            self._reset_profiles()

    def _table(self, name: str) -> tuple[Any, TableFacts, EntryBook]:
        """The table ``name``, its JSON facts and its handle book, in step with its state."""
        self._fresh()
        state = self._holder.state
        t = state.tables_by_name.get(name) if state is not None else None
        facts = self._facts.get(name)
        if t is None or facts is None:
            raise table_error("INVALID_TABLE_NAME")
        book = self._books.get(name)
        if book is None:
            book = self._books[name] = EntryBook()
        book.sync(t)
        return t, facts, book

    def _simple(self, name: str) -> tuple[Any, TableFacts, EntryBook]:
        t, facts, book = self._table(name)
        if facts.type != "simple":
            raise table_error("WRONG_TABLE_TYPE")
        return t, facts, book

    def _action(self, name: str) -> Any:
        a = self._holder.state.actions_by_name.get(name)
        if a is None:
            raise table_error("INVALID_ACTION_NAME")
        return a

    def _call(self, fn: Callable[[], Any]) -> Any:
        return self._run(lambda: _mapped(fn))

    def _entry(self, book: EntryBook, handle: int, *, check_version: bool = True) -> Any:
        e, why = book.entry(handle, check_version=check_version)
        if e is None:
            raise table_error(why)
        return e

    # ---- match keys ---------------------------------------------------------------------------
    def _match(self, table: Any, params: list) -> dict[str, Any]:
        fields = table.fields
        if len(params) != len(fields):
            raise table_error("BAD_MATCH_KEY")
        out: dict[str, Any] = {}
        for f, p in zip(fields, params):
            kind = f.kind.name.lower()
            if p.type == T.BmMatchParamType.EXACT:
                out[f.name] = to_int(p.exact.key)
            elif p.type == T.BmMatchParamType.LPM:
                if p.lpm.prefix_length:
                    out[f.name] = Lpm(to_int(p.lpm.key), p.lpm.prefix_length)
            elif p.type == T.BmMatchParamType.TERNARY:
                value, mask = to_int(p.ternary.key), to_int(p.ternary.mask)
                if kind == "optional" and mask == f.full_mask:
                    out[f.name] = OptionalMatch(value)
                elif kind == "optional" and mask:
                    raise table_error("BAD_MATCH_KEY")
                elif mask:
                    out[f.name] = Ternary(value & mask, mask)
            elif p.type == T.BmMatchParamType.RANGE:
                lo, hi = to_int(p.range.start), to_int(p.range.end_)
                if (lo, hi) != (0, f.full_mask):
                    out[f.name] = Range(lo, hi)
            elif p.type == T.BmMatchParamType.VALID:
                out[f.name] = int(bool(p.valid.key))
            else:
                raise table_error("BAD_MATCH_KEY")
        return out

    def _params(self, f: Any, m: Any) -> T.BmMatchParam:
        w = f.bitwidth
        if isinstance(m, (Exact, int)):
            v = m.value if isinstance(m, Exact) else m
            return T.BmMatchParam(type=T.BmMatchParamType.EXACT, exact=T.BmMatchParamExact(key_bytes(v, w)))
        if isinstance(m, Lpm):
            return T.BmMatchParam(type=T.BmMatchParamType.LPM, lpm=T.BmMatchParamLPM(key_bytes(m.value, w),
                                                                                      m.prefix_len))
        if isinstance(m, OptionalMatch):  # p4c writes an optional key as ternary
            return T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                                  ternary=T.BmMatchParamTernary(key_bytes(m.value, w), key_bytes(f.full_mask, w)))
        if isinstance(m, Ternary):
            return T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                                  ternary=T.BmMatchParamTernary(key_bytes(m.value, w), key_bytes(m.mask, w)))
        if isinstance(m, Range):
            return T.BmMatchParam(type=T.BmMatchParamType.RANGE,
                                  range=T.BmMatchParamRange(key_bytes(m.low, w), key_bytes(m.high, w)))
        kind = f.kind.name.lower()  # an absent (wildcard) value
        if kind == "lpm":
            return T.BmMatchParam(type=T.BmMatchParamType.LPM, lpm=T.BmMatchParamLPM(key_bytes(0, w), 0))
        if kind == "range":
            return T.BmMatchParam(type=T.BmMatchParamType.RANGE,
                                  range=T.BmMatchParamRange(key_bytes(0, w), key_bytes(f.full_mask, w)))
        return T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                              ternary=T.BmMatchParamTernary(key_bytes(0, w), key_bytes(0, w)))

    def _action_entry(self, call: Any, table: Any = None) -> T.BmActionEntry:
        if isinstance(call, MemberRef):
            return T.BmActionEntry(action_type=T.BmActionEntryType.MBR_HANDLE,
                                   mbr_handle=self._member_handle(table, call.member_id))
        if isinstance(call, GroupRef):
            return T.BmActionEntry(action_type=T.BmActionEntryType.GRP_HANDLE,
                                   grp_handle=self._group_handle(table, call.group_id))
        if call is None or table is not None and table.profile is not None:
            return T.BmActionEntry(action_type=T.BmActionEntryType.NONE)
        info = self._holder.state.actions.get(call.action_id)
        name = info.name if info is not None else str(call.action_id)
        return T.BmActionEntry(action_type=T.BmActionEntryType.ACTION_DATA, action_name=name,
                               action_data=[data_bytes(v) for v in call.params])

    def _mt_entry(self, t: Any, facts: TableFacts, handle: int, e: Any) -> T.BmMtEntry:
        prio = -1  # BMv2 has priorities in ternary, range and optional tables only
        if t.needs_priority and e.is_const and facts.const_priorities:
            consts = [c for c in t if c.is_const]
            prio = facts.const_priorities[consts.index(e)]
        elif t.needs_priority:
            prio = PRIO_TOP - e.priority
        return T.BmMtEntry(match_key=[self._params(f, m) for f, m in zip(t.fields, e.match)],
                           options=T.BmAddEntryOptions(priority=prio), entry_handle=handle,
                           action_entry=self._action_entry(e.action, t))

    # ---- direct tables ------------------------------------------------------------------------
    def bm_mt_add_entry(self, cxt_id: int, table_name: str, match_key: list, action_name: str,
                        action_data: list, options: Any) -> int:
        def add() -> int:
            t, facts, book = self._simple(table_name)
            a = self._writable_action(facts, action_name, action_data)
            if not t.fields:
                raise table_error("NO_TABLE_KEY")
            entry = t.insert(self._match(t, match_key), a.id, tuple(to_int(b) for b in action_data),
                             self._priority(t, options))
            return book.add(t, entry)
        return self._call(add)

    def _writable_action(self, facts: Any, action_name: str, action_data: list) -> Any:
        """The action an add or a modify writes, refused as BMv2 refuses it (immutable table, wrong data)."""
        a = self._action(action_name)
        if facts.immutable:
            raise table_error("IMMUTABLE_TABLE_ENTRIES")
        if len(action_data) != len(a.params):
            raise table_error("BAD_ACTION_DATA")
        return a

    @staticmethod
    def _priority(t: Any, options: Any) -> int:
        prio = getattr(options, "priority", None)
        return PRIO_TOP - prio if prio is not None and prio >= 0 and t.needs_priority else 0

    def bm_mt_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int, action_name: str,
                           action_data: list) -> None:
        def modify() -> None:
            t, facts, book = self._simple(table_name)
            a = self._writable_action(facts, action_name, action_data)
            e = self._entry(book, entry_handle)
            t.modify(match_of(t, e), e.priority, action_id=a.id, params=tuple(to_int(b) for b in action_data),
                     **kept(e))
        self._call(modify)

    def bm_mt_delete_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> None:
        def delete() -> None:
            t, facts, book = self._simple(table_name)
            if facts.immutable:
                raise table_error("IMMUTABLE_TABLE_ENTRIES")
            e = self._entry(book, entry_handle)
            t.discard(e)
            book.removed(entry_handle)
        self._call(delete)

    def bm_mt_set_default_action(self, cxt_id: int, table_name: str, action_name: str, action_data: list) -> None:
        def set_default() -> None:
            t, facts, _ = self._simple(table_name)
            a = self._action(action_name)
            if facts.const_default_entry:
                raise table_error("DEFAULT_ENTRY_IS_CONST")
            if facts.const_default_action is not None and self._action_ids.get(action_name) != facts.const_default_action:
                raise table_error("DEFAULT_ACTION_IS_CONST")
            if len(action_data) != len(a.params):
                raise table_error("BAD_ACTION_DATA")
            t.modify_default(a.id, tuple(to_int(b) for b in action_data), **kept_default(t.default_entry))
        self._call(set_default)

    def bm_mt_reset_default_entry(self, cxt_id: int, table_name: str) -> None:
        def reset() -> None:
            t, _, _ = self._simple(table_name)
            t.install_program_default(t.info.initial_default)
        self._call(reset)

    def bm_mt_get_num_entries(self, cxt_id: int, table_name: str) -> int:
        return self._call(lambda: len(self._table(table_name)[0]))

    def bm_mt_clear_entries(self, cxt_id: int, table_name: str, reset_default_entry: bool) -> None:
        """BMv2 empties the table, const entries included, and numbers its entries from 0 again."""
        def clear() -> None:
            t, facts, book = self._table(table_name)
            for e in t:
                t.discard(e)
            book.cleared(t)
            if reset_default_entry:
                self._reset_default(t, facts)
        self._call(clear)

    def _reset_default(self, t: Any, facts: TableFacts) -> None:
        if facts.type == "simple":
            t.install_program_default(t.info.initial_default)
        else:
            self._indirect_reset_default(t)

    def bm_mt_get_entries(self, cxt_id: int, table_name: str) -> list:
        def entries() -> list:
            t, facts, book = self._table(table_name)
            return [self._mt_entry(t, facts, h, e) for h, e in book.items()]
        return self._call(entries)

    def bm_mt_get_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> T.BmMtEntry:
        def entry() -> T.BmMtEntry:
            t, facts, book = self._table(table_name)
            return self._mt_entry(t, facts, entry_handle, self._entry(book, entry_handle))
        return self._call(entry)

    def bm_mt_get_entry_from_key(self, cxt_id: int, table_name: str, match_key: list, options: Any) -> T.BmMtEntry:
        def entry() -> T.BmMtEntry:
            t, facts, book = self._table(table_name)
            e = t.get(self._match(t, match_key), self._priority(t, options))
            for h, e2 in book.items():
                if e2 is e:
                    return self._mt_entry(t, facts, h, e)
            raise table_error("BAD_MATCH_KEY")
        return self._call(entry)

    def bm_mt_get_default_entry(self, cxt_id: int, table_name: str) -> T.BmActionEntry:
        def default() -> T.BmActionEntry:
            t, _, _ = self._table(table_name)
            return self._action_entry(t.default_entry.action, t)
        return self._call(default)


def _mapped(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a P4Runtime-state refusal becomes BMv2's nearest table error code."""
    try:
        return fn()
    except StateError as exc:
        code = {6: "DUPLICATE_ENTRY", 8: "TABLE_FULL"}.get(int(exc.code), "ERROR")
        raise table_error(code) from None
