"""Which BMv2 builds the P4Runtime bench measures: the default one on PATH and the performance build.

The performance build is found at its own prefix or where ``$HBH_BMV2_PERF`` says; absent, it is
left out with a one-line reason naming what is missing, not an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import p4rt_writes as pw


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def _perf(builds: list[pw.Bmv2Build]) -> pw.Bmv2Build:
    assert [b.key for b in builds] == ["bmv2", "bmv2-perf"]
    return builds[1]


def test_the_performance_build_is_found_at_its_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pw.BMV2_PERF_ENV, raising=False)
    exe = _executable(tmp_path / "opt" / "bin" / "simple_switch_grpc")
    monkeypatch.setattr(pw, "BMV2_PERF_DEFAULT", exe)
    perf = _perf(pw.bmv2_builds())
    assert perf.exe == str(exe) and perf.absent == ""


def test_the_variable_names_another_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pw, "BMV2_PERF_DEFAULT", _executable(tmp_path / "opt" / "simple_switch_grpc"))
    other = _executable(tmp_path / "elsewhere" / "simple_switch_grpc")
    monkeypatch.setenv(pw.BMV2_PERF_ENV, str(other))
    assert _perf(pw.bmv2_builds()).exe == str(other)


def test_an_absent_performance_build_is_left_out_with_one_line(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pw.BMV2_PERF_ENV, raising=False)
    monkeypatch.setattr(pw, "BMV2_PERF_DEFAULT", tmp_path / "none" / "simple_switch_grpc")
    perf = _perf(pw.bmv2_builds())
    assert perf.exe is None
    assert str(tmp_path / "none" / "simple_switch_grpc") in perf.absent and "\n" not in perf.absent


def test_a_variable_naming_no_executable_is_said_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pw, "BMV2_PERF_DEFAULT", _executable(tmp_path / "opt" / "simple_switch_grpc"))
    plain = tmp_path / "not-executable"
    plain.write_text("")
    for named in (plain, tmp_path / "missing"):
        monkeypatch.setenv(pw.BMV2_PERF_ENV, str(named))
        perf = _perf(pw.bmv2_builds())
        assert perf.exe is None  # not the default in its place: the variable said which build
        assert perf.absent.startswith(f"{pw.BMV2_PERF_ENV}={named}: ") and "\n" not in perf.absent


def test_the_default_build_is_the_one_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = _executable(tmp_path / "bin" / "simple_switch_grpc")
    monkeypatch.setenv("PATH", str(exe.parent))
    default = pw.bmv2_builds()[0]
    assert default.exe == str(exe)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    default = pw.bmv2_builds()[0]
    assert default.exe is None and "not on PATH" in default.absent
