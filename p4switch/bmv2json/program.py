"""A BMv2 JSON (p4c-bm2-ss's output, v1model) as the P4_16 program it says, for the front end.

Why the join point is the front end's input and not the closures or the engine form: the
pipeline compiler resolves slots, constants, error codes and table states from the *checked*
IR, and the emitter builds the engine's register-machine code from the same IR. A program
written out from p4c's JSON (p4c's mid-end result: inlined controls, flattened metadata,
``tbl_*`` tables for direct action calls, explicit masks) goes through the same checker,
P4Info builder, compiler and engine VM as a program read from source; nothing here runs a
packet. Every JSON object becomes one declaration or statement, named with ``@name(".X")`` by
its JSON name so that the P4Info ids are p4c's. What the translation cannot express is
refused with the object's JSON path (:class:`Bmv2JsonError`).
"""

from __future__ import annotations

from typing import Any

from p4.config.v1 import p4info_pb2

from .control import ControlWriter
from .errors import Bmv2JsonError
from .exprs import Ex, ExprTranslator, boolean, calc_fields, hexint, ident
from .parser import parser_text

CORE_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort", "ParserTimeout",
               "ParserInvalidArgument"]
STD_FIELDS = {"ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length", "enq_timestamp",
              "enq_qdepth", "deq_timedelta", "deq_qdepth", "ingress_global_timestamp", "egress_global_timestamp",
              "mcast_grp", "egress_rid", "checksum_error", "parser_error", "priority"}
# Top-level keys whose non-empty content the translation does not express.
REFUSED_KEYS = ("header_union_stacks", "extern_instances")


def _list(j: dict, key: str) -> list:
    v = j.get(key) or []
    if not isinstance(v, list):
        raise Bmv2JsonError(key, "must be a list")
    return v


