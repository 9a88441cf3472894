"""The Wireshark dissectors on the pcaps a short netns run writes (paper-1router, 3 s): every
ALINEA report tshark decodes from a switch port's capture is the report a law applied, i.e. its
occupancy, capacity and drops equal laws.csv's row for it (rows of the regulated node toward the
reporter, in order; an agent may apply a law again without a new report, so rows may be skipped,
and the last reports of a direction may reach their agent after the run's recorder stopped); and
every datagram on the data port decodes as the project's datagram.

Needs root and network namespaces, and Debian's tshark (skipped with the reason otherwise).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.switch import netns as N
from topo.file.schema import load_topology
from topo.netns.plumbing import clean
from topo.run.runner import run_experiment

pytestmark = [pytest.mark.netns, pytest.mark.slow]

WS = ROOT / "wireshark"
LATE_REPORTS = 2  # reports leave every interval (>= 100 ms here); the run's end cuts at most this many


def _tshark(pcap: Path, display: str, fields: list[str], home: Path) -> list[list[str]]:
    tshark = shutil.which("tshark")
    assert tshark is not None
    argv = [tshark, "-n", "-r", str(pcap), "-X", f"lua_script:{WS / 'hbh_alinea.lua'}", "-X",
            f"lua_script:{WS / 'hbh_datagram.lua'}", "-Y", display, "-T", "fields", "-E", "separator=,",
            *[a for f in fields for a in ("-e", f)]]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [line.split(",") for line in proc.stdout.split()]


def test_reports_in_a_netns_runs_pcaps_are_the_laws_rows(tmp_path: Path) -> None:
    if shutil.which("tshark") is None:
        pytest.skip("Debian's tshark is not installed (apt-get install tshark)")
    N.require_netns()
    out = tmp_path / "run"
    topo = load_topology(ROOT / "topo" / "paper-1router.yaml")
    try:
        run_experiment(topo, 3_000_000_000, seed=1, out=out, plots=False, backend="netns")
    finally:
        net = json.loads((out / "network.json").read_text()) if (out / "network.json").exists() else {}
        if net.get("prefix"):
            clean(net["prefix"])
    laws = list(csv.DictReader((out / "laws.csv").open()))
    checked = 0
    for sw, info in net["switches"].items():
        for port, iface in info["interfaces"].items():
            neighbour = info["neighbours"][port]
            for direction in ("in", "out"):
                pcap = Path(info["pcap_dir"]) / f"{iface}_{direction}.pcap"
                reports = _tshark(pcap, "alinea", ["alinea.occupancy", "alinea.capacity", "alinea.drops",
                                                   "alinea.seq"], tmp_path)
                node, toward = (neighbour, sw) if direction == "out" else (sw, neighbour)
                rows = [(int(r["occupancy_pkts"]), int(r["capacity_pkts"]), int(r["drops"]), r["fraction"])
                        for r in laws if r["node"] == node and r["toward"] == toward]
                matched = _match(reports, rows)
                assert matched >= len(reports) - LATE_REPORTS, (sw, port, direction, matched, len(reports))
                assert [int(r[3]) for r in reports] == list(range(1, len(reports) + 1))  # none lost, in order
                checked += matched
                data = _tshark(pcap, "udp.port == 5001", ["hbh.magic", "hbh.version"], tmp_path)
                assert all(d == ["0x4842", "1"] for d in data), data[:3]
    assert checked > 0, "no report reached a law"


def _match(reports: list[list[str]], rows: list[tuple[int, int, int, str]]) -> int:
    """How many reports, in order, find their row (equal fields, later than the previous one's)."""
    i = 0
    for n, (occ, cap, drops, _seq) in enumerate(reports):
        want = (int(occ), int(cap), int(drops))
        while i < len(rows) and rows[i][:3] != want:
            i += 1
        if i == len(rows):
            return n
        assert rows[i][3] == f"{want[0] / want[1]:.4f}"
        i += 1
    return len(reports)
