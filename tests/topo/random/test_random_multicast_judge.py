"""How the random topologies' judge (tests/topo/randomcheck.py) reads multicast cases: a copy lost on one
branch counts as lost, a copy lost above a branching point counts for every receiver beneath it, a tree that
loses nothing passes, and pgmcc sessions (which the generator leaves out) keep the invariants it checks."""

from __future__ import annotations

import pytest

from tests.paths import ROOT
from tests.topo.randomcheck import judge, judge_case

#: H1 feeds a group {H2, H3, H4} through S1; S2 copies to H2 and H3, S3 to H4. ``{slow}`` is the one link
#: that carries less than the group's fixed 2 Mb/s, with a 5-packet buffer in front of it.
TREE = """\
name: judge-multicast
defaults:
  link: {{rate: 10Mbps, delay: 2ms, buffer: 50}}
nodes:
  H1: {{kind: host}}
  S1: {{kind: switch}}
  S2: {{kind: switch}}
  S3: {{kind: switch}}
  H2: {{kind: host}}
  H3: {{kind: host}}
  H4: {{kind: host}}
links:
  - {{ends: [H1, S1]}}
  - {{ends: [S1, S2]{s1s2}}}
  - {{ends: [S1, S3]}}
  - {{ends: [S2, H2]}}
  - {{ends: [S2, H3]{s2h3}}}
  - {{ends: [S3, H4]}}
flows:
  - {{name: m0, src: H1, dst: [H2, H3, H4], control: fixed, rate: 2Mbps, packet_size: 1000B}}
"""
SLOW = ", rate: 1Mbps, buffer: 5"


def _missing(summary: dict, host: str) -> int:
    return int(summary["multicast"]["m0"]["receivers"][host]["missing_seq"])


def test_a_copy_lost_on_one_branch_is_lost_for_that_receiver_only() -> None:
    v = judge(TREE.format(s1s2="", s2h3=SLOW), 2.0, all_alinea=False, source="<branch-loss>")
    assert v.problems == [], v.problems  # the invariants hold for a group that loses on one branch
    assert v.lost > 0
    assert _missing(v.summary, "H3") > 0 and _missing(v.summary, "H2") == 0 and _missing(v.summary, "H4") == 0
    assert v.summary["loss"]["dropped_in_network"] > 0


def test_a_copy_lost_above_a_branching_point_is_lost_for_every_receiver_beneath_it() -> None:
    v = judge(TREE.format(s1s2=SLOW, s2h3=""), 2.0, all_alinea=False, source="<trunk-loss>")
    assert v.problems == [], v.problems
    dropped = v.summary["loss"]["dropped_in_network"]
    assert dropped > 0 and _missing(v.summary, "H4") == 0
    assert _missing(v.summary, "H2") == _missing(v.summary, "H3") > 0
    assert v.lost >= _missing(v.summary, "H2") + _missing(v.summary, "H3") >= dropped


def test_an_alinea_tree_that_loses_nothing_passes() -> None:
    v = judge(
        (ROOT / "topo" / "multicast-tree.yaml").read_text(), 3.0, all_alinea=True, source="multicast-tree"
    )
    assert v.problems == [] and v.lost == 0 and v.warned == []


def test_an_alinea_tree_losing_copies_on_a_branch_is_a_problem_unless_warned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same judgement as for unicast: an all-ALINEA group that lost a copy is a problem unless the
    analysis warned first. A receiver that cannot take the stream (a 1-packet receive buffer played out
    at a tenth of the tree's rate) loses copies on its branch only; the analysis warns of that buffer, so
    the case passes; with the warning taken away, the same run is a problem."""
    import tests.topo.randomcheck as rc

    text = (ROOT / "topo" / "multicast-tree.yaml").read_text()
    old = "H3: {kind: host, receive_buffer: 100, playout: 4Mbps}"
    assert old in text
    text = text.replace(old, "H3: {kind: host, receive_buffer: 1, playout: 0.1Mbps}")
    v = judge(text, 3.0, all_alinea=True, source="<starved-receiver>")
    assert v.lost > 0 and any("H3" in w for w in v.warned) and v.problems == []
    assert v.summary["multicast"]["m1"]["receivers"]["H2"]["missing_seq"] == 0
    monkeypatch.setattr(rc, "warnings", lambda *a, **k: [])
    unwarned = judge(text, 3.0, all_alinea=True, source="<starved-receiver>")
    assert unwarned.lost == v.lost and any("packets were lost" in p for p in unwarned.problems)


def test_a_pgmcc_group_keeps_the_invariants() -> None:
    v = judge(
        (ROOT / "topo" / "pgmcc" / "set1-window.yaml").read_text(), 5.0, all_alinea=False, source="set1"
    )
    assert v.problems == [], v.problems
    assert set(v.summary["multicast"]["pgm"]["receivers"]) == {"M1", "M2", "M3"}


def test_a_receiver_starved_behind_its_switchs_stamped_queue_is_warned_or_loses_nothing() -> None:
    """tests/topo/random_cases/multicast-stamped-starved-receiver.yaml (fuzz seed 15, issue 46): S3's law toward H3
    (a 32-packet receive buffer played out at 1 Mb/s) read H3's buffer starved behind the copies it had stamped at
    its floor and held 1.68 Mb/s, its forecast the occupancy alone; the copies stamped at that rate then filled H3,
    its cut waiting behind them (19, 22, 19 lost at seeds 1-3, unwarned). The loop analysis's model read the
    group's 200 B frames off the lead branch's path (S1 -> S3 and below) as 1,000 B packets (H3's buffer five times its bits) and H3 peaked at
    37 %; counting them at their size (topo/analysis/fluid_network.py, ``_modelled_names``), its H3 overflows
    too, and the run's loss is warned on S3 -> H3."""
    for seed in (1, 2, 3):
        v = judge_case("multicast-stamped-starved-receiver.yaml", seed=seed)
        assert v.problems == [], (seed, v.problems)
        if v.lost:
            assert v.summary["loss"]["receiver_buffer_overflow_by_host"].keys() == {"H3"}, v.summary["loss"]
            assert any(w.startswith("law S3->H3") for w in v.warned), (seed, v.warned)


def test_a_receivers_first_backlog_is_timed_by_its_departures_and_nothing_is_lost_unwarned() -> None:
    """tests/topo/random_cases/busy-gap-multicast-receiver.yaml (fuzz seed 3, issue 46): H2's first backlog held 2
    departures of its 1,250 packets/s playout in a report gap of 1.06 ms, read as 1,881 packets/s; every starved report
    after it took the stamps of S1's queue toward H2 up to that rate as drained, S1's law climbed to 2,019 packets/s
    over an 80 ms horizon and H2's 20-packet buffer lost 7 at seeds 1-3, unwarned. The backlog's drain timed from
    departure to departure (controlplane/forecast.py, ``_note_backlog_drain``) is the playout's."""
    for seed in (1, 2, 3):
        v = judge_case("busy-gap-multicast-receiver.yaml", seed=seed)
        assert v.problems == [], (seed, v.problems)
