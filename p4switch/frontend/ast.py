"""P4_16 abstract syntax tree: the nodes the parser builds and the checker annotates.

Every node is a plain ``@dataclass(eq=False, kw_only=True)`` (identity equality, so nodes
can be dict keys and set members; not slotted, so later passes may hang attributes on
them). Construct nodes with keyword arguments only; new fields are only ever added with
defaults, so existing construction code keeps working. Names of classes and fields are
frozen: later passes rely on them.

Every node has ``loc: SourceLoc`` -- the span in the ORIGINAL source file (cpp line
markers already mapped back), so errors point at what the user wrote.

Annotation contract (the IR the checker produces; fields default to None and are
excluded from ``repr``/``children`` so that back references cannot recurse):

* every :class:`Expression` has ``type`` (a ``p4switch.frontend.types`` type) and
  ``const_value`` (the Python value of a compile-time constant: ``int`` for integers,
  enum members and serializable enum members as the checker decides, ``bool``, ``str``;
  otherwise None);
* every name use -- :class:`PathExpr`, :class:`TypeName`, and also :class:`MemberExpr` /
  :class:`TypeMemberExpr` when the member is itself a declaration (a field, an enum or
  error member, an extern method, a table's ``apply``) -- has ``decl``: the declaration
  node it denotes;
* every call (:class:`CallExpr`, :class:`ConstructorCallExpr`) has ``call_kind`` (a
  :class:`CallKind`);
* every :class:`TypeRef` has ``type``: the resolved ``types`` type.

The checker may store more on nodes (documented in ``check/``); the parser never sets the
annotation fields.

Keyset expressions (only inside ``select`` cases and table entries): :class:`MaskExpr`
(``a &&& m``), :class:`RangeExpr` (``a .. b``), :class:`DefaultExpr` (``default``) and
:class:`DontCareExpr` (``_``, also a don't-care call argument).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from p4switch.frontend.errors import SourceLoc


def _note(default: Any = None) -> Any:
    """An annotation field filled by a later pass: default None, not in repr/children."""
    return field(default=default, repr=False, compare=False, metadata={"annotation": True})


class CallKind(enum.StrEnum):
    """What a call denotes; set by the checker on ``CallExpr.call_kind``."""

    ACTION = "action"
    FUNCTION = "function"
    EXTERN_FUNCTION = "extern_function"
    EXTERN_METHOD = "extern_method"
    PACKET_METHOD = "packet_method"  # packet_in/packet_out: extract, lookahead, advance, length, emit
    HEADER_METHOD = "header_method"  # isValid, setValid, setInvalid
    UNION_METHOD = "union_method"  # isValid on a header union
    STACK_METHOD = "stack_method"  # push_front, pop_front
    TABLE_APPLY = "table_apply"
    PARSER_APPLY = "parser_apply"
    CONTROL_APPLY = "control_apply"
    CONSTRUCTOR = "constructor"
    BUILTIN = "builtin"  # minSizeInBits and friends


@dataclass(eq=False, kw_only=True)
class Node:
    """Base of every AST node."""

    loc: SourceLoc


def children(node: Node) -> Iterator[Node]:
    """Direct syntactic children of ``node`` (annotation fields excluded), in field order."""
    for f in fields(node):
        if f.metadata.get("annotation") or f.name == "loc":
            continue
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, list | tuple):
            for item in value:
                if isinstance(item, Node):
                    yield item


def walk(node: Node) -> Iterator[Node]:
    """``node`` and all its syntactic descendants, pre-order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def walk_live(node: Node) -> Iterator[Node]:
    """Like :func:`walk`, but skips the branch of an ``if`` or ``?:`` whose condition the
    checker folded to a constant: p4c's front end folds and removes it before it decides which
    tables and actions are used (SimplifyControlFlow, RemoveAllUnusedDeclarations)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, IfStmt | ConditionalExpr) and isinstance(current.cond.const_value, bool):
            taken = current.then if isinstance(current, IfStmt) else current.if_true
            if current.cond.const_value is False:
                taken = current.else_ if isinstance(current, IfStmt) else current.if_false
            if taken is not None:
                stack.append(taken)
            continue
        stack.extend(reversed(list(children(current))))


# --------------------------------------------------------------------------- annotations


@dataclass(eq=False, kw_only=True)
class Annotation(Node):
    """``@name``, ``@name(body)`` or ``@name[k=v, ...]``.

    ``tokens`` holds the raw token texts of the body (free-form bodies are legal P4);
    ``args`` the body parsed as an expression list when it is one (else None);
    ``kv`` the key/value pairs of the bracketed form (else None).
    """

    name: str
    tokens: list[str] = field(default_factory=list)
    args: list[Expression] | None = None
    kv: list[KeyValue] | None = None
    structured: bool = False  # ``@name[e1, e2]``: a structured annotation holding expressions

    @property
    def body(self) -> str:
        """The body's raw text, tokens joined by single spaces."""
        return " ".join(self.tokens)

    def string_arg(self) -> str | None:
        """The value of a single string-literal argument (``@name("x")``), else None."""
        if self.args and len(self.args) == 1 and isinstance(self.args[0], StringLiteral):
            return self.args[0].value
        return None


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    """The first annotation called ``name`` in ``annotations``."""
    for a in annotations:
        if a.name == name:
            return a
    return None


