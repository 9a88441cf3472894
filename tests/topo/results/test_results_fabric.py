"""The fabric section's helpers, and the splice of sections into docs/results.md (--only)."""

from __future__ import annotations

from topo.results.fabric import HEADING, ci
from topo.results.splice import splice_sections as splice


def test_splice_replaces_only_the_fabric_section_or_appends_it():
    doc = f"# R\n\n## A\n\na\n\n{HEADING}\n\nold\n\n### Sub\n\nold too\n\n## Z\n\nz\n"
    out = splice(doc, [HEADING, "", "new", ""])
    assert "old" not in out and "new" in out
    assert out.index("## A") < out.index(HEADING) < out.index("## Z") and out.endswith("z\n")
    appended = splice("# R\n\n## A\n\na\n", [HEADING, "", "new", ""])
    assert appended.startswith("# R\n\n## A\n\na\n") and appended.rstrip().endswith("new")
    assert splice(appended, [HEADING, "", "newer", ""]).count(HEADING) == 1


def test_a_generator_with_several_sections_replaces_each_of_them():
    doc = "# R\n\n## A\n\na\n\n## B\n\nb\n\n## C\n\nc\n"
    out = splice(doc, ["## C", "", "c2", "", "## A", "", "a2", ""])
    assert out == "# R\n\n## A\n\na2\n\n## B\n\nb\n\n## C\n\nc2\n"


def test_ci_is_the_mean_with_a_t_interval_that_narrows_with_agreement():
    assert ci([2.0]) == "2.00"
    wide, narrow = ci([1.0, 3.0, 5.0]), ci([2.9, 3.0, 3.1])
    assert wide.startswith("3.00 ± ") and narrow.startswith("3.00 ± ")
    assert float(narrow.split("± ")[1]) < float(wide.split("± ")[1])


def test_hol_only_needs_a_fabric_section_to_update(tmp_path, capsys):
    from topo.results.fabric import main

    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\n## Other\n")
    assert main(["--doc", str(doc), "--hol-only"]) == 2
    assert "no fabric section" in capsys.readouterr().err and doc.read_text() == "# Results\n\n## Other\n"


def test_the_slowdown_figures_legend_covers_no_panel(tmp_path, monkeypatch):
    """The legend sat inside the 70 % panel, over its p99 lines (issue 46): it goes below the panels."""
    import types

    import matplotlib.pyplot as plt

    from topo.experiments.fabric import FABRIC_CONTROLS
    from topo.results import fabric
    from topo.run.fct import FctRow

    rows = [FctRow(f"f{i}", "a", "b", 10 ** (1 + i % 5), 0, 10 ** (6 + i % 3), 10 ** 5) for i in range(40)]
    runs = {(c, load): [types.SimpleNamespace(rows=rows)] for c in FABRIC_CONTROLS for load in fabric.LOADS}
    drawn = []
    monkeypatch.setattr(plt, "close", drawn.append)
    fabric.slowdown_figure(runs, tmp_path / "slowdown.png")
    (fig,) = drawn
    renderer = fig.canvas.get_renderer()
    legends = fig.legends + [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    assert len(legends) == 1
    box = legends[0].get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    plt.close(fig)
