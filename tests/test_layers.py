"""The layers keep their word: docs/architecture.md's import rules, as data, checked on every file.

Every ``.py`` file of a product package is parsed (``ast``, nothing is imported) and each of its
imports -- at module level or inside a function -- is checked against ``MAY_IMPORT``: a package
may import itself and the packages listed for it, no other product package. Across packages only
public names are used: no ``from pkg.mod import _name`` and no ``mod._name`` on a module imported
from another product package. Third-party packages are not this test's business.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> the other product packages it may import (docs/architecture.md, "Layers and imports")
MAY_IMPORT: dict[str, frozenset[str]] = {
    "hbh_engine": frozenset(),
    "bmv2_thrift": frozenset(),
    "runtime": frozenset({"hbh_engine"}),
    "p4switch": frozenset({"runtime", "hbh_engine", "bmv2_thrift"}),
    "controlplane": frozenset({"bmv2_thrift"}),
    "hosts": frozenset({"controlplane", "hbh_engine"}),
    "topo": frozenset({"runtime", "p4switch", "controlplane", "hosts"}),
    "hbh": frozenset({"hbh_engine", "bmv2_thrift", "runtime", "p4switch", "controlplane", "hosts", "topo"}),
}
PACKAGES = frozenset(MAY_IMPORT)
# topo/'s subpackages -> the other subpackages they may import (docs/architecture.md, "Inside topo/");
# topo/ holds no module of its own but its __init__
TOPO_MAY_IMPORT: dict[str, frozenset[str]] = {
    "net": frozenset(),
    "analysis": frozenset({"net"}),
    "file": frozenset({"net", "analysis"}),
    "sim": frozenset({"net"}),
    "netns": frozenset({"net", "sim"}),
    "run": frozenset({"net", "analysis", "file", "sim", "netns"}),
    "sweep": frozenset({"net", "file", "run"}),
    "experiments": frozenset({"net", "analysis", "file", "sim", "netns", "run", "sweep"}),
    "results": frozenset({"net", "analysis", "file", "sim", "netns", "run", "sweep", "experiments"}),
}
# compiled packages: Python module -> its source folder (a Rust crate, built by `make setup`)
COMPILED: dict[str, str] = {"hbh_engine": "engine"}
PYTHON_PACKAGES = PACKAGES - COMPILED.keys()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(package: str, root: Path = ROOT) -> list[str]:
    """Every import of ``package``'s files that breaks the rules, as ``file:line: what``."""
    allowed = MAY_IMPORT[package] | {package}
    out: list[str] = []
    for path in sorted((root / package).rglob("*.py")):
        where = path.relative_to(root)
        tree = ast.parse(path.read_text(), str(where))
        foreign_modules: set[str] = set()  # local names bound to modules of other product packages
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None, a.asname or a.name.split(".")[0]) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                pairs = [(node.module, a.name, a.asname or a.name) for a in node.names]
            else:
                continue
            for module, name, bound in pairs:
                top = module.split(".")[0]
                if top not in PACKAGES or top == package:
                    continue
                if top not in allowed:
                    out.append(f"{where}:{node.lineno}: {package} imports {module} ({top} is not allowed)")
                if name is not None and _private(name):
                    out.append(f"{where}:{node.lineno}: imports the private name {name} from {module}")
                if any(_private(part) for part in module.split(".")[1:]):
                    out.append(f"{where}:{node.lineno}: imports from the private module {module}")
                foreign_modules.add(bound)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in foreign_modules):
                out.append(f"{where}:{node.lineno}: uses the private name {node.value.id}.{node.attr}")
    return out


