"""p4c's BMv2 JSON of each project program against the same program read from source.

The fixtures (tests/fixtures/bmv2-json/, real p4c output) are loaded by p4switch.bmv2json,
the sources by the front end; both pipelines run on p4c's own P4Info (so the ids and the
P4Info check are p4c's), get the same randomized table entries, action-profile members,
groups and default actions, and the same randomized frames. Every observable output must be
equal: standard metadata after each block, deparsed frames, drops, clone/resubmit/
recirculate requests, truncation, digests, and at the end the counters and registers.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.config.v1 import p4info_pb2

from p4switch.bmv2json import compile_json
from p4switch.device import build_pipeline, compile_file, p4info_mismatch
from p4switch.state import Lpm
from p4switch.state.profiles import GroupRef, MemberRef
from p4switch.state.tables import OptionalMatch, Range, Ternary
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"
LOADED = ["alinea", "basic_forward", "calc", "ecn", "features", "firewall", "mirror", "priority", "profiles",
          "skeleton", "source_route", "tunnel"]
ALPHABET = [0x00, 0x01, 0x45]


def source_of(name: str) -> tuple[Path, list[str]]:
    """The source p4c compiled (alinea: as of the commit the fixture was made from)."""
    if name == "alinea":
        return FIXTURES / "alinea.6accfac.p4", [str(ROOT / "p4src" / "include")]
    return ROOT / "tests" / "p4programs" / f"{name}.p4", []


@functools.cache
def p4info_of(name: str) -> p4info_pb2.P4Info:
    return text_format.Parse((FIXTURES / f"{name}.p4info.txtpb").read_text(), p4info_pb2.P4Info())


@functools.cache
def programs(name: str):  # noqa: ANN201 - (source, json) CompiledPrograms
    path, inc = source_of(name)
    return compile_file(path, inc), compile_json((FIXTURES / f"{name}.json").read_bytes(), p4info_of(name))


def transition_constants(name: str) -> list[bytes]:
    """The parser's select values, as bytes: frames built from them reach the deep states."""
    j = json.loads((FIXTURES / f"{name}.json").read_text())
    out = set()
    for state in j["parsers"][0]["parse_states"]:
        for tr in state["transitions"]:
            if tr["type"] == "hexstr":
                hexs = tr["value"][2:]
                out.add(bytes.fromhex(hexs if len(hexs) % 2 == 0 else "0" + hexs))
    return sorted(out)


