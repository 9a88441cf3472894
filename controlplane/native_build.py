"""Compiles the control path's modules with mypyc (`make setup`): ``python controlplane/native_build.py``
(a script, not ``-m``: importing the package would pick the modules it is about to replace).

The extension modules land beside their sources (controlplane/*.so, not in git), the group's
shared library as ``controlplane/native__mypyc``; the stamp that ``controlplane.native`` checks
at import is written last, so a failed build leaves the sources interpreted.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "native"


def _native() -> object:
    """controlplane.native, loaded without the package (whose import would pick the modules)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_hbh_native", ROOT / "controlplane" / "native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    native = _native()
    try:
        from mypyc.build import mypycify
        from setuptools import setup
    except ImportError as exc:
        print(f"error: compiling the control path needs mypy (pinned in requirements.lock): {exc}", file=sys.stderr)
        return 1
    os.chdir(ROOT)
    BUILD.mkdir(parents=True, exist_ok=True)
    stamp = BUILD / "stamp.json"
    stamp.unlink(missing_ok=True)
    for old in (ROOT / "controlplane").glob("*.so"):  # a module no longer compiled must not stay compiled
        old.unlink()
    sources = [f"controlplane/{m}.py" for m in native.MODULES]  # type: ignore[attr-defined]
    # Third-party modules without type stubs (p4runtime's, thrift) are Any to mypy: the control path
    # calls them through Python either way.
    extensions = mypycify(["--ignore-missing-imports", "--follow-imports=silent", *sources], opt_level="3", target_dir=str(BUILD),
                          group_name="controlplane.native")
    warnings.simplefilter("ignore")  # setuptools' notes on the project's pyproject.toml: not this build's
    setup(name="hbh-control-native", ext_modules=extensions, script_args=[
        "--quiet", "build_ext", "--inplace", "--build-temp", str(BUILD / "temp"), "--build-lib", str(BUILD / "lib")])
    stamp.write_text(json.dumps(native.stamp_for(), indent=1) + "\n")  # type: ignore[attr-defined]
    print(f"compiled {', '.join(sources)} (mypyc); stamp {stamp.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
