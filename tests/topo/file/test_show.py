"""``hbh show`` prints what the loader resolved, or the file's one-line error."""

from __future__ import annotations

from tests.paths import RANDOM_CASES, ROOT
from topo.file.schema import load_topology
from topo.file.show import main

TOPO = ROOT / "topo"


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


def test_show_prints_each_laws_checks_and_the_warnings_with_their_remedy(tmp_path, capsys):
    """alinea-merge-2 at the paper's rates with 1 ms links and buffers of one BDP (3 packets):
    R1's buffer has 0.9 packets of room above its target for two feeding links; R2's queue drains
    faster than its one link feeds it."""
    from topo.results.map import Cell, cell_text

    path = tmp_path / "m2.yaml"
    path.write_text(cell_text(Cell("alinea-merge-2", 1, 1, "1bdp")))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "H1 -> R1:" in out and "0.9 packets above the target for 2 feeding link(s)" in out
    assert "R1 -> R2:" in out and "drains faster than it is fed" in out
    warnings = [line for line in out.splitlines() if line.strip().startswith("warning: law ")]
    assert len(warnings) == 2 and all("a buffer of at least 7 packets would hold them" in w for w in warnings)


def test_show_prints_every_warning_hbh_run_prints(capsys):
    """report-gap-multicast: S3 -> S7 runs at its packets' gap (topo/analysis/report_gap.py), a warning
    the per-law checks do not give; ``hbh show`` prints it, and exactly the warnings ``hbh run`` prints
    for a run of the same length (check.py's ``warnings``)."""
    from topo.analysis.check import warnings

    path = RANDOM_CASES / "report-gap-multicast.yaml"
    assert main([str(path)]) == 0
    shown = [
        line.strip().removeprefix("warning: ")
        for line in capsys.readouterr().out.splitlines()
        if line.strip().startswith("warning: ")
    ]
    assert any(w.startswith("law S3->S7") and "reports on arrivals" in w for w in shown), shown
    assert shown == warnings(load_topology(path), 60.0)
