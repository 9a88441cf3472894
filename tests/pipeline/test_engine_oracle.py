"""The engine form (hbh_engine.P4Program, p4switch/pipeline/emitter.py) against the closures,
the differential oracle: the same frames through both give the same PHV after every block,
the same parser errors and payload offsets, and the same deparsed bytes."""

from __future__ import annotations

import gc
import logging
import struct
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4switch.pipeline import load_pipeline
from p4switch.pipeline.layout import SLOT_CURSOR
from p4switch.state import Lpm, RuntimeState
from p4switch.state.profiles import GroupRef

from .helpers import ALINEA, PROGRAMS, Loaded, compiled

pytest.importorskip("hbh_engine")

PORT_MAC, UP_MAC, NEXT_MAC, SELF_MAC = 0x020000000101, 0x020000000201, 0x020000000302, 0x020000000301


def pair(path: str) -> tuple[Loaded, Loaded]:
    """(engine, oracle) pipelines of one program, each with its own runtime state."""
    checked, info = compiled(str(path), ())
    out = []
    for oracle in (False, True):
        state = RuntimeState.from_p4info(info)
        out.append(Loaded(load_pipeline(checked, info, state, seed=1, oracle=oracle), state))
    return out[0], out[1]


def program_pair(factory: pytest.TempPathFactory, name: str, text: str) -> tuple[Loaded, Loaded]:
    """:func:`pair` of a program given as text."""
    path = factory.mktemp("engine") / f"{name}.p4"
    path.write_text(text)
    return pair(str(path))


