"""The control path compiled by mypyc (controlplane/native.py): used only when it is this source,
built; and the same results as the source interpreted, byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controlplane import native

ROOT = Path(__file__).resolve().parents[2]
COMPILED = native.why_interpreted() is None


def _package(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the compiled modules' sources, each with a stand-in extension module, and its stamp."""
    pkg = tmp_path / "controlplane"
    pkg.mkdir()
    for m in native.MODULES:
        shutil.copy(native.PACKAGE_DIR / f"{m}.py", pkg / f"{m}.py")
        (pkg / f"{m}.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    stamp = tmp_path / "stamp.json"
    stamp.write_text(json.dumps(native.stamp_for(pkg)))
    return pkg, stamp


def test_the_build_of_these_sources_is_used(tmp_path: Path) -> None:
    pkg, stamp = _package(tmp_path)
    assert native.stale_reason(stamp, pkg) is None


def test_an_edited_source_is_named_and_runs_interpreted(tmp_path: Path) -> None:
    pkg, stamp = _package(tmp_path)
    with (pkg / "alinea.py").open("a") as f:
        f.write("\n# edited\n")
    why = native.stale_reason(stamp, pkg)
    assert why is not None and "alinea.py changed" in why and "make setup" in why


def test_a_missing_module_a_missing_stamp_another_python(tmp_path: Path) -> None:
    pkg, stamp = _package(tmp_path)
    stamp.write_text(json.dumps({**json.loads(stamp.read_text()), "python": "2.7"}))
    assert "another Python" in (native.stale_reason(stamp, pkg) or "")
    stamp.write_text("{not json")
    assert "no readable stamp" in (native.stale_reason(stamp, pkg) or "")
    next(pkg.glob(f"{native.MODULES[0]}.*.so")).unlink()
    assert "only" in (native.stale_reason(stamp, pkg) or "")
    for so in pkg.glob("*.so"):
        so.unlink()
    assert "not compiled" in (native.stale_reason(stamp, pkg) or "")


def _probe(env: dict[str, str]) -> dict[str, str]:
    code = ("import json, controlplane.native as n, controlplane.forecast as f, controlplane.agent as a;"
            "print(json.dumps({'why': n.why_interpreted(), 'forecast': f.__file__, 'agent': a.__file__}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_hbh_interpreted_imports_every_source() -> None:
    got = _probe({**os.environ, native.ENV: "1"})
    assert got["why"] == f"{native.ENV}=1"
    assert got["forecast"].endswith("forecast.py") and got["agent"].endswith("agent.py")


@pytest.mark.skipif(native.ENV in os.environ, reason=f"{native.ENV} is set: this run asked for the sources")
def test_make_setup_compiled_the_control_path() -> None:
    """`make test` runs `make setup` first: the control path must then run compiled (a benchmark of
    an interpreted path would measure something else)."""
    env = {k: v for k, v in os.environ.items() if k != native.ENV}
    got = _probe(env)
    assert got["why"] is None, got["why"]
    assert got["forecast"].endswith(".so") and got["agent"].endswith(".so")


def _csvs(topo: str | Path, out: Path, interpreted: bool) -> dict[str, bytes]:
    env = {k: v for k, v in os.environ.items() if k != native.ENV}
    if interpreted:
        env[native.ENV] = "1"
    path = topo if isinstance(topo, Path) else f"topo/{topo}.yaml"
    subprocess.run([sys.executable, "-m", "hbh", "run", str(path), "--duration", "4s", "--seed", "3",
                    "--out", str(out), "--no-plots", "--no-progress", "--backend", "sim"], cwd=ROOT, env=env,
                   capture_output=True, text=True, timeout=300, check=True)
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}


def _drop_at_3s(tmp_path: Path) -> Path:
    """capacity-drop with its R3-R4 drop at 3 s instead of 30 s."""
    text = (ROOT / "topo" / "capacity-drop.yaml").read_text()
    assert text.count("- {at: 30s, link: [R3, R4], rate: 1Mbps}") == 1
    path = tmp_path / "capacity-drop-at-3s.yaml"
    path.write_text(text.replace("- {at: 30s, link: [R3, R4]", "- {at: 3s, link: [R3, R4]"))
    return path


@pytest.mark.skipif(not COMPILED, reason=f"the control path is {native.describe()}: nothing to compare")
@pytest.mark.parametrize("topo", ["capacity-drop-at-3s", "alinea-merge-shared"])
def test_compiled_and_interpreted_give_the_same_bytes(tmp_path: Path, topo: str) -> None:
    """Two 4 s runs a case, one compiled, one interpreted. capacity-drop is paper-5router whose R3-R4
    link falls to 1 Mb/s at 30 s, beyond a 4 s run: its file's run wrote the same bytes as
    paper-5router's, and the two were cases here, one twice over. Its drop moved to 3 s, one case
    covers both: the first 3 s are paper-5router's (the event changes nothing before its time), the
    last second the laws' reaction to the drop, which neither case reached."""
    path = _drop_at_3s(tmp_path) if topo == "capacity-drop-at-3s" else topo
    compiled = _csvs(path, tmp_path / "compiled", interpreted=False)
    interpreted = _csvs(path, tmp_path / "interpreted", interpreted=True)
    assert "laws.csv" in compiled and compiled.keys() == interpreted.keys()
    for name in compiled:
        assert compiled[name] == interpreted[name], name
