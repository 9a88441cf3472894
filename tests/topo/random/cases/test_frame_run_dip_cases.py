"""Random topologies that lost packets, unwarned, where frames of mixed sizes made a count of packets dip (issue 46):
a switch's backlog left as a run of large frames and then a run of small ones into the next switch, whose queue rate
in packets/s follows the mean frame it sent (a strict xfail as open-small-frame-run-dip.yaml until the start-up
brake's drain over the newest report gap; found by ``make fuzz-topo``, seed 9, fail-2 and fail-3; minimised; warned by topo/analysis/frame_run.py); and a
drain counted in packets that dipped over one report gap (starved-drain-dip-tree.yaml), and an exact drain that fell
slowly across its window (slow-drain-creep-tree.yaml); and trains of small frames behind a large one, at a switch's
exit no law paces (small-frame-train-buffer.yaml) and at a receiver's playout (receiver-frame-train.yaml). And an exit that idles as mixed
frames cross a buffer held at less than one large frame, behind a long loop (mixed-frame-exit-shortfall-long-link.yaml,
warned by topo/analysis/exit_idle.py). The files' first lines hold their run length and the problem the judge
reported."""

from __future__ import annotations

import pytest

from tests.topo.randomcheck import judge_case


def test_a_run_of_small_frames_after_large_ones_at_the_next_switch_is_warned() -> None:
    """What the traces showed: S1 held a backlog of f3's 1500 B frames (from H2) and f2's 200 B ones (from H1),
    100-400 ms old, and emptied it toward S3 over its 5 Mb/s link in arrival order: pairs every 2.7 ms to 0.658 s,
    then f2's alone at 0.32 ms. S3's law toward S2 ran at its R_max, its queue rate in packets/s at the mean frame
    S3 had sent (about 530 B: 1183 pps), so f2's 200 B frames left S3 at 1.89 Mb/s of the 5 coming in, and S3's
    9-packet buffer from S1 filled: 8 lost at 0.666-0.669 s (seed 1), which no stretch of floor_check and no fluid
    model saw. The backlog itself was the start-up brake's: at 0.073 s S1's agent read 4 of S3's 8 frames, the
    drain not yet measured (0), and cut S1 -> S3 from 5 Mb/s to its floor (0.1 Mb/s); stamped on S1's queue, the
    cut froze the link (88 kb/s carried over 0.1-0.5 s). With the drain over the newest report gap as the brake's
    drain while the window holds a starved report (controlplane/forecast.py, ``QueueForecast.law_forecast``) the
    cut is to 0.85 Mb/s, the link carries 3.5 Mb/s over 0.1-0.5 s, no backlog forms and nothing is lost. The mix
    turning within a FIFO at the next switch (the premise) stayed: with the starved report's forecast (0008d09) S1 ->
    S3 runs at its 5 Mb/s link from 0.3 s, S1's backlog reaches S3 as runs of 200 B frames, S3's 7-packet buffer from
    S1 swings 1-7 every ~10 ms and loses 1 at seed 1 (/root/logs/starve2/NOTE.md). The loop analysis warns S1 -> S3:
    a run of S1's small frames as long as S1's buffers from their links hold, at its link, gains more packets in S3's
    buffer from S1 than its room above the target (topo/analysis/frame_run.py)."""
    verdict = judge_case("small-frame-run-dip.yaml")
    assert verdict.problems == []
    assert any(w.startswith("law S1->S3") and "run of" in w for w in verdict.warned)


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_a_dip_of_a_drain_that_is_this_hops_own_sending_cuts_nothing(seed: int) -> None:
    """starved-drain-dip-tree.yaml (make fuzz-topo seed 3, fail-2, shrunk): flows of 1448, 576 and 200 B from H1
    and H2 through S5 -> S2 -> S1 to H3 and H4, 50 Mb/s links. S1's 29-packet buffer from S2 drained everything S2
    sent (S1's ports toward the hosts are not regulated), at 1-5 packets. S2's agent read the exact drain of one
    report gap of 23 departures where 27 were usual (the frame mix: one 1448 B packet is 7.7 Mb/s of a 1.6 ms gap)
    as a fall, and its ramp's brake cut from 44.4 to 39.3 Mb/s at 0.957 s; the buffer still drained all S2 sent, so
    the next dip was S2's own cut read back (35.7 Mb/s), and the ramp climbed back 0.6 Mb/s a report while S5 sent
    44 Mb/s into S2's 66-packet buffer: 43 lost (seed 1; 221 at seed 2, 11 at seed 4, when found). While the drain's
    window holds a report that found the buffer starved and the buffer holds no more than a gap brought, its drain
    is what this hop sent, and the brake keeps the window's drain over a dip of it (controlplane/forecast.py,
    ``QueueForecast._lower_bound_pps``; tests/controlplane/test_starved_drain_fall.py)."""
    verdict = judge_case("starved-drain-dip-tree.yaml", seed=seed)
    assert verdict.problems == []
    assert verdict.lost == 0


