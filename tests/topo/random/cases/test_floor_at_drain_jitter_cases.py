"""A random topology that lost packets, unwarned, where a host law's floor is exactly what its only exit
drains and its flows mix frame sizes (issue 46; ``make fuzz-topo`` seed 9's fail-1, minimised): warned since
the floor check follows the reading pump (topo/analysis/floor_check.py, ``_reading_pump``). The file's first
lines hold its run length and the problem the judge reported when it was found.

H1's floor (2 Mb/s, a fiftieth of its 100 Mb/s link) is exactly what H2's 2 Mb/s link drains, and S1 has no
law toward H2: whatever H1 sends above its floor stays in S1's 9-packet buffer. Once f1 and f3 (1500 B) join
f2 (576 B), S1 counts the same bits as 6 to 9 packets from report to report (a report rides on an arrival;
read against 5 frames of the mean): the law's damping term lifts the rate on every fall of the count, its floor
clips every cut, and the buffer overflows at 1.17, 1.34 and 1.52 s."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import case_seconds, judge
from topo.analysis.floor_check import floor_overflows
from topo.file.schema import load_topology_text
from topo.net.starts import with_drawn_starts

NAME = "floor-at-drain-jitter.yaml"


def _case() -> tuple[str, float]:
    text = (RANDOM_CASES / NAME).read_text()
    return text, case_seconds(text)


def test_a_floor_at_the_drain_with_a_jittering_frame_mix_is_warned_or_not_lost() -> None:
    text, seconds = _case()
    verdict = judge(text, seconds, all_alinea=True, source=NAME)
    assert verdict.problems == []
    assert any(w.startswith("law H1->S1:") and "counts its frames" in w for w in verdict.warned), verdict.warned


def test_the_pump_needs_a_count_that_jitters() -> None:
    """The same host, the same floor at the same drain, without the jitter: f1 and f2 alone (1500 and 576 B,
    the count steady at its reading in the run), or f1, f3 and a third 1500 B flow (one size: the count at an
    arrival is the bits over the frame). Neither loses in the run, and the floor check does not warn either
    (the laws-together model may, of its own start-up); the three flows of the case it does warn."""
    text, seconds = _case()
    topo = with_drawn_starts(load_topology_text(text, NAME), 1)
    assert floor_overflows(topo, seconds)[("H1", "S1")].pump is not None
    steady = "\n".join(line for line in text.splitlines() if "name: f3" not in line)
    one_size = text.replace("packet_size: 576B", "packet_size: 1500B")
    for variant in (steady, one_size):
        verdict = judge(variant, seconds, all_alinea=True, source=NAME)
        assert verdict.problems == [] and verdict.lost == 0, verdict.summary.get("loss")
        assert not any("counts its frames" in w for w in verdict.warned), verdict.warned
        assert ("H1", "S1") not in floor_overflows(with_drawn_starts(load_topology_text(variant, NAME), 1), seconds)
