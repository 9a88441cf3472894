"""Random topologies that lost packets, unwarned, at a law's floor while the next switch's queue rate, set in
packets/s from the mean frame it had sent, carried a share of a law that what is behind it held below its link
(issue 46). Each file's first lines hold its run length and the problem the judge reported when it was found by
``make fuzz-topo``."""

from __future__ import annotations

import re

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import case_seconds, judge
from topo.analysis.check import warnings
from topo.file.schema import load_topology_text

CASES = RANDOM_CASES


def test_a_dip_takes_its_share_of_a_law_held_below_its_link_not_of_the_link() -> None:
    """H1 (floor 4 Mb/s, a fiftieth of its 200 Mb/s link) sends 1448 B and 576 B frames toward H4's 5 Mb/s link,
    then 1500 B and 200 B ones too (one toward H3), all through S1 -> S3 -> S2. H4's exit held S1's law toward S3
    near its own 4 Mb/s floor, and when the 200 B frames came S1's queue rate, in packets/s from the mean frame it
    had sent (1450 B, falling to 504 B only 0.25 s later), carried a third of that law's bits: S1 forwarded
    0.5-2.7 Mb/s from 0.21 to 0.57 s while H1 sent its floor, and S1's buffer from H1 overflowed (20 lost, seed 1).
    The check took the dip as a share of S1's 200 Mb/s link. Warned, on H1 -> S1: the share of the law's rate
    where the hold left it. So too with the flows started where the run starts them (up to 200 ms late, from
    the seed): f5 alone from 0.032 s, f3 toward H3 from 0.117 s lifts the hold, but S3's buffer still holds
    its target of H4's packets when f2 and f4 come (0.153, 0.168 s). With H4's link as fast as the others
    nothing holds S1's law, and neither the check nor the run finds anything."""
    name = "mix-dip-held-law.yaml"
    text = (CASES / name).read_text()
    seconds = case_seconds(text)
    verdict = judge(text, seconds, all_alinea=True, source=name)
    assert verdict.problems == []
    assert any(w.startswith("law H1->S1") and "held it to before" in w for w in verdict.warned), (
        verdict.warned
    )
    # where the run (seed 1) starts them: each up to 200 ms after the file's start (topo/sim/network.py)
    runs = {"f1": "0.336s", "f2": "0.153s", "f3": "0.117s", "f4": "0.168s", "f5": "0.032s"}
    started = re.sub(r"(name: (f\d), [^}]*?start: )[0-9.]+s", lambda m: m.group(1) + runs[m.group(2)], text)
    assert all(f"start: {t}" in started for t in runs.values())
    run_warned = warnings(load_topology_text(started, "run-starts.yaml"), seconds)
    assert any(w.startswith("law H1->S1") for w in run_warned), run_warned
    fast = text.replace("- {ends: [H4, S2], rate: 5Mbps, buffer: 85}", "- {ends: [H4, S2], buffer: 85}")
    assert fast != text
    assert warnings(load_topology_text(fast, "fast-exit.yaml"), seconds) == []
