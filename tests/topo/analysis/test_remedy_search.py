"""The buffers' remedy's search (topo/analysis/fluid_network.py ``smallest_scale``, check.py ``with_remedy``): what
it answers, and that it does not pay for model runs whose answer it knows (issue 46 item 6: the analysis's cost)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import topo.analysis.check as check
import topo.analysis.fluid_network as fn
from topo.file.schema import load_topology

CASES = Path(__file__).resolve().parents[1] / "random_cases"


def _fake_network(holds_from: float, tried: list[float]):  # type: ignore[no-untyped-def]
    """A laws-together model whose one buffer loses below ``holds_from`` times its size, and nothing from there."""

    class Fake:
        def __init__(self, topo, duration_s, scale, max_steps=fn.MAX_STEPS, stop_at_loss=False, frames=False):  # type: ignore[no-untyped-def]
            self.scale = scale
            tried.append(scale)

        def in_frames(self) -> bool:  # its buffer is in packets: no second reading to run
            return False

        def run(self) -> list[fn.NetworkPeak]:
            lossy = self.scale < holds_from
            return [fn.NetworkPeak(("v", "u"), 100, 1.0 if lossy else 0.5, 10.0 if lossy else 0.0,
                                   0.5 if lossy else None)]
    return Fake


def _doublings(holds_from: float, limit: int = 6) -> float | None:
    """The search's answer, written out: the first doubling that holds, then one bisection below it."""
    lo = 1.0
    for n in range(1, limit + 1):
        if 2.0 ** n >= holds_from:
            mid = (lo + 2.0 ** n) / 2
            return mid if mid >= holds_from else 2.0 ** n
        lo = 2.0 ** n
    return None


def test_no_factor_up_to_the_limit_is_known_from_two_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tried: list[float] = []
    monkeypatch.setattr(fn, "_Network", _fake_network(math.inf, tried))
    assert fn.smallest_scale(None, 10.0) is None  # type: ignore[arg-type]
    assert tried == [2.0, 64.0]  # twice the buffers, then the limit: the doublings between could only fail


@pytest.mark.parametrize("holds_from", [1.0, 1.3, 2.0, 2.5, 3.0, 5.0, 7.0, 9.0, 13.0, 17.0, 33.0, 50.0, 64.0, 65.0])
def test_the_factor_is_the_first_doubling_that_holds_bisected_once(holds_from: float, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tried: list[float] = []
    monkeypatch.setattr(fn, "_Network", _fake_network(holds_from, tried))
    assert fn.smallest_scale(None, 10.0) == _doublings(holds_from)  # type: ignore[arg-type]
    assert len(tried) == len(set(tried))  # no scale run twice


def test_an_overflow_the_floor_explains_runs_no_remedy(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    topo = load_topology(CASES / "floor-equals-dipped-drain.yaml")
    checks = check.check_topology(topo, 3.0)
    over = [c for c in checks if c.overflows]
    assert over and all(c.floor is not None for c in over)  # the case: its only overflows are a floor's
    said = check.warnings_of(topo, checks, 3.0)
    searched = []
    monkeypatch.setattr(check, "smallest_scale", lambda *a, **k: searched.append(a) or 2.0)
    assert check.warnings_of(topo, checks, 3.0) == said  # its warnings name no buffer remedy
    assert not searched  # so none was searched for
