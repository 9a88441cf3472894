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
from p4switch.device import CompiledProgram, compile_file
from tests.paths import ROOT
from topo.file.schema import load_topology
from topo.run.runner import run_experiment

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"
STORED_SOURCE = "alinea.6accfac.p4"


def _fixtures_source(info: object) -> CompiledProgram:
    """The program p4c compiled the fixture from: today's alinea.p4 while it is the same program, else the source
    stored beside the fixture (tests/fixtures/bmv2-json/README.md), so that the JSON is always run against its own
    source, and the agent meets an older program's P4Info as it would on a switch not yet rebuilt."""
    today = simnet.alinea_program()
    if other_program(info, today.p4info) is None:
        return today
    stored = compile_file(FIXTURES / STORED_SOURCE, [str(ROOT / "p4src" / "include")])
    assert other_program(info, stored.p4info) is None, "the stored source is not the fixture's program"
    return stored


def test_simulated_run_from_p4c_json_equals_the_run_from_source(monkeypatch: pytest.MonkeyPatch) -> None:
    info, config = CompiledJson(FIXTURES / "alinea.json", FIXTURES / "alinea.p4info.txtpb").load()
    source = _fixtures_source(info)
    monkeypatch.setattr(simnet, "alinea_program", lambda: source)
    topo = load_topology(ROOT / "topo" / "paper-1router.yaml")
    want = run_experiment(topo, 3_000_000_000, seed=1, plots=False).summary
    program = compile_json(config, info)
    monkeypatch.setattr(simnet, "alinea_program", lambda: program)
    got = run_experiment(topo, 3_000_000_000, seed=1, plots=False).summary
    assert got["loss"] == want["loss"]
    assert got["buffers"] == want["buffers"]
    assert {k: f["goodput_bps"] for k, f in got["flows"].items()} == {k: f["goodput_bps"]
                                                                      for k, f in want["flows"].items()}
