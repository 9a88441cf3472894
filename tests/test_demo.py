"""The demo's one-router run: properties of what the data plane measures and enforces."""

from __future__ import annotations

from hbh.cli import main
from hbh.demo import MS, Scenario, run


def test_occupancy_climbs_to_capacity_then_admission_drops_and_nothing_is_lost_silently() -> None:
    sc = Scenario(duration_ms=3500)
    r = run(sc)
    occ = [rep.occupancy for _, rep in r.reports]
    assert max(occ) == sc.capacity_pkts and all(0 <= o <= sc.capacity_pkts for o in occ)
    first_drop = next(i for i, (_, rep) in enumerate(r.reports) if rep.drops)
    assert sc.capacity_pkts in occ[:first_drop + 1]
    drops = sum(rep.drops for _, rep in r.reports)
    in_flight = r.sent - len(r.delivered) - drops
    assert 0 <= in_flight <= sc.capacity_pkts  # every frame is delivered, reported dropped or still queued
    assert [rep.seq for _, rep in r.reports] == list(range(1, len(r.reports) + 1))
    spacing = [b - a for (a, _), (b, _) in zip(r.reports, r.reports[1:])]
    assert min(spacing) >= sc.report_interval_ms * MS - 1 * MS  # at most one report per interval


def test_demo_command_prints_the_summary(tmp_path, capsys) -> None:
    assert main(["demo", "--duration-ms", "300", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "reports" in out and (tmp_path / "reports.csv").read_text().startswith("t_ms_at_h1,seq")
