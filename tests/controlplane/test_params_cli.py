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
    (["--w-min", "0.25C"], "--w-min = 0.25C: a multiple of the link's capacity needs the link's rate"),
    (["--w-min", "0.25C", "--link-rate", "fast"], "--link-rate: expected e.g. 2Mbps"),
    (["--w-min", "0.25C", "--link-rate", "0"], "--link-rate = '0': must be > 0"),
    (["--w-min", "0.5C", "--w-max", "0.25C", "--link-rate", "2Mbps"], "--w-min = 1e+06 is above --w-max = 500000"),
    (["--w-min", "0.25Q"], "unknown rate unit 'Q'"),
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


def test_values_relative_to_the_link_rate_resolve_before_connecting() -> None:
    import argparse

    from controlplane.params_cli import parse_changes

    args = argparse.Namespace(port="2", link_rate="20Mbps", capacity=None, interval=None, run=None, o_min=None,
                              o_max="70%", w_max="4C", w_min="0.25C", k_p="12C", r_max=None, r_floor="40kbps")
    port, law, model = parse_changes(args)
    assert (port, model) == (2, {})
    assert law == {"o_max": 0.7, "w_max": 8e7, "w_min": 5e6, "k_p": 2.4e8, "r_floor": 4e4}


def test_origins_say_file_derived_default_or_live() -> None:
    from controlplane.params_cli import format_origins
    from controlplane.params_io import PortState

    law = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=2.4e7)
    record = {"toward": "R2", "link_rate_bps": 2e6, "law": {**law.__dict__, "w_min": 123456.4},
              "origins": {"o_min": "file", "o_max": "file", "w_max": "derived", "w_min": "derived", "k_p": "default",
                          "r_max": "derived", "r_floor": "file"}}
    held = PortState(2, law=LawParams(**{**law.__dict__, "w_min": 123456.0}))
    text = format_origins({2: held, 1: PortState(1)}, {2: record})
    row = next(line for line in text.splitlines() if line.strip().startswith("2 "))
    assert "toward R2" in row and "w_max derived" in row and "k_p default" in row and "w_min derived" in row
    changed = PortState(2, law=LawParams(**{**law.__dict__, "w_min": 123456.0, "o_max": 0.6}))
    assert "o_max live" in format_origins({2: changed}, {2: record})
