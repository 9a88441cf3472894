"""Every experiment a user runs is an ``hbh`` sub-command (issue 51): ``hbh COMMAND --help`` prints the
program's own help under its ``hbh`` name, and ``hbh --help`` lists it without importing it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hbh.cli import PROGRAMS, main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("command", "module"), [(c, m) for c, m, _ in PROGRAMS])
def test_every_program_answers_help_under_its_hbh_name(command: str, module: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: hbh {command}"), out[:200]


def test_hbh_help_lists_the_programs_without_importing_them() -> None:
    code = ("import sys\nfrom hbh.cli import PROGRAMS, build_parser\nhelp = build_parser().format_help()\n"
            "print([c for c, _, _ in PROGRAMS if f'    {c} ' not in help and f'    {c}\\n' not in help])\n"
            "print([m for _, m, _ in PROGRAMS if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=os.environ | {"PYTHONPATH": str(ROOT)}).stdout.splitlines()
    assert out[-2:] == ["[]", "[]"]  # every program listed, none imported
