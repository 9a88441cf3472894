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


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_meters_run_on_each_core_and_report_their_pauses() -> None:
    cpus = sorted(os.sched_getaffinity(0))[:2]
    res = Meters(cpus, 0.3).start().results()
    assert sorted(res) == cpus
    for meter in res.values():
        assert not meter.get("failed") and meter["rt"] == (os.geteuid() == 0)  # SCHED_FIFO needs root
        assert all(e - s > 0.005 for s, e in meter["hiccups"])
