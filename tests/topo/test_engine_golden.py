"""The compiled engine changes no result: golden CSV digests of the pure-Python simulator.

Why: issue 22 moves the per-packet path into engine/ (Rust) piece by piece, and each piece must
leave every run byte-identical. The digests below were written by the last commit before the
engine (07b370d, every per-packet step in Python) for 3 s of virtual time, seed 1, on topologies
that cover both queue models (bmv2: paper-1router, alinea-merge-2, cvihis-two-bottleneck;
shaper: paper-5router, capacity-drop), ALINEA and CVIHIS, link-rate events and losses. A change
that is meant to change results updates them and says why in its commit.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from topo.runner import run_experiment
from topo.schema import load_topology

ROOT = Path(__file__).resolve().parents[2]
# sha256 (first 16 hex digits) of each CSV file of `hbh run TOPO --duration 3s --seed 1` at 07b370d
GOLDEN: dict[str, dict[str, str]] = {
    "paper-1router": {
        "buffers.csv": "d178199da57dd087",
        "drops.csv": "22d7289255a5ebff",
        "flows.csv": "e4e816438aa325c5",
        "laws.csv": "f47fa5065c8e0482",
        "links.csv": "76a16ffeaa36b781",
        "packets_f1.csv": "e139b8a08ffd0612",
    },
    "paper-5router": {
        "buffers.csv": "00f35963e7d1e830",
        "drops.csv": "22d7289255a5ebff",
        "flows.csv": "4807686bfb5e3fcb",
        "laws.csv": "25dbf81981494548",
        "links.csv": "440731e66e56a138",
        "packets_f1.csv": "e94d87bc5d0a93af",
    },
    "alinea-merge-2": {
        "buffers.csv": "7b35f53783531698",
        "drops.csv": "22d7289255a5ebff",
        "flows.csv": "a9840116e7ace3db",
        "laws.csv": "abff58dcf9443001",
        "links.csv": "755793a498f09a4f",
        "packets_f1.csv": "cf408efe5a47b36b",
        "packets_f2.csv": "5230bc2713605014",
    },
    "cvihis-two-bottleneck": {
        "buffers.csv": "7b35f53783531698",
        "drops.csv": "22d7289255a5ebff",
        "flows.csv": "e965859128b7d0fe",
        "laws.csv": "ef9dbc6c8f10e37c",
        "links.csv": "d2629b8b487e0786",
        "packets_f1.csv": "b46fc3367df44577",
        "packets_f2.csv": "2b5afbcb3bd1c89b",
        "packets_f3.csv": "20420763cab5af93",
    },
    "capacity-drop": {
        "buffers.csv": "00f35963e7d1e830",
        "drops.csv": "22d7289255a5ebff",
        "flows.csv": "4807686bfb5e3fcb",
        "laws.csv": "25dbf81981494548",
        "links.csv": "440731e66e56a138",
        "packets_f1.csv": "e94d87bc5d0a93af",
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_csvs_are_those_of_the_pure_python_simulator(name: str, tmp_path: Path) -> None:
    run_experiment(load_topology(ROOT / "topo" / f"{name}.yaml"), 3_000_000_000, seed=1, out=tmp_path, plots=False)
    got = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(tmp_path.glob("*.csv"))}
    assert got == GOLDEN[name]
