"""docs/howto/sweeps.md says what the code does: its example error and its table of targets and keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from topo.file.settings import TARGET_KEYS, SweepError
from topo.sweep.run import plan_sweep

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "howto" / "sweeps.md").read_text(encoding="utf-8")


def test_the_documented_error_is_the_real_one():
    [line] = [ln for ln in DOC.splitlines() if ln.startswith("hbh sweep: point ")]
    setting = re.search(r"--set (\S+):", line)[1]
    with pytest.raises(SweepError) as info:
        plan_sweep(ROOT / "topo" / "paper-1router.yaml", [setting], None, "1", "2s")
    assert line == f"hbh sweep: {info.value}"


def test_the_documented_keys_are_the_grammars():
    section = DOC.split("## The `--set` grammar", 1)[1].split("**How a point", 1)[0]
    rows = re.findall(r"^\| `(\w+)[^|]*` \| `([a-z_ ]+)` \|", section, re.M)
    documented = {target: tuple(keys.split()) for target, keys in rows}
    assert documented == TARGET_KEYS
