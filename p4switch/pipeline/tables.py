"""Match-action tables: key closures, lookups in the RuntimeState, action dispatch.

A table apply is one closure: build the key tuple (P4Info field order = key order),
``TableState.lookup(key)`` (the state keeps per-table indexes), fall back to the default
entry, count the hit in the entry's direct counter / execute its direct meter, then run
the action through a dict from P4Info action id to a runner that writes the entry's
action data into the action's parameter slots. ``const entries`` are installed into the
state when the pipeline is loaded (entries already present are kept).

Indirect tables (``implementation = action_profile(N)`` or ``action_selector(algo, N, W)``)
hold member/group references; on a hit the state's ``ActionProfileState.choose`` turns
the reference into the member's action. For a group (or a one-shot action set) the
``selector`` key fields, concatenated MSB first in key order like ``hash()``'s data, are
hashed with the selector's algorithm and cut to its output width ``W``; the state picks
the member from that value (``profiles.py`` documents how). An entry whose group is
empty is treated as a miss: the default action runs and ``hit`` is false.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4switch.frontend import ast
from p4switch.state import ActionCall, Exact, Lpm, MatchKind, OptionalMatch, Range, TableState, Ternary
from p4switch.state.errors import StateError

from .calls import method_target
from .externs import ExternInst
from .layout import SLOT_PKT, scalar_info
from .scope import PipelineError, Scope
from .stmts import Callee, bind_arguments
from .templates import E, Fn, expr


@dataclass(eq=False)
class ActionBinding:
    """An action declaration in one scope; compiled on first use."""

    decl: ast.ActionDecl
    scope: Scope
    compiler: Any
    _callee: Callee | None = None

    @property
    def fqn(self) -> str:
        return self.scope.fqn(self.decl)

    @property
    def callee(self) -> Callee:
        if self._callee is None:
            self._callee = self.compiler.compile_callee(self.decl, self.scope, self.fqn)
        return self._callee


@dataclass(eq=False)
class CompiledTable:
    decl: ast.TableDecl
    name: str
    tstate: TableState
    key: E | None
    runners: dict[int, Any]
    ids_by_decl: dict[ast.ActionDecl, int]
    direct_counter: bool = False
    meter_slot: int | None = None
    selector_hash: Fn | None = None  # indirect tables: hash of the selector fields
    applies: dict[str, Fn] = field(default_factory=dict)


def _runner(callee: Callee, body: Fn | None = None) -> Any:
    """``run(p, params)``: the entry's action data into the data-parameter slots, then the
    body (``body``: the call with the directional arguments the action list binds)."""
    body = callee.body if body is None else body
    rng = callee.data_range
    fix = callee.data_fix
    if body is None:
        return lambda p, params: None
    if rng is None:
        return lambda p, params: body(p)
    a, b = rng
    if fix is not None:
        def run_fixed(p: list, params: tuple) -> None:
            p[a:b] = fix(params)
            body(p)

        return run_fixed

    def run(p: list, params: tuple) -> None:
        p[a:b] = params
        body(p)

    return run


class TableCompiler:
    """Mixin of the pipeline compiler: tables."""

    state: Any

    def compile_table(self, decl: ast.TableDecl, sc: Scope) -> CompiledTable:
        name = sc.fqn(decl)
        tstate = self.state.tables_by_name.get(name)
        if tstate is None:
            raise PipelineError(decl.loc, f"pipeline: table '{name}' is not in the P4Info")
        key = self._table_key(decl, sc, tstate)
        runners: dict[int, Any] = {}
        ids: dict[ast.ActionDecl, int] = {}
        names = {self.state.actions[i].name: i for i in tstate.info.action_scopes}
        refs = decl.actions.actions if decl.actions is not None else []
        for ref in refs:
            binding = sc.lookup(ref.name.decl, ref.name)
            if not isinstance(binding, ActionBinding):
                raise PipelineError(ref.loc, f"pipeline: '{ref.name.name}' is not an action")
            aid = _action_id(binding.fqn, names)
            if aid is None:
                raise PipelineError(ref.loc, f"pipeline: action '{binding.fqn}' of table '{name}' is not in the P4Info")
            # `setbyte(hdr.x)` in the action list binds directional parameters: copied in and
            # out around every run, as for a direct call (and on exit).
            call = self.invoke(binding.callee, ref.args, sc, ref.loc) if ref.args else None  # type: ignore[attr-defined]
            runners[aid] = _runner(binding.callee, call)
            ids[binding.decl] = aid
        ct = CompiledTable(decl, name, tstate, key, runners, ids)
        ct.direct_counter = tstate.info.direct_counter is not None
        meter = self._direct_extern(decl, sc, "meters")
        if meter is not None or tstate.info.direct_meter is not None:
            ct.meter_slot = self.direct_meter_slot(meter) if meter is not None else None
        if tstate.profile is not None:
            ct.selector_hash = self._selector_hash(decl, sc, tstate)
        self._install_defaults(ct, sc)
        return ct

    def _selector_hash(self, decl: ast.TableDecl, sc: Scope, tstate: TableState) -> Fn:
        """Hash of the ``selector`` key fields with the action selector's algorithm (0 for a
        plain action profile, which has no groups)."""
        kind, args = self._implementation(decl, sc)
        with_selector = tstate.profile.info.with_selector  # type: ignore[union-attr]
        if (kind == "action_selector") != with_selector:
            raise PipelineError(decl.loc, f"pipeline: table '{tstate.name}' is implemented by an {kind}, but the "
                                          f"P4Info says {'a selector' if with_selector else 'no selector'}")
        if not with_selector:
            return lambda p: 0
        if len(args) < 3:
            raise PipelineError(decl.loc, "pipeline: action_selector(algorithm, size, outputWidth) expected")
        _, algo = self.algo_of(args[0], sc)  # type: ignore[attr-defined]
        width = self._ctor_int(args, 2, decl)  # type: ignore[attr-defined]
        elems = [ke for ke in (decl.key.elements if decl.key is not None else [])
                 if ke.match_kind.name == "selector"]
        leaves = [leaf for ke in elems for leaf in self.leaves(ke.expr, sc)]  # type: ignore[attr-defined]
        data, nbits = self.concat_leaves(leaves)  # type: ignore[attr-defined]
        h = expr("{algo}({d}, {n})", algo=algo, d=data, n=nbits)
        if width > 0:
            h = expr("{h} & {m}", h=h, m=(1 << width) - 1)
        return h.fn()

    def _implementation(self, decl: ast.TableDecl, sc: Scope) -> tuple[str, list[ast.Expression]]:
        """(extern kind, constructor arguments) of the table's ``implementation`` property."""
        p = decl.prop("implementation")
        value = p.value if isinstance(p, ast.ValueProperty) else None
        if isinstance(value, ast.ConstructorCallExpr):
            return getattr(value.type_ref, "name", ""), [a.value for a in value.args]
        if isinstance(value, ast.PathExpr):
            inst = sc.find(value.decl) if value.decl is not None else None
            if isinstance(inst, ExternInst) and inst.decl is not None:
                return inst.kind, [a.value for a in inst.decl.args]
        raise PipelineError(decl.loc, "pipeline: the table's implementation must be an action_profile or "
                                      "action_selector instance")

    def _direct_extern(self, decl: ast.TableDecl, sc: Scope, prop: str) -> ExternInst | None:
        p = decl.prop(prop)
        if isinstance(p, ast.ValueProperty) and isinstance(p.value, ast.PathExpr):
            inst = sc.find(p.value.decl)
            if isinstance(inst, ExternInst):
                return inst
        return None

    def direct_meter_slot(self, inst: ExternInst) -> int:
        """The hidden PHV slot holding the colour of the packet for this direct meter."""
        slots = self.__dict__.setdefault("_meter_slots", {})
        if inst.name not in slots:
            from p4switch.frontend import types as T

            slots[inst.name] = self.alloc.allocate(T.BitType(2), f"{inst.name}.$color").start  # type: ignore[attr-defined]
        return slots[inst.name]

    def _table_key(self, decl: ast.TableDecl, sc: Scope, tstate: TableState) -> E | None:
        elems = decl.key.elements if decl.key is not None else []
        # action_selector inputs are not match fields (P4Info omits them)
        elems = [ke for ke in elems if ke.match_kind.name != "selector"]
        if len(elems) != len(tstate.fields):
            raise PipelineError(decl.loc, f"pipeline: table '{tstate.name}' has {len(elems)} key fields, "
                                          f"the P4Info {len(tstate.fields)}")
        if not elems:
            return None
        parts = {}
        for i, ke in enumerate(elems):
            v = self.scalar(ke.expr, sc)  # type: ignore[attr-defined]
            width, signed = scalar_info(ke.expr.type)
            if signed:
                v = expr("{a} & {m}", a=v, m=(1 << width) - 1)
            parts[f"k{i}"] = v
        src = "(" + ", ".join(f"{{k{i}}}" for i in range(len(elems))) + ",)"
        return expr(src, **parts)

    # ------------------------------------------------------------------ apply

    def table_of(self, call: ast.CallExpr, sc: Scope) -> CompiledTable:
        target = method_target(call)
        ct = sc.lookup(getattr(target, "decl", None), target) if target is not None else None
        if not isinstance(ct, CompiledTable):
            raise PipelineError(call.loc, "pipeline: apply() on something that is not a table")
        return ct

    def table_apply(self, call: ast.CallExpr, sc: Scope, mode: str) -> Fn:
        ct = self.table_of(call, sc)
        fn = ct.applies.get(mode)
        if fn is None:
            fn = ct.applies[mode] = _make_apply(ct, mode)
        return fn

    def table_apply_result(self, call: ast.CallExpr, sc: Scope, member: str) -> E:
        return E.func(self.table_apply(call, sc, member))

    def table_action_run(self, call: ast.CallExpr, sc: Scope) -> tuple[E, Any]:
        ct = self.table_of(call, sc)
        fn = self.table_apply(call, sc, "action_run")

        def label_value(lab: ast.Expression) -> int:
            decl = getattr(lab, "decl", None)
            b = sc.find(decl) if decl is not None else None
            d = b.decl if isinstance(b, ActionBinding) else decl
            if d not in ct.ids_by_decl:
                raise PipelineError(lab.loc, f"pipeline: '{getattr(lab, 'name', '?')}' is not an action of table "
                                             f"'{ct.name}'")
            return ct.ids_by_decl[d]

        return E.func(fn), label_value

    # ------------------------------------------------------------------ load-time entries

    def _install_defaults(self, ct: CompiledTable, sc: Scope) -> None:
        decl, tstate = ct.decl, ct.tstate
        da = decl.default_action
        if da is not None and tstate.default_entry.action is None:
            call = self._action_call(da.value, ct, sc)
            if call is not None:
                tstate.install_program_default(call)
        entries = decl.entries
        if entries is None:
            return
        prios = self._entry_priorities(entries.entries, sc) if tstate.needs_priority else None
        for i, entry in enumerate(entries.entries):
            match = self._entry_match(entry, ct, sc)
            call = self._action_call(entry.action, ct, sc)
            if call is None:
                raise PipelineError(entry.loc, "pipeline: const entry without an action")
            prio = prios[i] if prios is not None else 0
            if tstate.get(match, prio) is not None:
                continue
            try:
                tstate.install_const_entry(match, call.action_id, call.params, prio)
            except StateError as err:
                raise PipelineError(entry.loc, f"pipeline: const entry of table '{ct.name}': {err}") from None

    def _entry_priorities(self, entries: list[ast.TableEntry], sc: Scope) -> list[int]:
        """P4Runtime priorities (larger wins) of a table's ``entries``.

        ``priority = N :`` is taken as it is. Otherwise p4c's BMv2 back end gives entry ``i``
        the BMv2 priority ``i + 1`` or its ``@priority(N)`` annotation, and in BMv2 the
        *smallest* wins; that order is turned around here (``max + 1 - b``), so a program
        with ``@priority`` matches as on BMv2 and one without keeps the first entry first.
        """
        out: list[int] = []
        bmv2: list[int] = []
        for i, entry in enumerate(entries):
            ann = next((a for a in entry.annotations if a.name == "priority"), None)
            if ann is not None:
                if not ann.args or len(ann.args) != 1:
                    raise PipelineError(ann.loc, "pipeline: @priority needs one constant, e.g. @priority(1)")
                value = int(self._int_const(ann.args[0], sc))  # type: ignore[attr-defined]
                if value < 0:
                    raise PipelineError(ann.loc, f"pipeline: @priority({value}) must not be negative")
                bmv2.append(value)
            else:
                bmv2.append(i + 1)
        top = max(bmv2, default=0) + 1
        for entry, b in zip(entries, bmv2):
            if entry.priority is not None:
                out.append(int(self._int_const(entry.priority, sc)))  # type: ignore[attr-defined]
            else:
                out.append(top - b)
        return out

    def _action_call(self, value: Any, ct: CompiledTable, sc: Scope) -> ActionCall | None:
        if isinstance(value, ast.ActionRef):
            path, args = value.name, value.args
        elif isinstance(value, ast.CallExpr):
            path, args = value.method, value.args
        elif isinstance(value, ast.PathExpr):
            path, args = value, []
        else:
            return None
        b = sc.find(getattr(path, "decl", None))
        if not isinstance(b, ActionBinding):
            raise PipelineError(value.loc, "pipeline: not an action")
        aid = ct.ids_by_decl.get(b.decl)
        if aid is None:
            raise PipelineError(value.loc, f"pipeline: '{b.fqn}' is not an action of table '{ct.name}'")
        info = self.state.actions[aid]
        bound = bind_arguments(b.decl.params, args, value.loc)
        data = [(prm, arg) for prm, arg in zip(b.decl.params, bound) if prm.direction is None]
        params = []
        for (prm, arg), pinfo in zip(data, info.params):
            if arg is None:
                raise PipelineError(value.loc, f"pipeline: action argument '{prm.name}' missing")
            v = self.scalar(arg, sc)  # type: ignore[attr-defined]
            if not v.is_const:
                raise PipelineError(arg.loc, "pipeline: action arguments here must be constants")
            params.append(int(v.val) & ((1 << pinfo.bitwidth) - 1))
        return ActionCall(aid, tuple(params))

    def _entry_match(self, entry: ast.TableEntry, ct: CompiledTable, sc: Scope) -> dict[int, Any]:
        fields = ct.tstate.fields
        keys = entry.keys
        if len(keys) == 1 and len(fields) > 1 and isinstance(keys[0], ast.DefaultExpr | ast.DontCareExpr):
            keys = keys * len(fields)
        if len(keys) != len(fields):
            raise PipelineError(entry.loc, f"pipeline: entry has {len(keys)} keys, table '{ct.name}' {len(fields)}")
        out: dict[int, Any] = {}
        for f, k in zip(fields, keys):
            m = self._keyset_match(k, f.kind, f.bitwidth, sc)
            if m is not None:
                out[f.id] = m
        return out

    def _keyset_match(self, k: ast.Expression, kind: MatchKind, width: int, sc: Scope) -> Any:
        full = (1 << width) - 1
        if isinstance(k, ast.DefaultExpr | ast.DontCareExpr):
            if kind == MatchKind.EXACT:
                raise PipelineError(k.loc, "pipeline: an exact key cannot be a wildcard")
            return None

        def const(e: ast.Expression) -> int:
            return int(self._int_const(e, sc)) & full  # type: ignore[attr-defined]

        if isinstance(k, ast.MaskExpr):
            v, m = const(k.value), const(k.mask)
            if kind == MatchKind.LPM:
                plen = bin(m).count("1")
                if m != (full ^ (full >> plen)):
                    raise PipelineError(k.loc, "pipeline: an lpm mask must be a prefix")
                return Lpm(v & m, plen) if plen else None
            if kind == MatchKind.TERNARY:
                return Ternary(v & m, m) if m else None
            raise PipelineError(k.loc, f"pipeline: a mask is not allowed for a {kind.name.lower()} key")
        if isinstance(k, ast.RangeExpr):
            lo, hi = const(k.lo), const(k.hi)
            if kind != MatchKind.RANGE:
                raise PipelineError(k.loc, "pipeline: a range needs a range key")
            return None if (lo, hi) == (0, full) else Range(lo, hi)
        v = const(k)
        if kind == MatchKind.EXACT:
            return Exact(v)
        if kind == MatchKind.LPM:
            return Lpm(v, width)
        if kind == MatchKind.TERNARY:
            return Ternary(v, full)
        if kind == MatchKind.RANGE:
            return Range(v, v)
        return OptionalMatch(v)


