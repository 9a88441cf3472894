"""A value that starts with a dash (``--duration -5s``, ``--w-min -1Mbps``) reaches the command, which
refuses it with the same one line as ``--duration=-5s``: argparse alone took ``-5s`` for an option."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hbh.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
TOPO = str(ROOT / "topo" / "paper-1router.yaml")


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every sub-command's parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from parsers(sub)


@functools.cache
def every_parser() -> list[argparse.ArgumentParser]:
    from p4switch.cli import build_parser as p4switch_parser
    from topo.experiments.fabric import _parser as fabric_parser

    return [*parsers(build_parser()), p4switch_parser(), fabric_parser()]


@given(number=st.from_regex(r"\.?[0-9][0-9.]*", fullmatch=True),
       unit=st.sampled_from(["", "s", "ms", "us", "Mbps", "kbps", "%", "C", "B", "e3"]))
def test_every_commands_parser_reads_a_dashed_quantity_as_a_value(number: str, unit: str) -> None:
    every = every_parser()
    assert len(every) > 10  # hbh and its sub-commands (run, sweep, compare, params set/show, ...)
    for parser in every:
        assert parser._parse_optional(f"-{number}{unit}") is None, parser.prog


@pytest.mark.parametrize(("command", "option", "value"), [
    (["run", TOPO], "--duration", "-5s"),
    (["sweep", TOPO, "--serial", "--out", "{tmp}/s"], "--duration", "-5s"),
    (["compare", TOPO, "--serial", "--out", "{tmp}/c"], "--duration", "-5s"),
    (["demo", "--out", "{tmp}/d"], "--duration", "-5s"),
    (["params", "set", "--grpc-addr", "127.0.0.1:1", "--port", "1"], "--w-min", "-1Mbps"),
    (["params", "set", "--grpc-addr", "127.0.0.1:1", "--port", "1"], "--o-max", "-50%"),
    (["params", "set", "--grpc-addr", "127.0.0.1:1", "--port", "1"], "--interval", "-10ms"),
    (["params", "set", "--grpc-addr", "127.0.0.1:1", "--port", "1"], "--k-p", "-2C"),
    (["params", "set", "--grpc-addr", "127.0.0.1:1", "--o-max", "0.5"], "--port", "-1"),
])
def test_a_dashed_value_gets_the_one_line_the_joined_form_gets(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               command: list[str], option: str, value: str) -> None:
    argv = [w.format(tmp=tmp_path) for w in command]
    assert main([*argv, f"{option}={value}"]) == 2
    joined = capsys.readouterr()
    assert main([*argv, option, value]) == 2
    spaced = capsys.readouterr()
    assert spaced.err == joined.err and spaced.out == joined.out == ""
    assert len(spaced.err.strip().splitlines()) == 1 and value in spaced.err and "usage:" not in spaced.err
    assert not list(tmp_path.rglob("runs/*.json"))  # nothing ran


def test_p4switch_gives_a_dashed_delay_the_error_the_joined_form_gets(capsys: pytest.CaptureFixture[str]) -> None:
    from p4switch.cli import build_parser as p4switch_parser

    errors = []
    for argv in (["--port-delay=-5ms", "x.p4"], ["--port-delay", "-5ms", "x.p4"]):
        with pytest.raises(SystemExit) as exit_:
            p4switch_parser().parse_args(argv)
        assert exit_.value.code == 2
        errors.append(capsys.readouterr().err.strip().splitlines()[-1])
    assert errors[0] == errors[1] and "the delay must be >= 0" in errors[1]


@pytest.mark.parametrize("command", [["run", TOPO, "--no-analysis"], ["sweep", TOPO, "--serial", "--out", "{tmp}/s"],
                                     ["compare", TOPO, "--serial", "--out", "{tmp}/c"], ["demo", "--out", "{tmp}/d"]])
@pytest.mark.parametrize("value", ["1e30s", "5e9s", "1e19ns"])
def test_a_duration_beyond_the_clock_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 command: list[str], value: str) -> None:
    """``hbh run --duration 1e30s`` ran without end: a duration past 2^62 ns is refused at once."""
    assert main([*(w.format(tmp=tmp_path) for w in command), "--duration", value]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "too long" in err and "usage:" not in err
    assert not list(tmp_path.rglob("runs/*.json"))
