"""Random topologies that lost packets, unwarned, on a path only ECMP takes: the links the 5-tuple hash
picks and the tie-break (``Flow.path``) does not (issue 46). Each file's first lines hold its run length
and the problem the judge reported when it was found by ``make fuzz-topo``."""

from __future__ import annotations

import pytest

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import case_seconds, judge
from topo.analysis.check import check_topology
from topo.file.schema import load_topology_text
from topo.net.plan import buffer_unit_bytes, expected_frame_bytes, packet_bytes_over, streams_over
from topo.net.routes import routed_paths

CASES = RANDOM_CASES


def _case(name: str) -> tuple[str, float]:
    text = (CASES / name).read_text()
    return text, case_seconds(text)


def test_a_slow_exit_behind_a_line_only_ecmp_takes_is_warned() -> None:
    """f1's 200-byte frames go H1 -> S1 -> S4 -> S2 -> H4 (the hash; the tie-break is S3), H4 plays 1 Mb/s
    of them behind 5 Mb/s links of 20 ms: H4's buffer fills, S2's law cuts, and the cut passes back one
    hop per loop while S2's 5-packet buffer, then S4's, take the source's excess. The run lost 10,
    unwarned: the analysis ran S1 -> S4 and S4 -> S2 in 1,000-byte frames (no flow crossed them by the
    tie-break), a 1 Mb/s line of f1's frames, and saw nothing fill behind S1. Warned on the laws
    whose buffers lose."""
    text, seconds = _case("ecmp-slow-exit-line.yaml")
    verdict = judge(text, seconds, all_alinea=True, source="ecmp-slow-exit-line.yaml")
    assert verdict.problems == []
    assert verdict.lost > 0
    assert any(w.startswith("law S1->S4") or w.startswith("law S4->S2") for w in verdict.warned), (
        verdict.warned
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_flows_on_a_line_only_ecmp_takes_are_warned_where_they_lose(seed: int) -> None:
    """f1 (to H3, 1 Mb/s) and f2 (to H4, 1 Mb/s, from 0.4 s) both hash to S1 -> S4 -> S2, whose 2 Mb/s link
    has a 5-packet buffer at S2: 90 lost there and at S4 (seed 1), unwarned, the analysis running the line
    in 1,000-byte frames. Warned on S4 -> S2, the law whose buffer lost. The run now loses nothing at seeds 1-3:
    since a starved report's forecast counts the queue BMv2 has already stamped, and a backlog in a window that
    holds a starved report is forecast at the backlog's drain (controlplane/forecast.py). The judge must pass every seed, and the
    model, which runs the line in the flows' frames, still warns S4 -> S2 (a warning without loss is the
    judge's lesser error)."""
    text, seconds = _case("ecmp-two-flows-line.yaml")
    verdict = judge(text, seconds, all_alinea=True, seed=seed, source="ecmp-two-flows-line.yaml")
    assert verdict.problems == []
    assert verdict.lost == 0
    assert any(w.startswith("law S4->S2") for w in verdict.warned), verdict.warned


def test_the_hashed_paths_links_carry_the_flows_frames_and_the_tie_breaks_carry_none() -> None:
    """What the agent's plan, the derived parameters and the fluid model take for a link's frames follows
    the path the switches hash the flow to."""
    text, _ = _case("ecmp-slow-exit-line.yaml")
    topo = load_topology_text(text, "ecmp-slow-exit-line.yaml")
    path = routed_paths(topo)["f1"]
    assert path == ("H1", "S1", "S4", "S2", "H4") and topo.flows[0].path != path
    for u, v in zip(path, path[1:]):
        assert [f.name for f in streams_over(topo, u, v)] == ["f1"]
        assert packet_bytes_over(topo, u, v) == expected_frame_bytes(topo, u, v) == 200
    assert streams_over(topo, "S1", "S3") == [] and streams_over(topo, "S3", "S2") == []
    assert buffer_unit_bytes(topo, "S4") == 0  # one size: the buffers are in packets
    checks = {c.key: c for c in check_topology(topo, 2.0)}
    assert set(checks) == set(zip(path, path[1:]))
    assert all(c.loop.packet_bits == 8 * 200 for c in checks.values())


def test_the_line_is_not_warned_without_a_slow_exit_or_with_room_for_the_excess() -> None:
    """The same line with H4 playing 5 Mb/s (no exit slower than the line): no law warned; or with 200-packet
    buffers at S4 and S2 (room for what the source sends while the cut passes back): no law into them warned.
    There S2's law toward H4 is (its 20-packet receive buffer, which the variant keeps, peaks at 95 % in the model,
    within a packet of full, and at 85 % in the run, 17 packets, at seeds 1-3: a false warning of the margin rule).
    The model's peak there was 92-95 % as the flows' starts moved against the intervals' ends its buffers reported
    at; it is 95 % at any start now that they report as the data plane's do (engine/src/analysis/fluid_loop.rs)."""
    text, seconds = _case("ecmp-slow-exit-line.yaml")
    fast = text.replace("playout: 1Mbps", "playout: 5Mbps")
    roomy = text.replace("- {ends: [S2, S4], buffer: 5}", "- {ends: [S2, S4], buffer: 200}").replace(
        "- {ends: [S1, S4]}", "- {ends: [S1, S4], buffer: 200}"
    )
    assert fast != text and roomy != text and "buffer: 5}" not in roomy
    checks = check_topology(load_topology_text(fast, "fast-exit.yaml"), seconds)
    assert all(c.warning() is None for c in checks), [c.warning() for c in checks]
    enlarged = {("S1", "S4"), ("S4", "S2")}  # the laws into S4's and S2's buffers
    checks = [c for c in check_topology(load_topology_text(roomy, "roomy.yaml"), seconds) if c.key in enlarged]
    assert len(checks) == 2 and all(c.warning() is None for c in checks), [c.warning() for c in checks]
