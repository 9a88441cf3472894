"""topo/results/moved.py: the list of figures that moved is a cell-by-cell comparison of the same
table rows, and says nothing moved where nothing did."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topo.results.moved import HEADING, moved_section, table_cells

OLD = """# Results

## Summary

| run | loss | goodput |
|---|---:|---:|
| a | 0 | 1.200 |
| b | 3 | 0.900 |

## Kept

| x | y |
|---|---|
| 1 | 2 |
"""


def test_a_changed_cell_is_listed_with_both_values() -> None:
    new = OLD.replace("| b | 3 | 0.900 |", "| b | 0 | 1.100 |")
    text = "\n".join(moved_section(new, OLD))
    assert "**Summary**: 1 of 2 rows moved. b: loss 3 -> 0; goodput 0.900 -> 1.100" in text
    assert "**Kept**: unchanged (1 rows)." in text


def test_new_and_removed_sections_are_named_not_diffed() -> None:
    new = OLD.replace("## Kept", "## Added")
    text = "\n".join(moved_section(new, OLD))
    assert "**Added**: new since then." in text and "No longer in this file: Kept." in text


def test_its_own_section_is_not_compared_and_a_missing_base_is_said() -> None:
    new = OLD + "\n" + "\n".join(moved_section(OLD, OLD)) + "\n| k | v |\n|---|---|\n| z | 1 |\n"
    assert f"**{HEADING[3:]}**" not in "\n".join(moved_section(new, OLD))
    assert "nothing to compare" in "\n".join(moved_section(OLD, None))


def test_rows_keyed_by_as_many_leading_cells_as_make_them_unique() -> None:
    doc = "## S\n\n| control | load | p50 |\n|---|---|---|\n| a | 30% | 1 |\n| a | 50% | 2 |\n"
    rows = table_cells(doc)["S"]
    assert {k[1:] for k in rows} == {("a", "30%"), ("a", "50%")}
    assert all(set(v) == {"p50"} for v in rows.values())


@given(st.lists(st.integers(0, 999), min_size=1, max_size=8), st.data())
def test_exactly_the_rows_changed_are_counted(values: list[int], data: st.DataObject) -> None:
    def doc(vals: list[int]) -> str:
        return "## T\n\n| k | v |\n|---|---|\n" + "".join(f"| r{i} | {v} |\n" for i, v in enumerate(vals))

    changed = data.draw(st.sets(st.integers(0, len(values) - 1)))
    new = [v + 1 if i in changed else v for i, v in enumerate(values)]
    text = "\n".join(moved_section(doc(new), doc(values)))
    if changed:
        assert f"**T**: {len(changed)} of {len(values)} rows moved." in text
    else:
        assert f"**T**: unchanged ({len(values)} rows)." in text


def test_a_table_whose_columns_changed_is_not_called_unchanged() -> None:
    """Rows are matched under their table's header: a renamed column (the reaction table's 'median' became 'p50'
    with its definition) matched no row, and the section read "unchanged" though its numbers moved."""
    new = OLD.replace("| run | loss | goodput |", "| run | loss | p50 goodput |").replace("| b | 3 | 0.900 |", "| b | 3 | 0.800 |")
    text = "\n".join(moved_section(new, OLD))
    assert "**Summary**: 2 rows under columns it did not have then, not compared." in text
    assert "**Summary**: unchanged" not in text
    assert "**Kept**: unchanged (1 rows)." in text
