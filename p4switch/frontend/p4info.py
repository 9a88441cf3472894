"""P4Info of a checked v1model program, with ids as p4c assigns them.

P4Info is the contract between the program and every P4Runtime client, so it follows
what p4c's P4Runtime serializer emits for v1model (facts from the P4Runtime
specification and from P4Info files p4c produced), not a design of our own:

* **Names.** ``preamble.name`` is the fully qualified control-plane name
  (``MyIngress.ipv4_lpm``; see :mod:`p4switch.frontend.check.names`); ``alias`` is its
  shortest suffix of dot-separated components that no other P4Info object shares.
* **Ids.** The top byte is the resource type (``P4Ids.Prefix``: ACTION 0x01, TABLE 0x02,
  VALUE_SET 0x03, CONTROLLER_HEADER 0x04, ACTION_PROFILE 0x11, COUNTER 0x12,
  DIRECT_COUNTER 0x13, METER 0x14, DIRECT_METER 0x15, REGISTER 0x16, DIGEST 0x17); the
  low 24 bits are Bob Jenkins' one-at-a-time hash of the name, linearly probed on a
  collision. ``@id(N)`` overrides (N with or without the prefix byte). A controller
  header's id hashes its header *type* name while its P4Info name is the
  ``@controller_header`` string, as p4c does. Ids are thus stable across runs and
  across unrelated edits of the program.
* **Contents.** Tables (match fields in key order, ``selector`` keys left out as p4c
  does -- they feed the selector's hash, the control plane never matches on them),
  every action a table lists or the program calls, extern instances (counters, meters,
  registers, action profiles/selectors, their direct variants), digests named after
  their data type, parser value sets, ``@controller_header`` headers, and ``type_info``
  for every named type a field refers to. ``@name``/``@id`` are consumed, ``@brief``/
  ``@description`` become ``doc``, other annotations are kept as text.

The input is the checker's ``CheckedProgram``: its summary gives the objects and their
fully qualified names (so P4Info and the pipeline agree on every name -- an inline
``counters = direct_counter(...)`` is ``<table>.counters`` there and here), its
annotated AST the types. Problems a P4Runtime client could not live with (duplicate ids,
two ``packet_in`` headers, a direct resource on two tables, a digest of an unnamed type)
are :class:`P4Error` at the construct.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from google.protobuf.message import DecodeError
from p4.config.v1 import p4info_pb2, p4types_pb2

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.names import local_name
from p4switch.frontend.errors import UNKNOWN_LOC, P4Error, SourceLoc

ARCH = "v1model"
#: table size when the program gives none (p4c's default)
DEFAULT_TABLE_SIZE = 1024

PREFIX_ACTION = p4info_pb2.P4Ids.ACTION
PREFIX_TABLE = p4info_pb2.P4Ids.TABLE
PREFIX_VALUE_SET = p4info_pb2.P4Ids.VALUE_SET
PREFIX_CONTROLLER_HEADER = p4info_pb2.P4Ids.CONTROLLER_HEADER
PREFIX_ACTION_PROFILE = p4info_pb2.P4Ids.ACTION_PROFILE
PREFIX_COUNTER = p4info_pb2.P4Ids.COUNTER
PREFIX_DIRECT_COUNTER = p4info_pb2.P4Ids.DIRECT_COUNTER
PREFIX_METER = p4info_pb2.P4Ids.METER
PREFIX_DIRECT_METER = p4info_pb2.P4Ids.DIRECT_METER
PREFIX_REGISTER = p4info_pb2.P4Ids.REGISTER
PREFIX_DIGEST = p4info_pb2.P4Ids.DIGEST

_KIND_OF_PREFIX = {
    PREFIX_ACTION: "action", PREFIX_TABLE: "table", PREFIX_VALUE_SET: "value set",
    PREFIX_CONTROLLER_HEADER: "controller header", PREFIX_ACTION_PROFILE: "action profile",
    PREFIX_COUNTER: "counter", PREFIX_DIRECT_COUNTER: "direct counter", PREFIX_METER: "meter",
    PREFIX_DIRECT_METER: "direct meter", PREFIX_REGISTER: "register", PREFIX_DIGEST: "digest",
}

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}

#: v1model extern types that P4Info describes, with their constructor parameter names
_EXTERN_CTORS = {
    "counter": ("size", "type"),
    "direct_counter": ("type",),
    "meter": ("size", "type"),
    "direct_meter": ("type",),
    "register": ("size",),
    "action_profile": ("size",),
    "action_selector": ("algorithm", "size", "outputWidth"),
}
#: annotations P4Info does not repeat as text: consumed (@name, @id) or moved to ``doc``
_CONSUMED_ANNOTATIONS = frozenset({"name", "id", "brief", "description"})
_SELECTOR_SIZE_ANNOTATIONS = frozenset({"max_group_size", "selector_size_semantics", "max_member_weight"})


# =========================================================================== ids


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bits), the hash p4c derives P4Info ids from."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def hashed_id(prefix: int, name: str) -> int:
    """The id p4c gives ``name`` of resource type ``prefix`` when nothing collides."""
    return (prefix << 24) | (jenkins_one_at_a_time(name.encode()) & 0xFFFFFF)


@dataclass(eq=False)
class Symbol:
    """One P4Info object that needs an id: its resource prefix, its P4Info name, the name
    its id is hashed from, and an ``@id`` if the program gave one."""

    prefix: int
    name: str
    loc: SourceLoc
    explicit_id: int | None = None
    hash_name: str = ""
    id: int = 0

    @property
    def kind(self) -> str:
        return _KIND_OF_PREFIX.get(self.prefix, "object")


def assign_ids(symbols: Iterable[Symbol]) -> None:
    """Give every symbol its id: ``@id`` ones first (checked for clashes), then the hashed
    ones in name order, each probing linearly past ids already taken."""
    syms = list(symbols)
    taken: dict[int, Symbol] = {}
    for s in syms:
        if s.explicit_id is None:
            continue
        other = taken.get(s.explicit_id)
        if other is not None:
            raise P4Error(s.loc, f"@id 0x{s.explicit_id:08x} of {s.kind} '{s.name}' is already "
                                 f"the id of {other.kind} '{other.name}'")
        s.id = s.explicit_id
        taken[s.id] = s
    pending = [s for s in syms if s.explicit_id is None]
    for s in sorted(pending, key=lambda s: (s.prefix, s.hash_name or s.name)):
        low = jenkins_one_at_a_time((s.hash_name or s.name).encode()) & 0xFFFFFF
        for _ in range(1 << 24):
            candidate = (s.prefix << 24) | low
            if candidate not in taken:
                break
            low = (low + 1) & 0xFFFFFF
        else:  # pragma: no cover - 16M objects of one kind
            raise P4Error(s.loc, f"no free P4Info id left for {s.kind} '{s.name}'")
        s.id = candidate
        taken[candidate] = s


def explicit_id(annotations: list[ast.Annotation], prefix: int | None, what: str) -> int | None:
    """The value of ``@id(N)`` in ``annotations``; for a top-level object (``prefix`` given)
    N may omit the resource-type byte, which is then added."""
    ann = ast.find_annotation(annotations, "id")
    if ann is None:
        return None
    value = _annotation_int(ann)
    if value is None or value <= 0 or value > 0xFFFFFFFF:
        raise P4Error(ann.loc, f"@id of {what} must be a positive 32-bit integer, not '{ann.body}'")
    if prefix is None:
        return value
    top = value >> 24
    if top == 0:
        return (prefix << 24) | value
    if top != prefix:
        raise P4Error(ann.loc, f"@id 0x{value:08x} of {what} has resource-type byte 0x{top:02x}; "
                               f"a {_KIND_OF_PREFIX[prefix]} id needs 0x{prefix:02x}")
    return value


def _annotation_int(ann: ast.Annotation) -> int | None:
    if ann.args and len(ann.args) == 1:
        arg = ann.args[0]
        if isinstance(arg.const_value, int) and not isinstance(arg.const_value, bool):
            return arg.const_value
        if isinstance(arg, ast.IntLiteral):
            return arg.value
    if len(ann.tokens) == 1:
        try:
            return int(ann.tokens[0].replace("_", ""), 0)
        except ValueError:
            return None
    return None


def field_ids(explicit: list[int | None], what: str, locs: list[SourceLoc]) -> list[int]:
    """Ids of the fields of one object (match fields, params, metadata): ``@id`` values as
    given, the others the smallest unused ids from 1 in order."""
    used: dict[int, int] = {}
    for i, value in enumerate(explicit):
        if value is None:
            continue
        if value in used:
            raise P4Error(locs[i], f"@id({value}) used twice in {what}")
        used[value] = i
    out: list[int] = []
    nxt = 1
    for value in explicit:
        if value is None:
            while nxt in used:
                nxt += 1
            used[nxt] = len(out)
            value = nxt
        out.append(value)
    return out


def aliases(names: Iterable[str]) -> dict[str, str]:
    """Each name's shortest suffix of dot-separated components that no other name in
    ``names`` ends with (the whole name when every shorter suffix is shared)."""
    distinct = sorted(set(names))
    count: dict[tuple[str, ...], int] = {}
    parts = {n: tuple(n.split(".")) for n in distinct}
    for p in parts.values():
        for k in range(1, len(p) + 1):
            count[p[-k:]] = count.get(p[-k:], 0) + 1
    out = {}
    for n, p in parts.items():
        k = next((k for k in range(1, len(p) + 1) if count[p[-k:]] == 1), len(p))
        out[n] = ".".join(p[-k:])
    return out


# =========================================================================== values


def canonical_bytes(value: int, width: int) -> bytes:
    """P4Runtime's canonical binary string of ``value`` (two's complement in ``width``
    bits): big-endian, no leading zero bytes, at least one byte."""
    v = value & ((1 << width) - 1) if width > 0 else value
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


# =========================================================================== text


_NO_SPACE_BEFORE = frozenset({",", ")", "]", ">", "<", "."})
_NO_SPACE_AFTER = frozenset({"(", "[", "<", "."})


def annotation_text(ann: ast.Annotation) -> str:
    """``@name`` or ``@name(body)`` with the body's tokens spaced as P4 is usually written."""
    if not ann.tokens:
        return f"@{ann.name}"
    body = ""
    for tok in ann.tokens:
        if body and tok not in _NO_SPACE_BEFORE and body[-1] not in _NO_SPACE_AFTER:
            body += " "
        body += tok
    return f"@{ann.name}({body})"


