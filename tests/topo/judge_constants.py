"""The law's tuned constants judged on random topologies: each halved and doubled in turn, the packets lost.

Why (issue 46, item 6): ``FORECAST_DEADBAND_PKTS``, ``FORECAST_SPAN_PKTS``, ``FORECAST_BOOST``, ``NEWEST_FALL``,
``NEWEST_CAP``, ``OVERFLOW_DRAIN_SHARE`` (controlplane/alinea.py), ``FALL_PERSISTENCE``, ``BRAKE_GAPS`` and
``COMMAND_SHARE`` (controlplane/forecast.py) were chosen on the shipped files. A loss that moves with a constant is
one it decides; one that a constant's other value turns from warned into unwarned is a loss the loop analysis owes
to that value. ``OVERFLOW_DRAIN_SHARE`` is a share of the drain, so it is tried at 0.8 and 1 instead of halved and
doubled; integer constants are rounded (at least 1).

Each topology is judged as the fuzzer judges it (tests/topo/randomcheck.py: the loop analysis, then one simulator
run): one JSON line per variant and topology, then one line per variant over them all (runs, runs and packets lost,
lossy runs the analysis did not warn, runs losing more and fewer than with the constants as shipped). With
``--cases`` the topologies are every all-ALINEA file of tests/topo/random_cases/, each for its own run length.
Runs the control path interpreted (a constant set on its module reaches the law only there):

    HBH_INTERPRETED=1 python -m tests.topo.judge_constants --cases --seed 1
    HBH_INTERPRETED=1 python -m tests.topo.judge_constants FILE.yaml --seconds 1.4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

CONSTANTS = {"controlplane.alinea": ("FORECAST_DEADBAND_PKTS", "FORECAST_SPAN_PKTS", "FORECAST_BOOST", "NEWEST_FALL",
                                     "NEWEST_CAP", "OVERFLOW_DRAIN_SHARE"),
             "controlplane.forecast": ("FALL_PERSISTENCE", "BRAKE_GAPS", "COMMAND_SHARE")}


def variants(base: dict[str, float]) -> list[tuple[str, dict[str, float]]]:
    """("base", {}) and each constant's two values either side of its own."""
    out: list[tuple[str, dict[str, float]]] = [("base", {})]
    for name, value in base.items():
        for v in ((0.8, 1.0) if name == "OVERFLOW_DRAIN_SHARE" else (value / 2, value * 2)):
            v = max(1, round(v)) if isinstance(value, int) else v
            out.append((f"{name}={v:g}", {name: v}))
    return out


def tally(label: str, rows: dict[str, dict[str, Any]], base: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One variant's runs against the shipped constants' (``base``, keyed alike)."""
    unwarned = [r["lost"] for r in rows.values() if r["lost"] and not r["warned"]]
    return {"variant": label, "runs": len(rows), "lossy": sum(1 for r in rows.values() if r["lost"]),
            "lost": sum(r["lost"] for r in rows.values()), "unwarned_runs": len(unwarned),
            "unwarned_lost": sum(unwarned),
            "more": sum(1 for k, r in rows.items() if k in base and r["lost"] > base[k]["lost"]),
            "fewer": sum(1 for k, r in rows.items() if k in base and r["lost"] < base[k]["lost"])}


def _topologies(args: argparse.Namespace) -> list[tuple[str, str, float]]:
    """(name, text, seconds) of each topology to judge."""
    from tests.paths import RANDOM_CASES
    from tests.topo.randomcheck import case_seconds
    from topo.file.schema import load_topology_text

    if args.cases:
        out = []
        for path in sorted(RANDOM_CASES.glob("*.yaml")):
            text = path.read_text()
            if all(f.control == "alinea" for f in load_topology_text(text, path.name).flows):
                out.append((path.name, text, case_seconds(text)))
        return out
    if args.seconds is None:
        raise SystemExit("error: --seconds is needed with topology files (or use --cases)")
    return [(str(p), p.read_text(), args.seconds) for p in args.topology]


def _judged(name: str, text: str, seconds: float, seed: int) -> dict[str, Any]:
    from tests.topo.randomcheck import judge
    from topo.file.schema import load_topology_text

    alinea = all(f.control == "alinea" for f in load_topology_text(text, name).flows)
    verdict = judge(text, seconds, alinea, seed, source=name)
    return {"lost": verdict.lost, "warned": bool(verdict.warned),
            "invariants_broken": sum(1 for p in verdict.problems if p.startswith("invariant"))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.topo.judge_constants", description=__doc__.split("\n\n")[0])
    p.add_argument("topology", type=Path, nargs="*")
    p.add_argument("--cases", action="store_true", help="every all-ALINEA file of tests/topo/random_cases/")
    p.add_argument("--seconds", type=float, help="the run's length (topology files)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if os.environ.get("HBH_INTERPRETED") != "1":
        print("error: set HBH_INTERPRETED=1 (a compiled law does not read its module's constants)", file=sys.stderr)
        return 2
    if not args.cases and not args.topology:
        print("error: name topology files or --cases", file=sys.stderr)
        return 2
    import importlib

    modules: dict[str, ModuleType] = {n: importlib.import_module(m) for m, ns in CONSTANTS.items() for n in ns}
    shipped = {name: getattr(mod, name) for name, mod in modules.items()}
    topologies = _topologies(args)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for label, change in variants(shipped):
            for name, mod in modules.items():
                setattr(mod, name, change.get(name, shipped[name]))
            rows = results.setdefault(label, {})
            for name, text, seconds in topologies:
                rows[name] = _judged(name, text, seconds, args.seed)
                print(json.dumps({"variant": label, "topology": name, **rows[name]}), flush=True)
    finally:
        for name, mod in modules.items():
            setattr(mod, name, shipped[name])
    for label, rows in results.items():
        print(json.dumps(tally(label, rows, results["base"])), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
