"""Action profiles and action selectors: members, groups, and indirect table actions.

An indirect table (P4Info ``implementation_id``) binds its entries not to an action but
to a *member* of its action profile (``MemberRef``), to a *group* of members of its
action selector (``GroupRef``), or to a one-shot weighted action set (``ActionSet``).
The data plane resolves the reference per packet through ``ActionProfileState.choose``,
so modifying a member changes every entry and group using it at once.

Selection within a group (our documented choice; BMv2 picks ``hash % group_size`` over
the members in order, which is what this gives when every weight is 1): the members, in
the order the group lists them, own consecutive ranges of ``weight`` slots; the hash of
the selector fields, reduced modulo the sum of weights, picks a slot. An empty group
resolves to None (the table then behaves as on a miss).

Sizes follow P4Info: a profile holds at most ``size`` members; for a selector, the
group sizes (the sum of the weights, or the number of members with
``sum_of_members``) add up to at most ``size`` over all groups and to at most
``max_group_size`` (or the group's own ``max_size``) in one group. Exceeding a limit is
RESOURCE_EXHAUSTED. Members and groups are refused by profiles programmed with one-shot
action sets, and the reverse (P4Runtime forbids mixing the two styles).

Every change of a member or a group is also sent to the engine programs applying the
profile's tables (``attach``; ``dataplane.py`` says why), by the mutator that makes it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from p4.config.v1 import p4info_pb2

from .actions import ActionCall, ActionInfo, Scope
from .dataplane import Sinks
from .errors import Code, StateError, invalid, not_found


class _ScopedActions(Protocol):
    @property
    def action_scopes(self) -> Mapping[int, Scope]: ...


class ProfileTable(Protocol):
    """What a profile asks of a table it implements (``tables.TableState`` is one): its name
    and where it may use each action. The tables hold their profile, not the reverse import."""

    @property
    def name(self) -> str: ...

    @property
    def info(self) -> _ScopedActions: ...


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A table entry's action: the member ``member_id`` of the table's profile."""

    member_id: int


@dataclass(frozen=True, slots=True)
class GroupRef:
    """A table entry's action: the group ``group_id`` of the table's selector."""

    group_id: int


@dataclass(frozen=True, slots=True)
class WeightedAction:
    """One action of a one-shot set (``weight`` >= 1)."""

    action: ActionCall
    weight: int = 1


class ActionSet:
    """A table entry's action: a one-shot weighted set, kept as written (read-write symmetry)."""

    __slots__ = ("actions", "_cum", "_total")

    def __init__(self, actions: Sequence[WeightedAction]) -> None:
        self.actions = tuple(actions)
        self._cum, self._total = _cumulative(a.weight for a in self.actions)

    def pick(self, h: int) -> ActionCall | None:
        if not self._total:
            return None
        return self.actions[bisect_right(self._cum, h % self._total)].action

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSet) and other.actions == self.actions

    def __hash__(self) -> int:
        return hash(self.actions)

    def __repr__(self) -> str:
        return f"ActionSet({list(self.actions)})"


IndirectAction = MemberRef | GroupRef | ActionSet


def _entries(n: int) -> str:
    return f"{n} table entr{'y' if n == 1 else 'ies'}"


def _cumulative(weights: Iterable[int]) -> tuple[list[int], int]:
    """Upper slot bounds (exclusive) per item: [w1, w1+w2, ...] and the total."""
    cum, total = [], 0
    for w in weights:
        total += w
        cum.append(total)
    return cum, total


@dataclass(frozen=True)
class ActionProfileInfo:
    """What P4Info says about an action profile or selector."""

    id: int
    name: str
    table_ids: tuple[int, ...]
    with_selector: bool
    size: int
    max_group_size: int
    sum_of_members: bool  # else sum of weights (also when P4Info leaves it unset)
    max_member_weight: int  # 0: no limit

    @classmethod
    def from_p4info(cls, ap: p4info_pb2.ActionProfile) -> ActionProfileInfo:
        name = ap.preamble.name
        if ap.size < 0 or ap.max_group_size < 0:
            raise invalid(f"P4Info action profile '{name}': negative size or max_group_size")
        members = ap.WhichOneof("selector_size_semantics") == "sum_of_members"
        max_weight = ap.sum_of_members.max_member_weight if members else 0
        return cls(ap.preamble.id, name, tuple(ap.table_ids), ap.with_selector, ap.size, ap.max_group_size,
                   members, max(0, max_weight))


class Member:
    """A member: an id bound to an action call (modified in place, so groups follow)."""

    __slots__ = ("member_id", "action")

    def __init__(self, member_id: int, action: ActionCall) -> None:
        self.member_id = member_id
        self.action = action

    def __repr__(self) -> str:
        return f"Member({self.member_id}, {self.action})"


