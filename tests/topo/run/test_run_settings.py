"""`hbh run FILE --set ...` says which variant of the file it ran: the lines are recorded in
summary.json (``settings``) and printed on the run's first line, so that a result made from a
one-off change is not read as the file's (docs/reference/metrics.md, "The run itself")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hbh.cli import main as hbh_main
from tests.paths import TOPO

SETS = ["link[R1-H2].rate=1Mbps", "alinea.o_max=0.6"]


def run(tmp_path: Path, sets: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    out = tmp_path / ("variant" if sets else "file")
    args = ["run", str(TOPO / "paper-1router.yaml"), "--duration", "1s", "--out", str(out), "--no-plots",
            "--no-progress", "--no-analysis"]
    for line in sets:
        args += ["--set", line]
    assert hbh_main(args) == 0
    return json.loads((out / "summary.json").read_text()), capsys.readouterr().out


def test_a_run_with_set_lines_records_and_prints_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary, printed = run(tmp_path, SETS, capsys)
    assert summary["settings"] == SETS
    assert summary["buffers"]["R1<-H1"]["target"] == pytest.approx(0.6)  # and they were applied
    first = printed.splitlines()[0]
    assert all(f"--set {line}" in first for line in SETS), first


def test_a_run_of_the_file_as_written_has_no_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary, printed = run(tmp_path, [], capsys)
    assert "settings" not in summary and "--set" not in printed.splitlines()[0]
