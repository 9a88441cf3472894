"""The engine form's emitter: a block of the checked program as register-machine code.

Why a second output of the same compiler and not a second compiler: the names, the layout
(every field's slot), the constants, the checks and the error codes are resolved by the
pipeline compiler's own visitors (``ref_of``, ``scalar`` for constant folding,
``runtime_const``, ``leaves``, ``error_code``); this mixin only turns the statement and
expression kinds it knows into instructions for ``hbh_engine.P4Program`` (engine/src/p4/p4vm.rs)
instead of closures. A block that uses anything else raises :class:`Unsupported` naming the
construct, and that block runs on the closures (``V1Pipeline`` logs one line per block); the
closures are also the differential oracle the tests compare the engine with.

Registers: the PHV slots themselves, then temporaries. Values are ``bit<w>`` with ``w <= 64``,
``bool`` (0/1) and error/enum codes; ``int<w>``, wider fields, varbits, header unions and
stacks with run-time indexes are not in this slice (see docs/background/engine.md, "The P4 pipeline in the engine").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from p4switch.frontend import ast
from p4switch.frontend import types as T

from .calls import method_name, method_target
from .exprs import header_storage, is_aggregate
from .layout import HeaderS, ScalarS, Storage, scalar_info
from .packetio import _emit_order
from .parser import MAX_PARSER_STEPS, case_keysets
from .scope import Const, Scope, ValueSet
from .stmts import contains
from .tables import CompiledTable

try:
    from hbh_engine import Cells
except ImportError:  # no engine: nothing is emitted for it anyway
    Cells = None

CK = ast.CallKind

# Opcodes and operators: engine/src/p4/p4vm.rs (mod op, BinOp::from_code).
(CONST, MOV, BIN, NOT, LNOT, NEG, JMP, JZ, JNZ, EXTRACT, EMIT, REJECT, END, STEP, CSUM16, PY, CALL, TABLE, REGREAD,
 REGWRITE, COUNT, CLONE, TRUNCATE, PRESERVE) = range(24)
# Selector hash algorithms the engine computes (engine/src/p4/p4tables.rs, ALGO_*).
SELECTOR_ALGOS = {"crc16": 0, "crc32": 1, "csum16": 2}
STATUS_END, STATUS_REJECT = -1, -2
BINOPS = {"+": 0, "-": 1, "*": 2, "&": 3, "|": 4, "^": 5, "<<": 6, ">>": 7, "==": 8, "!=": 9, "<": 10,
          "<=": 11, ">": 12, ">=": 13}
MASKED = {"+", "-", "*", "<<"}
WORD = 64


class Unsupported(Exception):
    """A construct the emitter does not translate yet: the block stays on the closures."""

    def __init__(self, what: str, node: Any = None) -> None:
        loc = getattr(node, "loc", None)
        where = f" at {loc}" if loc is not None else ""
        super().__init__(f"{what}{where}")
        self.what = what


@dataclass
class EngineForm:
    """What ``hbh_engine.P4Program`` is built from: one code list per block, the headers
    extract/emit name by index, the field lists checksums name by index, and the registers."""

    nslots: int
    blocks: list[list[tuple]] = field(default_factory=list)
    roles: dict[str, int] = field(default_factory=dict)
    headers: list[tuple[int, list[tuple[int, int]]]] = field(default_factory=list)
    lists: list[list[tuple[int, int]]] = field(default_factory=list)
    callbacks: list[Callable[[list], Any]] = field(default_factory=list)
    ntemps: int = 0
    bool_slots: set[int] = field(default_factory=set)
    # Tables applied by TABLE, by index: (P4Info id, key fields, profile id or 0, selector
    # (field list, algorithm, width) or None), and their runtime states (attached at load).
    tables: list[tuple] = field(default_factory=list)
    table_states: list[Any] = field(default_factory=list)
    _header_index: dict[int, int] = field(default_factory=dict)
    _table_index: dict[int, int] = field(default_factory=dict)
    cells: list[Any] = field(default_factory=list)  # hbh_engine.Cells the program updates, by index
    _cells_index: dict[int, int] = field(default_factory=dict)

    def cells_of(self, cells: Any, node: Any) -> int:
        """The index of a register's or counter's cells (the engine's shared store)."""
        if Cells is None or not isinstance(cells, Cells):
            raise Unsupported("a register or counter whose cells are not the engine's (signed, or over 64 bits)",
                              node)
        if id(cells) not in self._cells_index:
            self._cells_index[id(cells)] = len(self.cells)
            self.cells.append(cells)
        return self._cells_index[id(cells)]

    def table(self, ct: CompiledTable, selector: tuple[int, int, int] | None) -> int:
        """The index of table ``ct`` in the form (added on first apply)."""
        ts = ct.tstate
        if ts.id not in self._table_index:
            self._table_index[ts.id] = len(self.tables)
            self.tables.append((ts.id, len(ts.fields), ts.profile.id if ts.profile is not None else 0, selector))
            self.table_states.append(ts)
        return self._table_index[ts.id]

    def field_list(self, fields: list[tuple[int, int]]) -> int:
        """The index of a (register, width) list (checksums, selector hashes)."""
        self.lists.append(fields)
        return len(self.lists) - 1

    def callback(self, fn: Callable[[list], Any]) -> int:
        """The index of a closure the engine calls (``PY``)."""
        self.callbacks.append(fn)
        return len(self.callbacks) - 1

    def header(self, h: HeaderS, node: Any) -> int:
        """The index of fixed header ``h`` in the form (added on first use)."""
        if h.valid not in self._header_index:
            fields = []
            for f in h.leaf_fields():
                if not isinstance(f, ScalarS) or f.signed or not 0 < f.width <= WORD:
                    raise Unsupported(f"header {h.type} with a field that is not bit<1..64>", node)
                fields.append((f.slot, f.width))
            if sum(w for _, w in fields) % 8:
                raise Unsupported(f"header {h.type} that is not whole bytes", node)
            self._header_index[h.valid] = len(self.headers)
            self.headers.append((h.valid, fields))
        return self._header_index[h.valid]


@dataclass(frozen=True)
class _LabelRef:
    """A jump target in code being emitted (an instruction index once placed)."""

    label: int


class BlockEmitter:
    """Code for one block: instructions, temporaries and labels (resolved by ``finish``)."""

    def __init__(self, form: EngineForm, callbacks: bool) -> None:
        self.form = form
        self.callbacks = callbacks  # may a statement run through its closure (controls)?
        self.called: list[str] = []  # the constructs that do
        self.code: list[list] = []
        self.labels: list[int | None] = []
        self.ntemps = 0

    def temp(self) -> int:
        self.ntemps += 1
        self.form.ntemps = max(self.form.ntemps, self.ntemps)
        return self.form.nslots + self.ntemps - 1

    def label(self) -> int:
        self.labels.append(None)
        return len(self.labels) - 1

    def place(self, lab: int) -> None:
        self.labels[lab] = len(self.code)

    def op(self, *ins: Any) -> None:
        self.code.append(list(ins))

    def jump(self, kind: int, *args: int) -> None:
        """A jump whose last operand is a label (resolved in ``finish``)."""
        self.code.append([kind, *args[:-1], _LabelRef(args[-1])])

    def const(self, v: int) -> int:
        t = self.temp()
        self.op(CONST, t, v)
        return t

    def finish(self) -> list[tuple]:
        out = []
        for ins in self.code:
            out.append(tuple(self.labels[x.label] if isinstance(x, _LabelRef) else x for x in ins))
        return out


class EmitterCompiler:
    """Mixin of the pipeline compiler: the engine form of the v1model blocks it can translate."""

    form_engine: EngineForm  # the form being built (set by ``emit_block``)

    def emit_block(self, form: EngineForm, decl: ast.ParserDecl | ast.ControlDecl, sc: Scope,
                   callbacks: bool) -> tuple[list[tuple], list[str]]:
        """The code of one v1model block instance (its parameters bound in ``sc``), and the
        constructs in it that run through their closures. ``callbacks`` False refuses the
        whole block instead (the parser and deparser: their closures move the cursor or
        write the output the engine holds)."""
        self.form_engine = form
        is_parser = isinstance(decl, ast.ParserDecl)
        em = BlockEmitter(form, callbacks=callbacks and not is_parser)
        for d in decl.locals:
            if is_parser and not isinstance(d, ast.ConstDecl):
                raise Unsupported(f"local {type(d).__name__.removesuffix('Decl').lower()} '{d.name}'", d)
            if isinstance(d, ast.VarDecl) and not is_parser:  # the initialisations, in order
                self._e_stmt(em, d, sc)
        if is_parser:
            self._e_parser(em, decl, sc)
        else:
            self._e_stmts(em, decl.body.stmts, sc)
            em.op(END)
        return em.finish(), em.called

    # ------------------------------------------------------------------ parser

    def _e_parser(self, em: BlockEmitter, decl: ast.ParserDecl, sc: Scope) -> None:
        labels = {s.name: em.label() for s in decl.states}
        if "start" not in labels:
            raise Unsupported("a parser without a start state", decl)
        em.jump(JMP, labels["start"])
        for s in decl.states:
            em.place(labels[s.name])
            self._e_stmts(em, s.stmts, sc)
            t = s.transition
            if t is None:
                self._e_goto(em, None, labels, s)
            elif isinstance(t.target, ast.SelectExpr):
                self._e_select(em, t.target, sc, labels)
            else:
                self._e_goto(em, t.target, labels, s)

    def _e_goto(self, em: BlockEmitter, target: ast.Expression | None, labels: dict[str, int], node: Any) -> None:
        """One transition: a parser step (ParserTimeout past MAX_PARSER_STEPS), then the state."""
        em.op(STEP)
        name = getattr(target, "name", "reject") if target is not None else "reject"
        if name == "accept":
            em.op(END)
        elif name == "reject":
            em.op(REJECT, STATUS_REJECT)
        elif name in labels:
            em.jump(JMP, labels[name])
        else:
            raise Unsupported(f"transition to unknown state '{name}'", node)

    def _e_select(self, em: BlockEmitter, sel: ast.SelectExpr, sc: Scope, labels: dict[str, int]) -> None:
        keys = [self._e_expr(em, k, sc) for k in sel.selectors]
        n = len(keys)
        for case in sel.cases:
            ks = case_keysets(case, n)
            if len(ks) != n:
                raise Unsupported("a select keyset of another arity", case)
            miss = em.label()
            for k, key, selector in zip(ks, keys, sel.selectors):
                self._e_keyset_test(em, k, key, selector, sc, miss)
            self._e_goto(em, case.state, labels, case)
            em.place(miss)
        em.op(REJECT, self.error_code("NoMatch"))  # type: ignore[attr-defined]

    def _e_keyset_test(self, em: BlockEmitter, k: ast.Expression, key: int, selector: ast.Expression,
                       sc: Scope, miss: int) -> None:
        """Jump to ``miss`` unless ``key`` matches keyset ``k``."""
        if isinstance(k, ast.DefaultExpr | ast.DontCareExpr):
            return
        if isinstance(k, ast.PathExpr) and isinstance(sc.find(k.decl) if k.decl is not None else None, ValueSet):
            raise Unsupported("a parser value set", k)
        if isinstance(k, ast.RangeExpr):
            lo, hi = self._e_keyconst(k.lo, sc, selector), self._e_keyconst(k.hi, sc, selector)
            t = em.temp()
            em.op(BIN, BINOPS[">="], t, key, em.const(lo), WORD)
            em.jump(JZ, t, miss)
            em.op(BIN, BINOPS["<="], t, key, em.const(hi), WORD)
            em.jump(JZ, t, miss)
            return
        t = em.temp()
        if isinstance(k, ast.MaskExpr):
            v, m = self._e_keyconst(k.value, sc, selector), self._e_keyconst(k.mask, sc, selector)
            em.op(BIN, BINOPS["&"], t, key, em.const(m), WORD)
            em.op(BIN, BINOPS["=="], t, t, em.const(v & m), WORD)
        else:
            em.op(BIN, BINOPS["=="], t, key, em.const(self._e_keyconst(k, sc, selector)), WORD)
        em.jump(JZ, t, miss)

    def _e_keyconst(self, e: ast.Expression, sc: Scope, selector: ast.Expression) -> int:
        v = self.scalar(e, sc)  # type: ignore[attr-defined]
        if not v.is_const:
            raise Unsupported("a select keyset that is not a constant", e)
        return self._e_word(self.runtime_const(v.val, selector.type, e.loc), e)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ statements

    def _e_stmts(self, em: BlockEmitter, stmts: list[ast.Statement], sc: Scope) -> None:
        for s in stmts:
            self._e_stmt(em, s, sc)

    def _e_stmt(self, em: BlockEmitter, s: ast.Statement, sc: Scope) -> None:
        if not em.callbacks:
            self._e_native(em, s, sc)
            return
        mark = len(em.code)
        try:
            self._e_native(em, s, sc)
        except Unsupported as exc:
            key = (id(s), id(sc))
            if key not in self.stmt_fns:  # type: ignore[attr-defined]
                raise
            del em.code[mark:]
            fn = self.stmt_fns[key]  # type: ignore[attr-defined]
            if fn is not None:
                em.op(PY, self.form_engine.callback(fn))
            em.called.append(exc.what)

    def _e_native(self, em: BlockEmitter, s: ast.Statement, sc: Scope) -> None:
        if isinstance(s, ast.EmptyStmt):
            return
        if isinstance(s, ast.BlockStmt):
            self._e_stmts(em, s.stmts, sc)
        elif isinstance(s, ast.AssignStmt):
            self._e_assign(em, s, sc)
        elif isinstance(s, ast.IfStmt):
            c = self._e_expr(em, s.cond, sc)
            other, end = em.label(), em.label()
            em.jump(JZ, c, other)
            self._e_stmt(em, s.then, sc)
            em.jump(JMP, end)
            em.place(other)
            if s.else_ is not None:
                self._e_stmt(em, s.else_, sc)
            em.place(end)
        elif isinstance(s, ast.CallStmt):
            self._e_call(em, s.call, sc)
        elif isinstance(s, ast.SwitchStmt):
            self._e_switch(em, s, sc)
        elif isinstance(s, ast.VarDecl):
            self._e_var(em, s, sc)
        elif isinstance(s, ast.ConstDecl):
            return  # bound to its value in ``sc`` already
        elif isinstance(s, ast.ExitStmt) and not getattr(sc, "in_parser", False):
            em.op(END)
        else:
            raise Unsupported(f"statement {type(s).__name__}", s)

    def _e_scalar_slot(self, ref: Any, node: Any) -> int:
        if not isinstance(ref, ScalarS):
            raise Unsupported("a location that is not a fixed scalar field", node)
        coded = isinstance(T.underlying(ref.type), T.ErrorType | T.EnumType) and not ref.width
        if ref.signed or not (0 < ref.width <= WORD or coded):
            raise Unsupported(f"a field of {ref.width} bits{' (signed)' if ref.signed else ''}", node)
        if isinstance(T.underlying(ref.type), T.BoolType):
            self.form_engine.bool_slots.add(ref.slot)
        return ref.slot

    def _e_assign(self, em: BlockEmitter, s: ast.AssignStmt, sc: Scope) -> None:
        if is_aggregate(s.lhs.type):
            raise Unsupported("an aggregate assignment", s)
        self._e_store(em, self.ref_of(s.lhs, sc), s.rhs, s.lhs.type, sc, s.lhs)  # type: ignore[attr-defined]

    def _e_store(self, em: BlockEmitter, ref: Any, rhs: ast.Expression, t: T.Type, sc: Scope, node: Any) -> None:
        """``ref = rhs`` in the representation of ``t`` (as ``assign_to``/``rhs_scalar``)."""
        dst = self._e_scalar_slot(ref, node)
        v = self.scalar(rhs, sc)  # type: ignore[attr-defined]
        if v.is_const:
            em.op(CONST, dst, self._e_word(self.runtime_const(v.val, t, rhs.loc), rhs))  # type: ignore[attr-defined]
            return
        em.op(MOV, dst, self._e_cast(em, self._e_expr(em, rhs, sc), rhs.type, t, rhs))

    def _e_var(self, em: BlockEmitter, s: ast.VarDecl, sc: Scope) -> None:
        """A local variable the closures' compilation laid out (bound in ``sc``)."""
        st = sc.find(s)
        if isinstance(st, ScalarS):
            if s.init is not None:
                self._e_store(em, st, s.init, s.type_ref.type, sc, s)
        elif isinstance(st, HeaderS) and s.init is None:
            em.op(CONST, st.valid, 0)
        else:
            raise Unsupported("a local variable of aggregate type", s)

    def _e_call(self, em: BlockEmitter, call: ast.CallExpr, sc: Scope) -> None:
        kind = self.kind_of(call)  # type: ignore[attr-defined]
        name = method_name(call)
        if kind == CK.HEADER_METHOD and name in ("setValid", "setInvalid"):
            h = self._e_header(call.method.expr, sc)
            em.op(CONST, h.valid, 1 if name == "setValid" else 0)
        elif kind == CK.PACKET_METHOD and name == "extract" and len(call.args) == 1:
            h = self._e_header(call.args[0].value, sc)
            em.op(EXTRACT, self.form_engine.header(h, call))
        elif kind == CK.PACKET_METHOD and name == "emit":
            ref = self.ref_of(call.args[0].value, sc)  # type: ignore[attr-defined]
            if not isinstance(ref, Storage):
                raise Unsupported("emit() of a run-time location", call)
            for h in _emit_order(ref):
                em.op(EMIT, self.form_engine.header(h, call))
        elif kind == CK.EXTERN_FUNCTION and name == "verify":
            self._e_verify(em, call, sc)
        elif kind == CK.EXTERN_FUNCTION and name in ("verify_checksum", "update_checksum"):
            self._e_checksum(em, call, sc, name == "update_checksum")
        elif kind == CK.EXTERN_FUNCTION and name in ("clone", "clone_preserving_field_list"):
            args = self.ext_args(call)  # type: ignore[attr-defined]
            code = ("I2E", "E2E").index(self._clone_kind(args[0], sc))  # type: ignore[attr-defined]
            fl = self._int_const(args[2], sc) if len(args) > 2 else -1  # type: ignore[attr-defined]
            em.op(CLONE, code, self._e_expr(em, args[1], sc), fl)
        elif kind == CK.EXTERN_FUNCTION and name in ("resubmit_preserving_field_list",
                                                      "recirculate_preserving_field_list"):
            fl = self._int_const(self.ext_args(call)[0], sc)  # type: ignore[attr-defined]
            em.op(PRESERVE, int(name.startswith("recirculate")), fl)
        elif kind == CK.EXTERN_FUNCTION and name == "truncate":
            em.op(TRUNCATE, self._e_expr(em, self.ext_args(call)[0], sc))  # type: ignore[attr-defined]
        elif kind == CK.EXTERN_FUNCTION and name == "mark_to_drop":
            std = self.std  # type: ignore[attr-defined]
            em.op(CONST, std.fields["egress_spec"].start, 511)
            if "mcast_grp" in std.fields:
                em.op(CONST, std.fields["mcast_grp"].start, 0)
        elif kind == CK.ACTION:
            self._e_inline_action(em, call, sc)
        elif kind == CK.TABLE_APPLY:
            self._e_table_apply(em, call, sc)
        elif kind == CK.EXTERN_METHOD:
            self._e_extern_method(em, call, sc)
        else:
            raise Unsupported(f"call to {name} ({kind})", call)

    def _e_inline_action(self, em: BlockEmitter, call: ast.CallExpr, sc: Scope) -> None:
        """A direct call of an action without parameters: its body, in the scope it was
        compiled in (so its statements that stay on the closures find theirs)."""
        callee = self.callee_of(call, sc)  # type: ignore[attr-defined]
        csc = callee.extra.get("scope")
        if callee.params or csc is None or contains(callee.decl.body, ast.ReturnStmt):
            raise Unsupported(f"call to {method_name(call)} (an action with parameters or return)", call)
        self._e_stmts(em, callee.decl.body.stmts, csc)

    def _e_table_apply(self, em: BlockEmitter, call: ast.CallExpr, sc: Scope) -> tuple[int, int, CompiledTable]:
        """A table: one TABLE instruction looks the key up in the engine's copy of the table
        state (p4switch/state/dataplane.py) and, for an action selector, hashes the selector
        fields and picks the member; the actions run here, dispatched on the action id.

        Returns the registers holding (hit, action id or 0) and the table."""
        ct = self.table_of(call, sc)  # type: ignore[attr-defined]
        info = ct.tstate.info
        if ct.direct_counter or ct.meter_slot is not None or info.supports_idle_timeout:
            raise Unsupported(f"table {ct.name} (direct counter/meter or idle timeout)", call)
        selector = self._e_selector(em, ct, sc, call) if ct.selector_hash is not None else None
        actions = []
        for ref in ct.decl.actions.actions if ct.decl.actions is not None else []:
            binding = sc.lookup(ref.name.decl, ref.name)
            callee = binding.callee
            if ref.args or callee.data_fix is not None or contains(callee.decl.body, ast.ReturnStmt) \
                    or any(ps.direction is not None for ps in callee.params):
                raise Unsupported(f"table {ct.name}: action {binding.fqn} (bound arguments, converted data or "
                                  "return)", call)
            actions.append((ct.ids_by_decl[binding.decl], callee))
        keys = []
        elems = [ke for ke in (ct.decl.key.elements if ct.decl.key is not None else [])
                 if ke.match_kind.name != "selector"]
        for ke in elems:
            keys.append(self._e_expr(em, ke.expr, sc))
        nparams = max((len(c.params) for _, c in actions), default=0)
        hit, act = em.temp(), em.temp()
        data = [em.temp() for _ in range(nparams)]
        em.op(TABLE, self.form_engine.table(ct, selector), (hit, act, *data), *keys)
        end = em.label()
        for aid, callee in actions:
            other = em.label()
            t = em.temp()
            em.op(BIN, BINOPS["=="], t, act, em.const(aid), WORD)
            em.jump(JZ, t, other)
            for ps, reg in zip(callee.params, data):
                em.op(MOV, self._e_scalar_slot(ps.storage, ps.decl), reg)
            self._e_stmts(em, callee.decl.body.stmts, callee.extra["scope"])
            em.jump(JMP, end)
            em.place(other)
        em.place(end)
        return hit, act, ct

    def _e_selector(self, em: BlockEmitter, ct: CompiledTable, sc: Scope, node: Any) -> tuple[int, int, int] | None:
        """(field list, algorithm, width) of an action selector's hash; None for a plain
        action profile (no groups, no hash)."""
        kind, args = self._implementation(ct.decl, sc)  # type: ignore[attr-defined]
        if kind != "action_selector":
            return None
        algo, _ = self.algo_of(args[0], sc)  # type: ignore[attr-defined]
        if algo not in SELECTOR_ALGOS:
            raise Unsupported(f"table {ct.name}: selector hash {algo}", node)
        width = self._ctor_int(args, 2, ct.decl)  # type: ignore[attr-defined]
        elems = [ke for ke in ct.decl.key.elements if ke.match_kind.name == "selector"]
        leaves = [leaf for ke in elems for leaf in self.leaves(ke.expr, sc)]  # type: ignore[attr-defined]
        fields = self._e_fields(em, leaves, node, "selector field")
        return self.form_engine.field_list(fields), SELECTOR_ALGOS[algo], width

    def _e_fields(self, em: BlockEmitter, leaves: list[tuple[Any, Any, bool]], node: Any, what: str) -> list[tuple[int, int]]:
        """(register, width) per leaf of a field list: PHV slots and constants of bit<1..64>."""
        fields = []
        for v, w, signed in leaves:
            if signed or not isinstance(w, int) or not 0 < w <= WORD:
                raise Unsupported(f"a {what} that is not bit<1..64>", node)
            if v.kind == "s":
                fields.append((v.val, w))
            elif v.kind == "c":
                fields.append((em.const(self._e_word(int(v.val), node)), w))
            else:
                raise Unsupported(f"a computed {what}", node)
        return fields

    def _e_switch(self, em: BlockEmitter, s: ast.SwitchStmt, sc: Scope) -> None:
        """``switch`` on a table's action_run or on a scalar: first matching label wins, a
        label with no body does nothing, no match runs ``default``."""
        e = s.expr
        if isinstance(e, ast.MemberExpr) and e.member == "action_run" and isinstance(e.expr, ast.CallExpr):
            _, key, ct = self._e_table_apply(em, e.expr, sc)

            def value(lab: ast.Expression) -> int:
                decl = getattr(lab, "decl", None)
                b = sc.find(decl) if decl is not None else None
                d = getattr(b, "decl", decl)
                if d not in ct.ids_by_decl:
                    raise Unsupported(f"switch label {getattr(lab, 'name', '?')}", lab)
                return ct.ids_by_decl[d]
        else:
            key = self._e_expr(em, e, sc)

            def value(lab: ast.Expression) -> int:
                v = self.scalar(lab, sc)  # type: ignore[attr-defined]
                if not v.is_const:
                    raise Unsupported("a switch label that is not a constant", lab)
                return self._e_word(v.val, lab)
        groups: list[tuple[list[ast.Expression], ast.Statement | None]] = []
        pending: list[ast.Expression] = []
        for case in s.cases:
            pending.append(case.label)
            if case.body is not None:
                groups.append((pending, case.body))
                pending = []
        if pending:
            groups.append((pending, None))
        end, seen = em.label(), set()
        targets = []
        default_target = end
        t = em.temp()
        for labels, body in groups:
            target = em.label()
            targets.append((target, body))
            for lab in labels:
                if isinstance(lab, ast.DefaultExpr):
                    default_target = target
                    continue
                v = value(lab)
                if v in seen:
                    continue
                seen.add(v)
                em.op(BIN, BINOPS["=="], t, key, em.const(v), WORD)
                em.jump(JNZ, t, target)
        em.jump(JMP, default_target)
        for target, body in targets:
            em.place(target)
            if body is not None:
                self._e_stmt(em, body, sc)
            em.jump(JMP, end)
        em.place(end)

    def _e_extern_method(self, em: BlockEmitter, call: ast.CallExpr, sc: Scope) -> None:
        """Register reads and writes, counter updates: instructions on the cells the state
        objects hold (``hbh_engine.Cells``, shared with the control plane)."""
        target = method_target(call)
        inst = sc.lookup(getattr(target, "decl", None), target) if target is not None else None
        what = f"{getattr(inst, 'kind', '?')}.{method_name(call)}"
        args = self.ext_args(call)  # type: ignore[attr-defined]
        form = self.form_engine
        if what == "register.read" and not inst.obj.signed:
            res, idx = args
            if res is None or not isinstance(T.underlying(res.type), T.BitType):
                raise Unsupported(f"{what} into a {getattr(res, 'type', None)}", call)
            dst = self._e_scalar_slot(self.ref_of(res, sc), res)  # type: ignore[attr-defined]
            em.op(REGREAD, dst, form.cells_of(inst.obj.cells, call), self._e_expr(em, idx, sc))
        elif what == "register.write" and not inst.obj.signed:
            idx, val = args
            if not isinstance(T.underlying(val.type), T.BitType | T.InfIntType):
                raise Unsupported(f"{what} of a {val.type}", call)
            em.op(REGWRITE, form.cells_of(inst.obj.cells, call), self._e_expr(em, idx, sc), self._e_expr(em, val, sc))
        elif what == "counter.count":
            length = self.std.fields["packet_length"].start  # type: ignore[attr-defined]
            obj = inst.obj
            em.op(COUNT, form.cells_of(obj.packets, call), form.cells_of(obj.bytes, call),
                  self._e_expr(em, args[0], sc), length)
        else:
            raise Unsupported(f"extern method {what}", call)

    def _e_header(self, e: ast.Expression, sc: Scope) -> HeaderS:
        ref = self.ref_of(e, sc)  # type: ignore[attr-defined]
        h = header_storage(ref) if isinstance(ref, Storage) else None
        if h is None:
            raise Unsupported("a header at a run-time index", e)
        if isinstance(e, ast.MemberExpr) and isinstance(T.underlying(e.expr.type), T.HeaderUnionType):
            raise Unsupported("a header union member", e)
        return h

    def _e_verify(self, em: BlockEmitter, call: ast.CallExpr, sc: Scope) -> None:
        cond_e, err_e = (a.value for a in call.args)
        err = self.scalar(err_e, sc)  # type: ignore[attr-defined]
        if not err.is_const:
            raise Unsupported("verify() with a run-time error", call)
        ok = em.label()
        em.jump(JNZ, self._e_expr(em, cond_e, sc), ok)
        em.op(REJECT, self._e_word(self.runtime_const(err.val, err_e.type, err_e.loc), err_e))  # type: ignore[attr-defined]
        em.place(ok)

    def _e_checksum(self, em: BlockEmitter, call: ast.CallExpr, sc: Scope, update: bool) -> None:
        cond_e, data_e, ck_e, algo_e = self.ext_args(call)  # type: ignore[attr-defined]
        algo, _ = self.algo_of(algo_e, sc)  # type: ignore[attr-defined]
        if algo != "csum16":
            raise Unsupported(f"checksum algorithm {algo}", call)
        cond = self.scalar(cond_e, sc)  # type: ignore[attr-defined]
        if cond.is_const and not cond.val:
            return
        fields = self._e_fields(em, self.leaves(data_e, sc), data_e, "checksum field")  # type: ignore[attr-defined]
        ck = self._e_scalar_slot(self.ref_of(ck_e, sc), ck_e)  # type: ignore[attr-defined]
        width, _ = scalar_info(ck_e.type)
        if width != 16:
            raise Unsupported(f"a csum16 into a {width}-bit field", ck_e)
        lst = self.form_engine.field_list(fields)
        done = em.label()
        if not cond.is_const:
            em.jump(JZ, self._e_expr(em, cond_e, sc), done)
        if update:
            em.op(CSUM16, ck, lst)
        else:
            t = em.temp()
            em.op(CSUM16, t, lst)
            em.op(BIN, BINOPS["!="], t, t, ck, WORD)
            em.jump(JZ, t, done)
            em.op(CONST, self.std.fields["checksum_error"].start, 1)  # type: ignore[attr-defined]
        em.place(done)

    # ------------------------------------------------------------------ expressions

    def _e_word(self, v: Any, node: Any) -> int:
        v = int(v)
        if not 0 <= v < 1 << WORD:
            raise Unsupported(f"the constant {v} (not a 64-bit word)", node)
        return v

    def _e_expr(self, em: BlockEmitter, e: ast.Expression, sc: Scope) -> int:
        """A register holding ``e``'s value (a PHV slot when ``e`` is a field)."""
        cv = e.const_value
        if cv is not None and not isinstance(cv, str | list | tuple):
            return em.const(self._e_word(self.runtime_const(cv, e.type, e.loc), e))  # type: ignore[attr-defined]
        if isinstance(e, ast.IntLiteral | ast.BoolLiteral | ast.TypeMemberExpr):
            return em.const(self._e_word(self.scalar(e, sc).val, e))  # type: ignore[attr-defined]
        if isinstance(e, ast.PathExpr | ast.MemberExpr | ast.IndexExpr):
            ref = self.ref_of(e, sc)  # type: ignore[attr-defined]
            if ref is not None:
                return self._e_scalar_slot(ref, e)
            b = sc.find(e.decl) if isinstance(e, ast.PathExpr) and e.decl is not None else None
            v = self.scalar(e, sc) if b is None or isinstance(b, Const) else None  # type: ignore[attr-defined]
            if v is not None and v.is_const:
                return em.const(self._e_word(v.val, e))
            raise Unsupported(f"the expression {type(e).__name__}", e)
        method = getattr(self, "_ex_" + type(e).__name__, None)
        if method is None:
            raise Unsupported(f"the expression {type(e).__name__}", e)
        return method(em, e, sc)

    def _ex_CallExpr(self, em: BlockEmitter, e: ast.CallExpr, sc: Scope) -> int:
        if self.kind_of(e) == CK.HEADER_METHOD and method_name(e) == "isValid":  # type: ignore[attr-defined]
            return self._e_header(e.method.expr, sc).valid
        raise Unsupported(f"a call to {method_name(e)} in an expression", e)

    def _e_cast(self, em: BlockEmitter, a: int, src: T.Type | None, dst: T.Type | None, node: Any) -> int:
        """``(dst) a`` as ``cast`` in exprs.py computes it, for unsigned scalars."""
        if src is None or dst is None or isinstance(src, T.InfIntType):
            return a
        su, du = T.underlying(src), T.underlying(dst)
        if isinstance(du, T.IntType) or isinstance(su, T.IntType):
            raise Unsupported("a signed int<w> value", node)
        if isinstance(du, T.BoolType) and not isinstance(su, T.BoolType):
            t = em.temp()
            em.op(BIN, BINOPS["!="], t, a, em.const(0), WORD)
            return t
        if isinstance(du, T.BitType) and isinstance(su, T.BitType) and su.width > du.width:
            t = em.temp()
            em.op(BIN, BINOPS["&"], t, a, em.const((1 << du.width) - 1), WORD)
            return t
        return a

    def _ex_CastExpr(self, em: BlockEmitter, e: ast.CastExpr, sc: Scope) -> int:
        return self._e_cast(em, self._e_expr(em, e.expr, sc), e.expr.type, e.type, e)

    def _ex_SliceExpr(self, em: BlockEmitter, e: ast.SliceExpr, sc: Scope) -> int:
        hi, lo = self._int_const(e.hi, sc), self._int_const(e.lo, sc)  # type: ignore[attr-defined]
        a = self._e_expr(em, e.expr, sc)
        t = em.temp()
        em.op(BIN, BINOPS[">>"], t, a, em.const(lo), WORD)
        em.op(BIN, BINOPS["&"], t, t, em.const((1 << (hi - lo + 1)) - 1), WORD)
        return t

    def _ex_UnaryExpr(self, em: BlockEmitter, e: ast.UnaryExpr, sc: Scope) -> int:
        width, signed = scalar_info(e.type)
        if signed or (e.op in ("~", "-") and not width):
            raise Unsupported(f"unary {e.op} on {e.type}", e)
        a = self._e_expr(em, e.operand, sc)
        if e.op == "+":
            return a
        t = em.temp()
        if e.op == "!":
            em.op(LNOT, t, a)
        elif e.op == "~":
            em.op(NOT, t, a, width)
        elif e.op == "-":
            em.op(NEG, t, a, width)
        else:
            raise Unsupported(f"unary operator {e.op}", e)
        return t

    def _ex_BinaryExpr(self, em: BlockEmitter, e: ast.BinaryExpr, sc: Scope) -> int:
        op = e.op
        if is_aggregate(e.left.type):
            raise Unsupported(f"{op} on aggregates", e)
        width, signed = scalar_info(e.type)
        if signed or any(scalar_info(x.type)[1] for x in (e.left, e.right)):
            raise Unsupported("a signed int<w> value", e)
        a, b = self._e_expr(em, e.left, sc), self._e_expr(em, e.right, sc)
        t = em.temp()
        if op in ("&&", "||"):  # operands are pure here: no short circuit needed
            em.op(BIN, BINOPS["&" if op == "&&" else "|"], t, a, b, WORD)
        elif op == "++":
            wr = scalar_info(e.right.type)[0]
            em.op(BIN, BINOPS["<<"], t, a, em.const(wr), WORD)
            em.op(BIN, BINOPS["|"], t, t, b, WORD)
        elif op in BINOPS:
            if op in MASKED and not width:
                raise Unsupported(f"{op} on an unbounded int", e)
            em.op(BIN, BINOPS[op], t, a, b, width if op in MASKED else WORD)
        else:
            raise Unsupported(f"operator {op}", e)
        return t

    def _ex_ConditionalExpr(self, em: BlockEmitter, e: ast.ConditionalExpr, sc: Scope) -> int:
        t = em.temp()
        other, end = em.label(), em.label()
        em.jump(JZ, self._e_expr(em, e.cond, sc), other)
        em.op(MOV, t, self._e_expr(em, e.if_true, sc))
        em.jump(JMP, end)
        em.place(other)
        em.op(MOV, t, self._e_expr(em, e.if_false, sc))
        em.place(end)
        return t


__all__ = ["EngineForm", "EmitterCompiler", "Unsupported", "MAX_PARSER_STEPS", "STATUS_END", "STATUS_REJECT"]
