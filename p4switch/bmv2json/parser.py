"""The JSON's parser (states, parser ops, transitions) as a P4_16 parser.

Why select values are split here: BMv2 matches a transition on the concatenation of its key
fields, each padded to whole bytes, so a JSON value such as ``0x060000`` over (protocol,
fragOffset) is two keyset values, cut out of the byte-aligned concatenation.
"""

from __future__ import annotations

from typing import Any

from .errors import Bmv2JsonError
from .exprs import ExprTranslator, bits, boolean, hexint, ident


def _state_name(name: Any, init: str) -> str:
    if name is None:
        return "accept"
    return "start" if name == init else f"s_{ident(str(name))}"


def _key(k: dict, path: str, refs: Any, ex: ExprTranslator) -> tuple[str, int]:
    t = k.get("type")
    if t in ("field", "stack_field", "lookahead", "expression"):
        e = ex.expr(k, path)
        if e.kind != "bits":
            return bits(e, 1), 1
        return e.text, e.width
    raise Bmv2JsonError(path + ".type", f"select key of type {t!r} is not supported")


def _split(value: int, widths: list[int]) -> list[int]:
    """Cut a byte-aligned concatenation into one value per key (MSB first)."""
    out = []
    shift = sum((w + 7) // 8 * 8 for w in widths)
    for w in widths:
        shift -= (w + 7) // 8 * 8
        out.append((value >> shift) & ((1 << w) - 1))
    return out


def _kind(tr: dict) -> str | None:
    """A transition's type; JSON of format 2.18 and older leave it out (``"value": "default"``)."""
    if "type" in tr:
        return tr["type"]
    return "default" if tr.get("value") == "default" else "hexstr"


def _keyset(tr: dict, path: str, widths: list[int], vsets: dict[str, str]) -> str:
    t = _kind(tr)
    if t == "default":
        return "default"
    if t == "parse_vset":
        if tr.get("value") not in vsets:
            raise Bmv2JsonError(path + ".value", f"unknown parse_vset {tr.get('value')!r}")
        if len(widths) != 1:
            raise Bmv2JsonError(path, "a value set on several select keys is not supported")
        return vsets[tr["value"]]
    if t != "hexstr":
        raise Bmv2JsonError(path + ".type", f"transition type {t!r} is not supported")
    if not widths:
        raise Bmv2JsonError(path, "a value transition needs a transition key")
    values = _split(hexint(tr.get("value"), path + ".value"), widths)
    masks = _split(hexint(tr["mask"], path + ".mask"), widths) if tr.get("mask") is not None else None
    items = []
    for i, (v, w) in enumerate(zip(values, widths)):
        full = (1 << w) - 1
        m = full if masks is None else masks[i]
        if m == 0:
            items.append("_")
        elif m == full:
            items.append(f"{w}w{v}")
        else:
            items.append(f"{w}w{v & m} &&& {w}w{m}")
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _op_text(op: dict, path: str, refs: Any, ex: ExprTranslator, errors: dict[int, str]) -> str:
    kind, params = op.get("op"), op.get("parameters") or []
    if kind == "extract":
        p = params[0] if params else {}
        if p.get("type") == "regular":
            return f"packet.extract({refs.header(p.get('value'), path + '.parameters[0].value')});"
        if p.get("type") == "stack":
            return f"packet.extract({refs.stack(p.get('value'), path + '.parameters[0].value')}.next);"
        raise Bmv2JsonError(path + ".parameters[0].type", f"extract of {p.get('type')!r} is not supported")
    if kind == "set":
        if len(params) != 2:
            raise Bmv2JsonError(path + ".parameters", "set takes a field and a value")
        dst = refs.field(params[0].get("value"), path + ".parameters[0].value")
        return f"{dst.text} = {ex.mod(params[1], dst.width, path + '.parameters[1]')};"
    if kind == "verify":
        if len(params) != 2:
            raise Bmv2JsonError(path + ".parameters", "verify takes a condition and an error")
        cond = boolean(ex.expr(params[0], path + ".parameters[0]"))
        err = ex.expr(params[1], path + ".parameters[1]")
        if err.kind != "int" or err.value not in errors:
            raise Bmv2JsonError(path + ".parameters[1]", "verify's error must be a constant error code")
        return f"verify({cond}, error.{errors[err.value]});"
    if kind == "shift":
        n = ex.expr(params[0], path + ".parameters[0]") if params else None
        if n is None or n.kind != "int":
            raise Bmv2JsonError(path + ".parameters", "shift takes a constant byte count")
        return f"packet.advance(32w{n.value * 8});"
    raise Bmv2JsonError(path + ".op", f"parser op {kind!r} is not supported by the loader")


def parser_text(j: dict, refs: Any, ex: ExprTranslator) -> str:
    """``parser ParserImpl(...)`` for ``j["parsers"][0]``."""
    prs = j["parsers"][0]
    init = prs.get("init_state")
    errors = {code: name for name, code in j.get("errors") or []}
    decls, vsets = [], {}
    for i, vs in enumerate(j.get("parse_vsets") or []):
        local = f"vs_{i}_{ident(vs['name'])}"
        vsets[vs["name"]] = local
        w = vs.get("compressed_bitwidth") or vs.get("bitwidth")
        if not isinstance(w, int) or w <= 0:
            raise Bmv2JsonError(f"parse_vsets[{i}].compressed_bitwidth", "a value set needs its width")
        decls.append(f'@name(".{vs["name"]}") value_set<bit<{w}>>({vs.get("max_size", 1)}) {local};')
    states = []
    names = [s.get("name") for s in prs.get("parse_states") or []]
    if init not in names:
        raise Bmv2JsonError("parsers[0].init_state", f"no parse state named {init!r}")
    for i, st in enumerate(prs.get("parse_states") or []):
        path = f"parsers[0].parse_states[{i}]"
        body = [_op_text(op, f"{path}.parser_ops[{k}]", refs, ex, errors)
                for k, op in enumerate(st.get("parser_ops") or [])]
        keys = [_key(k, f"{path}.transition_key[{n}]", refs, ex) for n, k in enumerate(st.get("transition_key") or [])]
        cases = []
        for n, tr in enumerate(st.get("transitions") or []):
            tp = f"{path}.transitions[{n}]"
            if tr.get("next_state") is not None and tr["next_state"] not in names:
                raise Bmv2JsonError(tp + ".next_state", f"no parse state named {tr['next_state']!r}")
            cases.append(f"{_keyset(tr, tp, [w for _, w in keys], vsets)}: {_state_name(tr.get('next_state'), init)};")
        trs = st.get("transitions") or []
        if not trs:
            body.append("transition accept;")
        elif not keys and len(trs) == 1 and _kind(trs[0]) == "default":
            body.append(f"transition {_state_name(trs[0].get('next_state'), init)};")
        else:
            if not keys:
                raise Bmv2JsonError(path + ".transition_key", "value transitions need a transition key")
            if _kind(trs[-1]) != "default":  # BMv2: no case matched and no default ends the parse
                cases.append("default: accept;")
            body.append(f"transition select({', '.join(k for k, _ in keys)}) {{ {' '.join(cases)} }}")
        states.append(f"state {_state_name(st.get('name'), init)} {{ {' '.join(body)} }}")
    return ("parser ParserImpl(packet_in packet, out headers_t hdr, inout metadata_t meta, "
            "inout standard_metadata_t standard_metadata) { " + " ".join(decls + states) + " }")