# --------------------------------------------------------------------------- types (syntax)


@dataclass(eq=False, kw_only=True)
class TypeRef(Node):
    """A type as written in the source; ``type`` is the resolved type (checker)."""

    type: Any = _note()


@dataclass(eq=False, kw_only=True)
class BoolType(TypeRef):
    """``bool``."""


@dataclass(eq=False, kw_only=True)
class ErrorType(TypeRef):
    """``error``."""


@dataclass(eq=False, kw_only=True)
class MatchKindType(TypeRef):
    """``match_kind``."""


@dataclass(eq=False, kw_only=True)
class StringType(TypeRef):
    """``string``."""


@dataclass(eq=False, kw_only=True)
class VoidType(TypeRef):
    """``void`` (return types only)."""


@dataclass(eq=False, kw_only=True)
class DontCareType(TypeRef):
    """``_`` as a type argument (inferred)."""


@dataclass(eq=False, kw_only=True)
class InfIntType(TypeRef):
    """``int`` without a width: arbitrary-precision compile-time integer."""


@dataclass(eq=False, kw_only=True)
class BitsType(TypeRef):
    """``bit<W>`` (signed False) or ``int<W>`` (signed True); plain ``bit`` is ``bit<1>``."""

    width: Expression
    signed: bool = False


@dataclass(eq=False, kw_only=True)
class VarbitType(TypeRef):
    """``varbit<W>``."""

    width: Expression


@dataclass(eq=False, kw_only=True)
class TypeName(TypeRef):
    """A named type (header, struct, typedef, extern, type parameter, ...)."""

    name: str
    global_scope: bool = False  # written with a leading dot: ``.T``
    decl: Any = _note()


@dataclass(eq=False, kw_only=True)
class SpecializedType(TypeRef):
    """A generic type applied to arguments: ``register<bit<32>>``, ``Checksum16<T>``."""

    base: TypeName
    args: list[TypeRef] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class HeaderStackType(TypeRef):
    """``element[size]``."""

    element: TypeRef
    size: Expression


@dataclass(eq=False, kw_only=True)
class TupleType(TypeRef):
    """``tuple<T1, T2>``."""

    elements: list[TypeRef] = field(default_factory=list)


# --------------------------------------------------------------------------- expressions


@dataclass(eq=False, kw_only=True)
class Expression(Node):
    """Base of expressions; ``type``/``const_value`` are filled by the checker."""

    type: Any = _note()
    const_value: Any = _note()


