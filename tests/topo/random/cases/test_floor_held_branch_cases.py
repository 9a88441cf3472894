"""The room a law's floor can fill ends where a law behind it can hold its buffer (issue 46): the floor check
(topo/analysis/floor_check.py, ``_Stretch.room_bits``) counted every buffer behind v on the flows' paths as
room for the floor's excess, even behind a law whose floor is below what its buffer drains. That law cuts to
the drain and holds its buffer at its target, so the excess gathers in v's buffer: the room was overstated
and a floor that fills v's buffer went unwarned (make fuzz-topo seed 6, all-ALINEA draw #26)."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import judge
from topo.analysis.floor_check import _Stretch, floor_overflows
from topo.file.schema import load_topology_text
from topo.net.plan import law_frames
from topo.net.routes import routed_paths
from topo.net.starts import with_drawn_starts

NAME = "multicast-floor-held-branch.yaml"
SECONDS = 2.4


def test_the_floor_excess_stays_before_a_law_that_holds_its_buffer() -> None:
    """multicast-floor-held-branch.yaml at seed 1: H1's law toward S1 sits at its floor (10 Mb/s) with the group
    m0 alone until f1 starts at 0.39 s; m0's slowest copy leaves S3 at H4's 5 Mb/s. S1's law toward S3 (floor
    1 Mb/s) cuts to those 5 Mb/s and holds S3's buffer at its target, so S1's buffer from H1 gains 5 Mb/s and is
    full within the stretch (the run: full from 0.30 s, 261 dropped there). The room is S1's buffer above its
    target alone, not S3's 5 ms behind it; with S3's counted, it lasted past f1's start and nothing was found."""
    text = (RANDOM_CASES / NAME).read_text()
    topo = with_drawn_starts(load_topology_text(text, NAME), 1)
    f1_start_s = next(f.start_ns for f in topo.flows if f.name == "f1") / 1e9
    over = floor_overflows(topo, SECONDS)[("H1", "S1")]
    assert over.drain_bps == topo.link_between("S3", "H4").rate_bps
    assert over.from_s + over.fill_s < f1_start_s
    # the room: S1's buffer from H1 above its target, nothing behind it
    paths = {name: tuple(zip(p, p[1:])) for name, p in routed_paths(topo).items()}
    m0 = [f for f in topo.flows if f.start_ns < f1_start_s * 1e9]
    stretch = _Stretch(topo, paths, m0, {}, span=(0, int(f1_start_s * 1e9)))
    port = topo.ports[("S1", "H1")]
    frames, bits = law_frames(topo, "H1", "S1", port.capacity)
    assert stretch.room_bits("H1", "S1") == (port.capacity - topo.law[("H1", "S1")].o_max * frames) * bits
    verdict = judge(text, SECONDS, all_alinea=True, seed=1, source=NAME)
    assert verdict.lost > 0
    assert verdict.problems == []
    assert any(w.startswith("law H1->S1:") for w in verdict.warned), verdict.warned
