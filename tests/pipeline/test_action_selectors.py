"""Indirect tables in the pipeline, programmed through the RuntimeState API: which member a
packet runs, what the selector hashes, and agreement with the P4Info."""

from __future__ import annotations

import random
import struct

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.pipeline import PipelineError, load_pipeline
from p4switch.pipeline.algorithms import crc32
from p4switch.state import GroupRef, Lpm, MemberRef, RuntimeState

from .helpers import PROGRAMS, Loaded, compiled, load

PROFILES = PROGRAMS / "profiles.p4"
DST = 0x0A000001


def frame(src: int, dst: int, sport: int, dport: int, ttl: int = 64) -> bytes:
    eth = struct.pack("!6s6sH", b"\x02" * 6, b"\x04" * 6, 0x0800)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 28, 0, 0, ttl, 17, 0, src, dst)
    return eth + ip + struct.pack("!HHHH", sport, dport, 8, 0)


def run(sw: Loaded, data: bytes, port: int = 1):
    pkt = sw.pipeline.new_packet(data, port, 1000)
    sw.pipeline.run_ingress(pkt)
    return pkt


def paths_group(sw: Loaded, ports: list[int]) -> None:
    """Members 1..n of MyIngress.paths (set_port(p, mark=i)), group 1 of all, 10/8 -> group 1."""
    prof = sw.state.action_profiles_by_name["MyIngress.paths"]
    sp = sw.action_id("MyIngress.set_port")
    for i, p in enumerate(ports, start=1):
        prof.insert_member(i, sp, (p, i))
    prof.insert_group(1, [(i, 1) for i in range(1, len(ports) + 1)], max_size=4)
    sw.table("MyIngress.by_dst").insert({"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, GroupRef(1))


def test_the_member_is_the_selector_hash_cut_to_the_output_width_modulo_the_group_size() -> None:
    sw = load(PROFILES)
    ports = [11, 12, 13]
    paths_group(sw, ports)
    rng = random.Random(5)
    used = set()
    for _ in range(200):
        src, sport, dport = rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16)
        # selector fields in key order: srcAddr, dstAddr, meta.sport, meta.dport; crc32, 10 bits
        h = crc32((src << 64) | (DST << 32) | (sport << 16) | dport, 96) & 0x3FF
        pkt = run(sw, frame(src, DST, sport, dport))
        assert pkt.std("egress_spec") == ports[h % 3]
        assert pkt.get("hdr.ipv4.diffserv") == h % 3 + 1
        used.add(h % 3)
    assert used == {0, 1, 2}


def test_fields_outside_the_selector_do_not_move_a_flow() -> None:
    sw = load(PROFILES)
    paths_group(sw, [1, 2, 3, 4])
    rng = random.Random(9)
    moved = 0
    for _ in range(60):
        src, sport, dport = rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16)
        port = run(sw, frame(src, DST, sport, dport)).std("egress_spec")
        assert run(sw, frame(src, DST, sport, dport, ttl=3)).std("egress_spec") == port
        assert run(sw, frame(src, DST, sport, dport), port=7).std("egress_spec") == port
        moved += run(sw, frame(src, DST, rng.getrandbits(16), dport)).std("egress_spec") != port
    assert moved > 0  # the source port is a selector field


def test_a_member_reference_runs_that_member_and_follows_its_changes() -> None:
    sw = load(PROFILES)
    prof = sw.state.action_profiles_by_name["MyIngress.nhops"]
    sp = sw.action_id("MyIngress.set_port")
    prof.insert_member(1, sp, (21, 0))
    sw.table("MyIngress.by_port").insert({"sm.ingress_port": 3}, MemberRef(1))
    assert run(sw, frame(1, 2, 3, 4), port=3).std("egress_spec") == 21
    prof.modify_member(1, sp, (22, 0))
    assert run(sw, frame(1, 2, 3, 4), port=3).std("egress_spec") == 22


def test_a_p4info_that_disagrees_on_the_selector_is_a_located_error() -> None:
    checked, info = compiled(str(PROFILES), ())
    wrong = p4info_pb2.P4Info()
    wrong.CopyFrom(info)
    for ap in wrong.action_profiles:
        ap.with_selector = not ap.with_selector
    with pytest.raises(PipelineError) as err:
        load_pipeline(checked, wrong, RuntimeState.from_p4info(wrong))
    assert "P4Info says" in str(err.value) and err.value.loc.file.endswith("profiles.p4")
