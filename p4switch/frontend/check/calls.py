"""Pass 3b: calls -- overload choice, argument matching, directions, generic inference.

A call is matched in three steps: the overload whose parameter count (and names, for
named arguments) fits; then each argument against its parameter (``out``/``inout``
arguments must be writable and of exactly the parameter's type; ``in`` arguments convert
like assignments); type parameters not given explicitly are inferred by unifying the
parameter types with the argument types (an ``int`` constant only fixes a type variable
nothing else fixes).

Annotations beyond the ast contract: ``CallExpr.type_arg_types`` (the types bound to the
callee's type parameters, in order) and ``CallExpr.bound_args`` (one
``(types.Parameter, Expression | None)`` per callee parameter, in parameter order,
None where the parameter's default applies), so later passes never re-match names.
"""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check.core import UNKNOWN, Core, Ctx, describe_decl, is_unknown
from p4switch.frontend.check.exprs import SIZE_METHODS, _fixed

PACKET_EXTERNS = ("packet_in", "packet_out")


class CallChecker(Core):
    def check_call(self, call: ast.CallExpr, ctx: Ctx, expected: T.Type | None = None) -> T.Type:
        m = call.method
        if isinstance(m, ast.PathExpr):
            return self._call_path(call, m, ctx)
        if isinstance(m, ast.MemberExpr):
            return self._call_member(call, m, ctx)
        t = self.check_expr(m, ctx)
        if not is_unknown(t):
            self.error(m.loc, "this expression cannot be called")
        self._type_args_loosely(call, ctx)
        return UNKNOWN

    def _type_args_loosely(self, call: ast.CallExpr, ctx: Ctx) -> None:
        """Type the arguments of a call that failed, to report errors inside them too."""
        for a in call.args:
            if not isinstance(a.value, ast.DontCareExpr):
                self.check_expr(a.value, ctx)

    # ------------------------------------------------------------------ f(...)

    def _call_path(self, call: ast.CallExpr, m: ast.PathExpr, ctx: Ctx) -> T.Type:
        found = self.lookup(m.name, ctx, m.global_scope)
        if not found.decls:
            if m.name in SIZE_METHODS and found.later is None and len(call.args) == 1:
                return self._size_builtin(call, m.name, call.args[0].value, ctx)
            self.report_unknown(m.name, m.loc, found)
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        first = found.decls[0]
        if isinstance(first, ast.ActionDecl):
            return self._call_action(call, m, first, ctx)
        callables = [d for d in found.decls if isinstance(d, ast.FunctionDecl | ast.ExternFunctionDecl)]
        if callables:
            return self._call_function(call, m, callables, ctx)
        m.decl = first
        if isinstance(first, ast.TableDecl):
            self.error(m.loc, f"table '{m.name}' cannot be called: use '{m.name}.apply()'")
        else:
            self.error(m.loc, f"'{m.name}' is not a function or an action: it is the {describe_decl(first)}")
        self._type_args_loosely(call, ctx)
        return UNKNOWN

    def _call_action(self, call: ast.CallExpr, m: ast.PathExpr, d: ast.ActionDecl, ctx: Ctx) -> T.Type:
        m.decl = d
        m.type = self.decl_type(d)
        call.call_kind = ast.CallKind.ACTION
        if ctx.in_parser:
            self.error(call.loc, f"action '{d.name}' cannot be called from a parser")
        elif ctx.in_function:
            self.error(call.loc, f"action '{d.name}' cannot be called from a function")
        elif ctx.block is None and not ctx.in_action:
            self.error(call.loc, f"action '{d.name}' can only be called inside a control")
        if call.type_args:
            self.error(call.loc, f"action '{d.name}' takes no type arguments")
        self.action_calls.setdefault(d, []).append((call, ctx.block))
        self.bind_args(call, d.name, self.params_of(d), (), ctx)
        return T.VOID

    def _call_function(self, call: ast.CallExpr, m: ast.PathExpr, cands: list[ast.Declaration],
                       ctx: Ctx) -> T.Type:
        d = self.pick_overload(call, cands)
        m.decl = d
        ft = self.decl_type(d)
        m.type = ft
        if is_unknown(ft):
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        extern = isinstance(d, ast.ExternFunctionDecl)
        call.call_kind = ast.CallKind.EXTERN_FUNCTION if extern else ast.CallKind.FUNCTION
        if d.name == "verify" and extern and not ctx.in_parser:
            self.error(call.loc, "verify() can only be called in a parser")
        ret = self.bind_args(call, d.name, ft.params, ft.type_params, ctx, ft.return_type, extern)
        if extern and d.name == "digest":
            self.digest_calls.append(call)
        if extern and d.name == "static_assert":
            self._static_assert(call)
        return ret

    def _static_assert(self, call: ast.CallExpr) -> None:
        """``static_assert(check[, message])`` is evaluated now: false is an error."""
        if not call.args:
            return
        cond = call.args[0].value.const_value
        if cond is False:
            msg = call.args[1].value.const_value if len(call.args) > 1 else None
            self.error(call.loc, f"static assertion failed{': ' + msg if isinstance(msg, str) else ''}")
        if cond is not None:
            call.const_value = True

    def _size_builtin(self, call: ast.CallExpr, name: str, arg: ast.Expression, ctx: Ctx) -> T.Type:
        t = self.check_expr(arg, ctx)
        call.call_kind = ast.CallKind.BUILTIN
        call.bound_args = [(T.Parameter("value", "in", t), arg)]
        call.type_arg_types = ()
        return self._size_value(call, name, t)

    def _size_value(self, call: ast.CallExpr, name: str, t: T.Type) -> T.Type:
        if is_unknown(t):
            return UNKNOWN
        try:
            bits = _size_in_bits(t, maximum=name.startswith("max"))
        except ValueError:
            self.error(call.loc, f"{name}() needs a header, struct or bit type, got {t}")
            return UNKNOWN
        call.const_value = (bits + 7) // 8 if name.endswith("Bytes") else bits
        return T.INFINT

    # ------------------------------------------------------------------ x.m(...)

    def _call_member(self, call: ast.CallExpr, m: ast.MemberExpr, ctx: Ctx) -> T.Type:
        bt = self.check_expr(m.expr, ctx)
        if is_unknown(bt):
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        if isinstance(bt, T.TypeOfType):
            self.error(m.loc, f"'{bt.name}.{m.member}' cannot be called")
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        mt = self.value_member(m, bt, ctx, called=True)
        m.type = mt
        if is_unknown(mt):
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        if isinstance(bt, T.ExternType):
            return self._call_extern_method(call, m, bt, ctx)
        if isinstance(mt, T.MethodType) and isinstance(bt, T.TableType):
            return self._call_table_apply(call, m, bt, mt, ctx)
        if isinstance(mt, T.MethodType) and isinstance(bt, T.ParserType | T.ControlType):
            return self._call_block_apply(call, m, bt, ctx)
        if isinstance(mt, T.MethodType) and mt.decl is None:
            return self._call_builtin_method(call, m, bt, mt, ctx)
        self.error(m.loc, f"'{m.member}' is not a method")
        self._type_args_loosely(call, ctx)
        return UNKNOWN

    def _call_extern_method(self, call: ast.CallExpr, m: ast.MemberExpr, bt: T.ExternType, ctx: Ctx) -> T.Type:
        methods = [x for x in bt.decl.methods if x.name == m.member and not x.is_constructor]
        d = self.pick_overload(call, methods)
        m.decl = d
        mt = self.decl_type(d)
        m.type = mt
        if is_unknown(mt):
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        ext_vars = self.type_params_of(bt.decl)
        outer = {v: a for v, a in zip(ext_vars, bt.type_args) if not isinstance(a, T.DontCareType)}
        params = tuple(T.Parameter(p.name, p.direction, T.substitute(p.type, outer), p.has_default, p.decl)
                       for p in mt.params)
        packet = bt.name in PACKET_EXTERNS
        call.call_kind = ast.CallKind.PACKET_METHOD if packet else ast.CallKind.EXTERN_METHOD
        name = f"{bt.name}.{m.member}"
        ret = self.bind_args(call, name, params, mt.type_params, ctx, T.substitute(mt.return_type, outer), True)
        if packet:
            self._check_packet_call(call, m.member, ctx)
            if m.member == "lookahead":
                self._check_lookahead(call)
        return ret

    def _check_lookahead(self, call: ast.CallExpr) -> None:
        """p4c's CheckCoreMethods: lookahead<T> needs a fixed-width T (no void, varbit or union)."""
        types = getattr(call, "type_arg_types", ())
        if len(types) != 1 or is_unknown(types[0]):
            return
        t = types[0]
        loc = call.type_args[0].loc if getattr(call, "type_args", None) else call.loc
        if isinstance(t, T.VoidType):
            self.error(loc, "void is not a legal type argument for 'lookahead'")
        elif _has_varbit_or_union(t):
            self.error(loc, f"lookahead<{t}>: the type argument must be a fixed-width type "
                            f"(no varbit field or header union)")

    def _check_packet_call(self, call: ast.CallExpr, method: str, ctx: Ctx) -> None:
        if not call.args:
            return
        arg = call.args[0].value
        t = arg.type
        if is_unknown(t) or t is None:
            return
        if method == "extract" and not isinstance(t, T.HeaderType):
            self.error(arg.loc, f"extract() needs a header (or a header stack's .next), got {t}")
        elif method == "extract":
            varbit = any(isinstance(ft, T.VarbitType) for _, ft in t.fields)
            if len(call.args) == 1 and varbit:
                self.error(arg.loc, f"header {t} has a varbit field: extract it with its size, extract(h, bits)")
            elif len(call.args) == 2 and not varbit:
                self.error(arg.loc, f"extract(h, bits) needs a header with a varbit field; {t} has none")
        if method == "emit" and not (T.is_struct_like(t) or isinstance(t, T.HeaderStackType)):
            self.error(arg.loc, f"emit() needs a header, header stack, header union or struct, got {t}")

    def _call_table_apply(self, call: ast.CallExpr, m: ast.MemberExpr, bt: T.TableType,
                          mt: T.MethodType, ctx: Ctx) -> T.Type:
        call.call_kind = ast.CallKind.TABLE_APPLY
        m.decl = bt.decl
        name = self.fqn_for_message(bt.decl)
        if ctx.in_action:
            self.error(call.loc, f"table '{name}' cannot be applied inside an action")
        elif ctx.in_function or not ctx.in_control:
            self.error(call.loc, f"table '{name}' can only be applied in a control's apply block")
        self.bind_args(call, f"{bt.name}.apply", (), (), ctx)
        return mt.return_type

    def _call_block_apply(self, call: ast.CallExpr, m: ast.MemberExpr, bt: T.BlockType, ctx: Ctx) -> T.Type:
        parser = isinstance(bt, T.ParserType)
        call.call_kind = ast.CallKind.PARSER_APPLY if parser else ast.CallKind.CONTROL_APPLY
        if parser and not ctx.in_parser:
            self.error(call.loc, f"parser '{bt.name}' can only be applied inside a parser")
        elif not parser and (not ctx.in_control or ctx.in_action):
            self.error(call.loc, f"control '{bt.name}' can only be applied in a control's apply block")
        self.bind_args(call, f"{bt.name}.apply", bt.params, (), ctx)
        return T.VOID

    def _call_builtin_method(self, call: ast.CallExpr, m: ast.MemberExpr, bt: T.Type, mt: T.MethodType,
                             ctx: Ctx) -> T.Type:
        name = m.member
        if name in SIZE_METHODS:
            call.call_kind = ast.CallKind.BUILTIN
            self.bind_args(call, name, (), (), ctx)
            return self._size_value(call, name, bt)
        if isinstance(bt, T.HeaderStackType):
            call.call_kind = ast.CallKind.STACK_METHOD
        elif isinstance(bt, T.HeaderUnionType):
            call.call_kind = ast.CallKind.UNION_METHOD
        else:
            call.call_kind = ast.CallKind.HEADER_METHOD
        if name != "isValid":
            problem = self.lvalue_problem(m.expr)
            if problem is not None:
                self.error(call.loc, f"cannot call {name}() on {problem}")
        ret = self.bind_args(call, name, mt.params, (), ctx, mt.return_type)
        if name in ("push_front", "pop_front") and call.args:
            n = call.args[0].value.const_value
            if not isinstance(n, int) or n < 0:
                self.error(call.args[0].value.loc, f"the count of {name}() must be a non-negative constant")
        return ret

    # ------------------------------------------------------------------ overloads

    def pick_overload(self, call: ast.CallExpr | ast.ConstructorCallExpr, cands: list) -> ast.Declaration:
        """The candidate whose parameters fit the call's arguments (the first one if none
        or several do; argument matching then reports the problem)."""
        if len(cands) == 1:
            return cands[0]
        fitting = [d for d in cands if _arity_fits(d.params, call.args)]
        exact = [d for d in fitting if len(d.params) == len(call.args)]
        return (exact or fitting or cands)[0]

    # ------------------------------------------------------------------ arguments

    def bind_args(self, call: ast.CallExpr | ast.ConstructorCallExpr, callee: str,
                  params: tuple[T.Parameter, ...], type_params: tuple[T.TypeVar, ...], ctx: Ctx,
                  ret: T.Type = T.VOID, extern: bool = False) -> T.Type:
        """Match ``call.args`` to ``params``; type each argument; infer type arguments.

        Returns the return type with the inferred type arguments substituted."""
        assign = self._assign(call, callee, params)
        binding: dict[T.TypeVar, T.Type] = {}
        self._explicit_type_args(call, callee, type_params, binding, ctx)
        if assign is None:
            self._type_args_loosely(call, ctx)
            return UNKNOWN
        generic: list[tuple[ast.Expression, T.Parameter]] = []
        for i, p in enumerate(params):
            a = assign.get(i)
            if a is not None:
                self._check_arg(callee, a.value, p, binding, ctx, extern, generic)
        for v, p in generic:  # int constants given to a type variable fixed by another argument
            final = T.substitute(p.type, binding)
            if isinstance(v.type, T.InfIntType) and _fixed(final):
                self.coerce(v, final)
            self._generic_arg_type(callee, v, p, final)
        self._unbound(call, callee, type_params, binding, params, ret)
        call.type_arg_types = tuple(binding.get(tv, UNKNOWN) for tv in type_params)
        call.bound_args = [
            (T.Parameter(p.name, p.direction, T.substitute(p.type, binding), p.has_default, p.decl),
             assign[i].value if i in assign else None)
            for i, p in enumerate(params)
        ]
        return T.substitute(ret, binding)

    def _generic_arg_type(self, callee: str, v: ast.Expression, p: T.Parameter, final: T.Type) -> None:
        """What p4c refuses once a type variable is bound: a table, action, parser, control or
        package passed as a value, and a string or extern given to a parameter with a direction
        (checked on the specialised declaration)."""
        if isinstance(final, T.TableType | T.ActionType | T.BlockType):
            self.error(v.loc, f"argument '{p.name}' of '{callee}' cannot have type {final}")
        elif p.direction is not None and isinstance(final, T.StringType | T.ExternType):
            self.error(v.loc, f"parameter '{p.name}' of '{callee}' has a direction ({p.direction}), "
                              f"which a parameter of type {final} cannot have")

    def _assign(self, call: ast.CallExpr | ast.ConstructorCallExpr, callee: str,
                params: tuple[T.Parameter, ...]) -> dict[int, ast.Argument] | None:
        args = call.args
        named = [a.name is not None for a in args]
        if any(named) and not all(named):
            self.error(call.loc, f"in the call of '{callee}', either all or none of the arguments must be named")
            return None
        assign: dict[int, ast.Argument] = {}
        if args and all(named):
            index = {p.name: i for i, p in enumerate(params)}
            ok = True
            for a in args:
                i = index.get(a.name)  # type: ignore[arg-type]
                if i is None or i in assign:
                    what = "no parameter" if i is None else "a second argument for the parameter"
                    self.error(a.loc, f"'{callee}' has {what} named '{a.name}'")
                    ok = False
                    continue
                assign[i] = a
            missing = [p.name for i, p in enumerate(params) if i not in assign and not p.has_default]
            if missing and ok:
                self.error(call.loc, f"missing argument for parameter '{missing[0]}' of '{callee}'")
                ok = False
            return assign if ok else None
        required = sum(1 for p in params if not p.has_default)
        if not required <= len(args) <= len(params):
            exp = str(len(params)) if required == len(params) else f"{required} to {len(params)}"
            self.error(call.loc, f"wrong number of arguments to '{callee}': expected {exp}, got {len(args)}")
            return None
        missing = [p.name for p in params[len(args):] if not p.has_default]
        if missing:
            self.error(call.loc, f"missing argument for parameter '{missing[0]}' of '{callee}'")
            return None
        return dict(enumerate(args))

    def _explicit_type_args(self, call: ast.CallExpr | ast.ConstructorCallExpr, callee: str,
                            tvars: tuple[T.TypeVar, ...], binding: dict, ctx: Ctx) -> None:
        targs = getattr(call, "type_args", None)
        if not targs:
            return
        types = [self.resolve(tr, ctx) for tr in targs]
        if len(types) != len(tvars):
            self.error(call.loc, f"wrong number of type arguments to '{callee}': "
                                 f"expected {len(tvars)}, got {len(types)}")
            return
        for tv, t in zip(tvars, types):
            if not isinstance(t, T.DontCareType):
                binding[tv] = t

    def _check_arg(self, callee: str, v: ast.Expression, p: T.Parameter, binding: dict, ctx: Ctx,
                   extern: bool, generic: list) -> None:
        direction = p.direction
        ptype = T.substitute(p.type, binding)
        if isinstance(v, ast.DontCareExpr):
            v.type = ptype
            if direction != "out":
                self.error(v.loc, f"'_' can only be passed to an out parameter ('{p.name}' of '{callee}' is not)")
            return
        writable = direction in ("out", "inout")
        if T.contains_typevar(ptype):
            at = self.check_expr(v, ctx)
            if not self.unify(ptype, at, binding):
                want = T.substitute(ptype, binding)
                self.error(v.loc, f"argument '{p.name}' of '{callee}': " + self.mismatch_message(want, at, True))
                return
            generic.append((v, p))
            if isinstance(v, ast.ListExpr):
                self._sized_elements(v, p, callee)
        elif writable:
            at = self.check_expr(v, ctx)
            if at != ptype and not is_unknown(at, ptype):
                self.error(v.loc, f"argument '{p.name}' of '{callee}': " + self.mismatch_message(ptype, at, True))
                return
        else:
            self.check_expr(v, ctx, ptype, context=f"argument '{p.name}' of '{callee}': ")
        if is_unknown(v.type):
            return
        if writable:
            problem = self.lvalue_problem(v)
            if problem is not None:
                self.error(v.loc, f"cannot pass {problem} to {direction} parameter '{p.name}' of '{callee}'")
        elif extern and direction is None and v.const_value is None and _needs_const(v.type):
            self.error(v.loc, f"argument '{p.name}' of '{callee}' must be a compile-time constant")

    def _sized_elements(self, v: ast.ListExpr, p: T.Parameter, callee: str) -> None:
        """A list given to a generic parameter is serialized (hash, digest, checksum
        data): every element needs a width."""
        for x in v.elements:
            if isinstance(x.type, T.InfIntType):
                self.error(x.loc, f"an element of argument '{p.name}' of '{callee}' has type int: "
                                  "give it a width (e.g. 8w5 or (bit<8>)5)")
            elif isinstance(x, ast.ListExpr):
                self._sized_elements(x, p, callee)

    def unify(self, p: T.Type, a: T.Type, binding: dict[T.TypeVar, T.Type]) -> bool:
        """Make parameter type ``p`` (with type variables) match argument type ``a``."""
        if is_unknown(a, p):
            return True
        if isinstance(a, T.TableType):
            return False  # a table is no value: it cannot be passed (p4c)
        if isinstance(p, T.TypeVar):
            cur = binding.get(p)
            if cur is None or (isinstance(cur, T.InfIntType) and _fixed(a)):
                binding[p] = a
                return True
            return cur == a or (isinstance(a, T.InfIntType) and _fixed(cur)) or isinstance(a, T.TypeVar)
        if isinstance(a, T.TypeVar | T.DontCareType):
            return True
        if isinstance(p, T.HeaderStackType) and isinstance(a, T.HeaderStackType):
            return p.size == a.size and self.unify(p.element, a.element, binding)
        if isinstance(p, T.TupleType) and isinstance(a, T.TupleType):
            return len(p.elements) == len(a.elements) and all(
                self.unify(x, y, binding) for x, y in zip(p.elements, a.elements))
        if isinstance(p, T.ExternType | T.StructLikeType) and type(p) is type(a) and p.type_args:
            return p.decl is a.decl and len(p.type_args) == len(a.type_args) and all(
                self.unify(x, y, binding) for x, y in zip(p.type_args, a.type_args))
        if _fixed(p) and isinstance(a, T.InfIntType):
            return True
        return p == a

    def _unbound(self, call: ast.Node, callee: str, tvars: tuple[T.TypeVar, ...], binding: dict,
                 params: tuple[T.Parameter, ...], ret: T.Type) -> None:
        for tv in tvars:
            if isinstance(binding.get(tv), T.InfIntType):
                self.error(call.loc, f"cannot infer a width for type argument {tv.name} of '{callee}' from int "
                                     "constants; give one of them a width (e.g. 16w0)")
                continue
            if tv in binding:
                continue
            used = T.contains_typevar(ret) and _mentions(ret, tv)
            used = used or any(_mentions(p.type, tv) for p in params)
            if used:
                self.error(call.loc, f"cannot infer type argument {tv.name} of '{callee}'; give it explicitly "
                                     f"({callee}<...>(...))")


