"""Compare a P4Info p4switch built with p4c's expected one, as named difference classes.

Objects are matched by kind and ``preamble.name``; order never matters (repeated fields
are compared as sorted multisets). A difference is reported as a class such as
``tables.missing``, ``actions.extra``, ``tables.preamble.id``, ``tables.action_refs`` or
``tables.action_refs(NoAction)`` (the only difference in the refs is p4c's implicit
``NoAction``), with the object's name as detail. ``type_info`` and ``pkg_info`` are
compared whole. The one deliberate difference (docs/reference/p4switch.md): p4switch names the
package after the program's file (``pkg_info.name``) where p4c leaves it empty, so a
``pkg_info.name`` missing from p4c's output is not compared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import text_format
from google.protobuf.message import Message
from p4.config.v1 import p4info_pb2

NOACTION = "NoAction"
_OBJECT_KINDS = (
    "tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
    "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests", "externs",
)


def read_expected(path: Path) -> p4info_pb2.P4Info:
    """p4c's ``.p4info.txtpb`` (comment lines are allowed by the text format)."""
    msg = p4info_pb2.P4Info()
    text_format.Parse(path.read_text(), msg)
    return msg


def _key(msg: Any) -> str:
    return text_format.MessageToString(msg, as_one_line=True) if isinstance(msg, Message) else repr(msg)


def _field_values(msg: Message) -> dict[str, Any]:
    """Every set field of ``msg`` by name; repeated ones as sorted lists of their text."""
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            out[fd.name] = sorted(f"{k}={_key(value[k])}" for k in value)
        elif fd.is_repeated:
            out[fd.name] = sorted(_key(v) for v in value)
        else:
            out[fd.name] = _key(value)
    return out


def _name(obj: Any) -> str:
    if obj.HasField("preamble"):
        return obj.preamble.name
    return getattr(obj, "extern_type_name", "?")


def diff_p4info(ours: p4info_pb2.P4Info, p4c: p4info_pb2.P4Info) -> list[list[str]]:
    """The differences as ``[class, detail]`` pairs; empty when the two are identical."""
    diffs: list[list[str]] = []
    noaction_ids = {a.preamble.id for a in p4c.actions if a.preamble.name == NOACTION}
    for kind in _OBJECT_KINDS:
        mine = {_name(o): o for o in getattr(ours, kind)}
        theirs = {_name(o): o for o in getattr(p4c, kind)}
        for name in sorted(theirs.keys() - mine.keys()):
            diffs.append([f"{kind}.missing", name])
        for name in sorted(mine.keys() - theirs.keys()):
            diffs.append([f"{kind}.extra", name])
        for name in sorted(mine.keys() & theirs.keys()):
            diffs += _diff_object(kind, name, mine[name], theirs[name], noaction_ids)
    ours_pkg, p4c_pkg = p4info_pb2.PkgInfo(), p4info_pb2.PkgInfo()
    ours_pkg.CopyFrom(ours.pkg_info)
    p4c_pkg.CopyFrom(p4c.pkg_info)
    if not p4c_pkg.name:
        ours_pkg.ClearField("name")
    if _key(ours_pkg) != _key(p4c_pkg):
        diffs.append(["pkg_info", ""])
    diffs += _diff_type_info(ours.type_info, p4c.type_info)
    return diffs


def _diff_object(kind: str, name: str, mine: Message, theirs: Message, noaction_ids: set[int]) -> list[list[str]]:
    out = []
    a, b = _field_values(mine), _field_values(theirs)
    if "preamble" in a and "preamble" in b:
        pa, pb = _field_values(mine.preamble), _field_values(theirs.preamble)  # type: ignore[attr-defined]
        for f in sorted(pa.keys() | pb.keys()):
            if pa.get(f) != pb.get(f):
                out.append([f"{kind}.preamble.{f}", name])
    for f in sorted((a.keys() | b.keys()) - {"preamble"}):
        if a.get(f) == b.get(f):
            continue
        cls = f"{kind}.{f}"
        if kind == "tables" and _noaction_only(f, mine, theirs, noaction_ids):
            cls += "(NoAction)"
        out.append([cls, name])
    return out


def _noaction_only(f: str, mine: Any, theirs: Any, noaction_ids: set[int]) -> bool:
    """Whether table field ``f`` differs only by p4c's implicit ``NoAction``."""
    if f == "action_refs":
        return _only_noaction(mine, theirs, noaction_ids)
    if f in ("initial_default_action", "const_default_action_id"):
        return _default_is_noaction(theirs, noaction_ids)
    return False


def _only_noaction(mine: Any, theirs: Any, noaction_ids: set[int]) -> bool:
    ma = sorted(_key(r) for r in mine.action_refs if r.id not in noaction_ids)
    ta = sorted(_key(r) for r in theirs.action_refs if r.id not in noaction_ids)
    return ma == ta


def _default_is_noaction(theirs: Any, noaction_ids: set[int]) -> bool:
    return theirs.initial_default_action.action_id in noaction_ids


def _diff_type_info(mine: Message, theirs: Message) -> list[list[str]]:
    out = []
    a, b = _field_values(mine), _field_values(theirs)
    for f in sorted(a.keys() | b.keys()):
        if a.get(f) != b.get(f):
            out.append([f"type_info.{f}", ""])
    return out