@dataclass(eq=False, kw_only=True)
class IntLiteral(Expression):
    """An integer literal: ``5``, ``0x1F``, ``8w5``, ``8s5``, ``0b101``, ``0o17``, ``1_000``.

    ``width`` is None for an unsized literal (type ``int``); ``signed`` is True for ``s``.
    ``value`` is the non-negative magnitude as written (a minus sign is a UnaryExpr; no
    truncation to ``width`` -- overflow is the checker's to report). ``text`` is the
    literal as written.
    """

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass(eq=False, kw_only=True)
class BoolLiteral(Expression):
    value: bool


@dataclass(eq=False, kw_only=True)
class StringLiteral(Expression):
    """A string literal; ``value`` has the quotes removed and escapes decoded."""

    value: str


@dataclass(eq=False, kw_only=True)
class PathExpr(Expression):
    """A use of a (non-type) name; ``decl`` is what it denotes."""

    name: str
    global_scope: bool = False  # ``.name``
    decl: Any = _note()


@dataclass(eq=False, kw_only=True)
class ThisExpr(Expression):
    """``this`` (inside an instantiation's initializer block)."""


@dataclass(eq=False, kw_only=True)
class MemberExpr(Expression):
    """``expr.member`` (fields, methods, ``.next``, ``.last``, ``.hit``, ``.action_run``...)."""

    expr: Expression
    member: str
    decl: Any = _note()


@dataclass(eq=False, kw_only=True)
class TypeMemberExpr(Expression):
    """``T.member`` where T is a type: ``error.NoError``, ``MyEnum.A``."""

    type_ref: TypeRef
    member: str
    decl: Any = _note()


@dataclass(eq=False, kw_only=True)
class IndexExpr(Expression):
    """``expr[index]`` (header stacks, tuples)."""

    expr: Expression
    index: Expression


@dataclass(eq=False, kw_only=True)
class SliceExpr(Expression):
    """``expr[hi:lo]`` (bit slice, both bounds inclusive)."""

    expr: Expression
    hi: Expression
    lo: Expression


@dataclass(eq=False, kw_only=True)
class CastExpr(Expression):
    """``(T) expr``."""

    type_ref: TypeRef
    expr: Expression


@dataclass(eq=False, kw_only=True)
class UnaryExpr(Expression):
    """``op operand`` with op in ``!``, ``~``, ``-``, ``+``."""

    op: str
    operand: Expression


BINARY_OPERATORS = (
    "*", "/", "%", "+", "-", "|+|", "|-|", "<<", ">>", "<=", ">=", "<", ">", "==", "!=",
    "&", "^", "|", "++", "&&", "||",
)


@dataclass(eq=False, kw_only=True)
class BinaryExpr(Expression):
    """``left op right`` with op one of :data:`BINARY_OPERATORS`."""

    op: str
    left: Expression
    right: Expression


@dataclass(eq=False, kw_only=True)
class ConditionalExpr(Expression):
    """``cond ? if_true : if_false``."""

    cond: Expression
    if_true: Expression
    if_false: Expression


@dataclass(eq=False, kw_only=True)
class ListExpr(Expression):
    """``{ e1, e2, ... }`` (tuple/list/struct initializer by position)."""

    elements: list[Expression] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class KeyValue(Node):
    """``name = expr`` in structure expressions, named arguments' sibling, ``@a[k=v]``."""

    name: str
    value: Expression


@dataclass(eq=False, kw_only=True)
class StructExpr(Expression):
    """``{ f1 = e1, f2 = e2 }`` (a structure-valued expression); ``type_ref`` is reserved
    for a typed form and is None from the parser."""

    fields: list[KeyValue] = field(default_factory=list)
    type_ref: TypeRef | None = None


@dataclass(eq=False, kw_only=True)
class InvalidHeaderExpr(Expression):
    """``{#}``: an invalid header / header union value."""


@dataclass(eq=False, kw_only=True)
class MaskExpr(Expression):
    """Keyset ``value &&& mask``."""

    value: Expression
    mask: Expression