class Refs:
    """Header types, instances, stacks and unions: what a JSON reference names in P4."""

    def __init__(self, j: dict, p4info: p4info_pb2.P4Info | None) -> None:
        self.types: dict[str, list[tuple[str, int]]] = {}
        for i, ht in enumerate(_list(j, "header_types")):
            path = f"header_types[{i}]"
            fields = []
            for k, f in enumerate(ht.get("fields") or []):
                if not isinstance(f, list) or len(f) < 2:
                    raise Bmv2JsonError(f"{path}.fields[{k}]", "a field is [name, width, signed]")
                if len(f) > 2 and f[2]:
                    raise Bmv2JsonError(f"{path}.fields[{k}]", "signed fields (int<w>) are not supported")
                if f[1] == "*" or not isinstance(f[1], int):
                    raise Bmv2JsonError(f"{path}.fields[{k}]", "varbit fields are not supported")
                fields.append((str(f[0]), int(f[1])))
            self.types[ht["name"]] = fields
        self.instances: dict[str, dict] = {}
        for i, h in enumerate(_list(j, "headers")):
            if h.get("header_type") not in self.types:
                raise Bmv2JsonError(f"headers[{i}].header_type", f"unknown header type {h.get('header_type')!r}")
            self.instances[h["name"]] = h
        self.by_id = {h["id"]: n for n, h in self.instances.items()}
        self.stacks: dict[str, dict] = {}
        self.in_stack: dict[str, tuple[str, int]] = {}
        for i, s in enumerate(_list(j, "header_stacks")):
            self.stacks[s["name"]] = s
            for k, hid in enumerate(s.get("header_ids") or []):
                if hid not in self.by_id:
                    raise Bmv2JsonError(f"header_stacks[{i}].header_ids[{k}]", f"no header with id {hid}")
                self.in_stack[self.by_id[hid]] = (s["name"], k)
        self.union_types = {u["name"]: u for u in _list(j, "header_union_types")}
        self.unions: dict[str, dict] = {}
        self.in_union: dict[str, tuple[str, str]] = {}
        for i, u in enumerate(_list(j, "header_unions")):
            ut = self.union_types.get(u.get("union_type"))
            if ut is None:
                raise Bmv2JsonError(f"header_unions[{i}].union_type", f"unknown union type {u.get('union_type')!r}")
            self.unions[u["name"]] = u
            members = [m[0] for m in ut.get("headers") or []]
            for k, hid in enumerate(u.get("header_ids") or []):
                if hid not in self.by_id or k >= len(members):
                    raise Bmv2JsonError(f"header_unions[{i}].header_ids[{k}]", f"no union member with id {hid}")
                self.in_union[self.by_id[hid]] = (u["name"], members[k])
        self.p4info = p4info
        self.errors = {code: ident(name) for name, code in _list(j, "errors")}

    # ---- naming ---------------------------------------------------------------------------
    def header(self, name: Any, path: str) -> str:
        """The P4 l-value of header instance ``name``."""
        if name not in self.instances:
            raise Bmv2JsonError(path, f"unknown header instance {name!r}")
        if name in self.in_stack:
            s, k = self.in_stack[name]
            return f"hdr.{ident(s)}[{k}]"
        if name in self.in_union:
            u, m = self.in_union[name]
            return f"hdr.{ident(u)}.{ident(m)}"
        h = self.instances[name]
        if name == "standard_metadata":
            return "standard_metadata"
        return f"meta.{ident(name)}" if h.get("metadata") else f"hdr.{ident(name)}"

    def width(self, inst: str, fname: str, path: str) -> int:
        for n, w in self.types[self.instances[inst]["header_type"]]:
            if n == fname:
                return w
        raise Bmv2JsonError(path, f"header {inst!r} has no field {fname!r}")

    def field(self, v: Any, path: str) -> Ex:
        """A ``["instance", "field"]`` reference."""
        if not isinstance(v, list) or len(v) != 2:
            raise Bmv2JsonError(path, "a field reference is [header, field]")
        inst, fname = v
        base = self.header(inst, path + "[0]")
        if fname == "$valid$":
            return Ex(f"({base}.isValid() ? 1w1 : 1w0)", "bits", 1, as_bool=f"{base}.isValid()")
        w = self.width(inst, fname, path + "[1]")
        if inst == "standard_metadata" and fname not in STD_FIELDS:
            raise Bmv2JsonError(path, f"standard_metadata.{fname} is not a v1model field")
        if inst == "standard_metadata" and fname == "parser_error":
            return Ex(f"{base}.parser_error", "error", w)
        return Ex(f"{base}.{fname if inst == 'standard_metadata' else ident(fname)}", "bits", w)

    def stack_field(self, v: Any, path: str) -> Ex:
        """A ``["stack", "field"]`` reference: the field of the stack's last element."""
        if not isinstance(v, list) or len(v) != 2 or v[0] not in self.stacks:
            raise Bmv2JsonError(path, "a stack field is [header stack, field]")
        s = self.stacks[v[0]]
        fields = dict(self.types.get(s["header_type"], []))
        if v[1] not in fields:
            raise Bmv2JsonError(path + "[1]", f"stack {v[0]!r} has no field {v[1]!r}")
        return Ex(f"hdr.{ident(v[0])}.last.{ident(v[1])}", "bits", fields[v[1]])

    def lookahead(self, v: Any, path: str) -> tuple[int, int]:
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and x >= 0 for x in v) and v[1] > 0):
            raise Bmv2JsonError(path + ".value", "lookahead is [offset bits, width]")
        return v[0], v[1]

    def stack(self, name: Any, path: str) -> str:
        if name not in self.stacks:
            raise Bmv2JsonError(path, f"unknown header stack {name!r}")
        return f"hdr.{ident(name)}"


def _controller_headers(refs: Refs, p4info: p4info_pb2.P4Info | None) -> dict[str, str]:
    """Header type -> ``packet_in``/``packet_out`` by the P4Info's controller metadata (the
    JSON has no annotations; the pushed P4Info says which header the controller packs)."""
    out: dict[str, str] = {}
    if p4info is None:
        return out
    for cpm in p4info.controller_packet_metadata:
        want = [(m.name, m.bitwidth) for m in cpm.metadata]
        for tname, fields in refs.types.items():
            if [f for f in fields if f[0] != "_padding"] == want and tname not in out:
                out[tname] = cpm.preamble.name
                break
    return out


def _field_lists(j: dict, refs: Refs) -> dict[tuple[str, str], list[int]]:
    """Metadata field -> the field list ids it is in (written as ``@field_list(ids)``)."""
    marks: dict[tuple[str, str], list[int]] = {}
    for i, fl in enumerate(_list(j, "field_lists")):
        fid = fl.get("id")
        if not isinstance(fid, int) or not 0 <= fid < 256:
            raise Bmv2JsonError(f"field_lists[{i}].id", "a field list id is 0..255")
        for k, el in enumerate(fl.get("elements") or []):
            p = f"field_lists[{i}].elements[{k}]"
            v = el.get("value") if isinstance(el, dict) else None
            if el.get("type") != "field" or not isinstance(v, list) or len(v) != 2:
                raise Bmv2JsonError(p, "field list elements must be fields")
            inst = refs.instances.get(v[0])
            if inst is None or not inst.get("metadata") or v[0] == "standard_metadata":
                raise Bmv2JsonError(p, "v1model preserves user metadata fields only")
            marks.setdefault((v[0], v[1]), []).append(fid)
    return marks


