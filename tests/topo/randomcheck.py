"""What every random topology must satisfy (tests/topo/topogen.py draws them): one short simulator
run under the invariants (topo/net/invariants.py), and for a topology whose every flow is ALINEA,
zero loss unless the loop analysis warned before the run.

Shared by the CI property tests (tests/topo/random/test_random_topologies.py) and the long fuzz run
(``make fuzz-topo``, tests/topo/fuzz_topo.py), so both judge a topology alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.paths import RANDOM_CASES
from topo.analysis.check import warnings
from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment
from topo.sim.network import sim_refusal

__all__ = ["Verdict", "case_seconds", "judge", "judge_case", "lost_packets"]


@dataclass
class Verdict:
    problems: list[str]
    warned: list[str]
    lost: int
    summary: dict[str, Any]


def lost_packets(summary: dict[str, Any]) -> int:
    """Data packets lost anywhere: dropped in a switch, at a receiver's buffer, or missing by sequence."""
    loss = summary.get("loss", {})
    dropped = int(loss.get("dropped_in_network", 0)) + int(loss.get("receiver_buffer_overflow", 0))
    return max(dropped, int(loss.get("lost_by_sequence", 0)), int(loss.get("total", 0) or 0))


def judge(text: str, seconds: float, all_alinea: bool, seed: int = 1, source: str = "<random>") -> Verdict:
    """Run the topology ``text`` for ``seconds`` in the simulator; the problems found (none: it passes)."""
    topo = load_topology_text(text, source)
    if (why := sim_refusal(topo)) is not None:
        return Verdict([f"the simulator refused it: {why}"], [], 0, {})
    warned = warnings(topo, seconds, seed) if all_alinea else []  # the run's starts (topo/net/starts.py)
    summary = run_experiment(topo, round(seconds * 1e9), seed, plots=False).summary
    problems = [f"invariant {v['name']}: {v['detail']}"
                for v in summary.get("invariants", {}).get("violations", [])]
    lost = lost_packets(summary)
    if all_alinea and lost and not warned:
        problems.append(f"every flow is ALINEA and {lost} packets were lost ({summary.get('loss')}), "
                        "but the loop analysis did not warn")
    return Verdict(problems, warned, lost, summary)


def case_seconds(text: str) -> float:
    """A kept case's run length, from its file's first line: ``# seconds: S``, or ``... run for S s`` in the
    older files."""
    first = text.splitlines()[0]
    found = re.search(r"run for ([0-9.]+) s", first)
    return float(found.group(1)) if found else float(first.removeprefix("# seconds:"))


def judge_case(name: str, all_alinea: bool = True, seed: int = 1) -> Verdict:
    """A case kept in tests/topo/random_cases/ (found by the fuzzer), judged as found (its first line holds its
    run length: :func:`case_seconds`)."""
    text = (RANDOM_CASES / name).read_text()
    return judge(text, case_seconds(text), all_alinea, seed, source=name)
