"""report.md's first paragraph names the windows as docs/reference/metrics.md ("Windows") defines
them: after a capacity drop the flows and the bottleneck are measured from the drop on, not over
the run's second half (capacity-drop at 40 s: 30-40 s), and a flow that starts or ends inside the
run over its own lifetime."""

from __future__ import annotations

from pathlib import Path

from topo.experiments.compare_report import write_report


def test_the_report_says_the_run_window_starts_at_the_last_link_event(tmp_path: Path) -> None:
    path = write_report(tmp_path / "report.md", "t", (), (1,), 40_000_000_000, {}, {},
                        "hbh compare t.yaml")
    first = path.read_text().split("\n\n")[1]
    assert "from its last link-rate event on" in first
    assert "own lifetime when it starts or ends inside the run" in first
    assert "utilisation over the second half" not in first
