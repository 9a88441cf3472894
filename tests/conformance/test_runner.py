"""The conformance runner on a tiny corpus of our own (never p4c's files): discovery,
classification of samples and error programs, the P4Info comparison and the report."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format

from p4switch.conformance import classify, corpus
from p4switch.conformance.__main__ import main
from p4switch.conformance.p4info_diff import diff_p4info
from p4switch.conformance.pool import run_tasks
from p4switch.frontend.p4info import build_p4info
from p4switch.frontend.passes import compile_file

V1 = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in pk, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t m) { apply { } }
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    action set(bit<9> p) { sm.egress_spec = p; }
    table t { key = { hdr.h.f : exact; } actions = { set; } }
    apply { BODY }
}
control E(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t m) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
OTHER = """#include <core.p4>
control c(inout bit<8> x) { apply { x = 1; } }
control proto(inout bit<8> x);
package top(proto p);
top(c()) main;
"""


@pytest.fixture
def testdata(tmp_path: Path) -> Path:
    td = tmp_path / "testdata"
    s, o, e, eo = (td / corpus.SAMPLES, td / corpus.OUTPUTS, td / corpus.ERRORS, td / corpus.ERRORS_OUTPUTS)
    for d in (s, o, e, eo):
        d.mkdir(parents=True)
    (s / "same.p4").write_text(V1.replace("BODY", "t.apply();"))
    (s / "differs.p4").write_text(V1.replace("BODY", "t.apply();"))
    (s / "bad.p4").write_text(V1.replace("BODY", "t.apply(); undefined_x = 1;"))
    (s / "other.p4").write_text(OTHER)
    info = build_p4info(compile_file(s / "same.p4"))
    info.pkg_info.ClearField("name")  # p4c leaves it empty
    (o / "same.p4.p4info.txtpb").write_text("# proto-file: p4info\n" + text_format.MessageToString(info))
    info.tables[0].size = 7  # p4c's size differs
    del info.actions[:]  # and it has no actions
    (o / "differs.p4.p4info.txtpb").write_text(text_format.MessageToString(info))
    (e / "rejected.p4").write_text(V1.replace("BODY", "t.apply(); undefined_y = 1;"))
    (eo / "rejected.p4-stderr").write_text("rejected.p4(13): [--Werror=not-found] error: undefined_y: not found\n")
    (e / "accepted.p4").write_text(V1.replace("BODY", "t.apply();"))
    (eo / "accepted.p4-stderr").write_text("accepted.p4(3): error: something p4c does not like\n")
    return td


def test_corpus_discovery(testdata: Path) -> None:
    samples = {s.path.name: s for s in corpus.samples(testdata)}
    assert set(samples) == {"same.p4", "differs.p4", "bad.p4", "other.p4"}
    assert samples["same.p4"].p4info is not None and samples["bad.p4"].p4info is None
    errs = {e.path.name: e.p4c_line for e in corpus.error_programs(testdata)}
    assert errs == {"rejected.p4": 13, "accepted.p4": 3}


def test_p4info_diff_names_each_difference_class(testdata: Path) -> None:
    from p4switch.conformance.p4info_diff import read_expected

    ours = build_p4info(compile_file(testdata / corpus.SAMPLES / "differs.p4"))
    theirs = read_expected(testdata / corpus.OUTPUTS / "differs.p4.p4info.txtpb")
    classes = {c for c, _ in diff_p4info(ours, theirs)}
    assert classes == {"tables.size", "actions.extra"}
    same = read_expected(testdata / corpus.OUTPUTS / "same.p4.p4info.txtpb")
    assert diff_p4info(build_p4info(compile_file(testdata / corpus.SAMPLES / "same.p4")), same) == []


def test_pool_reports_a_hang_as_timeout_and_keeps_going(testdata: Path) -> None:
    task = {"kind": "front", "path": str(testdata / corpus.SAMPLES / "same.p4")}
    answers = run_tasks([task, task], jobs=1, timeout=0.001)
    assert [a["outcome"] for a in answers] == ["timeout", "timeout"]
    (ok,) = run_tasks([task], jobs=1, timeout=60)
    assert ok["outcome"] == "ok" and ok["arch"] == "v1model"


def test_verdicts() -> None:
    v = classify.sample_verdict("x.p4", {"outcome": "error", "stage": "check", "errors": [
        {"file": "x.p4", "line": 3, "col": 5, "message": "unknown identifier 'a'"}]})
    assert (v.status, v.where) == ("rejected", "x.p4:3:5")
    assert classify.reason_class("unknown identifier 'a' at 12") == "unknown identifier '…' at N"
    e = classify.error_verdict("y.p4", {"outcome": "error", "errors": [
        {"file": "y.p4", "line": 0, "col": 0, "message": "preprocessing failed"}]}, 4)
    assert e.status == "rejected_unlocated"
    assert classify.error_verdict("y.p4", {"outcome": "ok"}, 4).status == "accepted"
    assert classify.sample_verdict("z.p4", {"outcome": "timeout", "message": "no answer"}).status == "timeout"


def test_report_on_the_tiny_corpus(testdata: Path, tmp_path: Path) -> None:
    out = tmp_path / "conformance.md"
    assert main(["--testdata", str(testdata), "--out", str(out), "--commit", "abc123", "--jobs", "1",
                 "--no-stf"]) == 0
    text = out.read_text()
    assert "`abc123`" in text
    assert "| v1model samples accepted (check + P4Info) | 2 / 3 (66.7 %)" in text
    assert "| P4Info identical to p4c's (v1model samples with one) | 1 / 2 (50.0 %)" in text
    assert "| p4_16_errors rejected with file:line:col | 1 / 2 (50.0 %)" in text
    assert "| tracebacks, hangs, crashes (samples + errors) | 0 |" in text
    assert "Samples of other architectures (not v1model; p4switch runs v1model only): 1" in text
    assert "bad.p4" in text and "unknown identifier" in text
    assert "accepted.p4" in text
    assert "`tables.size`" in text and "`actions.extra`" in text


def test_bad_testdata_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["--testdata", str(tmp_path), "--out", str(tmp_path / "x.md")]) == 2


def test_stf_tests_run_through_p4switch_stf_or_are_reported_not_run(testdata: Path, tmp_path: Path) -> None:
    import importlib.util

    (testdata / corpus.SAMPLES / "same.stf").write_text("packet 0 01\nexpect 1 01\n")
    out = tmp_path / "c.md"
    assert main(["--testdata", str(testdata), "--out", str(out), "--commit", "x", "--jobs", "1"]) == 0
    row = next(line for line in out.read_text().splitlines() if line.startswith("| STF tests"))
    if importlib.util.find_spec("p4switch.stf") is None:
        assert "not run (p4switch.stf missing)" in row
    else:
        assert "/ 1 (" in row  # one v1model sample has an .stf