def _types_text(j: dict, refs: Refs, p4info: p4info_pb2.P4Info | None) -> list[str]:
    out: list[str] = []
    extra = []
    # Codes are only compared by name here (an older p4c numbered NoError 1): the core errors
    # come first, in core.p4's order, and the program's own after them.
    codes = set()
    for i, item in enumerate(_list(j, "errors")):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], int)) or item[1] in codes:
            raise Bmv2JsonError(f"errors[{i}]", "an error is [name, unique code]")
        codes.add(item[1])
        name = item[0]
        if name in CORE_ERRORS:
            if name != CORE_ERRORS[i] if i < len(CORE_ERRORS) else True:
                raise Bmv2JsonError(f"errors[{i}]", f"core error {name} out of core.p4's order")
        else:
            extra.append(ident(name))
    if extra:
        out.append("error { " + ", ".join(extra) + " }")
    ctl = _controller_headers(refs, p4info)
    marks = _field_lists(j, refs)
    used_types = {h["header_type"] for n, h in refs.instances.items() if not h.get("metadata")}
    for tname in sorted(used_types):
        ann = f'@controller_header("{ctl[tname]}") ' if tname in ctl else ""
        fields = "".join(f" bit<{w}> {ident(f)};" for f, w in refs.types[tname])
        out.append(f"{ann}header {htype(tname)} {{{fields} }}")
    for uname, ut in refs.union_types.items():
        members = "".join(f" {htype(t)} {ident(m)};" for m, t in ut.get("headers") or [])
        out.append(f"header_union U_{ident(uname)} {{{members} }}")
    hdr_fields, meta_fields = [], []
    for name, h in refs.instances.items():
        if name == "standard_metadata" or name in refs.in_stack or name in refs.in_union:
            continue
        if h.get("metadata"):
            fields = "".join(f" {_fl_ann(marks.get((name, f)))}bit<{w}> {ident(f)};"
                             for f, w in refs.types[h["header_type"]])
            out.append(f"struct M_{ident(name)} {{{fields} }}")
            meta_fields.append(f" M_{ident(name)} {ident(name)};")
        else:
            hdr_fields.append(f" {htype(h['header_type'])} {ident(name)};")
    for sname, s in refs.stacks.items():
        hdr_fields.append(f" {htype(s['header_type'])}[{s['size']}] {ident(sname)};")
    for uname, u in refs.unions.items():
        hdr_fields.append(f" U_{ident(u['union_type'])} {ident(uname)};")
    out.append("struct headers_t {" + "".join(hdr_fields) + " }")
    out.append("struct metadata_t {" + "".join(meta_fields) + " }")
    return out


def htype(tname: str) -> str:
    """A header type keeps its P4 name (P4Info's controller header ids hash it), unless it
    would clash with the structs this module declares."""
    s = ident(tname)
    return "H_" + s if s in ("headers_t", "metadata_t") or s.startswith(("M_", "U_", "H_")) else s


def _fl_ann(ids: list[int] | None) -> str:
    return f"@field_list({', '.join(map(str, ids))}) " if ids else ""


def _check_top(j: Any) -> None:
    if not isinstance(j, dict):
        raise Bmv2JsonError("", "a BMv2 JSON is an object")
    for key in REFUSED_KEYS:
        if j.get(key):
            raise Bmv2JsonError(f"{key}[0]", f"{key} are not supported by the loader")
    meta = j.get("__meta__") or {}
    ver = meta.get("version") if isinstance(meta, dict) else None
    if isinstance(ver, list) and ver and ver[0] != 2:
        raise Bmv2JsonError("__meta__.version", f"BMv2 JSON format version {ver} (the loader reads 2.x)")
    for i, alias in enumerate(_list(j, "field_aliases")):
        # An alias names the standard_metadata field BMv2 finds an intrinsic value in; a field
        # v1model no longer has (lf_field_list, ...) is refused where the program uses it.
        ok = (isinstance(alias, list) and len(alias) == 2 and isinstance(alias[1], list)
              and alias[1][:1] == ["standard_metadata"] and len(alias[1]) == 2
              and str(alias[0]).rsplit(".", 1)[-1] == alias[1][1])
        if not ok:
            raise Bmv2JsonError(f"field_aliases[{i}]", f"alias {alias!r} is not one of v1model's intrinsic fields")
    if len(_list(j, "parsers")) != 1:
        raise Bmv2JsonError("parsers", "v1model has exactly one parser")
    if len(_list(j, "deparsers")) != 1:
        raise Bmv2JsonError("deparsers", "v1model has exactly one deparser")


