"""The law's tuned constants judged on one topology: each halved and doubled in turn, the packets lost.

Why: ``FORECAST_DEADBAND_PKTS``, ``FORECAST_SPAN_PKTS``, ``FORECAST_BOOST``, ``NEWEST_FALL``,
``NEWEST_CAP`` and ``OVERFLOW_DRAIN_SHARE`` (controlplane/alinea.py) were chosen on the shipped
files. Where a random topology loses packets (``make fuzz-topo`` keeps them in build/fuzz-topo/),
this says whether any of them is the cause: a loss that moves with a constant is one it decides.
``OVERFLOW_DRAIN_SHARE`` is a share of the drain, so it is tried at 0.8 and 1 instead of halved and
doubled; ``FORECAST_BOOST`` also at 0 (no forecast gain). One JSON line per variant.

Runs the control path interpreted (a constant set on the module reaches the law only there):

    HBH_INTERPRETED=1 python -m tests.topo.judge_constants FILE.yaml --seconds 1.4 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

CONSTANTS = ("FORECAST_DEADBAND_PKTS", "FORECAST_SPAN_PKTS", "FORECAST_BOOST", "NEWEST_FALL", "NEWEST_CAP",
             "OVERFLOW_DRAIN_SHARE")


def variants(base: dict[str, float]) -> list[tuple[str, dict[str, float]]]:
    """("base", {}) and each constant's two values either side of its own."""
    out: list[tuple[str, dict[str, float]]] = [("base", {})]
    for name, value in base.items():
        for v in ((0.8, 1.0) if name == "OVERFLOW_DRAIN_SHARE" else (value / 2, value * 2)):
            out.append((f"{name}={v:g}", {name: v}))
    out.append(("FORECAST_BOOST=0", {"FORECAST_BOOST": 0.0}))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.topo.judge_constants", description=__doc__.split("\n\n")[0])
    p.add_argument("topology", type=Path)
    p.add_argument("--seconds", type=float, required=True, help="the run's length")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if os.environ.get("HBH_INTERPRETED") != "1":
        print("error: set HBH_INTERPRETED=1 (a compiled law does not read its module's constants)", file=sys.stderr)
        return 2
    import controlplane.alinea as law
    from tests.topo.randomcheck import lost_packets
    from topo.file.schema import load_topology_text
    from topo.run.runner import run_experiment

    text = args.topology.read_text()
    base = {name: float(getattr(law, name)) for name in CONSTANTS}
    for label, change in variants(base):
        for name, value in base.items():
            setattr(law, name, change.get(name, value))
        summary = run_experiment(load_topology_text(text, str(args.topology)), round(args.seconds * 1e9), args.seed,
                                 plots=False).summary
        print(json.dumps({"topology": args.topology.stem, "variant": label, "lost": lost_packets(summary),
                          "invariants_broken": len(summary.get("invariants", {}).get("violations", []))}), flush=True)
    for name, value in base.items():
        setattr(law, name, value)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
