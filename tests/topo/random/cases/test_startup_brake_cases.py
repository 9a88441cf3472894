"""Random topologies that lost packets, unwarned, because a switch agent's start-up brake read a burst in a buffer
starved a moment before as a regulated buffer, or its settled law read that buffer's drain as what it takes (issue 46;
strict xfails of test_random_topologies.py's OPEN_CASES until the drain's window remembered the starvation:
controlplane/forecast.py, ``QueueForecast.law_forecast``; controlplane/alinea.py, ``settled_base``). Each file's first
lines hold its run length and the problem the judge reported when ``make fuzz-topo`` found it."""

from __future__ import annotations

import pytest

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import judge_case
from topo.analysis.check import warnings
from topo.file.schema import load_topology_text


#: grant-burst-line.yaml: four flows down S1 -> S2 -> S3 (1 Gb/s) -> S4. S2's agent at start-up (its rate at R_max)
#: read 3 packets in S3's buffer, a burst off the 1 Gb/s link into a buffer that drains faster than it is fed, and its
#: brake cut to the drain of a window in which that buffer was starved (what S2 had sent, lagging the sources' ramp):
#: 1 Gb/s to 55 Mb/s under ~110 Mb/s of arrivals; S2's 18-packet buffer from S1 filled (35 lost in 1 s, seed 1).
#: brake-starved-receiver-line.yaml: S1 read 2 of H2's 24 packets (a burst off the 100 Mb/s link into a 50 Mb/s
#: playout), its drain not yet measured (0), and cut 100 to 3.1 Mb/s; the law's ramp took it back ~50 kb/s a report,
#: and S2's buffer from S5 overflowed (17 lost). brake-starved-multicast-release.yaml: as m0 starts, S2 cut toward S4
#: from 50 Mb/s to its 1 Mb/s floor on a drain of 0 in front of H2's 5 Mb/s exit; the cut, stamped on S2's queue,
#: reached S4 as a burst of 185 packets (23 lost). With the drain over the newest report gap as the brake's drain
#: while the window holds a starved report, the brake aims at what the buffer takes.
@pytest.mark.parametrize("name", ["grant-burst-line.yaml", "brake-starved-receiver-line.yaml",
                                  "brake-starved-multicast-release.yaml"])
def test_a_burst_into_a_buffer_starved_within_the_drain_window_loses_nothing(name: str) -> None:
    verdict = judge_case(name)
    assert verdict.problems == []
    assert verdict.lost == 0


#: burst-brake-merge.yaml: S4's law toward S5 (a 10 Mb/s link whose buffer at S5 empties every few reports) followed
#: the newest drain down at each report that found 2-7 packets there, its own spacing read as a capacity drop; the
#: line of 10 Mb/s links behind it gained what it lost and S2's buffer from S1 overflowed (15 lost in 2 s). Lossless
#: at seeds 1 and 2 after that fix, 8 lost unwarned at seed 3, while H2's pacer split its rate equally between f1
#: and f3. Since f1 keeps under its r_max (1 Mb/s) and f3 takes the rest (engine/src/hosts/host.rs), S1's queue
#: toward S2 is stamped at 10 Mb/s when S2's buffer fills and 20-34 packets are lost at seeds 1-3, each run warned
#: (the model overflows S2's buffer from S1 or S1's from H1): what the judge asks of any random topology.
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_merge_whose_flow_keeps_under_its_r_max_loses_only_where_warned(seed: int) -> None:
    verdict = judge_case("burst-brake-merge.yaml", seed=seed)
    assert verdict.problems == []


