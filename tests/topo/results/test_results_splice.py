"""topo/results/splice.py: regenerating some sections of docs/results.md keeps the rest, and a
regenerated document head (which names the commit of its runs) replaces the old one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topo.results.splice import splice_sections

DOC = "# Results\n\nGenerated at commit aaa.\n\n## One\n\nold one\n\n## Two\n\nold two\n"


def test_a_section_replaces_its_namesake_and_keeps_the_rest() -> None:
    out = splice_sections(DOC, ["## Two", "", "new two"])
    assert "new two" in out and "old two" not in out
    assert out.startswith("# Results\n\nGenerated at commit aaa.\n\n## One\n\nold one\n")


def test_a_regenerated_head_replaces_the_old_head() -> None:
    out = splice_sections(DOC, ["# Results", "", "Generated at commit bbb.", "", "## One", "", "new one"])
    assert "commit bbb" in out and "commit aaa" not in out
    assert out.count("# Results") == 1 and "new one" in out and "old two" in out


def test_a_new_section_is_appended() -> None:
    out = splice_sections(DOC, ["## Three", "", "three"])
    assert out.rstrip().endswith("three") and "old one" in out and "old two" in out


@given(st.lists(st.sampled_from(["One", "Two", "Three"]), min_size=1, max_size=3, unique=True), st.booleans())
def test_every_heading_once_whatever_is_regenerated(names: list[str], head: bool) -> None:
    lines = ["# Results", "", "Generated at commit ccc.", ""] if head else []
    for n in names:
        lines += [f"## {n}", "", f"new {n}", ""]
    out = splice_sections(DOC, lines)
    for n in ("One", "Two", "Three"):
        assert out.count(f"## {n}\n") == (1 if n != "Three" or "Three" in names else 0)
    for n in names:
        assert f"new {n}" in out
    assert ("commit ccc" in out) == head and ("commit aaa" in out) != head
