"""``make fuzz-topo`` (tests/topo/fuzz_topo.py) judges each topology in a forked child: what a run
leaves allocated goes with the child, and a child that dies or hangs is a failure kept, not the end
of the fuzz."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.topo import fuzz_topo
from tests.topo.randomcheck import Verdict
from tests.topo.topogen import Drawn

LINE = """name: tiny-line
defaults:
  link: {rate: 10Mbps, delay: 1ms, buffer: 50}
nodes:
  S1: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: fixed, rate: 1Mbps}
"""


def _drawn(text: str = LINE) -> Drawn:
    return Drawn("line", text, 0.2, all_alinea=False)


def test_a_child_judges_as_this_process_does() -> None:
    assert fuzz_topo.judge_in_child(_drawn(), timeout=120) == fuzz_topo._judged(_drawn())


def test_a_file_the_judge_cannot_load_is_a_problem_kept() -> None:
    problems, warned, lost = fuzz_topo.judge_in_child(
        _drawn(LINE.replace("kind: switch", "kind: router")), 120
    )
    assert len(problems) == 1 and "router" in problems[0] and (warned, lost) == ([], 0)


def test_a_child_that_dies_is_a_problem_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def die(*_args: object, **_kwargs: object) -> Verdict:
        os._exit(3)

    monkeypatch.setattr(fuzz_topo, "judge", die)  # the forked child inherits the patch
    assert fuzz_topo.judge_in_child(_drawn(), 120) == (["the judging process died (exit code 3)"], [], 0)


def test_a_child_that_hangs_is_killed_and_a_problem_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def hang(*_args: object, **_kwargs: object) -> Verdict:
        time.sleep(60)
        raise AssertionError("not killed")

    monkeypatch.setattr(fuzz_topo, "judge", hang)
    started = time.monotonic()
    problems, _, _ = fuzz_topo.judge_in_child(_drawn(), 0.5)
    assert problems == ["the judging process took over 0.5 s (wall) and was killed"]
    assert time.monotonic() - started < 30


def test_the_fuzz_counts_what_its_children_judged(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    here: list[str] = []

    def fake(text: str, seconds: float, all_alinea: bool, seed: int = 1, source: str = "") -> Verdict:
        here.append(source)  # in a child, this list is the child's copy
        warned = ["law S1->S2: a warning"] if len(text) % 2 else []
        return Verdict(["a problem"] if "multicast" in source else [], warned, len(text) % 3, {})

    monkeypatch.setattr(fuzz_topo, "judge", fake)
    assert fuzz_topo.main(["--count", "12", "--seed", "3", "--out", str(tmp_path)]) in (0, 1)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["ran"] == 12 and summary["finished"] is True
    assert summary["failed"] == len(list(tmp_path.glob("fail-*.yaml")))
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [r["n"] for r in records] == list(range(1, 13))
    assert summary["failed"] == sum(r["failed"] for r in records)
    assert summary["warned"] == sum(bool(r["warned"]) for r in records)
    assert summary["alinea_warned_lossless"] == sum(r["all_alinea"] and bool(r["warned"]) and not r["lost"]
                                                    for r in records)
    assert here == ["<warm-up>"]  # this process ran the warm-up only; the topologies ran in children


def test_bad_arguments_are_named(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    with pytest.raises(SystemExit) as exc:
        fuzz_topo.main(["--count", "0", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--count" in capsys.readouterr().err