#: brake-starved-playout-small-gain.yaml (make fuzz-topo seed 13, --alinea-only): H2 (two 200 B flows) and H1 (576 B)
#: send through S1 to H3, whose 69-packet receive buffer plays out at 10 Mb/s. S1's agent, at R_max (200 Mb/s), read 2
#: packets in H3's buffer after reports that found it starved, and its brake cut to the drain over that report gap
#: (the sources' ramp, 3.8 Mb/s) plus the room: 4.55 Mb/s, a lower bound of what the buffer takes, not a measure of it.
#: The law then climbed at its own step, W = 24 kb/s per unit of occupancy (the buffer is 110 kbit): 15 kb/s a report,
#: 5.2 Mb/s at 1.5 s, H3 playing out half its 10 Mb/s at 1-2 packets while S1's buffers from H1 and H2 filled and
#: overflowed: 163 lost. brake-starved-playout-small-buffers.yaml (fail-2 of that draw: 20-packet buffers on H2's
#: and H3's links) lost 519 at S1's buffer from H2. Now a cut made on lower bounds alone is undone, at the reports that
#: find the buffer starved again, at the brake's pace (controlplane/alinea.py, ``AlineaLaw.braked_from``): S1 -> H3
#: carries 6.6, 7.2, 7.9, 8.7, 9.3 Mb/s over the 0.2 s from 0.6 s on (4.7-5.1 before), as fast as the hosts' laws
#: behind S1 raise what it has to send, and neither file loses a packet.
@pytest.mark.parametrize("name", ["brake-starved-playout-small-gain.yaml", "brake-starved-playout-small-buffers.yaml"])
def test_a_brake_cut_on_a_starved_playout_buffer_climbs_back_and_loses_nothing(name: str) -> None:
    verdict = judge_case(name)
    assert verdict.problems == []
    assert verdict.lost == 0


#: committed-starved-playout-line.yaml (issue 46, fail-2 of a fuzz draw): two flows down S1 -> S2 -> S3 -> S4 (299-packet
#: buffers) into H4's 20-packet receive buffer, played out at 5 Mb/s. S4's agent read H4's buffer starved (the playout
#: takes what arrives) and raised its law at each such report, to 6.6 Mb/s, its forecast the occupancy alone while its
#: queue still held the packets stamped at its earlier, lower rates; the rise reached H4 a horizon later, the first
#: report that found 2 packets forecast 111 (the window's drain, 2.9 Mb/s, what H4 had been sent, read as what it takes)
#: and the law fell to its floor (0.3 Mb/s), stamped on S4's queue: the line swung 0-100 % for 4 s, H4 played out
#: 1.1 of its 5 Mb/s and 343 packets were lost, unwarned. committed-starved-tree.yaml (0.8 s): S5's law toward S2 rose
#: to 10.7 Mb/s while S2's buffer read starved behind ~400 packets stamped at 2.5-4.5 Mb/s; once they had left, its
#: stamps arrived into S2's 5 Mb/s drain (56 lost, unwarned). Now a starved report forecasts what the stamped queue will
#: leave in the buffer at the drain it had while it held a backlog, and a backlog within the drain's window of a starved
#: report is forecast at that drain (controlplane/forecast.py, ``QueueForecast._starved_forecast``,
#: ``_backlog_drain_pps``): the line settles at 80 % and plays out 5 Mb/s without a loss; the tree still loses as the
#: hops start up together (S2's drain falls as S1 behind it fills), and the loop analysis, whose fluid model runs the
#: same forecast, warns on S5 -> S2.
def test_a_starved_buffer_behind_a_stamped_queue_settles_and_loses_nothing() -> None:
    verdict = judge_case("committed-starved-playout-line.yaml")
    assert verdict.problems == []
    assert verdict.lost == 0
    goodput_bps = sum(f["goodput_bps"] for f in verdict.summary["flows"].values())
    assert goodput_bps > 0.9 * 5e6  # H4's playout (5 Mb/s in the file), not a fifth of it


def test_a_starved_buffer_behind_a_stamped_queue_loses_only_where_warned() -> None:
    verdict = judge_case("committed-starved-tree.yaml")
    assert verdict.problems == []
    assert any(w.startswith("law S5->S2") for w in verdict.warned) or verdict.lost == 0


