"""Gains, floors and R_max written relative to the regulated link's capacity (``0.25C``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.units import OfCapacity, UnitError, parse_rate_or_share, resolve_rate
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.file.schema import load_topology_text

RELATIVE = "  alinea: {w_max: 4C, w_min: 0.25C, k_p: 12C, r_floor: 0.02C}\n"


def _with_defaults(alinea: str) -> str:
    return "defaults:\n" + alinea + BASE


def test_a_multiple_of_capacity_resolves_at_each_law_s_own_link_rate() -> None:
    t = load_topology_text(_with_defaults(RELATIVE), SOURCE)
    for (u, v), law in t.law.items():
        c = t.link_between(u, v).rate_bps
        assert (law.w_max, law.w_min, law.k_p, law.r_floor) == pytest.approx((4 * c, 0.25 * c, 12 * c, 0.02 * c))
        assert all(t.provenance[(u, v)][k] == "file" for k in ("w_max", "w_min", "k_p", "r_floor"))
    assert t.law[("R1", "R2")].w_min == pytest.approx(0.25 * 3e6)  # R1-R2 runs at 3 Mb/s
    assert t.law[("H1", "R1")].w_min == pytest.approx(0.25 * 2e6)


def test_relative_and_absolute_files_agree_where_the_capacity_is_the_same() -> None:
    absolute = load_topology_text(_with_defaults("  alinea: {w_max: 8Mbps, w_min: 500kbps, k_p: 24Mbps, "
                                                 "r_floor: 40kbps}\n"), SOURCE)
    relative = load_topology_text(_with_defaults(RELATIVE), SOURCE)
    for key in (("H1", "R1"), ("R2", "H2")):  # the 2 Mb/s links
        assert relative.law[key] == absolute.law[key]


def test_an_override_and_an_event_resolve_per_target() -> None:
    text = (BASE + "alinea:\n  - {toward: R2, w_min: 0.1C}\n"
            "events:\n  - {at: 5s, alinea: {node: R2, w_max: 8C}}\n")
    t = load_topology_text(text, SOURCE)
    assert t.law[("R1", "R2")].w_min == pytest.approx(0.1 * 3e6)
    assert {ev.targets for ev in t.events} == {(("R2", "R1"),), (("R2", "H2"),)}
    for ev in t.events:
        assert dict(ev.law_changes)["w_max"] == pytest.approx(8 * t.link_between(*ev.targets[0]).rate_bps)


def test_two_targets_of_different_rates_get_their_own_events() -> None:
    t = load_topology_text(BASE + "events:\n  - {at: 5s, alinea: {node: R2, r_floor: 0.05C}}\n", SOURCE)
    floors = {ev.targets[0]: dict(ev.law_changes)["r_floor"] for ev in t.events}
    assert floors == {("R2", "R1"): pytest.approx(0.05 * 3e6), ("R2", "H2"): pytest.approx(0.05 * 2e6)}
    absolute = load_topology_text(BASE + "events:\n  - {at: 5s, alinea: {node: R2, r_floor: 100kbps}}\n", SOURCE)
    assert len(absolute.events) == 1 and len(absolute.events[0].targets) == 2  # one event, as written


@pytest.mark.parametrize(("value", "what"), [("0.25X", "unknown rate unit"), ("C", "expected"),
                                              ("0.25Cbps", "unknown rate unit")])
def test_bad_relative_values_name_the_key(value: str, what: str) -> None:
    text = _with_defaults(f"  alinea: {{w_min: {value}}}\n")
    expect_error(text, "w_min", "defaults.alinea.w_min", what)


def test_a_relative_value_that_breaks_a_law_names_it() -> None:
    text = _with_defaults("  alinea: {w_max: 0.1C, w_min: 0.2C}\n")
    expect_error(text, "w_max", "defaults.alinea", "w_min")


@given(st.floats(min_value=1e-6, max_value=1e3, allow_nan=False), st.floats(min_value=1.0, max_value=1e12))
def test_share_round_trips(multiple: float, capacity: float) -> None:
    share = parse_rate_or_share(f"{multiple!r}C")
    assert isinstance(share, OfCapacity)
    assert resolve_rate(share, capacity, "w") == pytest.approx(multiple * capacity)
    assert resolve_rate(parse_rate_or_share(str(share)), capacity, "w") == pytest.approx(multiple * capacity, rel=1e-5)


def test_a_share_without_a_capacity_is_refused() -> None:
    with pytest.raises(UnitError, match="needs the link's rate"):
        resolve_rate(OfCapacity(0.5), None, "--w-min")
