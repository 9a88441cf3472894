"""Mean and 95 % interval over seeds: properties of Student t, not numbers from a run."""

from __future__ import annotations

import math
import random

import pytest

from topo.sweep.stats import mean_ci, t975


def test_t_quantiles_fall_towards_the_normal_one_and_join_smoothly():
    values = [t975(df) for df in range(1, 2000)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert values[-1] > 1.959964 and values[-1] - 1.959964 < 0.002
    steps = [a - b for a, b in zip(values, values[1:])]
    assert all(a > b for a, b in zip(steps, steps[1:]))  # convex: the table meets the expansion smoothly


def test_the_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = random.Random(7)
    trials, hits = 4000, 0
    for _ in range(trials):
        mean, ci = mean_ci([rng.gauss(10.0, 2.0) for _ in range(4)])
        hits += abs(mean - 10.0) <= ci
    assert 0.93 <= hits / trials <= 0.97


def test_one_seed_has_no_interval_and_missing_values_are_left_out():
    assert mean_ci([3.0]) == (3.0, None)
    mean, ci = mean_ci([1.0, None, 3.0])  # e.g. a buffer that never converged in one run
    assert mean == 2.0 and ci is not None and ci > 0
    assert math.isnan(mean_ci([None])[0])
    with pytest.raises(ValueError):
        t975(0)
