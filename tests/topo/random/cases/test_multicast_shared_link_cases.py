"""A multicast group's copy and a unicast flow that leave a switch by the same link share that link's rate:
the floor check (topo/analysis/floor_check.py, ``_Stretch.drain``) counted the link once for the unicast
flows and again for each group's copy, so a law's floor that sent more than the link carries looked drained
(issue 46; multicast-start-order.yaml at seed 6 counted S3 -> S6's 1 Mb/s twice). And a group's copy that
leaves at exactly the group's r_max holds every burst of the group in the buffer it shares with other flows
(multicast-paced-branch.yaml). The files' first lines hold their run length and what they show."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import judge
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


def test_a_groups_copy_that_leaves_at_its_r_max_holds_the_buffer_its_bursts_reach() -> None:
    """multicast-paced-branch.yaml (make fuzz-topo seed 5): m0's copy toward S7 leaves S3 at that law's R_max,
    m0's own r_max (derived from the group alone), so every burst of m0 that S1's queue sends beside f1 stays in
    S3's buffer from S1 (S3 frees m0's packet with its last copy). The check finds it at S1's law, the copy
    toward S7, and the run loses there, warned; with S3's R_max toward S7 above m0's r_max the copy has a margin,
    the check finds nothing and the run loses nothing."""
    name = "multicast-paced-branch.yaml"
    text = (RANDOM_CASES / name).read_text()
    seconds = float(text.splitlines()[0].removeprefix("# seconds:"))
    topo = with_drawn_starts(load_topology_text(text, name), 1)
    m0_r_max = next(f.r_max_bps for f in topo.flows if f.group == "m0")
    assert topo.law[("S3", "S7")].r_max == m0_r_max  # derived from the group alone (topo/file/schema.py)
    over = floor_overflows(topo, seconds)[("S1", "S3")]
    assert over.held_copy == ("m0", "S7", m0_r_max)
    verdict = judge(text, seconds, all_alinea=True, seed=1, source=name)
    assert verdict.lost > 0
    assert verdict.problems == []
    assert any(w.startswith("law S1->S3:") and "toward S7" in w for w in verdict.warned), verdict.warned
    margin = text.replace("flows:\n", f"alinea:\n  - {{node: S3, toward: S7, r_max: {1.1 * m0_r_max:.0f}bps}}\nflows:\n", 1)
    wide = with_drawn_starts(load_topology_text(margin, name), 1)
    assert ("S1", "S3") not in floor_overflows(wide, seconds)
    assert judge(margin, seconds, all_alinea=True, seed=1, source=name).lost == 0
