"""The v1model walk in the engine (hbh_engine.V1Walk, engine/src/v1model/v1walk.rs) against the Python
walk on the closures (HBH_P4_ORACLE=1), the differential oracle: the same frames at the same
times into two switches give the same frames out of every port at the same times, the same
packet-ins, drops, queue counters and registers. The engine's walk carries out every request
itself (clones through the PRE's sessions, resubmit, recirculation, multicast groups): the
Python walk of the engine's switch counts nothing."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from controlplane.p4runtime_client import clone_session, multicast_group
from p4switch.pipeline.pipeline import ORACLE_ENV
from tests.switch.simnet import (
    ALINEA,
    HOST_MAC,
    SWITCH_MAC,
    SimNet,
    configure_alinea,
    neighbour_report,
    sim_switch,
    udp_frame,
)

pytest.importorskip("hbh_engine")

PORTS = (1, 2)
Configure = Callable[[SimNet], None]


def pair(configure: Configure, path: object = ALINEA, ports: tuple[int, ...] = PORTS) -> tuple[SimNet, SimNet]:
    """(engine walk, oracle) switches of one program, configured alike."""
    nets = []
    with pytest.MonkeyPatch.context() as mp:
        for oracle in ("", "1"):
            mp.setenv(ORACLE_ENV, oracle)
            net = sim_switch(path, ports, bitrate=10_000_000, delay_ns=2000)  # type: ignore[arg-type]
            configure(net)
            nets.append(net)
    return nets[0], nets[1]


def outcome(net: SimNet) -> dict[str, object]:
    """Everything a run leaves that a walk decides."""
    sw = net.switch
    tm = sw.tm
    return {"got": {p: list(h.got) for p, h in net.hosts.items()},
            "drops": sw.core.drop_counts(),
            "stats": {k: v for k, v in sw.core.stats.items() if k not in ("rx",)},
            "tm": [(tm.stats(p).enqueued, tm.stats(p).dequeued, tm.stats(p).dropped_full, tm.stats(p).max_depth)
                   for p in (*net.hosts, 255)],
            "packet_ins": [(p.payload, [(x.metadata_id, x.value) for x in p.metadata]) for p in net.ctl.of("packet")]}


def run_both(engine: SimNet, oracle: SimNet, sends: list[tuple[int, int, bytes]],
             engine_frame: Callable[[bytes], bytes | bytearray] = bytes) -> None:
    """``sends`` (time after now, port, frame) into both, run to the end, compare everything
    so far: the pair may have run other sends before (the same ones into both). The engine's
    switch gets each frame as ``engine_frame(frame)`` (``bytearray``: as an engine buffer)."""
    for net, as_sent in ((engine, engine_frame), (oracle, bytes)):
        now = net.sched.now_ns()
        for t, port, frame in sends:
            net.hosts[port].send_at(now + t, as_sent(frame))
        net.sched.run()
    assert outcome(engine) == outcome(oracle)
    assert engine.switch.walk.counts().get("rx", 0) > 0  # the engine walked them
    assert not engine.switch.core.python_walk_counts  # all of them: nothing was handed to Python
    assert "rx" not in oracle.switch.walk.counts()  # the oracle's pipeline is not the engine's: Python walked


def alinea_config(net: SimNet) -> None:
    configure_alinea(net.ctl, PORTS, modelled={1: (100, 300), 2: (100, 500)}, neighbours=(2,))


@st.composite
def alinea_sends(draw: st.DrawFn) -> list[tuple[int, int, bytes]]:
    """Data both ways (some TTLs expire, some routes miss), reports from the neighbour on port
    2, frames of other EtherTypes, truncated frames: ingress drops, report clones, packet-ins
    and full queues."""
    out = []
    for _ in range(draw(st.integers(1, 25))):
        t = draw(st.integers(0, 3_000_000))
        src = draw(st.sampled_from(PORTS))
        kind = draw(st.sampled_from(["udp", "udp", "udp", "report", "other", "cut"]))
        if kind == "udp":
            frame = udp_frame(src, 3 - src, ttl=draw(st.sampled_from([64, 64, 1, 0])),
                              payload=draw(st.binary(min_size=0, max_size=200)))
        elif kind == "report":
            src, frame = 2, neighbour_report(draw(st.integers(0, 300)))
        elif kind == "other":
            frame = (SWITCH_MAC[src].to_bytes(6, "big") + HOST_MAC[src].to_bytes(6, "big")
                     + struct.pack("!H", draw(st.integers(0, 0xFFFF))) + bytes(40))
        else:
            frame = udp_frame(src, 3 - src)[:draw(st.integers(0, 40))]
        out.append((t, src, frame))
    return out


# One pair of switches per module, fed example after example: loading a pipeline takes seconds,
# a run of an example milliseconds; the property holds for any history the two share.
ONE_PAIR = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # a sim run per example: no shrinking


@pytest.fixture(scope="module")
def alinea_pair() -> tuple[SimNet, SimNet]:
    return pair(alinea_config)


@ONE_PAIR
@given(sends=alinea_sends())
def test_alinea_engine_walk_matches_the_python_walk(alinea_pair: tuple[SimNet, SimNet], sends: list) -> None:
    engine, oracle = alinea_pair
    run_both(engine, oracle, sends)
    for name in ("occupancy",):
        cells = [net.switch.holder.state.registers_by_name[name].cells for net in (engine, oracle)]
        assert list(cells[0]) == list(cells[1])


def slow_port_2(net: SimNet) -> None:
    alinea_config(net)
    net.switch.tm.set_queue_depth(2, 8)
    net.switch.tm.set_queue_rate(2, 500)


def test_a_burst_fills_a_queue_and_both_walks_drop_the_same_frames() -> None:
    engine, oracle = pair(slow_port_2)
    sends = [(i * 1000, 1, udp_frame(1, 2, payload=bytes([i]) * 900)) for i in range(60)]
    run_both(engine, oracle, sends)
    assert engine.switch.core.drop_counts().get("tm_queue_full", 0) > 0


REQUESTS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<32> b; }
struct hs { h_t h; }
struct m_t { @field_list(1) bit<8> x; @field_list(2) bit<8> y; }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); m.x = hdr.h.a; transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)hdr.h.b[1:0];
        if (sm.instance_type != 0) { hdr.h.b = hdr.h.b + 100; }
        if (hdr.h.a == 1) { clone_preserving_field_list(CloneType.I2E, 6, 1); }
        else if (hdr.h.a == 2) { clone(CloneType.E2E, 6); }
        else if (hdr.h.a == 3 && sm.instance_type == 0) { resubmit_preserving_field_list(2); }
        else if (hdr.h.a == 4) { sm.mcast_grp = 1; }
        else if (hdr.h.a == 5) { mark_to_drop(sm); }
        else if (hdr.h.a == 6) { truncate(7); }
    }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.a == 7 && sm.instance_type == 0) { recirculate_preserving_field_list(1); }
        else if (hdr.h.a == 8 && sm.instance_type == 0) { clone_preserving_field_list(CloneType.E2E, 6, 2); truncate(9); }
        else if (hdr.h.a == 9) { mark_to_drop(sm); }
        hdr.h.b = hdr.h.b + (bit<32>)sm.egress_rid + ((bit<32>)sm.instance_type << 8);
    }
}
control C(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def requests_config(net: SimNet) -> None:
    net.ctl.insert(clone_session(6, [(2, 3)], packet_length_bytes=8))
    net.ctl.insert(multicast_group(1, [(1, 1), (3, 2)]))


@pytest.fixture(scope="module")
def requests_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimNet, SimNet]:
    path = tmp_path_factory.mktemp("walk") / "walk_requests.p4"
    path.write_text(REQUESTS)
    return pair(requests_config, path, (1, 2, 3))


@ONE_PAIR
@given(sends=st.lists(st.tuples(st.integers(0, 50_000), st.sampled_from((1, 2, 3)), st.integers(0, 10),
                                st.integers(0, 7), st.binary(max_size=12)), min_size=1, max_size=12))
def test_every_request_in_the_engine_walk_matches_the_python_walk(requests_pair: tuple[SimNet, SimNet], sends: list) -> None:
    """I2E and E2E clones, resubmit, recirculation, multicast, drops in ingress and egress and
    truncation, from a program wholly in the engine: the engine's walk carries out every
    request as the Python walk does."""
    engine, oracle = requests_pair
    assert engine.switch.holder.pipeline.walk_form() is not None
    run_both(engine, oracle, [(t, port, struct.pack("!BI", a, b) + tail) for t, port, a, b, tail in sends])


@ONE_PAIR
@given(sends=st.lists(st.tuples(st.integers(0, 50_000), st.sampled_from((1, 2, 3)), st.integers(0, 10),
                                st.integers(0, 7), st.binary(max_size=12)), min_size=1, max_size=12))
def test_engine_buffers_leave_as_the_python_walks_bytes(requests_pair: tuple[SimNet, SimNet], sends: list) -> None:
    """Frames that reach the switch as the engine's own buffers (a host's sender, another
    switch's egress; here a ``bytearray``) are deparsed into that buffer in place: clones,
    recirculations and truncations of them leave as the Python walk's of the same bytes."""
    engine, oracle = requests_pair
    run_both(engine, oracle, [(t, port, struct.pack("!BI", a, b) + tail) for t, port, a, b, tail in sends],
             engine_frame=bytearray)


