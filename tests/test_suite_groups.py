"""``make test``'s two pytest-xdist workers (tests/conftest.py): the tests that run in real time form
one group, run on one worker one at a time and named ``NODEID@realtime``; the others are spread over
both workers. Why a test: xdist names a grouped test by setting ``item._nodeid``, which pytest 9.2
no longer reads, and then every test was spread (two netns runs at once) without a word."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: three tests whose source names netns (grouped), three that name nothing real-time and one whose
#: source names netns but is marked ``cpu_only`` (spread)
GROUPED = {"test_bmv2_tools_missing_is_exit_2", "test_not_root_is_exit_2", "test_target_without_netns_is_refused"}
SPREAD = {"test_p4switch_command_is_the_documented_one", "test_bmv2_command_is_the_documented_one",
          "test_names_carry_the_prefix_and_fit_linux", "test_host_process_refuses_a_switch_name"}


@pytest.mark.cpu_only
def test_real_time_tests_run_on_one_worker_named_by_their_group() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                           "tests/topo/netns/test_netns_commands.py", "-k", " or ".join(sorted(GROUPED | SPREAD))],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    ran = {m.group(2).split("::")[-1]: m.group(1)
           for m in re.finditer(r"\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", done.stdout)}
    assert {n.removesuffix("@realtime") for n in ran} == GROUPED | SPREAD, done.stdout[-3000:]
    assert {n for n in ran if n.endswith("@realtime")} == {f"{n}@realtime" for n in GROUPED}
    assert len({w for n, w in ran.items() if n.endswith("@realtime")}) == 1  # one worker, in turn
