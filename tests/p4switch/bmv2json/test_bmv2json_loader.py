"""p4switch.bmv2json where a user meets it: refusals with JSON paths, the CLI's positional
program, and P4Runtime's device config pushed by p4runtime-shell as BMv2 takes it."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4switch.bmv2json import Bmv2JsonError, compile_json, compile_program_file, translate
from p4switch.cli import main as cli_main
from p4switch.device import P4SwitchDevice, PipelineHolder, compile_device_config
from p4switch.p4runtime import P4RuntimeCore
from p4switch.p4runtime.device import PipelineLoadError
from p4switch.p4runtime.server import P4RuntimeServer
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"
BASIC = json.loads((FIXTURES / "basic_forward.json").read_text())
ROUTED = bytes.fromhex("000000000001000000000002" "0800" "450000220000000040110000" "0a0000010a000002") + bytes(14)


def refused(j: object) -> str:
    with pytest.raises(Bmv2JsonError) as err:
        compile_json(json.dumps(j).encode())
    assert "\n" not in str(err.value)
    return str(err.value)


def mutated(path: list, value: object) -> dict:
    j = copy.deepcopy(BASIC)
    node = j
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return j


def test_refusals_name_the_json_path() -> None:
    assert refused(mutated(["pipelines", 0, "tables", 0, "key", 0, "match_type"], "hash")).startswith(
        "pipelines[0].tables[0].key[0].match_type: match type 'hash'")
    assert refused(mutated(["actions", 3, "primitives", 0, "op"], "frobnicate")).startswith(
        "actions[3].primitives[0].op: primitive 'frobnicate'")
    assert refused(mutated(["pipelines", 0, "tables", 0, "type"], "magic")).startswith(
        "pipelines[0].tables[0].type:")
    assert refused(mutated(["parsers", 0, "parse_states", 0, "parser_ops", 0, "op"], "extract_VL")).startswith(
        "parsers[0].parse_states[0].parser_ops[0].op:")
    assert refused(mutated(["header_types", 3, "fields", 0], ["version", 4, True])).startswith(
        "header_types[3].fields[0]: signed")
    assert refused(mutated(["extern_instances"], [{"name": "x"}])).startswith("extern_instances[0]:")
    assert refused(mutated(["field_aliases"], [["my.alias", ["scalars", "x"]]])).startswith("field_aliases[0]:")
    assert refused(mutated(["header_union_stacks"], [{"name": "u"}])).startswith("header_union_stacks[0]:")
    assert refused(mutated(["parsers"], [])).startswith("parsers: v1model has exactly one parser")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_malformed_json_is_one_line_never_a_traceback(data: st.DataObject) -> None:
    """Any object, or any part of a real JSON replaced by junk: refused in one line (or loaded)."""
    j = copy.deepcopy(BASIC)
    key = data.draw(st.sampled_from(sorted(j)))
    j[key] = data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
    try:
        compile_json(json.dumps(j).encode())
    except Bmv2JsonError as exc:
        assert "\n" not in str(exc)


def test_not_json_is_one_line() -> None:
    with pytest.raises(Bmv2JsonError, match=r"^not valid JSON: line 1 column"):
        compile_json(b"{ nope")


def test_translation_is_deterministic() -> None:
    assert translate(BASIC) == translate(copy.deepcopy(BASIC))


def test_a_file_is_told_by_content(tmp_path: Path) -> None:
    odd = tmp_path / "prog.p4switch"  # no .json suffix: the content decides
    odd.write_bytes((FIXTURES / "basic_forward.json").read_bytes())
    assert compile_program_file(odd).device_config == odd.read_bytes()
    src = compile_program_file(ROOT / "tests" / "p4programs" / "basic_forward.p4")
    assert not src.device_config.lstrip().startswith(b"{")


def test_cli_refuses_bad_json_and_unknown_flags_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(mutated(["pipelines", 0, "tables", 0, "key", 0, "match_type"], "hash")))
    assert cli_main([str(bad), "--no-grpc", "--no-thrift"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("p4switch: error: pipelines[0].tables[0].key[0].match_type:") and "\n" not in err
    assert cli_main([str(bad), "--", "--nanolog", "ipc:///x", "--frob"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--nanolog --frob" in err and "\n" not in err


def test_device_config_json_needs_no_p4_source() -> None:
    data = (FIXTURES / "basic_forward.json").read_bytes()
    assert compile_device_config(data).device_config == data
    with pytest.raises(PipelineLoadError, match=r"^p4_device_config \(BMv2 JSON\): not valid JSON"):
        compile_device_config(b"{ [")


def test_p4runtime_shell_pushes_p4info_and_json(tmp_path: Path) -> None:
    """p4runtime-shell's config=(p4info, json), unchanged from a BMv2 set-up."""
    pytest.importorskip("p4runtime_sh")
    holder = PipelineHolder()
    device = P4SwitchDevice(holder, inject=lambda port, frame: None, cpu_port=None, seed=1)
    core = P4RuntimeCore(device, device_id=1)
    srv = P4RuntimeServer(core, address="127.0.0.1:0")
    port = srv.start()
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-m", "tests.p4switch.bmv2json.bmv2json_shell_client", f"127.0.0.1:{port}",
                               str(FIXTURES / "basic_forward.p4info.txtpb"), str(FIXTURES / "basic_forward.json")],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        srv.stop(grace=0.5)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (entry,) = json.loads(proc.stdout.strip().splitlines()[-1])["entries"]
    assert entry["match"][0]["lpm"]["prefixLen"] == 8
    assert holder.program.device_config == (FIXTURES / "basic_forward.json").read_bytes()
    pkt = holder.pipeline.new_packet(ROUTED, 1, 1000)
    holder.pipeline.run_ingress(pkt)
    assert pkt.std("egress_spec") == 2


def test_no_matching_transition_and_no_default_accepts_as_bmv2() -> None:
    """BMv2 goes to a state's default next state when no case matches, and with no default
    transition that is the end of the parse: accepted, no parser error (not P4's reject)."""
    from p4switch.device import build_pipeline

    j = copy.deepcopy(BASIC)
    start = j["parsers"][0]["parse_states"][0]
    start["transitions"] = [t for t in start["transitions"] if t["type"] != "default"]
    pl, _ = build_pipeline(compile_json(json.dumps(j).encode()), seed=1)
    pkt = pl.new_packet(bytes(12) + b"\x12\x34" + bytes(40), 1, 0)
    pl.run_ingress(pkt)
    assert pl.error_name(pkt.std("parser_error")) == "NoError"
    assert pkt.is_valid("hdr.ethernet")
