"""What a law's floor gathers above its target in one stretch of the run is still there in the next, and it
leaves the next node's FIFO at the pace of the flows that queued it (issue 46): the floor check
(topo/analysis/floor_check.py, ``_carry``) counted each stretch's excess from the buffer at its target and
drained it at the new flows' pace, so a head start that filled the room went unwarned."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import judge
from topo.analysis.floor_check import floor_overflows
from topo.file.schema import load_topology_text
from topo.net.starts import with_drawn_starts

NAME = "multicast-start-order.yaml"


def test_a_head_start_at_the_floor_fills_the_fifo_it_drains_through() -> None:
    """multicast-start-order.yaml at seed 6: f1 starts at 22 ms, f2 at 230 ms and the group m0 at 254 ms. For
    0.21 s S1's law toward S3 sits at its floor (2 Mb/s) with f1 alone, whose packets S3 forwards at S3 -> S6's
    1 Mb/s: S3's buffer from S1 gains 1 Mb/s above its target. f2 and m0 then join toward faster exits, and S3
    forwards 1.69 Mb/s of the three, but its buffer from S1 is one FIFO: its 237-packet target and what the floor
    gathered are f1's packets, which leave at 1 Mb/s first (2.7 s), the new flows' behind them. The run loses 3
    packets there at 0.97 s. Each stretch alone, from the buffer at its target, filled the room in 2.2 s and
    more; counted across the stretches, at the FIFO's pace, it fills within the run."""
    text = (RANDOM_CASES / NAME).read_text()
    topo = with_drawn_starts(load_topology_text(text, NAME), 6)
    over = floor_overflows(topo, 1.0)[("S1", "S3")]
    assert over.head is not None and over.drain_bps == topo.link_between("S3", "S6").rate_bps
    assert over.from_s + over.fill_s <= 1.0
    verdict = judge(text, 1.0, all_alinea=True, seed=6, source=NAME)
    assert verdict.problems == []
    assert any(w.startswith("law S1->S3:") and "one FIFO" in w for w in verdict.warned), verdict.warned
