"""pcap files: written by p4switch, read back by scapy (and the other way round)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.utils import PcapWriter as ScapyPcapWriter
from scapy.utils import rdpcap

from p4switch.pcap import PcapError, PcapWriter, PortCapture, read_pcap
from runtime.sched import VirtualScheduler


def frames() -> list[bytes]:
    return [bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=0x88B5) / (bytes([i]) * (20 + i)))
            for i in range(5)]


def test_writer_output_reads_back_in_scapy(tmp_path: Path) -> None:
    path = tmp_path / "x.pcap"
    stamps = [0, 1_500, 2_000_001_999, 7 * 10**9 + 123_456_789, 10**12]
    with PcapWriter(path) as w:
        for ts, f in zip(stamps, frames()):
            w.write(f, ts)
    pkts = rdpcap(str(path))
    assert [bytes(p) for p in pkts] == frames()
    assert all(isinstance(p, Ether) for p in pkts)
    assert [int(p.time * 1_000_000) for p in pkts] == [ts // 1000 for ts in stamps]


def test_read_pcap_roundtrip_truncates_to_microseconds(tmp_path: Path) -> None:
    path = tmp_path / "y.pcap"
    with PcapWriter(path) as w:
        w.write(b"\x01" * 60, 123_456_789)
    assert read_pcap(path) == [(123_456_000, b"\x01" * 60)]


def test_read_pcap_reads_scapy_nanosecond_files(tmp_path: Path) -> None:
    path = tmp_path / "ns.pcap"
    w = ScapyPcapWriter(str(path), nano=True, linktype=1)
    pkt = Ether(frames()[0])
    pkt.time = 5
    w.write(pkt)
    w.close()
    assert read_pcap(path) == [(5 * 10**9, frames()[0])]


def test_snaplen_truncates_but_records_original_length(tmp_path: Path) -> None:
    path = tmp_path / "s.pcap"
    with PcapWriter(path, snaplen=40) as w:
        w.write(bytes(100), 0)
    [pkt] = rdpcap(str(path))
    assert len(bytes(pkt)) == 40 and pkt.wirelen == 100


def test_port_capture_names_files_like_bmv2_and_uses_scheduler_time(tmp_path: Path) -> None:
    s = VirtualScheduler()
    cap = PortCapture(tmp_path / "pcaps", s.now_ns)
    f = frames()
    s.call_at(1_000, cap.record_in, "s1-eth1", f[0])
    s.call_at(2_000_000, cap.record_out, "s1-eth2", f[1])
    s.call_at(3_000_000, cap.record_out, "s1-eth2", f[2])
    s.run()
    cap.close()
    assert sorted(p.name for p in (tmp_path / "pcaps").iterdir()) == ["s1-eth1_in.pcap", "s1-eth2_out.pcap"]
    assert [bytes(p) for p in rdpcap(str(tmp_path / "pcaps" / "s1-eth2_out.pcap"))] == [f[1], f[2]]
    assert read_pcap(tmp_path / "pcaps" / "s1-eth1_in.pcap") == [(1_000, f[0])]
    assert read_pcap(tmp_path / "pcaps" / "s1-eth2_out.pcap")[1][0] == 3_000_000


def test_port_capture_rejects_path_like_names(tmp_path: Path) -> None:
    cap = PortCapture(tmp_path, lambda: 0)
    with pytest.raises(ValueError, match="bad port name"):
        cap.record_in("../evil", b"x" * 14)


def test_bad_files_are_named(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a pcap file at all")
    with pytest.raises(PcapError, match="junk.pcap: not a classic pcap"):
        read_pcap(junk)
    cut = tmp_path / "cut.pcap"
    with PcapWriter(cut) as w:
        w.write(bytes(100), 0)
    cut.write_bytes(cut.read_bytes()[:-10])
    with pytest.raises(PcapError, match="cut.pcap: truncated record data"):
        read_pcap(cut)


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump not installed (make sysdeps installs it)")
def test_writer_output_reads_back_in_tcpdump(tmp_path: Path) -> None:
    """libpcap's reader (what tcpdump, tshark and Wireshark use) accepts our files."""
    path = tmp_path / "x.pcap"
    with PcapWriter(path) as w:
        for i, f in enumerate(frames()):
            w.write(f, i * 1_000_000)
    out = subprocess.run(["tcpdump", "-nn", "-e", "-r", str(path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if not line.startswith("\t")]  # hex dumps follow
    assert len(lines) == len(frames())
    assert all("02:00:00:00:00:01 > 02:00:00:00:00:02" in line and "0x88b5" in line for line in lines)


def test_switch_creates_every_ports_capture_files_at_start(tmp_path):
    """Like BMv2's --pcap: a port that never sees a frame still has its (empty) captures."""
    from p4switch.switch import Switch, SwitchOptions
    from runtime.sched import VirtualScheduler

    sw = Switch(VirtualScheduler(), SwitchOptions(pcap_dir=str(tmp_path), grpc_addr=None, thrift_port=None))
    sw.add_link_port(1, "p1")
    sw.add_link_port(2, "p2")
    for name in ("p1", "p2"):
        for direction in ("in", "out"):
            path = tmp_path / f"{name}_{direction}.pcap"
            assert path.exists()
            assert read_pcap(path) == []
    sw.close()