def configure_alinea(sw: Loaded) -> None:
    """A route, an equal-cost route over a selector group of three next hops, a modelled port
    and a neighbour-facing port: the paths the simulator runs."""
    ids = sw.state.actions_by_name
    fwd = ids["MyIngress.ipv4_forward"].id
    sw.state.tables_by_name["MyIngress.ipv4_lpm"].insert(
        {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, fwd, (NEXT_MAC, SELF_MAC, 2))
    sw.state.tables_by_name["MyIngress.ipv4_lpm"].insert(
        {"hdr.ipv4.dstAddr": Lpm(0x0A000700, 24)}, ids["MyIngress.set_ecmp_group"].id, (5,))
    sel = sw.state.action_profiles_by_name["MyIngress.ecmp_selector"]
    for m in (1, 2, 3):
        sel.insert_member(m, fwd, (NEXT_MAC + m, SELF_MAC, m))
    sel.insert_group(1, [(1, 1), (2, 1), (3, 2)], 16)
    sw.state.tables_by_name["MyIngress.ecmp_group"].insert({"meta.ecmp_group": 5}, GroupRef(1))
    sw.state.tables_by_name["MyIngress.port_config"].insert(
        {"meta.model_port": 1}, ids["MyIngress.set_port"].id, (3, 100, 7, PORT_MAC, UP_MAC))
    sw.state.tables_by_name["MyIngress.report_ingress"].insert(
        {"standard_metadata.ingress_port": 2}, ids["MyIngress.report_to_cpu"].id, (1, 2, 3, 4, 5, 6, 7))


def _csum(hdr: bytes) -> int:
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@st.composite
def frames(draw: st.DrawFn) -> tuple[bytes, int]:
    """Frames near the parser's branches: packet-out, IPv4 (good/bad version, IHL, checksum,
    fragments, UDP or not), ALINEA reports, other EtherTypes, all possibly truncated."""
    port = draw(st.sampled_from([1, 2, 3, 255]))
    head = b""
    if port == 255:
        head = struct.pack("!H", draw(st.integers(0, 0xFFFF)))
    kind = draw(st.sampled_from(["ipv4", "ipv4", "report", "other"]))
    eth_type = {"ipv4": 0x0800, "report": 0x88B5}.get(kind) or draw(st.integers(0, 0xFFFF))
    eth = bytes.fromhex("020000000301020000000009") + struct.pack("!H", eth_type)
    body = b""
    if kind == "ipv4":
        ver_ihl = draw(st.sampled_from([0x45, 0x45, 0x45, 0x46, 0x65]))
        proto = draw(st.sampled_from([17, 17, 6]))
        frag = draw(st.sampled_from([0, 0, 0x2000, 5]))
        ttl = draw(st.sampled_from([0, 1, 2, 64]))
        dst = draw(st.sampled_from([0x0A000202, 0x0A000207, 0x0B000001, 0x0A000701, 0x0A000702]))
        src = draw(st.sampled_from([0x0A000101, 0x0A000102, 0x0A000103]))
        ip = struct.pack("!BBHHHBBHII", ver_ihl, 0, 48, 1, frag, ttl, proto, 0, src, dst)
        ck = _csum(ip) ^ draw(st.sampled_from([0, 0, 0, 1]))
        sport = draw(st.integers(1000, 1003))
        body = ip[:10] + struct.pack("!H", ck) + ip[12:] + struct.pack("!HHHH", sport, 5678, 28, 0)
    elif kind == "report":
        body = draw(st.binary(min_size=32, max_size=32))
    frame = head + eth + body + draw(st.binary(max_size=24))
    cut = draw(st.one_of(st.none(), st.integers(0, len(frame))))
    return (frame if cut is None else frame[:cut]), port


def _phv(pkt) -> list:  # noqa: ANN001 - a Packet
    return list(pkt.phv[SLOT_CURSOR:])


def run_both(engine: Loaded, oracle: Loaded, frame: bytes, port: int, now: int) -> None:
    """Ingress, egress on egress_spec and deparse on both, compared after every step."""
    pe, po = (sw.pipeline.new_packet(frame, port, now) for sw in (engine, oracle))
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_ingress(pkt)
    assert _phv(pe) == _phv(po)
    assert pe.payload_offset == po.payload_offset
    assert pe.clone_request == po.clone_request
    if pe.clone_request is not None:  # alinea's report: egress builds it from an I2E clone
        ce, co = (sw.pipeline.copy_for_request(pkt, pkt.clone_request) for sw, pkt in ((engine, pe), (oracle, po)))
        for sw, pkt in ((engine, ce), (oracle, co)):
            sw.pipeline.run_egress(pkt, port, now + 5)
        assert _phv(ce) == _phv(co) and ce.truncate_len == co.truncate_len
        assert engine.pipeline.deparse(ce) == oracle.pipeline.deparse(co)
    if pe.marked_to_drop:
        return
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_egress(pkt, pkt.std("egress_spec") & 0x1FF, now + 5)
    assert _phv(pe) == _phv(po)
    assert engine.pipeline.deparse(pe) == oracle.pipeline.deparse(po)
    assert pe.truncate_len == po.truncate_len


@pytest.fixture(scope="module")
def alinea_pair() -> tuple[Loaded, Loaded]:
    engine, oracle = pair(str(ALINEA))
    for sw in (engine, oracle):
        configure_alinea(sw)
    return engine, oracle


def test_the_oracle_runs_no_block_in_the_engine(alinea_pair: tuple[Loaded, Loaded]) -> None:
    engine, oracle = alinea_pair
    assert len(engine.pipeline.engine_blocks) == 6 and oracle.pipeline.engine_blocks == {}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(frames(), min_size=1, max_size=4))
def test_alinea_engine_matches_the_oracle(alinea_pair: tuple[Loaded, Loaded], batch: list) -> None:
    engine, oracle = alinea_pair
    for i, (frame, port) in enumerate(batch):
        run_both(engine, oracle, frame, port, 1000 + 60 * i)
    assert engine.state.registers_by_name["occupancy"].cells == oracle.state.registers_by_name["occupancy"].cells


@pytest.mark.parametrize("name", sorted(p.name for p in PROGRAMS.glob("*.p4")))
@settings(max_examples=40, deadline=None)
@given(frame=st.binary(max_size=80), port=st.integers(0, 511))
def test_shipped_programs_engine_matches_the_oracle(name: str, frame: bytes, port: int) -> None:
    engine, oracle = _pairs(name)
    run_both(engine, oracle, frame, port, 1000)