# Egress adds a header, removes one or keeps them: a deparsed frame longer, shorter or as long
# as the headers it was parsed from.
LENGTHS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> port; }
header x_t { bit<16> v; }
struct hs { h_t h; x_t x; x_t y; }
struct m_t { }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition select(hdr.h.op) { 1: take_x; default: accept; } }
    state take_x { pkt.extract(hdr.x); transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = (bit<9>)hdr.h.port[1:0]; }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.op == 1) { hdr.x.setInvalid(); }
        else if (hdr.h.op == 2) { hdr.y.setValid(); hdr.y.v = 0xBEEF; }
        else { hdr.h.port = hdr.h.port + 1; }
    }
}
control C(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def lengths_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimNet, SimNet]:
    path = tmp_path_factory.mktemp("walk") / "walk_lengths.p4"
    path.write_text(LENGTHS)
    return pair(lambda net: None, path, (1, 2, 3))


@ONE_PAIR
@given(sends=st.lists(st.tuples(st.integers(0, 50_000), st.sampled_from((1, 2, 3)), st.integers(0, 3),
                                st.integers(1, 3), st.binary(max_size=40)), min_size=1, max_size=12))
def test_engine_buffers_whose_headers_change_length_leave_as_the_python_walks_bytes(
        lengths_pair: tuple[SimNet, SimNet], sends: list) -> None:
    """A header removed or added at egress: the engine's buffer is rebuilt, not written in place,
    and every frame leaves as the Python walk's of the same bytes."""
    engine, oracle = lengths_pair
    assert engine.switch.holder.pipeline.walk_form() is not None
    run_both(engine, oracle, [(t, port, bytes((op, out)) + tail) for t, port, op, out, tail in sends],
             engine_frame=bytearray)


