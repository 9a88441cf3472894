"""Issue 46's binary tree (7 switches, four leaf senders to one sink, 20 Mb/s, 2 ms, 100-packet buffers)
on every seed a user may run, not the one the first test picked: at 566aa73 seeds 6 and 11 lost 2 and
86 packets with no warning. At seed 11 S3's start-up brake read S1's starved buffer (2-3 of 100
packets) as a drain of S3's own rate and cut S3 -> S1 to 1.4 Mb/s while S3's buffers from S6 and S7
filled; their release halved S2's share of S1's FIFO and S1's buffer from S2 overflowed. The fluid model
served a FIFO as processor sharing and saw none of it. Fixed by the brake's starved window (05cf078) and
the model's FIFO order (9f03aa7); a run may still lose packets at start-up, but only warned."""

from __future__ import annotations

import pytest

from tests.topo.random.test_random_topologies import TREE
from tests.topo.randomcheck import judge


@pytest.mark.parametrize("seed", range(1, 13))
def test_the_binary_tree_loses_nothing_unwarned_on_any_seed(seed: int) -> None:
    verdict = judge(TREE, 4.0, all_alinea=True, seed=seed, source="tree7.yaml")
    assert verdict.problems == []
