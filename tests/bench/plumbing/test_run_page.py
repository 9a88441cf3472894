"""The bench page's plumbing: a partial run (``--only``) replaces its sections and keeps the others.

The figures belong to ``make bench``; these tests check that re-measuring some parts never loses
another part's rows, that every section says when and by which command it was measured, and that
a part name that does not exist is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import run


def _report(rows: dict[str, list[tuple[str, str]]]) -> run.Report:
    rep = run.Report()
    for section, items in rows.items():
        for what, value in items:
            rep.add(section, what, value)
    return rep


def test_a_partial_run_keeps_the_other_sections_and_their_stamps(tmp_path: Path) -> None:
    out = tmp_path / "performance.md"
    run.write(_report({"alpha": [("a", "1")], "beta": [("b", "2")],
                       run.TIMES: [("alpha", "1.0 min"), ("beta", "2.0 min"), ("total", "3.0 min")]}),
              out, "full", 1)
    run.write(_report({"beta": [("b", "5")], run.TIMES: [("beta", "0.5 min"), ("total", "0.5 min")]}),
              out, "partial", 1, partial=True)
    page = out.read_text()
    assert "| a | 1 |" in page and "| b | 5 |" in page and "| b | 2 |" not in page
    alpha, beta = page.index("## alpha"), page.index("## beta")
    assert "by `full`" in page[alpha:beta] and "by `partial`" in page[beta:page.index("## " + run.TIMES)]
    times = page[page.index("## " + run.TIMES):]
    assert "| alpha | 1.0 min |" in times and "| beta | 0.5 min |" in times and "| total | 1.5 min |" in times
    assert page.rstrip().endswith(run.FOOTER[-2])


def test_a_new_section_lands_after_the_one_measured_before_it(tmp_path: Path) -> None:
    out = tmp_path / "performance.md"
    run.write(_report({"alpha": [("a", "1")], "omega": [("z", "9")], run.TIMES: [("total", "1.0 min")]}), out, "full", 1)
    run.write(_report({"alpha": [("a", "2")], "beta": [("b", "3")], run.TIMES: [("total", "0.1 min")]}), out,
              "partial", 1, partial=True)
    heads = [line for line in out.read_text().splitlines() if line.startswith("## ")]
    assert heads == ["## alpha", "## beta", "## omega", "## " + run.TIMES]


def test_an_unknown_part_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run.main(["--only", "sim,warp", "--out", "/dev/null"])
    assert "unknown part(s) warp" in capsys.readouterr().err
