"""The JSON's pipelines (tables, conditionals, actions) and externs as P4_16 controls.

Why the control graph is rebuilt into if/switch here: BMv2 walks a graph (each table names
its next node per action or hit/miss, each conditional its two successors), which p4c made
from structured code. Each branch is written up to its immediate post-dominator (where the
branches meet again), so every node is written once; a graph that would need a node twice
(not p4c's) is refused. A ``tbl_*`` table p4c made for a direct action call (no key, one
const action, and not in the P4Info) is written back as that call.
"""

from __future__ import annotations

import json
from typing import Any

from p4.config.v1 import p4info_pb2

from .errors import Bmv2JsonError
from .exprs import Ex, ExprTranslator, bits, boolean, calc_fields, hexint, ident

COUNTER_UNITS = {p4info_pb2.CounterSpec.BYTES: "bytes", p4info_pb2.CounterSpec.PACKETS: "packets"}
MATCH_KINDS = {"exact", "lpm", "ternary", "range", "optional"}
SELECTOR_WIDTH = {"crc16": 16, "crc32": 32, "csum16": 16, "xor16": 16, "identity": 32}


def _strip(a: dict) -> str:
    """An action's behaviour up to source positions and the names of p4c's temporaries.

    p4c copies an action per table that lists it, each copy with temporaries of its own
    (``scalars.tmp_21`` in one, ``scalars.tmp_22`` in the other). Same name and the same
    primitives up to a consistent renaming of those temporaries (scalars fields without a
    dot; user metadata is ``struct.field``) is one P4 action, as P4Info has it.
    """
    temps: dict[str, str] = {}

    def clean(o: Any) -> Any:
        if isinstance(o, dict):
            v = o.get("value")
            if o.get("type") == "field" and isinstance(v, list) and len(v) == 2 and v[0] == "scalars" \
                    and "." not in str(v[1]):
                return {"type": "field", "value": ["scalars", temps.setdefault(str(v[1]), f"$t{len(temps)}")]}
            return {k: clean(v) for k, v in o.items() if k not in ("source_info", "id")}
        if isinstance(o, list):
            return [clean(v) for v in o]
        return o
    return json.dumps([a.get("name"), clean(a.get("runtime_data")), clean(a.get("primitives"))], sort_keys=True)