#: lagging-mean-brake-tree.yaml (an unseeded hypothesis example of test_random_topologies.py, as found): f3 (1500 B)
#: from H4 runs alone down S6 -> S3 -> S1 -> H7 until f2's 200 B frames from H3 join S6's FIFO toward S3 (0.276 s at
#: seed 1). S3's law toward S1, at its R_max in start-up, reads 3-4 of S1's packets (200 B frames queued behind a
#: 1500 B one at S1's 100 Mb/s exit, fed at 500 Mb/s) and its brake cuts it to the newest drain (500 -> 58 Mb/s at seed
#: 1, -> 87 at seed 2), while S6, at its R_max, sends f2's frames at the open frame's ~30,000/s. Until the agent read a
#: drain in the frames of the packets that drained (controlplane/agent.py, ``SwitchAgentCore._sent_frame``), S6 took
#: S3's drain of its packets at its window's 1500 B mean, f3's alone before the next read of its counters: 130-330 Mb/s,
#: above its 100 Mb/s R_max; its law did not cut and S3's 79-packet buffer from S6 overflowed (233 / 184 / 13 lost at
#: seeds 1-3, unwarned). Now the drain's packets beyond those the reads saw S6 send are frames of flows not seen: S6
#: reads ~40 Mb/s and cuts; seeds 2 and 3 lose nothing.
@pytest.mark.parametrize("seed", [2, 3])
def test_a_drain_of_frames_not_read_yet_is_read_in_their_frames(seed: int) -> None:
    verdict = judge_case("lagging-mean-brake-tree.yaml", seed=seed)
    assert verdict.problems == []
    assert verdict.lost == 0


#: Seed 1 (188 lost at S6's buffer from H4, unwarned, after the fix above): S6's brake read S3's buffer (26 of its 79
#: packets, f2's 200 B frames sent at ~30,000/s) in the frame of the drain's window (~1,100 B: 186 % of 14 frames) and
#: cut to its 2 Mb/s floor, stamped on BMv2's queue for ~80 ms while S3 starved; S3 then took all S6 sent, but S6's
#: starved forecast counted its stamps against the drain of S3's backlog at start-up (S3's own law then converted at
#: f3's 1500 B frames) and held S6's law at ~5,000-7,000 packets/s; H3's law kept ~950 packets in S6's FIFO toward
#: S3, and H4's packets behind them overflowed H4's 79-packet buffer at its 10 Mb/s floor. Now a buffer read in bytes
#: is counted in the frame of what S6 sent into it, at its newest rate (controlplane/agent.py,
#: ``SwitchAgentCore._held_frame``: 26 of 39 frames, S6 cuts 100 -> 85 -> 44 Mb/s, not to its floor), and a starved
#: report's forecast drains no less than the highest drain over ``DRAIN_SHORT_PKTS`` departures since the buffer's
#: backlog (controlplane/forecast.py, ``QueueForecast._starved_forecast``): H4's buffer at S6 peaks at 72 of its 79
#: packets at ~0.5 s and falls to ~35 as S6's law climbs back (the first alone: 60 lost; the second alone: 116).
def test_a_brake_into_a_lagging_frame_window_loses_nothing() -> None:
    verdict = judge_case("lagging-mean-brake-tree.yaml", seed=1)
    assert verdict.problems == []
    assert verdict.lost == 0


#: slow-descent-tiny-buffer-fabric.yaml (make fuzz-topo seed 6): f1 (1000 B) from H1 over a 20 Mb/s link into
#: S1's 5-packet buffer, on to S4 (its buffer 255 packets) and a 2 Mb/s exit to H4. S1's law toward S4 starts at its
#: 50 Mb/s R_max and comes down only as S4's large buffer fills (16 Mb/s at 3.2 s, S4 at 40 %), while H1's law, whose
#: buffer at S1 reads 1 packet all along, climbs ~11 kb/s a report from 0.4 to 5.3 Mb/s on a 2 Mb/s path. When S1's
#: law reaches the drain, H1's 3 Mb/s excess fills S1's 5 packets in ~12 ms, faster than H1's law cuts (5.3 -> 4.2
#: Mb/s in four reports): 1 packet lost at 3.49 s at seeds 1 and 2. The fluid model sees it (S1's buffer full) where
#: it runs on: at seeds 1 and 2 (f1 starting at 1.236 and 1.215 s) it stopped as settled at 1.243 s, comparing a
#: window that held 7 ms of the climb (under its rate tolerance) with the quiet one before it; at seed 3 (1.264 s)
#: f1 started after that window and the model warned. Now both windows it compares begin after the last start
#: (topo/analysis/fluid_network.py, ``settle_after``), and it warns at every seed.
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_slow_descent_into_a_tiny_buffer_loses_only_where_warned(seed: int) -> None:
    verdict = judge_case("slow-descent-tiny-buffer-fabric.yaml", seed=seed)
    assert verdict.problems == []
    assert verdict.warned



