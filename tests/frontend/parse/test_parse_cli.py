"""`hbh p4 check` / `hbh p4 info`: diagnostics format and exit codes, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from hbh.cli import main
from tests.paths import ROOT

ALINEA = ROOT / "p4src" / "alinea.p4"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_syntax_error_prints_location_line_and_caret(tmp_path: Path, capsys) -> None:
    src = tmp_path / "bad.p4"
    src.write_text("header h_t {\n    bit<8> a\n}\n")
    rc, _out, err = run(capsys, "p4", "check", str(src))
    assert rc == 1
    lines = err.splitlines()
    assert lines[0] == f"{src}:2:13: error: expected ';' before '}}'"
    assert lines[1:3] == ["    bit<8> a", " " * 12 + "^"]
    assert "Traceback" not in err


def test_missing_include_and_missing_file(tmp_path: Path, capsys) -> None:
    src = tmp_path / "inc.p4"
    src.write_text('#include "nowhere.p4"\n')
    rc, _out, err = run(capsys, "p4", "check", str(src))
    assert rc == 1 and err.startswith(f"{src}:1:10: error: cannot find include file 'nowhere.p4'")
    rc, _out, err = run(capsys, "p4", "check", str(tmp_path / "absent.p4"))
    assert rc == 1 and "absent.p4: error: cannot open P4 source" in err


def test_include_dirs_and_defines_are_passed_to_cpp(tmp_path: Path, capsys) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "mine.p4").write_text("#ifndef OK\n#error OK not defined\n#endif\n")
    src = tmp_path / "top.p4"
    src.write_text("#include <mine.p4>\n")
    rc, _out, err = run(capsys, "p4", "check", str(src), "-I", str(tmp_path / "inc"))
    assert rc == 1 and "OK not defined" in err
    rc, _out, err = run(capsys, "p4", "check", str(src), "-I", str(tmp_path / "inc"), "-D", "OK=1")
    assert "OK not defined" not in err


def test_check_of_the_project_program(capsys) -> None:
    rc, out, err = run(capsys, "p4", "check", str(ALINEA))
    assert rc == 0, err
    assert out.strip() == f"{ALINEA}: ok"


def test_info_writes_p4info(tmp_path: Path, capsys) -> None:
    out_file = tmp_path / "p4info.txt"
    rc, _out, err = run(capsys, "p4", "info", str(ALINEA), "-o", str(out_file))
    assert rc == 0, err
    assert out_file.stat().st_size > 0


def test_internal_failure_is_one_line_not_a_traceback(tmp_path: Path, capsys, monkeypatch) -> None:
    import p4switch.frontend.parser as parser_mod

    def boom(_pp):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(parser_mod, "parse_preprocessed", boom)
    monkeypatch.delenv("P4SWITCH_TRACEBACK", raising=False)
    src = tmp_path / "ok.p4"
    src.write_text("const bit<8> X = 1;\n")
    rc, _out, err = run(capsys, "p4", "check", str(src))
    assert rc == 3
    assert err.strip().splitlines() == [
        "internal error in the P4 front end: RuntimeError: simulated bug (set P4SWITCH_TRACEBACK=1 for details)"
    ]
