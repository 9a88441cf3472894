"""Pass 2: type resolution -- every TypeRef gets its semantic type (``TypeRef.type``).

Typedef chains collapse to the aliased type, ``type`` declarations become
:class:`~p4switch.frontend.types.NewType`, generic types are specialized by substituting
their type parameters, header-stack sizes and ``bit<W>`` widths are constant-folded.
Declarations are resolved lazily and memoized, so resolution order never matters and a
cycle (a struct containing itself) is reported instead of recursing.
"""

from __future__ import annotations

import p4switch.frontend.check.values as V
from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.core import TYPE_DECLS, UNKNOWN, Core, Ctx, describe_decl, is_unknown
from p4switch.frontend.check.exprs import constant_aggregate

_SIMPLE = {
    ast.BoolType: T.BOOL, ast.ErrorType: T.ERROR, ast.MatchKindType: T.MATCH_KIND,
    ast.StringType: T.STRING, ast.VoidType: T.VOID, ast.DontCareType: T.DONTCARE,
    ast.InfIntType: T.INFINT,
}

_HEADER_FIELD_TYPES = (T.BitType, T.IntType, T.VarbitType, T.BoolType)


class TypeResolver(Core):
    # ------------------------------------------------------------------ TypeRefs

    def resolve(self, tr: ast.TypeRef, ctx: Ctx) -> T.Type:
        """The semantic type of ``tr`` (also stored in ``tr.type``)."""
        simple = _SIMPLE.get(type(tr))
        if simple is not None:
            t: T.Type = simple
        elif isinstance(tr, ast.BitsType):
            t = self._bits(tr, ctx)
        elif isinstance(tr, ast.TypeName):
            t = self._type_name(tr, ctx)
        elif isinstance(tr, ast.SpecializedType):
            t = self._specialized(tr, ctx)
        elif isinstance(tr, ast.HeaderStackType):
            t = self._stack(tr, ctx)
        elif isinstance(tr, ast.TupleType):
            t = T.TupleType(tuple(self.resolve(e, ctx) for e in tr.elements))
            for e, et in zip(tr.elements, t.elements):
                if isinstance(et, T.ExternType | T.BlockType | T.TableType):
                    self.error(e.loc, f"{et} cannot be a tuple element")
                    t = UNKNOWN
                    break
        elif isinstance(tr, ast.VarbitType):
            w = self.const_int(tr.width, ctx, "width of varbit")
            problem = None if w is None else V.width_problem(w, f"varbit<{w}>")
            if w is not None and w < 1:
                problem = f"width of varbit<{w}> must be positive"
            if problem is not None:
                self.error(tr.width.loc, problem)
            t = UNKNOWN if w is None or problem is not None else T.VarbitType(w)
        else:
            self.error(tr.loc, f"unsupported type syntax {type(tr).__name__}")
            t = UNKNOWN
        tr.type = t
        return t

    def _bits(self, tr: ast.BitsType, ctx: Ctx) -> T.Type:
        kind = "int" if tr.signed else "bit"
        w = self.const_int(tr.width, ctx, f"width of {kind}<...>")
        if w is None:
            return UNKNOWN
        if w < (1 if tr.signed else 0):
            self.error(tr.width.loc, f"width of {kind}<{w}> must be positive")
            return UNKNOWN
        problem = V.width_problem(w, f"the width of {kind}<...>")
        if problem is not None:
            self.error(tr.width.loc, problem)
            return UNKNOWN
        return T.IntType(w) if tr.signed else T.BitType(w)

    def _named_decl(self, tr: ast.TypeName, ctx: Ctx) -> ast.Declaration | None:
        found = self.lookup(tr.name, ctx, tr.global_scope)
        decls = [d for d in found.decls if isinstance(d, TYPE_DECLS)]
        if decls:
            tr.decl = decls[0]
            return decls[0]
        if found.decls:
            self.error(tr.loc, f"'{tr.name}' is not a type: it is the {describe_decl(found.decls[0])}")
        else:
            self.report_unknown(tr.name, tr.loc, found, "type")
        return None

    def _type_name(self, tr: ast.TypeName, ctx: Ctx) -> T.Type:
        if tr.name == "error" and not tr.global_scope:
            return T.ERROR
        decl = self._named_decl(tr, ctx)
        if decl is None:
            return UNKNOWN
        t = self.decl_type(decl)
        if isinstance(t, T.StructLikeType) and getattr(decl, "type_params", None):
            self.error(tr.loc, f"generic type '{tr.name}' needs type arguments")
            return UNKNOWN
        return t

    def _specialized(self, tr: ast.SpecializedType, ctx: Ctx) -> T.Type:
        decl = self._named_decl(tr.base, ctx)
        args = tuple(self.resolve(a, ctx) for a in tr.args)
        if decl is None:
            return UNKNOWN
        base = self.decl_type(decl)
        tr.base.type = base
        tvars = self.type_params_of(decl)
        if len(tvars) != len(args):
            self.error(tr.loc, f"wrong number of type arguments to '{tr.base.name}': "
                               f"expected {len(tvars)}, got {len(args)}")
            return UNKNOWN
        if is_unknown(base, *args):
            return UNKNOWN
        for a, at in zip(tr.args, args):
            if isinstance(at, T.BlockType | T.TableType):
                self.error(a.loc, f"{at} cannot be a type argument (p4c: parsers, controls, packages and "
                                  "tables are not types of values)")
                return UNKNOWN
        return self.specialize(base, tvars, args)

    def specialize(self, base: T.Type, tvars: tuple[T.TypeVar, ...], args: tuple[T.Type, ...]) -> T.Type:
        """``base`` (a generic declaration's type) with ``tvars`` bound to ``args``."""
        mapping = {v: a for v, a in zip(tvars, args) if not isinstance(a, T.DontCareType)}
        if isinstance(base, T.ExternType):
            return T.ExternType(base.name, base.decl, args)
        if isinstance(base, T.StructLikeType):
            fields = tuple((n, T.substitute(ft, mapping)) for n, ft in base.fields)
            return type(base)(base.name, base.decl, fields, args)
        if isinstance(base, T.BlockType):
            return type(base)(
                base.name, base.decl,
                tuple(T.Parameter(p.name, p.direction, T.substitute(p.type, mapping), p.has_default, p.decl)
                      for p in base.params),
                base.type_params, args, base.ctor_params,
            )
        return T.substitute(base, mapping)

    def _stack(self, tr: ast.HeaderStackType, ctx: Ctx) -> T.Type:
        elem = self.resolve(tr.element, ctx)
        size = self.const_int(tr.size, ctx, "header stack size")
        if size is None or is_unknown(elem):
            return UNKNOWN
        if not T.is_header_like(elem) and not isinstance(elem, T.TypeVar):
            self.error(tr.element.loc, f"header stack element must be a header or header union, got {elem}")
            return UNKNOWN
        if size <= 0:
            self.error(tr.size.loc, f"header stack size must be positive, got {size}")
            return UNKNOWN
        return T.HeaderStackType(elem, size)

    # ------------------------------------------------------------------ declarations

    def type_params_of(self, decl: ast.Node) -> tuple[T.TypeVar, ...]:
        return tuple(self.decl_type(tp) for tp in getattr(decl, "type_params", ()))  # type: ignore[misc]

    def decl_type(self, decl: ast.Node) -> T.Type:
        """The type a declaration denotes (for type declarations) or has (for values)."""
        t = self.decl_types.get(decl)
        if t is not None:
            return t
        if decl in self.resolving:
            self.error(decl.loc, f"recursive definition of '{getattr(decl, 'name', '?')}'")
            return UNKNOWN
        self.resolving.add(decl)
        try:
            t = self._compute_decl_type(decl)
        finally:
            self.resolving.discard(decl)
        self.decl_types[decl] = t
        return t

    def _ctx(self, decl: ast.Node) -> Ctx:
        return self.decl_ctx.get(decl) or Ctx(self.global_scope)

    def _compute_decl_type(self, d: ast.Node) -> T.Type:
        if isinstance(d, ast.TypeParam):
            return T.TypeVar(d.name, d)
        if isinstance(d, ast.TypedefDecl):
            return self.resolve(d.type_ref, self._ctx(d))
        if isinstance(d, ast.NewTypeDecl):
            base = self.resolve(d.type_ref, self._ctx(d))
            if not is_unknown(base) and not isinstance(base, T.BitType | T.IntType | T.BoolType | T.NewType):
                self.error(d.type_ref.loc, f"'type {base} {d.name}': a new type needs a bit<W>, int<W>, "
                                           "bool or another new type underneath")
            return T.NewType(d.name, d, base)
        if isinstance(d, ast.StructLikeDecl):
            return self._struct_like(d)
        if isinstance(d, ast.EnumDecl):
            return self._enum(d)
        if isinstance(d, ast.ExternDecl):
            return T.ExternType(d.name, d)
        if isinstance(d, ast.ParserTypeDecl | ast.ParserDecl):
            return self._block(T.ParserType, d)
        if isinstance(d, ast.ControlTypeDecl | ast.ControlDecl):
            return self._block(T.ControlType, d)
        if isinstance(d, ast.PackageTypeDecl):
            return self._block(T.PackageType, d)
        if isinstance(d, ast.ActionDecl):
            return T.ActionType(d.name, d, self.params_of(d))
        if isinstance(d, ast.FunctionDecl):
            self._no_optional(d.params)
        if isinstance(d, ast.FunctionDecl | ast.ExternFunctionDecl):
            ret = self.resolve(d.return_type, Ctx(self.scope_of[d]) if d in self.scope_of else self._ctx(d))
            return T.FunctionType(d.name, d, self.params_of(d), ret, self.type_params_of(d))
        if isinstance(d, ast.MethodDecl):
            return self._method(d)
        if isinstance(d, ast.TableDecl):
            return T.TableType(d.name, d)
        if isinstance(d, ast.ValueSetDecl):
            return self._value_set(d)
        if isinstance(d, ast.Param):
            return self._param_type(d)
        if isinstance(d, ast.VarDecl | ast.ConstDecl | ast.StructField):
            return self.resolve(d.type_ref, self._ctx(d))
        if isinstance(d, ast.ParserState):
            return T.StateType(d.name, d)
        if isinstance(d, ast.IdDecl):
            return T.MATCH_KIND if d.name in self.match_kinds and self.match_kinds[d.name] is d else T.ERROR
        if isinstance(d, ast.EnumMember):
            return self.decl_type(self.enum_of_member[d])
        if isinstance(d, ast.InstantiationDecl):
            return self.instance_type(d)
        return UNKNOWN

    def _param_type(self, p: ast.Param) -> T.Type:
        ctx = self._ctx(p)
        t = self.resolve(p.type_ref, ctx)
        if p.direction is not None and isinstance(t, T.ExternType | T.StringType):
            self.error(p.type_ref.loc, f"parameter '{p.name}': a parameter of type {t} cannot have a "
                                       f"direction ('{p.direction}')")
        if p.direction in ("out", "inout") and p.default is not None:
            self.error(p.default.loc, f"parameter '{p.name}': {p.direction} parameters cannot have default values")
        if isinstance(t, T.ParserType | T.ControlType) and isinstance(t.decl, ast.ParserDecl | ast.ControlDecl):
            self.error(p.type_ref.loc, f"parameter '{p.name}' cannot have type {_kind_of(t)} {t.name}: "
                                       "that is a declaration, not a type (declare a prototype)")
        if p.default is not None:
            self.check_expr(p.default, ctx, None if is_unknown(t) else t)
            if p.default.const_value is None and not is_unknown(p.default.type) \
                    and not constant_aggregate(p.default):
                self.error(p.default.loc, f"the default value of parameter '{p.name}' must be a compile-time constant")
        return t

    def params_of(self, decl: ast.Node) -> tuple[T.Parameter, ...]:
        return tuple(self.parameter(p) for p in getattr(decl, "params", ()))

    def parameter(self, p: ast.Param) -> T.Parameter:
        t = self.decl_type(p)
        has_default = p.default is not None or ast.find_annotation(p.annotations, "optional") is not None
        return T.Parameter(p.name, p.direction, t, has_default, p)

    def _block(self, cls: type[T.BlockType], d: ast.Declaration) -> T.Type:
        ctor = tuple(self.parameter(p) for p in getattr(d, "ctor_params", ()))
        self._unique_block_names(d)
        if cls is not T.PackageType:
            self._no_optional([*getattr(d, "params", ()), *getattr(d, "ctor_params", ())])
        if cls is not T.PackageType:
            for p in getattr(d, "params", ()):
                pt = self.decl_type(p)
                if isinstance(pt, T.ParserType | T.ControlType):
                    self.error(p.type_ref.loc, f"parameter '{p.name}' of '{d.name}' cannot have type "
                                               f"{_kind_of(pt)} {pt.name} (blocks are constructor parameters)")
        return cls(d.name, d, self.params_of(d), self.type_params_of(d), (), ctor)

    def _no_optional(self, params: list[ast.Param]) -> None:
        """``@optional`` is for extern functions, methods and constructors (p4c)."""
        for p in params:
            ann = ast.find_annotation(p.annotations, "optional")
            if ann is not None:
                self.error(ann.loc, f"parameter '{p.name}': @optional is only allowed on parameters of externs")

    def _unique_block_names(self, d: ast.Declaration) -> None:
        """Type parameters share one namespace with the parameters (duplicates among the
        parameters and constructor parameters are the collector's to report)."""
        tparams = {tp.name for tp in getattr(d, "type_params", ())}
        for x in [*getattr(d, "params", ()), *getattr(d, "ctor_params", ())]:
            if x.name in tparams:
                self.error(x.loc, f"'{x.name}' is declared twice in the signature of '{d.name}'")

    def _method(self, m: ast.MethodDecl) -> T.Type:
        extern = self.extern_of_method.get(m)
        if extern is not None and m.name == extern.name and m.return_type is not None:
            self.error(m.return_type.loc, f"constructor of '{extern.name}' cannot have a return type")
        owner = self.decl_type(extern) if extern is not None else None
        ctx = self._ctx(m)
        ret = T.VOID if m.return_type is None else self.resolve(m.return_type, ctx)
        return T.MethodType(m.name, m, self.params_of(m), ret, self.type_params_of(m), owner)

    def _value_set(self, d: ast.ValueSetDecl) -> T.Type:
        ctx = self._ctx(d)
        elem = self.resolve(d.element_type, ctx)
        size = self.const_int(d.size, ctx, "value_set size")
        return T.ValueSetType(d.name, d, elem, size or 0)

    # ------------------------------------------------------------------ aggregates

    def _struct_like(self, d: ast.StructLikeDecl) -> T.Type:
        ctx = Ctx(self.scope_of[d]) if d.type_params and d in self.scope_of else self._ctx(d)
        seen: dict[str, ast.StructField] = {}
        fields: list[T.Field] = []
        for f in d.fields:
            ft = self.resolve(f.type_ref, ctx)
            self.decl_types[f] = ft
            if f.name in seen:
                self.error(self.name_loc(f), f"duplicate field '{f.name}' in '{d.name}'")
                continue
            seen[f.name] = f
            fields.append((f.name, ft))
            if not is_unknown(ft):
                self._check_field(d, f, ft)
        varbits = [f for f in d.fields if isinstance(self.decl_types.get(f), T.VarbitType)]
        if isinstance(d, ast.HeaderDecl) and len(varbits) > 1:  # structs may hold several (p4c)
            self.error(self.name_loc(varbits[1]), f"header '{d.name}' has more than one varbit field")
        cls = {ast.HeaderDecl: T.HeaderType, ast.HeaderUnionDecl: T.HeaderUnionType}.get(type(d), T.StructType)
        return cls(d.name, d, tuple(fields))

    def _check_field(self, d: ast.StructLikeDecl, f: ast.StructField, ft: T.Type) -> None:
        kind = {ast.HeaderDecl: "header", ast.HeaderUnionDecl: "header union"}.get(type(d), "struct")
        if isinstance(d, ast.HeaderUnionDecl):
            ok = isinstance(ft, T.HeaderType)
        elif isinstance(d, ast.HeaderDecl):
            base = T.underlying(ft)
            ok = isinstance(base, T.TypeVar) or _header_field_ok(base)
        else:
            ok = not isinstance(ft, T.VoidType | T.InfIntType | T.ExternType | T.BlockType | T.StringType)
        if not ok:
            self.error(f.type_ref.loc,
                       f"field '{f.name}' of {kind} '{d.name}' cannot have type {ft}")

    def _enum(self, d: ast.EnumDecl) -> T.Type:
        ctx = self._ctx(d)
        underlying = None
        if d.underlying is not None:
            u = self.resolve(d.underlying, ctx)
            if isinstance(u, T.BitType | T.IntType):
                underlying = u
            elif not is_unknown(u):
                self.error(d.underlying.loc, f"enum '{d.name}' must have a bit<W> or int<W> type, not {u}")
        names: list[str] = []
        values: list[tuple[str, int]] = []
        for m in d.members:
            if m.name in names:
                self.error(self.name_loc(m), f"duplicate member '{m.name}' in enum '{d.name}'")
                continue
            names.append(m.name)
            if underlying is not None:
                values.append((m.name, self._enum_value(d, m, underlying, ctx)))
            elif m.value is not None:
                self.error(m.value.loc, f"member '{m.name}' of enum '{d.name}' has a value, "
                                        "but the enum has no underlying type")
        if d.underlying is not None and underlying is None:
            return UNKNOWN
        return T.EnumType(d.name, d, tuple(names), underlying, tuple(values))

    def _enum_value(self, d: ast.EnumDecl, m: ast.EnumMember, u: T.Type, ctx: Ctx) -> int:
        if m.value is None:
            self.error(m.loc, f"member '{m.name}' of serializable enum '{d.name}' needs a value")
            return 0
        self.check_expr(m.value, ctx, u)
        v = m.value.const_value
        if not isinstance(v, int) or isinstance(v, bool):
            if not is_unknown(m.value.type):
                self.error(m.value.loc, f"value of enum member '{m.name}' must be a compile-time constant")
            return 0
        m.value.const_value = v
        return v


def _kind_of(t: T.Type) -> str:
    return "parser" if isinstance(t, T.ParserType) else "control"


def _header_field_ok(t: T.Type) -> bool:
    """A header field is a bit string, bool, serializable enum, or a struct of those
    (nested structs allowed, as p4c allows)."""
    base = T.underlying(t)
    if isinstance(base, _HEADER_FIELD_TYPES):
        return True
    if isinstance(base, T.EnumType) and base.underlying is not None:
        return True
    if isinstance(base, T.StructType):
        return all(_header_field_ok(ft) for _, ft in base.fields)
    return False