class ControlWriter:
    """Writes the externs (top level) and one control per pipeline."""

    def __init__(self, j: dict, refs: Any, ex: ExprTranslator, p4info: p4info_pb2.P4Info | None) -> None:
        self.j, self.refs, self.ex, self.p4info = j, refs, ex, p4info
        self.actions: dict[int, tuple[int, dict]] = {}
        self.canon: dict[int, int] = {}
        seen: dict[str, int] = {}
        for i, a in enumerate(j.get("actions") or []):
            if not isinstance(a, dict) or not isinstance(a.get("id"), int):
                raise Bmv2JsonError(f"actions[{i}]", "an action needs an integer id")
            self.actions[a["id"]] = (i, a)
            key = _strip(a)
            self.canon[a["id"]] = seen.setdefault(key, a["id"])
        self.registers = {r["name"]: (i, r) for i, r in enumerate(j.get("register_arrays") or [])}
        self.counters = {c["name"]: (i, c) for i, c in enumerate(j.get("counter_arrays") or [])}
        self.meters = {m["name"]: (i, m) for i, m in enumerate(j.get("meter_arrays") or [])}
        self.calcs = {c["name"]: (i, c) for i, c in enumerate(j.get("calculations") or [])}
        self.learn = {lst["id"]: (i, lst) for i, lst in enumerate(j.get("learn_lists") or [])}
        self.field_lists = {fl["id"]: fl for fl in j.get("field_lists") or []}
        info_tables = {t.preamble.name: t for t in p4info.tables} if p4info is not None else None
        self.info_tables = info_tables
        self.public = self._public_actions()
        self.meter_reads = self._meter_reads()
        self._one_control_each()

    def _meter_reads(self) -> dict[int, str]:
        """Canonical action id -> the ``read`` of its table's direct meter. BMv2 writes a direct
        meter's ``result_target`` on every hit of its table, before the action: each action
        of the table reads it first (the meter itself runs on the hit, as in BMv2), except an
        action other tables list too (it cannot read the meter there), which leaves the target
        unwritten: the one difference from BMv2 (docs/reference/p4switch.md)."""
        out: dict[int, str] = {}
        owner: dict[int, str] = {}
        for pi, pipe in enumerate(self.j.get("pipelines") or []):
            for n, t in enumerate(pipe.get("tables") or []):
                for a in t.get("action_ids") or []:
                    c = self.canon.get(a)
                    if c is None:
                        continue
                    name = t.get("direct_meters")
                    shared = c in owner and owner[c] != name
                    owner[c] = name
                    if shared:  # another table lists it too: a read there would not be BMv2's
                        out.pop(c, None)
                        owner[c] = "<shared>"
                        continue
                    if name:
                        if name not in self.meters or not self.meters[name][1].get("is_direct"):
                            raise Bmv2JsonError(f"pipelines[{pi}].tables[{n}].direct_meters",
                                                f"no direct meter {name!r}")
                        i, m = self.meters[name]
                        target = self.refs.field(m.get("result_target"), f"meter_arrays[{i}].result_target")
                        out[c] = f"mtr_{i}.read({target.text});"
        return out

    def _one_control_each(self) -> None:
        """An action is declared in the control whose tables list it; one listed by tables of
        both (JSON from P4_14) would be two P4 objects with one name: refused."""
        seen: dict[int, int] = {}
        for pi, pipe in enumerate(self.j.get("pipelines") or []):
            for t in pipe.get("tables") or []:
                for a in t.get("action_ids") or []:
                    c = self.canon.get(a)
                    if c is None or self._is_core_noaction(c):
                        continue
                    if seen.setdefault(c, pi) != pi:
                        raise Bmv2JsonError(f"actions[{self.actions[c][0]}]",
                                            f"action {self.actions[c][1].get('name')!r} is listed by tables of two "
                                            "pipelines; the loader declares an action in one control")

    def _public_actions(self) -> set[int]:
        """Actions (canonical ids) a table that stays a table lists: they keep the JSON name;
        another copy under the same name (p4c's per-call copy of an action called directly)
        is written ``@hidden`` under a name of its own."""
        out = set()
        for pipe in self.j.get("pipelines") or []:
            for t in pipe.get("tables") or []:
                if not self._inlined(t):
                    out.update(self.canon[a] for a in t.get("action_ids") or [] if a in self.canon)
        return out

    # ---- externs --------------------------------------------------------------------------
    def _counter_unit(self, name: str, direct: bool) -> str:
        if self.p4info is not None:
            for c in (self.p4info.direct_counters if direct else self.p4info.counters):
                if c.preamble.name == name:
                    return COUNTER_UNITS.get(c.spec.unit, "packets_and_bytes")
        return "packets_and_bytes"

    def globals_text(self) -> list[str]:
        """Registers, counters, meters and digest types: top-level instances named as in the JSON."""
        out = []
        for name, (i, r) in self.registers.items():
            w = r.get("bitwidth")
            if not isinstance(w, int) or w <= 0:
                raise Bmv2JsonError(f"register_arrays[{i}].bitwidth", "a register needs its width")
            out.append(f'@name(".{name}") register<bit<{w}>>(32w{r.get("size", 1)}) reg_{i};')
        for name, (i, c) in self.counters.items():
            unit = self._counter_unit(name, bool(c.get("is_direct")))
            if c.get("is_direct"):
                out.append(f'@name(".{name}") direct_counter(CounterType.{unit}) ctr_{i};')
            else:
                out.append(f'@name(".{name}") counter(32w{c.get("size", 1)}, CounterType.{unit}) ctr_{i};')
        for name, (i, m) in self.meters.items():
            if m.get("type") not in ("bytes", "packets"):
                raise Bmv2JsonError(f"meter_arrays[{i}].type", f"meter type {m.get('type')!r}")
            if m.get("is_direct"):
                target = self.refs.field(m.get("result_target"), f"meter_arrays[{i}].result_target")
                out.append(f'@name(".{name}") direct_meter<bit<{target.width}>>(MeterType.{m["type"]}) mtr_{i};')
                continue
            out.append(f'@name(".{name}") meter(32w{m.get("size", 1)}, MeterType.{m["type"]}) mtr_{i};')
        for i, lst in self.learn.values():
            members = self._digest_members(lst)
            fields = []
            for k, el in enumerate(lst.get("elements") or []):
                e = self.ex.expr(el, f"learn_lists[{i}].elements[{k}]")
                fields.append(f" bit<{e.width}> {members[k] if k < len(members) else f'f{k}'};")
            out.append(f"struct {ident(lst['name'])} {{{''.join(fields)} }}")
        return out

    def _digest_members(self, lst: dict) -> list[str]:
        if self.p4info is not None:
            st = self.p4info.type_info.structs.get(lst["name"])
            if st is not None:
                return [ident(m.name) for m in st.members]
        return [ident(str(el.get("value", ["", f"f{k}"])[-1]).rsplit(".", 1)[-1])
                for k, el in enumerate(lst.get("elements") or [])]

    # ---- actions --------------------------------------------------------------------------
    def _hidden(self, name: str) -> bool:
        """An action p4c made (``act_0``, ``alinea694``), which its P4Info leaves out: the
        P4Info says so when given; otherwise a name outside every control."""
        if self.p4info is not None:
            return name not in {a.preamble.name for a in self.p4info.actions}
        return "." not in name and name != "NoAction"

    def _is_core_noaction(self, aid: int) -> bool:
        a = self.actions[aid][1]
        return a.get("name") == "NoAction" and not a.get("runtime_data") and not a.get("primitives")

    def action_name(self, aid: int) -> str:
        if self._is_core_noaction(self.canon[aid]):
            return "NoAction"
        i, a = self.actions[self.canon[aid]]
        return f"a{self.canon[aid]}_{ident(a['name'].rsplit('.', 1)[-1])}"

    def action_text(self, aid: int) -> str:
        i, a = self.actions[aid]
        path = f"actions[{i}]"
        params = []
        for k, rd in enumerate(a.get("runtime_data") or []):
            w = rd.get("bitwidth")
            if not isinstance(w, int) or w <= 0:
                raise Bmv2JsonError(f"{path}.runtime_data[{k}].bitwidth", "a parameter needs its width")
            params.append((ident(rd["name"]), w))
        body = self._prims(a.get("primitives") or [], 0, len(a.get("primitives") or []), path, params)
        if aid in self.meter_reads:
            body = f"{self.meter_reads[aid]} {body}"
        raw = [rd["name"] for rd in a.get("runtime_data") or []]
        sig = ", ".join(f"{'' if r == n else f'@name({json.dumps(r)}) '}bit<{w}> {n}" for r, (n, w) in zip(raw, params))
        first = min(c for c in set(self.canon.values()) if self.actions[c][1].get("name") == a["name"])
        hidden = self._hidden(a["name"]) if self.p4info is not None else self._hidden(a["name"]) and aid not in self.public
        if hidden or (aid != first and aid not in self.public):
            name = a["name"] if aid == first else f'{a["name"]}__{aid}'
            return f'@hidden @name(".{name}") action {self.action_name(aid)}({sig}) {{ {body} }}'
        return f'@name(".{a["name"]}") action {self.action_name(aid)}({sig}) {{ {body} }}'

    def _prims(self, prims: list, lo: int, hi: int, path: str, params: list) -> str:
        """Primitives ``lo..hi``; p4c's ``_jump_if_zero``/``_jump`` become if/else."""
        out = []
        i = lo
        while i < hi:
            p = prims[i]
            pp = f"{path}.primitives[{i}]"
            if p.get("op") == "_jump_if_zero":
                args = p.get("parameters") or []
                target = hexint((args[1] or {}).get("value"), pp + ".parameters[1].value") if len(args) == 2 else -1
                if not i < target <= hi:
                    raise Bmv2JsonError(pp, "a jump must go forward within the action")
                cond = boolean(self.ex.expr(args[0], pp + ".parameters[0]", params))
                then_end, else_end = target, target
                last = prims[target - 1]
                if last.get("op") == "_jump":
                    end = hexint((last.get("parameters") or [{}])[0].get("value"), f"{path}.primitives[{target - 1}]")
                    if target <= end <= hi:
                        then_end, else_end = target - 1, end
                then = self._prims(prims, i + 1, then_end, path, params)
                other = self._prims(prims, target, else_end, path, params)
                out.append(f"if ({cond}) {{ {then} }} else {{ {other} }}")
                i = else_end
                continue
            if p.get("op") == "_jump":
                raise Bmv2JsonError(pp, "a jump outside an if/else shape is not supported")
            out.append(self._prim(p, pp, params))
            i += 1
        return " ".join(out)

    def _val(self, p: dict, k: int, path: str, params: list) -> Ex:
        args = p.get("parameters") or []
        if k >= len(args):
            raise Bmv2JsonError(path + ".parameters", f"{p.get('op')} needs {k + 1} parameters or more")
        return self.ex.expr(args[k], f"{path}.parameters[{k}]", params)

    def _named(self, p: dict, k: int, table: dict, path: str, what: str) -> tuple[int, dict]:
        args = p.get("parameters") or []
        v = args[k].get("value") if k < len(args) and isinstance(args[k], dict) else None
        if v not in table:
            raise Bmv2JsonError(f"{path}.parameters[{k}].value", f"unknown {what} {v!r}")
        return table[v]

    def _prim(self, p: dict, path: str, params: list) -> str:  # noqa: C901 - one case per primitive
        op = p.get("op")
        args = p.get("parameters") or []
        if op == "assign":
            dst = args[0] if args else {}
            if dst.get("type") == "field" and isinstance(dst.get("value"), list) and dst["value"][1:] == ["$valid$"]:
                v = self._val(p, 1, path, params)
                base = self.refs.header(dst["value"][0], path + ".parameters[0].value[0]")
                if v.kind == "int":
                    return f"{base}.{'setValid' if v.value else 'setInvalid'}();"
                return f"if ({boolean(v)}) {{ {base}.setValid(); }} else {{ {base}.setInvalid(); }}"
            d = self._val(p, 0, path, params)
            if len(args) < 2:
                raise Bmv2JsonError(path + ".parameters", "assign takes a field and a value")
            return f"{d.text} = {self.ex.mod(args[1], d.width, path + '.parameters[1]', params)};"
        if op in ("assign_header", "assign_union"):
            a = [self.refs.header(x.get("value"), f"{path}.parameters[{k}].value") for k, x in enumerate(args[:2])]
            return f"{a[0]} = {a[1]};"
        if op == "assign_header_stack":
            a = [self.refs.stack(x.get("value"), f"{path}.parameters[{k}].value") for k, x in enumerate(args[:2])]
            return f"{a[0]} = {a[1]};"
        if op in ("add_header", "remove_header"):
            h = self.refs.header(args[0].get("value") if args else None, path + ".parameters[0].value")
            return f"{h}.{'setValid' if op == 'add_header' else 'setInvalid'}();"
        if op in ("push", "pop"):
            s = self.refs.stack(args[0].get("value") if args else None, path + ".parameters[0].value")
            n = self._val(p, 1, path, params)
            if n.kind != "int":
                raise Bmv2JsonError(path + ".parameters[1]", f"{op} takes a constant count")
            return f"{s}.{'push_front' if op == 'push' else 'pop_front'}({n.value});"
        if op in ("mark_to_drop", "drop"):  # drop: the same request in JSON from P4_14 programs
            return "mark_to_drop(standard_metadata);"
        if op == "exit":
            return "exit;"
        if op == "register_read":
            d = self._val(p, 0, path, params)
            i, r = self._named(p, 1, self.registers, path, "register array")
            if d.width != r["bitwidth"]:
                raise Bmv2JsonError(path + ".parameters[0]", "register_read into a field of another width")
            return f"reg_{i}.read({d.text}, {bits(self._val(p, 2, path, params), 32)});"
        if op == "register_write":
            i, r = self._named(p, 0, self.registers, path, "register array")
            if len(args) < 3:
                raise Bmv2JsonError(path + ".parameters", "register_write takes an array, an index and a value")
            return (f"reg_{i}.write({bits(self._val(p, 1, path, params), 32)}, "
                    f"{self.ex.mod(args[2], r['bitwidth'], path + '.parameters[2]', params)});")
        if op == "count":
            i, c = self._named(p, 0, self.counters, path, "counter array")
            if c.get("is_direct"):
                raise Bmv2JsonError(path, "count on a direct counter")
            return f"ctr_{i}.count({bits(self._val(p, 1, path, params), 32)});"
        if op == "execute_meter":
            i, _m = self._named(p, 0, self.meters, path, "meter array")
            d = self._val(p, 2, path, params)
            return f"mtr_{i}.execute_meter({bits(self._val(p, 1, path, params), 32)}, {d.text});"
        if op == "modify_field_with_hash_based_offset":
            d = self._val(p, 0, path, params)
            base, size = self._val(p, 1, path, params), self._val(p, 3, path, params)
            ci, calc = self._named(p, 2, self.calcs, path, "calculation")
            algo, fields, payload = calc_fields(calc, f"calculations[{ci}]", self.ex)
            if payload:
                raise Bmv2JsonError(f"calculations[{ci}].input", "a hash over the payload is not supported")
            wb, ws = max(32, _w(base)), max(32, _w(size))
            return (f"hash({d.text}, HashAlgorithm.{algo}, {bits(base, wb)}, {{{', '.join(fields)}}}, "
                    f"{bits(size, ws)});")
        if op == "modify_field_rng_uniform":
            d = self._val(p, 0, path, params)
            lo, hi = self._val(p, 1, path, params), self._val(p, 2, path, params)
            return f"random({d.text}, {bits(lo, d.width)}, {bits(hi, d.width)});"
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            kind = "I2E" if op.startswith("clone_ingress") else "E2E"
            session = bits(self._val(p, 0, path, params), 32)
            fl = self._list_id(p, 1, path, params)
            if fl is None:
                return f"clone(CloneType.{kind}, {session});"
            return f"clone_preserving_field_list(CloneType.{kind}, {session}, 8w{fl});"
        if op in ("resubmit", "recirculate"):
            fl = self._list_id(p, 0, path, params)
            return f"{op}_preserving_field_list(8w{fl or 0});"
        if op == "truncate":
            return f"truncate({bits(self._val(p, 0, path, params), 32)});"
        if op == "generate_digest":
            recv = bits(self._val(p, 0, path, params), 32)
            lid = self._val(p, 1, path, params)
            if lid.kind != "int" or lid.value not in self.learn:
                raise Bmv2JsonError(path + ".parameters[1]", "generate_digest names no learn list")
            li, lst = self.learn[lid.value]
            vals = [self.ex.expr(el, f"learn_lists[{li}].elements[{k}]").text
                    for k, el in enumerate(lst.get("elements") or [])]
            return f"digest<{ident(lst['name'])}>({recv}, {{{', '.join(vals)}}});"
        if op == "log_msg":
            msg = args[0].get("value") if args else None
            if not isinstance(msg, str):
                raise Bmv2JsonError(path + ".parameters[0]", "log_msg takes a string")
            vec = args[1].get("value") if len(args) > 1 else None
            lit = json.dumps(msg)
            if not vec:
                return f"log_msg({lit});"
            vals = [self.ex.expr(x, f"{path}.parameters[1].value[{k}]", params).text for k, x in enumerate(vec)]
            return f"log_msg({lit}, {{{', '.join(vals)}}});"
        if op in ("assert", "assume"):
            return f"{op}({boolean(self._val(p, 0, path, params))});"
        raise Bmv2JsonError(path + ".op", f"primitive {op!r} is not supported by the loader")

    def _list_id(self, p: dict, k: int, path: str, params: list) -> int | None:
        """A field list id, or None for a list absent or without fields (preserves nothing)."""
        if k >= len(p.get("parameters") or []):
            return None
        v = self._val(p, k, path, params)
        if v.kind != "int":
            raise Bmv2JsonError(f"{path}.parameters[{k}]", "a field list id must be a constant")
        fl = self.field_lists.get(v.value)
        if v.value == 0 or fl is None or not fl.get("elements"):
            return None
        return v.value

    # ---- tables and the control graph -----------------------------------------------------
    def _inlined(self, t: dict) -> bool:
        """A table p4c made for a direct action call (see the module's docstring)."""
        d = t.get("default_entry") or {}
        synth = (not t.get("key") and len(t.get("action_ids") or []) == 1 and d.get("action_const")
                 and d.get("action_entry_const") and t.get("type", "simple") == "simple"
                 and not t.get("with_counters") and not t.get("direct_meters"))
        if not synth:
            return False
        if self.info_tables is not None:
            return t.get("name") not in self.info_tables
        return str(t.get("name", "")).startswith("tbl_")

    def _args(self, aid: int, data: list, path: str) -> str:
        _i, a = self.actions[aid]
        rds = a.get("runtime_data") or []
        if len(data) != len(rds):
            raise Bmv2JsonError(path, f"{len(rds)} action data values expected, {len(data)} given")
        return ", ".join(f"{rd['bitwidth']}w{hexint(v, f'{path}[{k}]') % (1 << rd['bitwidth'])}"
                         for k, (v, rd) in enumerate(zip(data, rds)))

    def _key_width(self, k: dict, path: str) -> tuple[str, int]:
        target = k.get("target")
        if isinstance(target, list) and target[1:] == ["$valid$"]:
            return f"{self.refs.header(target[0], path + '.target[0]')}.isValid()", 1
        e = self.refs.field(target, path + ".target")
        if k.get("mask") is not None:
            m = hexint(k["mask"], path + ".mask")
            return f"({e.text} & {e.width}w{m % (1 << e.width)})", e.width
        return e.text, e.width

    def table_text(self, t: dict, path: str, profiles: dict[str, tuple[int, dict]]) -> str:
        keys, widths, kinds = [], [], []
        info = self.info_tables.get(t.get("name")) if self.info_tables is not None else None
        optional = {f.name for f in info.match_fields if f.match_type == p4info_pb2.MatchField.OPTIONAL} if info else set()
        for n, k in enumerate(t.get("key") or []):
            kp = f"{path}.key[{n}]"
            kind = k.get("match_type")
            if kind not in MATCH_KINDS:
                raise Bmv2JsonError(kp + ".match_type", f"match type {kind!r} is not supported")
            text, w = self._key_width(k, kp)
            if kind == "ternary" and k.get("name") in optional:
                kind = "optional"  # p4c writes an optional key as ternary; the P4Info keeps the kind
            name = json.dumps(k.get("name") or text)
            keys.append(f"{text} : {kind} @name({name});")
            widths.append(w)
            kinds.append(kind)
        props = []
        ttype = t.get("type", "simple")
        if ttype in ("indirect", "indirect_ws"):
            ap = t.get("action_profile", t.get("act_prof_name"))  # act_prof_name: format 2.x before 2.12
            if ap not in profiles:
                raise Bmv2JsonError(path + ".action_profile", f"unknown action profile {ap!r}")
            pi, prof = profiles[ap]
            if ttype == "indirect_ws":
                for n, el in enumerate((prof.get("selector") or {}).get("input") or []):
                    e = self.ex.expr(el, f"action_profiles[{pi}].selector.input[{n}]")
                    keys.append(f"{e.text} : selector;")
            props.append(f"implementation = ap_{pi};")
        elif ttype != "simple":
            raise Bmv2JsonError(path + ".type", f"table type {ttype!r} is not supported")
        if t.get("with_counters"):
            direct = [i for n, (i, c) in self.counters.items() if c.get("is_direct") and c.get("binding") == t["name"]]
            if not direct:
                raise Bmv2JsonError(path + ".with_counters", "no direct counter is bound to this table")
            props.append(f"counters = ctr_{direct[0]};")
        if t.get("direct_meters"):
            props.append(f"meters = mtr_{self.meters[t['direct_meters']][0]};")
        if t.get("support_timeout"):
            props.append("support_timeout = true;")
        scopes = self._scopes(t)
        acts = []
        for aid in t.get("action_ids") or []:
            if aid not in self.actions:
                raise Bmv2JsonError(path + ".action_ids", f"no action with id {aid}")
            acts.append(f"{scopes.get(self.actions[aid][1]['name'], '')}{self.action_name(aid)};")
        d = t.get("default_entry") or self._info_default(t)
        if d:
            aid = d.get("action_id")
            if aid not in self.actions:
                raise Bmv2JsonError(path + ".default_entry.action_id", f"no action with id {aid}")
            const = "const " if d.get("action_const") else ""
            args = self._args(aid, d.get("action_data") or [], path + ".default_entry.action_data")
            props.append(f"{const}default_action = {self.action_name(aid)}({args});")
        if t.get("entries"):
            props.append(self._entries(t, path, widths, kinds))
        size = t.get("max_size")
        info = self.info_tables.get(t["name"]) if self.info_tables is not None else None
        if info is not None and info.size:
            size = info.size  # p4c writes a const table's entry count as its JSON max_size
        if isinstance(size, int) and size > 0:
            props.append(f"size = {size};")
        key = f"key = {{ {' '.join(keys)} }} " if keys else ""
        return (f'@name(".{t["name"]}") table {self.table_ident(t)} {{ {key}actions = {{ {" ".join(acts)} }} '
                f"{' '.join(props)} }}")

    def _info_default(self, t: dict) -> dict | None:
        """The P4Info's const default action of a table whose JSON has no default entry
        (p4c writes none for an indirect table): the one the source declared."""
        info = self.info_tables.get(t.get("name")) if self.info_tables is not None else None
        if info is None or not info.const_default_action_id:
            return None
        name = next((a.preamble.name for a in self.p4info.actions if a.preamble.id == info.const_default_action_id), None)
        for aid in t.get("action_ids") or []:
            a = self.actions.get(aid, (0, {}))[1]
            if a.get("name") == name and not a.get("runtime_data"):
                return {"action_id": aid, "action_const": True, "action_data": [], "action_entry_const": True}
        return None

    def _scopes(self, t: dict) -> dict[str, str]:
        if self.info_tables is None or t.get("name") not in self.info_tables:
            return {}
        names = {a.preamble.id: a.preamble.name for a in self.p4info.actions}
        ann = {p4info_pb2.ActionRef.DEFAULT_ONLY: "@defaultonly ", p4info_pb2.ActionRef.TABLE_ONLY: "@tableonly "}
        return {names.get(r.id, ""): ann.get(r.scope, "") for r in self.info_tables[t["name"]].action_refs}

    def _entries(self, t: dict, path: str, widths: list[int], kinds: list[str]) -> str:
        out = []
        for n, e in enumerate(t["entries"]):
            ep = f"{path}.entries[{n}]"
            mk = e.get("match_key") or []
            if len(mk) != len(widths):
                raise Bmv2JsonError(ep + ".match_key", f"{len(widths)} key values expected")
            items = [self._entry_key(m, f"{ep}.match_key[{k}]", widths[k]) for k, m in enumerate(mk)]
            ae = e.get("action_entry") or {}
            aid = ae.get("action_id")
            if aid not in self.actions:
                raise Bmv2JsonError(ep + ".action_entry.action_id", f"no action with id {aid}")
            args = self._args(aid, ae.get("action_data") or [], ep + ".action_entry.action_data")
            keyset = items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"
            prio = e.get("priority")
            ann = f"@priority({prio}) " if isinstance(prio, int) and prio != n + 1 and any(
                k in ("ternary", "range", "optional") for k in kinds) else ""
            out.append(f"{ann}{keyset} : {self.action_name(aid)}({args});")
        return f"const entries = {{ {' '.join(out)} }}"

    def _entry_key(self, m: dict, path: str, w: int) -> str:
        full = (1 << w) - 1
        mt = m.get("match_type")
        if mt == "exact":
            return f"{w}w{hexint(m.get('key'), path + '.key') & full}"
        if mt == "lpm":
            plen = m.get("prefix_length")
            if not isinstance(plen, int) or not 0 <= plen <= w:
                raise Bmv2JsonError(path + ".prefix_length", "an lpm key needs its prefix length")
            if plen == 0:
                return "_"
            mask = full ^ ((1 << (w - plen)) - 1)
            return f"{w}w{hexint(m.get('key'), path + '.key') & mask} &&& {w}w{mask}"
        if mt in ("ternary", "optional"):
            mask = hexint(m.get("mask", hex(full)), path + ".mask") & full
            v = hexint(m.get("key"), path + ".key") & full
            if mask == 0:
                return "_"
            return f"{w}w{v}" if mask == full else f"{w}w{v & mask} &&& {w}w{mask}"
        if mt == "range":
            return f"{w}w{hexint(m.get('start'), path + '.start') & full} .. {w}w{hexint(m.get('end'), path + '.end') & full}"
        raise Bmv2JsonError(path + ".match_type", f"entry match type {mt!r} is not supported")

    @staticmethod
    def table_ident(t: dict) -> str:
        return f"t{t['id']}_{ident(str(t['name']).rsplit('.', 1)[-1])}"

    def control_text(self, cname: str, pi: int, pipe: dict) -> str:
        """One pipeline as ``control cname(...)``."""
        return _GraphWriter(self, pi, pipe).text(cname)


