"""P4Info of real programs: alinea.p4, features.p4 and small programs for the corners
(naming, @id/@name, action profiles and selectors, direct resources, value sets,
controller headers, `type` translation, errors)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.frontend import ast
from p4switch.frontend.errors import P4Error
from p4switch.frontend.p4info import (
    PREFIX_ACTION,
    PREFIX_ACTION_PROFILE,
    PREFIX_CONTROLLER_HEADER,
    PREFIX_COUNTER,
    PREFIX_DIGEST,
    PREFIX_DIRECT_COUNTER,
    PREFIX_DIRECT_METER,
    PREFIX_METER,
    PREFIX_REGISTER,
    PREFIX_TABLE,
    PREFIX_VALUE_SET,
    build_p4info,
    hashed_id,
    serialize_p4info,
)
from p4switch.frontend.passes import compile_file
from tests.paths import ROOT

ALINEA = ROOT / "p4src" / "alinea.p4"
FEATURES = ROOT / "tests" / "p4programs" / "features.p4"
MF = p4info_pb2.MatchField
REF = p4info_pb2.ActionRef



def _compile(path: Path):
    return compile_file(path)


def _source(tmp_path: Path, text: str, name: str = "prog.p4") -> Path:
    path = tmp_path / name
    path.write_text("#include <core.p4>\n#include <v1model.p4>\n" + textwrap.dedent(text))
    return path


def by_name(objs) -> dict:
    return {o.preamble.name: o for o in objs}


def all_preambles(info: p4info_pb2.P4Info):
    for kind in ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
                 "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests"):
        for obj in getattr(info, kind):
            yield kind, obj.preamble


PREFIX_OF_KIND = {
    "tables": PREFIX_TABLE, "actions": PREFIX_ACTION, "action_profiles": PREFIX_ACTION_PROFILE,
    "counters": PREFIX_COUNTER, "direct_counters": PREFIX_DIRECT_COUNTER, "meters": PREFIX_METER,
    "direct_meters": PREFIX_DIRECT_METER, "controller_packet_metadata": PREFIX_CONTROLLER_HEADER,
    "value_sets": PREFIX_VALUE_SET, "registers": PREFIX_REGISTER, "digests": PREFIX_DIGEST,
}


def assert_ids_well_formed(info: p4info_pb2.P4Info) -> None:
    ids = []
    for kind, pre in all_preambles(info):
        assert pre.id >> 24 == PREFIX_OF_KIND[kind], (kind, pre.name, hex(pre.id))
        ids.append(pre.id)
    assert len(ids) == len(set(ids))
    known = set(ids)
    for t in info.tables:
        assert all(r.id in known for r in t.action_refs)
        assert all(r in known for r in t.direct_resource_ids)
        assert t.implementation_id == 0 or t.implementation_id in known
        assert t.const_default_action_id == 0 or t.const_default_action_id in known


# =========================================================================== alinea.p4


@pytest.fixture(scope="module")
def alinea_checked():
    return _compile(ALINEA)


@pytest.fixture(scope="module")
def alinea(alinea_checked) -> p4info_pb2.P4Info:
    return build_p4info(alinea_checked)


def _program(checked) -> ast.Program:
    return checked if isinstance(checked, ast.Program) else checked.program


def test_alinea_pkg_info(alinea):
    assert alinea.pkg_info.arch == "v1model"
    assert alinea.pkg_info.name == "alinea"


def test_alinea_tables(alinea):
    tables = by_name(alinea.tables)
    assert set(tables) == {"MyIngress.report_ingress", "MyIngress.port_config", "MyIngress.ipv4_lpm",
                           "MyIngress.ecmp_group", "MyIngress.dst_class", "MyEgress.report_path",
                           "MyIngress.mcast_route", "MyEgress.mcast_next_hop", "MyIngress.nak_aggregation"}
    actions = {a.preamble.id: a.preamble.name for a in alinea.actions}

    classes = tables["MyIngress.dst_class"]
    assert [(m.name, m.bitwidth, m.match_type) for m in classes.match_fields] == [("hdr.ipv4.dstAddr", 32, MF.LPM)]
    assert sorted(actions[r.id] for r in classes.action_refs) == ["MyIngress.set_class", "NoAction"]
    assert actions[classes.const_default_action_id] == "NoAction"

    lpm = tables["MyIngress.ipv4_lpm"]
    assert lpm.preamble.alias == "ipv4_lpm"
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in lpm.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, MF.LPM)]
    assert lpm.size == 1024
    assert actions[lpm.const_default_action_id] == "MyIngress.drop"
    assert sorted(actions[r.id] for r in lpm.action_refs) == ["MyIngress.drop", "MyIngress.ipv4_forward",
                                                              "MyIngress.set_ecmp_group"]

    for name, default, key in (("MyIngress.report_ingress", "MyIngress.drop_spoofed", "standard_metadata.ingress_port"),
                               ("MyIngress.port_config", "NoAction", "meta.model_port")):
        t = tables[name]
        assert [(m.name, m.bitwidth, m.match_type) for m in t.match_fields] == [(key, 9, MF.EXACT)]
        assert t.size == 512
        assert actions[t.const_default_action_id] == default
        scopes = {actions[r.id]: r.scope for r in t.action_refs}
        assert scopes[default] == REF.DEFAULT_ONLY
        assert [s for a, s in scopes.items() if a != default] == [REF.TABLE_AND_DEFAULT]
        assert all("@defaultonly" in r.annotations for r in t.action_refs if r.scope == REF.DEFAULT_ONLY)
        assert not t.is_const_table and t.implementation_id == 0 and not t.direct_resource_ids


def test_alinea_ecmp_group_is_an_indirect_table_of_its_selector(alinea):
    """p4c lists no ``selector`` key in P4Info: the group id is the only match field."""
    tables, actions = by_name(alinea.tables), {a.preamble.id: a.preamble.name for a in alinea.actions}
    ecmp = tables["MyIngress.ecmp_group"]
    assert [(m.name, m.bitwidth, m.match_type) for m in ecmp.match_fields] == [("meta.ecmp_group", 16, MF.EXACT)]
    assert actions[ecmp.const_default_action_id] == "MyIngress.drop"
    scopes = {actions[r.id]: r.scope for r in ecmp.action_refs}
    assert scopes == {"MyIngress.ipv4_forward": REF.TABLE_AND_DEFAULT, "MyIngress.drop": REF.DEFAULT_ONLY}
    (selector,) = alinea.action_profiles
    assert selector.preamble.name == "MyIngress.ecmp_selector"
    assert ecmp.implementation_id == selector.preamble.id and list(selector.table_ids) == [ecmp.preamble.id]
    assert selector.with_selector and selector.size == 1024 and selector.max_group_size == 16


def test_alinea_actions_are_the_used_actions_with_param_widths(alinea, alinea_checked):
    program = _program(alinea_checked)
    declared = {f"{c.name}.{a.name}" for c in program.declarations if isinstance(c, ast.ControlDecl)
                for a in c.locals if isinstance(a, ast.ActionDecl)}
    actions = by_name(alinea.actions)
    assert set(actions) <= declared | {"NoAction"}
    listed = {r.id for t in alinea.tables for r in t.action_refs}
    assert listed <= {a.preamble.id for a in actions.values()}
    # actions the apply blocks call directly are there too
    assert {"MyIngress.discard_parser_error", "MyIngress.send_from_cpu", "MyIngress.admit",
            "MyEgress.release", "MyEgress.build_report"} <= set(actions)
    widths = {n: [(p.id, p.name, p.bitwidth) for p in a.params] for n, a in actions.items()}
    assert widths["MyIngress.set_port"] == [
        (1, "capacity_pkts", 32), (2, "report_interval_us", 32), (3, "node_id", 16),
        (4, "port_mac", 48), (5, "upstream_mac", 48)]
    assert widths["MyIngress.ipv4_forward"] == [(1, "dst_mac", 48), (2, "src_mac", 48), (3, "port", 9)]
    assert widths["NoAction"] == []
    assert actions["NoAction"].preamble.annotations == ['@noWarn("unused")']


def test_alinea_counters_and_registers(alinea):
    counters = by_name(alinea.counters)
    drops = ["parser_error", "bad_checksum", "unsupported", "spoofed_report", "no_route",
             "ttl_expired", "overflow", "nak_repeat"]
    expected = {"MyIngress.rx", "MyIngress.fwd_routed", "MyEgress.tx", "MyEgress.tx_routed"} | {f"MyIngress.drop_{d}" for d in drops}
    assert set(counters) == expected
    for c in counters.values():
        assert c.spec.unit == p4info_pb2.CounterSpec.BOTH
        assert c.size == 512
    assert counters["MyIngress.rx"].preamble.alias == "rx"

    registers = by_name(alinea.registers)
    widths = {n: r.type_spec.bitstring.bit.bitwidth for n, r in registers.items()}
    assert widths == {"occupancy": 32, "last_report_ts": 48, "last_arrival_ts": 48, "report_seq": 32, "overflow_drops": 32,
                      "fwd_pkts": 32, "deq_pkts": 32, "drained_pkts": 32, "last_drain_ts": 48,
                      "mcast_next": 32, "mcast_left": 8, "MyIngress.nak_key": 48, "MyIngress.nak_ts": 48}
    # one cell per (port, class); multicast's ring per port and its places; NAK aggregation's slots
    apart = {"mcast_next": 512, "mcast_left": 65536, "MyIngress.nak_key": 4096, "MyIngress.nak_ts": 4096}
    assert {n: r.size for n, r in registers.items() if n in apart} == apart
    assert {r.size for n, r in registers.items() if n not in apart} == {512 * 8}
    assert not alinea.meters and not alinea.direct_counters and not alinea.digests


def test_alinea_controller_headers(alinea):
    cpm = by_name(alinea.controller_packet_metadata)
    assert set(cpm) == {"packet_in", "packet_out"}
    assert [(m.id, m.name, m.bitwidth) for m in cpm["packet_in"].metadata] == [
        (1, "ingress_port", 9), (2, "_pad", 7), (3, "o_min_ppm", 32), (4, "o_max_ppm", 32),
        (5, "w_max_bps", 48), (6, "w_min_bps", 48), (7, "k_p_bps", 48), (8, "r_max_bps", 48), (9, "r_floor_bps", 48),
        (10, "fwd_pkts", 32), (11, "deq_pkts", 32)]
    assert [(m.id, m.name, m.bitwidth) for m in cpm["packet_out"].metadata] == [
        (1, "egress_port", 9), (2, "report_poll", 1), (3, "poll_class", 3), (4, "_pad", 3)]
    assert cpm["packet_in"].preamble.annotations == ['@controller_header("packet_in")']
    # the id hashes the header type's name, as p4c does
    assert cpm["packet_in"].preamble.id == hashed_id(PREFIX_CONTROLLER_HEADER, "packet_in_t")


def test_alinea_ids_are_well_formed_hashes(alinea):
    assert_ids_well_formed(alinea)
    for kind, pre in all_preambles(alinea):
        if kind != "controller_packet_metadata":
            assert pre.id == hashed_id(PREFIX_OF_KIND[kind], pre.name)


def test_alinea_p4info_is_stable_across_runs(alinea):
    again = build_p4info(_compile(ALINEA))
    assert serialize_p4info(again, "binary") == serialize_p4info(alinea, "binary")
    assert serialize_p4info(again, "text") == serialize_p4info(alinea, "text")


def test_alinea_ids_do_not_depend_on_unrelated_objects(tmp_path):
    """Adding a table shifts no other id: ids come from names, not positions."""
    anchor = "    apply {\n        if (standard_metadata.instance_type != PKT_INSTANCE_TYPE_RECIRC) {\n"
    text = ALINEA.read_text().replace(
        anchor, "    table extra { key = { hdr.ipv4.srcAddr : exact; } actions = { NoAction; } }\n"
        + anchor.replace("apply {\n", "apply {\n        extra.apply();\n"), 1)
    assert "extra.apply()" in text
    edited = tmp_path / "alinea_edited.p4"
    edited.write_text(text)
    before = {p.name: p.id for _, p in all_preambles(build_p4info(_compile(ALINEA)))}
    after = {p.name: p.id for _, p in all_preambles(build_p4info(_compile(edited)))}
    assert set(after) - set(before) == {"MyIngress.extra"}
    assert all(after[n] == i for n, i in before.items())


# =========================================================================== features.p4


@pytest.fixture(scope="module")
def features() -> p4info_pb2.P4Info:
    return build_p4info(_compile(FEATURES))


def test_features_direct_resources_and_meters(features):
    tables = by_name(features.tables)
    lpm = tables["MyIngress.lpm"]
    dc = by_name(features.direct_counters)["MyIngress.lpm_counter"]
    dm = by_name(features.direct_meters)["MyIngress.lpm_meter"]
    assert sorted(lpm.direct_resource_ids) == sorted([dc.preamble.id, dm.preamble.id])
    assert dc.direct_table_id == dm.direct_table_id == lpm.preamble.id
    assert dc.spec.unit == p4info_pb2.CounterSpec.BOTH
    assert dm.spec.unit == p4info_pb2.MeterSpec.PACKETS
    meter = by_name(features.meters)["MyIngress.probe_meter"]
    assert (meter.size, meter.spec.unit) == (64, p4info_pb2.MeterSpec.PACKETS)
    assert_ids_well_formed(features)


def test_features_digest_with_type_info(features):
    (digest,) = features.digests
    assert digest.preamble.name == "learn_t"
    assert digest.preamble.id == hashed_id(PREFIX_DIGEST, "learn_t")
    assert digest.type_spec.struct.name == "learn_t"
    members = features.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [
        ("src_mac", 48), ("ingress_port", 9)]


def test_features_match_kinds_and_named_types(features):
    tables = by_name(features.tables)
    acl = tables["MyIngress.acl"]
    assert [(m.name, m.bitwidth, m.match_type) for m in acl.match_fields] == [
        ("hdr.ipv4.srcAddr", 32, MF.TERNARY), ("meta.l4_dport", 16, MF.RANGE),
        ("hdr.ipv4.protocol", 8, MF.OPTIONAL)]
    assert acl.is_const_table and acl.has_initial_entries
    lfib = tables["MyIngress.mpls_lfib"]
    assert [(m.name, m.bitwidth) for m in lfib.match_fields] == [("hdr.mpls[0].label", 20)]
    assert lfib.size == 1024  # no size property: p4c's default
    ops = tables["MyIngress.probe_ops"]
    (op,) = ops.match_fields
    assert (op.name, op.bitwidth, op.type_name.name) == ("hdr.probe.op", 8, "")  # p4c: serializable enum, no type_name
    enum = features.type_info.serializable_enums["ProbeOp"]
    assert enum.underlying_type.bitwidth == 8
    assert (enum.members[0].name, enum.members[0].value) == ("ECHO", b"\x01")
    assert len(enum.members) == 10
    smac = tables["MyIngress.smac"]
    assert smac.const_default_action_id == 0  # not const: only the initial default
    assert smac.initial_default_action.action_id == by_name(features.actions)["NoAction"].preamble.id


def test_features_value_set(features):
    (vs,) = features.value_sets
    assert vs.preamble.name == "MyParser.probe_alias"
    assert vs.size == 4
    assert [(m.id, m.bitwidth, m.match_type) for m in vs.match] == [(1, 16, MF.EXACT)]


# =========================================================================== corners

CORNERS = """
@p4runtime_translation("example.org/port", 32)
type bit<9> SdnPort_t;
type bit<16> Tag_t;
enum bit<8> Kind { A = 1, B = 2 }