# =========================================================================== model


@dataclass(eq=False)
class _Action:
    sym: Symbol
    info: Any  # check.ActionInfo
    #: a table lists it; an action only called directly has no control-plane parameters, as
    #: p4c's RemoveActionParameters binds them at the call before P4Info is written
    in_table: bool = False

    @property
    def decl(self) -> ast.ActionDecl:
        return self.info.decl


@dataclass(eq=False)
class _Extern:
    """An extern instance: counter, meter, register, action profile/selector, direct_*."""

    sym: Symbol
    info: Any  # check.InstanceInfo
    annotations: list[ast.Annotation]
    tables: list[_Table] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.info.extern

    def arg(self, name: str) -> Any:
        """The constant constructor argument ``name`` (an enum member by its name)."""
        names = _EXTERN_CTORS[self.kind]
        args = self.info.args
        value = args[names.index(name)] if names.index(name) < len(args) else None
        if value is None:
            raise P4Error(self.sym.loc, f"{self.kind} '{self.sym.name}': constructor argument "
                                        f"'{name}' must be a compile-time constant")
        return getattr(value, "member", value)  # SymbolicValue -> member name


@dataclass(eq=False)
class _Table:
    sym: Symbol
    info: Any  # check.TableInfo
    actions: list[tuple[Any, _Action]] = field(default_factory=list)  # (TableActionInfo, action)
    default: _Action | None = None
    implementation: _Extern | None = None
    direct: list[_Extern] = field(default_factory=list)

    @property
    def decl(self) -> ast.TableDecl:
        return self.info.decl


