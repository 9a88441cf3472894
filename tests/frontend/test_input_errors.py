"""Bad input files give one located error and exit 1, never an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from hbh.cli import main


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["p4", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    return err


def test_binary_file_is_reported_at_its_first_bad_byte(tmp_path: Path, capsys) -> None:
    f = tmp_path / "blob.p4"
    f.write_bytes(b"const bit<8> X = 1;\n  \xff\xfe\n")
    assert f"{f}:2:3: error: not UTF-8 text" in _check(f, capsys)


def test_binary_include_does_not_crash(tmp_path: Path, capsys) -> None:
    (tmp_path / "blob.p4").write_bytes(b"\xff\xfe\n")
    main_file = tmp_path / "main.p4"
    main_file.write_text('#include "blob.p4"\n')
    assert "error:" in _check(main_file, capsys)


@pytest.mark.parametrize(("name", "reason"), [("missing.p4", "no such file"), (".", "is a directory")])
def test_unreadable_source_is_named(tmp_path: Path, capsys, name: str, reason: str) -> None:
    assert reason in _check(tmp_path / name, capsys)
