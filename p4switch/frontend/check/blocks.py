"""Pass 3e: instantiations -- extern objects, sub-parsers/controls and the package.

Constructor arguments are compile-time constants (they are folded into their
``const_value``). A package instantiation such as ``V1Switch(MyParser(), ...) main;``
checks every argument against the package parameter's parser/control type: same number
of parameters, same directions, and parameter types that unify with the package's type
parameters consistently across all arguments (``H`` is one headers type for all six
v1model blocks).
"""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.core import UNKNOWN, Core, Ctx, is_unknown


def _kind(t: T.Type) -> str:
    return {T.ParserType: "parser", T.ControlType: "control", T.PackageType: "package"}.get(type(t), "value")


_PROTOTYPES = (ast.ParserTypeDecl, ast.ControlTypeDecl)


class BlockChecker(Core):
    def instance_type(self, d: ast.InstantiationDecl) -> T.Type:
        ctx = self.decl_ctx.get(d) or Ctx(self.global_scope)
        t = self.construct(d, d.type_ref, ctx, d.name)
        d.instance_type = t
        if d.initializer:
            self.error(d.initializer[0].loc, "initializer blocks (abstract methods) are not supported")
        if isinstance(t, T.PackageType) and d.name == "main" and self.block_of.get(d) is None:
            self.main = d
        elif d.name == "main" and self.block_of.get(d) is None and not is_unknown(t):
            self.error(d.type_ref.loc, f"'main' must be an instance of a package, not of {t}")
        return t

    def check_constructor_call(self, e: ast.ConstructorCallExpr, ctx: Ctx) -> T.Type:
        e.call_kind = ast.CallKind.CONSTRUCTOR
        return self.construct(e, e.type_ref, ctx, None)

    def construct(self, node: ast.InstantiationDecl | ast.ConstructorCallExpr, type_ref: ast.TypeRef,
                  ctx: Ctx, name: str | None) -> T.Type:
        t = self.resolve(type_ref, ctx)
        if is_unknown(t):
            self._type_args_loosely(node, ctx)
            return UNKNOWN
        if isinstance(t, T.ExternType):
            return self._construct_extern(node, t, ctx)
        decl = getattr(t, "decl", None)
        if isinstance(t, T.ParserType | T.ControlType) and isinstance(decl, ast.ParserDecl | ast.ControlDecl):
            self.bind_args(node, t.name, t.ctor_params, (), ctx, extern=True)
            return t
        if isinstance(t, T.PackageType):
            return self._construct_package(node, t, ctx)
        if isinstance(decl, _PROTOTYPES):
            self.error(type_ref.loc, f"cannot instantiate {_kind(t)} type '{t.name}': it is only a prototype")
        else:
            self.error(type_ref.loc, f"cannot instantiate type {t}")
        self._type_args_loosely(node, ctx)
        return UNKNOWN

    def _construct_extern(self, node: ast.Node, t: T.ExternType, ctx: Ctx) -> T.Type:
        ctors = [m for m in t.decl.methods if m.is_constructor]
        if not ctors:
            self.error(node.loc, f"extern '{t.name}' has no constructor: it cannot be instantiated")
            return UNKNOWN
        abstract = [m.name for m in t.decl.methods if m.is_abstract]
        if abstract and not getattr(node, "initializer", None):
            self.error(node.loc, f"extern '{t.name}' has abstract methods ({', '.join(abstract)}): instantiate "
                                 "it with an initializer that implements them, not a plain constructor call")
        c = self.pick_overload(node, ctors)
        ct = self.decl_type(c)
        if is_unknown(ct):
            return UNKNOWN
        tvars = self.type_params_of(t.decl)
        if t.type_args:
            mapping = {v: a for v, a in zip(tvars, t.type_args) if not isinstance(a, T.DontCareType)}
            params = tuple(T.Parameter(p.name, p.direction, T.substitute(p.type, mapping), p.has_default, p.decl)
                           for p in ct.params)
            self.bind_args(node, t.name, params, (), ctx, extern=True)
            return t
        self.bind_args(node, t.name, ct.params, tvars, ctx, extern=True)
        args = getattr(node, "type_arg_types", ())
        return T.ExternType(t.name, t.decl, tuple(args)) if tvars else t

    def _construct_package(self, node: ast.Node, pt: T.PackageType, ctx: Ctx) -> T.Type:
        params = pt.params
        assign = self._assign(node, pt.name, params)
        if assign is None:
            self._type_args_loosely(node, ctx)
            return UNKNOWN
        binding: dict[T.TypeVar, T.Type] = {}
        for v, a in zip(pt.type_params, pt.type_args):
            if not isinstance(a, T.DontCareType | T.TypeVar):
                binding[v] = a
        for i, p in enumerate(params):
            arg = assign.get(i)
            if arg is None:
                continue
            at = self.check_expr(arg.value, ctx)
            if not is_unknown(at):
                self._block_argument(arg.value, p, at, binding, pt.name)
        node.bound_args = [(p, assign[i].value if i in assign else None) for i, p in enumerate(params)]
        node.type_arg_types = tuple(binding.get(v, UNKNOWN) for v in pt.type_params)
        args = tuple(binding.get(v, v) for v in pt.type_params)
        return self.specialize(pt, pt.type_params, args) if pt.type_params else pt

    def _block_argument(self, v: ast.Expression, p: T.Parameter, at: T.Type,
                        binding: dict[T.TypeVar, T.Type], pkg: str) -> None:
        pt = p.type
        if not isinstance(pt, T.BlockType):
            if not self.unify(pt, at, binding):
                self.error(v.loc, f"argument '{p.name}' of '{pkg}': "
                                  + self.mismatch_message(T.substitute(pt, binding), at, True))
            return
        want = T.substitute(pt, binding)
        if type(at) is not type(pt):
            got = f"{_kind(at)} '{at.name}'" if isinstance(at, T.BlockType) else f"a value of type {at}"
            self.error(v.loc, f"argument '{p.name}' of '{pkg}' must be a {_kind(pt)} of type {want}, got {got}")
            return
        prefix = f"{_kind(at)} '{at.name}' is not compatible with {want} (argument '{p.name}' of '{pkg}')"
        if len(at.params) != len(pt.params):
            self.error(v.loc, f"{prefix}: it has {len(at.params)} parameters, {want} has {len(pt.params)}")
            return
        for ap, pp in zip(at.params, pt.params):
            if ap.direction != pp.direction:
                self.error(v.loc, f"{prefix}: parameter '{ap.name}' is {ap.direction or 'directionless'}, "
                                  f"but {want} declares it {pp.direction or 'directionless'}")
                return
            if not self.unify(pp.type, ap.type, binding):
                self.error(v.loc, f"{prefix}: parameter '{ap.name}' has type {ap.type}, "
                                  f"expected {T.substitute(pp.type, binding)}")
                return
