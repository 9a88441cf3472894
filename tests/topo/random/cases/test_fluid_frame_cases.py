"""Random topologies that lost packets, unwarned, because the laws-together model
(topo/analysis/fluid_network.py) counted a buffer in frames its packets were not: each link's fluid was in
the largest frame of any flow crossing it, so a buffer of small frames held several times the bits it
holds (issue 46). Each file's first lines hold its run length and the problem the judge reported when it
was found by ``make fuzz-topo``."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import case_seconds, judge
from topo.analysis.fluid_network import _mean_frame_bits, _Network
from topo.file.schema import load_topology_text

CASES = RANDOM_CASES


def _case(name: str) -> tuple[str, float]:
    text = (CASES / name).read_text()
    return text, case_seconds(text)


def test_a_capacity_drop_behind_a_line_of_small_frames_is_warned() -> None:
    """f1 (1500 B, at most 2 Mb/s, until 0.6 s) and f2 (576 B) cross a line of 229-packet buffers whose last
    link falls from 50 to 5 Mb/s at 0.84 s: the cut passes back hop by hop and S3's buffer from S2 and S2's from
    S1 overflowed (18 lost, seed 1), unwarned. The model ran the line in 1500-byte packets, each buffer 2.6
    times its bits in 576-byte ones, and its wave came 0.1 s later, its loss after the run's end. Warned on
    the laws whose buffers lose."""
    text, seconds = _case("frames-capacity-drop-line.yaml")
    verdict = judge(text, seconds, all_alinea=True, source="frames-capacity-drop-line.yaml")
    assert verdict.problems == []
    assert verdict.lost > 0
    assert any(w.startswith("law S2->S3") or w.startswith("law S1->S2") for w in verdict.warned), (
        verdict.warned
    )


def test_a_backlog_of_mixed_frames_behind_a_regulated_hop_is_lossless_and_the_model_agrees() -> None:
    """S1's 50 ms FIFO of 200 B and 1448 B frames drains through S2 toward S5, whose 33-packet buffer S2's law
    regulates: S5's buffer from S2 dropped 0.45-1.0 s (71 lost, seed 1; 0 on the shaper), unwarned, while the
    model ran its links in 1448-byte packets, S5's buffer several times its bits in the mix. The run loses
    nothing since the start-up brake's drain became, while the window holds a starved report, no lower than the
    drain over the newest report gap (controlplane/forecast.py, ``QueueForecast.law_forecast``). The model,
    whose laws now hear nothing before their flows' packets arrive (as the run's), agrees: no warning (it
    warned while its laws climbed on idle reports before the flows' drawn starts). It warned S2 -> S5 again once a
    starved report's forecast counted the queue's stamps (``QueueForecast._starved_forecast``): the model's queue
    held a standing backlog stamped faster than the drain of S5's last backlog, and S2's law swung; the model
    leaves that rule out (``counts_stamps`` False in controlplane/fluid_laws.py), as it does the trend fit."""
    text, seconds = _case("stamped-mixed-backlog.yaml")
    verdict = judge(text, seconds, all_alinea=True, source="stamped-mixed-backlog.yaml")
    assert verdict.problems == []
    assert verdict.lost == 0 and verdict.warned == []


def test_the_model_keeps_the_bits_from_link_to_link_and_counts_each_buffer_in_its_flows_frames() -> None:
    """One unit of fluid on every link (the smallest frame), so that what a leg hands the next is the same
    bits; a buffer's packets are its flows' mean frame at their expected shares of the link, in units."""
    text, seconds = _case("frames-capacity-drop-line.yaml")
    topo = load_topology_text(text, "frames-capacity-drop-line.yaml")
    net = _Network(topo, seconds, 1.0)
    assert net.unit_bits == 8 * 576
    assert set(net.bits.values()) == {net.unit_bits}
    # f1 at its 2 Mb/s beside f2 at the 48 left of 50 Mb/s: bytes over packets (598 bytes a packet)
    mean = 50e6 / (2e6 / 1500 + 48e6 / 576)
    assert abs(_mean_frame_bits(topo, "S1", "S2", net.modelled) / 8 - mean) < 1e-6
    buffer = net.buffers[("S3", "S2")]  # fed by the 20 Mb/s S2-S3: f2 at 18
    assert buffer.packets == topo.ports[("S3", "S2")].capacity
    assert buffer.capacity == round(buffer.packets * 20e6 / (2e6 / 1500 + 18e6 / 576) / 576)


def test_a_topology_of_one_frame_size_runs_in_its_packets() -> None:
    """With one frame size the unit is that frame and every buffer is in its packets, as before."""
    text, seconds = _case("frames-capacity-drop-line.yaml")
    one = text.replace("packet_size: 1500B", "packet_size: 576B")
    topo = load_topology_text(one, "one-size")
    net = _Network(topo, seconds, 1.0)
    assert net.unit_bits == 8 * 576
    assert all(b.ratio == 1.0 and b.capacity == b.packets for b in net.buffers.values())
