"""The netns teardown's steps: each bounded, none stops the rest, and the slow or failed ones
are named in the run's log (so a slow Ctrl-C can be explained)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import topo.netns.network as netns


def test_a_failing_step_is_logged_and_the_teardown_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    with caplog.at_level(logging.WARNING, logger="topo.netns.network"):
        netns._teardown_step("switch r1: agent stop", lambda: 1 // 0)
        netns._teardown_step("host h1: exit", lambda: ran.append("next"))
    assert ran == ["next"]
    assert "teardown: switch r1: agent stop failed: ZeroDivisionError" in caplog.text
    assert "host h1" not in caplog.text  # quick and fine: nothing said


def test_a_slow_step_is_logged_with_its_time(caplog: pytest.LogCaptureFixture, monkeypatch) -> None:
    clock = iter([100.0, 100.0 + netns.SLOW_TEARDOWN_S + 1.5])
    monkeypatch.setattr(netns.time, "monotonic", lambda: next(clock, 200.0))
    with caplog.at_level(logging.WARNING, logger="topo.netns.network"):
        netns._teardown_step("switch r1: process stop", lambda: None)
    assert f"teardown: switch r1: process stop took {netns.SLOW_TEARDOWN_S + 1.5:.1f} s" in caplog.text


@pytest.mark.cpu_only
def test_a_process_that_ignores_sigterm_is_killed(caplog: pytest.LogCaptureFixture) -> None:
    proc = subprocess.Popen([sys.executable, "-c",
                             "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True);"
                             " time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()  # SIGTERM is ignored from here on
        proc.terminate()
        with caplog.at_level(logging.WARNING, logger="topo.netns.network"):
            netns._end_process(proc)
        assert proc.returncode == -9
        assert f"pid {proc.pid} ignored SIGTERM for 5 s; killed" in caplog.text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