@functools.cache
def byte_pool(name: str) -> tuple[int, ...]:
    """The alphabet, plus the bytes of the program's select values and const entry keys."""
    j = json.loads((FIXTURES / f"{name}.json").read_text())
    extra = {b for c in transition_constants(name) for b in c}
    for pipe in j["pipelines"]:
        for t in pipe["tables"]:
            for e in t.get("entries") or []:
                for m in e["match_key"]:
                    v = m.get("key") or m.get("start")
                    if isinstance(v, str):
                        extra.update(bytes.fromhex(v[2:].rjust((len(v) - 1) // 2 * 2, "0")))
    return tuple(ALPHABET) + tuple(sorted(extra - set(ALPHABET)))


def field_value(draw: st.DrawFn, width: int) -> int:
    nbytes = (width + 7) // 8
    raw = bytes(draw(st.lists(st.sampled_from(ALPHABET), min_size=nbytes, max_size=nbytes)))
    return int.from_bytes(raw, "big") & ((1 << width) - 1)


def match_for(draw: st.DrawFn, f: p4info_pb2.MatchField):  # noqa: ANN201 - a state Match
    v = field_value(draw, f.bitwidth)
    full = (1 << f.bitwidth) - 1
    kind = f.match_type
    if kind == p4info_pb2.MatchField.LPM:
        plen = draw(st.sampled_from(sorted({0, min(f.bitwidth, 8), min(f.bitwidth, 16)})))
        return Lpm(v & (full ^ ((1 << (f.bitwidth - plen)) - 1)), plen) if plen else None
    if kind == p4info_pb2.MatchField.TERNARY:
        m = draw(st.sampled_from([full, 0xFF & full, 1, full ^ 1]))
        return Ternary(v & m, m)
    if kind == p4info_pb2.MatchField.RANGE:
        hi = draw(st.integers(v, full))
        return Range(v, hi)
    if kind == p4info_pb2.MatchField.OPTIONAL:
        return OptionalMatch(v)
    return v


def action_call(draw: st.DrawFn, info: p4info_pb2.P4Info, refs: list) -> tuple[int, tuple[int, ...]]:
    aid = draw(st.sampled_from(refs))
    action = next(a for a in info.actions if a.preamble.id == aid)
    params = tuple(draw(st.sampled_from([0, 1, 2, 3, (1 << p.bitwidth) - 1])) & ((1 << p.bitwidth) - 1)
                   for p in action.params)
    return aid, params


@st.composite
def control_plane(draw: st.DrawFn, name: str) -> list[tuple]:
    """Writes to replay on both states: ("member"|"group"|"entry"|"default", ...)."""
    info = p4info_of(name)
    ops: list[tuple] = []
    profile_actions: dict[int, list[int]] = {}
    for t in info.tables:
        if t.implementation_id:
            profile_actions.setdefault(t.implementation_id, []).extend(
                r.id for r in t.action_refs if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY)
    members: dict[int, list[int]] = {}
    for ap in info.action_profiles:
        acts = profile_actions.get(ap.preamble.id)
        if not acts:
            continue
        n = draw(st.integers(1, 3))
        members[ap.preamble.id] = list(range(1, n + 1))
        for m in range(1, n + 1):
            ops.append(("member", ap.preamble.name, m, *action_call(draw, info, acts)))
        if ap.with_selector:
            ops.append(("group", ap.preamble.name, 1, [(m, draw(st.integers(1, 2))) for m in range(1, n + 1)]))
    for t in info.tables:
        if t.is_const_table or not t.match_fields:
            continue
        refs = [r.id for r in t.action_refs if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY]
        prioritized = any(f.match_type in (p4info_pb2.MatchField.TERNARY, p4info_pb2.MatchField.RANGE,
                                           p4info_pb2.MatchField.OPTIONAL) for f in t.match_fields)
        for k in range(draw(st.integers(0, 3))):
            match = {f.name: match_for(draw, f) for f in t.match_fields}
            match = {n: m for n, m in match.items() if m is not None}
            prio = k + 1 if prioritized else 0
            if t.implementation_id:
                ms = members.get(t.implementation_id)
                if not ms:
                    continue
                ap = next(a for a in info.action_profiles if a.preamble.id == t.implementation_id)
                ref = GroupRef(1) if ap.with_selector and draw(st.booleans()) else MemberRef(draw(st.sampled_from(ms)))
                ops.append(("entry", t.preamble.name, match, ref, (), prio))
            elif refs:
                ops.append(("entry", t.preamble.name, match, *action_call(draw, info, refs), prio))
        drefs = [r.id for r in t.action_refs if r.scope != p4info_pb2.ActionRef.TABLE_ONLY]
        if not t.const_default_action_id and not t.implementation_id and drefs and draw(st.booleans()):
            ops.append(("default", t.preamble.name, *action_call(draw, info, drefs)))
    return ops


def apply_writes(state, ops: list[tuple]) -> None:  # noqa: ANN001 - a RuntimeState
    from p4switch.state.errors import StateError

    for op in ops:
        try:
            if op[0] == "member":
                state.action_profiles_by_name[op[1]].insert_member(op[2], op[3], op[4])
            elif op[0] == "group":
                state.action_profiles_by_name[op[1]].insert_group(op[2], op[3], 8)
            elif op[0] == "entry":
                state.tables_by_name[op[1]].insert(op[2], op[3], op[4], op[5])
            else:
                state.tables_by_name[op[1]].set_default(op[2], op[3])
        except StateError:  # a duplicate key drawn twice: refused on both alike
            pass


def _set_bits(buf: bytearray, bit: int, width: int, value: int) -> None:
    n = int.from_bytes(buf, "big")
    shift = len(buf) * 8 - bit - width
    n = (n & ~(((1 << width) - 1) << shift)) | ((value & ((1 << width) - 1)) << shift)
    buf[:] = n.to_bytes(len(buf), "big")


def parse_walk(draw: st.DrawFn, j: dict, pool: tuple[int, ...]) -> bytes:
    """A frame made along a random path of the JSON's parse graph: header bytes from the
    alphabet, select key fields set to the chosen transition's value (and mask)."""
    types = {t["name"]: t["fields"] for t in j["header_types"]}
    inst = {h["name"]: h["header_type"] for h in j["headers"]}
    stacks = {s["name"]: [next(n for n, h in ((h["name"], h) for h in j["headers"]) if h["id"] == i)
                          for i in s["header_ids"]] for s in j.get("header_stacks") or []}
    states = {s["name"]: s for s in j["parsers"][0]["parse_states"]}
    buf, where, used = bytearray(), {}, dict.fromkeys(stacks, 0)
    state = states.get(j["parsers"][0]["init_state"])
    for _ in range(12):
        if state is None:
            break
        for op in state["parser_ops"]:
            if op["op"] != "extract":
                continue
            p = op["parameters"][0]
            h = p["value"]
            if p["type"] == "stack":
                if used[h] >= len(stacks[h]):
                    break
                used[h] += 1
                h = stacks[h][used[h] - 1]
                where[p["value"]] = len(buf) * 8, inst[h]
            nbits = sum(f[1] for f in types[inst[h]] if isinstance(f[1], int))
            where[h] = len(buf) * 8, inst[h]
            buf += bytes(draw(st.lists(st.one_of(st.sampled_from(ALPHABET), st.sampled_from(pool)),
                                       min_size=nbits // 8, max_size=nbits // 8)))
        trs = state["transitions"]
        tr = draw(st.sampled_from(trs))
        keys = state["transition_key"]
        peeks = {tuple(op["parameters"][0]["value"]): op["parameters"][1]["value"] for op in state["parser_ops"]
                 if op["op"] == "set" and op["parameters"][1].get("type") == "lookahead"}
        if tr["type"] == "hexstr" and len(keys) == 1 and tuple(keys[0]["value"]) in peeks:
            off, w = peeks[tuple(keys[0]["value"])]  # a select on bits the state looked ahead at
            start = len(buf) * 8 + off
            need = (start + w + 7) // 8 - len(buf)
            buf += bytes(draw(st.lists(st.sampled_from(pool), min_size=need, max_size=need)))
            _set_bits(buf, start, w, int(tr["value"], 16))
        elif tr["type"] == "hexstr" and all(k["type"] in ("field", "stack_field") for k in keys):
            widths = []
            for k in keys:
                hname, fname = k["value"]
                widths.append(next(f[1] for f in types[where.get(hname, (0, inst.get(hname, "")))[1]]
                                   if f[0] == fname) if hname in where else 8)
            vals = _split_bytes(int(tr["value"], 16), widths)
            masks = _split_bytes(int(tr["mask"], 16), widths) if tr.get("mask") else [(1 << w) - 1 for w in widths]
            for k, w, v, m in zip(keys, widths, vals, masks):
                hname, fname = k["value"]
                if hname not in where:
                    continue
                start, tname = where[hname]
                off = start
                for f in types[tname]:
                    if f[0] == fname:
                        break
                    off += f[1]
                cur = (int.from_bytes(buf, "big") >> (len(buf) * 8 - off - w)) & ((1 << w) - 1)
                _set_bits(buf, off, w, (cur & ~m) | (v & m))
        state = states.get(tr["next_state"]) if tr["next_state"] else None
    return bytes(buf)


def _split_bytes(value: int, widths: list[int]) -> list[int]:
    out, shift = [], sum((w + 7) // 8 * 8 for w in widths)
    for w in widths:
        shift -= (w + 7) // 8 * 8
        out.append((value >> shift) & ((1 << w) - 1))
    return out


@st.composite
def frames(draw: st.DrawFn, name: str) -> tuple[bytes, int]:
    """Mostly frames along the parse graph, some of raw bytes; payload and truncation drawn."""
    j = json.loads((FIXTURES / f"{name}.json").read_text())
    if draw(st.integers(0, 4)):
        frame = parse_walk(draw, j, byte_pool(name))
    else:
        consts = transition_constants(name)
        frame = b"".join(draw(st.lists(st.one_of(st.sampled_from(consts) if consts else st.nothing(),
                                                 st.binary(min_size=1, max_size=14)), min_size=1, max_size=12)))
    frame += draw(st.binary(max_size=16))
    cut = draw(st.one_of(st.none(), st.none(), st.integers(0, len(frame))))
    return (frame if cut is None else frame[:cut]), draw(st.sampled_from([0, 1, 2, 3, 255]))


def _std(pipeline, pkt) -> dict:  # noqa: ANN001
    return {n: pkt.std(n) for n in sorted(pipeline.std_slots)}


def _requests(pkt) -> tuple:  # noqa: ANN001
    c = pkt.clone_request
    return ((c.kind, c.session) if c is not None else None, pkt.resubmit is not None, pkt.recirculate is not None,
            pkt.truncate_len, list(pkt.digests), pkt.marked_to_drop)


def run_one(pair: list, frame: bytes, port: int, now: int) -> None:
    pkts = [pl.new_packet(frame, port, now) for pl, _ in pair]
    for (pl, _), p in zip(pair, pkts):
        pl.run_ingress(p)
    (sp, _), (jp, _) = pair
    assert _std(sp, pkts[0]) == _std(jp, pkts[1])
    assert _requests(pkts[0]) == _requests(pkts[1])
    if pkts[0].clone_request is not None:
        clones = [pl.copy_for_request(p, p.clone_request) for (pl, _), p in zip(pair, pkts)]
        for (pl, _), c in zip(pair, clones):
            pl.run_egress(c, 7, now + 3)
        assert _std(sp, clones[0]) == _std(jp, clones[1])
        assert sp.deparse(clones[0]) == jp.deparse(clones[1])
    if pkts[0].marked_to_drop:
        return
    for (pl, _), p in zip(pair, pkts):
        pl.run_egress(p, p.std("egress_spec") & 0x1FF, now + 5)
    assert _std(sp, pkts[0]) == _std(jp, pkts[1])
    assert _requests(pkts[0]) == _requests(pkts[1])
    assert sp.deparse(pkts[0]) == jp.deparse(pkts[1])


def final_state(state) -> dict:  # noqa: ANN001
    out = {}
    for n, c in state.counters_by_name.items():
        out["counter " + n] = [c.read(i) for i in range(c.size)]
    for n, r in state.registers_by_name.items():
        out["register " + n] = list(r.cells)
    for n, t in state.tables_by_name.items():
        out["table " + n] = sorted((repr(e.key), getattr(e, "counter_data", None)) for e in t)
    return out


@pytest.mark.parametrize("name", LOADED)
def test_json_p4info_is_p4cs(name: str) -> None:
    """The program written from the JSON builds exactly p4c's P4Info (names, ids, shapes)."""
    assert p4info_mismatch(p4info_of(name), programs(name)[1].p4info) is None


@pytest.mark.parametrize("name", LOADED)
def test_json_runs_as_its_source(name: str) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=control_plane(name), batch=st.lists(frames(name), min_size=1, max_size=6))
    def check(ops: list, batch: list) -> None:
        pair = [build_pipeline(p, p4info_of(name), seed=7) for p in programs(name)]
        for _, state in pair:
            apply_writes(state, ops)
        for i, (frame, port) in enumerate(batch):
            run_one(pair, frame, port, 1000 + 40 * i)
        assert final_state(pair[0][1]) == final_state(pair[1][1])

    check()


def _routed(name: str, json_bytes: bytes) -> list:
    """Source and JSON pipelines of ``name`` with one default route (set_nhop to port 2)."""
    info = p4info_of(name)
    pair = [build_pipeline(programs(name)[0], info, seed=7), build_pipeline(compile_json(json_bytes, info), info, seed=7)]
    for _, state in pair:
        aid = state.actions_by_name["RouterIngress.set_nhop"].id
        state.tables_by_name["RouterIngress.ipv4_lpm"].insert({"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, aid,
                                                              (0x020000000002, 2))
    return pair


ROUTED_FRAME = bytes.fromhex("000000000001000000000002" "0800" "450000220000000040110000" "0a0000010a000002") + bytes(14)


def test_a_routed_frame_is_forwarded_alike() -> None:
    pair = _routed("basic_forward", (FIXTURES / "basic_forward.json").read_bytes())
    run_one(pair, ROUTED_FRAME, 1, 1000)
    pl, _ = pair[1]
    p = pl.new_packet(ROUTED_FRAME, 1, 1000)
    pl.run_ingress(p)
    assert p.std("egress_spec") == 2 and not p.marked_to_drop


def test_the_harness_sees_a_changed_action() -> None:
    """Not vacuous: the JSON with set_nhop's TTL decrement changed (-2) is told apart."""
    j = json.loads((FIXTURES / "basic_forward.json").read_text())
    act = next(a for a in j["actions"] if a["name"] == "RouterIngress.set_nhop")
    act["primitives"][-1]["parameters"][1]["value"]["value"]["left"]["value"]["right"]["value"] = "0xfe"
    pair = _routed("basic_forward", json.dumps(j).encode())
    with pytest.raises(AssertionError):
        run_one(pair, ROUTED_FRAME, 1, 1000)
