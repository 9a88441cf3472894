"""A run of small frames that a switch's backlog sends into the next switch, whose queue rate in packets/s follows a
larger mean frame (topo/analysis/frame_run.py)."""

from __future__ import annotations

import re

from tests.paths import RANDOM_CASES, ROOT
from topo.analysis.frame_run import frame_runs
from topo.file.schema import load_topology, load_topology_text

CASE = (RANDOM_CASES / "small-frame-run-dip.yaml").read_text()
S1_S3 = "  - {ends: [S1, S3], delay: 0.5ms, buffer: 20ms}"


def _run(text: str):  # type: ignore[no-untyped-def]
    return frame_runs(load_topology_text(text, "small-frame-run-dip.yaml")).get(("S1", "S3"))


def test_a_run_of_small_frames_from_a_backlog_overfills_the_next_switchs_buffer() -> None:
    run = _run(CASE)
    assert run is not None
    assert run.exit == "S2" and run.small_bytes == 200 and run.mean_bytes > run.small_bytes
    assert run.gained_pkts > run.room_pkts


def test_the_buffer_it_names_holds_the_gain() -> None:
    run = _run(CASE)
    assert run is not None
    assert S1_S3 in CASE
    assert _run(CASE.replace(S1_S3, f"  - {{ends: [S1, S3], delay: 0.5ms, buffer: {run.need_pkts}}}")) is None
    assert _run(CASE.replace(S1_S3, f"  - {{ends: [S1, S3], delay: 0.5ms, buffer: {run.need_pkts - 1}}}")) is not None


def test_one_frame_size_has_no_run() -> None:
    assert _run(re.sub(r"packet_size: \d+B", "packet_size: 200B", CASE)) is None


def test_small_frames_that_share_their_link_with_large_ones_make_no_run() -> None:
    """f2's frames from H2, beside f3's: H2's pacer interleaves them, no link brings S1 small frames alone."""
    assert _run(CASE.replace("{name: f2, src: H1,", "{name: f2, src: H2,")) is None


def test_the_shipped_topologies_have_no_run() -> None:
    for path in sorted((ROOT / "topo").glob("*.yaml")):
        assert frame_runs(load_topology(path)) == {}, path.name