def _w(e: Ex) -> int:
    return e.width if e.kind == "bits" else max(1, e.value.bit_length())


class _GraphWriter:
    """One pipeline's declarations and its graph as structured code."""

    def __init__(self, cw: ControlWriter, pi: int, pipe: dict) -> None:
        self.cw, self.pi, self.pipe = cw, pi, pipe
        self.path = f"pipelines[{pi}]"
        self.tables = {t["name"]: (n, t) for n, t in enumerate(pipe.get("tables") or [])}
        self.conds = {c["name"]: (n, c) for n, c in enumerate(pipe.get("conditionals") or [])}
        self.profiles = {p["name"]: (n, p) for n, p in enumerate(pipe.get("action_profiles") or [])}
        for t in pipe.get("tables") or []:  # format 2.x before 2.12: the profile is the table's own
            name = t.get("act_prof_name")
            if name and name not in self.profiles:
                own = {"name": name, "max_size": t.get("max_size", 1024), "selector": t.get("selector")}
                self.profiles[name] = (len(self.profiles), own)
        self.written: set[str] = set()
        self._pdom: dict[Any, frozenset] = {}

    def succ(self, node: str) -> list[Any]:
        if node in self.conds:
            c = self.conds[node][1]
            return [c.get("true_next"), c.get("false_next")]
        t = self.tables[node][1]
        nt = t.get("next_tables") or {}
        # base_default_next is where an action next_tables does not name goes: only then a successor
        covered = "__HIT__" in nt and "__MISS__" in nt or all(a in nt for a in t.get("actions") or [])
        return list(nt.values()) + ([] if covered and nt else [t.get("base_default_next")])

    def pdom(self, node: Any, depth: int = 0) -> frozenset:
        if node is None:
            return frozenset([None])
        if node not in self._pdom:
            if node not in self.tables and node not in self.conds:
                raise Bmv2JsonError(self.path, f"the graph names no table or conditional {node!r}")
            if depth > 10000:
                raise Bmv2JsonError(self.path, "the control graph has a cycle")
            self._pdom[node] = frozenset()  # cycle guard
            sets = [self.pdom(s, depth + 1) for s in self.succ(node)]
            self._pdom[node] = frozenset([node]).union(frozenset.intersection(*sets))
        return self._pdom[node]

    def ipdom(self, node: str) -> Any:
        cands = self.pdom(node) - {node}
        return max(cands, key=lambda c: len(self.pdom(c)))

    def body(self, node: Any, stop: Any) -> str:
        out = []
        while node is not None and node != stop:
            if node in self.written:
                raise Bmv2JsonError(self.path, f"node {node!r} is reached on two paths the loader cannot join")
            self.written.add(node)
            join = self.ipdom(node)
            if node in self.conds:
                n, c = self.conds[node]
                cond = boolean(self.cw.ex.expr(c.get("expression"), f"{self.path}.conditionals[{n}].expression"))
                then, other = self.body(c.get("true_next"), join), self.body(c.get("false_next"), join)
                out.append(f"if ({cond}) {{ {then} }}" + (f" else {{ {other} }}" if other else ""))
            else:
                out.append(self._apply(node, join))
            node = join
        return " ".join(out)

    def _apply(self, node: str, join: Any) -> str:
        n, t = self.tables[node]
        nx = t.get("next_tables") or {}
        if self.cw._inlined(t):
            d = t["default_entry"]
            aid = d["action_id"]
            call = f"{self.cw.action_name(aid)}({self.cw._args(aid, d.get('action_data') or [], f'{self.path}.tables[{n}].default_entry.action_data')});"
            return call
        tid = ControlWriter.table_ident(t)
        if "__HIT__" in nx or "__MISS__" in nx:
            hit, miss = self.body(nx.get("__HIT__"), join), self.body(nx.get("__MISS__"), join)
            return f"if ({tid}.apply().hit) {{ {hit} }} else {{ {miss} }}"
        cases = []
        names = {self.cw.actions[a][1]["name"]: a for a in t.get("action_ids") or [] if a in self.cw.actions}
        by_target: dict[Any, list[str]] = {}
        for aname, target in nx.items():
            if target != join:
                if aname not in names:
                    raise Bmv2JsonError(f"{self.path}.tables[{n}].next_tables", f"no action {aname!r} in the table")
                by_target.setdefault(target, []).append(self.cw.action_name(names[aname]))
        for target, labels in by_target.items():  # actions going to one node share its case
            cases.append(" ".join(f"{a}:" for a in labels[:-1]) + f" {labels[-1]}: {{ {self.body(target, join)} }}")
        other = t.get("base_default_next")
        if other != join and not all(a in nx for a in names):
            cases.append(f"default: {{ {self.body(other, join)} }}")
        if not cases:
            return f"{tid}.apply();"
        return f"switch ({tid}.apply().action_run) {{ {' '.join(cases)} }}"

    def text(self, cname: str) -> str:
        decls = []
        for pname, (n, p) in self.profiles.items():
            sel = p.get("selector")
            if sel:
                algo = sel.get("algo")
                if algo not in SELECTOR_WIDTH:
                    raise Bmv2JsonError(f"{self.path}.action_profiles[{n}].selector.algo",
                                        f"selector algorithm {algo!r} is not supported")
                decls.append(f'@name(".{pname}") action_selector(HashAlgorithm.{algo}, 32w{p.get("max_size", 1)}, '
                             f"32w{SELECTOR_WIDTH[algo]}) ap_{n};")
            else:
                decls.append(f'@name(".{pname}") action_profile(32w{p.get("max_size", 1)}) ap_{n};')
        aids: list[int] = []
        for t in self.pipe.get("tables") or []:
            for aid in t.get("action_ids") or []:
                c = self.cw.canon.get(aid)
                if c is None:
                    raise Bmv2JsonError(f"{self.path}.tables[{self.tables[t['name']][0]}].action_ids",
                                        f"no action with id {aid}")
                if c not in aids:
                    aids.append(c)
        decls += [self.cw.action_text(a) for a in aids if not self.cw._is_core_noaction(a)]
        body = self.body(self.pipe.get("init_table"), None)
        for name, (n, t) in self.tables.items():
            if name in self.written and not self.cw._inlined(t):
                decls.append(self.cw.table_text(t, f"{self.path}.tables[{n}]", self.profiles))
        return (f"control {cname}(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t "
                f"standard_metadata) {{ {' '.join(decls)} apply {{ {body} }} }}")