def _mentions(t: T.Type, tv: T.TypeVar) -> bool:
    return T.contains_typevar(t) and tv in _typevars(t)


def _typevars(t: T.Type) -> set[T.TypeVar]:
    if isinstance(t, T.TypeVar):
        return {t}
    out: set[T.TypeVar] = set()
    if isinstance(t, T.HeaderStackType | T.ListType):
        return _typevars(t.element)
    for x in getattr(t, "elements", ()) or getattr(t, "type_args", ()):
        out |= _typevars(x)
    return out


def _needs_const(t: T.Type) -> bool:
    """Directionless extern arguments must be constants, except object references."""
    return not isinstance(t, T.ExternType | T.BlockType | T.TableType | T.TypeOfType)


def _arity_fits(params: list[ast.Param], args: list[ast.Argument]) -> bool:
    names = [a.name for a in args]
    if args and all(n is not None for n in names):
        pnames = {p.name for p in params}
        required = {p.name for p in params if p.default is None
                    and ast.find_annotation(p.annotations, "optional") is None}
        return set(names) <= pnames and required <= set(names)  # type: ignore[operator]
    required_n = sum(1 for p in params if p.default is None
                     and ast.find_annotation(p.annotations, "optional") is None)
    return required_n <= len(args) <= len(params)


def _size_in_bits(t: T.Type, maximum: bool) -> int:
    if isinstance(t, T.VarbitType):
        return t.max_width if maximum else 0
    if isinstance(t, T.StructLikeType) and not isinstance(t, T.HeaderUnionType):
        return sum(_size_in_bits(ft, maximum) for _, ft in t.fields)
    if isinstance(t, T.HeaderUnionType):
        sizes = [_size_in_bits(ft, maximum) for _, ft in t.fields]
        return (max if maximum else min)(sizes, default=0)
    if isinstance(t, T.HeaderStackType):
        return t.size * _size_in_bits(t.element, maximum)
    return T.width_of(t)


def _has_varbit_or_union(t: T.Type) -> bool:
    if isinstance(t, T.VarbitType | T.HeaderUnionType):
        return True
    if isinstance(t, T.HeaderStackType):
        return _has_varbit_or_union(t.element)
    if isinstance(t, T.StructLikeType):
        return any(_has_varbit_or_union(ft) for _, ft in t.fields)
    return False
