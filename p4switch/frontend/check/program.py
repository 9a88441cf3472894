"""Pass 4: the program summary later stages read -- :class:`CheckedProgram`.

It walks the blocks the ``main`` package binds (and the sub-blocks they instantiate;
every top-level parser and control when there is no ``main``),
naming every table, action, extern instance and value set by its fully qualified name
(see ``names.py`` for the rules), and gathers digests and ``@controller_header`` headers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.names import name_annotation, qualify
from p4switch.frontend.check.tables import TableFacts
from p4switch.frontend.errors import P4Error


@dataclass
class ActionInfo:
    """An action as the control plane sees it; ``params`` are all its parameters,
    ``data_params`` the directionless (control-plane supplied) ones."""

    fqn: str
    decl: ast.ActionDecl
    block: str | None  # FQN prefix of the enclosing block; None for a global action
    params: tuple[T.Parameter, ...]

    @property
    def data_params(self) -> tuple[T.Parameter, ...]:
        return tuple(p for p in self.params if p.direction is None)


@dataclass
class InstanceInfo:
    """An extern object instance (register, counter, meter, direct_counter, ...).

    ``args`` are the constant constructor arguments in constructor-parameter order
    (enum members as ``SymbolicValue``)."""

    fqn: str
    decl: ast.Node  # InstantiationDecl, or the ConstructorCallExpr of an inline instance
    type: T.ExternType
    args: list[object]
    block: str | None

    @property
    def extern(self) -> str:
        return self.type.name

    @property
    def type_args(self) -> tuple[T.Type, ...]:
        return self.type.type_args


@dataclass
class KeyInfo:
    """One key field: ``name`` as P4Info writes it (the expression's text or its @name)."""

    name: str
    expr: ast.Expression
    type: T.Type
    match_kind: str
    element: ast.KeyElement


@dataclass
class TableActionInfo:
    action: ActionInfo
    ref: ast.ActionRef
    default_only: bool
    table_only: bool


@dataclass
class DefaultActionInfo:
    action: ActionInfo
    args: list[object]  # constant values of the action's data (directionless) parameters
    is_const: bool
    expr: ast.Expression


@dataclass
class TableInfo:
    fqn: str
    decl: ast.TableDecl
    block: str
    keys: list[KeyInfo]
    actions: list[TableActionInfo]
    default_action: DefaultActionInfo | None  # None: not written (NoAction is implied)
    entries: list[ast.TableEntry]
    entries_const: bool
    size: int | None
    implementation: InstanceInfo | None
    direct_counter: InstanceInfo | None
    direct_meter: InstanceInfo | None
    facts: TableFacts


@dataclass
class ValueSetInfo:
    fqn: str
    decl: ast.ValueSetDecl
    element: T.Type
    size: int
    block: str


@dataclass
class DigestInfo:
    """A ``digest<T>(receiver, data)`` type: ``name`` is T's name (P4Info digest name)."""

    name: str
    type: T.Type
    calls: list[ast.CallExpr] = field(default_factory=list)


@dataclass
class BlockInfo:
    """A parser/control instance: a ``main`` argument (``param`` is the package parameter
    name, e.g. "ig") or a sub-block instantiated in another block (``param`` None)."""

    fqn: str
    decl: ast.ParserDecl | ast.ControlDecl
    type: T.BlockType
    param: str | None
    expr: ast.Node | None


@dataclass
class CheckedProgram:
    """The checked program and what later passes need to know about it."""

    program: ast.Program
    main: ast.InstantiationDecl | None
    package: T.PackageType | None
    main_args: dict[str, BlockInfo]  # package parameter name -> block bound to it
    blocks: list[BlockInfo]
    tables: list[TableInfo]
    actions: list[ActionInfo]
    instances: list[InstanceInfo]
    value_sets: list[ValueSetInfo]
    digests: list[DigestInfo]
    controller_headers: dict[str, T.HeaderType]  # "packet_in"/"packet_out" -> header
    types: dict[str, T.Type]  # named top-level types (typedefs resolved)
    constants: dict[str, object]  # top-level constants
    errors: list[str]  # error members, in declaration order
    match_kinds: list[str]
    warnings: list[P4Error] = field(default_factory=list)

    def table(self, fqn: str) -> TableInfo | None:
        return next((t for t in self.tables if t.fqn == fqn), None)

    def action(self, fqn: str) -> ActionInfo | None:
        return next((a for a in self.actions if a.fqn == fqn), None)

    def instance(self, fqn: str) -> InstanceInfo | None:
        return next((i for i in self.instances if i.fqn == fqn), None)

    def type(self, name: str) -> T.Type | None:
        return self.types.get(name)


def expr_text(e: ast.Expression) -> str:
    """The name P4Info gives a key expression, as p4c's TableKeyNames pass builds it:
    ``hdr.h.$valid$`` for ``hdr.h.isValid()``, a field's ``@name`` instead of its name
    (a ``.``-name replaces the whole path), ``a & b``, constants in the base written."""
    if isinstance(e, ast.PathExpr):
        return ("." if e.global_scope else "") + e.name
    if isinstance(e, ast.MemberExpr):
        member = _member_key_name(e)
        if member.startswith("."):
            return member[1:]
        return f"{expr_text(e.expr)}.{member}"
    if isinstance(e, ast.IndexExpr):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, ast.SliceExpr):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, ast.CallExpr):
        method = expr_text(e.method)
        return method if method.endswith(VALID_KEY) and not e.args else f"{method}()"
    if isinstance(e, ast.BinaryExpr) and e.op == "&":
        return f"{expr_text(e.left)} & {expr_text(e.right)}"
    if isinstance(e, ast.IntLiteral):
        return _literal_text(e)
    if isinstance(e, ast.TypeMemberExpr):
        return f"{e.type_ref.type}.{e.member}"
    return str(e.const_value) if e.const_value is not None else type(e).__name__


