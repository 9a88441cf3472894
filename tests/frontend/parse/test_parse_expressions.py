"""Expressions: literals, precedence as in the P4_16 spec, casts, slices, type arguments."""

from __future__ import annotations

import pytest

from p4switch.frontend import ast as A
from p4switch.frontend.parser import parse_text

PRELUDE = """
header h_t { bit<8> f; }
struct s_t { h_t h; }
enum E { A, B }
extern Ext<T> { Ext(); T get<U>(in U x); }
typedef bit<8> byte_t;
"""


def expr(text: str) -> A.Expression:
    prog = parse_text(PRELUDE + f"const bit<8> X = {text};\n", preprocess=False)
    return prog.declarations[-1].value


def shape(e: A.Expression) -> object:
    """A compact nested form of an expression, for comparing trees."""
    if isinstance(e, A.BinaryExpr):
        return (e.op, shape(e.left), shape(e.right))
    if isinstance(e, A.UnaryExpr):
        return (e.op, shape(e.operand))
    if isinstance(e, A.ConditionalExpr):
        return ("?:", shape(e.cond), shape(e.if_true), shape(e.if_false))
    if isinstance(e, A.PathExpr):
        return e.name
    if isinstance(e, A.IntLiteral):
        return e.value
    if isinstance(e, A.CastExpr):
        return ("cast", shape(e.expr))
    if isinstance(e, A.MemberExpr):
        return (shape(e.expr), "." + e.member)
    if isinstance(e, A.CallExpr):
        return ("call", shape(e.method), *[shape(a.value) for a in e.args])
    if isinstance(e, A.SliceExpr):
        return ("slice", shape(e.expr), shape(e.hi), shape(e.lo))
    if isinstance(e, A.IndexExpr):
        return ("index", shape(e.expr), shape(e.index))
    return type(e).__name__


@pytest.mark.parametrize(
    ("text", "value", "width", "signed"),
    [
        ("5", 5, None, False),
        ("8w5", 5, 8, False),
        ("8s5", 5, 8, True),
        ("0x1F", 31, None, False),
        ("0X1f", 31, None, False),
        ("16w0xFFFF", 0xFFFF, 16, False),
        ("0b1010_1010", 0xAA, None, False),
        ("4w0b1010", 10, 4, False),
        ("0o17", 15, None, False),
        ("0d99", 99, None, False),
        ("1_000", 1000, None, False),
        ("32s0x10", 16, 32, True),
    ],
)
def test_integer_literals(text: str, value: int, width: int | None, signed: bool) -> None:
    e = expr(text)
    assert isinstance(e, A.IntLiteral)
    assert (e.value, e.width, e.signed, e.text) == (value, width, signed, text)


def test_bool_and_string_literals() -> None:
    assert expr("true").value is True and expr("false").value is False
    s = expr('"a \\"quoted\\" word\\n"')
    assert isinstance(s, A.StringLiteral) and s.value == 'a "quoted" word\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a + b * c", ("+", "a", ("*", "b", "c"))),
        ("a - b - c", ("-", ("-", "a", "b"), "c")),
        ("a << 1 + 2", ("<<", "a", ("+", 1, 2))),
        ("a >> 1", (">>", "a", 1)),
        ("a << 2 >> 1", (">>", ("<<", "a", 2), 1)),
        ("a & b | c ^ d", ("|", ("&", "a", "b"), ("^", "c", "d"))),
        ("a == b & c", ("==", "a", ("&", "b", "c"))),  # P4: comparisons bind looser than &
        ("a < b == c > d", ("==", ("<", "a", "b"), (">", "c", "d"))),
        ("a && b || c && d", ("||", ("&&", "a", "b"), ("&&", "c", "d"))),
        ("a ++ b + c", ("+", ("++", "a", "b"), "c")),
        ("a |+| b |-| c", ("|-|", ("|+|", "a", "b"), "c")),
        ("!a && ~b == -c", ("&&", ("!", "a"), ("==", ("~", "b"), ("-", "c")))),
        ("a ? b : c ? d : e", ("?:", "a", "b", ("?:", "c", "d", "e"))),
        ("a > 1 ? b : c", ("?:", (">", "a", 1), "b", "c")),
        ("(a + b) * c", ("*", ("+", "a", "b"), "c")),
        ("a % b / c", ("/", ("%", "a", "b"), "c")),
        ("a <= b && c >= d", ("&&", ("<=", "a", "b"), (">=", "c", "d"))),
        ("a != +b", ("!=", "a", ("+", "b"))),
    ],
)
def test_precedence_and_associativity(text: str, expected: object) -> None:
    assert shape(expr(text)) == expected


