"""The loop analysis before ``hbh run``: cached per resolved topology and duration, skipped by
``--no-analysis`` (topo/analysis/cache.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import topo.analysis.check
from hbh.cli import main
from topo.analysis.cache import cached_warnings, topology_key
from topo.file.schema import load_topology_text

LINE = """name: cached
defaults: {link: {rate: 2Mbps, delay: 3ms, buffer: 50}}
nodes: {H1: {kind: host}, R1: {kind: switch}, H2: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
"""


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    calls: list[float] = []
    real = topo.analysis.check.warnings

    def counted(t, duration_s=60.0):  # type: ignore[no-untyped-def]
        calls.append(duration_s)
        return real(t, duration_s)

    monkeypatch.setattr(topo.analysis.check, "warnings", counted)
    return calls


def test_a_second_analysis_of_the_same_topology_is_read_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    t = load_topology_text(LINE, "a.yaml")
    first, hit1 = cached_warnings(t, 1.0, tmp_path)
    second, hit2 = cached_warnings(load_topology_text(LINE, "a.yaml"), 1.0, tmp_path)
    assert (hit1, hit2) == (False, True)
    assert first == second and len(calls) == 1


def test_what_changes_the_network_misses_and_what_only_moves_its_text_hits(tmp_path: Path) -> None:
    t = load_topology_text(LINE, "a.yaml")
    key = topology_key(t, 1.0)
    assert topology_key(load_topology_text("# a comment\n" + LINE.replace("name: cached", "name: other"), "b.yaml"),
                        1.0) == key
    assert topology_key(t, 2.0) != key
    assert topology_key(load_topology_text(LINE.replace("buffer: 50", "buffer: 51"), "a.yaml"), 1.0) != key
    assert topology_key(load_topology_text(LINE.replace("control: alinea}", "control: alinea, r_max: 1Mbps}"),
                                           "a.yaml"), 1.0) != key


def test_an_unwritable_cache_still_gives_the_analysis(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    t = load_topology_text(LINE, "a.yaml")
    assert cached_warnings(t, 1.0, blocker / "sub") == (topo.analysis.check.warnings(t, 1.0), False)


def _run(tmp_path: Path, *extra: str) -> int:
    path = tmp_path / "line.yaml"
    path.write_text(LINE)
    return main(["run", str(path), "--duration", "0.3s", "--out", str(tmp_path / "out"), "--no-plots",
                 "--no-progress", *extra])


def test_hbh_run_no_analysis_skips_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HBH_CACHE_DIR", str(tmp_path / "cache"))
    calls = _counting(monkeypatch)
    assert _run(tmp_path, "--no-analysis") == 0
    assert calls == []
    assert _run(tmp_path) == 0
    assert calls == [0.3]
    assert _run(tmp_path) == 0  # the cache answers
    assert calls == [0.3]


def test_every_project_module_the_analysis_imports_is_in_the_key() -> None:
    """The key covers the code the answer comes from: every module of this project that importing
    the analysis and the plant loads, in a fresh interpreter (a hand-kept list once missed
    topo/net/routes.py)."""
    import json
    import subprocess
    import sys

    from topo.analysis.cache import ROOT, source_files

    probe = ("import json, sys, topo.analysis.check, topo.analysis.fluid_network; "
             "print(json.dumps([m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)]))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    loaded = {Path(f).resolve() for f in json.loads(out)}
    mine = {p for p in loaded if p.is_relative_to(ROOT) and ".venv" not in p.parts and p.suffix == ".py"}
    covered = {p.resolve() for p in source_files()}
    assert (ROOT / "topo" / "net" / "routes.py").resolve() in covered
    assert mine and mine <= covered, sorted(str(p) for p in mine - covered)