class Group:
    """A selector group: ``members`` are (member_id, weight) in the order written."""

    __slots__ = ("group_id", "members", "max_size", "_picks", "_cum", "_total")

    def __init__(self, group_id: int, members: tuple[tuple[int, int], ...], max_size: int,
                 objects: Mapping[int, Member]) -> None:
        self.group_id = group_id
        self.members = members
        self.max_size = max_size
        self._picks = tuple(objects[mid] for mid, _ in members)
        self._cum, self._total = _cumulative(w for _, w in members)

    def pick(self, h: int) -> Member | None:
        if not self._total:
            return None
        return self._picks[bisect_right(self._cum, h % self._total)]

    def __repr__(self) -> str:
        return f"Group({self.group_id}, {list(self.members)}, max_size={self.max_size})"


class ActionProfileState:
    """Members and groups of one action profile/selector, with P4Runtime's write rules.

    ``tables`` are the TableStates it implements; they report the references their
    entries make (``account``), which decide whether a member or group may be deleted.
    """

    def __init__(self, info: ActionProfileInfo, actions: Mapping[int, ActionInfo],
                 tables: Sequence[ProfileTable]) -> None:
        self.info = info
        self.id = info.id
        self.name = info.name
        self.tables = tuple(tables)
        self._actions = actions
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self._refs: Counter[Any] = Counter()  # MemberRef/GroupRef -> table entries using it
        self.oneshot_entries = 0
        self._sinks = Sinks()  # engine programs applying its tables (dataplane.py)

    # ------------------------------------------------------------ the engine's copy

    def attach(self, program: Any) -> None:
        """Send the members and groups to ``program`` (an ``hbh_engine.P4Program``), and every
        later change."""
        program.profile_clear(self.id)
        for mid in self.members:
            program.profile_member(self.id, mid, self._member_data(mid))
        for gid in self.groups:
            program.profile_group(self.id, gid, self._group_data(gid))
        self._sinks.add(program)

    def _member_data(self, member_id: int) -> tuple[int, tuple[int, ...]] | None:
        m = self.members.get(member_id)
        return None if m is None else (m.action.action_id, m.action.params)

    def _group_data(self, group_id: int) -> tuple[tuple[int, int], ...] | None:
        g = self.groups.get(group_id)
        return None if g is None else g.members

    def _send_member(self, member_id: int) -> None:
        if self._sinks:
            self._sinks.send("profile_member", self.id, member_id, self._member_data(member_id))

    def _send_group(self, group_id: int) -> None:
        if self._sinks:
            self._sinks.send("profile_group", self.id, group_id, self._group_data(group_id))

    # ------------------------------------------------------------ data plane

    def choose(self, ref: IndirectAction, hash_fn: Callable[[Any], int], arg: Any) -> ActionCall | None:
        """The action a hit on an entry with ``ref`` runs; ``hash_fn(arg)`` only for groups/sets."""
        if type(ref) is MemberRef:
            m = self.members.get(ref.member_id)
            return m.action if m is not None else None
        if type(ref) is GroupRef:
            g = self.groups.get(ref.group_id)
            m = g.pick(hash_fn(arg)) if g is not None else None
            return m.action if m is not None else None
        return ref.pick(hash_fn(arg))

    # ------------------------------------------------------------ members

    def insert_member(self, member_id: int, action_id: int, params: Sequence[int] = ()) -> Member:
        self._check_id(member_id, "member")
        self._check_style_members()
        if member_id in self.members:
            raise StateError(Code.ALREADY_EXISTS, f"action profile '{self.name}': member {member_id} already exists")
        call = self.check_action(action_id, params)
        if 0 < self.info.size <= len(self.members):
            raise StateError(Code.RESOURCE_EXHAUSTED,
                             f"action profile '{self.name}' is full ({self.info.size} members)")
        m = self.members[member_id] = Member(member_id, call)
        self._send_member(member_id)
        return m

    def modify_member(self, member_id: int, action_id: int, params: Sequence[int] = ()) -> ActionCall:
        """Returns the previous action (for an undo with ``set_member_action``)."""
        m = self._member(member_id)
        call = self.check_action(action_id, params)
        old, m.action = m.action, call
        self._send_member(member_id)
        return old

    def set_member_action(self, member_id: int, call: ActionCall) -> None:
        self.members[member_id].action = call
        self._send_member(member_id)

    def delete_member(self, member_id: int) -> Member:
        self._member(member_id)
        in_groups = [g.group_id for g in self.groups.values() if any(mid == member_id for mid, _ in g.members)]
        if in_groups:
            raise StateError(Code.FAILED_PRECONDITION,
                             f"action profile '{self.name}': member {member_id} is in group(s) "
                             f"{', '.join(map(str, in_groups))}: remove it from them first")
        users = self._refs[MemberRef(member_id)]
        if users:
            raise StateError(Code.FAILED_PRECONDITION,
                             f"action profile '{self.name}': member {member_id} is used by {_entries(users)}")
        m = self.members.pop(member_id)
        self._send_member(member_id)
        return m

    def restore_member(self, m: Member) -> None:
        """Put back a deleted member (rollback)."""
        self.members[m.member_id] = m
        self._send_member(m.member_id)

    def drop_member(self, member_id: int) -> None:
        """Remove without checks (rollback of an insert)."""
        self.members.pop(member_id, None)
        self._send_member(member_id)

    # ------------------------------------------------------------ groups

    def insert_group(self, group_id: int, members: Sequence[tuple[int, int]], max_size: int = 0) -> Group:
        self._check_id(group_id, "group")
        self._require_selector()
        self._check_style_members()
        if group_id in self.groups:
            raise StateError(Code.ALREADY_EXISTS, f"action selector '{self.name}': group {group_id} already exists")
        self._check_max_size(max_size)
        g = self._build_group(group_id, members, max_size, replacing=None)
        self.groups[group_id] = g
        self._send_group(group_id)
        return g

    def modify_group(self, group_id: int, members: Sequence[tuple[int, int]], max_size: int = 0) -> Group:
        """Returns the previous Group object (for an undo with ``put_group``)."""
        self._check_id(group_id, "group")
        self._require_selector()
        old = self.groups.get(group_id)
        if old is None:
            raise not_found(f"action selector '{self.name}': no group {group_id}")
        if max_size != old.max_size:
            raise invalid(f"action selector '{self.name}' group {group_id}: max_size cannot change "
                          f"({old.max_size} when inserted, {max_size} now)")
        self.groups[group_id] = self._build_group(group_id, members, max_size, replacing=old)
        self._send_group(group_id)
        return old

    def delete_group(self, group_id: int) -> Group:
        self._check_id(group_id, "group")
        self._require_selector()
        g = self.groups.get(group_id)
        if g is None:
            raise not_found(f"action selector '{self.name}': no group {group_id}")
        users = self._refs[GroupRef(group_id)]
        if users:
            raise StateError(Code.FAILED_PRECONDITION,
                             f"action selector '{self.name}': group {group_id} is used by {_entries(users)}")
        g = self.groups.pop(group_id)
        self._send_group(group_id)
        return g

    def put_group(self, g: Group) -> None:
        """Put back a group object (rollback of a MODIFY or DELETE)."""
        self.groups[g.group_id] = g
        self._send_group(g.group_id)

    def drop_group(self, group_id: int) -> None:
        """Remove without checks (rollback of an insert)."""
        self.groups.pop(group_id, None)
        self._send_group(group_id)

    # ------------------------------------------------------------ table entries

    def check_ref(self, ref: IndirectAction, table: str) -> IndirectAction:
        """Validate an indirect action of an entry of ``table``."""
        if isinstance(ref, MemberRef):
            self._check_style_refs(table, "a member id")
            if ref.member_id not in self.members:
                raise not_found(f"table '{table}': action profile '{self.name}' has no member {ref.member_id}")
        elif isinstance(ref, GroupRef):
            self._require_selector(f"table '{table}': ")
            self._check_style_refs(table, "a group id")
            if ref.group_id not in self.groups:
                raise not_found(f"table '{table}': action selector '{self.name}' has no group {ref.group_id}")
        else:
            self._check_action_set(ref, table)
        return ref

    def account(self, ref: Any, delta: int) -> None:
        """A table entry starts (+1) or stops (-1) using ``ref``."""
        if isinstance(ref, MemberRef | GroupRef):
            self._refs[ref] += delta
            if self._refs[ref] <= 0:
                del self._refs[ref]
        elif isinstance(ref, ActionSet):
            self.oneshot_entries += delta

    def references(self, ref: MemberRef | GroupRef) -> int:
        return self._refs[ref]

    # ------------------------------------------------------------ checks

    def check_action(self, action_id: int, params: Sequence[int]) -> ActionCall:
        """An action every table of the profile may use in an entry, with valid arguments."""
        info = self._actions.get(action_id)
        if info is None:
            raise invalid(f"action profile '{self.name}': unknown action id 0x{action_id:08x}")
        for t in self.tables:
            scope = t.info.action_scopes.get(action_id)
            if scope is None:
                raise invalid(f"action profile '{self.name}': action '{info.name}' is not an action of table "
                              f"'{t.name}'")
            if scope == Scope.DEFAULT_ONLY:
                raise StateError(Code.PERMISSION_DENIED,
                                 f"action profile '{self.name}': action '{info.name}' is @defaultonly in table "
                                 f"'{t.name}'")
        return ActionCall(action_id, info.check_params(tuple(params)))

    def group_size(self, weights: Iterable[int]) -> int:
        """A group's size as P4Info's selector_size_semantics counts it."""
        ws = list(weights)
        return len(ws) if self.info.sum_of_members else sum(ws)

    def check_weight(self, weight: int, where: str) -> None:
        if weight <= 0:
            raise invalid(f"{where}: weight {weight} (must be >= 1)")
        mw = self.info.max_member_weight
        if mw and weight > mw:
            raise invalid(f"{where}: weight {weight} exceeds max_member_weight {mw}")

    def _check_id(self, ident: int, what: str) -> None:
        if ident <= 0 or ident > 0xFFFFFFFF:
            raise invalid(f"action profile '{self.name}': {what} id {ident} (must be a non-zero uint32)")

    def _member(self, member_id: int) -> Member:
        self._check_id(member_id, "member")
        m = self.members.get(member_id)
        if m is None:
            raise not_found(f"action profile '{self.name}': no member {member_id}")
        return m

    def _require_selector(self, prefix: str = "") -> None:
        if not self.info.with_selector:
            raise invalid(f"{prefix}action profile '{self.name}' has no selector: groups are not allowed")

    def _check_style_members(self) -> None:
        if self.oneshot_entries:
            raise invalid(f"action profile '{self.name}' is programmed with one-shot action sets: members and "
                          "groups cannot be added (P4Runtime forbids mixing the two styles)")

    def _check_style_refs(self, table: str, what: str) -> None:
        if self.oneshot_entries:
            raise invalid(f"table '{table}': action profile '{self.name}' is programmed with one-shot action "
                          f"sets: {what} cannot be used")

    def _check_max_size(self, max_size: int) -> None:
        mgs = self.info.max_group_size
        if max_size < 0:
            raise invalid(f"action selector '{self.name}': negative max_size {max_size}")
        if mgs > 0 and not 0 < max_size <= mgs:
            raise invalid(f"action selector '{self.name}': max_size {max_size} must be in 1..{mgs} "
                          "(the P4Info max_group_size)")

    def _build_group(self, group_id: int, members: Sequence[tuple[int, int]], max_size: int,
                     replacing: Group | None) -> Group:
        where = f"action selector '{self.name}' group {group_id}"
        seen: set[int] = set()
        for mid, weight in members:
            if mid in seen:
                raise invalid(f"{where}: member {mid} listed twice (use its weight)")
            seen.add(mid)
            self.check_weight(weight, f"{where} member {mid}")
            if mid not in self.members:
                raise not_found(f"{where}: no member {mid} in the profile")
        size = self.group_size(w for _, w in members)
        limit = max_size or self.info.max_group_size
        if limit and size > limit:
            raise StateError(Code.RESOURCE_EXHAUSTED, f"{where}: size {size} exceeds its maximum {limit}")
        if self.info.size > 0:
            others = sum(self.group_size(w for _, w in g.members) for g in self.groups.values() if g is not replacing)
            if others + size > self.info.size:
                raise StateError(Code.RESOURCE_EXHAUSTED,
                                 f"{where}: the groups of the selector would total {others + size} "
                                 f"(its size is {self.info.size})")
        return Group(group_id, tuple(members), max_size, self.members)

    def _check_action_set(self, s: ActionSet, table: str) -> None:
        where = f"table '{table}' one-shot action set"
        self._require_selector(f"table '{table}': ")
        if self.members or self.groups:
            raise invalid(f"{where}: action selector '{self.name}' is programmed with members and groups "
                          "(P4Runtime forbids mixing the two styles)")
        if not s.actions:
            raise invalid(f"{where} is empty")
        for i, wa in enumerate(s.actions):
            self.check_weight(wa.weight, f"{where} action {i}")
        size = self.group_size(wa.weight for wa in s.actions)
        mgs = self.info.max_group_size
        if mgs and size > mgs:
            raise invalid(f"{where}: size {size} exceeds max_group_size {mgs}")


__all__ = ["ActionProfileInfo", "ActionProfileState", "ActionSet", "Group", "GroupRef", "IndirectAction",
           "Member", "MemberRef", "WeightedAction"]