def _action_id(fqn: str, names: dict[str, int]) -> int | None:
    if fqn in names:
        return names[fqn]
    if "." + fqn in names:
        return names["." + fqn]
    short = fqn.rsplit(".", 1)[-1]
    cands = [i for n, i in names.items() if n.rsplit(".", 1)[-1] == short]
    return cands[0] if len(cands) == 1 else None


def _make_apply(ct: CompiledTable, mode: str) -> Fn:
    """The apply closure; ``mode``: "none", "hit", "miss" or "action_run"."""
    if ct.selector_hash is not None:
        return _with_mode(_indirect_run(ct), mode)
    tstate = ct.tstate
    lookup = tstate.lookup
    runners = ct.runners
    keyf = ct.key.fn() if ct.key is not None else (lambda p: ())
    counted = ct.direct_counter
    meter_slot = ct.meter_slot
    idle = tstate.info.supports_idle_timeout
    simple = not counted and meter_slot is None and not idle

    if simple and mode == "none":
        def apply_plain(p: list) -> None:
            e = lookup(keyf(p))
            act = (e or tstate.default_entry).action
            if act is not None:
                runners[act.action_id](p, act.params)

        return apply_plain

    extra = counted or meter_slot is not None or idle
    default = tstate  # the default entry is read per packet: the control plane may change it

    def run(p: list) -> tuple[bool, Any]:
        e = lookup(keyf(p))
        if e is not None:
            if extra:
                _on_hit(p, e, counted, meter_slot, idle)
            act = e.action
            hit = True
        else:
            if meter_slot is not None:
                p[meter_slot] = 0
            act = default.default_entry.action
            hit = False
        if act is not None:
            runners[act.action_id](p, act.params)
        return hit, act

    return _with_mode(run, mode)