@pytest.mark.parametrize("seed", [1, 2])
def test_a_train_of_small_frames_behind_a_large_one_is_warned(seed: int) -> None:
    """small-frame-train-buffer.yaml (make fuzz-topo seed 3, fail-4, shrunk; fail-3 is it with f1 starting at
    0.2 s): S1's buffer from S2 is 5 packets (1 ms at 50 Mb/s in 1448 B frames), and S1's exit toward H3, which
    sends no reports, is served at its link's rate. f3's 200 B frames that waited behind f4's first 1448 B frame
    arrived 32 µs apart while it left S1 (232 µs): 5 held, the 6th and 7th lost (2 at seed 1, the reports before
    and after reading 1 packet), at any rate in bits the laws set. The loop analysis warns it
    (topo/analysis/frame_train.py)."""
    verdict = judge_case("small-frame-train-buffer.yaml", seed=seed)
    assert verdict.problems == []
    assert verdict.lost == 0 or any(w.startswith("law S2->S1") and "back to back" in w for w in verdict.warned)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_slow_steady_fall_of_the_drain_downstream_is_followed(seed: int) -> None:
    """slow-drain-creep-tree.yaml (make fuzz-topo seed 3 at e0f70ab, fail-1): S6's law toward S3's 61-packet buffer
    (200 B frames of f1). S3's drain toward S1 fell slowly, 6.1 -> 5.6 Mb/s over 0.2-0.3 s (S3's own law cutting as
    S1's buffer filled); S6's window drain, the drain of the window's middle, stayed 0.3-0.5 Mb/s above the newest
    drains report after report, no single stretch fell by more than the spread, the law's rate followed the window
    and its adaptive target rose with the occupancy: the buffer crept 3 -> 61 packets in 130 ms and lost 10 (seed 1),
    unwarned. The forecast follows a fall whose slope across the window exceeds its error (controlplane/forecast.py,
    ``QueueForecast._follow_trend``; tests/controlplane/test_drain_trend.py)."""
    verdict = judge_case("slow-drain-creep-tree.yaml", seed=seed)
    assert verdict.problems == []
    assert verdict.lost == 0 or verdict.warned


@pytest.mark.parametrize("seed", [1, 2])
def test_a_train_of_small_frames_behind_a_large_one_at_a_receiver_is_warned(seed: int) -> None:
    """receiver-frame-train.yaml (make fuzz-topo seed 5, fail-4, as found): H2's receive buffer is 2 packets (1 ms at
    its 20 Mb/s playout in 1448 B frames) and holds each frame until it is played out; S3 -> H2 is 10 Mb/s. f1's
    200 B frames that waited in S3's queue behind one of f4's 1448 B frames (S3's law paces it in packets/s, and the
    departures that fell due while the large frame took 1.16 ms on the link left after it) arrived 160 µs apart,
    3 within the large frame's 579 µs of playout: one or two lost after almost every 1448 B frame while f4 ran (21
    at seed 1), the playout twice the link in bits. The loop analysis warns S3 -> H2 with the frames and the 4
    packets that hold them (topo/analysis/frame_train.py, ``receiver_trains``); a receive_buffer of 3 packets lost
    1 at seed 1 and one of 4 none."""
    verdict = judge_case("receiver-frame-train.yaml", seed=seed)
    assert verdict.problems == []
    assert any(w.startswith("law S3->H2") and "receive buffer counts packets (2)" in w
               and "receive_buffer of at least 4 packets" in w for w in verdict.warned)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_exit_idled_by_mixed_frames_behind_a_long_loop_is_warned(seed: int) -> None:
    """mixed-frame-exit-shortfall-long-link.yaml (make fuzz-topo seed 13 at 29da59f, fail-1): f1 (1500 B) and f2
    (200 B) from H3 over H3 -> S2 -> S4 -> S3 -> H5, 20 Mb/s links but S4 -> S3 (100 Mb/s, 1 ms of buffer: 9 packets
    at S3, which S4's law reads as 5 of its 353 B frames, so its target is 4 packets, 1412 B, less than one 1500 B
    frame); at 0.8 s H5's link falls from 1 Gb/s to 20 Mb/s. S3's buffer, swung by the frame mix, empties between
    reports: H5's link carries 19.38/19.38/19.51 Mb/s over 0.8-0.9 s at seeds 1-3 while S2 -> S4 carries 19.9, and
    S4's 20-packet buffer from S2, behind a 20 ms link, gains the difference (3 -> 20 packets over 0.84-0.90 s at seed
    1; 1/1/0 lost at seeds 1-3, S4's buffer peaking at 15 packets at seed 3). 9/30/0 once the damping left out a
    fall that what reached the buffer explains (controlplane/alinea.py, ``unexplained``): S3's buffer reads 1 and 3
    packets by turns, the reports that find 3 set S4's law at the window's drain, a lower bound of what S3 takes
    while the window holds a starved report, and the damping of the falls no longer lifted it back (S4 -> S3 at
    15.9-16.6 Mb/s over 1.0-1.6 s at seed 2, where it held 18.7-18.8). 0/0/0 (19.9 Mb/s at each seed) since the
    settled base is no lower than what a buffer holding no more than the newest gap brought drained
    (``Forecast.passing_bps``, ``settled_base``). The fluid model has no frames: at the
    links' rates it peaks S4's buffer at 9 %. The loop analysis warns S2 -> S4: S3's exit toward H5, which no law
    paces, held at 1412 B, runs dry for the rest of each 1500 B frame and carries about 97.1 % of its rate, and at
    that rate the model fills S4's buffer from S2 at 0.90 s (topo/analysis/exit_idle.py). Each of these alone loses
    nothing at seeds 1-3: S3's buffer 5 ms, f2 in 1500 B frames, S2 -> S4 at 2 ms."""
    verdict = judge_case("mixed-frame-exit-shortfall-long-link.yaml", seed=seed)
    assert verdict.problems == []
    assert any(w.startswith("law S2->S4") and "exit toward H5, which no law paces" in w for w in verdict.warned)