@dataclass(eq=False, kw_only=True)
class RangeExpr(Expression):
    """Keyset ``lo .. hi`` (inclusive)."""

    lo: Expression
    hi: Expression


@dataclass(eq=False, kw_only=True)
class DefaultExpr(Expression):
    """``default`` in a keyset or a switch label."""


@dataclass(eq=False, kw_only=True)
class DontCareExpr(Expression):
    """``_`` in a keyset or as a call argument."""


@dataclass(eq=False, kw_only=True)
class Argument(Node):
    """A call argument, positional (``name`` None) or named (``name = value``)."""

    value: Expression
    name: str | None = None


@dataclass(eq=False, kw_only=True)
class CallExpr(Expression):
    """``method<type_args>(args)``; ``method`` is a PathExpr, MemberExpr or TypeMemberExpr."""

    method: Expression
    type_args: list[TypeRef] = field(default_factory=list)
    args: list[Argument] = field(default_factory=list)
    call_kind: CallKind | None = _note()


@dataclass(eq=False, kw_only=True)
class ConstructorCallExpr(Expression):
    """``T(args)`` where T is a type: ``MyIngress()`` as a package argument."""

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    call_kind: CallKind | None = _note()


# --------------------------------------------------------------------------- statements


@dataclass(eq=False, kw_only=True)
class Statement(Node):
    """Base of statements."""


@dataclass(eq=False, kw_only=True)
class AssignStmt(Statement):
    lhs: Expression
    rhs: Expression


@dataclass(eq=False, kw_only=True)
class CallStmt(Statement):
    """A method/function/action call used as a statement."""

    call: CallExpr


@dataclass(eq=False, kw_only=True)
class BlockStmt(Statement):
    """``@annotations { stmts }``."""

    stmts: list[Statement] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class IfStmt(Statement):
    cond: Expression
    then: Statement
    else_: Statement | None = None


@dataclass(eq=False, kw_only=True)
class SwitchCase(Node):
    """``label: body`` or a fall-through ``label:`` (body None).

    ``label`` is a DefaultExpr, an action name (PathExpr) or an expression.
    """

    label: Expression
    body: BlockStmt | None = None


@dataclass(eq=False, kw_only=True)
class SwitchStmt(Statement):
    """``switch (expr) { cases }`` -- on ``t.apply().action_run`` or on a value."""

    expr: Expression
    cases: list[SwitchCase] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ReturnStmt(Statement):
    value: Expression | None = None


@dataclass(eq=False, kw_only=True)
class ExitStmt(Statement):
    pass


@dataclass(eq=False, kw_only=True)
class ForStmt(Statement):
    """``for (init; cond; updates) body``: ``init`` and ``updates`` are VarDecl, AssignStmt
    or CallStmt nodes; the loop has its own scope holding ``init``'s variables."""

    init: list[Statement] = field(default_factory=list)
    cond: Expression | None = None
    updates: list[Statement] = field(default_factory=list)
    body: Statement
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ForInStmt(Statement):
    """``for (T x in range) body`` (``var`` declared by the loop, its init None) or
    ``for (x in range) body`` (``target`` an existing variable). ``range`` is a
    RangeExpr ``lo .. hi`` (inclusive) or a header stack / list expression."""

    var: VarDecl | None = None
    target: PathExpr | None = None
    range: Expression
    body: Statement
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class BreakStmt(Statement):
    pass


@dataclass(eq=False, kw_only=True)
class ContinueStmt(Statement):
    pass


@dataclass(eq=False, kw_only=True)
class EmptyStmt(Statement):
    pass


# --------------------------------------------------------------------------- declarations


@dataclass(eq=False, kw_only=True)
class Declaration(Statement):
    """Base of named declarations (some of which may also appear as statements)."""

    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class TypeParam(Declaration):
    """A generic type parameter ``T`` in ``<T, U>``."""


