"""P4_16 lexer: tokens with original positions and the type-name feedback P4 needs.

P4, like C, cannot be parsed without knowing which identifiers name types (``T(x)``
is a constructor call when T is a type, ``f(x)`` a call otherwise; ``(T) x`` is a cast,
``(x)`` a parenthesised expression). p4c solves this with lexer feedback from its symbol
table. We do the equivalent with a pre-scan of the whole token stream: names declared by
``header``, ``header_union``, ``struct``, ``enum``, ``typedef``, ``type``, ``extern``
(object types), ``parser``, ``control`` and ``package`` are global type names, and the
generic type parameters ``<T, U>`` of a declaration are type names inside that
declaration only. Those identifiers become ``TYPE_IDENTIFIER`` tokens.

The lexer also settles the other places where one token of look-ahead is not enough
for an LALR parser, by giving tokens distinct terminal types:

* ``TPARAMS_OPEN``: the ``<`` opening a declaration's type parameter list;
* ``L_ANGLE_ARGS``: the ``<`` of explicit type arguments in a call ``f<bit<8>>(x)``;
* ``R_ANGLE_SHIFT``: a ``>`` immediately followed by ``>`` (so that ``>>`` closes two
  type argument lists, or is a right shift when the grammar sees ``R_ANGLE_SHIFT '>'``);
* identifiers right after a member ``.`` are plain ``IDENTIFIER`` even when they spell a
  keyword or a type (``t.apply()``, ``hdr.type``);
* an annotation ``@name``, ``@name(...)`` or ``@name[...]`` becomes one ``ANNOTATION``
  token carrying its body tokens (annotation bodies may be free-form token sequences).

Every token carries ``loc``: its position in the ORIGINAL file, via cpp's line markers.
cpp collapses runs of blanks, so columns are re-aligned by finding each token's text on
its original source line (tokens coming from macro expansions keep an approximate column).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lark import Token

from p4switch.frontend.errors import P4Error, SourceLoc
from p4switch.frontend.preprocess import PreprocessedSource

_TOKEN_RE = re.compile(
    r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r\f\v]+)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*.*?\*/)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[0-9][0-9A-Za-z_]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>\{\#\}|&&&|\|\+\|=|\|-\|=|\|\+\||\|-\||\.\.|<<=|<<|<=|>=|==|!=|&&|\|\||\+\+|\+=|-=|\*=|/=|%=|&=|\|=|\^=|[{}()\[\];:,.=<>+\-*/%&|^~!?@])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)

# Terminal names the grammar declares for the lexer to produce.
IDENTIFIER = "IDENTIFIER"
TYPE_IDENTIFIER = "TYPE_IDENTIFIER"
INTEGER = "INTEGER"
STRING_LITERAL = "STRING_LITERAL"
ANNOTATION = "ANNOTATION"
TPARAMS_OPEN = "TPARAMS_OPEN"
L_ANGLE_ARGS = "L_ANGLE_ARGS"
R_ANGLE_SHIFT = "R_ANGLE_SHIFT"

# Keywords that may also be used as ordinary names (P4's nonTypeName).
CONTEXTUAL_KEYWORDS = frozenset({"apply", "key", "actions", "state", "entries", "type", "priority"})
_TYPE_DECL_KEYWORDS = frozenset({"header", "header_union", "struct", "parser", "control", "package"})
_TYPE_KEYWORDS = frozenset({"bit", "int", "varbit", "bool", "error", "string", "tuple", "void", "match_kind"})
# Tokens after which a ``.`` selects a member rather than starting a global ``.name``.
_EXPR_END_TEXT = frozenset({")", "]", "this", "error"}) | CONTEXTUAL_KEYWORDS
# Tokens that may precede a declared name followed by type parameters ``name<T>``.
_BEFORE_TPARAM_NAME = _TYPE_KEYWORDS | {"extern", ">", "]"} | _TYPE_DECL_KEYWORDS
# Keywords after which ``name<T>(`` is a call with type arguments, not a declaration.
_NOT_BEFORE_TPARAM_NAME = frozenset({
    "return", "else", "if", "exit", "transition", "select", "switch", "default", "in", "out",
    "inout", "this", "true", "false", "const", "action", "table", "state", "key", "actions",
    "entries", "typedef", "type", "value_set", "apply", "enum",
})
# Tokens allowed inside explicit type arguments of a call.
_TYPE_ARG_TEXT = _TYPE_KEYWORDS | {"<", ">", ",", "_", "[", "]", "(", ")"}


@dataclass
class RawToken:
    """A token before classification; ``line``/``col`` are positions in the cpp output."""

    kind: str  # id, num, str, punct, ann
    text: str
    pos: int
    line: int
    col: int
    body: list[RawToken] | None = None  # annotations: body tokens
    body_kind: str = ""  # annotations: "", "paren" or "bracket"


class P4Token(Token):
    """A lark token that also knows its original :class:`SourceLoc`."""

    loc: SourceLoc
    annotation_body: list[P4Token] | None
    annotation_raw: list[str]
    annotation_kind: str


@dataclass
class _Scope:
    start: int
    end: int
    names: frozenset[str]


@dataclass
class TypeNames:
    """Result of the pre-scan: global type names and scoped type parameters."""

    global_names: set[str] = field(default_factory=set)
    scopes: list[_Scope] = field(default_factory=list)
    tparam_opens: set[int] = field(default_factory=set)


def scan_raw(pp: PreprocessedSource) -> list[RawToken]:
    """Split the preprocessed text into raw tokens; characters that are no P4 token become
    ``bad`` tokens (legal only inside a free-form annotation body, see ``reject_bad``)."""
    out: list[RawToken] = []
    line, line_start = 1, 0
    for m in _TOKEN_RE.finditer(pp.text):
        kind = m.lastgroup
        if kind == "nl":
            line += 1
            line_start = m.end()
            continue
        if kind in ("ws", "lc"):
            continue
        if kind == "bc":
            text = m.group()
            n = text.count("\n")
            if n:
                line += n
                line_start = m.start() + text.rfind("\n") + 1
            continue
        text = m.group()
        col = m.start() - line_start + 1
        out.append(RawToken(kind, text, m.start(), line, col))  # type: ignore[arg-type]
    return out


def reject_bad(raw: list[RawToken], pp: PreprocessedSource) -> list[RawToken]:
    """A character that is no P4 token is an error outside annotation bodies (free-form
    annotations, e.g. ``@text(it's free)``, may hold any text, as in p4c)."""
    for t in raw:
        if t.kind == "bad":
            raise P4Error(_pp_loc(pp, t.line, t.col, t.text), _bad_char_message(t.text))
    return raw


def _bad_char_message(ch: str) -> str:
    if ch == '"':
        return "unterminated string literal"
    if ch == "'":
        return "unexpected character \"'\" (P4 has no character literals)"
    return f"unexpected character '{ch}'"


def _pp_loc(pp: PreprocessedSource, line: int, col: int, text: str) -> SourceLoc:
    """Original location of ``text`` seen at cpp-output ``line``:``col``.

    cpp only ever shrinks blank runs, so the original column is at or after ``col``:
    the first occurrence of ``text`` from there is taken.
    """
    file, oline = pp.origin(line)
    lines = pp.source_lines(file)
    if lines is not None and 1 <= oline <= len(lines):
        idx = lines[oline - 1].find(text, col - 1)
        if idx >= 0:
            col = idx + 1
    return SourceLoc(file, oline, col, oline, col + len(text) - 1)


def _matching(raw: Sequence[RawToken], i: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket opened at ``i`` (or -1)."""
    depth = 0
    for j in range(i, len(raw)):
        t = raw[j].text if raw[j].kind == "punct" else None
        if t == open_:
            depth += 1
        elif t == close:
            depth -= 1
            if depth == 0:
                return j
    return -1


def collapse_annotations(raw: list[RawToken], pp: PreprocessedSource) -> list[RawToken]:
    """Replace ``@name [(...)|[...]]`` by one ``ann`` token holding its body."""
    out: list[RawToken] = []
    i, n = 0, len(raw)
    while i < n:
        t = raw[i]
        if not (t.kind == "punct" and t.text == "@"):
            out.append(t)
            i += 1
            continue
        if i + 1 >= n or raw[i + 1].kind != "id" or raw[i + 1].pos != t.pos + 1:
            raise P4Error(_pp_loc(pp, t.line, t.col, "@"), "expected an annotation name right after '@'")
        name = raw[i + 1]
        ann = RawToken("ann", name.text, t.pos, t.line, t.col, body=[], body_kind="")
        i += 2
        if i < n and raw[i].kind == "punct" and raw[i].text in "([":
            open_, close = raw[i].text, ")" if raw[i].text == "(" else "]"
            j = _matching(raw, i, open_, close)
            if j < 0:
                raise P4Error(_pp_loc(pp, raw[i].line, raw[i].col, open_),
                              f"unterminated annotation body: missing '{close}' for '@{name.text}{open_}'")
            ann.body = raw[i + 1:j]
            ann.body_kind = "paren" if open_ == "(" else "bracket"
            i = j + 1
        out.append(ann)
    return out


def _is(t: RawToken, text: str) -> bool:
    return t.kind == "punct" and t.text == text


def _index_of(raw: Sequence[RawToken], i: int, stop: str) -> int:
    """Index of the first ``stop`` punctuation at or after ``i`` outside brackets (or -1)."""
    depth = 0
    for j in range(i, min(len(raw), i + 400)):
        t = raw[j]
        if t.kind != "punct":
            continue
        if t.text == stop and depth <= 0:
            return j
        if t.text in "({[":
            depth += 1
        elif t.text in ")}]":
            depth -= 1
    return -1


def _name_before(raw: Sequence[RawToken], i: int, stop: str) -> str | None:
    """The identifier right before the first ``stop`` punctuation at or after ``i``."""
    j = _index_of(raw, i, stop)
    if j > 0 and raw[j - 1].kind == "id":
        return raw[j - 1].text
    return None


def _tparam_list(raw: Sequence[RawToken], k: int) -> tuple[list[str], int] | None:
    """Names in ``<A, B>`` starting at ``k`` and the index after ``>``, if that shape."""
    names: list[str] = []
    j = k + 1
    while j < len(raw) and raw[j].kind == "id":
        names.append(raw[j].text)
        j += 1
        if j < len(raw) and _is(raw[j], ","):
            j += 1
            continue
        break
    if names and j < len(raw) and _is(raw[j], ">"):
        return names, j + 1
    return None


def _scope_bounds(raw: Sequence[RawToken], k: int, after: int) -> tuple[int, int]:
    """Start (after the previous ``;``/``{``/``}``) and end of a generic declaration."""
    start = k
    while start > 0 and not (raw[start - 1].kind == "punct" and raw[start - 1].text in ";{}"):
        start -= 1
    j = after
    while j < len(raw):
        t = raw[j]
        if _is(t, "("):
            j = _matching(raw, j, "(", ")")
            if j < 0:
                return start, len(raw)
            j += 1
            continue
        if _is(t, "{"):
            end = _matching(raw, j, "{", "}")
            return start, (len(raw) if end < 0 else end + 1)
        if _is(t, ";"):
            return start, j + 1
        j += 1
    return start, len(raw)


def _declares_newtype(raw: Sequence[RawToken], i: int) -> bool:
    if i == 0:
        return True
    prev = raw[i - 1]
    return prev.kind == "ann" or (prev.kind == "punct" and prev.text in ";}")


def prescan_types(raw: Sequence[RawToken]) -> TypeNames:
    """Find every declared type name and every generic type parameter list."""
    names = TypeNames()
    n = len(raw)
    for i, t in enumerate(raw):
        if t.kind == "id":
            _prescan_keyword(raw, i, t.text, names)
        elif _is(t, "<") and i >= 2 and raw[i - 1].kind == "id":
            before = raw[i - 2]
            if (before.kind == "id" and before.text not in _NOT_BEFORE_TPARAM_NAME) or (
                before.kind == "punct" and before.text in _BEFORE_TPARAM_NAME
            ):
                shape = _tparam_list(raw, i)
                if shape and shape[1] < n and raw[shape[1]].kind == "punct" and raw[shape[1]].text in "({":
                    start, end = _scope_bounds(raw, i, shape[1])
                    names.scopes.append(_Scope(start, end, frozenset(shape[0])))
                    names.tparam_opens.add(i)
    names.scopes.sort(key=lambda s: s.start)
    return names


def _prescan_keyword(raw: Sequence[RawToken], i: int, word: str, names: TypeNames) -> None:
    n = len(raw)
    nxt = raw[i + 1] if i + 1 < n else None
    if word in _TYPE_DECL_KEYWORDS:
        if nxt is not None and nxt.kind == "id" and (i == 0 or not _is(raw[i - 1], ".")):
            names.global_names.add(nxt.text)
    elif word == "enum":
        name = _name_before(raw, i + 1, "{")
        if name:
            names.global_names.add(name)
    elif word == "extern":
        if nxt is None or nxt.kind != "id" or i + 2 >= n:
            return
        after = raw[i + 2]
        if _is(after, "{"):
            names.global_names.add(nxt.text)
        elif _is(after, "<"):
            close = _matching_angle(raw, i + 2)
            if close > 0 and close + 1 < n and _is(raw[close + 1], "{"):
                names.global_names.add(nxt.text)
    elif word == "typedef" or (word == "type" and _declares_newtype(raw, i)):
        j = _index_of(raw, i + 1, ";")
        if j >= 3 and raw[j - 1].kind == "id" and (raw[j - 2].kind == "id" or raw[j - 2].text in (">", "]")):
            names.global_names.add(raw[j - 1].text)


def _matching_angle(raw: Sequence[RawToken], i: int) -> int:
    depth = 0
    for j in range(i, min(len(raw), i + 200)):
        t = raw[j]
        if t.kind != "punct":
            continue
        if t.text == "<":
            depth += 1
        elif t.text == ">":
            depth -= 1
            if depth == 0:
                return j
        elif t.text in ";{}":
            return -1
    return -1


class Classifier:
    """Turns raw tokens into lark tokens using the grammar's terminal names."""

    def __init__(self, literal_terminals: dict[str, str]) -> None:
        # text -> terminal name, e.g. "header" -> "HEADER", ";" -> "SEMICOLON"
        self.literals = literal_terminals

    def classify(
        self,
        raw: Sequence[RawToken],
        types: TypeNames,
        pp: PreprocessedSource,
        offset: int = 0,
        aligner: _ColumnAligner | None = None,
    ) -> list[P4Token]:
        """Classify ``raw`` (``offset`` is its index in the whole stream, for scopes)."""
        aligner = aligner or _ColumnAligner(pp)
        out: list[P4Token] = []
        scopes = types.scopes
        active: list[_Scope] = []
        next_scope = 0
        for idx, t in enumerate(raw):
            gi = idx + offset
            while next_scope < len(scopes) and scopes[next_scope].start <= gi:
                active.append(scopes[next_scope])
                next_scope += 1
            if active:
                active = [s for s in active if s.end > gi]
            kind = self._terminal(raw, idx, gi, out, types, active)
            loc = aligner.locate(t)
            tok = P4Token(kind, t.text, t.pos, loc.line, loc.col, loc.end_line, loc.end_col, t.pos + len(t.text))
            tok.loc = loc
            if t.kind == "ann":
                tok.annotation_raw = [b.text for b in t.body or []]
                tok.annotation_kind = t.body_kind
                tok.annotation_body = (
                    self.classify(t.body, types, pp, gi, aligner) if t.body else []
                )
            out.append(tok)
        return out

    def _is_type(self, text: str, types: TypeNames, active: list[_Scope]) -> bool:
        if text in types.global_names:
            return True
        return any(text in s.names for s in active)

    def _terminal(
        self,
        raw: Sequence[RawToken],
        idx: int,
        gi: int,
        out: list[P4Token],
        types: TypeNames,
        active: list[_Scope],
    ) -> str:
        t = raw[idx]
        if t.kind == "ann":
            return ANNOTATION
        if t.kind == "num":
            return INTEGER
        if t.kind == "str":
            return STRING_LITERAL
        if t.kind == "id":
            if out and out[-1] == "." and out[-1].type == self.literals["."] and _member_dot(out):
                return IDENTIFIER
            lit = self.literals.get(t.text)
            if lit is not None:
                return lit
            return TYPE_IDENTIFIER if self._is_type(t.text, types, active) else IDENTIFIER
        if t.text == ">":
            nxt = raw[idx + 1] if idx + 1 < len(raw) else None
            if nxt is not None and nxt.text in (">", ">=") and nxt.pos == t.pos + 1:
                return R_ANGLE_SHIFT
        elif t.text == "<":
            if gi in types.tparam_opens:
                return TPARAMS_OPEN
            if out and out[-1].type == IDENTIFIER and self._type_args_call(raw, idx, types, active):
                return L_ANGLE_ARGS
        return self.literals.get(t.text, t.text)

    def _type_args_call(self, raw: Sequence[RawToken], idx: int, types: TypeNames, active: list[_Scope]) -> bool:
        """``name<types>(``: explicit type arguments of a call, not a comparison."""
        first = raw[idx + 1] if idx + 1 < len(raw) else None
        if first is None or not (first.text in _TYPE_KEYWORDS or first.text == "_"
                                 or (first.kind == "id" and self._is_type(first.text, types, active))):
            return False
        depth = 0
        for j in range(idx, min(len(raw), idx + 100)):
            t = raw[j]
            if t.kind == "id" and not (t.text in _TYPE_ARG_TEXT or self._is_type(t.text, types, active)):
                return False
            if t.kind == "str" or (t.kind == "punct" and t.text not in _TYPE_ARG_TEXT):
                return False
            if t.text == "<":
                depth += 1
            elif t.text == ">":
                depth -= 1
                if depth == 0:
                    return j + 1 < len(raw) and _is(raw[j + 1], "(")
        return False


def _member_dot(out: list[P4Token]) -> bool:
    """Is the ``.`` just emitted (out[-1]) a member selector?"""
    if len(out) < 2:
        return False
    prev = out[-2]
    return prev.type in (IDENTIFIER, TYPE_IDENTIFIER) or str(prev) in _EXPR_END_TEXT


class _ColumnAligner:
    """Maps cpp-output columns back to original columns (cpp collapses blanks)."""

    def __init__(self, pp: PreprocessedSource) -> None:
        self.pp = pp
        self.line = -1
        self.cursor = 0
        self.orig: str | None = None
        self.file = ""
        self.oline = 0

    def locate(self, t: RawToken) -> SourceLoc:
        if t.line != self.line:
            self.line = t.line
            self.file, self.oline = self.pp.origin(t.line)
            lines = self.pp.source_lines(self.file)
            self.orig = lines[self.oline - 1] if lines is not None and 1 <= self.oline <= len(lines) else None
            self.cursor = 0
        text = "@" if t.kind == "ann" else t.text
        col = self._find(text)
        if col < 0:
            col = t.col - 1 if self.orig is None else self._skip_blanks()
        else:
            self.cursor = col + len(text)
        return SourceLoc(self.file, self.oline, col + 1, self.oline, col + len(t.text if t.kind != "ann" else "@" + t.text))

    def _find(self, text: str) -> int:
        if self.orig is None:
            return -1
        idx = self.orig.find(text, self.cursor)
        word = text[0].isalnum() or text[0] == "_"
        while idx >= 0 and word and not self._word_bounded(idx, len(text)):
            idx = self.orig.find(text, idx + 1)
        return idx

    def _word_bounded(self, idx: int, length: int) -> bool:
        s = self.orig or ""
        before = s[idx - 1] if idx > 0 else " "
        after = s[idx + length] if idx + length < len(s) else " "
        return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")

    def _skip_blanks(self) -> int:
        s = self.orig or ""
        c = self.cursor
        while c < len(s) and s[c] in " \t":
            c += 1
        return min(c, max(len(s) - 1, 0))


def tokenize(pp: PreprocessedSource, classifier: Classifier) -> list[P4Token]:
    """The full pipeline: raw scan, annotations, type pre-scan, classification."""
    raw = reject_bad(collapse_annotations(scan_raw(pp), pp), pp)
    types = prescan_types(raw)
    return classifier.classify(raw, types, pp)


def literal_terminals(terminals: Iterable[object]) -> dict[str, str]:
    """Map literal text to terminal name from lark's terminal definitions."""
    out: dict[str, str] = {}
    for term in terminals:
        pattern = term.pattern  # type: ignore[attr-defined]
        if pattern.type == "str":
            out[pattern.value] = term.name  # type: ignore[attr-defined]
    return out
