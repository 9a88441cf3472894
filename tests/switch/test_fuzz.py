"""Random and mutated frames through the whole switch core never raise (bounded, seeded)."""

from __future__ import annotations

import pytest

from tests.bench.fuzz import fuzz, mutate, seed_frames


@pytest.mark.parametrize(("program", "frames"), [("alinea", 100_000), ("features", 50_000)])
def test_fuzzed_frames_end_as_transmissions_or_counted_drops(program: str, frames: int) -> None:
    result = fuzz(program, frames, seed=20240601)
    assert result.failure is None, result.failure
    assert result.frames == frames
    assert "pipeline_error" not in result.drops
    # the fuzzer must reach both outcomes, or it tests nothing
    assert result.transmitted > frames // 100
    assert sum(result.drops.values()) > frames // 100


def test_mutations_are_deterministic_for_a_seed() -> None:
    import random

    frame = seed_frames()[0][1]
    a = [mutate(random.Random(s), frame) for s in range(10)]
    b = [mutate(random.Random(s), frame) for s in range(10)]
    assert a == b and any(m != frame for m in a)
