"""`hbh params set`: invalid values are refused before any connection is made (exit 2)."""

from __future__ import annotations

import pytest

from controlplane.params import LawParams, law_from_metadata, law_to_action
from hbh.cli import main

# Nothing listens there: a command that tried to connect would fail with exit 1, not 2.
NOWHERE = ["--grpc-addr", "127.0.0.1:9"]


@pytest.mark.parametrize("options, message", [
    (["--o-min", "90%", "--o-max", "80%"], "--o-min = 0.9 is above --o-max = 0.8"),
    (["--o-max", "120%"], "--o-max = 1.2: a fraction must be in (0, 1]"),
    (["--o-min", "0"], "--o-min = 0: a fraction must be in (0, 1]"),
    (["--w-min", "9Mbps", "--w-max", "8Mbps"], "--w-min = 9e+06 is above --w-max = 8e+06"),
    (["--r-max=-2Mbps"], "--r-max: expected e.g. 2Mbps"),
    (["--r-max", "0bps"], "--r-max = 0: must be > 0"),
    (["--r-floor", "3Mbps", "--r-max", "2Mbps"], "--r-floor = 3e+06 is above --r-max = 2e+06"),
    (["--r-max", "2Mbit"], "unknown rate unit 'Mbit'"),
    (["--capacity", "0"], "capacity = 0: must be a whole number of packets >= 1"),
    (["--capacity", "lots"], "--capacity = 'lots'"),
    (["--interval=-1ms"], "--interval: expected e.g. 3ms"),
    (["--k-p=-1"], "--k-p: expected e.g. 2Mbps"),
    ([], "nothing to set"),
])
def test_invalid_values_exit_2_before_connecting(options: list[str], message: str, capsys) -> None:
    assert main(["params", "set", *NOWHERE, "--port", "1", *options]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1  # one line


@pytest.mark.parametrize("port", ["511", "-1", "x1"])
def test_unknown_ports_are_refused(port: str, capsys) -> None:
    assert main(["params", "set", *NOWHERE, f"--port={port}", "--o-max", "50%"]) == 2
    assert "--port" in capsys.readouterr().err


def test_unreachable_switch_is_one_line_exit_1(capsys) -> None:
    assert main(["params", "show", *NOWHERE]) == 1
    err = capsys.readouterr().err
    assert "127.0.0.1:9" in err and err.count("\n") == 1


def test_switch_encoding_round_trips() -> None:
    p = LawParams(o_min=0.123456, o_max=0.75, w_max=8e6, w_min=5e5, r_max=1.8e6, r_floor=4e4, k_p=2.4e7)
    assert law_from_metadata(law_to_action(p)) == p
