"""Pass 3d: tables -- keys, actions, default action, entries and the other properties.

What a table declares is summarized in a :class:`TableFacts` (keyed by the TableDecl in
``Checker.table_facts``), which the program summary and P4Info read instead of
re-interpreting the properties.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.core import Core, Ctx, describe_decl, is_unknown

_KEY_TYPES = (T.BitType, T.IntType, T.BoolType, T.EnumType, T.ErrorType, T.VarbitType)
#: properties other than the standard ones that v1model/BMv2 know
_KNOWN_OTHER = ("largest_priority_wins", "priority_delta", "psa_direct_counter", "psa_direct_meter",
                "psa_implementation", "psa_idle_timeout")
_MASKABLE = ("ternary", "lpm")
_WILDCARD = ("ternary", "lpm", "range", "optional")
_NOACTION = "NoAction"


@dataclass
class KeyFact:
    element: ast.KeyElement
    type: T.Type
    match_kind: str


@dataclass
class TableFacts:
    """What a table declares, checked."""

    fqn: str
    keys: list[KeyFact] = field(default_factory=list)
    actions: list[tuple[ast.ActionRef, ast.ActionDecl]] = field(default_factory=list)
    default_action: ast.ActionDecl | None = None
    default_action_expr: ast.Expression | None = None  # the PathExpr or CallExpr as written
    default_action_const: bool = False
    entries: list[ast.TableEntry] = field(default_factory=list)
    entries_const: bool = False
    size: int | None = None
    implementation: ast.Node | None = None  # InstantiationDecl or ConstructorCallExpr
    counters: ast.Node | None = None
    meters: ast.Node | None = None
    support_timeout: bool = False
    other: dict[str, ast.TableProperty] = field(default_factory=dict)


class TableChecker(Core):
    def check_table(self, t: ast.TableDecl, ctx: Ctx) -> None:
        if t in self.checked_tables:
            return
        self.checked_tables.add(t)
        facts = TableFacts(self.fqn_for_message(t))
        self.table_facts[t] = facts
        self.table_actions[t] = facts.actions
        if not isinstance(ctx.block, ast.ControlDecl):
            self.error(t.loc, f"table '{t.name}' must be declared inside a control")
        props: dict[str, ast.TableProperty] = {}
        for p in t.properties:
            if p.name in props:
                self.error(p.loc, f"duplicate property '{p.name}' in table '{facts.fqn}'")
            else:
                props[p.name] = p
        if "actions" not in props:
            self.error(t.loc, f"table '{facts.fqn}' has no actions property")
        elif "default_action" not in props:
            self._implicit_noaction(t, props, ctx)
        names = [p.name for p in t.properties]
        if "entries" in names and "key" in names and names.index("entries") < names.index("key"):
            self.error(props["entries"].loc, f"table '{facts.fqn}': the entries must come after the key")
        if "default_action" in names and "actions" in names \
                and names.index("default_action") < names.index("actions"):
            self.error(props["default_action"].loc,
                       f"table '{facts.fqn}': the default_action must come after the actions")
        order = ["key", "actions", "default_action", "entries"]
        for name in order + [n for n in props if n not in order]:
            p = props.get(name)
            if p is not None:
                self._property(t, p, facts, ctx)

    def _implicit_noaction(self, t: ast.TableDecl, props: dict[str, ast.TableProperty], ctx: Ctx) -> None:
        """A table without ``default_action`` gets ``default_action = NoAction()`` (not
        const), and ``@defaultonly NoAction`` in its actions unless it lists NoAction: the
        rewrite p4c's front end makes (CreateBuiltins), so the IR, P4Info and runtime see
        the table p4c's back ends see. The new nodes are located at the table's name."""
        found = self.lookup(_NOACTION, ctx, True)
        if not any(isinstance(d, ast.ActionDecl) for d in found.decls):
            self.error(t.loc, f"table '{t.name}' has no default_action, and there is no action NoAction "
                              "to be its implicit default (did you include core.p4?)")
            return
        actions = props["actions"]
        loc = t.loc
        if isinstance(actions, ast.ActionsProperty) and all(r.name.name != _NOACTION for r in actions.actions):
            actions.actions.append(ast.ActionRef(
                loc=loc, name=ast.PathExpr(loc=loc, name=_NOACTION, global_scope=True),
                annotations=[ast.Annotation(loc=loc, name="defaultonly")]))
        default = ast.ValueProperty(loc=loc, name="default_action", value=ast.CallExpr(
            loc=loc, method=ast.PathExpr(loc=loc, name=_NOACTION, global_scope=True)))
        t.properties.append(default)
        props["default_action"] = default

    def _property(self, t: ast.TableDecl, p: ast.TableProperty, facts: TableFacts, ctx: Ctx) -> None:
        if isinstance(p, ast.KeyProperty):
            self._keys(p, facts, ctx)
        elif isinstance(p, ast.ActionsProperty):
            self._actions(p, facts, ctx)
        elif isinstance(p, ast.EntriesProperty):
            self._entries(p, facts, ctx)
        elif isinstance(p, ast.ValueProperty):
            self._value_property(p, facts, ctx)
        else:
            self.error(p.loc, f"malformed table property '{p.name}'")

    # ------------------------------------------------------------------ key

    def _keys(self, p: ast.KeyProperty, facts: TableFacts, ctx: Ctx) -> None:
        lpm = 0
        for el in p.elements:
            kt = self.check_expr(el.expr, ctx)
            mk = self._match_kind(el.match_kind, ctx)
            if not is_unknown(kt) and not isinstance(T.underlying(kt), _KEY_TYPES):
                self.error(el.expr.loc, f"a table key cannot have type {kt}")
            if mk == "lpm":
                lpm += 1
                if lpm == 2:
                    self.error(el.match_kind.loc, f"table '{facts.fqn}' has more than one lpm key")
            if not _nameable_key(el.expr) and ast.find_annotation(el.annotations, "name") is None:
                self.error(el.expr.loc, "this key expression needs a @name annotation (P4Runtime names a key "
                                        "by its expression only for fields, slices, constants, '&' and isValid())")
            facts.keys.append(KeyFact(el, kt, mk or "?"))

    def _match_kind(self, mk: ast.PathExpr, ctx: Ctx) -> str | None:
        found = self.lookup(mk.name, ctx, mk.global_scope)
        d = found.decls[0] if found.decls else None
        if d is None:
            self.error(mk.loc, f"unknown match kind '{mk.name}'")
            return None
        if not (isinstance(d, ast.IdDecl) and self.match_kinds.get(d.name) is d):
            self.error(mk.loc, f"'{mk.name}' is not a match kind: it is the {describe_decl(d)}")
            return None
        mk.decl = d
        mk.type = T.MATCH_KIND
        return d.name

    # ------------------------------------------------------------------ actions

    def _resolve_action(self, ref_name: ast.PathExpr, ctx: Ctx) -> ast.ActionDecl | None:
        found = self.lookup(ref_name.name, ctx, ref_name.global_scope)
        d = found.decls[0] if found.decls else None
        if d is None:
            if found.later is not None:
                self.error(ref_name.loc, f"'{ref_name.name}' is used before its declaration")
            else:
                self.error(ref_name.loc, f"unknown action '{ref_name.name}'")
            return None
        if not isinstance(d, ast.ActionDecl):
            self.error(ref_name.loc, f"'{ref_name.name}' is not an action: it is the {describe_decl(d)}")
            return None
        ref_name.decl = d
        ref_name.type = self.decl_type(d)
        return d

    def _actions(self, p: ast.ActionsProperty, facts: TableFacts, ctx: Ctx) -> None:
        seen: set[ast.ActionDecl] = set()
        for ref in p.actions:
            d = self._resolve_action(ref.name, ctx)
            if d is None:
                continue
            if d in seen:
                self.error(ref.name.loc, f"action '{ref.name.name}' appears twice in table '{facts.fqn}'")
                continue
            seen.add(d)
            facts.actions.append((ref, d))
            directional = tuple(x for x in self.params_of(d) if x.direction is not None)
            if ref.args or directional:
                self.bind_args(ref, ref.name.name, directional, (), ctx)

    def _in_table(self, d: ast.ActionDecl | None, name: ast.PathExpr, facts: TableFacts) -> bool:
        if d is None:
            return False
        if all(d is not x for _, x in facts.actions):
            self.error(name.loc, f"'{name.name}' is not an action of table '{facts.fqn}'")
            return False
        return True

    def _default_action(self, p: ast.ValueProperty, facts: TableFacts, ctx: Ctx) -> None:
        v = p.value
        name = v.method if isinstance(v, ast.CallExpr) else v
        if not isinstance(name, ast.PathExpr):
            self.error(v.loc, "default_action must name an action of the table")
            return
        d = self._resolve_action(name, ctx)
        if not self._in_table(d, name, facts):
            return
        facts.default_action = d
        facts.default_action_expr = v
        facts.default_action_const = p.is_const
        params = self.params_of(d)
        if isinstance(v, ast.CallExpr):
            v.call_kind = ast.CallKind.ACTION
            self.bind_args(v, name.name, params, (), ctx)
            v.type = T.VOID
            self._constant_data_args(v, f"default action '{name.name}'")
        elif any(x.direction is None for x in params):
            self.error(v.loc, f"default action '{name.name}' needs arguments for its parameters: "
                              f"write {name.name}(...)")

    def _constant_data_args(self, node: ast.Node, what: str) -> None:
        for param, arg in getattr(node, "bound_args", ()):
            if param.direction is None and arg is not None and arg.const_value is None \
                    and not is_unknown(arg.type):
                self.error(arg.loc, f"argument '{param.name}' of {what} must be a compile-time constant")

    # ------------------------------------------------------------------ entries

    def _entries(self, p: ast.EntriesProperty, facts: TableFacts, ctx: Ctx) -> None:
        facts.entries = list(p.entries)
        facts.entries_const = p.is_const
        n = len(facts.keys)
        if n == 0 and p.entries:
            self.error(p.loc, f"table '{facts.fqn}' has entries but no key")
            return
        for e in p.entries:
            self._entry(e, facts, ctx)
        self._entry_priorities(p.entries, facts)

    def _entry(self, e: ast.TableEntry, facts: TableFacts, ctx: Ctx) -> None:
        keys = facts.keys
        if len(e.keys) == 1 and len(keys) > 1 and isinstance(e.keys[0], ast.DontCareExpr | ast.DefaultExpr):
            e.keys[0].type = T.TupleType(tuple(k.type for k in keys))
        elif len(e.keys) != len(keys):
            self.error(e.loc, f"entry has {len(e.keys)} key value(s), but table '{facts.fqn}' has {len(keys)} key(s)")
        else:
            for k, kf in zip(e.keys, keys):
                self._entry_key(k, kf, ctx)
        if e.priority is not None:
            self.const_int(e.priority, ctx, "entry priority")
        d = self._resolve_action(e.action.name, ctx)
        if not self._in_table(d, e.action.name, facts):
            return
        ref = next(r for r, x in facts.actions if x is d)
        if ast.find_annotation(ref.annotations, "defaultonly") is not None:
            self.error(e.action.loc, f"action '{e.action.name.name}' is @defaultonly in table '{facts.fqn}': "
                                     "an entry cannot use it")
        data = tuple(x for x in self.params_of(d) if x.direction is None)
        self.bind_args(e.action, e.action.name.name, data, (), ctx)
        self._constant_data_args(e.action, f"action '{e.action.name.name}'")

    def _entry_priorities(self, entries: list[ast.TableEntry], facts: TableFacts) -> None:
        """As p4c: explicit priorities only where a key needs them (ternary, range,
        optional), and then from the first entry on."""
        given = [e for e in entries if e.priority is not None]
        if not given:
            return
        if not any(k.match_kind in ("ternary", "range", "optional") for k in facts.keys):
            self.error(given[0].priority.loc, f"table '{facts.fqn}': its keys need no priorities "
                                              "(no ternary, range or optional key), but an entry gives one")
        elif entries[0].priority is None:
            self.error(entries[0].loc, f"table '{facts.fqn}': this entry needs a priority, since later "
                                       "entries give theirs")

    def _entry_key(self, k: ast.Expression, kf: KeyFact, ctx: Ctx) -> None:
        if is_unknown(kf.type):
            return
        mk = kf.match_kind
        if isinstance(k, ast.MaskExpr) and mk not in _MASKABLE:
            self.error(k.loc, f"a mask (&&&) needs a ternary or lpm key, but this key is {mk}")
        elif isinstance(k, ast.RangeExpr) and mk != "range":
            self.error(k.loc, f"a range (..) needs a range key, but this key is {mk}")
        elif isinstance(k, ast.DontCareExpr | ast.DefaultExpr) and mk not in _WILDCARD:
            self.error(k.loc, f"a wildcard needs a ternary, lpm, range or optional key, but this key is {mk}")
        self.check_keyset(k, kf.type, ctx, value_set_ok=False)
        if mk == "lpm" and isinstance(k, ast.MaskExpr) and isinstance(k.mask.const_value, int):
            width = T.width_of(T.underlying(kf.type))
            m = k.mask.const_value & ((1 << width) - 1)
            inv = ~m & ((1 << width) - 1)
            if inv & (inv + 1):  # the mask's ones must be a prefix
                self.error(k.mask.loc, f"mask {k.mask.const_value:#x} of an lpm key must be a prefix "
                                       "(ones followed by zeros)")

    # ------------------------------------------------------------------ others

    def _value_property(self, p: ast.ValueProperty, facts: TableFacts, ctx: Ctx) -> None:
        name = p.name
        if name == "default_action":
            self._default_action(p, facts, ctx)
        elif name == "size":
            size = self.const_int(p.value, ctx, "table size")
            if size is not None and size <= 0:
                self.error(p.value.loc, f"table size must be positive, got {size}")
            facts.size = size
        elif name in ("implementation", "counters", "meters"):
            self._attached(p, facts, ctx)
        elif name == "support_timeout":
            self.check_expr(p.value, ctx, T.BOOL)
            facts.support_timeout = p.value.const_value is True
        elif name in ("key", "actions", "entries"):
            self.error(p.loc, f"malformed table property '{name}'")
        else:
            if name not in _KNOWN_OTHER:
                self.diag.warning(p.loc, f"unknown table property '{name}' in table '{facts.fqn}' (ignored)")
            self.check_expr(p.value, ctx)
            facts.other[name] = p

    def _attached(self, p: ast.ValueProperty, facts: TableFacts, ctx: Ctx) -> None:
        wanted = {"implementation": ("action_profile", "action_selector"),
                  "counters": ("direct_counter",), "meters": ("direct_meter",)}[p.name]
        t = self.check_expr(p.value, ctx)
        if is_unknown(t):
            return
        if not isinstance(t, T.ExternType) or t.name not in wanted:
            self.error(p.value.loc, f"'{p.name}' of table '{facts.fqn}' must be an instance of "
                                    f"{' or '.join(wanted)}, got {t}")
            return
        target = p.value.decl if isinstance(p.value, ast.PathExpr) else p.value
        owner = self.direct_owner.get(target)
        if owner is not None and p.name != "implementation":
            self.error(p.value.loc, f"'{getattr(target, 'name', p.name)}' is already attached to table '{owner}'")
        self.direct_owner[target] = facts.fqn
        setattr(facts, p.name, target)


def _nameable_key(e: ast.Expression) -> bool:
    """Whether p4c's TableKeyNames can name key expression ``e`` (else it needs @name)."""
    if isinstance(e, ast.PathExpr | ast.IntLiteral):
        return True
    if isinstance(e, ast.MemberExpr):
        return _nameable_key(e.expr)
    if isinstance(e, ast.IndexExpr):
        return _nameable_key(e.expr) and _nameable_key(e.index)
    if isinstance(e, ast.SliceExpr):
        return _nameable_key(e.expr) and _nameable_key(e.hi) and _nameable_key(e.lo)
    if isinstance(e, ast.BinaryExpr):
        return e.op == "&" and _nameable_key(e.left) and _nameable_key(e.right)
    if isinstance(e, ast.CallExpr):
        m = e.method
        return not e.args and isinstance(m, ast.MemberExpr) and m.member == "isValid" and _nameable_key(m.expr)
    return False