@dataclass(eq=False, kw_only=True)
class Param(Declaration):
    """A parameter; ``direction`` is "in", "out", "inout" or None (directionless)."""

    type_ref: TypeRef
    direction: str | None = None
    default: Expression | None = None


@dataclass(eq=False, kw_only=True)
class ConstDecl(Declaration):
    """``const T name = value;`` (global, local, or a statement)."""

    type_ref: TypeRef
    value: Expression


@dataclass(eq=False, kw_only=True)
class VarDecl(Declaration):
    """``T name [= init];`` (local variable, also a statement)."""

    type_ref: TypeRef
    init: Expression | None = None


@dataclass(eq=False, kw_only=True)
class TypedefDecl(Declaration):
    """``typedef T name;`` -- an alias."""

    type_ref: TypeRef


@dataclass(eq=False, kw_only=True)
class NewTypeDecl(Declaration):
    """``type T name;`` -- a distinct type with T's representation."""

    type_ref: TypeRef


@dataclass(eq=False, kw_only=True)
class EnumMember(Declaration):
    """An enum member; ``value`` only for serializable enums."""

    value: Expression | None = None


@dataclass(eq=False, kw_only=True)
class EnumDecl(Declaration):
    """``enum E { A, B }`` or serializable ``enum bit<8> E { A = 1 }`` (``underlying`` set)."""

    members: list[EnumMember] = field(default_factory=list)
    underlying: TypeRef | None = None


@dataclass(eq=False, kw_only=True)
class IdDecl(Declaration):
    """A bare declared identifier: a member of ``error {...}`` or ``match_kind {...}``."""


@dataclass(eq=False, kw_only=True)
class ErrorDecl(Declaration):
    """``error { A, B }`` (``name`` is "error"; several such declarations merge)."""

    members: list[IdDecl] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class MatchKindDecl(Declaration):
    """``match_kind { exact, ternary }`` (``name`` is "match_kind")."""

    members: list[IdDecl] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class StructField(Declaration):
    type_ref: TypeRef


@dataclass(eq=False, kw_only=True)
class StructLikeDecl(Declaration):
    """Common shape of header, header_union and struct declarations."""

    fields: list[StructField] = field(default_factory=list)
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class HeaderDecl(StructLikeDecl):
    pass


@dataclass(eq=False, kw_only=True)
class HeaderUnionDecl(StructLikeDecl):
    pass


@dataclass(eq=False, kw_only=True)
class StructDecl(StructLikeDecl):
    pass


@dataclass(eq=False, kw_only=True)
class MethodDecl(Declaration):
    """A method prototype inside an extern.

    Constructors have ``is_constructor`` and ``return_type`` None; ``abstract`` methods
    must be implemented in an instantiation's initializer block.
    """

    return_type: TypeRef | None = None
    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    is_abstract: bool = False
    is_constructor: bool = False


@dataclass(eq=False, kw_only=True)
class ExternDecl(Declaration):
    """``extern Name<T> { methods }`` -- an extern object type."""

    type_params: list[TypeParam] = field(default_factory=list)
    methods: list[MethodDecl] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ExternFunctionDecl(Declaration):
    """``extern R name<T>(params);``."""

    return_type: TypeRef
    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class FunctionDecl(Declaration):
    """``R name<T>(params) { body }``."""

    return_type: TypeRef
    body: BlockStmt
    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ActionDecl(Declaration):
    """``action name(params) { body }``; directionless params are control-plane data."""

    body: BlockStmt
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ParserTypeDecl(Declaration):
    """``parser P<H>(packet_in b, out H h);`` -- a parser type (prototype)."""

    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ControlTypeDecl(Declaration):
    """``control C<H>(inout H h);`` -- a control type (prototype)."""

    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class PackageTypeDecl(Declaration):
    """``package V1Switch<H, M>(Parser<H, M> p, ...);``."""

    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class InstantiationDecl(Declaration):
    """``T(args) name;`` or ``T(args) name = { abstract method bodies };``.

    Covers extern instances (``register<bit<32>>(512) r;``), sub-parser/control
    instances and the package instantiation ``V1Switch(...) main;``.
    """

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    initializer: list[Declaration] | None = None