#: brake-guess-ramp-line.yaml (tests.topo.fuzz_topo --count 2000 --seed 7, fail-1): f1 (200 B) and f2 (1000 B, 2 Mb/s)
#: from H1 down six switches (100 Mb/s links, 200 Mb/s S3 -> S4, 1 Gb/s S5 -> S6). Every switch law starts at its R_max
#: while H1's ramps. S3's read a bunch of 4 packets in S4's 125-packet buffer after reports that found it starved, and
#: its brake cut 200 to 72 Mb/s, the drain over the gap (what S3 sent) plus the room, while the ramp brought S3 75-80
#: Mb/s. Such a cut, a guess, and the way back from it keep the rate no lower than what reached the node over the gap
#: (controlplane/alinea.py, ``Forecast.arrival_bps``): no loss at seeds 1 and 3, f1 at 87 and 91 Mb/s. At seed 2 S2's
#: law brakes on a few packets in S3's buffer that followed reports holding packets (not a guess), its cut is below
#: what reaches S2 while H1 ramps, and S2's 62-packet buffer from S1 (99 kbit of 200 B frames) overflows before S1's
#: law, reporting every 10.5 ms across a 10 ms link, can act: 46 lost. The loop analysis warns it at every seed
#: (topo/analysis/brake_ramp.py: even a cut to what reaches S2 leaves it gaining H1's ramp, 0.63 Mb/s a ms, for the
#: 31.5 ms before S1's law acts, 315 kbit), whether the cuts that come are guesses or not.
@pytest.mark.parametrize("seed", [1, 3])
def test_a_guessed_brake_cut_does_not_cascade_up_a_line(seed: int) -> None:
    verdict = judge_case("brake-guess-ramp-line.yaml", seed=seed)
    assert verdict.problems == []
    assert verdict.lost == 0


@pytest.mark.parametrize("name", ["brake-guess-ramp-line.yaml", "brake-guess-small-buffers-line.yaml"])
def test_a_brake_cut_under_a_ramp_up_a_line_is_warned_before_the_run(name: str) -> None:
    """The rule names the law whose buffer overflows in the runs (S2's from S1), at each seed judged here."""
    topo = load_topology_text((RANDOM_CASES / name).read_text(), name)
    for seed in (1, 2, 3):
        assert any(w.startswith("law S1->S2:") and "ramp" in w for w in warnings(topo, 4.0, seed))


def test_a_brake_cut_below_the_ramp_loses_only_where_warned() -> None:
    verdict = judge_case("brake-guess-ramp-line.yaml", seed=2)
    assert verdict.problems == []


#: brake-guess-small-buffers-line.yaml (the same draw's fail-3): the same line with 21-packet buffers (34 kbit of
#: 200 B frames, a third of a millisecond at 100 Mb/s). The brakes' cuts cascade up the line into buffers that fill in
#: a few ms: at seed 1 S2's law toward S3 cut to 57.9 Mb/s (the drain plus the room, on 3 of S3's 20 packets) while
#: H1's ramp, ~0.16 Mb/s a millisecond, brought S2 64 and more, and S2's buffer from S1 overflowed before S1's law
#: could act; the settled laws, left at W_min, hold the line at 33-52 of its 100 Mb/s to the end (195, 100, 144 lost
#: at seeds 1-3). No law-side fix has yet held it without moving loss elsewhere (the commits of issue 46 record them);
#: the loop analysis warns it before the run (topo/analysis/brake_ramp.py: S2 gains 82 kbit in the 31.5 ms before S1's
#: law acts, where its buffer from S1 holds 32 kbit), so these runs lose only where warned.
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_brake_cut_in_a_line_of_tiny_buffers_loses_only_where_warned(seed: int) -> None:
    verdict = judge_case("brake-guess-small-buffers-line.yaml", seed=seed)
    assert verdict.problems == []
