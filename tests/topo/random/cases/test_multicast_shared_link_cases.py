"""A multicast group's copy and a unicast flow that leave a switch by the same link share that link's rate:
the floor check (topo/analysis/floor_check.py, ``_Stretch.drain``) counted the link once for the unicast
flows and again for each group's copy, so a law's floor that sent more than the link carries looked drained
(issue 46; multicast-start-order.yaml at seed 6 counted S3 -> S6's 1 Mb/s twice). The file's first lines
hold its run length and what it shows."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from topo.analysis.floor_check import floor_overflows
from topo.file.schema import load_topology_text
from topo.net.starts import with_drawn_starts


def test_a_groups_copy_and_a_unicast_flow_share_their_link_in_the_floor_check() -> None:
    """H1 sends f1 to H2 and a group m0 to H3 and H4; f1 and m0's copy to H3 both leave S2 by its 1 Mb/s link
    to S3, m0's copy to H4 by a fast one. At its floor S1's law toward S2 sends their two shares, each below
    the slow link and together above it: S2 forwards at most the slow link of them (it frees a group packet
    only when its copy to H3 leaves), so the floor fills S2's buffer from S1 (the run loses there)."""
    text = (RANDOM_CASES / "multicast-copy-shares-link.yaml").read_text()
    seconds = float(text.splitlines()[0].removeprefix("# seconds:"))
    topo = with_drawn_starts(load_topology_text(text, "multicast-copy-shares-link.yaml"), 1)
    found = floor_overflows(topo, seconds)
    assert ("S1", "S2") in found, found
    over = found[("S1", "S2")]
    assert over.drain_bps <= topo.link_between("S2", "S3").rate_bps < over.push_bps
