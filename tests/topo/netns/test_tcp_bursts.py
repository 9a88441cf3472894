"""Runs of frames in a netns run's pcaps (topo/netns/tcp_bursts.py, docs/howto/tcp.md "Why the occupancy differs")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from topo.netns import tcp_bursts as B


@given(st.lists(st.floats(min_value=0, max_value=10, allow_nan=False), max_size=60),
       st.floats(min_value=1e-6, max_value=1.0))
def test_runs_partition_the_frames(times: list[float], gap: float) -> None:
    times = sorted(times)
    lengths = B.runs(times, gap)
    assert sum(lengths) == len(times) and all(n >= 1 for n in lengths)
    assert len(lengths) == 1 + sum(1 for a, b in zip(times, times[1:]) if b - a >= gap) if times else lengths == []
    p = B.profile(times, gap)
    assert 0 <= p.share_10 <= p.share_5 <= 1 and p.longest == max(lengths, default=0)


def test_an_ack_clock_gives_pairs_and_a_burst_shows() -> None:
    clocked = [i * 1.2e-3 + j * 60e-6 for i in range(100) for j in range(2)]  # 2 frames per ACK, 1.2 ms apart
    assert B.profile(clocked, 0.3e-3) == B.Profile(200, 2, 0.0, 0.0)
    burst = sorted(clocked + [0.05 + k * 60e-6 for k in range(12)])
    p = B.profile(burst, 0.3e-3)
    assert p.longest >= 12 and p.share_10 > 0


def _pcap(path: Path, times_and_sizes: list[tuple[float, int]]) -> None:
    frames = []
    for t, size in times_and_sizes:
        f = Ether() / Raw(b"x" * (size - 14))
        f.time = t
        frames.append(f)
    wrpcap(str(path), frames)


def test_a_runs_pcaps_are_read_data_from_h1_against_acks_toward_it(tmp_path: Path) -> None:
    r1 = tmp_path / "pcap" / "R1"
    r1.mkdir(parents=True)
    _pcap(r1 / "x1p1_in.pcap", [(100 + i * 1e-3, 1514) for i in range(20)] + [(110 + i * 30e-6, 1514) for i in range(8)]
          + [(100.5, 66)])
    _pcap(r1 / "x1p1_out.pcap", [(100 + i * 1.2e-3, 66) for i in range(20)] + [(110, 66)])
    data, acks = B.run_profiles(tmp_path, 20.0)
    assert data.frames == 8 and data.longest == 8 and data.share_5 == 1.0  # the second half: the burst alone
    assert acks.longest == 1


def test_a_run_without_pcaps_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert B.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tcp_bursts: {tmp_path}: no single pcap/R1/") and err.count("\n") == 1
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a pcap")
    with pytest.raises(ValueError, match="bad.pcap: not a readable pcap"):
        B.pcap_times(bad)
