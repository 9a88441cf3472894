"""``python -m topo.show`` prints what the loader resolved, or the file's one-line error."""

from __future__ import annotations

from pathlib import Path

from topo.schema import load_topology
from topo.show import main

TOPO = Path(__file__).resolve().parents[2] / "topo"


def test_show_prints_every_law_port_and_event(capsys):
    path = TOPO / "capacity-drop.yaml"
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    t = load_topology(path)
    laws = [line for line in out.splitlines() if " -> " in line and "o_min" in line]
    ports = [line for line in out.splitlines() if "capacity" in line and "<-" in line]
    assert len(laws) == len(t.law) and len(ports) == len(t.ports) + len(t.host_buffers)
    assert "R5 -> H2: o_min 0.15, o_max 0.95" in out
    assert "30s: link R3 -- R4 rate 1Mbps" in out
    assert "H2: host, id 7, 10.0.7.1 02:00:00:01:07:00" in out


def test_show_reports_a_broken_file_on_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  S1: {kind: switch}\nlinks: []\nflows: {}\n")
    assert main([str(bad), str(TOPO / "paper-1router.yaml")]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"{bad}:4: flows: expected a list, got a mapping\n"
    assert "paper-1router" in captured.out
