"""Block instances: a parser or control declaration compiled for one instance.

A block instance has a scope (prefix = its P4Info name prefix), parameter storage, its
local declarations bound (variables get slots, actions are compiled on first use, tables
and extern instances are bound to the RuntimeState, sub-blocks are instantiated
recursively) and one body closure. The six v1model blocks get their parameters bound
directly to the shared root storage (hdr, meta, standard_metadata): no copies between
blocks. Sub-parser/sub-control instances get their own parameter slots and are called
with copy-in/copy-out like actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T

from .externs import ExternInst
from .layout import Storage
from .scope import Const, PacketArg, PipelineError, Scope, ValueSet, located
from .stmts import Callee, ParamSlot, catch_return, contains
from .tables import ActionBinding
from .templates import seq


@dataclass(eq=False)
class BlockInstance:
    """A compiled parser/control instance; ``callee.body`` runs it."""

    decl: ast.ParserDecl | ast.ControlDecl
    scope: Scope
    callee: Callee


def block_decl_of(e: Any, root: Scope) -> tuple[ast.ParserDecl | ast.ControlDecl | None, list[ast.Argument]]:
    """The parser/control declaration an instantiation or constructor call denotes."""
    if isinstance(e, ast.ConstructorCallExpr):
        return _decl_of_type(e.type_ref), e.args
    if isinstance(e, ast.InstantiationDecl):
        return _decl_of_type(e.type_ref), e.args
    if isinstance(e, ast.PathExpr) and isinstance(e.decl, ast.InstantiationDecl):
        return block_decl_of(e.decl, root)
    return None, []


def _decl_of_type(tr: Any) -> Any:
    for cand in (getattr(tr, "decl", None), getattr(getattr(tr, "type", None), "decl", None),
                 getattr(getattr(tr, "base", None), "decl", None)):
        if isinstance(cand, ast.ParserDecl | ast.ControlDecl):
            return cand
    return None


class BlockCompiler:
    """Mixin of the pipeline compiler: parser/control instances and their locals."""

    value_sets: dict[str, ValueSet]

    def instantiate_block(self, decl: ast.ParserDecl | ast.ControlDecl, prefix: str,
                          params: dict[ast.Param, Any] | None = None,
                          ctor_args: list[ast.Argument] | None = None,
                          outer: Scope | None = None) -> BlockInstance:
        root: Scope = self.root  # type: ignore[attr-defined]
        sc = Scope(root, prefix)
        sc.in_parser = isinstance(decl, ast.ParserDecl)
        self._bind_ctor_params(decl, sc, ctor_args or [], outer or root)
        slots: list[ParamSlot] = []
        for prm in decl.params:
            bound = params.get(prm) if params is not None else None
            if bound is None:
                t = prm.type_ref.type
                if isinstance(t, T.ExternType) and t.name in ("packet_in", "packet_out"):
                    bound = PacketArg("in" if t.name == "packet_in" else "out")
                else:
                    with located(prm.loc, f"parameter '{prm.name}'"):
                        bound = self.alloc.allocate(t, f"{prefix}.{prm.name}")  # type: ignore[attr-defined]
            sc.bind(prm, bound)
            slots.append(ParamSlot(prm, bound if isinstance(bound, Storage) else None, prm.direction))
        inits = self.declare_locals(decl.locals, sc)
        if isinstance(decl, ast.ParserDecl):
            body = self.parser_body(decl, sc, inits)  # type: ignore[attr-defined]
        else:
            main = self.block(decl.body.stmts, sc)  # type: ignore[attr-defined]
            if main is not None and contains(decl.body, ast.ReturnStmt):
                main = catch_return(main)
            body = seq([inits, main])
        callee = Callee(prefix, slots, body, decl)
        return BlockInstance(decl, sc, callee)

    def _bind_ctor_params(self, decl: Any, sc: Scope, args: list[ast.Argument], outer: Scope) -> None:
        ctor = getattr(decl, "ctor_params", []) or []
        if not ctor:
            return
        from .stmts import bind_arguments

        bound = bind_arguments(ctor, args, decl.loc)
        for prm, arg in zip(ctor, bound):
            if arg is None:
                arg = prm.default
            if arg is None:
                raise PipelineError(decl.loc, f"pipeline: constructor parameter '{prm.name}' has no value")
            instance = self._instance_arg(arg, outer)
            if instance is not None:  # `C2(c1) c2;`: the parameter is that very instance (shared)
                sc.bind(prm, instance)
                continue
            v = self.scalar(arg, outer)  # type: ignore[attr-defined]
            if not v.is_const:
                raise PipelineError(arg.loc, "pipeline: constructor arguments must be compile-time constants")
            sc.bind(prm, Const(v.val))

    @staticmethod
    def _instance_arg(arg: ast.Expression, outer: Scope) -> Any:
        """The parser/control/extern instance a constructor argument names, else None."""
        if not isinstance(arg, ast.PathExpr) or arg.decl is None:
            return None
        b = outer.find(arg.decl)
        return b if isinstance(b, BlockInstance | ExternInst) else None

    def declare_locals(self, decls: list[ast.Declaration], sc: Scope) -> Any:
        """Bind a block's local declarations; returns the variable initialisations."""
        inits = []
        tables = []
        for d in decls:
            with located(d.loc, f"declaration '{getattr(d, 'name', '?')}'"):
                if isinstance(d, ast.VarDecl | ast.ConstDecl):
                    inits.append(self.statement(d, sc))  # type: ignore[attr-defined]
                elif isinstance(d, ast.ActionDecl):
                    sc.bind(d, ActionBinding(d, sc, self))
                elif isinstance(d, ast.TableDecl):
                    tables.append(d)
                elif isinstance(d, ast.InstantiationDecl):
                    sc.bind(d, self.instantiate(d, sc))
                elif isinstance(d, ast.ValueSetDecl):
                    sc.bind(d, self._value_set(d, sc))
                elif isinstance(d, ast.FunctionDecl):
                    sc.bind(d, self.compile_callee(d, sc, sc.fqn(d)))  # type: ignore[attr-defined]
        for d in tables:
            with located(d.loc, f"table '{d.name}'"):
                sc.bind(d, self.compile_table(d, sc))  # type: ignore[attr-defined]
        return seq(inits)

    def instantiate(self, d: ast.InstantiationDecl, sc: Scope) -> Any:
        decl, args = block_decl_of(d, sc.root())
        if decl is not None:
            return self.instantiate_block(decl, sc.fqn(d), None, args, sc)
        inst = self.instantiate_extern(d, sc)  # type: ignore[attr-defined]
        if inst is None:
            raise PipelineError(d.loc, f"pipeline: cannot instantiate '{d.name}'")
        return inst

    def _value_set(self, d: ast.ValueSetDecl, sc: Scope) -> ValueSet:
        from .layout import scalar_info

        name = sc.fqn(d)
        et = d.element_type.type
        u = T.underlying(et)
        if isinstance(u, T.StructLikeType):
            widths = tuple(scalar_info(ft)[0] for _, ft in u.fields)
        elif isinstance(u, T.TupleType):
            widths = tuple(scalar_info(x)[0] for x in u.elements)
        else:
            widths = (scalar_info(et)[0],)
        size = d.size.const_value if isinstance(d.size.const_value, int) else 0
        backing = self.state.value_sets_by_name.get(name)  # type: ignore[attr-defined]
        if backing is None:
            vs = ValueSet.private(name, size, widths)
        else:
            if len(backing.fields) != len(widths) or any(f.bitwidth != w for f, w in zip(backing.fields, widths)):
                raise PipelineError(d.loc, f"pipeline: value set '{name}' has components of widths {list(widths)}, "
                                           f"the P4Info {[f.bitwidth for f in backing.fields]}")
            vs = ValueSet(name, widths, backing)
        self.value_sets[name] = vs
        return vs

    # ------------------------------------------------------------------ globals

    def resolve_global(self, decl: ast.Node) -> Any:
        """Root-scope binding of a top-level declaration, made on first use."""
        root: Scope = self.root  # type: ignore[attr-defined]
        if isinstance(decl, ast.ActionDecl):
            return ActionBinding(decl, root, self)
        if isinstance(decl, ast.FunctionDecl):
            return self.compile_callee(decl, root, decl.name)  # type: ignore[attr-defined]
        if isinstance(decl, ast.ConstDecl):
            t = decl.type_ref.type
            from .exprs import is_aggregate

            if is_aggregate(t):
                return Const(self.agg(decl.value, root, t)(None))  # type: ignore[attr-defined]
            v = self.scalar(decl.value, root)  # type: ignore[attr-defined]
            if not v.is_const:
                raise PipelineError(decl.loc, f"pipeline: constant '{decl.name}' is not a compile-time value")
            return Const(self.runtime_const(v.val, t, decl.loc))  # type: ignore[attr-defined]
        if isinstance(decl, ast.InstantiationDecl):
            return self.instantiate(decl, root)
        return None


__all__ = ["BlockCompiler", "BlockInstance", "ExternInst", "block_decl_of"]
