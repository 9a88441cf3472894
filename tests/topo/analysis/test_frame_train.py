"""The train of small frames behind a large one (topo/analysis/frame_train.py): a buffer counted in packets that
holds fewer than the small frames arriving while one large frame leaves by an exit no law paces, or plays out at a
receiver, is warned."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from hosts.receiver import PlayoutBuffer
from topo.analysis.check import check_topology, warnings
from topo.analysis.frame_train import frame_trains, receiver_trains
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


def receiver_line(capacity: int, large: int, small: int, in_mbps: int, playout_mbps: int) -> str:
    """H1 (``large`` B frames) and H3 (``small`` B) through S1 to H2, whose receive buffer holds ``capacity`` packets
    played out at ``playout_mbps``, fed over S1 -> H2 at ``in_mbps``."""
    return ("name: receiver-train\ndefaults:\n  link: {rate: 100Mbps, delay: 1ms, buffer: 300}\nnodes:\n"
            "  S1: {kind: switch}\n  H1: {kind: host}\n  H3: {kind: host}\n"
            f"  H2: {{kind: host, receive_buffer: {capacity}, playout: {playout_mbps}Mbps}}\nlinks:\n"
            f"  - {{ends: [H1, S1]}}\n  - {{ends: [H3, S1]}}\n  - {{ends: [S1, H2], rate: {in_mbps}Mbps}}\nflows:\n"
            f"  - {{name: big, src: H1, dst: H2, control: alinea, packet_size: {large}B}}\n"
            f"  - {{name: small, src: H3, dst: H2, control: alinea, packet_size: {small}B}}\n")


def replayed_peak(large: int, small: int, in_bps: int, playout_bps: int, smalls: int) -> int:
    """The most packets a receive buffer of unbounded capacity holds when one ``large`` frame arrives into it empty and
    ``smalls`` frames of ``small`` B follow it back to back at ``in_bps``: an event replay in exact time, each frame
    held until its own bits have played out (FIFO), a departure before an arrival at the same instant."""
    arrivals = [Fraction(0)] + [Fraction(8 * k * small, in_bps) for k in range(1, smalls + 1)]
    sizes = [large] + [small] * smalls
    ends: list[Fraction] = []  # each frame's end of playout
    for t, size in zip(arrivals, sizes):
        ends.append(max(t, ends[-1] if ends else t) + Fraction(8 * size, playout_bps))
    return max(sum(1 for a, e in zip(arrivals, ends) if a <= t < e) for t in arrivals)


def engine_drops(capacity: int, large: int, small: int, in_bps: int, playout_bps: int, smalls: int) -> int:
    """The engine's own receive buffer (hosts/receiver.py) fed the same train, in whole nanoseconds."""
    buf = PlayoutBuffer(capacity, float(playout_bps), large)
    buf.on_arrival(0, 0, large)
    for k in range(1, smalls + 1):
        buf.on_arrival(round(8e9 * k * small / in_bps), 1, small)
    return buf.dropped


@settings(max_examples=60, deadline=None)
@example(capacity=2, large=400, small_share=0.5, in_mbps=10, faster=0)  # the 2nd small frame comes as the large ends
@given(capacity=st.integers(1, 8), large=st.integers(65, 1500), small_share=st.floats(0.04, 0.99),
       in_mbps=st.integers(1, 100), faster=st.integers(0, 300))
def test_the_receiver_train_check_agrees_with_a_replay_of_the_buffer(capacity: int, large: int, small_share: float,
                                                                     in_mbps: int, faster: int) -> None:
    """Warned exactly when a replay of one large frame and the small frames behind it overflows the buffer, and the
    packets the warning asks for are the replay's peak; the engine's buffer, fed the train, drops exactly then too
    (away from a tie of an arrival with the end of the large frame's playout, which whole nanoseconds decide)."""
    small = max(64, min(large - 1, round(large * small_share)))
    playout_mbps = in_mbps + in_mbps * faster // 100
    topo = load_topology_text(receiver_line(capacity, large, small, in_mbps, playout_mbps), "receiver-train.yaml")
    train = receiver_trains(topo, {("S1", "H2")}).get(("S1", "H2"))
    in_bps, playout_bps = in_mbps * 1_000_000, playout_mbps * 1_000_000
    smalls = capacity + math.ceil(large * in_bps / (small * playout_bps)) + 2
    peak = replayed_peak(large, small, in_bps, playout_bps, smalls)
    assert (train is not None) == (peak > capacity)
    if train is not None:
        assert train.need == peak and train.playout and (train.large_bytes, train.small_bytes) == (large, small)
    ratio = large * in_bps / (small * playout_bps)
    assume(abs(ratio - round(ratio)) * 8e9 * small / in_bps > 2)  # the tie more than 2 ns away
    assert (engine_drops(capacity, large, small, in_bps, playout_bps, smalls) > 0) == (peak > capacity)


def test_the_receiver_train_of_fuzz_seed_5_is_warned_with_its_numbers() -> None:
    """make fuzz-topo seed 5, fail-4 (tests/topo/random_cases/receiver-frame-train.yaml): 200 B frames arrive 160 µs
    apart at 10 Mb/s, 3 while a 1448 B frame plays out at 20 Mb/s (579 µs): 4 packets in a 2-packet buffer."""
    text = warnings(load_topology_text(receiver_line(2, 1448, 200, 10, 20), "receiver-train.yaml"), 1.0)
    assert any(w.startswith("law S1->H2") and "receive buffer counts packets (2)" in w and "3 of S1's 200 B frames"
               in w and "one 1448 B frame plays out at 20Mbps" in w and "receive_buffer of at least 4 packets" in w
               for w in text), text
    assert receiver_trains(load_topology_text(receiver_line(4, 1448, 200, 10, 20), "r.yaml"), {("S1", "H2")}) == {}


def test_a_playout_slower_than_its_link_or_frames_of_one_size_make_no_receiver_train() -> None:
    """What builds behind a playout slower than the link is in bits (the fluid model's and the room rule's)."""
    laws = {("S1", "H2")}
    assert receiver_trains(load_topology_text(receiver_line(2, 1448, 200, 30, 20), "r.yaml"), laws) == {}
    assert receiver_trains(load_topology_text(receiver_line(1, 1448, 1448, 10, 20), "r.yaml"), laws) == {}
