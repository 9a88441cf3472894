"""``hbh results-reaction``: capacity-drop's reaction over the drop's cycle, per control latency."""

from __future__ import annotations

import pytest

from topo.results.reaction import main


def test_bad_latencies_and_steps_are_refused_with_their_name(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, needle in ((["--latencies", "5xs"], "--latencies: unknown time unit"),
                         (["--step-ms", "0"], "--step-ms must be in 1..40")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert needle in capsys.readouterr().err


@pytest.mark.slow
def test_the_table_has_a_row_per_latency_with_every_phase_within_three_intervals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--latencies", "0.5ms", "--step-ms", "20"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0.5ms")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[-1] == "0 of 2", rows  # the newest drain: within 3 report intervals at both phases
    assert 0 < float(cells[1]) <= float(cells[3]) <= 3
