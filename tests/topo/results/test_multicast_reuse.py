"""A kept multicast run is reused only when this code made it: a run kept from another commit, or from a tree
with changed files, would publish that code's numbers under this commit's name."""

from __future__ import annotations

from topo.results import multicast as M


def test_a_kept_run_is_reused_only_by_the_code_that_made_it() -> None:
    kept = {"seconds": 3000.0, "seed": 1, "code": "a" * 40, "f": {"tcp": 1.0}}
    assert M.reusable(kept, 3000.0, 1, "a" * 40) is kept
    assert M.reusable(kept, 3000.0, 1, "b" * 40) is None
    assert M.reusable(kept, 3000.0, 1, None) is None
    assert M.reusable({k: v for k, v in kept.items() if k != "code"}, 3000.0, 1, "a" * 40) is None
    assert M.reusable(kept, 300.0, 1, "a" * 40) is None
    assert M.reusable(kept, 3000.0, 2, "a" * 40) is None


def test_the_code_version_is_none_when_a_tracked_file_is_changed(monkeypatch) -> None:
    import subprocess

    answers = {"rev-parse": "c" * 40 + "\n", "status": " M topo/results/multicast.py\n"}

    def fake(args, **_kw):
        return subprocess.CompletedProcess(args, 0, stdout=answers[args[1]], stderr="")

    monkeypatch.setattr(M.subprocess, "run", fake)
    assert M.code_version() is None
    answers["status"] = ""
    assert M.code_version() == "c" * 40
