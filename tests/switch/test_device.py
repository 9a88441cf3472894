"""The P4Runtime device binding: device configs, P4Info agreement, controller headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st_

from p4switch.device import (
    P4SwitchDevice,
    PipelineHolder,
    compile_device_config,
    device_config_for,
    p4info_mismatch,
    pack_controller_header,
    split_as_integer,
    split_controller_header,
)
from p4switch.p4runtime.device import PipelineLoadError
from p4switch.state import RuntimeState
from p4switch.state.runtime import ControllerHeader, PacketMetadataField
from tests.switch.simnet import ALINEA, program


def alinea_state() -> RuntimeState:
    return RuntimeState.from_p4info(program(str(ALINEA)).p4info)


def test_controller_headers_pack_as_the_wire_format_says() -> None:
    st = alinea_state()
    head = pack_controller_header(st.packet_in, {"ingress_port": 1, "_pad": 0, "r_floor_bps": 40_000})
    assert head == b"\x00\x80" + bytes(32) + (40_000).to_bytes(6, "big") + bytes(8)  # fwd_pkts, deq_pkts: 0
    assert pack_controller_header(st.packet_out, {"egress_port": 511}) == b"\xff\x80"
    meta, rest = split_controller_header(st.packet_in, head + b"rest")
    assert rest == b"rest" and meta["ingress_port"] == 1 and meta["r_floor_bps"] == 40_000 and meta["o_max_ppm"] == 0
    assert split_controller_header(st.packet_in, b"\x01") is None
    assert split_controller_header(None, b"abc") == ({}, b"abc")
    with pytest.raises(ValueError, match="does not fit bit<9>"):
        pack_controller_header(st.packet_out, {"egress_port": 512})


@given(widths=st_.lists(st_.integers(0, 64), min_size=1, max_size=12), frame=st_.binary(max_size=80))
def test_the_engines_header_split_reads_what_the_whole_integer_gives(widths: list[int], frame: bytes) -> None:
    """Headers of any field widths up to 64 bits and any total (whole bytes or not), frames short
    or long: the engine's split (``ControllerHeader.splitter``) gives the same dict, in the same
    order, and the same payload as reading the header as one integer; it fails if a field's bits
    are taken from the wrong place or the header's leading pad bits are not skipped."""
    header = ControllerHeader(1, "packet_in", tuple(PacketMetadataField(i + 1, f"f{i}", w) for i, w in enumerate(widths)))
    assert header.splitter is not None
    got, want = split_controller_header(header, frame), split_as_integer(header, frame)
    assert got == want
    if got is not None and want is not None:
        assert list(got[0]) == list(want[0])


def test_device_config_keeps_positions_of_included_files(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "extra.h").write_text("// a header\nconst bit<8> GOOD = 1;\nconst bit<8> BAD = nosuch;\n")
    main = tmp_path / "prog.p4"
    main.write_text(ALINEA.read_text().replace("#include <v1model.p4>", "#include <v1model.p4>\n#include \"extra.h\""))
    config = device_config_for(main, [inc])
    with pytest.raises(PipelineLoadError, match=r"extra\.h:3:\d+: error: .*nosuch"):
        compile_device_config(config)


def test_p4info_mismatch_names_what_differs() -> None:
    info = program(str(ALINEA)).p4info
    other = type(info)()
    other.CopyFrom(info)
    assert p4info_mismatch(info, other) is None
    other.tables[0].preamble.id += 1
    del other.actions[0]
    msg = p4info_mismatch(other, info)
    assert f"table '{info.tables[0].preamble.name}' has id" in msg
    assert f"action '{info.actions[0].preamble.name}' is in the program but not in the P4Info" in msg


def test_packet_out_needs_a_cpu_port_and_goes_in_on_it() -> None:
    holder = PipelineHolder()
    got: list[tuple[int, bytes]] = []
    device = P4SwitchDevice(holder, lambda port, frame: got.append((port, frame)), cpu_port=None)
    with pytest.raises(ValueError, match="no CPU port"):
        device.packet_out(b"x", {"egress_port": 1, "_pad": 0})
    device = P4SwitchDevice(holder, lambda port, frame: got.append((port, frame)), cpu_port=255)
    device.install(program(str(ALINEA)))
    device.packet_out(b"frame", {"egress_port": 3, "_pad": 0})
    assert got == [(255, b"\x01\x80frame")]
    assert holder.generation == 1 and device.state is holder.state
