"""A multicast group's copy and a unicast flow that leave a switch by the same link share that link's rate:
the floor check (topo/analysis/floor_check.py, ``_Stretch.drain``) counted the link once for the unicast
flows and again for each group's copy, so a law's floor that sent more than the link carries looked drained
(issue 46; multicast-start-order.yaml at seed 6 counted S3 -> S6's 1 Mb/s twice). And a group's copy that
leaves at exactly the group's r_max holds every burst of the group in the buffer it shares with other flows
(multicast-paced-branch.yaml; the loader's derived R_max now leaves a margin above it), and so does a unicast flow's
exit given its cap as R_max (unicast-capped-exit.yaml). The files' first lines hold their run length and what they show."""

from __future__ import annotations

from tests.paths import RANDOM_CASES, ROOT
from tests.topo.helpers import capped_r_max
from tests.topo.randomcheck import case_seconds, judge
from topo.analysis.floor_check import floor_overflows
from topo.file.schema import load_topology_text
from topo.net.starts import with_drawn_starts


def test_a_groups_copy_and_a_unicast_flow_share_their_link_in_the_floor_check() -> None:
    """H1 sends f1 to H2 and a group m0 to H3 and H4; f1 and m0's copy to H3 both leave S2 by its 1 Mb/s link
    to S3, m0's copy to H4 by a fast one. At its floor S1's law toward S2 sends their two shares, each below
    the slow link and together above it: S2 forwards at most the slow link of them (it frees a group packet
    only when its copy to H3 leaves), so the floor fills S2's buffer from S1 (the run loses there)."""
    text = (RANDOM_CASES / "multicast-copy-shares-link.yaml").read_text()
    seconds = case_seconds(text)
    topo = with_drawn_starts(load_topology_text(text, "multicast-copy-shares-link.yaml"), 1)
    found = floor_overflows(topo, seconds)
    assert ("S1", "S2") in found, found
    over = found[("S1", "S2")]
    assert over.drain_bps <= topo.link_between("S2", "S3").rate_bps < over.push_bps


def test_a_groups_copy_that_leaves_at_its_r_max_holds_the_buffer_its_bursts_reach() -> None:
    """multicast-paced-branch.yaml (make fuzz-topo seed 5): S3's law toward S7 carries m0 alone. Derived, its R_max
    is m0's r_max plus a margin, one frame per report interval (topo/analysis/derive.py, ``r_max_with_margin``): the check
    finds nothing and the run loses nothing. Overridden to m0's r_max exactly, m0's copy toward S7 leaves S3 at the
    rate m0 arrives at, so every burst of m0 that S1's queue sends beside f1 stays in S3's buffer from S1 (S3 frees
    m0's packet with its last copy): the check finds it at S1's law, and the run loses there, warned."""
    name = "multicast-paced-branch.yaml"
    text = (RANDOM_CASES / name).read_text()
    seconds = case_seconds(text)
    topo = with_drawn_starts(load_topology_text(text, name), 1)
    m0_r_max = next(f.r_max_bps for f in topo.flows if f.group == "m0")
    assert m0_r_max < topo.law[("S3", "S7")].r_max == capped_r_max(topo, "S3", "S7", m0_r_max)
    assert ("S1", "S3") not in floor_overflows(topo, seconds)
    assert judge(text, seconds, all_alinea=True, seed=1, source=name).lost == 0
    exact = text.replace("flows:\n", f"alinea:\n  - {{node: S3, toward: S7, r_max: {m0_r_max:.0f}bps}}\nflows:\n", 1)
    over = floor_overflows(with_drawn_starts(load_topology_text(exact, name), 1), seconds)[("S1", "S3")]
    assert (over.held_copy.unit, over.held_copy.toward, over.held_copy.carried_bps) == ("m0", "S7", m0_r_max)
    verdict = judge(exact, seconds, all_alinea=True, seed=1, source=name)
    assert verdict.lost > 0
    assert verdict.problems == []
    assert any(w.startswith("law S1->S3:") and "toward S7" in w for w in verdict.warned), verdict.warned


def test_a_unicast_flows_exit_given_its_cap_as_r_max_holds_the_buffer_its_bursts_reach() -> None:
    """unicast-capped-exit.yaml: multicast-paced-branch.yaml with m0 a unicast flow to H7 and S3's law toward S7,
    which carries m0 alone, given m0's r_max as its R_max (141 lost at seed 1, unwarned, before the check): the
    check finds it at S1's law, whose FIFO mixes m0 with f1, names the R_max the loader would derive, and the run
    loses there, warned. Without the override (derived: the margin) nothing is found and nothing is lost."""
    name = "unicast-capped-exit.yaml"
    text = (RANDOM_CASES / name).read_text()
    seconds = case_seconds(text)
    override = "alinea:\n  - {node: S3, toward: S7, r_max: 2Mbps}\n"
    assert override in text
    derived = text.replace(override, "")
    topo = with_drawn_starts(load_topology_text(derived, name), 1)
    m0_r_max = next(f.r_max_bps for f in topo.flows if f.name == "m0")
    assert m0_r_max < topo.law[("S3", "S7")].r_max == capped_r_max(topo, "S3", "S7", m0_r_max)
    assert ("S1", "S3") not in floor_overflows(topo, seconds)
    verdict = judge(derived, seconds, all_alinea=True, seed=1, source=name)
    assert verdict.lost == 0 and verdict.problems == [] and verdict.warned == []
    held = floor_overflows(with_drawn_starts(load_topology_text(text, name), 1), seconds)[("S1", "S3")].held_copy
    assert held is not None and not held.group
    assert (held.unit, held.toward, held.carried_bps, held.fix_bps) == ("m0", "S7", m0_r_max, topo.law[("S3", "S7")].r_max)
    verdict = judge(text, seconds, all_alinea=True, seed=1, source=name)
    assert verdict.lost > 0 and verdict.problems == []
    assert any(w.startswith("law S1->S3:") and "toward S7" in w for w in verdict.warned), verdict.warned


def test_a_host_law_beside_its_own_capped_flow_is_not_a_held_exit() -> None:
    """paper-1router.yaml gives R1's law toward H2 f1's 1.8 Mb/s (the paper's R_max) while f1, capped at 1.8 Mb/s,
    is the only flow: the port is at load 1 too, but H1's pacer spaces f1's packets and no FIFO of other flows'
    packets before R1 bursts them (the shipped runs lose nothing): the check finds nothing there."""
    text = (ROOT / "topo" / "paper-1router.yaml").read_text()
    topo = load_topology_text(text, "paper-1router.yaml")
    f1 = next(f for f in topo.flows if f.name == "f1")
    assert topo.law[("R1", "H2")].r_max == f1.r_max_bps < topo.link_between("R1", "H2").rate_bps
    assert all(over.held_copy is None for over in floor_overflows(topo, 20.0).values())
