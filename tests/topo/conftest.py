"""Fixtures shared by tests/topo's files.

``one_router_netns``: paper-1router on p4switch in network namespaces, 20 s, seed 1, with pcaps:
one run for test_netns_runs (against the simulator) and test_bmv2_diff (against BMv2), made once per
session, on ``make test``'s real-time worker (both tests are in its group, tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def one_router_netns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """(the run's folder, its RunResult)"""
    from tests.switch import netns as N
    from topo.file.schema import load_topology
    from topo.run.runner import run_experiment

    N.require_netns()
    out = tmp_path_factory.mktemp("one-router") / "netns"
    return out, run_experiment(load_topology(ROOT / "topo" / "paper-1router.yaml"), 20_000_000_000, seed=1,
                               out=out, plots=False, backend="netns")
