"""topo/results/cvihis_rows.py: the CVIHIS two-bottleneck rows and the accounting a run is compared in.

The conversion is taken from the published numbers of every row, not fitted to one: these tests check that it
is the least one that keeps every published link within its nominal rate, and that it then puts every link the
published rates fill at its capacity within the stated tolerance (docs/background/cvihis.md, "The published
rates' accounting").
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from topo.results.cvihis_rows import (
    ACCOUNTING,
    LINKS,
    ROWS,
    Row,
    accounting,
    fullest,
    in_link_units,
    link_loads,
    saturated,
)
from topo.results.tcp import scenario

#: how far below its nominal rate a link the published rates fill may lie once converted: the published sums
#: spread over 1.1 points (100.6-101.7 %), one accounting cannot put them all at exactly 100 %
FILLED_TOLERANCE = 0.015


def test_no_published_link_carries_more_than_its_rate_once_converted_and_the_fullest_carries_it_exactly() -> None:
    shares = [total / ACCOUNTING / nominal for row in ROWS for _link, total, nominal in link_loads(row)]
    assert math.isclose(max(shares), 1.0, rel_tol=1e-12)
    assert all(s <= 1.0 + 1e-12 for s in shares)


def test_every_link_the_published_rates_fill_is_at_its_capacity_within_the_tolerance_once_converted() -> None:
    filled = [(row.name, link, total / ACCOUNTING / nominal) for row in ROWS for link, total, nominal in saturated(row)]
    assert {name for name, _link, _share in filled} == {row.name for row in ROWS}, "every row fills a link"
    for name, link, share in filled:
        assert 1.0 - FILLED_TOLERANCE <= share <= 1.0 + 1e-12, (name, link, share)


def test_the_fullest_link_is_row_4s_r1_r2() -> None:
    assert fullest() == ("4", "R1-R2")
    assert math.isclose(ACCOUNTING, 6102 / 6000)


def test_the_published_rates_as_printed_overfill_every_link_they_fill() -> None:
    """Why a conversion at all: as printed, each filled link carries more than a run's link can."""
    for row in ROWS:
        for link, total, nominal in saturated(row):
            assert total > nominal, (row.name, link)


def test_each_rows_set_lines_give_the_links_rates_and_flows_it_names() -> None:
    for row in ROWS:
        topo = scenario("cvihis-two-bottleneck", row.sets)
        rates = {f"{link.a}-{link.b}": link.rate_bps for link in topo.links}
        assert tuple(rates[name] / 1e3 for name in LINKS) == row.links_kbps, row.name
        running = [f for f in topo.flows if f.start_ns < 1_000_000_000]
        assert len(running) == len(row.published_kbps), row.name


_RATE = st.integers(min_value=100, max_value=20_000)


@st.composite
def _rows(draw: st.DrawFn) -> tuple[Row, ...]:
    n = draw(st.integers(min_value=1, max_value=6))
    return tuple(Row(str(i), (), (draw(_RATE), draw(_RATE)),
                     tuple(draw(st.lists(_RATE, min_size=2, max_size=3)))) for i in range(n))


@given(_rows())
def test_the_derived_factor_is_the_least_that_keeps_every_link_within_its_rate(rows: tuple[Row, ...]) -> None:
    factor = accounting(rows)
    shares = [total / factor / nominal for row in rows for _link, total, nominal in link_loads(row)]
    assert all(s <= 1.0 + 1e-12 for s in shares)
    assert math.isclose(max(shares), 1.0, rel_tol=1e-12)


@given(_rows(), st.floats(min_value=0.5, max_value=2.0))
def test_the_conversion_keeps_the_published_ratios_between_flows(rows: tuple[Row, ...], factor: float) -> None:
    for row in rows:
        converted = in_link_units(row, factor)
        for a, b in zip(row.published_kbps, converted):
            assert math.isclose(b * factor, a, rel_tol=1e-12)
