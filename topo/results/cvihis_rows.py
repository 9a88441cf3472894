"""The CVIHIS paper's two-bottleneck rows (SOURCES.md part B) and the accounting a run is compared in.

Why a conversion: in every row the published rates of the flows on a link they fill add up to more than its
nominal rate (100.6-101.7 %), which no run can do: its links carry exactly their rate, counted in the same whole
frames its goodput counts. The paper's rates and its shaper's rates are so not in one accounting (payload or
frames, kb of 1000 or 1024 bits, the shaper's units: it does not say which). Any one accounting for every flow
scales every published rate by one factor; the smallest factor that puts no published link above its nominal rate
is the largest published sum over its link's rate, and the published rates divided by it are the flows' rates in
the links' accounting, the one a run is compared in. It is derived from all six rows, never set per row
(docs/background/cvihis.md, "The published rates' accounting").
"""

from __future__ import annotations

from dataclasses import dataclass

#: a flow started after every run's end is left out (docs/reference/topologies.md, "Variants")
NEVER = "100000s"
#: the links, in the order of ``Row.links_kbps``; flows 1 and 2 cross both, flow 3 only R2-R3
LINKS = ("R1-R2", "R2-R3")


@dataclass(frozen=True)
class Row:
    """One row as published: ``sets`` turn topo/cvihis-two-bottleneck.yaml (row 5) into it."""

    name: str
    sets: tuple[str, ...]
    links_kbps: tuple[int, int]
    published_kbps: tuple[int, ...]


ROWS = (
    Row("1", ("link[R1-R2].rate=4Mbps", "link[R2-R3].rate=6Mbps", f"flow[f3].start={NEVER}"), (4000, 6000),
        (2008, 2050)),
    Row("2", ("link[R1-R2].rate=4Mbps", "link[R2-R3].rate=6Mbps"), (4000, 6000), (2005, 2045, 2040)),
    Row("3", ("link[R1-R2].rate=4Mbps", "link[R2-R3].rate=6.5Mbps"), (4000, 6500), (1929, 2005, 2646)),
    Row("4", (f"flow[f3].start={NEVER}",), (6000, 9000), (3049, 3053)),
    Row("5", (), (6000, 9000), (3047, 3042, 3048)),
    Row("6", ("link[R2-R3].rate=10Mbps",), (6000, 10000), (3081, 3014, 3968)),
)


def link_loads(row: Row) -> tuple[tuple[str, float, int], ...]:
    """(link, the published rates on it summed, its nominal rate) per link: R1-R2 carries flows 1 and 2,
    R2-R3 every flow."""
    sums = (sum(row.published_kbps[:2]), sum(row.published_kbps))
    return tuple(zip(LINKS, sums, row.links_kbps))


def accounting(rows: tuple[Row, ...] = ROWS) -> float:
    """The smallest factor by which the published rates must be divided so that no link carries more than its
    nominal rate: the largest published sum over its link's rate, over every link of every row."""
    return max(total / nominal for row in rows for _link, total, nominal in link_loads(row))


#: the published rates' accounting over the links': 6102 / 6000 (row 4's R1-R2) from the rows above
ACCOUNTING = accounting()


def in_link_units(row: Row, factor: float = ACCOUNTING) -> tuple[float, ...]:
    """The row's published rates in the links' accounting (kb/s), the ones a run's goodput is compared with."""
    return tuple(p / factor for p in row.published_kbps)


def saturated(row: Row) -> tuple[tuple[str, float, int], ...]:
    """The row's links its published rates fill: their flows' rates as printed add up to the nominal rate or
    more."""
    return tuple(load for load in link_loads(row) if load[1] >= load[2])


def filled_shares(factor: float = 1.0) -> list[float]:
    """Each filled link's published sum divided by ``factor`` over its nominal rate, over every row."""
    return [total / factor / nominal for r in ROWS for _link, total, nominal in saturated(r)]


def fullest() -> tuple[str, str]:
    """(row, link) whose published sum over its nominal rate sets ``ACCOUNTING``."""
    _share, name, link = max((total / nominal, r.name, link) for r in ROWS for link, total, nominal in link_loads(r))
    return name, link


def row(name: str) -> Row:
    """The row named ``name`` ("1".."6")."""
    found = [r for r in ROWS if r.name == name]
    if not found:
        raise ValueError(f"two-bottleneck row {name!r}: not one of {', '.join(r.name for r in ROWS)}")
    return found[0]
