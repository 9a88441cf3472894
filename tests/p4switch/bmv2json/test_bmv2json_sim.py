"""The simulator (virtual time, deterministic) running paper-1router on p4c's JSON of alinea.p4
gives the same run as on its source: the same buffers, reports, losses and goodputs, exactly.

Why beside the block-by-block differential (test_bmv2json_differential.py): a run goes through
the whole v1model core - clones whose preserved field list builds the ALINEA report in egress,
the TM, recirculation - where p4c's metadata lives in a nested struct (``meta.scalars``); a
field list read only from the top level of the metadata once lost the report's port there
(every report then read cell 0 of the occupancy register)."""

from __future__ import annotations

import pytest

import topo.sim.network as simnet
from p4switch.bmv2json import compile_json
from p4switch.bmv2json.build import CompiledJson, other_program
from tests.paths import ROOT
from topo.file.schema import load_topology
from topo.run.runner import run_experiment

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"


def test_simulated_run_from_p4c_json_equals_the_run_from_source(monkeypatch: pytest.MonkeyPatch) -> None:
    source = simnet.alinea_program()
    info, config = CompiledJson(FIXTURES / "alinea.json", FIXTURES / "alinea.p4info.txtpb").load()
    why = other_program(info, source.p4info)
    if why is not None:
        pytest.skip(f"the fixture alinea.json is another program than p4src/alinea.p4 ({why}): "
                    "tests/fixtures/bmv2-json/README.md says how to regenerate it")
    topo = load_topology(ROOT / "topo" / "paper-1router.yaml")
    want = run_experiment(topo, 3_000_000_000, seed=1, plots=False).summary
    program = compile_json(config, info)
    monkeypatch.setattr(simnet, "alinea_program", lambda: program)
    got = run_experiment(topo, 3_000_000_000, seed=1, plots=False).summary
    assert got["loss"] == want["loss"]
    assert got["buffers"] == want["buffers"]
    assert {k: f["goodput_bps"] for k, f in got["flows"].items()} == {k: f["goodput_bps"]
                                                                      for k, f in want["flows"].items()}