def test_casts_bind_tighter_than_binary_operators() -> None:
    e = expr("(bit<8>) a + b")
    assert shape(e) == ("+", ("cast", "a"), "b")
    assert isinstance(e.left.type_ref, A.BitsType)
    nested = expr("(bit<16>)(int<16>) a")
    assert isinstance(nested.expr, A.CastExpr) and nested.expr.type_ref.signed
    named = expr("(byte_t) a")
    assert isinstance(named, A.CastExpr) and named.type_ref.name == "byte_t"
    assert shape(expr("(a) - b")) == ("-", "a", "b")  # not a cast: a is not a type


def test_member_index_slice_and_calls() -> None:
    assert shape(expr("s.h.f")) == (("s", ".h"), ".f")
    assert shape(expr("a[3]")) == ("index", "a", 3)
    assert shape(expr("a[7:4]")) == ("slice", "a", 7, 4)
    assert shape(expr("s.h.f[3:0]")) == ("slice", (("s", ".h"), ".f"), 3, 0)
    assert shape(expr("s.h.isValid()")) == ("call", (("s", ".h"), ".isValid"))
    assert shape(expr("f(1, a)")) == ("call", "f", 1, "a")
    assert shape(expr("(bit<4>) a[7:4]")) == ("cast", ("slice", "a", 7, 4))


def test_type_members_and_error_members() -> None:
    e = expr("E.A")
    assert isinstance(e, A.TypeMemberExpr) and e.type_ref.name == "E" and e.member == "A"
    err = expr("error.NoError")
    assert isinstance(err, A.TypeMemberExpr) and isinstance(err.type_ref, A.ErrorType)


def test_explicit_type_arguments_versus_comparison() -> None:
    call = expr("e.get<bit<16>>(a)")
    assert isinstance(call, A.CallExpr) and isinstance(call.type_args[0], A.BitsType)
    assert call.type_args[0].width.value == 16
    call2 = expr("f<byte_t>(a)")
    assert isinstance(call2, A.CallExpr) and call2.type_args[0].name == "byte_t"
    cmp_ = expr("a < b")
    assert shape(cmp_) == ("<", "a", "b")
    both = expr("a < b && c > d")
    assert shape(both) == ("&&", ("<", "a", "b"), (">", "c", "d"))


def test_constructor_calls_of_specialized_types() -> None:
    e = expr("Ext<bit<8>>()")
    assert isinstance(e, A.ConstructorCallExpr) and isinstance(e.type_ref, A.SpecializedType)
    assert e.type_ref.base.name == "Ext" and e.type_ref.args[0].width.value == 8


def test_list_struct_and_invalid_expressions() -> None:
    lst = expr("{a, 8w1, {b}}")
    assert isinstance(lst, A.ListExpr) and isinstance(lst.elements[2], A.ListExpr)
    assert expr("{}").elements == []
    st = expr("{f = 1, g = a}")
    assert isinstance(st, A.StructExpr) and [kv.name for kv in st.fields] == ["f", "g"]
    assert isinstance(expr("{#}"), A.InvalidHeaderExpr)


def test_global_scope_prefix() -> None:
    e = expr(".a + b")
    assert e.left.global_scope and not e.right.global_scope


def test_expression_locations_cover_their_operands() -> None:
    e = expr("aa + bb * cc")
    line = e.loc.line
    assert (e.loc.line, e.loc.end_line) == (line, line)
    text = "const bit<8> X = aa + bb * cc;"
    assert e.loc.col == text.index("aa") + 1 and e.loc.end_col == text.index("cc") + 2
    assert e.right.loc.col == text.index("bb") + 1
