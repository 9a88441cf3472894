"""`hbh hol` says what the loop analysis said before its hop-by-hop runs, as `hbh run` does, and
names a run that dropped packets in the switches unwarned (issue 46: the 6-leaf, 3-spine fabric's
per-port ALINEA run dropped packets, and nothing in the output said whether that was expected)."""

from __future__ import annotations

import pytest

from topo.analysis.cache import cached_warnings
from topo.experiments import hol
from topo.experiments.hol import HolSetup, analysis_lines, hol_topology, run_hol

SHORT = HolSetup(incast_start_s=0.5, seconds=1.5)


def test_a_hop_by_hop_result_carries_the_analysis_of_its_incast_run() -> None:
    r = run_hol(SHORT, "alinea")
    expected = cached_warnings(hol_topology(SHORT, "alinea", True), SHORT.seconds, seed=1, backend="sim")[0]
    assert r["analysis_warnings"] == expected
    assert "analysis_warnings" not in run_hol(SHORT, "none")  # no law: nothing to analyse


def test_unwarned_switch_drops_are_said_and_warnings_printed() -> None:
    quiet = {"control": "alinea", "switch_drops": 181, "analysis_warnings": []}
    warned = {"control": "alinea-classes", "switch_drops": 22, "analysis_warnings": ["law leaf1->spine1: ..."]}
    clean = {"control": "alinea", "switch_drops": 0, "analysis_warnings": []}
    end_to_end = {"control": "none", "switch_drops": 4590}
    lines = analysis_lines([quiet, warned, clean, end_to_end])
    assert lines == ["alinea: 181 packets dropped in the switches with the incast, and the loop analysis did "
                     "not warn (docs/background/analysis.md)",
                     "warning: alinea-classes: law leaf1->spine1: ..."]


def test_the_command_prints_them_on_stderr(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(hol, "run_hol", lambda setup, c, *a: {"control": c, "switch_drops": 3, "analysis_warnings": []})
    assert hol.main(["--controls", "alinea"]) == 0
    assert "hbh hol: alinea: 3 packets dropped in the switches" in capsys.readouterr().err
