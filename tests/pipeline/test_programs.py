"""Every test program loads, and random frames on random ports never raise."""

from __future__ import annotations

import random

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.frontend.p4info import build_p4info
from p4switch.pipeline import PipelineError, load_pipeline
from p4switch.state import RuntimeState

from .helpers import ALINEA, PROGRAMS, compiled, load, load_source, through

ALL = sorted(PROGRAMS.glob("*.p4")) + [ALINEA]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_program_runs_random_frames(path) -> None:
    sw = load(path)
    rng = random.Random(path.name)
    for _ in range(150):
        head = bytes(rng.getrandbits(8) for _ in range(12)) + rng.choice(
            [b"\x08\x00", b"\x88\xb5", b"\x88\x47", b"\x12\x12", b"\x88\xb6"])
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
        pkt, out = through(sw, head + body, rng.randrange(0, 300))
        assert out is None or isinstance(out, bytes)


def test_a_table_missing_from_the_p4info_is_a_located_error() -> None:
    checked, info = compiled(str(ALINEA), ())
    trimmed = p4info_pb2.P4Info()
    trimmed.CopyFrom(info)
    keep = [t for t in trimmed.tables if t.preamble.name != "MyIngress.ipv4_lpm"]
    del trimmed.tables[:]
    trimmed.tables.extend(keep)
    state = RuntimeState.from_p4info(trimmed)
    with pytest.raises(PipelineError) as err:
        load_pipeline(checked, trimmed, state)
    assert "MyIngress.ipv4_lpm" in str(err.value) and err.value.loc.file.endswith("alinea.p4")


def test_const_entries_are_installed_once() -> None:
    checked, info = compiled(str(PROGRAMS / "features.p4"), ())
    state = RuntimeState.from_p4info(info)
    load_pipeline(checked, info, state)
    acl = state.tables_by_name["MyIngress.acl"]
    assert len(acl) == 3 and all(e.is_const for e in acl)
    priorities = sorted((e.priority for e in acl), reverse=True)
    assert priorities == [3, 2, 1]
    load_pipeline(checked, build_p4info(checked), state)  # a second load keeps them
    assert len(acl) == 3


def test_repeated_parser_errors_and_exits_do_not_accumulate_tracebacks() -> None:
    sw = load(PROGRAMS / "features.p4")
    for _ in range(50):
        through(sw, bytes(20), 1)  # PacketTooShort, then exit in ingress
    from p4switch.pipeline.packet import EXIT

    depth, tb = 0, EXIT.__traceback__
    while tb is not None:
        depth, tb = depth + 1, tb.tb_next
    assert depth < 10


def test_blocks_bound_through_named_instances_use_the_instance_name() -> None:
    source = (PROGRAMS / "skeleton.p4").read_text()
    main = source[source.index("V1Switch("):]
    renamed = main.replace("MyIngress()", "ig_inst")
    source = source.replace(main, "MyIngress() ig_inst;\n" + renamed)
    sw = load_source(source)
    assert list(sw.state.tables_by_name) == ["ig_inst.routes"]
    assert sw.pipeline.instances["ingress"].scope.prefix == "ig_inst"
