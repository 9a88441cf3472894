"""`hbh tfrc-reordering --duration` takes a number of seconds > 0 and refuses anything else in one line
(nan and inf went on to a traceback: ValueError, OverflowError)."""

from __future__ import annotations

import pytest

from topo.experiments.tfrc_reordering import main


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_a_bad_duration_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--duration", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"hbh tfrc-reordering: --duration {value}: "), err
