"""`hbh hol` refuses a bad value in one line before any run, never with a traceback (the brief's rule,
issue 46 item 7): a length that leaves no time to measure the victim, a rate, delay or ratio the
topology file would refuse, an unknown control."""

from __future__ import annotations

import pytest

from topo.experiments.hol import main as hol_main


@pytest.mark.parametrize("argv,names", [
    (["--seconds", "nan"], "--seconds nan"),
    (["--seconds", "0"], "--seconds 0"),
    (["--seconds", "1.5"], "--seconds 1.5"),  # the victim is measured from 1.5 s
    (["--host-rate", "-1Mbps"], "host_rate"),
    (["--victim-rate", "0"], "r_max"),
    (["--delay", "-1ms"], "delay"),
    (["--oversubscription", "0"], "oversubscription"),
    (["--controls", "alinea,pfc"], "'pfc'"),
])
def test_a_bad_value_is_one_line(argv: list[str], names: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        hol_main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("hbh hol: error: ") and names in last, err
    assert "Traceback" not in err
