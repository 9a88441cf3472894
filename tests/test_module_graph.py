"""No import circle between the project's Python files, and no folder of more than 20 of them (issue 51).

Every ``.py`` file of a product package, and of tests/, is parsed (``ast``, nothing is imported) and
each import of another of the project's modules -- at module level or inside a function, where a
circle hides best -- is an edge from the importing file to the imported one (``from pkg import mod``
names the module ``pkg.mod`` when it is one). A circle means two files that can only be read, tested
and moved together; the test names every circle it finds. A folder of more than ``MAX_MODULES`` files
is a heap a reader cannot take in: it wants splitting by concept, as topo/ was (docs/architecture.md).
tests/ is held to both rules as the product is (``CHECKED``): its folders follow the product's
packages (tests/topo/sim/ tests topo/sim/), and a test module that outgrows its folder goes to the
subfolder of what it exercises, its data found through tests/paths.py. The engine crate is held to both
rules too: no circle between its modules, and no folder of more than ``MAX_MODULES`` ``.rs`` files.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.bench.tools.crate_graph import circles
from tests.bench.tools.crate_graph import edges as crate_edges
from tests.test_layers import COMPILED, PYTHON_PACKAGES, ROOT


def modules(root: Path = ROOT, packages: frozenset[str] = PYTHON_PACKAGES) -> dict[str, Path]:
    """Every module of the product packages: dotted name -> file."""
    out: dict[str, Path] = {}
    for package in sorted(packages):
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def import_graph(root: Path = ROOT, packages: frozenset[str] = PYTHON_PACKAGES) -> dict[str, set[str]]:
    """module -> the project's modules it imports (a package's ``__init__`` is a module of its own)."""
    found = modules(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importing file's package
                    up = package.split(".")
                    up = up[: len(up) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            edges.update(t for t in targets if t in found and t != name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, in name order
    (the crate graph's Tarjan, applied to Python modules)."""
    return sorted(circles(graph))


MAX_MODULES = 20
#: the product's packages and the tests' own tree, each held to both rules
CHECKED = PYTHON_PACKAGES | {"tests"}


@functools.cache
def _graph() -> dict[str, set[str]]:
    return import_graph(packages=CHECKED)


@pytest.mark.parametrize("package", sorted(CHECKED))
def test_no_import_circle_between_files(package: str) -> None:
    found = [c for c in cycles(_graph()) if c[0].split(".")[0] == package]
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("package", sorted(CHECKED))
def test_no_folder_holds_more_than_20_modules(package: str) -> None:
    big = {
        str(d.relative_to(ROOT)): n
        for d in [ROOT / package, *(ROOT / package).rglob("*")]
        if d.is_dir() and (n := len(list(d.glob("*.py")))) > MAX_MODULES
    }
    assert big == {}, f"folders of more than {MAX_MODULES} modules: {big}"


def test_the_rules_read_the_tests_tree_too() -> None:
    """tests/ is walked like a product package: its subfolders' modules and the imports between them."""
    graph = _graph()
    assert {"tests.topo.randomcheck", "tests.topo.sim.test_sim_runs", "tests.bench.run"} <= graph.keys()
    assert "tests.bench.blast" in graph["tests.bench.run"]


def test_the_checker_sees_a_circle_through_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "hosts"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from hosts.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from hosts import c\n")
    (pkg / "c.py").write_text("import hosts.a\n")
    (pkg / "d.py").write_text("from . import a\n")
    graph = import_graph(tmp_path, frozenset({"hosts"}))
    assert graph["hosts.d"] == {"hosts", "hosts.a"}
    assert cycles(graph) == [["hosts.a", "hosts.c", "hosts.sub.b"]]


def test_no_module_circle_in_the_engine_crate() -> None:
    """The Rust engine's modules form no circle either (docs/background/engine.md, "The module graph")."""
    found = circles(crate_edges(ROOT / "engine" / "src"))
    assert found == [], "engine module circles: " + "; ".join(" <-> ".join(c) for c in found)


#: the compiled packages' crates (tests/test_layers.py, ``COMPILED``), whose folders are counted like the Python ones
CRATES = tuple(sorted(COMPILED.values()))


def crate_folders_over(root: Path = ROOT, crates: tuple[str, ...] = CRATES, most: int = MAX_MODULES) -> dict[str, int]:
    """Every folder of a crate's ``src/`` holding more than ``most`` Rust modules (``.rs`` files), with its count."""
    return {
        str(d.relative_to(root)): n
        for crate in crates
        for d in [root / crate / "src", *(root / crate / "src").rglob("*")]
        if d.is_dir() and (n := len(list(d.glob("*.rs")))) > most
    }


def test_no_crate_folder_holds_more_than_20_modules() -> None:
    big = crate_folders_over()
    assert big == {}, f"crate folders of more than {MAX_MODULES} modules: {big}"


def test_the_crate_count_sees_a_big_folder(tmp_path: Path) -> None:
    src = tmp_path / "engine" / "src"
    (src / "p4").mkdir(parents=True)
    for i in range(MAX_MODULES):
        (src / f"m{i}.rs").write_text("")
    (src / "lib.rs").write_text("")
    (src / "p4" / "vm.rs").write_text("")
    assert crate_folders_over(tmp_path, ("engine",)) == {"engine/src": MAX_MODULES + 1}
    (src / "lib.rs").unlink()
    assert crate_folders_over(tmp_path, ("engine",)) == {}
