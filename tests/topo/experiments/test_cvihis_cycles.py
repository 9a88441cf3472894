"""The cycle trace of one RTM-against-reno cell (tests/topo/cvihis_cycles.py): its table and its refusals."""

from __future__ import annotations

import pytest

from tests.topo import cvihis_cycles


def test_cycles_follow_renos_losses(capsys):
    assert cvihis_cycles.main(["--cell", "4.5/200", "--start", "half", "--seconds", "12"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines[2:] if line.startswith("| ")]
    assert rows, "reno loses a packet within 12 s at 4.5 Mb/s: at least one cycle"
    starts = [float(r.split("|")[1].split("-")[0]) for r in rows]
    assert starts == sorted(starts) and all(r.count("|") == 9 for r in rows)
    assert any(line.startswith("second half (6-12 s): RTM ") for line in lines)


def test_cycles_areas_count_every_decision():
    cycles, (rtm, tcp) = cvihis_cycles.trace("4.5Mbps", "98ms", "2.25Mbps", 1, 12.0, 20_000_000)
    assert rtm > 0 and tcp > 0
    for before, after in zip(cycles, cycles[1:]):
        assert (
            before.end_s == after.start_s and before.hist == after.hist0
        )  # no decision falls between two cycles


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--cell", "5/200"], "5/200 not on the grid"),
        (["--start", "twice"], "--start twice"),
        (["--seconds", "0"], "must be > 0"),
    ],
)
def test_cycles_refuse_bad_arguments(capsys, argv, says):
    with pytest.raises(SystemExit) as exc:
        cvihis_cycles.main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err
