"""BMv2's Thrift action-profile and indirect-table calls on p4switch's runtime state.

Why: ``act_prof_create_member``, ``act_prof_create_group``, ``act_prof_add_member_to_group``,
``table_indirect_add`` / ``table_indirect_add_with_group`` ... lines of a simple_switch_CLI
commands file program the same ``ActionProfileState`` P4Runtime's ActionProfileMember and
ActionProfileGroup write. A mixin of ``p4switch.thrift_tables.StandardTables``.

BMv2's model (behavioral-model ``action_profile.cpp``, ``match_tables.cpp``): members and
groups are numbered from 0 per profile, lowest free first (``p4switch.thrift_handles.IdBook``
keeps them beside the P4Runtime ids); a group is a set of members, kept in handle order, each
once (a selector picks ``members[hash % size]``, so p4switch writes the group with weight 1 per
member in that order); a group starts empty and BMv2 refuses an entry pointing to an empty one
(``EMPTY_GRP``); a member in a group or used by an entry or a default entry cannot be deleted
(``MBR_STILL_USED``), nor a group used by an entry or a default entry (``GRP_STILL_USED``);
deleting a group with members is allowed. An indirect table's default entry is unset
("EMPTY") until ``table_indirect_set_default`` names a member (or ``..._with_group`` a group).
"""

from __future__ import annotations

from typing import Any

from bm_runtime.standard import ttypes as T

from p4switch.state.errors import StateError
from p4switch.state.profiles import GroupRef, MemberRef
from p4switch.thrift_entries import kept, match_of
from p4switch.thrift_handles import IdBook


def _err(name: str) -> T.InvalidTableOperation:
    return T.InvalidTableOperation(code=getattr(T.TableOperationErrorCode, name))