@dataclass(eq=False)
class _Named:
    """A digest, value set or controller header: a symbol and what describes it."""

    sym: Symbol
    info: Any


# =========================================================================== collection


class _Collector:
    """Picks the P4Info objects out of the checker's summary (pass 1).

    Names come from the ``CheckedProgram`` so that P4Info and the pipeline agree on them.
    Actions are the ones P4Info has room for: listed by a table or called by the program
    (p4c drops the others as unused); direct resources no table uses are left out too.
    """

    def __init__(self, checked: Any) -> None:
        self.checked = checked
        self.program: ast.Program = checked.program
        self.tables: list[_Table] = []
        self.actions: dict[str, _Action] = {}
        self.externs: dict[str, _Extern] = {}  # by the instance's name (one decl may have several)
        self.digests: list[_Named] = []
        self.value_sets: list[_Named] = []
        self.headers: list[_Named] = []

    def symbols(self) -> Iterator[Symbol]:
        yield from (t.sym for t in self.tables)
        yield from (a.sym for a in self.actions.values())
        yield from (e.sym for e in self.externs.values())
        for group in (self.digests, self.value_sets, self.headers):
            yield from (n.sym for n in group)

    @staticmethod
    def _symbol(prefix: int, name: str, node: ast.Node, annotations: list[ast.Annotation],
                hash_name: str = "") -> Symbol:
        what = f"{_KIND_OF_PREFIX[prefix]} '{name}'"
        return Symbol(prefix, name, node.loc, explicit_id(annotations, prefix, what), hash_name)

    def collect(self) -> ast.InstantiationDecl:
        """Gather everything; returns the ``main`` instantiation."""
        c = self.checked
        if c.main is None:
            raise P4Error(self.program.loc, "the program has no package instantiation named 'main' "
                                            "(e.g. 'V1Switch(...) main;'), so it has no pipeline")
        for inst in c.instances:
            # p4c keeps extern instances nothing refers to (RemoveUnusedDeclarations: "they may be
            # useful even if not referenced"); inline ones are declared by the table naming them.
            if inst.extern in _EXTERN_CTORS and inst.extern not in ("direct_counter", "direct_meter") \
                    and isinstance(inst.decl, ast.InstantiationDecl):
                self._extern(inst, _annotations(inst.decl))
        for t in c.tables:
            if not _hidden(t.decl):
                self._table(t)
        self._called_actions()
        for d in c.digests:
            self._digest(d)
        for v in c.value_sets:
            if not _hidden(v.decl):
                self.value_sets.append(_Named(self._symbol(PREFIX_VALUE_SET, v.fqn, v.decl, v.decl.annotations), v))
        for decl in self.program.declarations:
            if isinstance(decl, ast.HeaderDecl):
                self._controller_header(decl)
        return c.main

    # ------------------------------------------------------------------ actions

    def _action(self, info: Any) -> _Action | None:
        if _hidden(info.decl):
            return None
        action = self.actions.get(info.fqn)
        if action is None:
            sym = self._symbol(PREFIX_ACTION, info.fqn, info.decl, info.decl.annotations)
            action = self.actions[info.fqn] = _Action(sym, info)
        return action

    def _called_actions(self) -> None:
        """Actions called directly from a control's apply block.

        p4c's front end inlines actions called from other actions (``InlineActions``) and then
        removes declarations nothing refers to, so an action that is only ever called by another
        action is not in p4c's P4Info, while one called from an apply block stays (there is no
        table to hide it in). Calls inside action bodies are therefore not followed."""
        by_decl = {(id(a.decl), a.block): a for a in self.checked.actions}
        for b in self.checked.blocks:
            if not isinstance(b.decl, ast.ControlDecl):
                continue
            for n in ast.walk_live(b.decl.body):
                if isinstance(n, ast.CallExpr) and isinstance(n.method, ast.PathExpr) \
                        and isinstance(n.method.decl, ast.ActionDecl):
                    info = by_decl.get((id(n.method.decl), b.fqn)) or by_decl.get((id(n.method.decl), None))
                    if info is not None:
                        self._action(info)

    # ------------------------------------------------------------------ tables

    def _table(self, info: Any) -> None:
        table = _Table(self._symbol(PREFIX_TABLE, info.fqn, info.decl, info.decl.annotations), info)
        self.tables.append(table)
        for ref in info.actions:
            action = self._action(ref.action)
            if action is not None:
                action.in_table = True
                table.actions.append((ref, action))
        if info.default_action is not None:
            table.default = self._action(info.default_action.action)
        for prop, inst in (("implementation", info.implementation), ("counters", info.direct_counter),
                           ("meters", info.direct_meter)):
            if inst is not None:
                self._attach(table, prop, inst)

    def _attach(self, table: _Table, prop: str, inst: Any) -> None:
        """Hang an instance the table names in ``prop`` on it (an inline constructor call
        takes the property's annotations, e.g. its ``@id``)."""
        node = table.decl.prop(prop)
        loc = node.loc if node is not None else table.sym.loc
        wanted = {"implementation": ("action_profile", "action_selector"),
                  "counters": ("direct_counter",), "meters": ("direct_meter",)}[prop]
        if inst.extern not in wanted:
            raise P4Error(loc, f"table '{table.sym.name}': {prop} needs a {' or '.join(wanted)}, "
                               f"not a {inst.extern}")
        inline = isinstance(inst.decl, ast.ConstructorCallExpr)
        annotations = (node.annotations if node is not None else []) if inline else _annotations(inst.decl)
        ext = self.externs.get(inst.fqn) or self._extern(inst, annotations)
        if ext.kind.startswith("direct_") and ext.tables:
            raise P4Error(loc, f"{ext.kind} '{ext.sym.name}' is already attached to table "
                               f"'{ext.tables[0].sym.name}'; a direct resource serves one table")
        ext.tables.append(table)
        if ext.kind.startswith("direct_"):
            table.direct.append(ext)
        else:
            table.implementation = ext

    def _extern(self, inst: Any, annotations: list[ast.Annotation]) -> _Extern:
        prefix = {
            "counter": PREFIX_COUNTER, "direct_counter": PREFIX_DIRECT_COUNTER,
            "meter": PREFIX_METER, "direct_meter": PREFIX_DIRECT_METER,
            "register": PREFIX_REGISTER, "action_profile": PREFIX_ACTION_PROFILE,
            "action_selector": PREFIX_ACTION_PROFILE,
        }[inst.extern]
        ext = _Extern(self._symbol(prefix, inst.fqn, inst.decl, annotations), inst, annotations)
        self.externs[inst.fqn] = ext
        return ext

    # ------------------------------------------------------------------ the rest

    def _digest(self, d: Any) -> None:
        t = d.type
        loc = d.calls[0].loc if d.calls else self.program.loc
        if not isinstance(t, T.StructType | T.HeaderType) or not t.name:
            raise P4Error(loc, f"digest data of type {t}: P4Info names a digest after its type, "
                               "so the data must be a named struct or header "
                               "(write digest<MyStruct_t>(receiver, {...}))")
        anns = _decl_annotations(t)
        node = t.decl if isinstance(t.decl, ast.Declaration) else d.calls[0]
        self.digests.append(_Named(self._symbol(PREFIX_DIGEST, d.name, node, anns), d))

    def _controller_header(self, decl: ast.HeaderDecl) -> None:
        ann = ast.find_annotation(decl.annotations, "controller_header")
        if ann is None:
            return
        name = ann.string_arg()
        if not name:
            raise P4Error(ann.loc, f"@controller_header on header '{decl.name}' needs a string "
                                   'argument: @controller_header("packet_in") or ("packet_out")')
        for other in self.headers:
            if other.sym.name == name:
                raise P4Error(ann.loc, f"headers '{other.info.name}' and '{decl.name}' are both "
                                       f'@controller_header("{name}"); P4Runtime allows one')
        sym = self._symbol(PREFIX_CONTROLLER_HEADER, name, decl, decl.annotations, local_name(decl))
        self.headers.append(_Named(sym, decl))