_PAIRS: dict[str, tuple[Loaded, Loaded]] = {}


def _pairs(name: str) -> tuple[Loaded, Loaded]:
    if name not in _PAIRS:
        _PAIRS[name] = pair(str(PROGRAMS / name))
    return _PAIRS[name]


TABLE_FREE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<4> b; bit<4> c; bit<16> d; bit<64> w; }
struct hs { h_t h; h_t g; }
struct m_t { bit<8> x; bool f; bit<3> s; }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h);
        verify(hdr.h.b != 4w15, error.ParserInvalidArgument);
        transition select(hdr.h.a, hdr.h.c) { (1, _): two; (8w2 &&& 8w0xFE, 4w0 .. 4w7): two; default: accept; } }
    state two { pkt.extract(hdr.g); m.x = hdr.g.a + hdr.h.a; transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        m.f = hdr.g.isValid() && hdr.h.d[3:0] == 4w3;
        m.s = (bit<3>)(hdr.h.w >> 61);
        if (m.f || hdr.h.a > 8w200) { hdr.h.w = ~hdr.h.w - 64w1; hdr.h.d = hdr.h.d << hdr.h.c; }
        else { hdr.h.a = -hdr.h.a; hdr.g.setInvalid(); }
        sm.egress_spec = m.f ? 9w3 : (bit<9>)(hdr.h.b ++ 5w0);
        if (hdr.h.a == 0) { mark_to_drop(sm); exit; }
        hdr.h.c = (bit<4>)(hdr.h.d ^ 16w0xFF);
    }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs hdr, inout m_t m) {
    apply { update_checksum(hdr.g.isValid(), { hdr.h.a, hdr.h.b, hdr.g.w }, hdr.h.d, HashAlgorithm.csum16); }
}
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def table_free_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Loaded, Loaded]:
    return program_pair(tmp_path_factory, "table_free", TABLE_FREE)


def test_table_free_program_runs_wholly_in_the_engine(table_free_pair: tuple[Loaded, Loaded]) -> None:
    engine, _ = table_free_pair
    assert set(engine.pipeline.engine_blocks) == {"parser", "verify_checksum", "ingress", "egress",
                                                  "compute_checksum", "deparser"}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=st.binary(max_size=40), port=st.integers(0, 511))
def test_table_free_engine_matches_the_oracle(table_free_pair: tuple[Loaded, Loaded], frame: bytes,
                                              port: int) -> None:
    engine, oracle = table_free_pair
    run_both(engine, oracle, frame, port, 1000)


def test_a_parser_the_emitter_refuses_runs_on_the_closures_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="p4switch.pipeline"):
        engine, _ = pair(str(PROGRAMS / "profiles.p4"))
    lines = [r.getMessage() for r in caplog.records if "runs on the closures" in r.getMessage()]
    assert len(lines) == 1 and "parser block" in lines[0] and "valueset 'tunnel_types'" in lines[0]
    assert "parser" not in engine.pipeline.engine_blocks
    assert "deparser" in engine.pipeline.engine_blocks


def test_alinea_runs_wholly_in_the_engine(caplog: pytest.LogCaptureFixture) -> None:
    """No statement of alinea.p4 runs on the closures: its tables (the action selector too),
    registers, counters, clone, truncate and the reports' recirculation are the engine's, so a
    packet makes no Python call inside a block (no log line names a construct left to the
    closures)."""
    with caplog.at_level(logging.INFO, logger="p4switch.pipeline"):
        engine, _ = pair(str(ALINEA))
    lines = [r.getMessage() for r in caplog.records if "calls the closures" in r.getMessage()]
    assert lines == [] and engine.pipeline.engine_called == {}
    assert set(engine.pipeline.engine_blocks) == {"parser", "verify_checksum", "ingress", "egress",
                                                  "compute_checksum", "deparser"}


def test_a_pipeline_running_in_the_engine_is_collected() -> None:
    """The engine program holds the closures and state methods it calls back: the cyclic GC
    must still free a pipeline nobody holds (a simulation builds and drops many)."""
    engine, _ = pair(str(ALINEA))
    ref = weakref.ref(engine.pipeline)
    del engine
    gc.collect()
    assert ref() is None


