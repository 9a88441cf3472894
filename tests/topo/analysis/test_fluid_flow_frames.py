"""The fluid model's buffer counts what it holds flow by flow, each flow's fluid as that flow's packets
(topo/analysis/fluid_network.py, ``_Network._weight``; engine/src/analysis/fluid.rs, a leg's weight).

Issue 46 (tests/topo/random_cases/small-frames-shared-fifo.yaml): H2's 200 B and 1448 B flows enter S1's
22-packet buffer from H2; the 200 B ones wait in S1's FIFO toward H4 behind H3's large frames, the 1448 B ones
pass. The buffer held the 200 B packets, but the model counted them at the link's mean frame (351 B): 1.75
times too few packets: the buffer peaked at 85 % in the model, unwarned, and filled (22 packets) in the run.
"""

from __future__ import annotations

import pytest

from runtime.fluid import FluidPlant
from tests.paths import RANDOM_CASES
from topo.analysis.fluid_network import _Network
from topo.file.schema import load_topology_text
from topo.net.plan import flow_frame_bytes

SMALL, LARGE = 200, 1448
MEAN = 2 / (1 / SMALL + 1 / LARGE)  # bytes: the two flows' packets at equal bits
CAPACITY = 22  # packets


def _shared_buffer(weights: tuple[float, float]) -> tuple[FluidPlant, int]:
    """Buffer (22 packets of the mean frame, in units of the small frame) fed by one host's two flows at equal
    bits, each unit of fluid counting ``weights`` in it; the small flow's queue onward never sends (it waits
    behind another host's backlog), the large one's sends at once."""
    ratio = MEAN / SMALL  # units per packet of the mean frame
    plant = FluidPlant(0.001, False)
    buf = plant.add_buffer(CAPACITY * ratio)
    legs = [plant.add_leg(1, buf, w) for w in weights]
    out = [plant.add_leg(1) for _ in weights]
    stuck, fast = plant.add_queue(1e-9), plant.add_queue(1e9)
    for q, here, onward in ((stuck, legs[0], out[0]), (fast, legs[1], out[1])):
        plant.add_slot(q, 0, here, onward)
        plant.route_leg(here, (q, 0), [])
    plant.add_sender(1e9, 8.0 * SMALL, [(leg, 0.0, float("inf")) for leg in legs], False, [400e3, 400e3])
    return plant, buf


def test_a_buffer_holds_the_packets_of_the_flow_that_waits_not_the_mean_frames() -> None:
    """Only the small flow's packets stay: the buffer is full when 22 of them wait (at 250 a second, after 88 ms),
    and loses from then on."""
    ratio = MEAN / SMALL
    plant, buf = _shared_buffer((MEAN / SMALL, MEAN / LARGE))
    plant.run(0, 1000)
    held, _, dropped = plant.report(buf)
    assert held / ratio == pytest.approx(CAPACITY)
    assert dropped
    (_, lost, first), = plant.peaks()
    assert lost > 0 and first is not None
    assert first == pytest.approx(CAPACITY / 250, abs=0.003)


def test_weights_of_one_count_the_fluid_as_it_is() -> None:
    """Weights of 1 (one frame size): the buffer counts units, as before legs had weights: 22 mean frames hold 38.6
    of the small flow's 200 B units, full after 154 ms."""
    ratio = MEAN / SMALL
    plant, buf = _shared_buffer((1.0, 1.0))
    plant.run(0, 1000)
    held, _, _ = plant.report(buf)
    assert held == pytest.approx(CAPACITY * ratio)
    first = plant.peaks()[0][2]
    assert first is not None
    assert first == pytest.approx(CAPACITY * ratio / 250, abs=0.003)


def test_a_weight_must_be_positive_and_finite() -> None:
    plant = FluidPlant(0.001, False)
    buf = plant.add_buffer(10.0)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="leg weight"):
            plant.add_leg(1, buf, bad)


def test_a_hosts_small_frames_count_more_than_a_unit_a_unit_in_its_first_hops_buffer() -> None:
    """In the case's model H2's legs into S1 count their fluid as their flows' packets in the link's mean frame:
    the 200 B flow's more than a unit a unit, the 1448 B flow's less, each its packets at the mean."""
    name = "small-frames-shared-fifo.yaml"
    topo = load_topology_text((RANDOM_CASES / name).read_text(), name)
    net = _Network(topo, 2.0, 1.0)
    frame = net._frame("H2", "S1")
    got = sorted((leg.weight, leg.weight * 8 * size) for leg, size in zip(net.legs, _sizes(topo, net))
                 if (leg.a, leg.b) == ("H2", "S1"))
    assert [w for w, _ in got] == [pytest.approx(frame / (8 * LARGE)), pytest.approx(frame / (8 * SMALL))]
    assert got[0][0] < 1.0 < got[1][0]


def _sizes(topo, net: _Network) -> list[int]:  # type: ignore[no-untyped-def]
    """Each leg's flow's frame (bytes), in the model's order of legs (its flows', each path's legs in turn)."""
    return [flow_frame_bytes(f) for f in topo.flows if f.control == "alinea" and f.sends
            for _ in zip(f.path, f.path[1:])]
