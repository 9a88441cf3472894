"""``hbh rtm-kernel``: bad input in one line (exit 2); it runs the grid's own cell and reads it as ``hbh
results-tcp --grid`` does; a window of a longer run is the shorter run's; stored kernel runs tabulate
without running anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topo.results import rtm_kernel as K
from topo.results import tcp as R
from topo.run.runner import run_experiment

SPEC = K.Spec("2Mbps", 20, "8ms", "half", 1)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cells", "9/9"], "9/9 not on the grid"),
        (["--windows", "40,300", "--seconds", "240"], "each at most --seconds 240"),
        (["--windows", "forty"], "not a comma list of numbers"),
        (["--starts", "soon"], "use one or more of"),
        (["--backends", "carrier"], "unknown carrier"),
        (["--seeds", "x-3"], "not N or N-M"),
        (["--reading", "published"], "--reading published: not one of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args: list[str], needle: str) -> None:
    assert K.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_missing_stored_kernel_runs_are_named(capsys, tmp_path: Path) -> None:
    assert K.main(["--kernel-from", str(tmp_path), "--cells", "2/20", "--starts", "half"]) == 2
    err = capsys.readouterr().err.strip()
    assert SPEC.name(240) + ".json" in err and "\n" not in err


def test_the_cell_is_the_grids_and_read_as_the_grid_reads_it(tmp_path: Path) -> None:
    run_experiment(SPEC.topology(), 10 * K.S, seed=1, out=tmp_path, plots=False)
    got = K.measure(tmp_path, SPEC.rate_bps, [10])["10"]
    rtm, tcp = R.rtm_cell("2Mbps", "8ms", "reno", seconds=10, start=R.start_rate("half", "2Mbps"))
    assert (got["rtm_bps"], got["tcp_bps"]) == (rtm, tcp)
    assert got["ratio"] == max(rtm, tcp) / min(rtm, tcp)
    assert 0 <= got["fifo_empty"] <= 1 and got["utilisation"] > 0


def test_a_window_of_a_longer_run_is_the_shorter_run(tmp_path: Path) -> None:
    """Why one long run can stand for the grid's short one (the simulator's side: bit for bit)."""
    for seconds in (6, 12):
        run_experiment(SPEC.topology(), seconds * K.S, seed=1, out=tmp_path / str(seconds), plots=False)
    short = K.measure(tmp_path / "6", SPEC.rate_bps, [6])
    long = K.measure(tmp_path / "12", SPEC.rate_bps, [6, 12])
    assert short["6"] == long["6"]


def test_stored_kernel_runs_tabulate_without_running(capsys, tmp_path: Path, monkeypatch) -> None:
    window = {
        "rtm_bps": 1.5e6,
        "tcp_bps": 0.5e6,
        "ratio": 3.0,
        "rtm_share": 0.75,
        "utilisation": 1.0,
        "fifo_empty": 0.25,
        "reductions": 2,
        "reno_peak": 40.0,
    }
    record = {
        "windows": {"40": window, "240": window},
        "realtime": {"verdict": "yes", "cores": 0.3},
        "load_before": [1.0, 1.0, 1.0],
        "load_after": [2.0, 1.0, 1.0],
        "reading": SPEC.variant,
    }
    (tmp_path / f"{SPEC.name(240)}.json").write_text(json.dumps(record))
    monkeypatch.setattr(K, "run_experiment", lambda *a, **k: pytest.fail("ran something"))
    assert (
        K.main(["--kernel-from", str(tmp_path), "--cells", "2/20", "--starts", "half", "--backends", "netns"])
        == 0
    )
    out = capsys.readouterr().out
    assert "75 % (x3.00)" in out and "1.0 -> 2.0, 0.30 cores, kept up" in out


def test_a_stored_run_of_another_reading_is_refused(capsys, tmp_path: Path) -> None:
    """A run stored before runs recorded their reading was made with ``reprobe-slow`` (the default then): paired
    with the default's simulator side it would compare two readings, so it is refused unless ``--reading`` names
    it."""
    (tmp_path / f"{SPEC.name(240)}.json").write_text(json.dumps({"windows": {}}))
    args = ["--kernel-from", str(tmp_path), "--cells", "2/20", "--starts", "half", "--backends", "netns"]
    assert K.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert f"a run of reprobe-slow, not of {SPEC.variant}" in err and "\n" not in err
    assert K.Spec("2Mbps", 20, "8ms", "half", 1, "reprobe-slow").variant == K.STORED_BEFORE_READING