@dataclass(eq=False, kw_only=True)
class ValueSetDecl(Declaration):
    """``value_set<T>(size) name;`` (parser local)."""

    element_type: TypeRef
    size: Expression


@dataclass(eq=False, kw_only=True)
class SelectCase(Node):
    """``keyset: state;`` -- ``keys`` has one element per selector, or [DefaultExpr/DontCareExpr]."""

    keys: list[Expression]
    state: PathExpr
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class SelectExpr(Expression):
    """``select(selectors) { cases }``."""

    selectors: list[Expression]
    cases: list[SelectCase] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class TransitionStmt(Statement):
    """``transition target;`` with target a PathExpr (state) or a SelectExpr."""

    target: Expression


@dataclass(eq=False, kw_only=True)
class ParserState(Declaration):
    """``state name { stmts transition }``; ``transition`` None means ``reject``-on-fallthrough."""

    stmts: list[Statement] = field(default_factory=list)
    transition: TransitionStmt | None = None


@dataclass(eq=False, kw_only=True)
class ParserDecl(Declaration):
    """``parser Name(params)(ctor_params) { locals states }``."""

    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Declaration] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class KeyElement(Node):
    """``expr : match_kind @annotations;`` in a table key."""

    expr: Expression
    match_kind: PathExpr
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ActionRef(Node):
    """An action named in ``actions``/``entries``: ``@ann name`` or ``name(args)``."""

    name: PathExpr
    args: list[Argument] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    has_parens: bool = False


@dataclass(eq=False, kw_only=True)
class TableEntry(Node):
    """``keys : action;`` in ``entries``; ``priority`` from ``priority = N :``."""

    keys: list[Expression]
    action: ActionRef
    priority: Expression | None = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class TableProperty(Node):
    """Base of table properties; ``name`` is the property name as written."""

    name: str
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class KeyProperty(TableProperty):
    elements: list[KeyElement] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ActionsProperty(TableProperty):
    actions: list[ActionRef] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class EntriesProperty(TableProperty):
    entries: list[TableEntry] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class ValueProperty(TableProperty):
    """``[const] name = value;`` -- default_action, size, implementation, counters, meters,
    and any target-specific property. ``default_action``'s value is a PathExpr or CallExpr."""

    value: Expression


@dataclass(eq=False, kw_only=True)
class TableDecl(Declaration):
    """``table name { properties }``; helpers give typed access to the standard ones."""

    properties: list[TableProperty] = field(default_factory=list)

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None

    @property
    def key(self) -> KeyProperty | None:
        p = self.prop("key")
        return p if isinstance(p, KeyProperty) else None

    @property
    def actions(self) -> ActionsProperty | None:
        p = self.prop("actions")
        return p if isinstance(p, ActionsProperty) else None

    @property
    def entries(self) -> EntriesProperty | None:
        p = self.prop("entries")
        return p if isinstance(p, EntriesProperty) else None

    @property
    def default_action(self) -> ValueProperty | None:
        p = self.prop("default_action")
        return p if isinstance(p, ValueProperty) else None


@dataclass(eq=False, kw_only=True)
class ControlDecl(Declaration):
    """``control Name(params)(ctor_params) { locals apply { body } }``."""

    body: BlockStmt
    type_params: list[TypeParam] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Declaration] = field(default_factory=list)


@dataclass(eq=False, kw_only=True)
class Program(Node):
    """A whole preprocessed compilation unit (the user file and everything it includes)."""

    declarations: list[Declaration] = field(default_factory=list)
    # The PreprocessedSource it was parsed from (file list, original lines); set by the parser.
    preprocessed: Any = field(default=None, repr=False, compare=False, metadata={"annotation": True})
