"""A switch's gRPC and Thrift ports: chosen where no outgoing connection is given a port, and a
switch that still loses one to another process (parallel runs probe, close, then bind) is started
again on fresh ports instead of failing the run."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

import topo.netns.network as network
from tests.paths import ROOT
from tests.switch import netns as N
from topo.file.schema import load_topology
from topo.netns.switches import SwitchProcess, SwitchSpec, _ephemeral_range, free_tcp_port, p4switch_command
from topo.run.runner import run_experiment


def test_ports_are_outside_the_kernels_ephemeral_range_and_free() -> None:
    lo, hi = _ephemeral_range()
    for _ in range(20):
        port = free_tcp_port()
        assert not lo <= port <= hi, (port, lo, hi)
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free when handed out


def _busy() -> socket.socket:
    busy = socket.socket()
    busy.bind(("127.0.0.1", free_tcp_port()))
    busy.listen()
    return busy


def test_a_switch_whose_port_was_taken_says_so(tmp_path: Path) -> None:
    with _busy() as busy:
        spec = SwitchSpec(name="R1", device_id=1, interfaces=[], grpc_port=busy.getsockname()[1],
                          thrift_port=free_tcp_port(), log_file=str(tmp_path / "R1.log"))
        proc = SwitchProcess(spec, p4switch_command(spec), ROOT)
        try:
            deadline = time.monotonic() + 60
            while proc.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.lost_port(), proc.output()
        finally:
            proc.stop()


@pytest.mark.netns
@pytest.mark.slow
def test_a_run_whose_first_port_is_taken_starts_that_switch_again(tmp_path: Path, monkeypatch) -> None:
    N.require_netns()
    with _busy() as busy:
        ports = iter([busy.getsockname()[1]])
        monkeypatch.setattr(network, "free_tcp_port", lambda: next(ports, None) or free_tcp_port())
        result = run_experiment(load_topology(ROOT / "topo/paper-1router.yaml"), 2_000_000_000, seed=1,
                                out=tmp_path, plots=False, backend="netns", pcap=False)
    assert result.summary["loss"]["data_packets_received"] > 0
    said = json.dumps(result.summary)
    assert "was taken before the switch bound it" in said, said[:2000]
