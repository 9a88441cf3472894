"""CvihisParams: the defaults are consistent and every bad value is named in a ValueError."""

from __future__ import annotations

import dataclasses

import pytest

from hosts.cvihis import CvihisParams
from hosts.cvihis.params import DEFAULT_AREA_EDGES


def test_defaults_follow_the_thesis_steps_and_factors() -> None:
    p = CvihisParams()
    assert p.step_strong_decrease > p.step_strong_increase > p.step_increase > p.step_gradient
    assert p.step_decrease == p.step_increase
    assert p.md_factor > 1 and p.pf > 1
    assert p.area_edges[3] <= 0.5  # target area below the middle
    assert p.min_rate_bps <= p.initial_rate_bps <= p.max_rate_bps


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("step_strong_decrease", 0.0),
        ("step_gradient", -0.2),
        ("md_factor", 1.0),
        ("md_factor", float("nan")),
        ("pf", 0.95),
        ("ewma_weight", 0.0),
        ("ewma_weight", 1.5),
        ("max_delay_gain", 0),
        ("md_per_fill", -1),
        ("md_per_fill", 65),
        ("md_per_fill", 1.5),
        ("rtt_gain", 2.0),
        ("initial_span_ns", 0),
        ("min_span_ns", 2.5),
        ("gradient_deadband_ns", -1),
        ("reorder_window", 0),
        ("updates_per_rtt", 0),
        ("updates_per_rtt", 1.5),
        ("update_interval_min_ns", 0),
        ("update_interval_max_ns", 1),
        ("packet_size_bytes", "1000"),
        ("min_rate_bps", 0.0),
        ("max_rate_bps", 1.0),
        ("initial_rate_bps", 1e12),
        ("step_increase", True),
    ],
)
def test_bad_value_names_the_parameter_and_value(name: str, value: object) -> None:
    with pytest.raises(ValueError) as err:
        CvihisParams(**{name: value})
    message = str(err.value)
    assert f"CvihisParams.{name}" in message
    assert repr(value) in message
    assert "\n" not in message


def test_two_md_rules_at_once_are_refused() -> None:
    """md_per_packet and md_per_fill each say how many MDs a loss brings: both set is no reading."""
    with pytest.raises(ValueError, match=r"CvihisParams.md_per_fill: 2 is not 0 with md_per_packet True"):
        CvihisParams(md_per_packet=True, md_per_fill=2)


@pytest.mark.parametrize(
    "edges",
    [
        DEFAULT_AREA_EDGES[:5],
        (0.1, 0.2, 0.3, 0.3, 0.6, 0.8),
        (0.1, 0.2, 0.3, 0.55, 0.6, 0.8),  # target above the middle
        (0.0, 0.2, 0.3, 0.4, 0.6, 0.8),
        (0.1, 0.2, 0.3, 0.4, 0.6, 1.0),
        [0.08, 0.22, 0.38, 0.48, 0.62, 0.80],
    ],
)
def test_bad_area_edges_are_rejected_with_the_edges_named(edges: object) -> None:
    with pytest.raises(ValueError, match=r"CvihisParams\.area_edges"):
        CvihisParams(area_edges=edges)  # type: ignore[arg-type]


def test_params_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CvihisParams().pf = 2.0  # type: ignore[misc]
