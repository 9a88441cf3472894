"""wireshark/hbh_datagram.lua under Debian's tshark: the datagram header and the CVIHIS, TFRC,
LEDBAT and GCC feedback, built by the hosts' own encoders from drawn values, decode field by
field to the values that were encoded."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hosts.cvihis.areas import Command
from hosts.cvihis.wire import Feedback, encode_feedback
from hosts.datagram import KIND_FEEDBACK, KIND_GCC_REPORT, KIND_LEDBAT_ACK, KIND_TFRC_REPORT, FrameTemplate
from hosts.e2e_host import encode_ledbat_ack
from hosts.gcc.wire import GccReport
from hosts.gcc.wire import encode_report as encode_gcc
from hosts.tfrc.sender import TfrcReport
from hosts.tfrc.wire import encode_report as encode_tfrc
from p4switch.pcap import PcapWriter
from tests.paths import ROOT

LUA = ROOT / "wireshark" / "hbh_datagram.lua"
HEADER = ["hbh.kind", "hbh.flow", "hbh.rtt_100us", "hbh.seq", "hbh.ts_ns"]
BODY = {
    KIND_FEEDBACK: ["cvihis.flags", "cvihis.command", "cvihis.area", "cvihis.step_milli", "cvihis.gradient",
                    "cvihis.fb_seq", "cvihis.echo_ts_ns", "cvihis.echo_delay_ns", "cvihis.lost_total"],
    KIND_TFRC_REPORT: ["tfrc.t_recvdata_ns", "tfrc.t_delay_ns", "tfrc.x_recv_Bps", "tfrc.p"],
    KIND_LEDBAT_ACK: ["ledbat.seq", "ledbat.owd_ns"],
    KIND_GCC_REPORT: ["gcc.remb_bps", "gcc.echo_ts_ns", "gcc.hold_us", "gcc.highest_seq", "gcc.cumulative_lost",
                      "gcc.fraction_lost", "gcc.flags", "gcc.usage", "gcc.rate_state"],
}
u32, u64 = st.integers(0, 2**32 - 1), st.integers(0, 2**63 - 1)


@st.composite
def cvihis(draw: st.DrawFn) -> tuple[bytes, list[float]]:
    command = draw(st.sampled_from(list(Command)))
    loss = command == Command.MD
    area = None if loss else draw(st.integers(0, 6))
    fb = Feedback(fb_seq=draw(u32), command=command, area=area, step_milli=draw(st.integers(-32768, 32767)),
                  gradient=draw(st.integers(-1, 1)), loss=loss, rtm=draw(st.booleans()), echo_ts_ns=draw(u64),
                  echo_delay_ns=draw(u64), lost_total=draw(u32))
    flags = int(loss) | 2 * int(fb.rtm)
    return encode_feedback(fb), [flags, int(command), 255 if area is None else area, fb.step_milli, fb.gradient,
                                 fb.fb_seq, fb.echo_ts_ns, fb.echo_delay_ns, fb.lost_total]


@st.composite
def tfrc(draw: st.DrawFn) -> tuple[bytes, list[float]]:
    r = TfrcReport(draw(u64), draw(u64), draw(st.floats(0, 1e10)), draw(st.floats(0, 1)))
    return encode_tfrc(r), [r.t_recvdata_ns, r.t_delay_ns, r.x_recv_Bps, r.p]


@st.composite
def ledbat(draw: st.DrawFn) -> tuple[bytes, list[float]]:
    seq, owd = draw(u32), draw(st.integers(-(2**63), 2**63 - 1))
    return encode_ledbat_ack(seq, owd), [seq, owd]


@st.composite
def gcc(draw: st.DrawFn) -> tuple[bytes, list[float]]:
    remb = draw(st.one_of(st.none(), st.integers(1, 2**63 - 1)))
    r = GccReport(remb, draw(u64), draw(u32), draw(u32), draw(u32), draw(st.integers(0, 255)),
                  early=draw(st.booleans()), usage=draw(st.integers(0, 2)), rate_state=draw(st.integers(0, 2)))
    data = encode_gcc(r)
    return data, [int.from_bytes(data[:8], "big"), r.echo_ts_ns, r.hold_us, r.highest_seq, r.cumulative_lost,
                  r.fraction_lost, data[29], r.usage, r.rate_state]


BODIES = {KIND_FEEDBACK: cvihis(), KIND_TFRC_REPORT: tfrc(), KIND_LEDBAT_ACK: ledbat(), KIND_GCC_REPORT: gcc()}
datagram = st.sampled_from(sorted(BODIES)).flatmap(
    lambda kind: st.tuples(st.just(kind), st.integers(0, 999), st.integers(0, 0xFFFF), u32, u64, BODIES[kind]))


def tshark_fields(pcap: Path, fields: list[str], home: Path) -> list[list[str]]:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("Debian's tshark is not installed (apt-get install tshark)")
    proc = subprocess.run([tshark, "-n", "-r", str(pcap), "-X", f"lua_script:{LUA}", "-T", "fields", "-E",
                           "separator=,", "-E", "occurrence=f", *[a for f in fields for a in ("-e", f)]],
                          capture_output=True, text=True, timeout=120, env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [line.split(",") for line in proc.stdout.strip().splitlines()]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(datagram, min_size=1, max_size=24))
def test_tshark_decodes_every_datagram_field(tmp_path: Path, batch: list) -> None:
    pcap = tmp_path / "datagrams.pcap"
    with PcapWriter(pcap) as w:
        for i, (kind, flow, rtt, seq, ts, (body, _)) in enumerate(batch):
            t = FrameTemplate(src_mac=2, dst_mac=1, src_ip=0x0A000002, dst_ip=0x0A000001, flow=flow, size=100,
                              kind=kind)
            w.write(t.frame(seq, ts, rtt, body), i * 1000)
    fields = HEADER + sorted({f for fs in BODY.values() for f in fs})
    rows = tshark_fields(pcap, fields, tmp_path)
    assert len(rows) == len(batch)
    for row, (kind, flow, rtt, seq, ts, (_, want)) in zip(rows, batch):
        got = dict(zip(fields, row))
        assert [int(got[f]) for f in HEADER] == [kind, flow, rtt, seq, ts]
        decoded = [float(got[f]) if "." in got[f] or "e" in got[f] else int(got[f], 0) for f in BODY[kind]]
        assert decoded == pytest.approx(want, rel=1e-12, abs=0), (kind, got)
        assert all(got[f] == "" for k, fs in BODY.items() if k != kind for f in fs)
