"""The engine crate's module graph, measured from its code: who names whom through ``crate::``.

    python -m tests.bench.tools.crate_graph [engine/src]

Prints every module's edges to the crate's other modules (a ``use crate::m::...`` line, a
``use crate::{m, ...}`` group, or a ``crate::m::`` path in the code; comments are left out, since
doc links name modules too) and the circles: the strongly connected components of more than one
module (Tarjan). docs/background/engine.md describes the graph ("The module graph").
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tests.paths import ROOT


def module_files(src: Path) -> dict[str, Path]:
    """module -> its file, in ``src`` and its concept folders (``lib`` and a folder's ``mod.rs`` left
    out: they only register; docs/background/engine.md, "The crate's folders")."""
    paths = [p for p in sorted(src.rglob("*.rs")) if p.stem not in ("lib", "mod")]
    files = {p.stem: p for p in paths}
    if len(files) != len(paths):
        raise ValueError(f"{src}: two modules of one name in different folders")
    return files


def edges(src: Path) -> dict[str, set[str]]:
    """module -> the crate's other modules its code names: a path through ``crate::`` names the
    modules among its segments (``crate::sched::X``, ``crate::net::sched::X``)."""
    files = module_files(src)
    out: dict[str, set[str]] = {m: set() for m in files}
    for m, path in files.items():
        text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        named = set(re.findall(r"\bcrate::((?:\w+::)*\w+)", text))
        for group in re.findall(r"\bcrate::((?:\w+::)*)\{([^}]*)\}", text):
            named |= {group[0] + g for g in re.findall(r"(?:^|,)\s*(\w+)", group[1])}
        segments = {seg for path_ in named for seg in path_.split("::")}
        out[m] = {n for n in segments if n in files and n != m}
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(1000, 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: (-len(c), c))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tests.bench.tools.crate_graph", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("src", nargs="?", type=Path, default=ROOT / "engine" / "src", help="a crate's src/ folder")
    args = p.parse_args(argv)
    if not args.src.is_dir() or not any(args.src.rglob("*.rs")):
        print(f"crate_graph: {args.src} is not a folder of .rs files", file=sys.stderr)
        return 2
    graph = edges(args.src)
    print(f"{len(graph)} modules, {sum(len(e) for e in graph.values())} edges between them")
    found = circles(graph)
    print(f"{len(found)} circle(s)" + (":" if found else ""))
    for comp in found:
        print(f"  {len(comp)} modules: {' '.join(comp)}")
        for m in comp:
            print(f"    {m} -> {' '.join(sorted(graph[m] & set(comp)))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
