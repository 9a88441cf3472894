"""The Write benchmark's plumbing: baselines from git, servers measured in turn, pinning undone.

The figures themselves belong to ``make bench``; these tests only check that the benchmark
measures what it says (every server, every batch size, every round) and refuses what it cannot
run in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.bench import p4rt_writes as pw
from tests.switch.simnet import program


def test_a_commit_runs_from_its_own_files() -> None:
    with pw.commit_tree("HEAD") as tree:
        assert (tree / "p4src" / "alinea.p4").is_file()
        assert (tree / "p4switch" / "cli.py").is_file()
    assert not tree.exists()  # removed with the block


def test_a_commit_the_clone_lacks_is_refused_by_name() -> None:
    assert pw.resolve_commit("no-such-rev") is None
    with pytest.raises(pw.ServerUnavailable, match="no-such-rev"), pw.commit_tree("no-such-rev"):
        pass
    done = subprocess.run([sys.executable, "-m", "tests.bench.p4rt_writes", "--baseline", "no-such-rev",
                           "--entries", "10", "--rounds", "1"], cwd=pw.ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["p4rt_writes: commit no-such-rev is not in this clone (shallow clone?)"]


def test_every_server_is_measured_for_every_batch_and_round() -> None:
    servers = {"aio": pw.empty_server("aio"), "sync": pw.empty_server("sync")}
    rates = pw.measure_servers(servers, program(str(pw.ALINEA)).p4info, entries=20, rounds=2, batches=(1, 10))
    assert set(rates) == {"aio", "sync"}
    for r in rates.values():
        assert {b: len(v) for b, v in r.rounds.items()} == {1: 2, 10: 2}
        assert all(x > 0 for v in r.rounds.values() for x in v)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_pinning_is_undone_after_the_block() -> None:
    before = os.sched_getaffinity(0)
    with pw.pinned({0}):
        assert os.sched_getaffinity(0) == {0}
    assert os.sched_getaffinity(0) == before


def test_reads_are_measured_for_the_switches_named() -> None:
    """``read_from``: those servers get every entry, then each kind of Read its rounds (a wrong
    answer would raise), and ``echo_from`` PacketOuts coming back; the others Writes only."""
    servers = {"switch": pw.p4switch_server(), "aio": pw.empty_server("aio")}
    rates = pw.measure_servers(servers, program(str(pw.ALINEA)).p4info, entries=20, rounds=2, batches=(10,),
                               read_from=["switch"], echo_from=["switch"])
    assert len(rates["switch"].echo_rounds) == 2 and all(x > 0 for x in rates["switch"].echo_rounds)
    assert {k: len(v) for k, v in rates["switch"].read_rounds.items()} == {k: 2 for k in pw.READ_KINDS}
    assert all(x > 0 for v in rates["switch"].read_rounds.values() for x in v)
    assert set(rates["switch"].read_median) == set(pw.READ_KINDS)
    assert rates["aio"].read_rounds == {} and rates["aio"].read_median == {} and rates["aio"].echo_rounds == []
