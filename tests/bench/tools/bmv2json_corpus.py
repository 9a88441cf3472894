"""behavioral-model's own test JSONs through p4switch.bmv2json (local; not in `make test`).

For every ``*.json`` under the given behavioral-model checkout's ``tests/`` and ``targets/*/tests/``
(or in a plain folder of JSONs): load it, build its pipeline and run one frame through it. Prints
one line per file (runs, or the loader's one-line refusal) and the totals. A crash (anything but
a refusal) is counted apart: it is a loader bug.

    .venv/bin/python -m tests.bench.tools.bmv2json_corpus PATH/TO/behavioral-model
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from p4switch.bmv2json import Bmv2JsonError, compile_json
from p4switch.device import build_pipeline
from p4switch.p4runtime.device import PipelineLoadError


def corpus(root: Path) -> list[Path]:
    found = sorted(p for p in root.rglob("*.json") if "tests" in p.relative_to(root).parts)
    return found or sorted(root.glob("*.json"))


def run_one(path: Path) -> tuple[str, str]:
    try:
        pl, _state = build_pipeline(compile_json(path.read_bytes()), seed=1)
        pkt = pl.new_packet(bytes(range(64)), 1, 1000)
        pl.run_ingress(pkt)
        if not pkt.marked_to_drop:
            pl.run_egress(pkt, pkt.std("egress_spec") & 0x1FF, 1005)
            pl.deparse(pkt)
        return "runs", ""
    except Bmv2JsonError as exc:
        return "refused", str(exc)
    except PipelineLoadError as exc:
        return "refused", " ".join(str(exc).split())
    except Exception as exc:  # noqa: BLE001 - counted and shown: a loader bug
        return "crash", f"{type(exc).__name__}: {exc}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    args = ap.parse_args()
    totals: collections.Counter[str] = collections.Counter()
    files = corpus(args.root)
    for path in files:
        kind, why = run_one(path)
        totals[kind] += 1
        print(f"{path.relative_to(args.root)}: {kind}{': ' + why if why else ''}")
    print(f"{len(files)} JSON files: {totals['runs']} load and run, {totals['refused']} refused, "
          f"{totals['crash']} crashed")
    return 1 if totals["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