def test_each_request_is_carried_out_by_the_engine_walk(requests_pair: tuple[SimNet, SimNet]) -> None:
    """One frame per request of the program, to every port: each kind of copy is made by the
    engine's walk (its own counts) and leaves as the Python walk's does."""
    engine, oracle = requests_pair
    sends = [(a * 100_000 + port * 10_000, port, struct.pack("!BI", a, b) + b"payload-bytes")
             for a in range(10) for port in (1, 2, 3) for b in (1, 2)]
    run_both(engine, oracle, sends)
    counts = engine.switch.walk.counts()
    for made in ("clone_I2E", "clone_E2E", "resubmit", "recirculate"):
        assert counts.get(made, 0) > 0, made
    assert counts.get("egress_mark_to_drop", 0) > 0 and counts.get("ingress_mark_to_drop", 0) > 0


def test_the_engine_walk_follows_pre_writes(requests_pair: tuple[SimNet, SimNet]) -> None:
    """Deleting the clone session and the multicast group, then writing them back changed,
    between runs: the engine's walk reads the PRE as the P4Runtime core last wrote it."""
    engine, oracle = requests_pair
    frames = [(i * 10_000, 1, struct.pack("!BI", a, 2) + b"0123456789") for i, a in enumerate((1, 2, 4, 8))]
    for net in (engine, oracle):
        net.ctl.delete(clone_session(6, []))
        net.ctl.delete(multicast_group(1, []))
    run_both(engine, oracle, frames)
    counts = engine.switch.walk.counts()
    assert counts.get("mcast_group_missing", 0) > 0 and counts.get("clone_session_missing_I2E", 0) > 0
    for net in (engine, oracle):
        net.ctl.insert(clone_session(6, [(1, 7), (3, 9)], packet_length_bytes=0))
        net.ctl.insert(multicast_group(1, [(2, 4)]))
    before = counts.get("clone_I2E", 0)
    run_both(engine, oracle, frames)
    assert engine.switch.walk.counts().get("clone_I2E", 0) == before + 2  # the session's two replicas


LOOP = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs { h_t h; }
struct m_t { @field_list(1) bit<8> n; }
parser P(packet_in pkt, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply { m.n = m.n + 1; sm.egress_spec = 2; if (m.n < hdr.h.a) { resubmit_preserving_field_list(1); } }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    apply { hdr.h.a = m.n; if (sm.instance_type == 0 && m.n == 1) { recirculate_preserving_field_list(1); } }
}
control C(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_resubmit_chains_are_cut_where_the_python_walk_cuts_them(tmp_path: Path) -> None:
    """A chain of resubmits as long as the frame asks (a field list counts them), past the
    core's limit for some: the engine's walk resubmits, recirculates and cuts as the Python
    walk does."""
    path = tmp_path / "loop.p4"
    path.write_text(LOOP)
    engine, oracle = pair(lambda net: None, path, (1, 2))
    asks = (0, 1, 2, 5, 40, 200)  # a frame asking for a passes through ingress a times
    run_both(engine, oracle, [(i * 100_000, 1, bytes([n])) for i, n in enumerate(asks)])
    limit = engine.switch.core.max_reentries
    counts = engine.switch.walk.counts()
    assert counts["reentry_limit"] == sum(1 for n in asks if n - 1 > limit)
    assert counts["resubmit"] > limit and counts["recirculate"] > 0


def test_a_switch_walking_in_the_engine_is_collected() -> None:
    """The walk holds the core, the TM, the ports' ``send`` and the pipeline's form, which lead
    back to it: the cyclic GC must still free a switch nobody holds (sweeps build many)."""
    import gc
    import weakref

    net = sim_switch()
    configure_alinea(net.ctl)
    net.hosts[1].send_at(0, udp_frame(1, 2))
    net.sched.run()
    assert net.switch.walk.counts() == {"rx": 1, "tx": 1} and len(net.hosts[2].got) == 1
    refs = [weakref.ref(net.switch), weakref.ref(net.switch.holder.pipeline)]
    del net
    gc.collect()
    assert [r() for r in refs] == [None, None]
