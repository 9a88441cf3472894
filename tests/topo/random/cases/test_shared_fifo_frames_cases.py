"""A random topology that lost packets, unwarned, where two hosts' flows of different frame sizes share a
switch's egress FIFO (issue 46). The file's first lines hold its run length and the problem the judge reported
(found by ``make fuzz-topo``, seed 8, fail-1 and fail-2; minimised)."""

from __future__ import annotations

import pytest

from tests.topo.randomcheck import judge_case


def test_small_frames_held_in_a_fifo_another_host_keeps_backlogged_are_warned() -> None:
    """H2 sends f3 (200 B, to H4) and f5 (1448 B, to H5) equally in bits. f3 waits in S1's FIFO toward H4 behind
    H3's f1 and f4 (1500 and 1000 B), which H3's law keeps backlogged; f5 passes through the idle FIFO toward
    H5. So S1's 22-packet buffer from H2 holds f3's small packets, and once f4 joins (1.2 s) it fills with H2's law
    at or near its floor: packets lost from 1.4 s. The laws-together model counted that buffer in the mean frame
    of H2's flows (351 B), 1.75 times too few packets, peaked at 85 % and did not warn; it now counts each flow's
    fluid as that flow's packets (topo/analysis/fluid_network.py, ``_Network._weight``) and warns H2's law."""
    verdict = judge_case("small-frames-shared-fifo.yaml")
    assert verdict.problems == []
    assert verdict.lost > 0, "the case no longer loses packets: it tests the warning of nothing"
    assert any(w.startswith("law H2->S1") for w in verdict.warned), verdict.warned


@pytest.mark.xfail(strict=True, reason="17 lost at seed 1 with no warning; seeds 2-3 warn the shared FIFO toward H5 "
                   "(open: why the analysis's verdict depends on the seed here)")
def test_a_merge_into_a_fifo_another_host_backlogs_is_warned_at_every_seed() -> None:
    """open-seed-start-shared-fifo-merge.yaml (make fuzz-topo seed 109, issue 46): H1 (1500 B, 1 Mb/s cap) and H4
    (1448 B, 500 Mb/s) both start at 1.2 s toward H5 behind S3's 10 Mb/s FIFO; H1's packets cross S1 -> S2 -> S3.
    At seeds 2 and 3 the loop analysis warns laws S1->S2 and S2->S3 (their drain is a share of that FIFO, which H4
    keeps backlogged by itself); at seed 1 it warns nothing, and 17 packets are lost."""
    verdict = judge_case("open-seed-start-shared-fifo-merge.yaml", seed=1)
    assert verdict.problems == []
