"""The soak's split of forwarding stalls into the machine's pauses and the switch's own."""

from __future__ import annotations

import os

import pytest

from tests.bench.hiccup import Meters, attribute


def test_a_stall_inside_a_pause_of_the_switch_core_is_the_machines() -> None:
    pauses = [[10.000, 10.030]]
    res = attribute([[10.002, 10.035]], pauses)  # 33 ms stall, 28 ms of it paused
    assert res == {"own_max_s": pytest.approx(0.005), "own_over": 0, "paused": 1}


def test_a_stall_outside_any_pause_stays_the_switchs() -> None:
    res = attribute([[20.0, 20.025], [30.0, 30.021]], [[10.0, 10.030]])
    assert res["own_over"] == 2 and res["paused"] == 0
    assert res["own_max_s"] == pytest.approx(0.025)


def test_a_pause_covering_only_part_of_a_long_stall_leaves_the_rest_to_the_switch() -> None:
    res = attribute([[0.0, 0.060]], [[0.010, 0.020], [0.030, 0.035]])
    assert res["own_over"] == 1 and res["own_max_s"] == pytest.approx(0.045)


def test_a_frame_stamped_before_the_senders_pause_is_not_held_by_the_switch() -> None:
    """The sender paused 950 ms between a frame's stamp and its send: the frame arrives 950 ms
    after its stamp, which is the sender's pause, not the switch's stall; a stall elsewhere stays
    the switch's."""
    from tests.bench.soak import SWITCH_CPU, own_stalls

    receiver = {"stall_spans": [[5.000, 5.951], [9.0, 9.030]], "stalls_over_20ms": 2, "max_short_stall_s": 0.001}
    meters = {SWITCH_CPU: {"rt": True, "hiccups": [[5.5, 5.6]], "max_s": 0.1}}
    res = own_stalls(receiver, meters, {"late_sends": [[5.000, 5.950]]})
    assert res["own_over"] == 1 and res["own_max_s"] == pytest.approx(0.030)
    assert own_stalls(receiver, meters, {})["own_max_s"] == pytest.approx(0.851)  # the core's pause only


def test_overlapping_pauses_are_counted_once() -> None:
    from tests.bench.soak import union

    assert union([[3.0, 4.0], [0.0, 1.0], [0.5, 2.0], [4.0, 4.5]]) == [[0.0, 2.0], [3.0, 4.5]]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_meters_run_on_each_core_and_report_their_pauses() -> None:
    cpus = sorted(os.sched_getaffinity(0))[:2]
    res = Meters(cpus, 0.3).start().results()
    assert sorted(res) == cpus
    for meter in res.values():
        assert not meter.get("failed") and meter["rt"] == (os.geteuid() == 0)  # SCHED_FIFO needs root
        assert all(e - s > 0.005 for s, e in meter["hiccups"])
