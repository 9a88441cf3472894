"""docs/results.md's section "Hop-by-hop ALINEA against the end-to-end controls" (topo/results/e2e.py,
``hbh results --only e2e``) on short runs: one spliceable section, a ``### `` per
topology with a column for every control, a refused control kept as a column and said why in one
line, and a figure per topology written and linked."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo.results.e2e import CONTROLS, HEADING, NOT_RUN, results_section
from topo.results.splice import splice_sections


def _header(lines: list[str], topology: str) -> list[str]:
    """The columns of the metrics table under ``### topology``."""
    start = lines.index(f"### {topology}")
    row = next(line for line in lines[start:] if line.startswith("| metric |"))
    return [c.strip() for c in row.strip("|").split("|")][1:]


def _row(lines: list[str], topology: str, label: str) -> list[str]:
    start = lines.index(f"### {topology}")
    row = next(line for line in lines[start:] if line.startswith(f"| {label} |"))
    return [c.strip() for c in row.strip("|").split("|")][1:]


@pytest.mark.slow
def test_section_has_a_column_per_control_and_a_figure_per_topology(tmp_path: Path) -> None:
    """Every unicast control on both topologies (1 s runs, one seed: the cells' form, not their values):
    one ``## `` section that splices into a document once; each topology's table has a column per
    control, in order, every one with a delay and a utilisation cell (all ran); each figure exists and
    is linked relative to the doc."""
    doc_dir = tmp_path / "docs"
    figures = doc_dir / "figures"
    lines = results_section(tmp_path / "raw", figures, doc_dir, seeds="1", duration="1s")
    assert lines[0] == HEADING and sum(line.startswith("## ") for line in lines) == 1
    assert f"--controls {','.join(CONTROLS)}" in lines[2]
    for topology in ("paper-5router", "capacity-drop"):
        assert _header(lines, topology) == list(CONTROLS)
        for label in (
            "OWD p50 (ms)",
            "bottleneck utilisation",
            "loss at the receivers' playout buffers (packets)",
        ):
            cells = _row(lines, topology, label)
            assert len(cells) == len(CONTROLS) and NOT_RUN not in cells, (label, cells)
            assert all(c[0].isdigit() for c in cells), (label, cells)
        png = figures / f"e2e-{topology}.png"
        assert png.stat().st_size > 0
        assert f"](figures/{png.name})" in "\n".join(lines)
    doc = splice_sections("# results\n\n## Other\n\ntext\n", lines)
    assert doc.count(HEADING) == 1 and "## Other" in doc
    assert splice_sections(doc, lines) == doc  # regenerating replaces the section in place


@pytest.mark.slow
def test_a_control_the_simulator_refuses_keeps_its_column_and_says_why(tmp_path: Path) -> None:
    """tcp-bbr runs in netns only: its column stays, each of its cells says it did not run, and one line
    under the table says why (the loader's own message); the control that ran fills its column."""
    lines = results_section(
        tmp_path / "raw",
        tmp_path / "fig",
        tmp_path,
        seeds="1",
        duration="1s",
        topologies=("paper-5router",),
        controls=("alinea", "tcp-bbr"),
    )
    assert _header(lines, "paper-5router") == ["alinea", "tcp-bbr"]
    alinea, bbr = zip(*(_row(lines, "paper-5router", label) for label in ("OWD p50 (ms)", "loss (packets)")))
    assert set(bbr) == {NOT_RUN} and NOT_RUN not in alinea
    why = [line for line in lines if line.startswith("tcp-bbr: ")]
    assert len(why) == 1 and "refused" in why[0] and "netns" in why[0]
    assert not any(NOT_RUN in line for line in lines if line.startswith("Not in the table"))
