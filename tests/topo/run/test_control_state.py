"""A flow's ``control`` in summary.json is its control's name for every control; what the end-to-end
cores report of themselves (TFRC, LEDBAT, GCC) is ``control_state`` beside it
(docs/reference/metrics.md, "Flows"; docs/background/e2e.md, "In the summary"). Written over
``control``, it made `hbh run` print a dict as the flow's control and `hbh sweep` of such a file
(no --controls) fail with a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hbh.cli import main as hbh_main
from topo.file.schema import load_topology_text
from topo.run.runner import format_summary, run_experiment

S = 1_000_000_000

LINE = """
name: own-view
defaults: {link: {rate: 2Mbps, delay: 10ms, buffer: 50}}
nodes: {H1: {kind: host}, R1: {kind: switch}, H2: {kind: host}, H3: {kind: host}, H4: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [H3, R1]}
  - {ends: [R1, H2]}
  - {ends: [R1, H4]}
flows:
  - {name: f1, src: H1, dst: H2, control: CONTROL}
  - {name: t1, src: H3, dst: H4, control: tcp, cc: reno}
"""


@pytest.mark.parametrize("control,key", [("ledbat", "queuing_delay_ms"), ("tfrc", "loss_event_rate"),
                                         ("gcc", "filter")])
def test_the_flows_control_is_its_name_and_its_cores_view_is_beside_it(control: str, key: str) -> None:
    text = LINE.replace("CONTROL", control)
    s = run_experiment(load_topology_text(text, "user.yaml"), 2 * S, 1, None, plots=False).summary
    f = s["flows"]["f1"]
    assert f["control"] == control and s["flows"]["t1"]["control"] == "tcp"
    assert key in f["control_state"]
    assert f"flow f1 H1->H2 ({control}): goodput" in format_summary(s)


def test_a_sweep_of_a_file_with_an_end_to_end_control_and_no_controls_finishes(tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]
                                                                                ) -> None:
    path = tmp_path / "own-view.yaml"
    path.write_text(LINE.replace("CONTROL", "ledbat"))
    out = tmp_path / "sweep"
    assert hbh_main(["sweep", str(path), "--serial", "--duration", "1s", "--out", str(out), "--no-plots",
                     "--no-progress"]) == 0
    rows = (out / "runs.csv").read_text().splitlines()
    assert len(rows) == 2 and "ledbat+tcp" in rows[1]
    (record,) = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert record["summary"]["flows"]["f1"]["control"] == "ledbat"
    capsys.readouterr()
