"""BMv2's handles for the Thrift ``standard`` service: entry, member and group numbers.

Why: a simple_switch_CLI commands file names entries, members and groups by the handles the
switch answered (``table_delete T 3``, ``table_indirect_add T k => 2``), and labs' files are
written against BMv2's numbering. BMv2's rules (behavioral-model ``handle_mgr.h`` and
``match_units.cpp``): each table, and each action profile's members and groups, has its own
numbers; a new object takes the lowest free number; an entry handle carries in its top 8 bits
the version of its slot, which goes up by one each time an entry of that slot is deleted (so a
stale handle is ``EXPIRED_HANDLE``, a never-used one ``INVALID_HANDLE``); clearing a table
frees every slot and sets every version back to 0. P4Runtime writes to the same tables: an
entry it inserted gets the lowest free slot the next time Thrift looks at the table, in the
order the entries were inserted.
"""

from __future__ import annotations

import heapq
from typing import Any

VERSION_SHIFT = 24
SLOT_MASK = (1 << VERSION_SHIFT) - 1


class LowestFree:
    """Numbers from 0, the lowest free one first (BMv2's ``HandleMgr``)."""

    def __init__(self) -> None:
        self._free: list[int] = []  # released numbers below _top (a heap)
        self._top = 0
        self.used: set[int] = set()

    def take(self) -> int:
        n = heapq.heappop(self._free) if self._free else self._top
        if n == self._top:
            self._top += 1
        self.used.add(n)
        return n

    def release(self, n: int) -> None:
        self.used.discard(n)
        heapq.heappush(self._free, n)

    def clear(self) -> None:
        self._free, self._top, self.used = [], 0, set()


class EntryBook:
    """The BMv2 handles of one table's entries, kept in step with the table's state.

    Entries are told apart by their engine handle (``TableEntry._handle``), which a table never
    reuses; a table's state is unchanged since the last look when it has had no insert (its
    engine handle counter did not move) and holds as many entries as the book.
    """

    def __init__(self) -> None:
        self._slots = LowestFree()
        self._entry_at: dict[int, Any] = {}  # slot -> TableEntry
        self._slot_of: dict[int, int] = {}  # engine handle -> slot
        self._version: dict[int, int] = {}  # slot -> version (0 when absent)
        self._seen_next = 0

    def sync(self, table: Any) -> None:
        """Take in what P4Runtime (or the program's const entries) changed in ``table``."""
        next_handle = table._next_handle  # noqa: SLF001 - the table's own insert counter
        if next_handle == self._seen_next and len(table) == len(self._entry_at):
            return
        live = {e._handle: e for e in table}  # noqa: SLF001
        for slot, e in list(self._entry_at.items()):
            if live.get(e._handle) is not e:  # noqa: SLF001
                self._forget(slot)
        for h, e in live.items():
            if h not in self._slot_of:
                self._place(e)
        self._seen_next = next_handle

    def add(self, table: Any, entry: Any) -> int:
        """The handle of ``entry``, just inserted into ``table`` by Thrift."""
        self.sync(table)  # the insert itself is the one change the book does not know yet
        slot = self._slot_of[entry._handle]  # noqa: SLF001
        return self.handle(slot)

    def handle(self, slot: int) -> int:
        return (self._version.get(slot, 0) << VERSION_SHIFT) | slot

    def entry(self, handle: int, *, check_version: bool = True) -> tuple[Any | None, str]:
        """The entry of ``handle``, or None and BMv2's error name (INVALID_HANDLE or
        EXPIRED_HANDLE). Counter and meter calls check the slot only, as BMv2."""
        slot = handle & SLOT_MASK
        e = self._entry_at.get(slot) if 0 <= handle <= 0xFFFFFFFF else None
        if e is None:
            return None, "INVALID_HANDLE"
        if check_version and handle >> VERSION_SHIFT != self._version.get(slot, 0):
            return None, "EXPIRED_HANDLE"
        return e, ""

    def removed(self, handle: int) -> None:
        """Thrift deleted the entry of ``handle``: its slot is free, its version goes up."""
        self._forget(handle & SLOT_MASK)

    def cleared(self, table: Any) -> None:
        """The table was emptied by ``table_clear``: every slot free, every version 0."""
        self._slots.clear()
        self._entry_at.clear()
        self._slot_of.clear()
        self._version.clear()
        self._seen_next = table._next_handle  # noqa: SLF001

    def items(self) -> list[tuple[int, Any]]:
        """(handle, entry) in slot order: the order BMv2 dumps a table in."""
        return [(self.handle(s), self._entry_at[s]) for s in sorted(self._entry_at)]

    def _place(self, entry: Any) -> None:
        slot = self._slots.take()
        self._entry_at[slot] = entry
        self._slot_of[entry._handle] = slot  # noqa: SLF001

    def _forget(self, slot: int) -> None:
        e = self._entry_at.pop(slot)
        self._slot_of.pop(e._handle, None)  # noqa: SLF001
        self._version[slot] = (self._version.get(slot, 0) + 1) & 0xFF
        self._slots.release(slot)


class IdBook:
    """BMv2 handles of one action profile's members (or groups) beside their P4Runtime ids.

    P4Runtime ids are non-zero and chosen by the controller; BMv2 handles start at 0. A member
    Thrift creates gets the lowest free handle and the id handle+1 when free (else the first free
    id above the largest); one P4Runtime created gets a handle the next time Thrift looks.
    """

    def __init__(self) -> None:
        self._handles = LowestFree()
        self.id_of: dict[int, int] = {}  # handle -> P4Runtime id
        self.handle_of: dict[int, int] = {}  # P4Runtime id -> handle

    def sync(self, ids: Any) -> None:
        """Match the book to the ids the profile holds now (``ids`` in insertion order)."""
        ids = list(ids)
        if len(ids) == len(self.handle_of) and all(i in self.handle_of for i in ids):
            return
        present = set(ids)
        for i in [i for i in self.handle_of if i not in present]:
            self.drop(i)
        for i in ids:
            if i not in self.handle_of:
                self.bind(self._handles.take(), i)

    def new(self, taken: Any) -> tuple[int, int]:
        """A fresh (handle, id) pair; ``taken`` holds the ids in use."""
        h = self._handles.take()
        i = h + 1
        if i in taken:
            i = max(taken) + 1
        self.bind(h, i)
        return h, i

    def bind(self, handle: int, ident: int) -> None:
        self.id_of[handle] = ident
        self.handle_of[ident] = handle

    def drop(self, ident: int) -> None:
        h = self.handle_of.pop(ident)
        del self.id_of[h]
        self._handles.release(h)

    def unbind_new(self, handle: int) -> None:
        """Give back a handle ``new`` handed out for an object that was then refused."""
        self.drop(self.id_of[handle])
