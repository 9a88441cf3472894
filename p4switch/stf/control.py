"""STF control-plane commands on p4switch's runtime state (what simple_switch_CLI does for BMv2).

Why: p4c's STF runner turns ``add``/``setdefault`` and the ``mirroring_*``/``mc_*`` commands
into simple_switch_CLI lines that address tables, actions and fields by (suffixes of) their
BMv2 JSON names. p4switch has no CLI for tables: this module resolves the same names
against the P4Info names of the :class:`~p4switch.state.runtime.RuntimeState` and writes the
state directly, with the same defaults (a missing ternary/lpm key is don't care, a missing
exact key is 0; ``*`` digits are don't-care bits; STF priorities are P4Runtime's, larger wins:
p4c's runner maps ``p`` to BMv2's ``10000 - p``, where smaller wins).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from p4switch.state.errors import StateError
from p4switch.state.pre import CloneSession, MulticastGroup, Replica
from p4switch.state.runtime import RuntimeState
from p4switch.state.tables import (
    Exact,
    Lpm,
    Match,
    MatchFieldInfo,
    MatchKind,
    OptionalMatch,
    TableEntry,
    Ternary,
)

from .script import AddCommand, Number, StfCommand, StfSyntaxError, parse_action_call, parse_number

__all__ = ["StfControl", "StfCommandError"]


class StfCommandError(ValueError):
    """A command that names something the program lacks, or values that do not fit."""


def _by_suffix(names: Iterable[str], wanted: str, what: str, where: str) -> str:
    """The one name equal to ``wanted`` or ending in ``.wanted`` (then in ``wanted``)."""
    names = list(names)
    if wanted in names:
        return wanted
    for suffix in ("." + wanted, wanted):
        hits = [n for n in names if n.endswith(suffix)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise StfCommandError(f"{where}: {what} '{wanted}' is ambiguous: {', '.join(sorted(hits))}")
    raise StfCommandError(f"{where}: the program has no {what} '{wanted}'")


def _key_aliases(name: str) -> list[str]:
    """The names a key field goes by in STF files: P4Info's, and BMv2's ``$valid$`` forms
    (P4Info names an ``isValid()`` key ``h.$valid$``, as p4c, or ``h.isValid()``)."""
    for suffix in (".isValid()", ".$valid$"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            return [name, base + ".$valid$", base + ".valid", base + ".isValid()", base]
    return [name]


@dataclass
class _McNode:
    rid: int
    ports: tuple[int, ...]


@dataclass
class StfControl:
    """Applies the STF control-plane commands to ``state``."""

    state: RuntimeState
    nodes: dict[int, _McNode] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)
    entries: dict[str, TableEntry] = field(default_factory=dict)  # `add ... = ID`

    # ---- tables ----------------------------------------------------------------------------
    def add(self, cmd: AddCommand, where: str) -> None:
        table = self.state.tables_by_name[_by_suffix(self.state.tables_by_name, cmd.table, "table", where)]
        match: dict[str, Match] = {}
        for key, text in cmd.keys:
            fname = self._field(table.fields, key, table.name, where)
            f = next(x for x in table.fields if x.name == fname)
            m = self._match(f, text, where)
            if m is not None:
                match[fname] = m
        for f in table.fields:
            if f.kind == MatchKind.EXACT and f.name not in match:
                match[f.name] = Exact(0)
        action_id, params = self._action(cmd.action, cmd.args, table.info.action_scopes, where)
        priority = 0
        if table.needs_priority:
            priority = cmd.priority + 1 if cmd.priority is not None else 1  # P4Runtime needs >= 1
        try:
            entry = table.insert(match, action_id, params, priority)
        except StateError as exc:
            raise StfCommandError(f"{where}: {exc.message}") from None
        if cmd.entry_id is not None:
            self.entries[cmd.entry_id] = entry

    def setdefault(self, cmd: StfCommand) -> None:
        if len(cmd.args) < 2:
            raise StfSyntaxError(f"{cmd.where}: setdefault needs a table and an action call")
        tname = cmd.args[0]
        table = self.state.tables_by_name[_by_suffix(self.state.tables_by_name, tname, "table", cmd.where)]
        name, args = parse_action_call(" ".join(cmd.args[1:]), cmd.where)
        action_id, params = self._action(name, args, table.info.action_scopes, cmd.where)
        try:
            table.set_default(action_id, params)
        except StateError as exc:
            raise StfCommandError(f"{cmd.where}: {exc.message}") from None

    def remove_all(self) -> None:
        for table in self.state.tables.values():
            if not table.info.is_const:
                table.clear()

    @staticmethod
    def _field(fields: tuple[MatchFieldInfo, ...], key: str, table: str, where: str) -> str:
        if "$" in key and "$valid$" not in key:  # BMv2's stack element form h$0 = h[0]
            base, _, rest = key.partition("$")
            idx = "".join(c for c in rest if c.isdigit())
            key = f"{base}[{idx}]{rest[len(idx):]}"
        names = {alias: f.name for f in fields for alias in _key_aliases(f.name)}
        return names[_by_suffix(names, key, f"key field of table '{table}'", where)]

    @staticmethod
    def _match(f: MatchFieldInfo, text: str, where: str) -> Match | None:
        """One key's match from its STF text; None means don't care."""
        full = f.full_mask
        if f.kind == MatchKind.LPM:
            value_text, sep, plen_text = text.partition("/")
            num = parse_number(value_text, where)
            if sep:
                plen = int(parse_number(plen_text, where).value)
            elif num.digit_bits is None:
                plen = f.bitwidth
            else:  # as p4c's runner: the digits written, less the '*' ones, are the prefix
                plen = bin(num.mask).count("1") if num.wildcards else num.digit_bits
            plen = max(0, min(plen, f.bitwidth))
            if plen == 0:
                return None
            prefix = full ^ (full >> plen)
            return Lpm(num.value & prefix, plen)
        num = parse_number(text, where)
        if num.value > full and not num.wildcards:
            raise StfCommandError(f"{where}: key '{f.name}' value {text} does not fit bit<{f.bitwidth}>")
        if f.kind == MatchKind.TERNARY:
            mask = num.mask & full
            return Ternary(num.value & mask, mask) if mask else None
        if f.kind == MatchKind.OPTIONAL:
            return OptionalMatch(num.value)
        if f.kind == MatchKind.EXACT:
            return Exact(num.value)
        raise StfCommandError(f"{where}: key '{f.name}' is a {f.kind.name.lower()} match: STF cannot write it")

    def _action(self, name: str, args: list[tuple[str, Number]], scopes: Iterable[int],
                where: str) -> tuple[int, tuple[int, ...]]:
        allowed = {self.state.actions[i].name: i for i in scopes}
        action = self.state.actions[allowed[_by_suffix(allowed, name, "action of this table", where)]]
        values = {a: n.value for a, n in args}
        for p in action.params:
            if p.name in values and values[p.name] >> p.bitwidth:
                raise StfCommandError(f"{where}: action '{action.name}' argument {p.name}={values[p.name]} "
                                      f"does not fit bit<{p.bitwidth}>")
        try:
            return action.id, action.params_from_mapping(values)
        except StateError as exc:
            raise StfCommandError(f"{where}: {exc.message}") from None

    # ---- packet replication --------------------------------------------------------------
    def direct(self, cmd: StfCommand) -> None:
        """The simple_switch_CLI commands STF passes through unchanged."""
        handler = getattr(self, "_cli_" + cmd.name, None)
        if handler is None:
            raise StfCommandError(f"{cmd.where}: '{cmd.name}' is not supported by p4switch's STF runner")
        try:
            handler(cmd, [self._int(a, cmd.where) for a in cmd.args] if cmd.name.startswith(("mirr", "mc_")) else [])
        except StateError as exc:
            raise StfCommandError(f"{cmd.where}: {exc.message}") from None
        except (IndexError, TypeError):
            raise StfSyntaxError(f"{cmd.where}: wrong number of arguments for {cmd.name}") from None

    @staticmethod
    def _int(text: str, where: str) -> int:
        n = parse_number(text, where)
        if n.wildcards:
            raise StfSyntaxError(f"{where}: '{text}': no don't-care digits here")
        return n.value

    def _cli_mirroring_add(self, cmd: StfCommand, a: list[int]) -> None:
        session = CloneSession(a[0], (Replica(a[1], 0),))
        self._put_session(session)

    def _cli_mirroring_add_mc(self, cmd: StfCommand, a: list[int]) -> None:
        group = self.state.pre.multicast_group(a[1])
        replicas = group.replicas if group is not None else ()
        self._put_session(CloneSession(a[0], tuple(replicas)))

    def _put_session(self, session: CloneSession) -> None:
        pre = self.state.pre
        if pre.clone_session(session.session_id) is None:
            pre.insert_clone_session(session)
        else:
            pre.modify_clone_session(session)

    def _cli_mirroring_delete(self, cmd: StfCommand, a: list[int]) -> None:
        self.state.pre.delete_clone_session(a[0])

    def _cli_mirroring_get(self, cmd: StfCommand, a: list[int]) -> None:
        return None

    def _cli_mc_mgrp_create(self, cmd: StfCommand, a: list[int]) -> None:
        self.groups[a[0]] = []
        self._sync_group(a[0])

    def _cli_mc_node_create(self, cmd: StfCommand, a: list[int]) -> None:
        self.nodes[len(self.nodes)] = _McNode(a[0], tuple(a[1:]))

    def _cli_mc_node_update(self, cmd: StfCommand, a: list[int]) -> None:
        if a[0] not in self.nodes:
            raise StfCommandError(f"{cmd.where}: no multicast node {a[0]}")
        self.nodes[a[0]].ports = tuple(a[1:])
        for gid in self.groups:
            self._sync_group(gid)

    def _cli_mc_node_associate(self, cmd: StfCommand, a: list[int]) -> None:
        if a[0] not in self.groups:
            raise StfCommandError(f"{cmd.where}: no multicast group {a[0]} (mc_mgrp_create it first)")
        if a[1] not in self.nodes:
            raise StfCommandError(f"{cmd.where}: no multicast node {a[1]} (mc_node_create it first)")
        self.groups[a[0]].append(a[1])
        self._sync_group(a[0])

    def _sync_group(self, gid: int) -> None:
        replicas: list[Replica] = []
        seen: set[tuple[int, int]] = set()
        for handle in self.groups[gid]:
            node = self.nodes[handle]
            for port in sorted(node.ports):
                if (port, node.rid) not in seen:
                    seen.add((port, node.rid))
                    replicas.append(Replica(port, node.rid))
        group = MulticastGroup(gid, tuple(replicas))
        pre = self.state.pre
        if pre.multicast_group(gid) is None:
            pre.insert_multicast_group(group)
        else:
            pre.modify_multicast_group(group)

    # ---- counters and registers -------------------------------------------------------------
    def _cli_counter_write(self, cmd: StfCommand, a: list[int]) -> None:
        name, idx, pkts, nbytes = cmd.args[0], *(self._int(x, cmd.where) for x in cmd.args[1:4])
        counters = self.state.counters_by_name
        counters[_by_suffix(counters, name, "counter", cmd.where)].write(idx, pkts, nbytes)

    def _cli_counter_read(self, cmd: StfCommand, a: list[int]) -> None:
        counters = self.state.counters_by_name
        counters[_by_suffix(counters, cmd.args[0], "counter", cmd.where)].read(self._int(cmd.args[1], cmd.where))

    def _cli_register_write(self, cmd: StfCommand, a: list[int]) -> None:
        regs = self.state.registers_by_name
        reg = regs[_by_suffix(regs, cmd.args[0], "register", cmd.where)]
        reg.write(self._int(cmd.args[1], cmd.where), self._int(cmd.args[2], cmd.where))

    def _cli_register_read(self, cmd: StfCommand, a: list[int]) -> None:
        regs = self.state.registers_by_name
        regs[_by_suffix(regs, cmd.args[0], "register", cmd.where)].read(self._int(cmd.args[1], cmd.where))

    def _cli_register_reset(self, cmd: StfCommand, a: list[int]) -> None:
        regs = self.state.registers_by_name
        reg = regs[_by_suffix(regs, cmd.args[0], "register", cmd.where)]
        for i in range(reg.size):
            reg.write(i, 0)

    def counter_value(self, name: str, index: int | str, where: str) -> tuple[int, int]:
        """(packets, bytes) for ``check_counter``: an indirect counter's cell, or (index
        ``$ID``) the direct counter of the entry added with ``= ID``."""
        if isinstance(index, str):
            entry = self.entries.get(index.lstrip("$"))
            if entry is None:
                raise StfCommandError(f"{where}: no entry was added with '= {index.lstrip('$')}'")
            if entry.direct_counter is None:
                raise StfCommandError(f"{where}: the entry {index} has no direct counter '{name}'")
            return entry.direct_counter.snapshot()
        counters = self.state.counters_by_name
        try:
            return counters[_by_suffix(counters, name, "counter", where)].read(index)
        except StateError as exc:
            raise StfCommandError(f"{where}: {exc.message}") from None