REQUESTS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<32> b; }
struct hs { h_t h; }
struct m_t { @field_list(1) bit<8> x; @field_list(2) bit<8> y; }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) { clone(CloneType.I2E, hdr.h.b); clone3(CloneType.I2E, 6, { m.x }); }
        else if (hdr.h.a == 2) { clone3(CloneType.I2E, 6, { m.x }); clone(CloneType.I2E, hdr.h.b); }
        else if (hdr.h.a == 3) { clone(CloneType.E2E, 9); }
        else if (hdr.h.a == 4) { resubmit_preserving_field_list(1); resubmit({ m.y }); }
        else if (hdr.h.a == 5) { resubmit({ m.y }); resubmit_preserving_field_list(1); }
        else if (hdr.h.a == 6) { resubmit_preserving_field_list(1); resubmit_preserving_field_list(2); }
        truncate(hdr.h.b);
        if (hdr.h.a > 1) { truncate(20); }
    }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.a == 7) { recirculate_preserving_field_list(2); }
        else if (hdr.h.a == 8) { recirculate_preserving_field_list(1); recirculate({ m.x }); }
    }
}
control C(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def requests_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Loaded, Loaded]:
    return program_pair(tmp_path_factory, "requests", REQUESTS)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(0, 9), b=st.integers(0, 40))
def test_clone_and_truncate_requests_match_the_oracle(requests_pair: tuple[Loaded, Loaded], a: int, b: int) -> None:
    """Clone, resubmit and recirculate requests the engine returns and the closures' own
    (clone3, resubmit and recirculate of data) interleave as written: the last of the block wins;
    truncate keeps the smallest length."""
    engine, oracle = requests_pair
    pe, po = (sw.pipeline.new_packet(struct.pack("!BI", a, b), 1, 1000) for sw in (engine, oracle))
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_ingress(pkt)
    assert pe.clone_request == po.clone_request and pe.truncate_len == po.truncate_len
    assert pe.resubmit == po.resubmit and (pe.resubmit is not None) == (a in (4, 5, 6))
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_egress(pkt, 1, 2000)
    assert pe.recirculate == po.recirculate and (pe.recirculate is not None) == (a in (7, 8))
    assert "ingress" in engine.pipeline.engine_blocks


def test_alinea_runs_each_half_of_the_walk_as_one_engine_call(alinea_pair: tuple[Loaded, Loaded]) -> None:
    """Parser, verify and ingress, then egress, compute and deparser, each as one engine call
    (the PHV stays in the engine's registers between the blocks); the oracle has no such call."""
    engine, oracle = alinea_pair
    roles = engine.pipeline.engine_blocks
    assert engine.pipeline.ingress_seq == [roles[r] for r in ("parser", "verify_checksum", "ingress")]
    assert engine.pipeline.egress_seq == [roles[r] for r in ("egress", "compute_checksum", "deparser")]
    assert oracle.pipeline.ingress_seq is None and oracle.pipeline.egress_seq is None


def test_a_half_with_a_closure_statement_runs_block_by_block(requests_pair: tuple[Loaded, Loaded]) -> None:
    """A block that calls a closure (here clone3 and resubmit of data) keeps its half of the
    walk on per-block calls, where a closure's exit ends only its own block."""
    engine, _ = requests_pair
    assert engine.pipeline.ingress_seq is None and engine.pipeline.egress_seq is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=st.binary(max_size=40))
