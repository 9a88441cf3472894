"""``hbh run TOPO --set ...``: the sweep's grammar on one run (a point with one value per setting)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hbh.cli import main
from topo.file.overrides import topology_with
from topo.file.points import point_topology
from topo.sweep.run import plan_sweep

ROOT = Path(__file__).resolve().parents[2]
TOPO = str(ROOT / "topo" / "paper-1router.yaml")

SETS = [["alinea.o_max=0.7"], ["link[R1-H2].rate=1Mbps", "alinea[node=R1].interval=5ms"], ["flow[f1].start=1s"],
        ["node[H2].playout=1.5Mbps"], []]


@pytest.mark.parametrize("sets", SETS)
def test_run_resolves_a_set_as_the_sweep_does(sets: list[str]) -> None:
    sweep = plan_sweep(TOPO, sets, None, "1", "1s")
    (point,) = sweep.points
    assert topology_with(TOPO, sets) == point_topology(sweep.base, point)


def test_run_with_a_set_runs_the_changed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", TOPO, "--set", "alinea.o_max=0.7", "--duration", "2s", "--no-plots", "--no-progress",
                 "--out", str(out)]) == 0
    targets = {b["target"] for b in json.loads((out / "summary.json").read_text())["buffers"].values()}
    plain = {law.o_max for law in topology_with(TOPO, []).law.values()}
    assert targets == {0.7} and 0.7 not in plain


@pytest.mark.parametrize(("text", "needle"), [
    ("alinea.o_max=1.5", "--set alinea.o_max=1.5: alinea"),
    ("alinea.o_max=0.7,0.8", "one value per setting"),
    ("alinea.omax=0.7", "unknown parameter alinea.omax"),
    ("link[R1-H9].rate=1Mbps", "link[R1-H9] does not name two nodes"),
    ("nonsense", "expected TARGET.KEY="),
])
def test_a_bad_set_is_one_line_and_nothing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                needle: str) -> None:
    out = tmp_path / "never"
    assert main(["run", TOPO, "--set", text, "--duration", "1s", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hbh run: ") and needle in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
