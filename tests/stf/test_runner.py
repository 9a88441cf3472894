"""The STF runner on a small program of ours: tables, defaults, priorities, multicast,
mirroring, counters, registers, and how failures are reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.stf import StfResult, run_stf_file
from p4switch.stf.cli import main

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) hits;
    register<bit<8>>(4) regs;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action set_b(bit<8> v) { hdr.h.b = v; }
    action flood(bit<16> grp) { sm.mcast_grp = grp; }
    action mirror(bit<32> session) { clone(CloneType.I2E, session); sm.egress_spec = 1; }
    action drop() { mark_to_drop(sm); }
    table route {
        key = { hdr.h.a : ternary; }
        actions = { fwd; flood; mirror; drop; }
        default_action = drop();
    }
    table mark {
        key = { hdr.h.c : lpm; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    apply {
        hits.count((bit<32>) hdr.h.a[2:0]);
        bit<8> r;
        regs.read(r, 0);
        if (r != 0) { hdr.h.b = r; }
        route.apply();
        mark.apply();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { if (sm.instance_type == 5) { hdr.h.c = (bit<16>) sm.egress_rid; } }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def run(tmp_path: Path, stf: str, program: str = PROGRAM) -> StfResult:
    p4 = tmp_path / "prog.p4"
    p4.write_text(program)
    test = tmp_path / "test.stf"
    test.write_text(stf)
    return run_stf_file(p4, test, [ROOT / "p4src" / "include"])


def test_ternary_priorities_larger_wins_and_dont_care_digits(tmp_path: Path) -> None:
    result = run(tmp_path, """
add route 10 h.a:0x0* fwd(port:2)
add route 20 h.a:0x01 fwd(port:3)
packet 0 01 00 0000
expect 3 01 00 0000 $
packet 0 02 00 0000
expect 2 02 00 0000 $
""")
    assert result == StfResult(True, "")


def test_lpm_and_suffix_names(tmp_path: Path) -> None:
    result = run(tmp_path, """
add route 1 a:0x05 I.fwd(port:4)
add mark hdr.h.c:0x1200/8 set_b(v:0x77)
add mark h.c:0x1234 set_b(v:0x88)
packet 0 05 00 1299
packet 0 05 00 1234
packet 0 05 00 9999
expect 4 05 77 1299
expect 4 05 88 1234
expect 4 05 00 9999
""")
    assert result.passed, result.message


def test_setdefault(tmp_path: Path) -> None:
    result = run(tmp_path, "setdefault route fwd(port:6)\npacket 1 09 00 0000\nexpect 6 09\n")
    assert result.passed, result.message


def test_wrong_bytes_name_the_expect_line(tmp_path: Path) -> None:
    result = run(tmp_path, "add route 1 h.a:0x05 fwd(port:4)\npacket 0 05 00 0000\n\nexpect 4 05 01 0000\n")
    assert not result.passed
    assert result.message.startswith(f"{tmp_path / 'test.stf'}:4: packet 1 on port 4 differs at byte 1")


def test_missing_and_extra_packets_fail(tmp_path: Path) -> None:
    missing = run(tmp_path, "packet 0 05 00 0000\nexpect 4 05\n")  # dropped by the default
    assert not missing.passed and "never came" in missing.message and ":2:" in missing.message
    extra = run(tmp_path, "add route 1 h.a:0x05 fwd(port:4)\npacket 0 05 00 0000\nexpect 0\nexpect 4 05 00\n"
                          "packet 0 05 00 0000\n")
    assert not extra.passed and "port 4 sent 2 packet(s), 1 expected" in extra.message


def test_expect_without_data_accepts_any_number_of_frames(tmp_path: Path) -> None:
    result = run(tmp_path, "add route 1 h.a:0x05 fwd(port:4)\nexpect 4\npacket 0 05 00 0000\npacket 0 05 00 0000\n")
    assert result.passed, result.message


def test_frames_to_ports_no_line_names_are_not_checked(tmp_path: Path) -> None:
    result = run(tmp_path, "add route 1 h.a:0x05 fwd(port:9)\npacket 0 05 00 0000\n")
    assert result.passed, result.message


def test_multicast_group_replicates_with_rids(tmp_path: Path) -> None:
    result = run(tmp_path, """
mc_mgrp_create 3
mc_node_create 7 1 2
mc_node_create 9 5
mc_node_associate 3 0
mc_node_associate 3 1
add route 1 h.a:0x05 flood(grp:3)
packet 0 05 00 0000
expect 1 05 00 0007 $
expect 2 05 00 0007 $
expect 5 05 00 0009 $
""")
    assert result.passed, result.message


def test_mirroring_add_makes_ingress_clones(tmp_path: Path) -> None:
    result = run(tmp_path, """
mirroring_add 4 6
add route 1 h.a:0x05 mirror(session:4)
packet 0 05 00 0000
expect 1 05 00 0000
expect 6 05 00 0000
""")
    assert result.passed, result.message


def test_register_write_and_check_counter(tmp_path: Path) -> None:
    result = run(tmp_path, """
