"""`hbh run --backend netns` runs its switches from p4c's JSON when `make p4` wrote a current
build/alinea.json, from source otherwise (no JSON, a JSON older than a source file, or a JSON of
another program than p4src/alinea.p4: its P4Info differs from the source's), says which, and the
two runs agree (paper-1router: no loss, the buffer at its target, the same buffer means and
goodputs within the margins the netns-vs-simulator test uses). The JSON is p4c's for today's
source when p4c is on PATH, else the fixture p4c wrote, when it is still today's program."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import topo.netns.network as netns
from p4switch.bmv2json.build import CompiledJson, compiled_json, other_program, program_sources
from tests.paths import ROOT
from tests.switch import netns as N
from topo.file.schema import load_topology
from topo.run.runner import run_experiment
from topo.sim.network import PROGRAM, alinea_program

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"


def _build(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in ("alinea.json", "alinea.p4info.txtpb"):
        shutil.copy(FIXTURES / f, folder / f)  # a fresh mtime: as `make p4` just wrote them
    return folder


def _current_build(folder: Path) -> Path:
    """p4c's JSON of today's alinea.p4 (as `make p4` compiles it), or the fixture when it is
    today's program; skips otherwise."""
    if shutil.which("p4c"):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "--std", "p4-16", "-I",
                        str(PROGRAM.parent / "include"), "-o", str(folder), "--p4runtime-files",
                        str(folder / "alinea.p4info.txtpb"), str(PROGRAM)], check=True, timeout=600)
        return folder
    built = _build(folder)
    why = other_program(CompiledJson(built / "alinea.json", built / "alinea.p4info.txtpb").load()[0],
                        alinea_program().p4info)
    if why is not None:
        pytest.skip(f"p4c is not on PATH and the fixture alinea.json is another program than p4src/alinea.p4 "
                    f"({why}): tests/fixtures/bmv2-json/README.md says how to regenerate it")
    return built


def test_another_programs_p4info_is_told_apart() -> None:
    info = CompiledJson(FIXTURES / "alinea.json", FIXTURES / "alinea.p4info.txtpb").load()[0]
    assert other_program(info, info) is None
    fewer = type(info)()
    fewer.CopyFrom(info)
    gone = fewer.counters.pop()
    assert other_program(fewer, info) == f"its P4Info lacks counter '{gone.preamble.name}' of the source"
    assert other_program(info, fewer) == f"its P4Info has '{gone.preamble.name}', which the source lacks"
    moved = type(info)()
    moved.CopyFrom(info)
    moved.tables[0].preamble.id += 1
    assert "id 0x" in (other_program(moved, info) or "")


def test_which_program_a_build_folder_gives(tmp_path: Path) -> None:
    src = tmp_path / "p" / "alinea.p4"
    (src.parent / "include").mkdir(parents=True)
    src.write_text("// v1\n")
    (src.parent / "include" / "h.p4").write_text("// h\n")
    assert "is absent" in compiled_json(tmp_path / "none", "alinea", program_sources(src))
    build = _build(tmp_path / "build")
    found = compiled_json(build, "alinea", program_sources(src))
    assert isinstance(found, CompiledJson) and found.load()[1] == (FIXTURES / "alinea.json").read_bytes()
    later = time.time() + 5
    os.utime(src.parent / "include" / "h.p4", (later, later))  # an include changed after the build
    assert "h.p4 changed after" in compiled_json(build, "alinea", program_sources(src))


@pytest.mark.netns
@pytest.mark.slow
def test_netns_run_from_p4c_json_agrees_with_the_run_from_source(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    N.require_netns()
    topo = load_topology(ROOT / "topo" / "paper-1router.yaml")
    summaries = {}
    for name, build in (("json", _current_build(tmp_path / "build")), ("source", tmp_path / "empty")):
        monkeypatch.setattr(netns, "P4_BUILD", build)
        summaries[name] = s = run_experiment(topo, 10_000_000_000, seed=1, out=tmp_path / name, plots=False,
                                             backend="netns", pcap=False).summary
        N.skip_unless_kept_up(s, f"one router from {name}")
        assert s["loss"]["total"] == 0, (name, s["loss"])
        for buf, b in s["buffers"].items():
            assert abs(b["mean"] - b["target"]) <= 0.05, (name, buf, b)
    assert any("switches run p4c's" in n for n in summaries["json"]["notices"])
    assert any("from source" in n and "absent" in n for n in summaries["source"]["notices"])
    js, src = summaries["json"], summaries["source"]
    for buf, b in src["buffers"].items():
        assert abs(js["buffers"][buf]["mean"] - b["mean"]) <= 0.05, (buf, b, js["buffers"][buf])
    for flow, f in src["flows"].items():
        assert abs(js["flows"][flow]["goodput_bps"] - f["goodput_bps"]) <= 0.05 * f["goodput_bps"], flow