def test_egress_deparse_kept_from_the_engine_call_follows_later_writes(
        table_free_pair: tuple[Loaded, Loaded], frame: bytes) -> None:
    """The deparser's headers kept from the egress call are the frame deparsed afresh, and a
    write through the packet's API after egress shows in the next deparse."""
    engine, oracle = table_free_pair
    pe, po = (sw.pipeline.new_packet(frame, 1, 1000) for sw in (engine, oracle))
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_ingress(pkt)
        sw.pipeline.run_egress(pkt, 1, 2000)
    assert engine.pipeline.egress_seq is not None and pe.deparsed is not None
    kept = engine.pipeline.deparse(pe)
    pe.deparsed = None
    assert engine.pipeline.deparse(pe) == kept == oracle.pipeline.deparse(po)
    engine.pipeline.run_egress(pe, 1, 2000)
    new = (pe.get("hdr.h.a") + 1) & 0xFF
    for pkt in (pe, po):
        pkt.set("hdr.h.a", new)
    assert engine.pipeline.deparse(pe) == oracle.pipeline.deparse(po)
    if pe.is_valid("hdr.h"):
        assert engine.pipeline.deparse(pe)[0] == new


ENGINE_REQUESTS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<32> b; }
struct hs { h_t h; }
struct m_t { @field_list(1) bit<8> x; @field_list(2) bit<8> y; }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); m.x = hdr.h.a; transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { if (hdr.h.a == 9) { m.y = 7; } } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) { clone(CloneType.I2E, hdr.h.b); clone_preserving_field_list(CloneType.I2E, 6, 1); }
        else if (hdr.h.a == 2) { clone_preserving_field_list(CloneType.I2E, 6, 2); clone(CloneType.I2E, hdr.h.b); }
        else if (hdr.h.a == 3) { clone(CloneType.E2E, 9); }
        else if (hdr.h.a == 4) { resubmit_preserving_field_list(1); resubmit_preserving_field_list(2); }
        truncate(hdr.h.b);
        if (hdr.h.a > 1) { truncate(20); }
    }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.a == 7) { recirculate_preserving_field_list(2); }
        else if (hdr.h.a == 8) { recirculate_preserving_field_list(1); truncate(3); }
        else if (hdr.h.a == 9) { clone_preserving_field_list(CloneType.E2E, 4, 2); hdr.h.b = (bit<32>)m.y; }
    }
}
control C(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def engine_requests_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Loaded, Loaded]:
    return program_pair(tmp_path_factory, "engine_requests", ENGINE_REQUESTS)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(0, 10), b=st.integers(0, 40))
def test_requests_of_one_engine_call_match_the_oracle(engine_requests_pair: tuple[Loaded, Loaded], a: int,
                                                      b: int) -> None:
    """Requests from several blocks of one engine call (parser and verify write the field
    lists' fields, ingress and egress request) are those of the oracle's block-by-block run,
    and the clone built from them too."""
    engine, oracle = engine_requests_pair
    assert engine.pipeline.ingress_seq is not None and engine.pipeline.egress_seq is not None
    frame = struct.pack("!BI", a, b) + b"payload"
    pe, po = (sw.pipeline.new_packet(frame, 1, 1000) for sw in (engine, oracle))
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_ingress(pkt)
    assert pe.clone_request == po.clone_request and pe.truncate_len == po.truncate_len
    assert pe.resubmit == po.resubmit and _phv(pe) == _phv(po)
    if pe.clone_request is not None:
        ce, co = (sw.pipeline.copy_for_request(pkt, pkt.clone_request) for sw, pkt in ((engine, pe), (oracle, po)))
        assert _phv(ce) == _phv(co)
    for sw, pkt in ((engine, pe), (oracle, po)):
        sw.pipeline.run_egress(pkt, 1, 2000)
    assert pe.recirculate == po.recirculate and pe.clone_request == po.clone_request
    assert pe.truncate_len == po.truncate_len and _phv(pe) == _phv(po)
    assert engine.pipeline.deparse(pe) == oracle.pipeline.deparse(po)
    for req_e, req_o, copy in ((pe.recirculate, po.recirculate, "copy_for_recirculate"),
                               (pe.clone_request, po.clone_request, "copy_for_request")):
        if req_e is None:
            continue
        args_e = (pe, req_e) if copy == "copy_for_request" else (pe,)
        args_o = (po, req_o) if copy == "copy_for_request" else (po,)
        ne, no = getattr(engine.pipeline, copy)(*args_e), getattr(oracle.pipeline, copy)(*args_o)
        assert _phv(ne) == _phv(no) and ne.data == no.data
