"""wireshark/hbh_alinea.lua under Debian's tshark: every field of ALINEA reports (built by
controlplane.report.encode from drawn values) decodes to the value that was encoded."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.report import Report, encode
from p4switch.pcap import PcapWriter
from tests.paths import ROOT

LUA = ROOT / "wireshark" / "hbh_alinea.lua"
FIELDS = ["alinea.version", "alinea.msg_type", "alinea.flags", "alinea.class", "alinea.node_id", "alinea.port",
          "alinea.occupancy", "alinea.capacity", "alinea.timestamp_us", "alinea.seq", "alinea.drops",
          "alinea.interval_us", "alinea.drained", "alinea.drained_ts_us"]

u16, u32, u48 = st.integers(0, 0xFFFF), st.integers(0, 0xFFFF_FFFF), st.integers(0, (1 << 48) - 1)
reports = st.builds(Report, node_id=u16, port=st.integers(0, 511), occupancy=u32, capacity=u32, timestamp_us=u48,
                    seq=u32, drops=u32, interval_us=u32, flags=st.integers(0, 255), drained=u32, drained_ts_us=u48,
                    dst_mac=u48, src_mac=u48)


def expected(r: Report) -> list[int]:
    return [2, 1, r.flags, r.flags >> 5, r.node_id, r.port, r.occupancy, r.capacity, r.timestamp_us, r.seq, r.drops,
            r.interval_us, r.drained, r.drained_ts_us]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(reports, min_size=1, max_size=20))
def test_tshark_decodes_every_report_field(tmp_path: Path, batch: list[Report]) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("Debian's tshark is not installed (apt-get install tshark)")
    pcap = tmp_path / "reports.pcap"
    with PcapWriter(pcap) as w:
        for i, r in enumerate(batch):
            w.write(encode(r) + bytes(4), i * 1000)  # padding after the 42 bytes is not the report's
    proc = subprocess.run([tshark, "-n", "-r", str(pcap), "-X", f"lua_script:{LUA}", "-T", "fields", "-E",
                           "separator=,", *[a for f in FIELDS for a in ("-e", f)]],
                          capture_output=True, text=True, timeout=120, env={"HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split(",") for line in proc.stdout.strip().splitlines()]
    assert len(rows) == len(batch)
    for row, r in zip(rows, batch):
        assert [int(v, 0) for v in row] == expected(r)
