"""A pushed P4Info must describe the program it comes with (issue 9, item 3).

Names and ids agreeing is not enough: a P4Info declaring ipv4_lpm's key bit<64> made the
table take 64-bit keys and refuse a valid 10.0.2.0/24. Every contradiction is
INVALID_ARGUMENT naming what differs, and the running pipeline is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.p4runtime import P4RuntimeError
from tests.switch.simnet import configure_alinea, sim_switch


def _table(info: p4info_pb2.P4Info, name: str) -> p4info_pb2.Table:
    return next(t for t in info.tables if t.preamble.name == name)


def _action(info: p4info_pb2.P4Info, name: str) -> p4info_pb2.Action:
    return next(a for a in info.actions if a.preamble.name == name)


def _key_width(info: p4info_pb2.P4Info) -> None:
    _table(info, "MyIngress.ipv4_lpm").match_fields[0].bitwidth = 64


def _param_width(info: p4info_pb2.P4Info) -> None:
    next(p for p in _action(info, "MyIngress.ipv4_forward").params if p.name == "port").bitwidth = 16


def _match_kind(info: p4info_pb2.P4Info) -> None:
    _table(info, "MyIngress.ipv4_lpm").match_fields[0].match_type = p4info_pb2.MatchField.EXACT


def _size(info: p4info_pb2.P4Info) -> None:
    _table(info, "MyIngress.ipv4_lpm").size = 7


def _param_missing(info: p4info_pb2.P4Info) -> None:
    del _action(info, "MyIngress.ipv4_forward").params[-1]


def _packet_out_width(info: p4info_pb2.P4Info) -> None:
    cpm = next(c for c in info.controller_packet_metadata if c.preamble.name == "packet_out")
    cpm.metadata[0].bitwidth = 16


@pytest.mark.parametrize(("change", "says"), [
    (_key_width, "match field 'hdr.ipv4.dstAddr' is bit<64> in the P4Info but bit<32> in the program"),
    (_param_width, "parameter 'port' is bit<16> in the P4Info but bit<9> in the program"),
    (_match_kind, "match kind EXACT in the P4Info but LPM in the program"),
    (_size, "size is 7 in the P4Info but 1024 in the program"),
    (_param_missing, "is only in the program"),
    (_packet_out_width, "controller header 'packet_out': field"),
])
def test_contradicting_p4info_is_refused_and_the_pipeline_kept(change: Callable[[p4info_pb2.P4Info], None],
                                                             says: str) -> None:
    net = sim_switch()
    configure_alinea(net.ctl)
    running = net.switch.state
    wrong = p4info_pb2.P4Info()
    wrong.CopyFrom(net.program.p4info)
    change(wrong)
    with pytest.raises(P4RuntimeError) as exc:
        net.ctl.set_pipeline(wrong, net.program.device_config)
    assert exc.value.code == 3  # INVALID_ARGUMENT
    assert says in exc.value.message
    assert net.switch.state is running
    assert len(running.tables_by_name["MyIngress.ipv4_lpm"]) == 2  # the routes are still there


def test_the_programs_own_p4info_is_accepted() -> None:
    net = sim_switch()
    net.ctl.set_pipeline(net.program.p4info, net.program.device_config)
    assert net.switch.state.tables_by_name["MyIngress.ipv4_lpm"].info.size == 1024