def _hidden(decl: ast.Declaration) -> bool:
    return ast.find_annotation(decl.annotations, "hidden") is not None


def _annotations(node: ast.Node) -> list[ast.Annotation]:
    return list(node.annotations) if isinstance(node, ast.Declaration) else []


# =========================================================================== emission


class _Emitter:
    """Turns the collected objects into the P4Info message (pass 3, after ids)."""

    def __init__(self, program: ast.Program, col: _Collector) -> None:
        self.program = program
        self.col = col
        self.info = p4info_pb2.P4Info()
        self.alias = aliases(s.name for s in col.symbols())

    # ------------------------------------------------------------------ shared pieces

    def preamble(self, msg: p4info_pb2.Preamble, sym: Symbol, annotations: list[ast.Annotation]) -> None:
        msg.id = sym.id
        msg.name = sym.name
        msg.alias = self.alias[sym.name]
        _annotate(msg, annotations)
        for key, attr in (("brief", "brief"), ("description", "description")):
            ann = ast.find_annotation(annotations, key)
            if ann is not None and ann.string_arg() is not None:
                setattr(msg.doc, attr, ann.string_arg())

    def typed_width(self, t: T.Type | None, msg: Any, loc: SourceLoc, what: str) -> None:
        """Set ``bitwidth`` and, for named types, ``type_name`` of a match field, action
        parameter or packet metadata (P4Runtime's rules for constrained values)."""
        if t is None:
            raise P4Error(loc, f"{what}: no type (was the program checked?)")
        if isinstance(t, T.NewType):
            msg.type_name.name = t.name
            self.new_type(t)
            msg.bitwidth = _translated_width(t)
        elif isinstance(t, T.EnumType):
            # p4c lists a serializable enum in type_info but gives the field no type_name
            self.enum_type(t)
            msg.bitwidth = t.underlying.width if t.underlying is not None else 0
        elif isinstance(t, T.BitType | T.IntType):
            msg.bitwidth = t.width
        elif isinstance(t, T.BoolType):
            msg.bitwidth = 1
        elif isinstance(t, T.ErrorType):
            self.error_type()
        else:
            raise P4Error(loc, f"{what} has type {t}; P4Runtime carries only bit<W>, int<W>, bool, "
                               "enums and 'type' types")

    # ------------------------------------------------------------------ type_info

    def type_spec(self, t: T.Type, spec: p4types_pb2.P4DataTypeSpec, loc: SourceLoc = UNKNOWN_LOC) -> None:
        """Describe ``t`` in ``spec``, registering named types in ``type_info``."""
        if isinstance(t, T.BitType | T.IntType | T.VarbitType):
            _bitstring(t, spec.bitstring)
        elif isinstance(t, T.BoolType):
            spec.bool.SetInParent()
        elif isinstance(t, T.HeaderType):
            spec.header.name = str(t)
            self.header_type(t)
        elif isinstance(t, T.HeaderUnionType):
            spec.header_union.name = str(t)
            self.union_type(t)
        elif isinstance(t, T.StructType):
            spec.struct.name = str(t)
            self.struct_type(t)
        elif isinstance(t, T.HeaderStackType):
            self._stack_spec(t, spec)
        elif isinstance(t, T.TupleType):
            spec.tuple.SetInParent()
            for e in t.elements:
                self.type_spec(e, spec.tuple.members.add())
        elif isinstance(t, T.EnumType):
            (spec.serializable_enum if t.underlying is not None else spec.enum).name = t.name
            self.enum_type(t)
        elif isinstance(t, T.ErrorType):
            spec.error.SetInParent()
            self.error_type()
        elif isinstance(t, T.NewType):
            spec.new_type.name = t.name
            self.new_type(t)
        else:
            raise P4Error(loc, f"type {t} cannot be described in P4Info")

    def _stack_spec(self, t: T.HeaderStackType, spec: p4types_pb2.P4DataTypeSpec) -> None:
        if isinstance(t.element, T.HeaderUnionType):
            spec.header_union_stack.header_union.name = str(t.element)
            spec.header_union_stack.size = t.size
            self.union_type(t.element)
        else:
            assert isinstance(t.element, T.HeaderType)
            spec.header_stack.header.name = str(t.element)
            spec.header_stack.size = t.size
            self.header_type(t.element)

    def struct_type(self, t: T.StructType) -> None:
        name = str(t)
        structs = self.info.type_info.structs
        if name in structs:
            return
        msg = structs[name]
        _annotate(msg, _decl_annotations(t))
        for fname, ftype in t.fields:
            m = msg.members.add()
            m.name = fname
            self.type_spec(ftype, m.type_spec)

    def header_type(self, t: T.HeaderType) -> None:
        name = str(t)
        headers = self.info.type_info.headers
        if name in headers:
            return
        msg = headers[name]
        _annotate(msg, _decl_annotations(t))
        for fname, ftype in t.fields:
            m = msg.members.add()
            m.name = fname
            _bitstring(T.underlying(ftype), m.type_spec)

    def union_type(self, t: T.HeaderUnionType) -> None:
        name = str(t)
        unions = self.info.type_info.header_unions
        if name in unions:
            return
        msg = unions[name]
        _annotate(msg, _decl_annotations(t))
        for fname, ftype in t.fields:
            m = msg.members.add()
            m.name = fname
            m.header.name = str(ftype)
            if isinstance(ftype, T.HeaderType):
                self.header_type(ftype)

    def enum_type(self, t: T.EnumType) -> None:
        ti = self.info.type_info
        if t.underlying is None:
            if t.name not in ti.enums:
                msg = ti.enums[t.name]
                _annotate(msg, _decl_annotations(t))
                for m in t.members:
                    msg.members.add().name = m
            return
        if t.name in ti.serializable_enums:
            return
        msg = ti.serializable_enums[t.name]
        _annotate(msg, _decl_annotations(t))
        width = t.underlying.width
        msg.underlying_type.bitwidth = width
        for m, value in t.values:
            member = msg.members.add()
            member.name = m
            member.value = (value & ((1 << width) - 1)).to_bytes((width + 7) // 8, "big")

    def error_type(self) -> None:
        ti = self.info.type_info
        if ti.HasField("error"):
            return
        ti.error.SetInParent()
        for d in self.program.declarations:
            if isinstance(d, ast.ErrorDecl):
                for m in d.members:
                    if m.name not in ti.error.members:
                        ti.error.members.append(m.name)

    def new_type(self, t: T.NewType) -> None:
        new_types = self.info.type_info.new_types
        if t.name in new_types:
            return
        msg = new_types[t.name]
        anns = _decl_annotations(t)
        _annotate(msg, [a for a in anns if a.name != "p4runtime_translation"])
        translation = _translation(t)
        if translation is None:
            base = t.base
            while isinstance(base, T.NewType):
                base = base.base
            self.type_spec(base, msg.original_type)
            return
        uri, sdn = translation
        msg.translated_type.uri = uri
        if sdn is None:
            msg.translated_type.sdn_string.SetInParent()
        else:
            msg.translated_type.sdn_bitwidth = sdn

    # ------------------------------------------------------------------ objects

    def emit(self, pkg_name: str | None) -> p4info_pb2.P4Info:
        self.pkg_info(pkg_name)
        for t in self.col.tables:
            self.table(t)
        for a in self.col.actions.values():
            self.action(a)
        for e in self.col.externs.values():
            self.extern(e)
        for h in self.col.headers:
            self.controller_header(h)
        for v in self.col.value_sets:
            self.value_set(v)
        for d in self.col.digests:
            msg = self.info.digests.add()
            self.preamble(msg.preamble, d.sym, _decl_annotations(d.info.type))
            self.type_spec(d.info.type, msg.type_spec, d.sym.loc)
        return self.info

    def pkg_info(self, name: str | None) -> None:
        pkg = self.info.pkg_info
        pkg.arch = ARCH
        if name:
            pkg.name = name
        ann = ast.find_annotation(self.col.checked.main.annotations, "pkginfo")
        for key, value in _key_values(ann).items() if ann is not None else ():
            if key not in ("name", "version", "arch", "organization", "contact", "url"):
                raise P4Error(ann.loc, f"@pkginfo: unknown key '{key}'")
            setattr(pkg, key, value)
        ann = ast.find_annotation(self.col.checked.main.annotations, "platform_property")
        props = pkg.platform_properties
        for key, value in _key_ints(ann).items() if ann is not None else ():
            if key not in props.DESCRIPTOR.fields_by_name:
                raise P4Error(ann.loc, f"@platform_property: unknown key '{key}'")
            if not 0 <= value < 2**31:
                raise P4Error(ann.loc, f"@platform_property: {key} = {value} is out of range")
            setattr(props, key, value)

    def table(self, t: _Table) -> None:
        msg = self.info.tables.add()
        info = t.info
        self.preamble(msg.preamble, t.sym, t.decl.annotations)
        self.match_fields(t, msg)
        for ref, action in t.actions:
            r = msg.action_refs.add()
            r.id = action.sym.id
            if ref.default_only:
                r.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
            elif ref.table_only:
                r.scope = p4info_pb2.ActionRef.TABLE_ONLY
            _annotate(r, ref.ref.annotations)
        if t.default is not None:
            if info.default_action.is_const:
                msg.const_default_action_id = t.default.sym.id
            self.initial_default(msg, t, info.default_action.args)
        if t.implementation is not None:
            msg.implementation_id = t.implementation.sym.id
        msg.direct_resource_ids.extend(e.sym.id for e in t.direct)
        msg.size = info.size if info.size is not None else DEFAULT_TABLE_SIZE
        if info.facts.support_timeout:
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        entries = t.decl.entries
        if entries is not None:
            msg.is_const_table = info.entries_const
            msg.has_initial_entries = bool(info.entries)  # p4c: false for an empty list

    def match_fields(self, t: _Table, msg: p4info_pb2.Table) -> None:
        keys = [k for k in t.info.keys if k.match_kind != "selector"]
        ids = field_ids([explicit_id(k.element.annotations, None, "a key element") for k in keys],
                        f"the key of table '{t.sym.name}'", [k.element.loc for k in keys])
        for fid, k in zip(ids, keys):
            mf = msg.match_fields.add()
            mf.id = fid
            mf.name = k.name
            self.typed_width(k.type, mf, k.element.loc, f"key '{k.name}' of table '{t.sym.name}'")
            if k.match_kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
            _annotate(mf, k.element.annotations)

    def initial_default(self, msg: p4info_pb2.Table, t: _Table, args: list[Any]) -> None:
        """The default action the table starts with (what the program wrote, const or
        not), arguments as canonical byte strings."""
        action = t.default
        assert action is not None
        call = msg.initial_default_action
        call.action_id = action.sym.id
        ids = self.param_ids(action)
        params = [p for p in action.decl.params if p.direction is None]
        for param, value in zip(params, args):
            value = getattr(value, "member", value)
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, int):
                raise P4Error(t.info.default_action.expr.loc,
                              f"default action of table '{t.sym.name}': argument '{param.name}' "
                              "must be a compile-time constant")
            a = call.arguments.add()
            a.param_id = ids[id(param)]
            width = T.width_of(T.underlying(param.type_ref.type))
            # p4c writes these values padded to the parameter's width in bytes
            a.value = (value & ((1 << width) - 1)).to_bytes(max(1, (width + 7) // 8), "big")

    def param_ids(self, action: _Action) -> dict[int, int]:
        params = [p for p in action.decl.params if p.direction is None]
        ids = field_ids([explicit_id(p.annotations, None, "a parameter") for p in params],
                        f"the parameters of action '{action.sym.name}'", [p.loc for p in params])
        return {id(p): i for p, i in zip(params, ids)}

    def action(self, a: _Action) -> None:
        msg = self.info.actions.add()
        self.preamble(msg.preamble, a.sym, a.decl.annotations)
        ids = self.param_ids(a)
        for p in a.decl.params:
            if p.direction is not None or not a.in_table:
                continue
            pm = msg.params.add()
            pm.id = ids[id(p)]
            pm.name = local_name(p)
            self.typed_width(p.type_ref.type, pm, p.loc, f"parameter '{p.name}' of action '{a.sym.name}'")
            _annotate(pm, p.annotations)
            _document(pm, p.annotations)

    def extern(self, e: _Extern) -> None:
        what = f"{e.kind} '{e.sym.name}'"
        if e.kind in ("counter", "direct_counter"):
            msg = self.info.counters.add() if e.kind == "counter" else self.info.direct_counters.add()
            msg.spec.unit = _unit(e.arg("type"), _COUNTER_UNITS, what, e.sym.loc)
        elif e.kind in ("meter", "direct_meter"):
            msg = self.info.meters.add() if e.kind == "meter" else self.info.direct_meters.add()
            msg.spec.unit = _unit(e.arg("type"), _METER_UNITS, what, e.sym.loc)
        elif e.kind == "register":
            msg = self.info.registers.add()
            if not e.info.type_args:
                raise P4Error(e.sym.loc, f"{what}: the cell type is unknown")
            self.type_spec(e.info.type_args[0], msg.type_spec, e.sym.loc)
        else:
            msg = self.info.action_profiles.add()
            msg.table_ids.extend(t.sym.id for t in e.tables)
            msg.with_selector = e.kind == "action_selector"
            if msg.with_selector:
                self.selector_sizes(msg, e.annotations, what)
        annotations = e.annotations
        if e.kind in ("action_profile", "action_selector"):
            annotations = [a for a in annotations if a.name not in _SELECTOR_SIZE_ANNOTATIONS]
        self.preamble(msg.preamble, e.sym, annotations)
        if "size" in _EXTERN_CTORS[e.kind]:
            size = e.arg("size")
            if isinstance(size, bool) or not isinstance(size, int):
                raise P4Error(e.sym.loc, f"size of {what} must be an integer")
            msg.size = size
        if e.kind.startswith("direct_"):
            msg.direct_table_id = e.tables[0].sym.id
        index = e.info.type_args[1] if e.kind == "register" and len(e.info.type_args) > 1 else None
        if isinstance(index, T.NewType):
            msg.index_type_name.name = index.name
            self.new_type(index)

    def selector_sizes(self, msg: Any, annotations: list[ast.Annotation], what: str) -> None:
        """``@max_group_size``, ``@selector_size_semantics`` and ``@max_member_weight`` of an
        action selector, as p4c reads them (the first of each; p4c ignores them, with a warning,
        on a profile without a selector and leaves them out of the preamble's annotations)."""
        group = ast.find_annotation(annotations, "max_group_size")
        if group is not None:
            msg.max_group_size = self.annotation_int(group, what)
        semantics = ast.find_annotation(annotations, "selector_size_semantics")
        if semantics is not None:
            value = (semantics.string_arg() or "").upper()
            if value not in ("SUM_OF_WEIGHTS", "SUM_OF_MEMBERS"):
                raise P4Error(semantics.loc, f'@selector_size_semantics of {what}: expected "sum_of_weights" '
                                             f'or "sum_of_members", not {semantics.string_arg()!r}')
            getattr(msg, value.lower()).SetInParent()
        weight = ast.find_annotation(annotations, "max_member_weight")
        if weight is not None and msg.HasField("sum_of_members"):
            msg.sum_of_members.max_member_weight = self.annotation_int(weight, what)

    @staticmethod
    def annotation_int(ann: ast.Annotation, what: str) -> int:
        value = _annotation_int(ann)
        if value is None:
            raise P4Error(ann.loc, f"@{ann.name} of {what} must be an integer")
        return value

    def controller_header(self, h: _Named) -> None:
        msg = self.info.controller_packet_metadata.add()
        decl: ast.HeaderDecl = h.info
        self.preamble(msg.preamble, h.sym, decl.annotations)
        fields = decl.fields
        ids = field_ids([explicit_id(f.annotations, None, "a header field") for f in fields],
                        f"controller header '{h.sym.name}'", [f.loc for f in fields])
        for fid, f in zip(ids, fields):
            md = msg.metadata.add()
            md.id = fid
            md.name = local_name(f)
            self.typed_width(f.type_ref.type, md, f.loc, f"field '{f.name}' of header '{decl.name}'")
            _annotate(md, f.annotations)

    def value_set(self, v: _Named) -> None:
        """A parser value set: one match field per struct field (``@match(kind)``, default
        exact), or a single unnamed one for a bit<W> element."""
        msg = self.info.value_sets.add()
        info = v.info
        self.preamble(msg.preamble, v.sym, info.decl.annotations)
        msg.size = info.size
        t = info.element
        if isinstance(t, T.StructType):
            decls = _struct_field_decls(t)
            anns = [decls[n].annotations if n in decls else [] for n, _ in t.fields]
            ids = field_ids([explicit_id(a, None, "a field") for a in anns],
                            f"value set '{v.sym.name}'", [info.decl.loc] * len(anns))
            for fid, (fname, ftype), a in zip(ids, t.fields, anns):
                self._value_set_field(msg, fid, fname, ftype, a, v)
        else:
            self._value_set_field(msg, 1, "", t, [], v)

    def _value_set_field(self, msg: p4info_pb2.ValueSet, fid: int, name: str, t: T.Type,
                         annotations: list[ast.Annotation], v: _Named) -> None:
        mf = msg.match.add()
        mf.id = fid
        if name:
            mf.name = name
        self.typed_width(t, mf, v.info.decl.loc, f"value set '{v.sym.name}'")
        ann = ast.find_annotation(annotations, "match")
        kind = ann.tokens[0] if ann is not None and ann.tokens else "exact"
        if kind in _MATCH_TYPES:
            mf.match_type = _MATCH_TYPES[kind]
        else:
            mf.other_match_type = kind
        _annotate(mf, [a for a in annotations if a.name != "match"])


# =========================================================================== helpers


def _annotate(msg: Any, annotations: list[ast.Annotation]) -> None:
    """Copy annotations into ``msg``: ``@a[k=v]`` as structured ones, the rest as text."""
    for ann in annotations:
        if ann.name in _CONSUMED_ANNOTATIONS:
            continue
        if ann.structured and ann.args is not None:
            sa = msg.structured_annotations.add()
            sa.name = ann.name
            sa.expression_list.SetInParent()
            for arg in ann.args:
                value = arg.const_value
                if value is None and isinstance(arg, ast.IntLiteral | ast.BoolLiteral | ast.StringLiteral):
                    value = arg.value
                _expression(value, sa.expression_list.expressions.add(), arg)
        elif ann.kv is not None:
            sa = msg.structured_annotations.add()
            sa.name = ann.name
            sa.kv_pair_list.SetInParent()
            for kv in ann.kv:
                pair = sa.kv_pair_list.kv_pairs.add()
                pair.key = kv.name
                value = kv.value.const_value
                if value is None and isinstance(kv.value, ast.IntLiteral | ast.BoolLiteral | ast.StringLiteral):
                    value = kv.value.value
                _expression(value, pair.value, kv.value)
        else:
            msg.annotations.append(annotation_text(ann))


def _expression(value: Any, out: p4types_pb2.Expression, node: ast.Expression) -> None:
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int64_value = value
    elif isinstance(value, str):
        out.string_value = value
    else:
        raise P4Error(node.loc, "a structured annotation value must be a string, integer or boolean constant")


def _key_pairs(ann: ast.Annotation) -> list[tuple[str, str]]:
    """``@a(k=v, ...)`` or ``@a[k=v, ...]`` as (key, value as written) pairs."""
    if ann.kv is not None:
        return [(kv.name, f'"{kv.value.value}"' if isinstance(kv.value, ast.StringLiteral)
                 else getattr(kv.value, "text", "")) for kv in ann.kv]
    toks = [t for t in ann.tokens if t != ","]
    if len(toks) % 3 or any(toks[i + 1] != "=" for i in range(0, len(toks), 3)):
        raise P4Error(ann.loc, f'@{ann.name} takes key=value pairs')
    return [(toks[i], toks[i + 2]) for i in range(0, len(toks), 3)]


def _key_values(ann: ast.Annotation) -> dict[str, str]:
    """``@a(k="v", ...)`` as a dict of string values."""
    out = {}
    for key, value in _key_pairs(ann):
        if not (len(value) >= 2 and value.startswith('"') and value.endswith('"')):
            raise P4Error(ann.loc, f"@{ann.name}: the value of '{key}' must be a string")
        out[key] = value[1:-1]
    return out


def _key_ints(ann: ast.Annotation) -> dict[str, int]:
    """``@a(k=10, ...)`` as a dict of integer values."""
    out = {}
    for key, value in _key_pairs(ann):
        try:
            out[key] = int(value.replace("_", ""), 0)
        except ValueError:
            raise P4Error(ann.loc, f"@{ann.name}: the value of '{key}' must be an integer, not {value}") from None
    return out


def _document(msg: Any, annotations: list[ast.Annotation]) -> None:
    for key in ("brief", "description"):
        ann = ast.find_annotation(annotations, key)
        if ann is not None and ann.string_arg() is not None:
            setattr(msg.doc, key, ann.string_arg())


def _decl_annotations(t: T.NominalType) -> list[ast.Annotation]:
    return list(t.decl.annotations) if isinstance(t.decl, ast.Declaration) else []


def _struct_field_decls(t: T.StructLikeType) -> dict[str, ast.StructField]:
    if isinstance(t.decl, ast.StructLikeDecl):
        return {f.name: f for f in t.decl.fields}
    return {}


def _bitstring(t: T.Type, spec: Any) -> None:
    if isinstance(t, T.BitType):
        spec.bit.bitwidth = t.width
    elif isinstance(t, T.IntType):
        spec.int.bitwidth = t.width
    elif isinstance(t, T.VarbitType):
        spec.varbit.max_bitwidth = t.max_width
    elif isinstance(t, T.BoolType):
        spec.bit.bitwidth = 1
    else:
        raise P4Error(UNKNOWN_LOC, f"type {t} is not a bit string")


def _unit(member: Any, units: dict[str, int], what: str, loc: SourceLoc) -> int:
    if member not in units:
        raise P4Error(loc, f"{what}: unknown counter/meter type '{member}' "
                           f"(expected one of {', '.join(units)})")
    return units[member]


def _translation(t: T.NewType) -> tuple[str, int | None] | None:
    """``@p4runtime_translation("uri", W | bit<W> | string)`` on a ``type``: (uri, W or
    None for string), or None when the type is not translated."""
    ann = ast.find_annotation(_decl_annotations(t), "p4runtime_translation")
    if ann is None:
        return None
    toks = [tok for tok in ann.tokens if tok != ","]
    if len(toks) < 2 or not toks[0].startswith('"'):
        raise P4Error(ann.loc, '@p4runtime_translation needs ("uri", width), ("uri", bit<W>) '
                               'or ("uri", string)')
    uri = toks[0][1:-1]
    rest = toks[1:]
    if rest == ["string"]:
        return uri, None
    digits = [tok for tok in rest if tok not in ("bit", "<", ">")]
    if len(digits) == 1 and digits[0].isdigit():
        return uri, int(digits[0])
    raise P4Error(ann.loc, f"@p4runtime_translation of type '{t.name}': cannot read the "
                           f"controller width from '{ann.body}'")


def _translated_width(t: T.NewType) -> int:
    """P4Info ``bitwidth`` of a value of ``type`` t: the translation's width if t is
    translated (0 for strings), else the width of the bit type underneath."""
    translation = _translation(t)
    if translation is not None:
        return translation[1] or 0
    return T.width_of(t.base)


# =========================================================================== API


def build_p4info(checked: Any, name: str | None = None) -> p4info_pb2.P4Info:
    """The P4Info of a checked v1model program.

    ``checked`` is the checker's ``CheckedProgram``: its summary (fully qualified names,
    tables, instances, digests) and annotated AST are read. A program without ``main``
    has an empty P4Info (as p4c writes it). ``name`` becomes
    ``pkg_info.name``; by default the stem of the program's file (``@pkginfo(name=...)``
    on ``main`` wins over both).
    """
    if not hasattr(checked, "program") or not hasattr(checked, "tables"):
        raise TypeError(f"build_p4info needs the checker's CheckedProgram, not {type(checked).__name__}")
    program = checked.program
    if checked.main is None:
        # p4c warns about the missing 'main' and writes an empty P4Info: nothing runs.
        return p4info_pb2.P4Info()
    col = _Collector(checked)
    main = col.collect()
    symbols = list(col.symbols())
    _check_unique_names(symbols)
    assign_ids(symbols)
    if name is None and main.loc.file and not main.loc.file.startswith("<"):
        name = Path(main.loc.file).stem  # the user's file, not an included one
    return _Emitter(program, col).emit(name)


def _check_unique_names(symbols: list[Symbol]) -> None:
    seen: dict[tuple[int, str], Symbol] = {}
    for s in symbols:
        other = seen.setdefault((s.prefix, s.name), s)
        if other is not s:
            raise P4Error(s.loc, f"two {s.kind}s are named '{s.name}' (the other is at {other.loc}); "
                                 "P4Runtime needs unique names -- rename one or give it @name")


FORMATS = ("text", "binary", "json")


def serialize_p4info(p4info: p4info_pb2.P4Info, fmt: str = "text") -> bytes:
    """``p4info`` as protobuf text format, binary wire format or JSON."""
    if fmt == "text":
        return text_format.MessageToString(p4info).encode()
    if fmt == "binary":
        return p4info.SerializeToString()
    if fmt == "json":
        return json_format.MessageToJson(p4info).encode()
    raise ValueError(f"unknown P4Info format '{fmt}' (expected one of {', '.join(FORMATS)})")


def write_p4info(p4info: p4info_pb2.P4Info, path: str | Path, fmt: str = "text") -> None:
    """Write ``p4info`` to ``path`` in ``fmt`` ("text", "binary" or "json")."""
    Path(path).write_bytes(serialize_p4info(p4info, fmt))


def read_p4info(path: str | Path, fmt: str | None = None) -> p4info_pb2.P4Info:
    """Read a P4Info file; ``fmt`` defaults from the suffix (.bin/.pb binary, .json JSON,
    anything else text)."""
    p = Path(path)
    if fmt is None:
        fmt = {".bin": "binary", ".pb": "binary", ".json": "json"}.get(p.suffix, "text")
    msg = p4info_pb2.P4Info()
    try:
        if fmt == "binary":
            msg.ParseFromString(p.read_bytes())
        elif fmt == "json":
            json_format.Parse(p.read_text(), msg)
        elif fmt == "text":
            text_format.Parse(p.read_text(), msg)
        else:
            raise ValueError(f"unknown P4Info format '{fmt}' (expected one of {', '.join(FORMATS)})")
    except (text_format.ParseError, json_format.ParseError, DecodeError) as exc:
        raise ValueError(f"{p}: not a {fmt} P4Info: {exc}") from None
    return msg