class ProfileCalls:
    """Action-profile and indirect-table calls (mixin: needs ``_table``, ``_action``, ``_entry``,
    ``_match``, ``_priority``, ``_fresh``, ``_run``)."""

    _holder: Any
    _run: Any

    def __init__(self) -> None:
        self._reset_profiles()

    def _reset_profiles(self) -> None:
        self._members: dict[str, IdBook] = {}
        self._groups: dict[str, IdBook] = {}
        self._defaults: dict[str, Any] = {}  # indirect table -> MemberRef/GroupRef set as its default

    # ---- books --------------------------------------------------------------------------------
    def _profile(self, name: str) -> tuple[Any, IdBook, IdBook]:
        self._fresh()  # type: ignore[attr-defined]
        state = self._holder.state
        prof = state.action_profiles_by_name.get(name) if state is not None else None
        if prof is None:
            raise _err("INVALID_ACTION_PROFILE_NAME")
        members = self._members.setdefault(name, IdBook())
        groups = self._groups.setdefault(name, IdBook())
        members.sync(prof.members)
        groups.sync(prof.groups)
        return prof, members, groups

    def _member_handle(self, table: Any, member_id: int) -> int:
        _, members, _ = self._profile(table.profile.name)
        return members.handle_of.get(member_id, -1)

    def _group_handle(self, table: Any, group_id: int) -> int:
        _, _, groups = self._profile(table.profile.name)
        return groups.handle_of.get(group_id, -1)

    def _default_users(self, prof: Any, ref: Any) -> bool:
        return any(r == ref and self._holder.state.tables_by_name[t].profile is prof
                   for t, r in self._defaults.items())

    def _check_action(self, prof: Any, action_name: str, action_data: list) -> Any:
        a = self._action(action_name)  # type: ignore[attr-defined]
        if len(action_data) != len(a.params):
            raise _err("BAD_ACTION_DATA")
        return a

    def _mapped(self, fn: Any) -> Any:
        def run() -> Any:
            try:
                return fn()
            except StateError:
                raise _err("ERROR") from None
        return self._run(run)

    # ---- members ------------------------------------------------------------------------------
    def bm_mt_act_prof_add_member(self, cxt_id: int, act_prof_name: str, action_name: str,
                                  action_data: list) -> int:
        def add() -> int:
            prof, members, _ = self._profile(act_prof_name)
            a = self._check_action(prof, action_name, action_data)
            h, mid = members.new(prof.members)
            try:
                prof.insert_member(mid, a.id, tuple(int.from_bytes(b, "big") for b in action_data))
            except StateError:
                members.unbind_new(h)
                raise
            return h
        return self._mapped(add)

    def _member(self, act_prof_name: str, handle: int) -> tuple[Any, IdBook, int]:
        prof, members, _ = self._profile(act_prof_name)
        mid = members.id_of.get(handle)
        if mid is None:
            raise _err("INVALID_MBR_HANDLE")
        return prof, members, mid

    def bm_mt_act_prof_delete_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int) -> None:
        def delete() -> None:
            prof, members, mid = self._member(act_prof_name, mbr_handle)
            ref = MemberRef(mid)
            in_group = any(m == mid for g in prof.groups.values() for m, _ in g.members)
            if in_group or prof.references(ref) or self._default_users(prof, ref):
                raise _err("MBR_STILL_USED")
            prof.delete_member(mid)
            members.drop(mid)
        self._mapped(delete)

    def bm_mt_act_prof_modify_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int, action_name: str,
                                     action_data: list) -> None:
        def modify() -> None:
            prof, _, _ = self._profile(act_prof_name)
            a = self._check_action(prof, action_name, action_data)
            _, _, mid = self._member(act_prof_name, mbr_handle)
            prof.modify_member(mid, a.id, tuple(int.from_bytes(b, "big") for b in action_data))
        self._mapped(modify)

    def bm_mt_act_prof_get_members(self, cxt_id: int, act_prof_name: str) -> list:
        def get() -> list:
            prof, members, _ = self._profile(act_prof_name)
            return [self._member_entry(prof, h, members.id_of[h]) for h in sorted(members.id_of)]
        return self._mapped(get)

    def bm_mt_act_prof_get_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int) -> T.BmMtActProfMember:
        def get() -> T.BmMtActProfMember:
            prof, _, mid = self._member(act_prof_name, mbr_handle)
            return self._member_entry(prof, mbr_handle, mid)
        return self._mapped(get)

    def _member_entry(self, prof: Any, handle: int, mid: int) -> T.BmMtActProfMember:
        call = prof.members[mid].action
        e = self._action_entry(call)  # type: ignore[attr-defined]
        return T.BmMtActProfMember(mbr_handle=handle, action_name=e.action_name, action_data=e.action_data)

    # ---- groups -------------------------------------------------------------------------------
    def _group(self, act_prof_name: str, handle: int) -> tuple[Any, IdBook, IdBook, int]:
        prof, members, groups = self._profile(act_prof_name)
        gid = groups.id_of.get(handle)
        if gid is None:
            raise _err("INVALID_GRP_HANDLE")
        return prof, members, groups, gid

    def bm_mt_act_prof_create_group(self, cxt_id: int, act_prof_name: str) -> int:
        def create() -> int:
            prof, _, groups = self._profile(act_prof_name)
            if not prof.info.with_selector:
                raise _err("ERROR")
            h, gid = groups.new(prof.groups)
            try:
                prof.insert_group(gid, (), prof.info.max_group_size)
            except StateError:
                groups.unbind_new(h)
                raise
            return h
        return self._mapped(create)

    def bm_mt_act_prof_delete_group(self, cxt_id: int, act_prof_name: str, grp_handle: int) -> None:
        def delete() -> None:
            prof, _, groups, gid = self._group(act_prof_name, grp_handle)
            ref = GroupRef(gid)
            if prof.references(ref) or self._default_users(prof, ref):
                raise _err("GRP_STILL_USED")
            prof.delete_group(gid)
            groups.drop(gid)
        self._mapped(delete)

    def _regroup(self, act_prof_name: str, mbr_handle: int, grp_handle: int, add: bool) -> None:
        prof, members, _ = self._profile(act_prof_name)
        mid = members.id_of.get(mbr_handle)
        if mid is None:
            raise _err("INVALID_MBR_HANDLE")
        _, _, _, gid = self._group(act_prof_name, grp_handle)
        g = prof.groups[gid]
        current = {m for m, _ in g.members}
        if add and mid in current:
            raise _err("MBR_ALREADY_IN_GRP")
        if not add and mid not in current:
            raise _err("MBR_NOT_IN_GRP")
        new = current | {mid} if add else current - {mid}
        ordered = sorted(new, key=lambda m: members.handle_of.get(m, 1 << 32))
        prof.modify_group(gid, [(m, 1) for m in ordered], g.max_size)

    def bm_mt_act_prof_add_member_to_group(self, cxt_id: int, act_prof_name: str, mbr_handle: int,
                                           grp_handle: int) -> None:
        self._mapped(lambda: self._regroup(act_prof_name, mbr_handle, grp_handle, add=True))

    def bm_mt_act_prof_remove_member_from_group(self, cxt_id: int, act_prof_name: str, mbr_handle: int,
                                                grp_handle: int) -> None:
        self._mapped(lambda: self._regroup(act_prof_name, mbr_handle, grp_handle, add=False))

    def bm_mt_act_prof_get_groups(self, cxt_id: int, act_prof_name: str) -> list:
        def get() -> list:
            prof, members, groups = self._profile(act_prof_name)
            return [self._group_entry(prof, members, h, groups.id_of[h]) for h in sorted(groups.id_of)]
        return self._mapped(get)

    def bm_mt_act_prof_get_group(self, cxt_id: int, act_prof_name: str, grp_handle: int) -> T.BmMtActProfGroup:
        def get() -> T.BmMtActProfGroup:
            prof, members, _, gid = self._group(act_prof_name, grp_handle)
            return self._group_entry(prof, members, grp_handle, gid)
        return self._mapped(get)

    @staticmethod
    def _group_entry(prof: Any, members: IdBook, handle: int, gid: int) -> T.BmMtActProfGroup:
        hs = sorted(members.handle_of[m] for m, _ in prof.groups[gid].members if m in members.handle_of)
        return T.BmMtActProfGroup(grp_handle=handle, mbr_handles=hs)

    # ---- indirect tables ----------------------------------------------------------------------
    def _indirect(self, table_name: str, ws: bool) -> tuple[Any, Any, Any]:
        t, facts, book = self._table(table_name)  # type: ignore[attr-defined]
        if facts.type not in (("indirect_ws",) if ws else ("indirect", "indirect_ws")):
            raise _err("WRONG_TABLE_TYPE")
        return t, facts, book

    def _member_ref(self, t: Any, mbr_handle: int) -> MemberRef:
        _, members, _ = self._profile(t.profile.name)
        mid = members.id_of.get(mbr_handle)
        if mid is None:
            raise _err("INVALID_MBR_HANDLE")
        return MemberRef(mid)

    def _group_ref(self, t: Any, grp_handle: int) -> GroupRef:
        prof, _, groups = self._profile(t.profile.name)
        gid = groups.id_of.get(grp_handle)
        if gid is None:
            raise _err("INVALID_GRP_HANDLE")
        if not prof.groups[gid].members:
            raise _err("EMPTY_GRP")
        return GroupRef(gid)

    def _indirect_add(self, table_name: str, match_key: list, ref_of: Any, handle: int, options: Any,
                      ws: bool) -> int:
        def add() -> int:
            t, facts, book = self._indirect(table_name, ws)
            ref = ref_of(t, handle)
            if facts.immutable:
                raise _err("IMMUTABLE_TABLE_ENTRIES")
            entry = t.insert(self._match(t, match_key), ref, (), self._priority(t, options))  # type: ignore[attr-defined]
            return book.add(t, entry)
        return self._table_call(add)

    def _table_call(self, fn: Any) -> Any:
        def run() -> Any:
            try:
                return fn()
            except StateError as exc:
                raise _err({6: "DUPLICATE_ENTRY", 8: "TABLE_FULL"}.get(int(exc.code), "ERROR")) from None
        return self._run(run)

    def bm_mt_indirect_add_entry(self, cxt_id: int, table_name: str, match_key: list, mbr_handle: int,
                                 options: Any) -> int:
        return self._indirect_add(table_name, match_key, self._member_ref, mbr_handle, options, ws=False)

    def bm_mt_indirect_ws_add_entry(self, cxt_id: int, table_name: str, match_key: list, grp_handle: int,
                                    options: Any) -> int:
        return self._indirect_add(table_name, match_key, self._group_ref, grp_handle, options, ws=True)

    def _indirect_modify(self, table_name: str, entry_handle: int, ref_of: Any, handle: int, ws: bool) -> None:
        def modify() -> None:
            t, facts, book = self._indirect(table_name, ws)
            e = self._entry(book, entry_handle)  # type: ignore[attr-defined]
            ref = ref_of(t, handle)
            t.modify(match_of(t, e), e.priority, action_id=ref, **kept(e))
        self._table_call(modify)

    def bm_mt_indirect_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int, mbr_handle: int) -> None:
        self._indirect_modify(table_name, entry_handle, self._member_ref, mbr_handle, ws=False)

    def bm_mt_indirect_ws_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int,
                                       grp_handle: int) -> None:
        self._indirect_modify(table_name, entry_handle, self._group_ref, grp_handle, ws=True)

    def bm_mt_indirect_delete_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> None:
        def delete() -> None:
            t, facts, book = self._indirect(table_name, ws=False)
            e = self._entry(book, entry_handle)  # type: ignore[attr-defined]
            t.discard(e)
            book.removed(entry_handle)
        self._table_call(delete)

    def _set_indirect_default(self, table_name: str, ref_of: Any, handle: int, ws: bool) -> None:
        def set_default() -> None:
            t, facts, _ = self._indirect(table_name, ws)
            if facts.const_default_entry:
                raise _err("DEFAULT_ENTRY_IS_CONST")
            ref = ref_of(t, handle) if ws is False else self._any_group_ref(t, handle)
            t._replace_action(t.default_entry, ref)  # noqa: SLF001 - P4Runtime keeps this default const
            self._defaults[t.name] = ref
        self._table_call(set_default)

    def _any_group_ref(self, t: Any, grp_handle: int) -> GroupRef:
        """BMv2 sets an empty group as a default entry (only table entries refuse one)."""
        _, _, groups = self._profile(t.profile.name)
        gid = groups.id_of.get(grp_handle)
        if gid is None:
            raise _err("INVALID_GRP_HANDLE")
        return GroupRef(gid)

    def bm_mt_indirect_set_default_member(self, cxt_id: int, table_name: str, mbr_handle: int) -> None:
        self._set_indirect_default(table_name, self._member_ref, mbr_handle, ws=False)

    def bm_mt_indirect_ws_set_default_group(self, cxt_id: int, table_name: str, grp_handle: int) -> None:
        self._set_indirect_default(table_name, None, grp_handle, ws=True)

    def _indirect_reset_default(self, t: Any) -> None:
        t._replace_action(t.default_entry, t.info.initial_default)  # noqa: SLF001
        self._defaults.pop(t.name, None)

    def bm_mt_indirect_reset_default_entry(self, cxt_id: int, table_name: str) -> None:
        def reset() -> None:
            t, _, _ = self._indirect(table_name, ws=False)
            self._indirect_reset_default(t)
        self._table_call(reset)
