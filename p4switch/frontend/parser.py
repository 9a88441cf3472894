"""Pass 2: parse preprocessed P4_16 into :mod:`p4switch.frontend.ast` nodes.

The grammar (``grammar.lark``) is LALR(1) and fed by our own lexer (``lexer.py``), which
supplies the type-name feedback P4 needs. Nodes are built while parsing (lark's embedded
transformer: no intermediate parse tree), each with the original-file span of its tokens.
Syntax errors become :class:`P4Error` with the position in the original file and the
expected tokens written as P4 text (``';'``, ``identifier``), never lark terminal names.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from lark import Lark, Token
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer

from p4switch.frontend import ast as A
from p4switch.frontend import lexer as L
from p4switch.frontend.errors import P4Error, SourceLoc
from p4switch.frontend.preprocess import (
    PreprocessedSource,
    no_preprocess,
    preprocess_file,
    preprocess_text,
)

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
_START = ["program", "annotation_args", "annotation_kvs"]


# --------------------------------------------------------------------------- helpers


class Ident(NamedTuple):
    """A name as written, with its location (names are not nodes of their own)."""

    text: str
    loc: SourceLoc


class AnnList(list):
    pass


class ParamList(list):
    pass


class CtorParamList(list):
    pass


class ArgList(list):
    pass


class CallArgs(list):
    pass


class TypeArgList(list):
    pass


class TypeParamList(list):
    pass


class ExprList(list):
    pass


class ForItems(list):
    pass


class AssignOp(NamedTuple):
    """A compound assignment operator as written (``+=``) and where."""

    text: str
    loc: SourceLoc


def _op_assign(loc: SourceLoc, lhs: A.Expression, op: AssignOp, rhs: A.Expression) -> A.AssignStmt:
    """``lhs op= rhs`` as ``lhs = lhs op rhs`` (p4c's RemoveOpAssign): the right side reads
    a copy of the left-hand expression, so every node of the AST stays a tree node."""
    binop = op.text[:-1]
    value = A.BinaryExpr(loc=loc, op=binop, left=copy.deepcopy(lhs), right=rhs)
    return A.AssignStmt(loc=loc, lhs=lhs, rhs=value)


class ObjInit(list):
    pass


class TupleKeyset(list):
    """The keys of ``(k1, k2, ...)``; ``loc`` spans the parentheses."""

    loc: SourceLoc


class Direction(str):
    pass


class ConstKw:
    pass


class EntryPriority(NamedTuple):
    expr: A.Expression


def _loc(x: Any) -> SourceLoc | None:
    if isinstance(x, Token):
        return getattr(x, "loc", None)
    if isinstance(x, A.Node | Ident):
        return x.loc
    if isinstance(x, EntryPriority):
        return x.expr.loc
    if isinstance(x, TupleKeyset | AssignOp):
        return x.loc
    if isinstance(x, list):
        for item in x:
            loc = _loc(item)
            if loc is not None:
                return loc
    return None


def _last_loc(x: Any) -> SourceLoc | None:
    if isinstance(x, list) and not isinstance(x, TupleKeyset):
        for item in reversed(x):
            loc = _last_loc(item)
            if loc is not None:
                return loc
        return None
    return _loc(x)


def span(children: Sequence[Any]) -> SourceLoc:
    """The span from the first to the last located item in ``children``."""
    first = last = None
    for c in children:
        first = _loc(c)
        if first is not None:
            break
    for c in reversed(children):
        last = _last_loc(c)
        if last is not None:
            break
    if first is None or last is None:
        return SourceLoc("<unknown>", 0, 0, 0, 0)
    if last.file != first.file:
        return first
    return SourceLoc(first.file, first.line, first.col, last.end_line, last.end_col)


def pick(children: Sequence[Any], cls: type | tuple[type, ...]) -> Any:
    for c in children:
        if isinstance(c, cls):
            return c
    return None


def picks(children: Sequence[Any], cls: type | tuple[type, ...]) -> list[Any]:
    return [c for c in children if isinstance(c, cls)]


def _anns(c: Sequence[Any]) -> list[A.Annotation]:
    return list(pick(c, AnnList) or [])


def _tparams(c: Sequence[Any]) -> list[A.TypeParam]:
    return list(pick(c, TypeParamList) or [])


def _params(c: Sequence[Any]) -> list[A.Param]:
    return list(pick(c, ParamList) or [])


def _args(c: Sequence[Any]) -> list[A.Argument]:
    return list(pick(c, ArgList) or [])


_INT_RE = re.compile(
    r"^(?:(?P<w>[0-9]+)(?P<s>[ws]))?"
    r"(?P<v>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)$"
)
_BASES = {"x": 16, "b": 2, "o": 8, "d": 10}


_DIGIT_BITS = {2: 1, 8: 3, 10: 4, 16: 4}
_MAX_LITERAL_BITS = 4 * 4096  # generous: the checker's own limits (check/values.py) apply after


def parse_int_literal(text: str, loc: SourceLoc) -> A.IntLiteral:
    """Decode ``8w0x1F``-style literals; the value is kept as written (no truncation)."""
    m = _INT_RE.match(text)
    if m is None:
        raise P4Error(loc, f"invalid integer literal '{text}'")
    digits = m.group("v")
    base = 10
    if len(digits) > 1 and digits[0] == "0" and digits[1].lower() in _BASES:
        base = _BASES[digits[1].lower()]
        digits = digits[2:]
    digits = digits.replace("_", "")
    if not digits:
        raise P4Error(loc, f"invalid integer literal '{text}': no digits")
    if m.group("w") and len(m.group("w")) > 9:
        raise P4Error(loc, f"integer literal '{text[:20]}...': its width has {len(m.group('w'))} digits; "
                           "p4switch (like p4c) supports bit strings of at most 2048 bits")
    width = int(m.group("w")) if m.group("w") else None
    if len(digits) * _DIGIT_BITS[base] > _MAX_LITERAL_BITS:
        raise P4Error(loc, f"integer literal with {len(digits)} digits: p4switch reads literals of at most "
                           f"{_MAX_LITERAL_BITS} bits")
    return A.IntLiteral(loc=loc, value=int(digits, base), width=width, signed=m.group("s") == "s", text=text)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


def decode_string(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


# --------------------------------------------------------------------------- builder


class AstBuilder:
    """Lark callbacks: one per grammar rule/alias, each receiving all child tokens."""

    # ---- names and lists

    def non_type_name(self, c):
        return Ident(str(c[0]), c[0].loc)

    def name(self, c):
        x = c[0]
        return x if isinstance(x, Ident) else Ident(str(x), x.loc)

    non_table_kw_name = name
    member = name

    def annotations(self, c):
        return AnnList(_annotation(t) for t in c)

    def type_params(self, c):
        return TypeParamList(A.TypeParam(loc=i.loc, name=i.text) for i in picks(c, Ident))

    def r_angle(self, c):
        return c[0]

    def params(self, c):
        return ParamList(picks(c, A.Param))

    def param(self, c):
        return A.Param(
            loc=span(c), annotations=_anns(c), direction=pick(c, Direction),
            type_ref=pick(c, A.TypeRef), name=pick(c, Ident).text, default=pick(c, A.Expression),
        )

    def direction(self, c):
        return Direction(str(c[0]))

    def ctor_params(self, c):
        return CtorParamList(pick(c, ParamList) or [])

    def args(self, c):
        out = ArgList()
        for x in c:
            if isinstance(x, A.Argument):
                out.append(x)
            elif isinstance(x, A.Expression):
                out.append(A.Argument(loc=x.loc, value=x))
        return out

    def named_arg(self, c):
        return A.Argument(loc=span(c), name=c[0].text, value=c[2])

    def dont_care_arg(self, c):
        loc = span(c)
        return A.Argument(loc=loc, value=A.DontCareExpr(loc=loc))

    def expression_list(self, c):
        return ExprList(picks(c, A.Expression))

    def annotation_args(self, c):
        return picks(c, A.Expression)

    def annotation_kvs(self, c):
        return picks(c, A.KeyValue)

    def kv(self, c):
        return A.KeyValue(loc=span(c), name=c[0].text, value=c[2])

    # ---- types

    def type_name(self, c):
        return A.TypeName(loc=span(c), name=str(c[-1]), global_scope=len(c) == 2)

    def specialized_type(self, c):
        return A.SpecializedType(loc=span(c), base=c[0], args=list(pick(c, TypeArgList)))

    def header_stack_type(self, c):
        return A.HeaderStackType(loc=span(c), element=c[0], size=c[2])

    def tuple_type(self, c):
        return A.TupleType(loc=span(c), elements=list(pick(c, TypeArgList)))

    def type_args(self, c):
        return TypeArgList(picks(c, A.TypeRef))

    def dont_care_type(self, c):
        return A.DontCareType(loc=span(c))

    def void_type(self, c):
        return A.VoidType(loc=span(c))

    def bool_type(self, c):
        return A.BoolType(loc=span(c))

    def error_type(self, c):
        return A.ErrorType(loc=span(c))

    def match_kind_type(self, c):
        return A.MatchKindType(loc=span(c))

    def string_type(self, c):
        return A.StringType(loc=span(c))

    def inf_int_type(self, c):
        return A.InfIntType(loc=span(c))

    def bit_type(self, c):
        loc = span(c)
        width = pick(c, A.Expression) or A.IntLiteral(loc=loc, value=1, text="1")
        return A.BitsType(loc=loc, width=width, signed=False)

    def int_type(self, c):
        return A.BitsType(loc=span(c), width=pick(c, A.Expression), signed=True)

    def varbit_type(self, c):
        return A.VarbitType(loc=span(c), width=pick(c, A.Expression))

    # ---- declarations

    def type_decl_only(self, c):
        return c[0]

    def const_decl(self, c):
        return A.ConstDecl(loc=span(c), annotations=_anns(c), type_ref=pick(c, A.TypeRef),
                           name=pick(c, Ident).text, value=pick(c, A.Expression))

    def var_decl(self, c):
        return A.VarDecl(loc=span(c), annotations=_anns(c), type_ref=pick(c, A.TypeRef),
                         name=pick(c, Ident).text, init=pick(c, A.Expression))

    def typedef_decl(self, c):
        return A.TypedefDecl(loc=span(c), annotations=_anns(c), type_ref=pick(c, A.TypeRef),
                             name=pick(c, Ident).text)

    def newtype_decl(self, c):
        return A.NewTypeDecl(loc=span(c), annotations=_anns(c), type_ref=pick(c, A.TypeRef),
                             name=pick(c, Ident).text)

    def _struct_like(self, cls, c):
        return cls(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                   type_params=_tparams(c), fields=picks(c, A.StructField))

    def header_decl(self, c):
        return self._struct_like(A.HeaderDecl, c)

    def header_union_decl(self, c):
        return self._struct_like(A.HeaderUnionDecl, c)

    def struct_decl(self, c):
        return self._struct_like(A.StructDecl, c)

    def struct_field(self, c):
        return A.StructField(loc=span(c), annotations=_anns(c), type_ref=pick(c, A.TypeRef),
                             name=pick(c, Ident).text)

    def enum_decl(self, c):
        return A.EnumDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                          members=picks(c, A.EnumMember))

    def ser_enum_decl(self, c):
        return A.EnumDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                          members=picks(c, A.EnumMember), underlying=pick(c, A.TypeRef))

    def enum_member(self, c):
        return A.EnumMember(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text)

    def enum_member_init(self, c):
        return A.EnumMember(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                            value=pick(c, A.Expression))

    def id_decl(self, c):
        return A.IdDecl(loc=span(c), name=c[0].text)

    def error_decl(self, c):
        return A.ErrorDecl(loc=span(c), name="error", members=picks(c, A.IdDecl))

    def match_kind_decl(self, c):
        return A.MatchKindDecl(loc=span(c), name="match_kind", members=picks(c, A.IdDecl))

    def extern_object(self, c):
        return A.ExternDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                            type_params=_tparams(c), methods=picks(c, A.MethodDecl))

    def extern_function(self, c):
        return A.ExternFunctionDecl(loc=span(c), annotations=_anns(c), return_type=pick(c, A.TypeRef),
                                    name=pick(c, Ident).text, type_params=_tparams(c), params=_params(c))

    def method_proto(self, c, abstract: bool = False):
        return A.MethodDecl(loc=span(c), annotations=_anns(c), return_type=pick(c, A.TypeRef),
                            name=pick(c, Ident).text, type_params=_tparams(c), params=_params(c),
                            is_abstract=abstract)

    def abstract_proto(self, c):
        return self.method_proto(c, abstract=True)

    def ctor_proto(self, c):
        tok = next(t for t in c if isinstance(t, Token) and t.type == L.TYPE_IDENTIFIER)
        return A.MethodDecl(loc=span(c), annotations=_anns(c), name=str(tok), params=_params(c),
                            is_constructor=True)

    def function_decl(self, c):
        return A.FunctionDecl(loc=span(c), annotations=_anns(c), return_type=pick(c, A.TypeRef),
                              name=pick(c, Ident).text, type_params=_tparams(c), params=_params(c),
                              body=pick(c, A.BlockStmt))

    def action_decl(self, c):
        return A.ActionDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                            params=_params(c), body=pick(c, A.BlockStmt))

    def instantiation(self, c):
        init = pick(c, ObjInit)
        return A.InstantiationDecl(loc=span(c), annotations=_anns(c), type_ref=pick(c, A.TypeRef),
                                   args=_args(c), name=pick(c, Ident).text,
                                   initializer=list(init) if init is not None else None)

    def obj_initializer(self, c):
        return ObjInit(picks(c, A.Declaration))

    def package_type_decl(self, c):
        return A.PackageTypeDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                                 type_params=_tparams(c), params=_params(c))

    # ---- parsers

    def parser_type_decl(self, c):
        return A.ParserTypeDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                                type_params=_tparams(c), params=_params(c))

    def parser_decl(self, c):
        head: A.ParserTypeDecl = c[0]
        rest = c[1:]
        return A.ParserDecl(
            loc=span(c), annotations=head.annotations, name=head.name, type_params=head.type_params,
            params=head.params, ctor_params=list(pick(rest, CtorParamList) or []),
            locals=[d for d in picks(rest, A.Declaration) if not isinstance(d, A.ParserState)],
            states=picks(rest, A.ParserState),
        )

    def value_set_decl(self, c):
        return A.ValueSetDecl(loc=span(c), annotations=_anns(c), element_type=pick(c, A.TypeRef),
                              size=pick(c, A.Expression), name=pick(c, Ident).text)

    def parser_state(self, c):
        stmts = [s for s in picks(c, A.Statement) if not isinstance(s, A.TransitionStmt)]
        return A.ParserState(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                             stmts=stmts, transition=pick(c, A.TransitionStmt))

    def parser_block(self, c):
        return A.BlockStmt(loc=span(c), annotations=_anns(c), stmts=picks(c, A.Statement))

    def transition_stmt(self, c):
        return A.TransitionStmt(loc=span(c), target=pick(c, A.Expression))

    def select_expr(self, c):
        return A.SelectExpr(loc=span(c), selectors=list(pick(c, ExprList)), cases=picks(c, A.SelectCase))

    def select_case(self, c):
        return A.SelectCase(loc=span(c), keys=_keys(c[0]), state=c[2])

    def tuple_keyset(self, c):
        keys = TupleKeyset(picks(c, A.Expression))
        keys.loc = span(c)
        return keys

    def default_expr(self, c):
        return A.DefaultExpr(loc=span(c))

    def dont_care_expr(self, c):
        return A.DontCareExpr(loc=span(c))

    def mask_expr(self, c):
        return A.MaskExpr(loc=span(c), value=c[0], mask=c[2])

    def range_expr(self, c):
        return A.RangeExpr(loc=span(c), lo=c[0], hi=c[2])

    # ---- controls and tables

    def control_type_decl(self, c):
        return A.ControlTypeDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                                 type_params=_tparams(c), params=_params(c))

    def control_decl(self, c):
        head: A.ControlTypeDecl = c[0]
        rest = c[1:]
        return A.ControlDecl(
            loc=span(c), annotations=head.annotations, name=head.name, type_params=head.type_params,
            params=head.params, ctor_params=list(pick(rest, CtorParamList) or []),
            locals=picks(rest, A.Declaration), body=pick(rest, A.BlockStmt),
        )

    def table_decl(self, c):
        return A.TableDecl(loc=span(c), annotations=_anns(c), name=pick(c, Ident).text,
                           properties=picks(c, A.TableProperty))

    def key_prop(self, c):
        return A.KeyProperty(loc=span(c), name="key", annotations=_anns(c), elements=picks(c, A.KeyElement))

    def key_element(self, c):
        mk = pick(c, Ident)
        return A.KeyElement(loc=span(c), expr=c[0], match_kind=A.PathExpr(loc=mk.loc, name=mk.text),
                            annotations=_anns(c))

    def actions_prop(self, c):
        return A.ActionsProperty(loc=span(c), name="actions", annotations=_anns(c),
                                 actions=picks(c, A.ActionRef))

    def action_ref(self, c):
        call = pick(c, CallArgs)
        return A.ActionRef(loc=span(c), annotations=_anns(c), name=pick(c, A.PathExpr),
                           args=list(call) if call is not None else [], has_parens=call is not None)

    def call_args(self, c):
        return CallArgs(pick(c, ArgList))

    def entries_prop(self, c):
        return A.EntriesProperty(loc=span(c), name="entries", annotations=_anns(c),
                                 is_const=pick(c, ConstKw) is not None, entries=picks(c, A.TableEntry))

    def table_entry(self, c):
        prio = pick(c, EntryPriority)
        keyset = next(x for x in c if isinstance(x, A.Expression | TupleKeyset))
        return A.TableEntry(loc=span(c), keys=_keys(keyset), action=pick(c, A.ActionRef),
                            priority=prio.expr if prio else None, is_const=pick(c, ConstKw) is not None,
                            annotations=_anns(c))

    def entry_priority(self, c):
        expr = pick(c, A.Expression)
        if expr is None:
            tok = next(t for t in c if isinstance(t, Token) and t.type == L.INTEGER)
            expr = parse_int_literal(str(tok), tok.loc)
        return EntryPriority(expr)

    def value_prop(self, c):
        return A.ValueProperty(loc=span(c), name=pick(c, Ident).text, annotations=_anns(c),
                               is_const=pick(c, ConstKw) is not None, value=pick(c, A.Expression))

    def const_kw(self, c):
        return ConstKw()

    # ---- statements

    def assign_stmt(self, c):
        return A.AssignStmt(loc=span(c), lhs=c[0], rhs=c[2])

    def call_stmt(self, c):
        loc = span(c)
        call = A.CallExpr(loc=span(c[:-1]), method=c[0], type_args=list(pick(c, TypeArgList) or []),
                          args=_args(c))
        return A.CallStmt(loc=loc, call=call)

    def direct_call(self, c):
        method = A.TypeMemberExpr(loc=span(c[:3]), type_ref=c[0], member=c[2].text)
        call = A.CallExpr(loc=span(c[:-1]), method=method, args=_args(c))
        return A.CallStmt(loc=span(c), call=call)

    def empty_stmt(self, c):
        return A.EmptyStmt(loc=span(c))

    def exit_stmt(self, c):
        return A.ExitStmt(loc=span(c))

    def break_stmt(self, c):
        return A.BreakStmt(loc=span(c))

    def continue_stmt(self, c):
        return A.ContinueStmt(loc=span(c))

    def assign_op(self, c):
        return AssignOp("".join(str(t) for t in c), span(c))

    def op_assign_stmt(self, c):
        return _op_assign(span(c), c[0], c[1], c[2])

    def for_op_assign(self, c):
        return _op_assign(span(c), c[0], c[1], c[2])

    def for_assign(self, c):
        return A.AssignStmt(loc=span(c), lhs=c[0], rhs=c[2])

    def for_var(self, c):
        return A.VarDecl(loc=span(c), type_ref=pick(c, A.TypeRef), name=pick(c, Ident).text,
                         init=pick(c, A.Expression))

    def for_call(self, c):
        call = A.CallExpr(loc=span(c), method=c[0], args=_args(c))
        return A.CallStmt(loc=span(c), call=call)

    def for_items(self, c):
        return ForItems(x for x in c if isinstance(x, A.Statement))

    def for_stmt(self, c):
        # children: [annotations] "for" "(" [init] ";" [cond] ";" [updates] ")" statement
        semis = [i for i, x in enumerate(c) if str(x) == ";" and not isinstance(x, A.Node)]
        first, second = semis[0], semis[1]
        init = next((x for x in c[:first] if isinstance(x, ForItems)), ForItems())
        cond = next((x for x in c[first:second] if isinstance(x, A.Expression)), None)
        updates = next((x for x in c[second:] if isinstance(x, ForItems)), ForItems())
        return A.ForStmt(loc=span(c), annotations=_anns(c), init=list(init), cond=cond,
                         updates=list(updates), body=c[-1])

    def for_in_stmt(self, c):
        type_ref = pick(c, A.TypeRef)
        exprs = [x for x in c if isinstance(x, A.Expression)]
        rng = exprs[-1]
        var = target = None
        if type_ref is not None:
            ident = pick(c, Ident)
            var = A.VarDecl(loc=ident.loc, type_ref=type_ref, name=ident.text)
        else:
            target = exprs[0]
        return A.ForInStmt(loc=span(c), annotations=_anns(c), var=var, target=target, range=rng, body=c[-1])

    def return_stmt(self, c):
        return A.ReturnStmt(loc=span(c), value=pick(c, A.Expression))

    def if_stmt(self, c):
        stmts = picks(c, A.Statement)
        return A.IfStmt(loc=span(c), cond=pick(c, A.Expression), then=stmts[0],
                        else_=stmts[1] if len(stmts) > 1 else None)

    def block_stmt(self, c):
        return A.BlockStmt(loc=span(c), annotations=_anns(c), stmts=picks(c, A.Statement))

    def switch_stmt(self, c):
        return A.SwitchStmt(loc=span(c), expr=pick(c, A.Expression), cases=picks(c, A.SwitchCase))

    def switch_case(self, c):
        return A.SwitchCase(loc=span(c), label=c[0], body=pick(c[1:], A.BlockStmt))

    # ---- expressions

    def cond_expr(self, c):
        return A.ConditionalExpr(loc=span(c), cond=c[0], if_true=c[2], if_false=c[4])

    def binop(self, c):
        return A.BinaryExpr(loc=span(c), op=str(c[1]), left=c[0], right=c[2])

    def shr(self, c):
        return A.BinaryExpr(loc=span(c), op=">>", left=c[0], right=c[3])

    def unary(self, c):
        return A.UnaryExpr(loc=span(c), op=str(c[0]), operand=c[1])

    def cast(self, c):
        return A.CastExpr(loc=span(c), type_ref=c[1], expr=c[3])

    def member_expr(self, c):
        return A.MemberExpr(loc=span(c), expr=c[0], member=c[2].text)

    def index_expr(self, c):
        return A.IndexExpr(loc=span(c), expr=c[0], index=c[2])

    def slice_expr(self, c):
        return A.SliceExpr(loc=span(c), expr=c[0], hi=c[2], lo=c[4])

    def call_expr(self, c):
        return A.CallExpr(loc=span(c), method=c[0], type_args=list(pick(c, TypeArgList) or []), args=_args(c))

    def int_literal(self, c):
        return parse_int_literal(str(c[0]), c[0].loc)

    def true_lit(self, c):
        return A.BoolLiteral(loc=span(c), value=True)

    def false_lit(self, c):
        return A.BoolLiteral(loc=span(c), value=False)

    def string_literal(self, c):
        return A.StringLiteral(loc=span(c), value=decode_string(str(c[0])))

    def path(self, c):
        ident = pick(c, Ident)
        return A.PathExpr(loc=span(c), name=ident.text, global_scope=len(c) == 2)

    def this_expr(self, c):
        return A.ThisExpr(loc=span(c))

    def paren(self, c):
        return c[1]

    def list_expr(self, c):
        return A.ListExpr(loc=span(c), elements=picks(c, A.Expression))

    def struct_expr(self, c):
        return A.StructExpr(loc=span(c), fields=picks(c, A.KeyValue))

    def invalid_header_expr(self, c):
        return A.InvalidHeaderExpr(loc=span(c))

    def type_member(self, c):
        return A.TypeMemberExpr(loc=span(c), type_ref=c[0], member=c[2].text)

    def error_member(self, c):
        return A.TypeMemberExpr(loc=span(c), type_ref=A.ErrorType(loc=c[0].loc), member=c[2].text)

    def ctor_call(self, c):
        return A.ConstructorCallExpr(loc=span(c), type_ref=c[0], args=_args(c))

    def program(self, c):
        return A.Program(loc=span(c), declarations=picks(c, A.Declaration))


def _keys(keyset: Any) -> list[A.Expression]:
    return list(keyset) if isinstance(keyset, TupleKeyset) else [keyset]


def _annotation(tok: L.P4Token) -> A.Annotation:
    return A.Annotation(
        loc=tok.loc, name=str(tok), tokens=list(getattr(tok, "annotation_raw", [])),
        args=getattr(tok, "parsed_args", None), kv=getattr(tok, "parsed_kv", None),
        structured=getattr(tok, "structured_list", False),
    )


# --------------------------------------------------------------------------- lark wiring


class _TokenListLexer(Lexer):
    """Hands lark the tokens our lexer produced (passed as the parse 'text')."""

    def __init__(self, lexer_conf: Any) -> None:
        pass

    def lex(self, data: Any) -> Iterable[Token]:  # type: ignore[override]
        return iter(data)


def _cache_file() -> str | bool:
    """Where lark keeps the analysed LALR tables (building them costs ~0.4 s).

    A per-user cache directory, keyed by lark on the grammar text; ``False`` (no cache)
    when P4SWITCH_NO_GRAMMAR_CACHE=1 or the directory cannot be created.
    """
    if os.environ.get("P4SWITCH_NO_GRAMMAR_CACHE") == "1":
        return False
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "p4switch"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(base / "p4-grammar.lark-cache")


@functools.lru_cache(maxsize=1)
def _lark() -> tuple[Lark, L.Classifier, dict[str, str]]:
    parser = Lark(
        GRAMMAR_PATH.read_text(),
        parser="lalr",
        lexer=_TokenListLexer,
        start=_START,
        keep_all_tokens=True,
        maybe_placeholders=True,
        transformer=AstBuilder(),
        cache=_cache_file(),
    )
    literals = L.literal_terminals(parser.terminals)
    display = {name: f"'{text}'" for text, name in literals.items()}
    return parser, L.Classifier(literals), display


_EXPRESSION_STARTS = frozenset({"identifier", "integer", "'('", "'!'", "'-'", "'~'"})
# Further tokens that only start expressions; folded into "an expression" with the above.
_OPERAND_ONLY = frozenset({"'+'", "'true'", "'false'", "'this'", "string literal", "'{#}'", "'{'", "'.'",
                           "type name", "'error'", "'apply'", "'key'", "'actions'", "'state'", "'entries'",
                           "'type'", "'priority'"})

_DISPLAY = {
    L.IDENTIFIER: "identifier",
    L.TYPE_IDENTIFIER: "type name",
    L.INTEGER: "integer",
    L.STRING_LITERAL: "string literal",
    L.ANNOTATION: "annotation",
    L.TPARAMS_OPEN: "'<'",
    L.L_ANGLE_ARGS: "'<'",
    L.R_ANGLE_SHIFT: "'>'",
    "$END": "end of file",
}
# Order in which expected tokens are listed: closers and separators first.
_PREFERRED = ["an expression", "';'", "')'", "'}'", "']'", "'>'", "','", "'='", "':'", "'('", "'{'", "identifier", "type name"]


def _describe_expected(expected: Iterable[str], display: dict[str, str], limit: int = 6) -> list[str]:
    """Expected terminals as P4 text, most useful first; expression starters summarised."""
    names = sorted({display.get(e) or _DISPLAY.get(e, e) for e in expected})
    if set(names) >= _EXPRESSION_STARTS:
        names = ["an expression"] + [n for n in names if n not in _EXPRESSION_STARTS and n not in _OPERAND_ONLY]
    ordered = [p for p in _PREFERRED if p in names] + [n for n in names if n not in _PREFERRED]
    return ordered[:limit] + (["..."] if len(ordered) > limit else [])


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == L.ANNOTATION:
        return f"annotation '@{tok}'"
    if tok.type == L.STRING_LITERAL:
        return f"string {tok}"
    return f"'{tok}'"


_UNKNOWN_TYPE = "unknown type '{}' (no header, struct, enum, typedef, extern, parser or control declares it)"
# Tokens after which a missing ';' is the likely mistake (they can end a statement).
_ENDS_OPERAND = frozenset({")", "]", ">", "true", "false", "this", "exit", "return"})


def _acceptable(exc: UnexpectedToken) -> set[str]:
    """The terminals that would have been accepted where the error occurred.

    LALR tables merge look-aheads, so ``exc.expected`` may list tokens that cannot follow
    here; lark's interactive parser tries each terminal on a copy and knows for sure.
    """
    parser = getattr(exc, "interactive_parser", None)
    if parser is not None:
        try:
            accepted = set(parser.accepts())
            if accepted:
                return accepted
        except Exception:  # noqa: BLE001 - any failure: fall back to the table's view
            pass
    return set(exc.expected)


def _after(tok: L.P4Token) -> SourceLoc:
    loc = tok.loc
    return SourceLoc(loc.file, loc.end_line, loc.end_col + 1, loc.end_line, loc.end_col + 1)


def _syntax_error(exc: UnexpectedToken, tokens: Sequence[L.P4Token], display: dict[str, str]) -> P4Error:
    tok = exc.token
    index = _token_index(tokens, tok)
    prev = tokens[index - 1] if index > 0 else None
    nxt = tokens[index + 1] if index + 1 < len(tokens) else None
    accepted = _acceptable(exc)
    expected = _describe_expected(accepted, display)
    found = _describe_token(tok)
    at_end = tok.type == "$END"
    here = _after(prev) if (at_end or getattr(tok, "loc", None) is None) and prev is not None else tok.loc
    names = (L.IDENTIFIER, L.TYPE_IDENTIFIER)
    if prev is not None and prev.type == L.IDENTIFIER and tok.type in names:
        return P4Error(prev.loc, _UNKNOWN_TYPE.format(prev))
    if tok.type == L.IDENTIFIER and nxt is not None and nxt.type in names and L.TYPE_IDENTIFIER in accepted:
        return P4Error(tok.loc, _UNKNOWN_TYPE.format(tok))
    ends_operand = prev is not None and (prev.type in (*names, L.INTEGER, L.STRING_LITERAL, L.R_ANGLE_SHIFT)
                                         or str(prev) in _ENDS_OPERAND)
    if "';'" in expected and prev is not None and (ends_operand or len(expected) == 1):
        return P4Error(_after(prev), f"expected ';' before {found}")
    if tok.type not in (*names, "$END", L.ANNOTATION) and str(tok).isidentifier() and "identifier" in expected:
        return P4Error(here, f"'{tok}' is a keyword and cannot be used as a name here")
    if len(expected) == 1:
        return P4Error(here, f"expected {expected[0]} before {found}")
    msg = f"unexpected {found}"
    if expected:
        msg += "; expected " + ("one of " if len(expected) > 1 else "") + ", ".join(expected)
    return P4Error(here, msg)


def _token_index(tokens: Sequence[L.P4Token], tok: Token) -> int:
    if tok.type == "$END":
        return len(tokens)
    for i, t in enumerate(tokens):
        if t is tok:
            return i
    for i, t in enumerate(tokens):
        if t.start_pos == tok.start_pos:
            return i
    return 0


def _parse_annotation_bodies(tokens: Sequence[L.P4Token], parser: Lark) -> None:
    """Parse each annotation body as an expression list (or ``k=v`` list) when it is one."""
    for tok in tokens:
        if tok.type != L.ANNOTATION or not tok.annotation_kind:
            continue
        body = tok.annotation_body or []
        start = "annotation_args" if tok.annotation_kind == "paren" else "annotation_kvs"
        try:
            result = parser.parse(list(body), start=start) if body else []
        except (UnexpectedInput, P4Error):
            if start == "annotation_args":
                continue
            # a structured annotation ``@a[...]`` is key=value pairs or an expression list
            try:
                tok.parsed_args = parser.parse(list(body), start="annotation_args")  # type: ignore[attr-defined]
            except (UnexpectedInput, P4Error):
                raise P4Error(tok.loc, f"@{tok}[...]: a structured annotation holds key=value pairs "
                                       "or a list of expressions") from None
            tok.structured_list = True  # type: ignore[attr-defined]
            continue
        if start == "annotation_args":
            tok.parsed_args = result  # type: ignore[attr-defined]
        else:
            tok.parsed_kv = result  # type: ignore[attr-defined]


def parse_tokens(tokens: list[L.P4Token]) -> A.Program:
    """Parse a classified token list into a Program (raises P4Error on syntax errors)."""
    parser, _classifier, display = _lark()
    _parse_annotation_bodies(tokens, parser)
    try:
        return parser.parse(tokens, start="program")
    except UnexpectedToken as exc:
        raise _syntax_error(exc, tokens, display) from None


def tokenize(pp: PreprocessedSource) -> list[L.P4Token]:
    """Tokens of a preprocessed source, classified for this grammar."""
    _parser, classifier, _display = _lark()
    return L.tokenize(pp, classifier)


def parse_preprocessed(pp: PreprocessedSource) -> A.Program:
    """Parse the output of the preprocessor; the Program remembers it as ``preprocessed``."""
    program = parse_tokens(tokenize(pp))
    program.preprocessed = pp
    if program.loc.line == 0:
        program.loc = SourceLoc(pp.main_file, 1, 1, 1, 1)
    return program


def parse_file(
    path: str | Path, include_dirs: Sequence[str | Path] = (), defines: Iterable[str] = ()
) -> A.Program:
    """Preprocess and parse a P4 file."""
    return parse_preprocessed(preprocess_file(path, include_dirs, defines))


def parse_text(
    text: str,
    name: str = "<string>",
    include_dirs: Sequence[str | Path] = (),
    defines: Iterable[str] = (),
    preprocess: bool = True,
) -> A.Program:
    """Parse P4 source held in memory (through cpp unless ``preprocess`` is False)."""
    pp = preprocess_text(text, name, include_dirs, defines) if preprocess else no_preprocess(text, name)
    return parse_preprocessed(pp)
