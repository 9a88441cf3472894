"""What makes the laws-together model cheap must not change what it says (topo/analysis/fluid_network.py):
the early stop once the network has settled, and a step set by the report intervals alone."""

from __future__ import annotations

import pytest

import topo.analysis.fluid_network as fn
from tests.paths import RANDOM_CASES
from tests.topo.random.test_random_topologies import TREE
from topo.file.schema import load_topology, load_topology_text
from topo.net.starts import with_drawn_starts

SHORT_LINKS = TREE.replace("delay: 2ms", "delay: 0.1ms")


def _peaks(topo, seconds: float) -> dict:  # type: ignore[no-untyped-def]
    return {p.buffer: (p.peak, p.lost_pkts) for p in fn.network_peaks(topo, seconds)}


#: floor-stamped-trickle.yaml (make fuzz-topo seed 3, as seed 1 starts it): S3's brake cut its queue toward S1 to
#: its floor (25 packets/s) and held its law at 1.25 Mb/s after, while the packets stamped at the floor trickled out
#: for 0.9 s; every buffer and law was steady, and the model stopped at 1.0 s as settled, before the backlog behind
#: them left at the rate then and overflowed S1's 20-packet buffer (the run lost 12 at 1.6 s, unwarned). The queues'
#: lags (engine/src/analysis/fluid_loop.rs, ``sample_state``) are state the early stop now waits on.
#: slow-descent-tiny-buffer-fabric.yaml (seed 1): f1 starts at 1.236 s and the model stopped at 1.243 s as
#: settled, the window then ending holding the quiet before f1 and 7 ms of its law's slow climb, the same as the
#: quiet one before it; run on, S1's 5-packet buffer fills (the run lost 1, unwarned). Both windows compared now
#: begin after the last start (``fn.settle_after``).
@pytest.mark.parametrize(("topo", "seconds"), [
    (lambda: load_topology("topo/paper-5router.yaml"), 20.0),
    (lambda: load_topology_text(TREE, "tree7.yaml"), 3.0),
    (lambda: with_drawn_starts(load_topology(RANDOM_CASES / "floor-stamped-trickle.yaml"), 1, "sim"), 4.0),
    (lambda: with_drawn_starts(load_topology(RANDOM_CASES / "slow-descent-tiny-buffer-fabric.yaml"), 1, "sim"),
     4.0),
])
def test_the_early_stop_changes_no_buffers_peak_or_loss(topo, seconds: float, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    t = topo()
    early = _peaks(t, seconds)
    monkeypatch.setattr(fn, "SETTLE_MIN_S", 1e9)  # never settles: the whole horizon
    full = _peaks(t, seconds)
    assert early.keys() == full.keys()
    for key, (peak, lost) in full.items():
        capacity = t.ports.get(key, t.host_buffers.get(key)).capacity
        assert early[key][0] * capacity == pytest.approx(peak * capacity, abs=1.0), key
        assert (early[key][1] >= fn.LOSS_PKTS) == (lost >= fn.LOSS_PKTS), key


def test_a_network_that_settles_stops_after_its_last_event_and_before_its_horizon() -> None:
    from topo.file.scaling import scaled_topology

    dropping = fn._Network(scaled_topology("capacity-drop", 50), 60.0, 1.0)  # R3-R4 falls at 30 s
    dropping.run()
    assert dropping.stopped_s is not None and 30.0 < dropping.stopped_s < 60.0


def test_the_step_follows_the_report_intervals_not_the_shortest_link() -> None:
    long_links = fn._Network(load_topology_text(TREE, "tree7.yaml"), 2.0, 1.0)
    short = load_topology_text(SHORT_LINKS, "tree7-short.yaml")
    short_links = fn._Network(short, 2.0, 1.0)
    shortest_interval = min(p.interval_us for p in short.ports.values()) / 1e6
    assert short_links.dt == pytest.approx(max(shortest_interval / fn.STEPS_PER_INTERVAL, 2.0 / fn.MIN_STEPS))
    assert short_links.dt > min(link.delay_ns for link in short.links) / 1e9 / fn.STEPS_PER_INTERVAL
    assert long_links.dt > 0


def test_the_remedys_runs_stop_at_their_first_loss_and_find_the_same_scale(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from topo.experiments.hol import HolSetup, hol_topology

    t = hol_topology(HolSetup(), "alinea", incast=True)  # the shipped 2 x 2 fabric: its buffers must grow
    stopped = []
    run = fn._Network.run

    def watched(self):  # type: ignore[no-untyped-def]
        out = run(self)
        stopped.append(self.plant.overflowed)
        return out

    monkeypatch.setattr(fn._Network, "run", watched)
    early = fn.smallest_scale(t, 3.0)
    assert any(stopped)  # some of its runs lost enough to stop early
    init = fn._Network.__init__

    def to_the_end(self, topo, duration_s, scale, max_steps=fn.MAX_STEPS, stop_at_loss=False, frames=False):  # type: ignore[no-untyped-def]
        init(self, topo, duration_s, scale, max_steps, False, frames)

    monkeypatch.setattr(fn._Network, "__init__", to_the_end)
    stopped.clear()
    assert fn.smallest_scale(t, 3.0) == early
    assert not any(stopped)



def _hol_fabric():  # type: ignore[no-untyped-def]
    from topo.experiments.hol import HolSetup, hol_topology

    return hol_topology(HolSetup(), "alinea", incast=True)


@pytest.mark.parametrize(("topo", "seconds"), [
    (lambda: load_topology_text(TREE, "tree7.yaml"), 3.0),  # symmetric subtrees: twin laws
    (_hol_fabric, 3.0),  # a fabric's hosts and spines
])
def test_twin_laws_answering_a_report_once_change_no_peak_loss_or_time(topo, seconds: float, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    answered = []
    run = fn._Network.run

    def counted(self):  # type: ignore[no-untyped-def]
        out = run(self)
        answered.append(self.plant.answers())  # the answers its laws computed
        return out

    monkeypatch.setattr(fn._Network, "run", counted)
    shared = fn.network_peaks(topo(), seconds)
    once = sum(answered)
    monkeypatch.setattr(fn._Network, "share_twins", False)
    answered.clear()
    assert fn.network_peaks(topo(), seconds) == shared  # the same floats, to the last bit
    assert once < sum(answered)  # from fewer answers computed


def test_a_law_that_fails_between_the_engines_steps_fails_the_model_with_its_own_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    class Broken:
        def __init__(self, controls):  # type: ignore[no-untyped-def]
            pass

        def answer(self, calls):  # type: ignore[no-untyped-def]
            raise ZeroDivisionError("the law's own error")

    monkeypatch.setattr(fn, "LawBatch", Broken)
    with pytest.raises(ZeroDivisionError, match="the law's own error"):
        fn.network_peaks(load_topology_text(TREE, "tree7.yaml"), 1.0)


def test_the_plant_runs_its_laws_only_once_it_has_them() -> None:
    from runtime.fluid import FluidPlant

    plant = FluidPlant(0.001, True)
    with pytest.raises(ValueError, match="set_loop first"):
        plant.drive(0, 10)
    with pytest.raises(IndexError, match="queue 0"):
        plant.set_loop(lambda calls: [], [(False, 0, 10, 1_000_000, 0)], [], [0.0], 1, 1, 0.0, 0.5, False)