def _deparser_text(j: dict, refs: Refs) -> str:
    d = j["deparsers"][0]
    if d.get("primitives"):
        raise Bmv2JsonError("deparsers[0].primitives[0]", "deparser primitives are not supported")
    lines = []
    for k, name in enumerate(d.get("order") or []):
        p = f"deparsers[0].order[{k}]"
        if name in refs.stacks:
            lines.append(f"packet.emit({refs.stack(name, p)});")
        elif name in refs.unions:
            lines.append(f"packet.emit(hdr.{ident(name)});")
        else:
            lines.append(f"packet.emit({refs.header(name, p)});")
    body = " ".join(lines)
    return f"control DeparserImpl(packet_out packet, in headers_t hdr) {{ apply {{ {body} }} }}"


def _checksum_controls(j: dict, refs: Refs, ex: ExprTranslator) -> tuple[str, str]:
    calcs = {c["name"]: (i, c) for i, c in enumerate(_list(j, "calculations"))}
    verify, update = [], []
    for i, c in enumerate(_list(j, "checksums")):
        p = f"checksums[{i}]"
        if c.get("type", "generic") not in ("generic", "ipv4"):
            raise Bmv2JsonError(p + ".type", f"checksum type {c.get('type')!r} is not supported")
        if c.get("calculation") not in calcs:
            raise Bmv2JsonError(p + ".calculation", f"unknown calculation {c.get('calculation')!r}")
        ci, calc = calcs[c["calculation"]]
        algo, fields, payload = calc_fields(calc, f"calculations[{ci}]", ex)
        cond = "true" if c.get("if_cond") is None else boolean(ex.expr(c["if_cond"], p + ".if_cond"))
        target = refs.field(c.get("target"), p + ".target").text
        suffix = "_with_payload" if payload else ""
        stmt = f"{{{', '.join(fields)}}}, {target}, HashAlgorithm.{algo});"
        if c.get("verify"):
            verify.append(f"verify_checksum{suffix}({cond}, {stmt}")
        if c.get("update"):
            update.append(f"update_checksum{suffix}({cond}, {stmt}")
    sig = "(inout headers_t hdr, inout metadata_t meta)"
    return (f"control VerifyChecksumImpl{sig} {{ apply {{ {' '.join(verify)} }} }}",
            f"control ComputeChecksumImpl{sig} {{ apply {{ {' '.join(update)} }} }}")


def translate(j: Any, p4info: p4info_pb2.P4Info | None = None) -> str:
    """The P4_16 text of BMv2 JSON ``j`` (a parsed object); raises Bmv2JsonError."""
    _check_top(j)
    refs = Refs(j, p4info)
    ex = ExprTranslator(refs)
    parts = ["#include <core.p4>", "#include <v1model.p4>"]
    parts += _types_text(j, refs, p4info)
    writer = ControlWriter(j, refs, ex, p4info)
    parts += writer.globals_text()
    parts.append(parser_text(j, refs, ex))
    verify, update = _checksum_controls(j, refs, ex)
    parts.append(verify)
    pipes = {p.get("name"): (i, p) for i, p in enumerate(_list(j, "pipelines"))}
    for name in ("ingress", "egress"):
        if name not in pipes:
            raise Bmv2JsonError("pipelines", f"no pipeline named {name!r} (v1model has ingress and egress)")
    for extra in set(pipes) - {"ingress", "egress"}:
        raise Bmv2JsonError(f"pipelines[{pipes[extra][0]}].name", f"v1model has no pipeline {extra!r}")
    parts.append(writer.control_text("IngressImpl", *pipes["ingress"]))
    parts.append(writer.control_text("EgressImpl", *pipes["egress"]))
    parts.append(update)
    parts.append(_deparser_text(j, refs))
    parts.append("V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(), ComputeChecksumImpl(), "
                 "DeparserImpl()) main;")
    return "\n".join(parts) + "\n"


__all__ = ["translate", "Refs", "calc_fields", "hexint"]
