"""The train of small frames behind a large one (topo/analysis/frame_train.py): a buffer counted in packets that
holds fewer than the small frames arriving while one large frame leaves by an exit no law paces is warned."""

from __future__ import annotations

import pytest

from topo.analysis.check import check_topology, warnings
from topo.analysis.frame_train import frame_trains
from topo.file.schema import load_topology_text


def line(buffer: int, small: int = 200, out_rate: str = "50Mbps", paced_exit: bool = False) -> str:
    """H1 (1448 B frames) and H2 (``small`` B) through S1 -> S2 (S2's buffer from S1: ``buffer`` packets, 50 Mb/s) to
    H3, over S2 -> H3 at ``out_rate``, or with ``paced_exit`` through S3, whose reports pace S2's exit."""
    exit_links = ("  - {ends: [S2, S3], rate: " + out_rate + "}\n  - {ends: [H3, S3]}\n" if paced_exit else
                  "  - {ends: [H3, S2], rate: " + out_rate + "}\n")
    return ("name: train-line\ndefaults:\n  link: {rate: 50Mbps, delay: 1ms, buffer: 300}\nnodes:\n"
            "  S1: {kind: switch}\n  S2: {kind: switch}\n" + ("  S3: {kind: switch}\n" if paced_exit else "") +
            "  H1: {kind: host}\n  H2: {kind: host}\n  H3: {kind: host}\nlinks:\n"
            f"  - {{ends: [S1, S2], buffer: {buffer}}}\n  - {{ends: [H1, S1]}}\n  - {{ends: [H2, S1]}}\n" + exit_links +
            "flows:\n  - {name: big, src: H1, dst: H3, control: alinea, packet_size: 1448B}\n"
            f"  - {{name: small, src: H2, dst: H3, control: alinea, packet_size: {small}B}}\n")


def train(text: str):  # type: ignore[no-untyped-def]
    checks = {c.key: c for c in check_topology(load_topology_text(text, "train-line.yaml"), 1.0)}
    return checks[("S1", "S2")].train


def test_a_buffer_shorter_than_the_train_behind_one_large_frame_is_warned() -> None:
    """fail-3 and fail-4 of make fuzz-topo seed 3 (tests/topo/random_cases/small-frame-train-buffer.yaml): 7 frames
    of 200 B arrive in the 232 µs a 1448 B frame takes to leave at the same rate; a 5-packet buffer lost 2."""
    t = train(line(5))
    assert t is not None and (t.exit, t.frames, t.capacity) == ("H3", 7, 5)
    text = warnings(load_topology_text(line(5), "train-line.yaml"), 1.0)
    assert any(w.startswith("law S1->S2") and "back to back" in w and "at least 7 packets" in w for w in text), text


@pytest.mark.parametrize("buffer", [7, 8])
def test_a_buffer_that_holds_the_train_is_not_warned_for_it(buffer: int) -> None:
    assert train(line(buffer)) is None


def test_the_train_is_as_long_as_the_large_frame_is_slower_to_leave_than_the_small_ones_to_come() -> None:
    """A faster exit sends the large frame sooner (3 small frames at twice the rate); larger small frames are fewer;
    an exit slower than the feed is left to the fluid model (what builds there is in bits)."""
    assert train(line(2, out_rate="100Mbps")).frames == 3  # type: ignore[union-attr]
    assert train(line(3, out_rate="100Mbps")) is None
    assert train(line(5, small=576)) is None  # 2 frames of 576 B
    assert train(line(5, out_rate="25Mbps")) is None


def test_frames_of_one_size_and_a_paced_exit_make_no_train() -> None:
    assert train(line(5, small=1448)) is None
    assert train(line(5, paced_exit=True)) is None  # S3 reports: S2's queue toward it spaces every frame at its rate


def test_only_flows_that_share_the_exit_make_a_train() -> None:
    """The small frames leave S2 toward H4, the large toward H3: none waits behind a large one."""
    text = (line(5).replace("  H3: {kind: host}\n", "  H3: {kind: host}\n  H4: {kind: host}\n")
            .replace("  - {ends: [H3, S2]", "  - {ends: [H4, S2]}\n  - {ends: [H3, S2]")
            .replace("{name: small, src: H2, dst: H3", "{name: small, src: H2, dst: H4"))
    assert "H4" in text and train(text) is None
    assert frame_trains(load_topology_text(line(5), "train-line.yaml"), set())[("S1", "S2")].exit == "H3"