def _with_mode(run: Any, mode: str) -> Fn:
    """``run(p) -> (hit, action call)`` adapted to what the apply is used for."""
    if mode == "hit":
        return lambda p: run(p)[0]
    if mode == "miss":
        return lambda p: not run(p)[0]
    if mode == "action_run":
        def action_run(p: list) -> int:
            act = run(p)[1]
            return act.action_id if act is not None else 0

        return action_run
    return run


def _indirect_run(ct: CompiledTable) -> Any:
    """Lookup, then the member the entry's reference resolves to (hashing for groups)."""
    tstate = ct.tstate
    lookup = tstate.lookup
    runners = ct.runners
    keyf = ct.key.fn() if ct.key is not None else (lambda p: ())
    choose = tstate.profile.choose  # type: ignore[union-attr]
    hashf = ct.selector_hash
    counted = ct.direct_counter
    meter_slot = ct.meter_slot
    idle = tstate.info.supports_idle_timeout
    extra = counted or meter_slot is not None or idle

    def run(p: list) -> tuple[bool, Any]:
        e = lookup(keyf(p))
        act = choose(e.action, hashf, p) if e is not None else None
        if act is not None:
            if extra:
                _on_hit(p, e, counted, meter_slot, idle)
            hit = True
        else:
            if meter_slot is not None:
                p[meter_slot] = 0
            act = tstate.default_entry.action
            hit = False
        if act is not None:
            runners[act.action_id](p, act.params)
        return hit, act

    return run


def _on_hit(p: list, e: Any, counted: bool, meter_slot: int | None, idle: bool) -> None:
    pkt = p[SLOT_PKT]
    nbytes = len(pkt.data)
    if counted and e.direct_counter is not None:
        e.direct_counter.count(nbytes)
    if meter_slot is not None:
        cell = e.direct_meter
        if cell is None:
            p[meter_slot] = 0
        else:
            p[meter_slot] = cell.execute(pkt.now_us * 1000, nbytes)
    if idle:
        e.touch(pkt.now_us * 1000)