VALID_KEY = "$valid$"


def _member_key_name(e: ast.MemberExpr) -> str:
    base = T.underlying(e.expr.type) if e.expr.type is not None else None
    if e.member == "isValid" and isinstance(base, T.HeaderType | T.HeaderUnionType):
        return VALID_KEY
    decl = getattr(base, "decl", None)
    if isinstance(decl, ast.StructLikeDecl):
        for f in decl.fields:
            if f.name == e.member:
                return name_annotation(f) or e.member
    return e.member


def _literal_text(e: ast.IntLiteral) -> str:
    """p4c prints a key constant without its width, in the base it was written in."""
    digits = (e.text or "").split("w")[-1].split("s")[-1].lower()
    if digits.startswith("0x"):
        return hex(e.value)
    if digits.startswith("0b"):
        return bin(e.value)
    if digits.startswith("0o"):
        return oct(e.value)
    return str(e.value)


def _const_args(node: ast.Node) -> list[object]:
    return [a.const_value if a is not None else None for _, a in getattr(node, "bound_args", ())]


class Summarizer:
    """Builds the CheckedProgram from a finished checker."""

    def __init__(self, checker) -> None:  # checker: driver.Checker
        self.c = checker
        self.actions: dict[tuple[int, str], ActionInfo] = {}
        self.instances: dict[tuple[int, str], InstanceInfo] = {}
        self.tables: list[TableInfo] = []
        self.value_sets: list[ValueSetInfo] = []
        self.blocks: list[BlockInfo] = []
        self.fqns: dict[str, ast.Node] = {}

    def build(self) -> CheckedProgram:
        c = self.c
        decls = c.program.declarations
        for d in decls:
            if isinstance(d, ast.InstantiationDecl) and isinstance(c.decl_types.get(d), T.ExternType):
                self._instance(d, None)
        main_args = self._main_args()
        for b in main_args.values() if c.main is not None else self._all_blocks():
            self._walk(b)
        package = c.decl_types.get(c.main) if c.main is not None else None
        return CheckedProgram(
            program=c.program, main=c.main,
            package=package if isinstance(package, T.PackageType) else None,
            main_args=main_args, blocks=self.blocks, tables=self.tables,
            actions=list(self.actions.values()), instances=list(self.instances.values()),
            value_sets=self.value_sets, digests=self._digests(),
            controller_headers=self._controller_headers(), types=self._types(),
            constants={d.name: d.value.const_value for d in decls if isinstance(d, ast.ConstDecl)},
            errors=list(c.error_members), match_kinds=list(c.match_kinds),
            warnings=list(c.diag.warnings),
        )

    # ------------------------------------------------------------------ blocks

    def _main_args(self) -> dict[str, BlockInfo]:
        main = self.c.main
        out: dict[str, BlockInfo] = {}
        if main is None:
            return out
        for p, arg in getattr(main, "bound_args", ()):
            t = getattr(arg, "type", None)
            if arg is None or not isinstance(t, T.ParserType | T.ControlType):
                continue
            decl = t.decl
            if isinstance(arg, ast.PathExpr) and isinstance(arg.decl, ast.InstantiationDecl):
                fqn = qualify(None, arg.decl)
            else:
                fqn = qualify(None, decl)
            out[p.name] = BlockInfo(fqn, decl, t, p.name, arg)
        return out

    def _all_blocks(self) -> list[BlockInfo]:
        """Without ``main`` (a library, a test snippet): every top-level parser/control."""
        out = []
        for d in self.c.program.declarations:
            t = self.c.decl_types.get(d)
            if isinstance(d, ast.ParserDecl | ast.ControlDecl) and isinstance(t, T.ParserType | T.ControlType):
                out.append(BlockInfo(qualify(None, d), d, t, None, None))
        return out

    def _walk(self, b: BlockInfo) -> None:
        self.blocks.append(b)
        prefix = b.fqn
        for local in b.decl.locals:
            if isinstance(local, ast.TableDecl):
                self._table(local, prefix)
            elif isinstance(local, ast.ActionDecl):
                self._action(local, prefix)
            elif isinstance(local, ast.ValueSetDecl):
                vt = self.c.decl_types.get(local)
                if isinstance(vt, T.ValueSetType):
                    fqn = self._name(qualify(prefix, local), local)
                    self.value_sets.append(ValueSetInfo(fqn, local, vt.element, vt.size, prefix))
            elif isinstance(local, ast.InstantiationDecl):
                t = self.c.decl_types.get(local)
                if isinstance(t, T.ExternType):
                    self._instance(local, prefix)
                elif isinstance(t, T.ParserType | T.ControlType):
                    self._walk(BlockInfo(qualify(prefix, local), t.decl, t, None, local))
        for calls in self.c.action_calls.values():
            for call, block in calls:
                if block is b.decl:
                    self._action(call.method.decl, None if self.c.block_of.get(call.method.decl) is None
                                 else prefix)

    def _name(self, fqn: str, node: ast.Node) -> str:
        """Names are unique per kind of object (a table and an action may share one, as
        in p4c: P4Info tells them apart by their id prefix)."""
        key = f"{type(node).__name__}:{fqn}"
        other = self.fqns.get(key)
        if other is not None and other is not node:
            self.c.error(node.loc, f"two objects are named '{fqn}' (use @name to rename one)")
        self.fqns[key] = node
        return fqn

    def _action(self, d: ast.ActionDecl, prefix: str | None) -> ActionInfo:
        if self.c.block_of.get(d) is None:
            prefix = None
        fqn = qualify(prefix, d)
        key = (id(d), fqn)
        info = self.actions.get(key)
        if info is None:
            info = ActionInfo(self._name(fqn, d), d, prefix, self.c.params_of(d))
            self.actions[key] = info
        return info

    def _instance(self, d: ast.Node, prefix: str | None, fqn: str | None = None) -> InstanceInfo | None:
        t = d.type if isinstance(d, ast.ConstructorCallExpr) else self.c.decl_types.get(d)
        if not isinstance(t, T.ExternType):
            return None
        name = fqn or qualify(prefix, d)  # type: ignore[arg-type]
        # one instance per (declaration, name): a control instantiated twice has two
        info = self.instances.get((id(d), name))
        if info is None:
            info = InstanceInfo(self._name(name, d), d, t, _const_args(d), prefix)
            self.instances[(id(d), name)] = info
        return info

    def _table(self, t: ast.TableDecl, prefix: str) -> None:
        facts: TableFacts | None = self.c.table_facts.get(t)
        if facts is None:
            return
        fqn = self._name(qualify(prefix, t), t)
        keys = [KeyInfo(name_annotation_key(k.element), k.element.expr, k.type, k.match_kind, k.element)
                for k in facts.keys]
        actions = []
        for ref, d in facts.actions:
            info = self._action(d, prefix)
            anns = ref.annotations
            actions.append(TableActionInfo(info, ref, ast.find_annotation(anns, "defaultonly") is not None,
                                           ast.find_annotation(anns, "tableonly") is not None))
        default = None
        if facts.default_action is not None and facts.default_action_expr is not None:
            info = self._action(facts.default_action, prefix)
            bound = getattr(facts.default_action_expr, "bound_args", ())
            args = [a.const_value if a is not None else None for p, a in bound if p.direction is None]
            default = DefaultActionInfo(info, args, facts.default_action_const, facts.default_action_expr)

        def attached(node: ast.Node | None, role: str) -> InstanceInfo | None:
            if node is None:
                return None
            if isinstance(node, ast.ConstructorCallExpr):
                return self._instance(node, prefix, _inline_instance_name(t, role, fqn, prefix))
            return self._instance(node, self._prefix_of(node, prefix))

        self.tables.append(TableInfo(
            fqn, t, prefix, keys, actions, default, facts.entries, facts.entries_const, facts.size,
            attached(facts.implementation, "implementation"), attached(facts.counters, "counters"),
            attached(facts.meters, "meters"), facts,
        ))

    def _prefix_of(self, node: ast.Node, prefix: str) -> str | None:
        return None if self.c.block_of.get(node) is None else prefix

    # ------------------------------------------------------------------ the rest

    def _digests(self) -> list[DigestInfo]:
        out: dict[str, DigestInfo] = {}
        for call in self.c.digest_calls:
            targs = getattr(call, "type_arg_types", ())
            if not targs:
                continue
            t = targs[0]
            name = t.name if isinstance(t, T.NominalType) and t.name else str(t)
            out.setdefault(name, DigestInfo(name, t)).calls.append(call)
        return list(out.values())

    def _controller_headers(self) -> dict[str, T.HeaderType]:
        out: dict[str, T.HeaderType] = {}
        for d in self.c.program.declarations:
            if isinstance(d, ast.HeaderDecl):
                ann = ast.find_annotation(d.annotations, "controller_header")
                t = self.c.decl_types.get(d)
                if ann is not None and isinstance(t, T.HeaderType):
                    out[ann.string_arg() or d.name] = t
        return out

    def _types(self) -> dict[str, T.Type]:
        out: dict[str, T.Type] = {}
        kinds = (ast.TypedefDecl, ast.NewTypeDecl, ast.StructLikeDecl, ast.EnumDecl, ast.ExternDecl,
                 ast.ParserTypeDecl, ast.ControlTypeDecl, ast.PackageTypeDecl, ast.ParserDecl, ast.ControlDecl)
        for d in self.c.program.declarations:
            if isinstance(d, kinds):
                t = self.c.decl_types.get(d)
                if t is not None:
                    out[d.name] = t
        out.setdefault("error", T.ERROR)
        return out


def name_annotation_key(el: ast.KeyElement) -> str:
    """A key field's P4Info name: its ``@name`` if given, else the expression's text."""
    ann = ast.find_annotation(el.annotations, "name")
    given = ann.string_arg() if ann is not None else None
    return given if given is not None else expr_text(el.expr)


__all__ = ["CheckedProgram", "name_annotation"]


def _inline_instance_name(table: ast.TableDecl, role: str, fqn: str, prefix: str | None) -> str:
    """Name of an instance constructed in a table property (``implementation = action_selector(...)``):
    the property's ``@name`` as p4c uses it (as written: p4c's P4Info names
    ``@name("ap") implementation = action_profile(...)`` "ap", not "<control>.ap"; a leading
    dot is dropped), else ``<table>.<property>``."""
    prop = next((p for p in table.properties if p.name == role), None)
    ann = ast.find_annotation(prop.annotations, "name") if prop is not None else None
    given = ann.string_arg() if ann is not None else None
    if given is None:
        return f"{fqn}.{role}"
    return given[1:] if given.startswith(".") else given