def topo_violations(root: Path = ROOT) -> list[str]:
    """Every import between topo/'s subpackages that ``TOPO_MAY_IMPORT`` does not allow, as
    ``file:line: what`` (``from topo import sub`` counts as importing ``sub``; a relative import is
    resolved from the importing file's package, so ``from ..run import x`` is ``topo.run``)."""
    out: list[str] = []
    for path in sorted((root / "topo").rglob("*.py")):
        where = path.relative_to(root)
        if len(where.parts) < 3:
            continue  # topo/__init__.py
        sub = where.parts[1]
        allowed = TOPO_MAY_IMPORT.get(sub, frozenset()) | {sub}
        for node in ast.walk(ast.parse(path.read_text(), str(where))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.level or node.module):
                base = node.module or ""
                if node.level:  # relative: from the importing file's package, as Python resolves it
                    package = where.with_suffix("").parts[:-1]
                    up = list(package[: len(package) - (node.level - 1)])
                    base = ".".join([*up, base] if base else up)
                modules = ([f"topo.{a.name}" for a in node.names] if base == "topo" else [base])
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if parts[0] == "topo" and len(parts) > 1 and parts[1] not in allowed:
                    out.append(f"{where}:{node.lineno}: topo.{sub} imports {module} (topo.{parts[1]} is not allowed)")
    return out


def test_every_product_package_has_rules() -> None:
    found = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} - {"tests"}
    assert found == PYTHON_PACKAGES, "a new top-level package needs its line in MAY_IMPORT and docs/architecture.md"


def test_every_compiled_package_has_its_crate() -> None:
    for module, folder in COMPILED.items():
        cargo = ROOT / folder / "Cargo.toml"
        assert cargo.is_file(), f"{module}: no crate at {folder}/"
        assert f'name = "{module}"' in cargo.read_text(), f"{folder}/Cargo.toml does not build {module}"


@pytest.mark.parametrize("package", sorted(PYTHON_PACKAGES))
def test_layer_imports(package: str) -> None:
    assert violations(package) == []


def test_the_checker_sees_a_forbidden_edge(tmp_path: Path) -> None:
    pkg = tmp_path / "hosts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("import topo.net.model\nfrom p4switch.thrift_server import _processor\n"
                                "from controlplane import queues\n\n\ndef f():\n    return queues._Loopback\n")
    got = violations("hosts", tmp_path)
    assert [v.split(": ", 1)[1] for v in got] == [
        "hosts imports topo.net.model (topo is not allowed)",
        "hosts imports p4switch.thrift_server (p4switch is not allowed)",
        "imports the private name _processor from p4switch.thrift_server",
        "uses the private name queues._Loopback",
    ]


def test_topo_holds_subpackages_only_each_with_rules() -> None:
    top = ROOT / "topo"
    assert sorted(p.name for p in top.glob("*.py")) == ["__init__.py"], "topo/'s modules live in its subpackages"
    found = {p.parent.name for p in top.glob("*/__init__.py")}
    assert found == TOPO_MAY_IMPORT.keys(), "a new subpackage of topo/ needs its line in TOPO_MAY_IMPORT"


def test_topo_subpackage_imports() -> None:
    assert topo_violations() == []


def test_the_checker_sees_a_forbidden_edge_inside_topo(tmp_path: Path) -> None:
    for sub in ("net", "run"):
        (tmp_path / "topo" / sub).mkdir(parents=True)
        (tmp_path / "topo" / sub / "__init__.py").write_text("")
    (tmp_path / "topo" / "__init__.py").write_text("")
    (tmp_path / "topo" / "net" / "bad.py").write_text("import topo.net.model\n\n\ndef f():\n"
                                                      "    from topo import run\n    from topo.run.x import y\n")
    (tmp_path / "topo" / "run" / "good.py").write_text("from topo.net import model\nfrom ..net import plan\n"
                                                      "from . import other\n")
    (tmp_path / "topo" / "net" / "relative.py").write_text("from ..run import runner\nfrom .. import run\n"
                                                           "from . import model\n")
    got = [v.split(": ", 1)[1] for v in topo_violations(tmp_path)]
    assert got == ["topo.net imports topo.run (topo.run is not allowed)",
                   "topo.net imports topo.run.x (topo.run is not allowed)",
                   "topo.net imports topo.run (topo.run is not allowed)",
                   "topo.net imports topo.run (topo.run is not allowed)"]
