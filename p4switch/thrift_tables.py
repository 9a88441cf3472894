"""BMv2's Thrift ``standard`` table, counter and register calls on p4switch's runtime state.

Why: ``simple_switch_CLI`` commands files (``table_add``, ``table_set_default``, ``table_dump``,
``counter_read``, ``register_write`` ...) are how many labs configure BMv2. The CLI reads the
program from ``bm_get_config`` (the BMv2 JSON the switch runs) and sends names and byte strings;
this module turns them into the same ``RuntimeState`` writes P4Runtime makes, on the switch
loop (``run_in_loop``), so P4Runtime and Thrift see each other's writes. Priorities: BMv2's
smaller number wins, P4Runtime's larger; a Thrift priority ``p`` is stored as ``PRIO_TOP - p``.
Entry handles are the switch's own numbers, valid until the pipeline changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from bm_runtime.standard import ttypes as T

from p4switch.state import Lpm
from p4switch.state.errors import StateError
from p4switch.state.tables import Exact, Range, Ternary

PRIO_TOP = (1 << 31) - 1
Code = T.TableOperationErrorCode


def _int(b: bytes) -> int:
    return int.from_bytes(b, "big")


def _bytes(v: int, width: int) -> bytes:
    return v.to_bytes(max(1, (width + 7) // 8), "big")


class StandardTables:
    """The ``standard`` calls the CLI's table, counter and register commands use."""

    def __init__(self, holder: Any, run_in_loop: Callable[[Callable[[], Any]], Any]) -> None:
        self._holder = holder
        self._run = run_in_loop
        self._handles: dict[int, tuple[int, str, Any]] = {}  # handle -> (pipeline generation, table, entry)
        self._next = 0
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

    def _table(self, name: str) -> Any:
        state = self._holder.state
        t = state.tables_by_name.get(name) if state is not None else None
        if t is None:
            raise T.InvalidTableOperation(code=Code.INVALID_TABLE_NAME)
        return t

    def _action(self, name: str) -> Any:
        a = self._holder.state.actions_by_name.get(name)
        if a is None:
            raise T.InvalidTableOperation(code=Code.INVALID_ACTION_NAME)
        return a

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return self._run(fn)
        except StateError as exc:
            code = {6: Code.DUPLICATE_ENTRY, 8: Code.TABLE_FULL}.get(int(exc.code), Code.ERROR)
            raise T.InvalidTableOperation(code=code) from None

    # ---- match keys ---------------------------------------------------------------------------
    def _match(self, table: Any, params: list) -> dict[str, Any]:
        fields = table.fields
        if len(params) != len(fields):
            raise T.InvalidTableOperation(code=Code.BAD_MATCH_KEY)
        out: dict[str, Any] = {}
        for f, p in zip(fields, params):
            if p.type == T.BmMatchParamType.EXACT:
                out[f.name] = _int(p.exact.key)
            elif p.type == T.BmMatchParamType.LPM:
                if p.lpm.prefix_length:
                    out[f.name] = Lpm(_int(p.lpm.key), p.lpm.prefix_length)
            elif p.type == T.BmMatchParamType.TERNARY:
                if _int(p.ternary.mask):
                    out[f.name] = Ternary(_int(p.ternary.key) & _int(p.ternary.mask), _int(p.ternary.mask))
            elif p.type == T.BmMatchParamType.RANGE:
                lo, hi = _int(p.range.start), _int(p.range.end_)
                if (lo, hi) != (0, f.full_mask):
                    out[f.name] = Range(lo, hi)
            elif p.type == T.BmMatchParamType.VALID:
                out[f.name] = int(bool(p.valid.key))
            else:
                raise T.InvalidTableOperation(code=Code.BAD_MATCH_KEY)
        return out

    def _params(self, f: Any, m: Any) -> T.BmMatchParam:
        w = f.bitwidth
        if isinstance(m, (Exact, int)):
            v = m.value if isinstance(m, Exact) else m
            return T.BmMatchParam(type=T.BmMatchParamType.EXACT, exact=T.BmMatchParamExact(_bytes(v, w)))
        if isinstance(m, Lpm):
            return T.BmMatchParam(type=T.BmMatchParamType.LPM, lpm=T.BmMatchParamLPM(_bytes(m.value, w), m.prefix_len))
        if isinstance(m, Ternary):
            return T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                                  ternary=T.BmMatchParamTernary(_bytes(m.value, w), _bytes(m.mask, w)))
        if isinstance(m, Range):
            return T.BmMatchParam(type=T.BmMatchParamType.RANGE, range=T.BmMatchParamRange(_bytes(m.low, w),
                                                                                             _bytes(m.high, w)))
        kind = f.kind.name.lower()  # an absent (wildcard) value
        if kind == "lpm":
            return T.BmMatchParam(type=T.BmMatchParamType.LPM, lpm=T.BmMatchParamLPM(_bytes(0, w), 0))
        if kind == "range":
            return T.BmMatchParam(type=T.BmMatchParamType.RANGE,
                                  range=T.BmMatchParamRange(_bytes(0, w), _bytes(f.full_mask, w)))
        return T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                              ternary=T.BmMatchParamTernary(_bytes(0, w), _bytes(0, w)))

    def _action_entry(self, call: Any) -> T.BmActionEntry:
        if call is None:
            return T.BmActionEntry(action_type=T.BmActionEntryType.NONE)
        info = self._holder.state.actions.get(call.action_id)
        name = info.name if info is not None else str(call.action_id)
        widths = [p.bitwidth for p in info.params] if info is not None else [64] * len(call.params)
        return T.BmActionEntry(action_type=T.BmActionEntryType.ACTION_DATA, action_name=name,
                               action_data=[_bytes(v, w) for v, w in zip(call.params, widths)])

    # ---- calls --------------------------------------------------------------------------------
    def bm_mt_add_entry(self, cxt_id: int, table_name: str, match_key: list, action_name: str,
                        action_data: list, options: Any) -> int:
        def add() -> int:
            t = self._table(table_name)
            a = self._action(action_name)
            prio = getattr(options, "priority", None)
            prio = PRIO_TOP - prio if prio is not None and prio >= 0 and t.needs_priority else 0
            entry = t.insert(self._match(t, match_key), a.id, tuple(_int(b) for b in action_data), prio)
            return self._new_handle(table_name, entry)
        return self._call(add)

    def bm_mt_set_default_action(self, cxt_id: int, table_name: str, action_name: str, action_data: list) -> None:
        def set_default() -> None:
            t = self._table(table_name)
            t.set_default(self._action(action_name).id, tuple(_int(b) for b in action_data))
        self._call(set_default)

    def _new_handle(self, table_name: str, entry: Any) -> int:
        """The next entry handle (BMv2 numbers them from 0)."""
        handle = self._next
        self._next += 1
        self._handles[handle] = (self._holder.generation, table_name, entry)
        return handle

    def _entry(self, table_name: str, handle: int) -> Any:
        got = self._handles.get(handle)
        if got is None or got[1] != table_name or got[0] != self._holder.generation:
            raise T.InvalidTableOperation(code=Code.INVALID_HANDLE)
        return got[2]

    def bm_mt_delete_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> None:
        def delete() -> None:
            t = self._table(table_name)
            e = self._entry(table_name, entry_handle)
            t.delete({f.name: m for f, m in zip(t.fields, e.match) if m is not None}, e.priority)
            del self._handles[entry_handle]
        self._call(delete)

    def bm_mt_get_entries(self, cxt_id: int, table_name: str) -> list:
        def entries() -> list:
            t = self._table(table_name)
            by_entry = {id(e): h for h, (g, n, e) in self._handles.items() if n == table_name}
            out = []
            for e in t:
                h = by_entry.get(id(e))
                if h is None:  # written by P4Runtime: it gets a handle here
                    h = self._new_handle(table_name, e)
                prio = PRIO_TOP - e.priority if e.priority else -1
                out.append(T.BmMtEntry(match_key=[self._params(f, m) for f, m in zip(t.fields, e.match)],
                                       options=T.BmAddEntryOptions(priority=prio), entry_handle=h,
                                       action_entry=self._action_entry(e.action)))
            return out
        return self._call(entries)

    def bm_mt_get_default_entry(self, cxt_id: int, table_name: str) -> T.BmActionEntry:
        return self._call(lambda: self._action_entry(getattr(self._table(table_name).default_entry, "action", None)))

    def bm_counter_read(self, cxt_id: int, counter_name: str, index: int) -> T.BmCounterValue:
        def read() -> T.BmCounterValue:
            c = self._holder.state.counters_by_name.get(counter_name) if self._holder.state else None
            if c is None or not 0 <= index < c.size:
                raise T.InvalidCounterOperation(code=T.CounterOperationErrorCode.INVALID_COUNTER_NAME
                                                if c is None else T.CounterOperationErrorCode.INVALID_INDEX)
            packets, nbytes = c.read(index)
            return T.BmCounterValue(bytes=nbytes, packets=packets)
        return self._run(read)

    def _register(self, name: str, index: int | None) -> Any:
        r = self._holder.state.registers_by_name.get(name) if self._holder.state else None
        if r is None:
            raise T.InvalidRegisterOperation(code=T.RegisterOperationErrorCode.INVALID_REGISTER_NAME)
        if index is not None and not 0 <= index < r.size:
            raise T.InvalidRegisterOperation(code=T.RegisterOperationErrorCode.INVALID_INDEX)
        return r

    def bm_register_read(self, cxt_id: int, register_name: str, index: int) -> int:
        return self._run(lambda: self._register(register_name, index).read(index))

    def bm_register_write(self, cxt_id: int, register_name: str, index: int, value: int) -> None:
        self._run(lambda: self._register(register_name, index).write(index, value))

    def bm_register_read_all(self, cxt_id: int, register_name: str) -> list:
        def read_all() -> list:
            r = self._register(register_name, None)
            return [r.read(i) for i in range(r.size)]
        return self._run(read_all)
