"""Parser value sets in the pipeline: backed by the RuntimeState's ValueSetState, the
pipeline API (``V1Pipeline.value_sets[name]``), and value sets the P4Info does not list."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.pipeline import PipelineError, load_pipeline
from p4switch.state import Exact, RuntimeState

from .helpers import PROGRAMS, compiled, load

PROFILES = PROGRAMS / "profiles.p4"
VS = "MyParser.tunnel_types"


def tagged(ethertype: int) -> bytes:
    eth = struct.pack("!6s6sH", b"\x02" * 6, b"\x04" * 6, ethertype)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20, 0, 0, 64, 0, 0, 1, 2)
    return eth + struct.pack("!HH", 5, 0x0800) + ip


def parses_tag(sw, ethertype: int) -> bool:
    pkt = sw.pipeline.new_packet(tagged(ethertype), 1, 1000)
    sw.pipeline.run_ingress(pkt)
    return pkt.is_valid("hdr.tag") and pkt.is_valid("hdr.ipv4")


def test_the_parser_reads_the_state_members() -> None:
    sw = load(PROFILES)
    vs = sw.state.value_sets_by_name[VS]
    assert sw.pipeline.value_sets[VS].state is vs
    vs.set_members([{1: Exact(0x8100)}])
    assert parses_tag(sw, 0x8100) and not parses_tag(sw, 0x8101)
    vs.clear()
    assert not parses_tag(sw, 0x8100)


def test_the_pipeline_api_refuses_what_the_p4info_forbids() -> None:
    sw = load(PROFILES)
    api = sw.pipeline.value_sets[VS]
    with pytest.raises(ValueError, match="exact"):
        api.add((0x8100, 0xFF00))  # the P4Info field is exact: no mask
    with pytest.raises(ValueError, match="component"):
        api.add(1, 2)
    for v in (1, 2, 3, 4):
        api.add(v)
    with pytest.raises(ValueError, match="at most 4|full"):
        api.add(5)
    api.clear()
    api.add(1)
    with pytest.raises(ValueError, match="already"):
        api.add(1)


def test_a_value_set_missing_from_the_p4info_is_private_and_takes_masks() -> None:
    checked, info = compiled(str(PROFILES), ())
    trimmed = p4info_pb2.P4Info()
    trimmed.CopyFrom(info)
    del trimmed.value_sets[:]
    state = RuntimeState.from_p4info(trimmed)
    sw = SimpleNamespace(pipeline=load_pipeline(checked, trimmed, state))
    sw.pipeline.value_sets[VS].add((0x8100, 0xFF00))
    assert parses_tag(sw, 0x81AB) and not parses_tag(sw, 0x8200)


def test_a_p4info_value_set_of_another_width_is_a_located_error() -> None:
    checked, info = compiled(str(PROFILES), ())
    wrong = p4info_pb2.P4Info()
    wrong.CopyFrom(info)
    wrong.value_sets[0].match[0].bitwidth = 12
    with pytest.raises(PipelineError) as err:
        load_pipeline(checked, wrong, RuntimeState.from_p4info(wrong))
    assert VS in str(err.value) and err.value.loc.file.endswith("profiles.p4")
