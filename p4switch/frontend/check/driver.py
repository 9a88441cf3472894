"""The checker: the passes in order, over one shared state."""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.blocks import BlockChecker
from p4switch.frontend.check.calls import CallChecker
from p4switch.frontend.check.collect import Collector
from p4switch.frontend.check.core import Ctx, is_unknown
from p4switch.frontend.check.direct import instantiate_direct_calls
from p4switch.frontend.check.exprs import ExprChecker
from p4switch.frontend.check.program import CheckedProgram, Summarizer
from p4switch.frontend.check.resolve import TypeResolver
from p4switch.frontend.check.stmts import StmtChecker
from p4switch.frontend.check.tables import TableChecker
from p4switch.frontend.errors import P4Error, P4ErrorGroup, iter_errors


class CheckErrors(P4ErrorGroup):
    """All the errors the checker found (``errors``), sorted by position."""


_TYPE_LIKE = (
    ast.TypedefDecl, ast.NewTypeDecl, ast.StructLikeDecl, ast.EnumDecl, ast.ExternDecl,
    ast.ParserTypeDecl, ast.ControlTypeDecl, ast.PackageTypeDecl, ast.ExternFunctionDecl,
)


_NUMERIC_ANNOTATIONS = ("field_list", "id", "priority")


class Checker(Collector, TypeResolver, ExprChecker, CallChecker, StmtChecker, TableChecker, BlockChecker):
    def run(self) -> CheckedProgram:
        instantiate_direct_calls(self.program)  # p4c's InstantiateDirectCalls
        self.collect()  # pass 1: scopes
        self.resolve_declarations()  # pass 2: types of declarations and signatures
        self.check_bodies()  # pass 3: expressions, statements, tables, instances
        self.check_annotations()
        self.check_top_level_blocks()
        for d in self.program.declarations:
            if isinstance(d, ast.ParserDecl):
                self._parser_ends(d)
        for d in self.program.declarations:
            if d.name == "main" and not isinstance(d, ast.InstantiationDecl):
                self.error(d.loc, "'main' must be a package instantiation, not a type or other declaration")
        if not self.diag.errors:
            self.remove_unapplied_tables()
        if self.main is None and not self.diag.errors:
            self.diag.warning(None, "the program has no 'main' package instantiation")
        summary = Summarizer(self).build()  # pass 4: names, instances, digests
        self._raise()
        return summary

    def resolve_declarations(self) -> None:
        for d in self.program.declarations:
            if isinstance(d, _TYPE_LIKE):
                self.decl_type(d)
                if isinstance(d, ast.ExternDecl):
                    seen: dict[tuple, ast.MethodDecl] = {}
                    for m in d.methods:
                        mt = self.decl_type(m)
                        sig = (m.name, tuple((p.direction, p.type) for p in getattr(mt, "params", ())))
                        if sig in seen:
                            self.error(m.loc, f"'{m.name}' of extern '{d.name}' is declared twice with the "
                                              f"same parameters (the other is at {seen[sig].loc})")
                        seen.setdefault(sig, m)
            elif isinstance(d, ast.ParserDecl | ast.ControlDecl | ast.ActionDecl | ast.FunctionDecl):
                self.decl_type(d)

    def check_bodies(self) -> None:
        for d in self.program.declarations:
            if isinstance(d, ast.ConstDecl):
                self.check_const_decl(d)
            elif isinstance(d, ast.InstantiationDecl):
                self.decl_type(d)
            elif isinstance(d, ast.ActionDecl):
                self.check_action(d, None)
            elif isinstance(d, ast.FunctionDecl):
                self.check_function(d)
            elif isinstance(d, ast.ParserDecl):
                self.check_parser(d)
            elif isinstance(d, ast.ControlDecl):
                self.check_control(d)
            elif isinstance(d, ast.VarDecl):
                self.error(d.loc, f"variable '{d.name}' cannot be declared at top level (use a constant)")
            elif isinstance(d, ast.TableDecl):
                self.error(d.loc, f"table '{d.name}' must be declared inside a control")
            elif isinstance(d, ast.ValueSetDecl):
                self.error(d.loc, f"value set '{d.name}' must be declared inside a parser")

    def _parser_ends(self, d: ast.ParserDecl) -> None:
        """A parser whose ``start`` reaches neither ``accept`` nor ``reject`` never ends (p4c
        refuses it). A state without a transition goes to reject."""
        states = {s.name: s for s in d.states}
        todo, seen = ["start"], set()
        while todo:
            name = todo.pop()
            if name in ("accept", "reject"):
                return
            st = states.get(name)
            if st is None:
                return  # an unknown state: reported where it is named
            if name in seen:
                continue
            seen.add(name)
            target = st.transition.target if st.transition is not None else None
            if target is None:
                return  # falls through to reject
            if isinstance(target, ast.PathExpr):
                todo.append(target.name)
            elif isinstance(target, ast.SelectExpr):
                todo += [c.state.name for c in target.cases]
                return_ok = not any(isinstance(k, ast.DefaultExpr | ast.DontCareExpr)
                                    for c in target.cases for k in c.keys)
                if return_ok:
                    return  # no default case: a packet that matches none is rejected
        if "start" in states:
            self.error(d.loc, f"parser '{d.name}' never reaches accept or reject")

    def check_top_level_blocks(self) -> None:
        """p4c refuses a parser or control instantiated at top level. p4switch accepts one
        that is only passed to a package (``MyIngress() ig; V1Switch(..., ig, ...) main;``,
        docs/reference/p4switch.md) and reports any other, e.g. one applied from a control."""
        tops = {d: t for d in self.program.declarations if isinstance(d, ast.InstantiationDecl)
                and isinstance(t := self.decl_types.get(d), T.ParserType | T.ControlType)}
        if not tops:
            return
        used_elsewhere = {n.decl for n in ast.walk(self.program) if isinstance(n, ast.PathExpr)
                          and n.decl in tops and not self._package_argument(n)}
        for d in tops:
            if d in used_elsewhere:
                kind = "parser" if isinstance(tops[d], T.ParserType) else "control"
                self.error(d.loc, f"'{d.name}': a {kind} cannot be instantiated at top level "
                                  "(instantiate it inside the block that applies it)")

    def _package_argument(self, n: ast.PathExpr) -> bool:
        return any(a.value is n for d in self.program.declarations if isinstance(d, ast.InstantiationDecl)
                   and isinstance(self.decl_types.get(d), T.PackageType) for a in d.args)

    def remove_unapplied_tables(self) -> None:
        """Remove the tables no apply block applies from their controls, with a warning, as
        p4c's front end does (RemoveAllUnusedDeclarations): they are not in P4Info, and the
        pipeline does not build them. Their actions stay declared (P4Info lists an action
        only through a table or a call)."""
        controls = [d for d in self.program.declarations
                    if isinstance(d, ast.ControlDecl) and any(isinstance(x, ast.TableDecl) for x in d.locals)]
        applied = {t for c in controls for t in _applied_tables(c.body)}  # only apply blocks apply
        todo = list(applied)
        while todo:  # a table applied in the key of an applied table (p4c hoists it) is applied too
            for t in _applied_tables(todo.pop().key or []) - applied:
                applied.add(t)
                todo.append(t)
        for d in controls:
            kept = []
            for x in d.locals:
                if isinstance(x, ast.TableDecl) and x not in applied:
                    self.diag.warning(x.loc, f"table '{x.name}' is never applied; it is removed (as p4c does)")
                else:
                    kept.append(x)
            d.locals = kept

    def check_annotations(self) -> None:
        """Fold the arguments of the annotations whose values later stages use as numbers
        (``@field_list(N)``, ``@id(N)``, ``@priority(N)``): they must be constants."""
        ctx = Ctx(self.global_scope)
        kinds = {m.name for d in self.program.declarations if isinstance(d, ast.MatchKindDecl) for m in d.members}
        for node in ast.walk(self.program):
            self._annotation_shapes(getattr(node, "annotations", ()))
            self._match_annotations(getattr(node, "annotations", ()), kinds)
            for ann in getattr(node, "annotations", ()):
                if ann.name not in _NUMERIC_ANNOTATIONS or not ann.args:
                    continue
                for arg in ann.args:
                    self.const_int(arg, ctx, f"the argument of @{ann.name}")

    def _match_annotations(self, anns: list[ast.Annotation], kinds: set[str]) -> None:
        """p4c's ValidateMatchAnnotations: ``@match(k)`` names one match_kind."""
        for ann in anns:
            if ann.name != "match":
                continue
            args = ann.args or []
            if len(args) != 1:
                self.error(ann.loc, "@match takes exactly one argument, a match_kind")
            elif not (isinstance(args[0], ast.PathExpr) and args[0].name in kinds):
                self.error(args[0].loc, f"@match({' '.join(ann.tokens)}): the value must be a match_kind "
                                        f"({', '.join(sorted(kinds))})")

    def _annotation_shapes(self, anns: list[ast.Annotation]) -> None:
        """What p4c checks of annotations: ``@name`` takes one string; a structured
        annotation appears once per name, its keys are unique and its values are string,
        integer or boolean constants."""
        structured: set[str] = set()
        for ann in anns:
            if ann.name in ("name", "deprecated") and ann.string_arg() is None:
                self.error(ann.loc, f"@{ann.name} takes one string argument")
            if ann.structured and ann.args is not None:
                for arg in ann.args:
                    self._structured_value(ann, ast.KeyValue(loc=arg.loc, name=str(ann.args.index(arg)),
                                                             value=arg))
            if ann.kv is None:
                continue
            if ann.name not in structured and sum(a.name == ann.name for a in anns) > 1:
                self.error(ann.loc, f"@{ann.name}: a structured annotation must be the only one of its name")
            structured.add(ann.name)
            keys: set[str] = set()
            for kv in ann.kv:
                if kv.name in keys:
                    self.error(kv.loc, f"@{ann.name}: duplicate key '{kv.name}'")
                keys.add(kv.name)
                self._structured_value(ann, kv)

    def _structured_value(self, ann: ast.Annotation, kv: ast.KeyValue) -> None:
        """A structured annotation's value: a string, integer or boolean constant."""
        bad = f"@{ann.name}: the value of '{kv.name}' must be a string, integer or boolean constant"
        if isinstance(kv.value, ast.ListExpr | ast.StructExpr):
            self.error(kv.value.loc, bad)
            return
        before = len(self.diag.errors)
        t = self.check_expr(kv.value, Ctx(self.global_scope))
        if len(self.diag.errors) > before or is_unknown(t):
            return
        v = kv.value.const_value
        if not isinstance(v, bool | int | str) or isinstance(T.underlying(t), T.EnumType):
            self.error(kv.value.loc, bad)

    def _raise(self) -> None:
        if self.diag.errors:
            errs = sorted(self.diag.errors, key=lambda e: (e.loc.file, e.loc.line, e.loc.col))
            raise CheckErrors(errs)


def check_program(program: ast.Program) -> CheckedProgram:
    """Check ``program`` and annotate it in place (the IR); raise :class:`CheckErrors`
    with every error found."""
    checker = Checker(program)
    try:
        return checker.run()
    except CheckErrors:
        raise
    except P4Error as err:  # the diagnostic bag's limit was reached
        errs = checker.diag.errors or list(iter_errors(err))
        raise CheckErrors(sorted(errs, key=lambda e: (e.loc.file, e.loc.line, e.loc.col))) from None


def _applied_tables(node: ast.Node | list) -> set[ast.Node]:
    """The tables ``node`` applies, outside branches the checker folded away."""
    nodes = node if isinstance(node, list) else [node]
    return {n.method.expr.decl for root in nodes for n in ast.walk_live(root)
            if isinstance(n, ast.CallExpr) and n.call_kind == ast.CallKind.TABLE_APPLY
            and isinstance(n.method, ast.MemberExpr) and isinstance(n.method.expr, ast.PathExpr)}
