"""Regression tests for pipeline behaviours where p4switch differed from p4c + BMv2.

Each program is the smallest one showing the difference; each test failed before its fix.
Frames are plain bytes: a 4-byte header ``h`` (``a b c d``), what the parser does not
extract is payload.
"""

from __future__ import annotations

import pytest

from p4switch.device import CompiledProgram, build_pipeline, compile_file
from p4switch.p4runtime.device import PipelineLoadError
from p4switch.pipeline import PipelineError

from .helpers import INCLUDE, Loaded, ingress, load_source, through

TEMPLATE = r"""
#include <core.p4>
#include <v1model.p4>
%(types)s
struct headers_t { h_t h; %(more_headers)s }
struct meta_t { %(meta)s }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    %(parser)s
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    %(ingress)s
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { %(checksum)s }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
H4 = "header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }"
PARSE_H = "state start { pkt.extract(hdr.h); transition accept; }"


def program(ingress: str, *, types: str = H4, parser: str = PARSE_H, meta: str = "",
            more_headers: str = "", checksum: str = "apply { }") -> str:
    return TEMPLATE % {"types": types, "parser": parser, "ingress": ingress, "meta": meta,
                       "more_headers": more_headers, "checksum": checksum}


def run(sw: Loaded, frame: bytes) -> bytes:
    _, out = through(sw, frame, 1)
    assert out is not None, "the packet was dropped"
    return out


# --------------------------------------------------------------------------- copy-out


def test_exit_in_an_action_still_copies_out_its_inout_argument() -> None:
    """issue2225: ``val = 3; exit;`` in an action called with ``hdr.h.b`` must write b."""
    sw = load_source(program("""
        action set_and_exit(inout bit<8> val) { val = 3; exit; }
        apply { set_and_exit(hdr.h.b); hdr.h.c = 9; }"""))
    assert run(sw, bytes([1, 2, 0, 4])) == bytes([1, 3, 0, 4])  # c untouched: exit left the block


def test_exit_in_a_nested_call_copies_out_every_level() -> None:
    sw = load_source(program("""
        action inner(out bit<8> x) { x = 5; exit; }
        action outer(inout bit<8> y, out bit<8> z) { z = 6; inner(y); }
        apply { outer(hdr.h.a, hdr.h.d); }"""))
    assert run(sw, bytes([1, 2, 3, 4])) == bytes([5, 2, 3, 6])


def test_action_list_argument_is_copied_in_and_out_around_the_table_action() -> None:
    """ternary2: ``setbyte(hdr.h.c)`` in ``actions`` binds the out parameter for every run."""
    sw = load_source(program("""
        action setbyte(out bit<8> reg, bit<8> val) { reg = val; }
        action add_to(inout bit<8> reg, bit<8> val) { reg = reg + val; }
        table t {
            key = { hdr.h.a : exact; }
            actions = { setbyte(hdr.h.c); add_to(hdr.h.d); }
            default_action = add_to(hdr.h.d, 100);
        }
        apply { t.apply(); }"""))
    t = sw.table("I.t")
    t.insert({"hdr.h.a": 1}, sw.action_id("I.setbyte"), (0x7F,))
    assert run(sw, bytes([1, 2, 3, 4])) == bytes([1, 2, 0x7F, 4])
    assert run(sw, bytes([2, 2, 3, 4])) == bytes([2, 2, 3, 104])  # default: data after the bound arg


# --------------------------------------------------------------------------- const entries


def test_priority_annotations_order_const_entries_as_bmv2() -> None:
    """table-entries-priority: entry i has BMv2 priority i+1 unless @priority(N); smallest wins."""
    sw = load_source(program("""
        action to(bit<9> p) { sm.egress_spec = p; }
        table t {
            key = { hdr.h.a : ternary; }
            actions = { to; }
            const entries = {
                0x01 &&& 0x0F : to(1) @priority(3);
                0x11          : to(2);
                0x11 &&& 0xF1 : to(3) @priority(1);
            }
        }
        apply { t.apply(); }"""))
    assert ingress(sw, bytes([0x11, 0, 0, 0]), 0).std("egress_spec") == 3
    assert ingress(sw, bytes([0x21, 0, 0, 0]), 0).std("egress_spec") == 1


def test_entries_without_annotations_keep_their_order() -> None:
    sw = load_source(program("""
        action to(bit<9> p) { sm.egress_spec = p; }
        table t {
            key = { hdr.h.a : ternary; }
            actions = { to; }
            const entries = { 0x01 &&& 0x0F : to(1); 0x11 : to(2); }
        }
        apply { t.apply(); }"""))
    assert ingress(sw, bytes([0x11, 0, 0, 0]), 0).std("egress_spec") == 1


# --------------------------------------------------------------------------- evaluation order


def test_left_index_is_evaluated_before_the_right_side() -> None:
    """gauntlet_index_7: ``s[f(x)].a = g(x)`` with g changing x uses the index from before."""
    sw = load_source(program("apply { hdr.s[hdr.h.a].a = bump(hdr.h.a); }",
                             types=H4 + " header e_t { bit<8> a; }"
                                        " bit<8> bump(inout bit<8> x) { x = x + 1; return x; }", more_headers="e_t[2] s;",
                             parser="state start { pkt.extract(hdr.h); pkt.extract(hdr.s[0]);"
                                    " pkt.extract(hdr.s[1]); transition accept; }"))
    assert run(sw, bytes([0, 0, 0, 0, 7, 8])) == bytes([1, 0, 0, 0, 1, 8])


def test_slice_of_a_slice_is_one_slice_of_the_field() -> None:
    """gauntlet_nested_slice: x[7:2][3:1] = v writes bits 5..3 of x (was a crash)."""
    sw = load_source(program("apply { hdr.h.a[7:2][3:1] = 3w0b101; hdr.h.b = (bit<8>) hdr.h.c[6:1][4:1]; }"))
    c = 0b01011010
    assert run(sw, bytes([0, 0, c, 0])) == bytes([0b00101000, (c >> 2) & 0xF, c, 0])  # c[6:1][4:1] = c[5:2]


# --------------------------------------------------------------------------- parser


VARBIT = "header v_t { bit<8> len; varbit<16> opt; }"


def test_varbit_headers_in_a_stack_extract_and_compare() -> None:
    """equality-bmv2: extract(stack.next, n) of a header with a varbit field (was refused);
    == on stacks ignores nextIndex."""
    sw = load_source(program(
        "apply { hdr.h.d = 0; if (hdr.s[0] == hdr.s[1]) { hdr.h.d = 1; }"
        " v_t[2] tmp; tmp[0] = hdr.s[0]; tmp[1] = hdr.s[1]; if (tmp == hdr.s) { hdr.h.d = hdr.h.d + 2; } }",
        types=H4 + VARBIT, more_headers="v_t[2] s;",
        parser="state start { pkt.extract(hdr.h); pkt.extract(hdr.s.next, 16); pkt.extract(hdr.s.next, 8);"
               " transition accept; }"))
    pkt, out = through(sw, bytes([0, 0, 0, 0, 5, 0xAB, 0xCD, 6, 0xEF, 0x99]), 1)
    assert pkt.is_valid("hdr.s[0]") and pkt.is_valid("hdr.s[1]")
    assert out == bytes([0, 0, 0, 2, 5, 0xAB, 0xCD, 6, 0xEF, 0x99])  # not equal elements; tmp == s
    _, same = through(sw, bytes([0, 0, 0, 0, 5, 0xAB, 0xCD, 5, 0xAB, 0x99]), 1)
    assert same is not None and same[3] == 2  # lengths differ (16 vs 8 bits): still not equal


def test_varbit_extract_of_a_partial_byte_is_an_invalid_argument() -> None:
    """test-parserinvalidargument-error: a size that is not whole bytes -> ParserInvalidArgument."""
    sw = load_source(program(
        "apply { }", types=H4 + VARBIT, more_headers="v_t v;",
        parser="bit<8> n; state start { pkt.extract(hdr.h); n = pkt.lookahead<bit<8>>();"
               " pkt.extract(hdr.v, (bit<32>) n); transition accept; }"))
    names = sw.pipeline.error_names
    assert names[ingress(sw, bytes([0, 0, 0, 0, 7, 0xAA]), 0).std("parser_error")] == "ParserInvalidArgument"
    assert names[ingress(sw, bytes([0, 0, 0, 0, 8, 0xAA]), 0).std("parser_error")] == "NoError"
    assert names[ingress(sw, bytes([0, 0, 0, 0, 24, 1, 2, 3]), 0).std("parser_error")] == "HeaderTooShort"


def test_lookahead_field_reads_the_bits_ahead_without_extracting() -> None:
    """checksum1: ``pkt.lookahead<T>().f`` in an expression (was 'cannot evaluate member')."""
    sw = load_source(program(
        "apply { }", types="header h_t { bit<4> x; bit<4> n; bit<8> b; bit<8> c; bit<8> d; }" + VARBIT,
        more_headers="v_t v;",
        parser="state start { pkt.extract(hdr.h, ); transition select(pkt.lookahead<h_t>().n) {"
               " 4w3: three; default: accept; } } state three { pkt.extract(hdr.v, 8); transition accept; }"
        .replace("pkt.extract(hdr.h, );", "")))
    pkt = ingress(sw, bytes([0x13, 2, 3, 4, 9, 0xAB]), 0)
    assert not pkt.is_valid("hdr.h") and pkt.is_valid("hdr.v") and pkt.get("hdr.v.len") == 0x13
    assert not ingress(sw, bytes([0x14, 2, 3, 4, 9]), 0).is_valid("hdr.v")


def test_lookahead_field_needs_the_whole_type_in_the_packet() -> None:
    sw = load_source(program(
        "apply { }", parser="state start { transition select(pkt.lookahead<h_t>().a) {"
                            " 1: yes; default: accept; } } state yes { pkt.extract(hdr.h); transition accept; }"))
    pkt = ingress(sw, bytes([1, 2]), 0)
    assert sw.pipeline.error_names[pkt.std("parser_error")] == "PacketTooShort"


def test_varbit_field_in_a_checksum_list() -> None:
    """checksum1: update_checksum over a list with a varbit field covers its current bytes."""
    sw = load_source(program(
        "apply { }", types=H4 + "header v_t { bit<8> len; bit<16> ck; varbit<32> opt; }",
        more_headers="v_t v;",
        parser="state start { pkt.extract(hdr.h); pkt.extract(hdr.v, (bit<32>) pkt.lookahead<bit<8>>() * 8);"
               " transition accept; }",
        checksum="apply { update_checksum(true, { hdr.v.len, hdr.v.opt }, hdr.v.ck, HashAlgorithm.csum16); }"))
    out = run(sw, bytes([0, 0, 0, 0, 2, 0, 0, 0x12, 0x34, 0xEE]))
    words = 0x0212 + 0x3400  # len|opt[0], opt[1]|pad: the 16-bit one's complement sum
    assert out[5:7] == ((~words) & 0xFFFF).to_bytes(2, "big")
    assert out[7:] == bytes([0x12, 0x34, 0xEE])


def test_struct_typed_header_field_is_flattened_on_the_wire() -> None:
    """bvec-hdr: a header field of struct type (was a LayoutError traceback)."""
    sw = load_source(program(
        "apply { hdr.h.s.y = hdr.h.s.x + 1; }",
        types="struct pair_t { bit<8> x; bit<8> y; } header h_t { bit<8> a; pair_t s; bit<8> d; }"))
    assert run(sw, bytes([1, 5, 0, 4])) == bytes([1, 5, 6, 4])


# --------------------------------------------------------------------------- load errors


# an extern function the program declares itself: the checker accepts it, the pipeline has
# no implementation for it (docs/reference/p4switch.md, deliberate differences)
UNSUPPORTED = program("apply {\n        hdr.h.a = 1;\n        my_extern(hdr.h.b);\n    }",
                      types=H4 + " extern void my_extern(out bit<8> x);")


def _compiled(tmp_path, source: str) -> CompiledProgram:
    path = tmp_path / "prog.p4"
    path.write_text(source)
    return compile_file(path, INCLUDE)


def test_a_construct_the_pipeline_cannot_build_is_a_located_error(tmp_path) -> None:
    """The error names the file, line and column of the expression, never a traceback."""
    with pytest.raises(PipelineLoadError) as info:
        build_pipeline(_compiled(tmp_path, UNSUPPORTED))
    message = str(info.value)
    assert "prog.p4:" in message and "Traceback" not in message
    line, col = (int(x) for x in message.split("prog.p4:")[1].split(":")[:2])
    assert UNSUPPORTED.splitlines()[line - 1][col - 1:].startswith("my_extern(hdr.h.b)")


def test_device_config_refuses_what_the_switch_refuses(tmp_path) -> None:
    from p4switch.cli import main

    path = tmp_path / "prog.p4"
    path.write_text(UNSUPPORTED)
    out = tmp_path / "config.bin"
    assert main(["-I", INCLUDE[0], "--device-config", str(out), str(path)]) == 1
    assert not out.exists()



def test_extract_into_dont_care_consumes_the_header() -> None:
    """issue774-4: ``extract<h_t>(_)`` skips a h_t (was 'extract() needs a header')."""
    sw = load_source(program("apply { }", parser="state start { pkt.extract<h_t>(_); pkt.extract(hdr.h);"
                                                  " transition accept; }"))
    assert run(sw, bytes(range(1, 10))) == bytes([5, 6, 7, 8, 9])
    short = ingress(sw, bytes([1, 2]), 0)
    assert sw.pipeline.error_names[short.std("parser_error")] == "PacketTooShort"


def test_a_key_of_type_error_can_be_matched() -> None:
    """issue1062-1: P4Info gives an error-typed key no bitwidth; the program still loads."""
    sw = load_source(program("""
        action to(bit<9> p) { sm.egress_spec = p; }
        table t { key = { meta.e : exact; } actions = { to; } default_action = to(1); }
        apply { meta.e = sm.parser_error; t.apply(); }""", meta="error e;"))
    code = sw.pipeline.error_names.index("PacketTooShort")
    sw.table("I.t").insert({"meta.e": code}, sw.action_id("I.to"), (5,))
    assert ingress(sw, bytes([1]), 0).std("egress_spec") == 5
    assert ingress(sw, bytes([1, 2, 3, 4]), 0).std("egress_spec") == 1


STACK_PROGRAM = dict(types=H4 + " header e_t { bit<8> a; }"
                               " bit<8> bump(inout bit<8> x) { x = x + 1; return x; }",
                     more_headers="e_t[4] s;",
                     parser="state start { pkt.extract(hdr.h); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next);"
                            " pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }")


def test_compound_assignment_evaluates_its_left_index_once() -> None:
    """opassign2: ``s[bump(i)].a |= v`` calls bump once (the front end writes it as
    ``s[bump(i)].a = s[bump(i)].a | v``)."""
    from p4switch.frontend.errors import P4Error

    try:
        sw = load_source(program("apply { hdr.s[bump(hdr.h.a) & 3].a |= 0xF0; }", **STACK_PROGRAM))
    except P4Error as err:  # a front end without compound assignments
        pytest.skip(f"the front end does not parse '|=': {err}")
    # bump: a 1 -> 2, index 2: s[2] = 3 | 0xF0
    assert run(sw, bytes([1, 0, 0, 0, 1, 2, 3, 4])) == bytes([2, 0, 0, 0, 1, 2, 0xF3, 4])


def test_a_written_out_assignment_evaluates_both_indexes() -> None:
    """Only a compound assignment shares its index: written out, each side calls bump."""
    sw = load_source(program("apply { hdr.s[bump(hdr.h.a) & 3].a = hdr.s[bump(hdr.h.a) & 3].a | 0xF0; }",
                             **STACK_PROGRAM))
    # left first: index 2 (a -> 2); then the right side reads s[3] (a -> 3): s[2] = 4 | 0xF0
    assert run(sw, bytes([1, 0, 0, 0, 1, 2, 3, 4])) == bytes([3, 0, 0, 0, 1, 2, 0xF4, 4])


def _load_or_skip(source: str) -> Loaded:
    """A program with P4_16 1.2.5 constructs; skipped with a front end that lacks them."""
    from p4switch.frontend.errors import P4Error

    try:
        return load_source(source)
    except PipelineError:
        raise
    except P4Error as err:
        pytest.skip(f"the front end does not accept this construct yet: {err}")


def test_for_loops_with_break_and_continue() -> None:
    """forloop-bmv2: for (init; cond; update), nested, break, continue (was 'unsupported')."""
    sw = _load_or_skip(program("""
        apply {
            hdr.h.b = 0;
            for (bit<8> i = 1; i <= hdr.h.a; i = i + 1) { hdr.h.b = hdr.h.b + i; }
            hdr.h.c = 0;
            for (bit<8> i = 0; i < 10; i = i + 1) {
                if (i == 7) { break; }
                if (i % 2 == 0) { continue; }
                for (bit<8> j = 0; j < 2; j = j + 1) { hdr.h.c = hdr.h.c + 1; }
            }
        }"""))
    assert run(sw, bytes([4, 0, 0, 9])) == bytes([4, 1 + 2 + 3 + 4, 2 * 3, 9])  # odd i < 7: 1, 3, 5
    assert run(sw, bytes([0, 5, 0, 9]))[1] == 0


def test_for_in_range_sets_the_variable_to_each_value() -> None:
    sw = _load_or_skip(program("""
        apply {
            hdr.h.c = 0;
            for (bit<8> i in hdr.h.a .. hdr.h.b) { hdr.h.c = hdr.h.c + i; hdr.h.d = i; }
        }"""))
    assert run(sw, bytes([2, 5, 0, 0])) == bytes([2, 5, 2 + 3 + 4 + 5, 5])
    assert run(sw, bytes([5, 2, 0, 7])) == bytes([5, 2, 0, 7])  # lo > hi: no turn


def test_a_loop_that_does_not_end_drops_the_packet(monkeypatch: pytest.MonkeyPatch) -> None:
    from p4switch.pipeline import PipelineRuntimeError, stmts

    sw = _load_or_skip(program("apply { for (bit<8> i = 0; i < 10; i = i) { hdr.h.b = hdr.h.b + 1; } }"))
    monkeypatch.setattr(stmts, "MAX_LOOP_ITERATIONS", 50)
    with pytest.raises(PipelineRuntimeError, match="ran 50 times without ending"):
        ingress(sw, bytes([0, 0, 0, 0]), 0)


def test_a_control_instance_passed_to_a_constructor_is_shared() -> None:
    """issue1566: ``C2(c1) c2; C3(c1) c3;`` both apply the one instance c1 (its register
    shows both calls)."""
    types = H4 + """
        control inc_t(inout bit<8> x);
        control Inc(inout bit<8> x) {
            register<bit<8>>(1) calls;
            apply { bit<8> n; calls.read(n, 0); calls.write(0, n + 1); x = x + 1 + n; }
        }
        control Twice(inout bit<8> x)(inc_t c) { apply { x = x << 1; c.apply(x); } }"""
    sw = _load_or_skip(program("""
        Inc() inc;
        Twice(inc) t1;
        Twice(inc) t2;
        apply { t1.apply(hdr.h.a); t2.apply(hdr.h.b); }""", types=types))
    # a: 3 << 1 = 6, + 1 + 0 calls before = 7; b: 5 << 1 = 10, + 1 + 1 call before = 12
    assert run(sw, bytes([3, 5, 0, 0])) == bytes([7, 12, 0, 0])

