"""The data plane's copy of the table state: what the P4Runtime core sends the engine.

Why a copy and not one store: P4Runtime keeps per entry what the data plane never reads
(controller metadata, idle timeouts, the match as written, for Read), validates every write
against P4Info, and rolls batches back; the engine (``hbh_engine.P4Program``) needs only
what a lookup needs, in its own index. So ``TableState`` and ``ActionProfileState`` stay the
store of record and send every change of what a lookup can see through one function per
kind of object (``TableState._send_entry`` for an entry or the default entry, ``discard``
for a removal, ``ActionProfileState._send_member`` / ``_send_group``), called by the
mutators right after they change their own state; ``attach`` sends everything once (a
program loaded after entries were written). There is no other way into the engine's tables,
so the two cannot drift apart by a path that forgets one of them. The Python index
(``TableState.lookup``) is kept as the differential oracle's lookup (``HBH_P4_ORACLE=1``):
tests drive writes into both and compare what packets hit.

A state may feed several programs (a pipeline and its reloads, tests loading one state
twice); it holds them weakly, so a dropped pipeline stops receiving writes.
"""

from __future__ import annotations

import weakref
from typing import Any

# Action kinds of hbh_engine's table interface (engine/src/p4/p4tables.rs, ACT_*); tables.py's
# ``encode_action`` writes an entry's action in them.
ACT_NONE, ACT_DIRECT, ACT_MEMBER, ACT_GROUP, ACT_SET = range(5)


class Sinks:
    """The engine programs one state object writes to (weakly held)."""

    __slots__ = ("_refs",)

    def __init__(self) -> None:
        self._refs: list[weakref.ref] = []

    def __bool__(self) -> bool:
        return bool(self._refs)

    def add(self, program: Any) -> None:
        self._refs = [r for r in self._refs if r() is not None and r() is not program]
        self._refs.append(weakref.ref(program))

    def send(self, method: str, *args: Any) -> None:
        """``program.method(*args)`` on every live program."""
        dead = False
        for ref in self._refs:
            prog = ref()
            if prog is None:
                dead = True
            else:
                getattr(prog, method)(*args)
        if dead:
            self._refs = [r for r in self._refs if r() is not None]


__all__ = ["ACT_DIRECT", "ACT_GROUP", "ACT_MEMBER", "ACT_NONE", "ACT_SET", "Sinks"]