register_write regs 0 0x42
add route 1 h.a:0x05 fwd(port:4)
packet 0 05 00 0000
expect 4 05 42 0000
check_counter hits(5) packets == 1
check_counter hits(5) bytes == 4
check_counter hits(4) packets == 0
""")
    assert result.passed, result.message
    failing = run(tmp_path, "packet 0 05 00 0000\nwait\ncheck_counter hits(5) packets > 1\n")
    assert not failing.passed and failing.message.endswith(":3: counter hits(5) has 1 packets, expected > 1")


@pytest.mark.parametrize("line, why", [
    ("add nosuch h.a:1 fwd(port:1)", "the program has no table 'nosuch'"),
    ("add route 1 h.zz:1 fwd(port:1)", "no key field of table 'I.route' 'h.zz'"),
    ("add route 1 h.a:1 nosuch(port:1)", "no action of this table 'nosuch'"),
    ("add route 1 h.a:1 fwd(port:1000)", "port=1000 does not fit bit<9>"),
    ("add route 1 h.a:1 fwd(other:1)", "has no parameter 'other'"),
    ("meter_get_rates m 0", "'meter_get_rates' is not supported"),
    ("mc_node_associate 1 0", "no multicast group 1"),
])
def test_bad_commands_fail_with_their_line(tmp_path: Path, line: str, why: str) -> None:
    result = run(tmp_path, f"wait\n{line}\n")
    assert not result.passed
    assert result.message.startswith(f"{tmp_path / 'test.stf'}:2: ") and why in result.message, result.message


def test_a_program_with_errors_fails_with_its_location(tmp_path: Path) -> None:
    result = run(tmp_path, "packet 0 00\n", PROGRAM.replace("hdr.h.b = v;", "hdr.h.zz = v;"))
    assert not result.passed and "prog.p4:" in result.message and "error:" in result.message


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p4 = tmp_path / "prog.p4"
    p4.write_text(PROGRAM)
    inc = str(ROOT / "p4src" / "include")
    good, bad, syntax = tmp_path / "good.stf", tmp_path / "bad.stf", tmp_path / "syntax.stf"
    good.write_text("add route 1 h.a:0x05 fwd(port:4)\npacket 0 05 00 0000\nexpect 4 05\n")
    bad.write_text("packet 0 05 00 0000\nexpect 4 05\n")
    syntax.write_text("bogus\n")
    assert main(["-I", inc, str(p4), str(good)]) == 0
    assert capsys.readouterr().out.startswith("PASS ")
    assert main(["-I", inc, str(p4), str(bad)]) == 1
    assert f"FAIL {bad}: {bad}:2: expected packet 1 on port 4 never came" in capsys.readouterr().out
    assert main(["-I", inc, str(p4), str(syntax)]) == 2
    assert "syntax.stf:1: unknown STF command 'bogus'" in capsys.readouterr().err
    assert main(["-I", inc, str(p4), str(tmp_path / "none.stf")]) == 2
    assert "no such file" in capsys.readouterr().err
    broken = tmp_path / "broken.p4"
    broken.write_text("control X( {")
    assert main([str(broken), str(good)]) == 2
    assert "broken.p4:1:" in capsys.readouterr().err


def test_lpm_prefix_from_dont_care_digits(tmp_path: Path) -> None:
    result = run(tmp_path, """
add route 1 h.a:0x05 fwd(port:4)
add mark h.c:0x12** set_b(v:0x77)
packet 0 05 00 12ff
packet 0 05 00 13ff
expect 4 05 77 12ff
expect 4 05 00 13ff
""")
    assert result.passed, result.message


@pytest.mark.parametrize("key", ["h.valid", "hdr.h.$valid$"])
def test_validity_keys_go_by_bmv2_names(tmp_path: Path, key: str) -> None:
    program = PROGRAM.replace("key = { hdr.h.c : lpm; }", "key = { hdr.h.c : lpm; hdr.h.isValid() : exact; }")
    result = run(tmp_path, f"add route 1 h.a:0x05 fwd(port:4)\nadd mark h.c:0x1234 {key}:1 set_b(v:0x88)\n"
                           "packet 0 05 00 1234\nexpect 4 05 88 1234\n", program)
    assert result.passed, result.message


def test_check_counter_reads_the_direct_counter_of_a_named_entry(tmp_path: Path) -> None:
    program = PROGRAM.replace("    table route {", "    direct_counter(CounterType.packets_and_bytes) per_entry;\n"
                              "    table route {\n        counters = per_entry;")
    stf = """
add route 1 h.a:0x05 fwd(port:4) = A
add route 1 h.a:0x06 fwd(port:4) = B
packet 0 05 00 0000
packet 0 05 00 0000
expect 4
check_counter per_entry($A) packets == 2
check_counter per_entry($A) bytes == 8
check_counter per_entry($B) packets == 0
"""
    result = run(tmp_path, stf, program)
    assert result.passed, result.message
    wrong = run(tmp_path, stf.replace("($B) packets == 0", "($B) packets == 1"), program)
    assert not wrong.passed and wrong.message.endswith("counter per_entry($B) has 0 packets, expected == 1")
    unknown = run(tmp_path, "check_counter per_entry($Z)\n", program)
    assert not unknown.passed and "no entry was added with '= Z'" in unknown.message
