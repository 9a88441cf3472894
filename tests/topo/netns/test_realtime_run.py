"""A netns run's real-time priority (topo/netns/switches.py): every thread of the runner for the
run, inherited by the processes it starts, and back to normal after, even when the run fails."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from topo.netns.plumbing import NetnsError
from topo.netns.switches import child_rt_priority, realtime_run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="real-time priorities need root")


def _child_policy() -> int:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
                         capture_output=True, text=True, timeout=30, check=True)
    return int(out.stdout)


def test_the_run_and_what_it_starts_are_real_time_and_normal_after() -> None:
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    other = threading.Event()
    seen: list[int] = []
    t = threading.Thread(target=lambda: (other.wait(10), seen.append(os.sched_getscheduler(0))))
    t.start()  # a thread that exists before the run (the agents' and gRPC's threads do)
    with realtime_run(3):
        assert os.sched_getscheduler(0) == os.SCHED_RR and os.sched_getparam(0).sched_priority == 3
        assert _child_policy() == os.SCHED_RR
        other.set()
        t.join(10)
    assert seen == [os.SCHED_RR]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER and _child_policy() == os.SCHED_OTHER


def test_a_failed_run_still_goes_back_to_normal_priority() -> None:
    with pytest.raises(RuntimeError), realtime_run(3):
        raise RuntimeError("the run failed")
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_the_priority_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HBH_NETNS_RT_PRIORITY", "0")
    assert child_rt_priority() == 0
    monkeypatch.setenv("HBH_NETNS_RT_PRIORITY", "7")
    assert child_rt_priority() == 7
    monkeypatch.setenv("HBH_NETNS_RT_PRIORITY", "high")
    with pytest.raises(NetnsError, match="HBH_NETNS_RT_PRIORITY='high'"):
        child_rt_priority()
    monkeypatch.setenv("HBH_NETNS_RT_PRIORITY", "7")
    with realtime_run(2):  # under chrt the runner keeps what it was given
        assert child_rt_priority() == 0