@controller_header("packet_out")
header pout_t { SdnPort_t port; @id(9) bit<7> pad; }
header h_t { bit<8> f; bit<16> g; Tag_t tag; }
struct headers_t { pout_t pout; h_t h; }
struct meta_t { bit<8> k; Kind kind; bit<16> sel; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<Tag_t>(8) pvs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.tag) {
            pvs: accept;
            default: accept;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Sub(inout headers_t hdr) {
    action set_f(bit<8> v) { hdr.h.f = v; }
    table t {
        key = { hdr.h.f : exact; }
        actions = { set_f; NoAction; }
    }
    apply { t.apply(); }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() s1;
    Sub() s2;
    @max_group_size(8) action_selector(HashAlgorithm.crc16, 32w64, 32w14) sel;
    action_profile(128) prof;
    register<bit<48>>(16) reg;
    counter(32, CounterType.bytes) cnt;
    meter(16, MeterType.bytes) mtr;

    @id(0x42) action a1(SdnPort_t p, @id(5) bit<8> x, Tag_t tag) { sm.egress_spec = 0; }
    @name("renamed") action a2() { }
    @name(".global_name") action a3() { }
    @brief("does nothing") action a4(Kind k) { }
    action called_directly() { m.k = 1; }
    action unused() { }

    table t_sel {
        key = { m.k : exact @name("kk"); m.sel : selector; }
        actions = { a1; }
        implementation = sel;
    }
    table t_prof {
        key = { m.kind : exact; hdr.h.g : range; hdr.h.tag : optional; }
        actions = { a2; @tableonly a3; @defaultonly a4; }
        implementation = prof;
        support_timeout = true;
    }
    @id(0x7) @name("renamed_table") table t_id {
        key = { hdr.h.f : ternary; m.k : lpm; hdr.h.isValid() : exact; }
        actions = { a2; }
        default_action = a2();
        counters = direct_counter(CounterType.bytes);
        size = 64;
    }
    table t_const {
        key = { hdr.h.g : exact; }
        actions = { a1; NoAction; }
        const default_action = a1((SdnPort_t)9w7, 8w3, (Tag_t)16w5);
        const entries = { 16w1 : NoAction(); }
    }
    apply {
        s1.apply(hdr);
        s2.apply(hdr);
        called_directly();
        t_sel.apply();
        t_prof.apply();
        t_id.apply();
        t_const.apply();
        reg.write(32w0, 48w1);
        cnt.count(32w0);
        mtr.execute_meter(32w0, m.k);
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def corners(tmp_path_factory) -> p4info_pb2.P4Info:
    path = _source(tmp_path_factory.mktemp("corners"), CORNERS, "corners.p4")
    return build_p4info(_compile(path))


def test_corners_names_and_aliases(corners):
    tables = by_name(corners.tables)
    assert set(tables) == {"I.s1.t", "I.s2.t", "I.t_sel", "I.t_prof", "I.renamed_table", "I.t_const"}
    assert tables["I.s1.t"].preamble.alias == "s1.t"
    actions = by_name(corners.actions)
    assert set(actions) == {"I.s1.set_f", "I.s2.set_f", "NoAction", "I.a1", "I.renamed",
                            "global_name", "I.a4", "I.called_directly"}
    assert "I.unused" not in actions
    assert all("@name" not in a for t in corners.tables for a in t.preamble.annotations)
    assert actions["I.a4"].preamble.doc.brief == "does nothing"
    assert corners.pkg_info.name == "corners"


def test_corners_explicit_ids(corners):
    tables = by_name(corners.tables)
    actions = by_name(corners.actions)
    assert tables["I.renamed_table"].preamble.id == 0x02000007
    assert actions["I.a1"].preamble.id == 0x01000042
    params = {p.name: p for p in actions["I.a1"].params}
    assert {n: p.id for n, p in params.items()} == {"p": 1, "x": 5, "tag": 2}
    pout = by_name(corners.controller_packet_metadata)["packet_out"]
    assert [(m.id, m.name) for m in pout.metadata] == [(1, "port"), (9, "pad")]
    assert_ids_well_formed(corners)


def test_corners_types_and_translation(corners):
    params = {p.name: p for p in by_name(corners.actions)["I.a1"].params}
    assert (params["p"].type_name.name, params["p"].bitwidth) == ("SdnPort_t", 32)
    assert (params["x"].HasField("type_name"), params["x"].bitwidth) == (False, 8)
    assert (params["tag"].type_name.name, params["tag"].bitwidth) == ("Tag_t", 16)
    new_types = corners.type_info.new_types
    assert new_types["SdnPort_t"].translated_type.uri == "example.org/port"
    assert new_types["SdnPort_t"].translated_type.sdn_bitwidth == 32
    assert new_types["Tag_t"].original_type.bitstring.bit.bitwidth == 16
    (k,) = by_name(corners.actions)["I.a4"].params
    assert (k.type_name.name, k.bitwidth) == ("", 8)  # p4c: no type_name for a serializable enum
    kind = corners.type_info.serializable_enums["Kind"]
    assert [(m.name, m.value) for m in kind.members] == [("A", b"\x01"), ("B", b"\x02")]
    pout = by_name(corners.controller_packet_metadata)["packet_out"]
    assert [(m.bitwidth, m.type_name.name) for m in pout.metadata] == [(32, "SdnPort_t"), (7, "")]
    assert pout.preamble.id == hashed_id(PREFIX_CONTROLLER_HEADER, "pout_t")


def test_corners_action_profiles_and_selectors(corners):
    tables = by_name(corners.tables)
    profiles = by_name(corners.action_profiles)
    sel, prof = profiles["I.sel"], profiles["I.prof"]
    assert (sel.with_selector, sel.size, sel.max_group_size) == (True, 64, 8)
    assert (prof.with_selector, prof.size, prof.max_group_size) == (False, 128, 0)
    t_sel = tables["I.t_sel"]
    assert list(sel.table_ids) == [t_sel.preamble.id] and t_sel.implementation_id == sel.preamble.id
    # selector keys feed the selector's hash; the control plane never matches on them
    assert [(m.name, m.match_type) for m in t_sel.match_fields] == [("kk", MF.EXACT)]
    assert tables["I.t_prof"].implementation_id == prof.preamble.id


def test_corners_table_properties(corners):
    tables = by_name(corners.tables)
    actions = {a.preamble.id: a.preamble.name for a in corners.actions}
    t_prof = tables["I.t_prof"]
    assert [(m.name, m.match_type, m.type_name.name, m.bitwidth) for m in t_prof.match_fields] == [
        ("m.kind", MF.EXACT, "", 8), ("hdr.h.g", MF.RANGE, "", 16), ("hdr.h.tag", MF.OPTIONAL, "Tag_t", 16)]
    assert {actions[r.id]: (r.scope, list(r.annotations)) for r in t_prof.action_refs} == {
        "I.renamed": (REF.TABLE_AND_DEFAULT, []),
        "global_name": (REF.TABLE_ONLY, ["@tableonly"]),
        "I.a4": (REF.DEFAULT_ONLY, ["@defaultonly"]),
        "NoAction": (REF.DEFAULT_ONLY, ["@defaultonly"]),  # no default_action: p4c's implicit one
    }
    assert actions[t_prof.initial_default_action.action_id] == "NoAction"
    assert t_prof.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert tables["I.t_sel"].idle_timeout_behavior == p4info_pb2.Table.NO_TIMEOUT

    t_id = tables["I.renamed_table"]
    assert [(m.name, m.bitwidth, m.match_type) for m in t_id.match_fields] == [
        ("hdr.h.f", 8, MF.TERNARY), ("m.k", 8, MF.LPM), ("hdr.h.$valid$", 1, MF.EXACT)]
    assert t_id.size == 64
    assert t_id.const_default_action_id == 0
    assert actions[t_id.initial_default_action.action_id] == "I.renamed"
    (dc,) = corners.direct_counters
    assert list(t_id.direct_resource_ids) == [dc.preamble.id]
    assert (dc.direct_table_id, dc.spec.unit) == (t_id.preamble.id, p4info_pb2.CounterSpec.BYTES)

    t_const = tables["I.t_const"]
    assert t_const.is_const_table and t_const.has_initial_entries
    assert actions[t_const.const_default_action_id] == "I.a1"
    args = {a.param_id: a.value for a in t_const.initial_default_action.arguments}
    assert args == {1: b"\x00\x07", 5: b"\x03", 2: b"\x00\x05"}  # padded to the width, as p4c writes them
    assert tables["I.s1.t"].size == 1024 and not tables["I.s1.t"].is_const_table


def test_corners_externs_and_value_set(corners):
    (reg,) = corners.registers
    assert (reg.preamble.name, reg.type_spec.bitstring.bit.bitwidth, reg.size) == ("I.reg", 48, 16)
    (cnt,) = corners.counters
    assert (cnt.preamble.name, cnt.size, cnt.spec.unit) == ("I.cnt", 32, p4info_pb2.CounterSpec.BYTES)
    (mtr,) = corners.meters
    assert (mtr.preamble.name, mtr.size, mtr.spec.unit) == ("I.mtr", 16, p4info_pb2.MeterSpec.BYTES)
    (vs,) = corners.value_sets
    assert (vs.preamble.name, vs.size) == ("P.pvs", 8)
    assert [(m.id, m.name, m.bitwidth, m.match_type, m.type_name.name) for m in vs.match] == [
        (1, "", 16, MF.EXACT, "Tag_t")]


# =========================================================================== errors

SKELETON = """
header h_t { bit<8> f; }
struct headers_t { h_t h; }
struct meta_t { bit<8> k; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    BODY
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


def _build(tmp_path: Path, body: str, extra: str = "") -> p4info_pb2.P4Info:
    text = SKELETON.replace("BODY", body).replace("parser P", extra + "parser P")
    return build_p4info(_compile(_source(tmp_path, text)))


def test_two_tables_with_one_name_are_an_error_at_the_second(tmp_path):
    body = """
    @name(".same") table a { key = { hdr.h.f : exact; } actions = { NoAction; } }
    @name(".same") table b { key = { hdr.h.f : exact; } actions = { NoAction; } }
    apply { a.apply(); b.apply(); }
    """
    with pytest.raises(P4Error, match="named .same.") as err:
        _build(tmp_path, body)
    assert err.value.loc.file.endswith("prog.p4") and err.value.loc.line > 0


def test_duplicate_explicit_ids_are_an_error(tmp_path):
    body = """
    @id(1) action a() { }
    @id(1) action b() { }
    apply { a(); b(); }
    """
    with pytest.raises(P4Error, match="@id 0x01000001 of action"):
        _build(tmp_path, body)


def test_two_packet_in_headers_are_an_error(tmp_path):
    extra = """
    @controller_header("packet_in") header p1_t { bit<8> a; }
    @controller_header("packet_in") header p2_t { bit<8> a; }
    """
    with pytest.raises(P4Error, match="both @controller_header"):
        _build(tmp_path, "apply { }", extra)


def test_a_direct_counter_serves_one_table(tmp_path):
    body = """
    direct_counter(CounterType.packets) dc;
    table a { key = { hdr.h.f : exact; } actions = { NoAction; } counters = dc; }
    table b { key = { hdr.h.f : exact; } actions = { NoAction; } counters = dc; }
    apply { a.apply(); b.apply(); }
    """
    with pytest.raises(P4Error, match="already attached to table 'I.a'"):
        _build(tmp_path, body)


def test_unattached_direct_counter_is_left_out(tmp_path):
    info = _build(tmp_path, "direct_counter(CounterType.packets) dc;\napply { }")
    assert not info.direct_counters


def test_hidden_objects_and_annotations(tmp_path):
    body = """
    @hidden action h() { }
    @brief("short") @description("long text") @my_tag(1, "x") table t {
        key = { hdr.h.f : exact @my_key; }
        actions = { NoAction; }
        @id(0x99) counters = direct_counter(CounterType.packets);
    }
    @hidden table ht { key = { hdr.h.f : exact; } actions = { h; } }
    apply { h(); t.apply(); ht.apply(); }
    """
    info = _build(tmp_path, body)
    assert [t.preamble.name for t in info.tables] == ["I.t"]
    assert {a.preamble.name for a in info.actions} == {"NoAction"}
    (t,) = info.tables
    assert (t.preamble.doc.brief, t.preamble.doc.description) == ("short", "long text")
    assert list(t.preamble.annotations) == ['@my_tag(1, "x")']
    assert list(t.match_fields[0].annotations) == ["@my_key"]
    (dc,) = info.direct_counters
    assert dc.preamble.id == (PREFIX_DIRECT_COUNTER << 24) | 0x99
    assert dc.spec.unit == p4info_pb2.CounterSpec.PACKETS


def test_pkginfo_annotation_fills_pkg_info(tmp_path):
    text = SKELETON.replace("BODY", "apply { }").replace(
        "V1Switch(", '@pkginfo(name="demo", version="1.2", organization="example.org")\nV1Switch(')
    info = build_p4info(_compile(_source(tmp_path, text)))
    pkg = info.pkg_info
    assert (pkg.name, pkg.version, pkg.organization, pkg.arch) == ("demo", "1.2", "example.org", "v1model")


def test_digest_of_an_unnamed_type_is_an_error_at_the_call(tmp_path):
    body = """
    apply { digest(32w1, { hdr.h.f, m.k }); }
    """
    with pytest.raises(P4Error, match="named struct or header") as err:
        _build(tmp_path, body)
    assert err.value.loc.file.endswith("prog.p4")


def test_digests_are_named_after_their_struct_once(tmp_path):
    extra = "struct d_t { bit<8> a; h_t hdr; }\n"
    body = """
    action a() { digest<d_t>(32w1, { m.k, hdr.h }); }
    apply { a(); digest<d_t>(32w2, { hdr.h.f, hdr.h }); }
    """
    info = _build(tmp_path, body, extra)
    (d,) = info.digests
    assert (d.preamble.name, d.type_spec.struct.name) == ("d_t", "d_t")
    members = info.type_info.structs["d_t"].members
    assert [m.name for m in members] == ["a", "hdr"]
    assert members[1].type_spec.header.name == "h_t"
    assert [m.type_spec.bit.bitwidth for m in info.type_info.headers["h_t"].members] == [8]


def test_actions_called_only_by_actions_are_left_out_like_p4c_inlines_them(tmp_path):
    """p4c's front end inlines action-to-action calls before it writes P4Info."""
    body = """
    action inner(bit<8> v) { hdr.h.f = v; }
    action outer(bit<8> v) { inner(v); }
    action direct() { inner(8w1); }
    action never() { }
    table t { key = { hdr.h.f : exact; } actions = { outer; } }
    apply { t.apply(); direct(); }
    """
    info = _build(tmp_path, body)
    assert {a.preamble.name for a in info.actions} == {"I.outer", "I.direct", "NoAction"}
