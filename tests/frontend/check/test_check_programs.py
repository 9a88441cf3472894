"""Whole programs: every sample program checks, the IR contract holds on all of them,
alinea.p4's summary names what P4Info needs, and the front end stays fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.report import FRAME_BYTES, REPORT_BYTES
from p4switch.frontend import ast
from p4switch.frontend import types as T
from p4switch.frontend.check import CheckedProgram, SymbolicValue, check_program
from p4switch.frontend.parser import parse_file
from tests.paths import ROOT

ALINEA = ROOT / "p4src" / "alinea.p4"
PROGRAMS = [ALINEA, *sorted((ROOT / "tests" / "p4programs").glob("*.p4"))]


def checked(path: Path) -> CheckedProgram:
    return check_program(parse_file(path))


def _in_annotation(program: ast.Program) -> set[int]:
    """Nodes inside annotation bodies (free-form text the checker does not type)."""
    out: set[int] = set()
    for n in ast.walk(program):
        if isinstance(n, ast.Annotation):
            out.update(id(x) for x in ast.walk(n))
    return out


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_program_checks_and_satisfies_the_ir_contract(path: Path) -> None:
    cp = checked(path)
    skip = _in_annotation(cp.program)
    missing = []
    for n in ast.walk(cp.program):
        if id(n) in skip:
            continue
        if isinstance(n, ast.Expression) and n.type is None:
            missing.append(("type", n))
        if isinstance(n, ast.PathExpr | ast.TypeName) and n.decl is None and n.name != "error":
            missing.append(("decl", n))
        if isinstance(n, ast.CallExpr | ast.ConstructorCallExpr) and n.call_kind is None:
            missing.append(("call_kind", n))
        if isinstance(n, ast.TypeRef) and n.type is None:
            missing.append(("TypeRef.type", n))
        if (isinstance(n, ast.MemberExpr) and isinstance(n.expr.type, T.StructLikeType)
                and n.expr.type.field_type(n.member) is not None and n.decl is None):
            missing.append(("field decl", n))
    assert not missing, [(what, str(n.loc)) for what, n in missing[:10]]


def test_alinea_summary_names_blocks_tables_actions_and_instances() -> None:
    cp = checked(ALINEA)
    assert cp.main is not None and cp.main.name == "main"
    assert {k: b.decl.name for k, b in cp.main_args.items()} == {
        "p": "MyParser", "vr": "MyVerifyChecksum", "ig": "MyIngress", "eg": "MyEgress",
        "ck": "MyComputeChecksum", "dep": "MyDeparser"}
    assert {t.fqn for t in cp.tables} == {"MyIngress.report_ingress", "MyIngress.port_config",
                                          "MyIngress.ipv4_lpm", "MyIngress.ecmp_group", "MyIngress.dst_class",
                                          "MyEgress.report_path", "MyIngress.mcast_route", "MyEgress.mcast_next_hop",
                                          "MyIngress.nak_aggregation"}
    lpm = cp.table("MyIngress.ipv4_lpm")
    assert lpm is not None and lpm.size == 1024
    assert [(k.name, k.match_kind, str(k.type)) for k in lpm.keys] == [("hdr.ipv4.dstAddr", "lpm", "bit<32>")]
    assert [a.action.fqn for a in lpm.actions] == ["MyIngress.ipv4_forward", "MyIngress.set_ecmp_group",
                                                   "MyIngress.drop"]
    ecmp = cp.table("MyIngress.ecmp_group")
    assert [(k.name, k.match_kind) for k in ecmp.keys] == [
        ("meta.ecmp_group", "exact"), ("hdr.ipv4.srcAddr", "selector"), ("hdr.ipv4.dstAddr", "selector"),
        ("hdr.ipv4.protocol", "selector"), ("meta.l4_src", "selector"), ("meta.l4_dst", "selector")]
    selector = cp.instance("MyIngress.ecmp_selector")
    assert selector is not None and selector.extern == "action_selector"
    assert lpm.default_action is not None and lpm.default_action.action.fqn == "MyIngress.drop"
    assert lpm.default_action.is_const and lpm.default_action.args == []
    fwd = cp.action("MyIngress.ipv4_forward")
    assert fwd is not None and [(p.name, str(p.type)) for p in fwd.data_params] == [
        ("dst_mac", "bit<48>"), ("src_mac", "bit<48>"), ("port", "bit<9>")]
    noaction = cp.action("NoAction")
    assert noaction is not None and noaction.block is None
    port_config = cp.table("MyIngress.port_config")
    assert [(a.action.fqn, a.default_only) for a in port_config.actions] == [
        ("MyIngress.set_port", False), ("NoAction", True)]
    occupancy = cp.instance("occupancy")
    assert occupancy is not None and str(occupancy.type) == "register<bit<32>>" and occupancy.args == [512 * 8]
    rx = cp.instance("MyIngress.rx")
    assert rx is not None and rx.extern == "counter"
    assert rx.args == [512, SymbolicValue("CounterType", "packets_and_bytes")]
    assert cp.instance("MyEgress.tx") is not None
    assert set(cp.controller_headers) == {"packet_in", "packet_out"}
    assert cp.controller_headers["packet_in"].field_names() == [
        "ingress_port", "_pad", "o_min_ppm", "o_max_ppm", "w_max_bps", "w_min_bps", "k_p_bps", "r_max_bps", "r_floor_bps",
        "fwd_pkts", "deq_pkts"]
    assert cp.constants["REPORT_FRAME_BYTES"] == FRAME_BYTES
    assert "IPv4HeaderUnsupported" in cp.errors and cp.errors[0] == "NoError"
    assert {"exact", "lpm", "ternary", "range", "optional", "selector"} <= set(cp.match_kinds)
    assert T.width_of(cp.type("alinea_report_t")) == REPORT_BYTES * 8
    assert str(cp.type("port_t")) == "bit<9>"


def test_features_program_digest_and_direct_resources() -> None:
    cp = checked(ROOT / "tests" / "p4programs" / "features.p4")
    assert [d.name for d in cp.digests] == ["learn_t"]
    attached = [t for t in cp.tables if t.direct_counter is not None or t.direct_meter is not None]
    assert attached, "features.p4 attaches a direct counter/meter to a table"
    for t in attached:
        if t.direct_meter is not None:
            assert t.direct_meter.extern == "direct_meter"
        if t.direct_counter is not None:
            assert t.direct_counter.extern == "direct_counter"
