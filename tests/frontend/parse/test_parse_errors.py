"""Syntax and lexical errors: exact original line:col and messages written in P4 terms."""

from __future__ import annotations

import pytest

from p4switch.frontend.errors import DiagnosticBag, P4Error, P4ErrorGroup, SourceLoc, format_error
from p4switch.frontend.parser import parse_text


def error_of(text: str, preprocess: bool = False) -> P4Error:
    with pytest.raises(P4Error) as info:
        parse_text(text, "t.p4", preprocess=preprocess)
    return info.value


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        # a missing ';' is reported right after the token it should follow
        ("header h_t {\n    bit<8> a\n}\n", 2, 13, "expected ';' before '}'"),
        ("const bit<8> X = 1\nconst bit<8> Y = 2;\n", 1, 19, "expected ';' before 'const'"),
        ("control C() { table t { key = { a: exact } } apply {} }\n", 1, 41, "expected ';' before '}'"),
        ("struct s {\n  foo_t x;\n}\n", 2, 3, "unknown type 'foo_t'"),
        ("control C(in foo_t x) { apply {} }\n", 1, 14, "unknown type 'foo_t'"),
        ("const bit<8> default = 1;\n", 1, 14, "'default' is a keyword"),
        ("control C() { apply { x = 1 + ; } }\n", 1, 31, "expected an expression before ';'"),
        ("control C() { apply { if (true { } } }\n", 1, 32, "unexpected '{'; expected one of ')'"),
        ("control C() { apply {\n", 1, 22, "unexpected end of file"),
        ("control C() { apply { } } }\n", 1, 27, "unexpected '}'"),
        ("parser P() { state start { transition ; } }\n", 1, 39, "unexpected ';'; expected one of identifier"),
    ],
)
def test_syntax_errors(text: str, line: int, col: int, message: str) -> None:
    err = error_of(text)
    assert (err.loc.file, err.loc.line, err.loc.col) == ("t.p4", line, col), str(err)
    assert message in err.message


def test_expected_tokens_are_p4_text_not_grammar_terminal_names() -> None:
    err = error_of("control C() { apply { if (true { } } }\n")
    for internal in ("LPAR", "RPAR", "__ANON", "IDENTIFIER", "$END", "SEMICOLON"):
        assert internal not in err.message


@pytest.mark.parametrize(
    ("text", "col", "message"),
    [
        ("const bit<8> X = 1 $ 2;\n", 20, "unexpected character '$'"),
        ("const bit<8> X = 'a';\n", 18, "P4 has no character literals"),
        ('const bit<8> X = "abc;\n', 18, "unterminated string literal"),
        ("const bit<8> X = 0b102;\n", 18, "invalid integer literal '0b102'"),
        ("const bit<8> X = 8w;\n", 18, "invalid integer literal '8w'"),
        ('@name("x" const bit<8> X = 1;\n', 6, "missing ')'"),
        ("@ const bit<8> X = 1;\n", 1, "annotation name"),
    ],
)
def test_lexical_errors(text: str, col: int, message: str) -> None:
    err = error_of(text)
    assert (err.loc.line, err.loc.col) == (1, col), str(err)
    assert message in err.message


def test_error_positions_survive_cpp_whitespace_collapsing() -> None:
    # cpp turns "X    =" into "X =": columns must still be those of the original text
    text = "const   bit<8>     X    =    1\n\n\nconst bit<8> Y = 2;\n"
    err = error_of(text, preprocess=True)
    assert (err.loc.line, err.loc.col) == (1, 31)


def test_error_in_a_later_line_after_comments_and_macros() -> None:
    text = "/* a\n   multi-line comment */\n#define SIZE 8\nconst bit<SIZE> X = 1 // ok\n$\n"
    err = error_of(text, preprocess=True)
    assert (err.loc.line, err.loc.col) == (5, 1) and "'$'" in err.message


def test_format_error_shows_line_and_caret_under_the_span() -> None:
    text = "header h_t {\n    bit<8> a\n}\n"
    err = error_of(text)
    out = format_error(err, text.splitlines()).splitlines()
    assert out[0] == "t.p4:2:13: error: expected ';' before '}'"
    assert out[1] == "    bit<8> a"
    assert out[2] == " " * 12 + "^"
    unknown = error_of("struct s { foo_t x; }\n")
    lines = format_error(unknown, {"t.p4": ["struct s { foo_t x; }"]}).splitlines()
    assert lines[2] == " " * 11 + "^~~~~"


def test_format_error_without_source_or_location() -> None:
    err = P4Error(None, "something global")
    assert format_error(err) == "error: something global"
    missing = P4Error(SourceLoc("/nonexistent/x.p4", 3, 4, 3, 4), "bad")
    assert format_error(missing) == "/nonexistent/x.p4:3:4: error: bad"


def test_diagnostic_bag_reports_all_errors_sorted_by_location() -> None:
    bag = DiagnosticBag()
    assert not bag
    bag.raise_if_any()  # nothing collected: no exception
    bag.error(SourceLoc("a.p4", 9, 1, 9, 1), "second")
    bag.error(SourceLoc("a.p4", 2, 5, 2, 5), "first")
    bag.warning(SourceLoc("a.p4", 1, 1, 1, 1), "just a warning")
    assert len(bag) == 2 and len(bag.warnings) == 1
    with pytest.raises(P4ErrorGroup) as info:
        bag.raise_if_any()
    assert [e.message for e in info.value.errors] == ["first", "second"]
    text = format_error(info.value, {"a.p4": []})
    assert text.splitlines() == ["a.p4:2:5: error: first", "a.p4:9:1: error: second"]


def test_lexical_error_positions_survive_cpp_whitespace_collapsing() -> None:
    err = error_of("const   bit<8>      X =   1 $ 2;\n", preprocess=True)
    assert (err.loc.line, err.loc.col) == (1, 29)
