"""A queue that several links feed and that a node's own law toward its next hop paces: its drain is that
law's rate, not what the path behind drains (topo/analysis/check.py, ``pacing_law``, issue 46)."""

from __future__ import annotations

from tests.topo.randomcheck import judge_case
from topo.analysis.check import feeding_links, pacing_law, warnings
from topo.file.schema import load_topology_text
from topo.net.model import Topology

#: S0 and S2 both send into S1's queue toward H2, whose receive buffer (and so S1's law toward it) plays out
#: faster than the two 20 Mb/s links can feed it.
SHARED = """name: paced-shared
nodes:
  H1: {kind: host}
  H3: {kind: host}
  S0: {kind: switch}
  S2: {kind: switch}
  S1: {kind: switch}
  H2: {kind: host, receive_buffer: 5ms, playout: 50Mbps}
links:
  - {ends: [H1, S0], rate: 20Mbps}
  - {ends: [S0, S1], rate: 20Mbps, buffer: 2}
  - {ends: [H3, S2], rate: 20Mbps}
  - {ends: [S2, S1], rate: 20Mbps}
  - {ends: [S1, H2], rate: 200Mbps}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
  - {name: f2, src: H3, dst: H2, control: alinea, start: 0.6s}
"""


def _topo(text: str) -> Topology:
    return load_topology_text(text, "paced-shared.yaml")


def test_a_shared_queue_paced_by_a_law_counts_its_feeding_links() -> None:
    topo = _topo(SHARED)
    assert pacing_law(topo, "S0", "S1") == ("H2", topo.law[("S1", "H2")].r_floor)
    assert feeding_links(topo, "S0", "S1") == feeding_links(topo, "S2", "S1") == 2
    assert any(w.startswith("law S0->S1") and "its law toward H2" in w for w in warnings(topo, 2.0)), \
        warnings(topo, 2.0)


def test_a_queue_one_link_feeds_or_no_law_paces_or_a_floor_above_its_feed_drains_faster() -> None:
    """Alone in the paced queue, S0's packets are all the law toward H2 measures; without H2's receive buffer
    no law paces S1's queue toward it; a floor at the feed (40 Mb/s) never lets the queue build; behind a
    45 Mb/s link H2's buffer, played out at 50 Mb/s, never gains a packet, so the brake never cuts S1's law
    toward it."""
    alone = SHARED.replace("  - {name: f2, src: H3, dst: H2, control: alinea, start: 0.6s}\n", "")
    unpaced = SHARED.replace("H2: {kind: host, receive_buffer: 5ms, playout: 50Mbps}", "H2: {kind: host}")
    floor = SHARED + "alinea:\n  - {node: S1, toward: H2, r_floor: 40Mbps}\n"
    uncut = SHARED.replace("{ends: [S1, H2], rate: 200Mbps}", "{ends: [S1, H2], rate: 45Mbps}")
    for text in (alone, unpaced, floor, uncut):
        assert text != SHARED
        topo = _topo(text)
        assert pacing_law(topo, "S0", "S1") is None
        assert feeding_links(topo, "S0", "S1") == 0
    assert not any(w.startswith("law S0->S1") for w in warnings(_topo(floor), 2.0))


def test_the_tree_whose_one_frame_buffer_feeds_a_paced_shared_queue_is_warned() -> None:
    """S1's buffer from S3 is 2 packets, one of S3's frames (1000, 1448 and 576 B) as its law counts it, and
    S1's queue toward H8, which S2's f4 joins at 0.6 s, is paced by S1's law toward H8's receive buffer. The
    playout (50 Mb/s) counted as a drain faster than the two 20 Mb/s links feeding it, and the loss there went
    unwarned; warned now, on the law that loses, with why: the pacing law, and the one frame that every
    report reads above its target."""
    verdict = judge_case("one-packet-buffer-paced-exit.yaml")
    assert verdict.problems == []
    law = [w for w in verdict.warned if w.startswith("law S3->S1")]
    assert law and "its law toward H8" in law[0] and "every report" in law[0], verdict.warned


def test_the_same_tree_with_sixteen_packets_loses_nothing_once_a_cut_on_lower_bounds_climbs_back() -> None:
    """The tree above with S1's buffer from S3 at 16 packets (11 of S3's frames as its law counts them): S1's law
    toward H8 held R_max until the start-up brake cut it to 26 Mb/s at 0.6 s, as f4 joined S1's queue toward H8,
    and S3's share fell faster than S3's law followed: 3 lost at 0.706-0.715 s, unwarned (the laws-together model
    does not play the brake's cut). Since a cut made on lower bounds of the drain climbs back at the brake's pace
    (controlplane/alinea.py, 1acc690) the fall is short: nothing lost (seeds 1-3), so no warning is owed."""
    verdict = judge_case("paced-exit-16-packets.yaml")
    assert verdict.problems == [] and verdict.lost == 0
