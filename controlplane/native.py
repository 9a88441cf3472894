"""The control path's modules, compiled by mypyc from this same Python source, or interpreted.

Every report runs the switch agent, the forecast and the law (about a third of a simulation's
packet-hops are reports): the number of Python steps per report, not their arithmetic, sets the
simulator's speed (docs/background/engine.md, "The control path compiled"). `make setup` compiles the modules
of ``MODULES`` with mypyc into extension modules beside their sources and writes a stamp of the
sources it compiled. There is one source of the law: the compiled modules are that source, built.

The extension modules are used only while every one of these sources is the one compiled;
otherwise (a source edited since, a stamp of another Python, no stamp) or with ``HBH_INTERPRETED=1``
the sources are imported as usual, all of them together (a compiled module holds its group's
classes: half compiled would mix two copies of a class). ``why_interpreted()`` says why.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: the modules compiled, in this package: a report's path from its decoding to the rate it sets, and the loop
#: analysis's fluid model of it (fluid_laws: its controllers, asked most of the analysis's cost)
MODULES = ("params", "report", "forecast", "alinea", "frame_size", "agent", "switch_agent", "fluid_laws")
#: set to 1 to run the control path interpreted (profiling it by function, the differential test)
ENV = "HBH_INTERPRETED"
PACKAGE_DIR = Path(__file__).resolve().parent
#: written by controlplane.native_build after a build: the Python and the sources compiled
STAMP = PACKAGE_DIR.parent / "build" / "native" / "stamp.json"


def source_digests(package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    """sha256 of each compiled module's source."""
    return {m: hashlib.sha256((package_dir / f"{m}.py").read_bytes()).hexdigest() for m in MODULES}


def stamp_for(package_dir: Path = PACKAGE_DIR) -> dict[str, object]:
    """What a build of ``package_dir`` records, and what an import compares against."""
    return {"python": sys.version, "sources": source_digests(package_dir)}


def stale_reason(stamp: Path = STAMP, package_dir: Path = PACKAGE_DIR) -> str | None:
    """Why the extension modules in ``package_dir`` must not be used (None: they may)."""
    built = [m for m in MODULES if any(package_dir.glob(f"{m}.*.so"))]
    if not built:
        return "not compiled (`make setup` compiles it)"
    if len(built) < len(MODULES):
        return f"only {', '.join(built)} compiled (`make setup` compiles them all)"
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return f"no readable stamp of the build ({stamp}); `make setup` rebuilds it"
    now = stamp_for(package_dir)
    if recorded.get("python") != now["python"]:
        return "compiled for another Python (`make setup` recompiles)"
    sources = recorded.get("sources", {})
    changed = [f"{m}.py" for m in MODULES if sources.get(m) != now["sources"][m]]  # type: ignore[index]
    if changed:
        return f"{', '.join(changed)} changed since compiled (`make setup` recompiles)"
    return None


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Imports the compiled modules' sources, not the extension modules beside them."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = {f"{__package__}.{m}": PACKAGE_DIR / f"{m}.py" for m in names}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        source = self.names.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


def choose() -> str | None:
    """Decides once, at the package's import (controlplane/__init__.py), before any of ``MODULES``
    is imported; returns why the path runs interpreted (None: compiled)."""
    global _WHY
    if os.environ.get(ENV, "") not in ("", "0"):
        why: str | None = f"{ENV}=1"
    else:
        why = stale_reason()
        if why is not None:  # slower, not wrong: say so once, where a benchmark's reader sees it
            print(f"note: the control path runs interpreted: {why}", file=sys.stderr)
    if why is not None:
        sys.meta_path.insert(0, _SourceFinder(MODULES))
    _WHY = why
    return why


_WHY: str | None = "not decided (controlplane not imported)"


def source_module(name: str) -> ModuleType:
    """``controlplane.<name>`` run from its source whether or not the package runs it compiled, as
    ``controlplane.<name>_source``: for a test that subclasses its classes or puts a stand-in into a
    typed attribute (compiled classes refuse both). What it imports is the package's, as usual."""
    fullname = f"{__package__}.{name}_source"
    if fullname not in sys.modules:
        spec = importlib.util.spec_from_file_location(fullname, PACKAGE_DIR / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[fullname] = module  # before it runs: its dataclasses look themselves up there
        spec.loader.exec_module(module)
    return sys.modules[fullname]


def why_interpreted() -> str | None:
    """None when the control path runs compiled; otherwise why it runs interpreted."""
    return _WHY


def describe() -> str:
    """One line for a run's or a benchmark's details."""
    return "compiled (mypyc)" if _WHY is None else f"interpreted: {_WHY}"
