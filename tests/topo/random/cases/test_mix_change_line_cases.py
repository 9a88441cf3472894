"""A random topology that lost packets, unwarned, found by ``make fuzz-topo`` seed 11 (``--alinea-only``, count
1000): a strict xfail until a start-up brake's cut on lower bounds of the drain was undone at the brake's pace
(controlplane/alinea.py, ``AlineaLaw.braked_from``). Its premise, a frame mix that changes faster than the frame
window (controlplane/frame_size.py), is not fixed: the file no longer reaches it. The file's first lines hold its
run length and the problem the judge reported when it was found."""

from __future__ import annotations

from tests.topo.randomcheck import judge_case


def test_a_mix_that_grows_as_a_large_frame_flow_starts_loses_nothing() -> None:
    """H1 sends f1 and f3 (576 B) and f2 (1448 B, from 0.15 s) through S1 -> S2 (50 Mb/s; S2's buffer from S1 holds
    5 packets). S2's brake cut S2 -> S3 at 0.198 s from 100 to 40.8 Mb/s, S3's buffer holding 2 packets after reports
    that found it starved, and the law's step climbed back 0.2 Mb/s a report: S1 -> S2 and S2 -> S3 carried 47.1/45.5
    and 47.0/45.0 Mb/s over 0.2-0.3/0.3-0.4 s, under their 50 Mb/s, while the frames grew faster than the frame
    window follows; S1's law, in its ramp, capped at a lagging drain, let S2's buffer fill: 11 of f1's frames lost at
    0.31-0.41 s (seed 1). Now S2 -> S3 goes back toward its R_max at the reports that find S3's buffer starved
    (42.9, then 45.4 Mb/s by 0.22 s), both links carry 48.8/50.0 Mb/s and nothing is lost."""
    verdict = judge_case("mix-change-line.yaml")
    assert verdict.problems == []
    assert verdict.lost == 0
