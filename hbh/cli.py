"""`hbh` dispatcher.

Each layer owns its sub-commands in a module exposing ``register(subparsers)``; the
registered handler is stored as ``func`` and returns an exit code. Keeping the
commands beside the code they drive keeps this file from growing with the project.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

# (module, help) for every layer that contributes commands; imported lazily so that
# `hbh --help` stays fast and a broken optional layer cannot hide the others.
COMMAND_MODULES: tuple[str, ...] = (
    "p4switch.frontend.cli",
    "topo.runner",
    "topo.sweep.cli",
    "topo.compare",
    "topo.live",  # also `hbh params` (controlplane.params_cli), told how to find a run's switches
    "hbh.demo",
)


class HbhParser(argparse.ArgumentParser):
    """An ArgumentParser that reads ``-5s``, ``-1Mbps``, ``-50%`` as an option's value, not an option.

    Why: argparse takes only plain negative numbers (``-5``, ``-.5``) for values, so ``--duration -5s``
    stopped at "expected one argument" and a usage dump, where ``--duration=-5s`` reaches the command's
    own one-line error. No hbh option starts with a dash and a digit, so nothing else changes; every
    sub-command's parser is made by this class (argparse gives sub-parsers their parent's class)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._negative_number_matcher = re.compile(r"^-\.?\d")


def build_parser() -> argparse.ArgumentParser:
    parser = HbhParser(
        prog="hbh",
        description="Hop-by-hop ALINEA congestion control on P4 switches vs end-to-end CVIHIS.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
