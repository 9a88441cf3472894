"""tests.bench.tools.crate_graph finds the edges and the circles a crate's code has, and only those."""

from __future__ import annotations

from pathlib import Path

from tests.bench.tools.crate_graph import circles, edges, main


def crate(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.rs").write_text(text)
    return tmp_path


def test_use_lines_groups_and_paths_are_edges_and_comments_are_not(tmp_path: Path) -> None:
    src = crate(
        tmp_path,
        {
            "lib": "use crate::a::A;\n",
            "a": "use crate::b::B;\n/// see crate::c::C\nfn f() { crate::d::g(); }\n",
            "b": "use crate::{c::C, d};\n",
            "c": "",
            "d": "use crate::d::X;\n",
        },
    )
    assert edges(src) == {"a": {"b", "d"}, "b": {"c", "d"}, "c": set(), "d": set()}


def test_a_circle_is_found_and_a_dag_has_none(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}
    assert circles(graph) == [["a", "b", "c"], ["e", "f"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_a_folder_without_rust_files_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path)]) == 2
    assert "is not a folder of .rs files" in capsys.readouterr().err
