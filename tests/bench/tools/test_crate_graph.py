"""tests.bench.tools.crate_graph finds the edges and the circles a crate's code has, and only those."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_modules_in_concept_folders_are_found_by_either_path(tmp_path: Path) -> None:
    """A module in a folder is named by its own name (re-exported at the root) or through its folder's."""
    crate(tmp_path, {"lib": "mod net;\nuse net::sched;\n"})
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "mod.rs").write_text("pub(crate) mod sched;\npub(crate) mod link;\n")
    (tmp_path / "net" / "sched.rs").write_text("use crate::net::link::L;\n")
    (tmp_path / "net" / "link.rs").write_text("")
    (tmp_path / "host.rs").write_text("use crate::sched::S;\nuse crate::net::{link, sched::T};\n")
    assert edges(tmp_path) == {"sched": {"link"}, "link": set(), "host": {"sched", "link"}}
    (tmp_path / "net" / "host.rs").write_text("")
    with pytest.raises(ValueError, match="two modules of one name"):
        edges(tmp_path)
