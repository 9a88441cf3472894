"""`hbh` dispatcher.

Each layer owns its sub-commands in a module exposing ``register(subparsers)``; the
registered handler is stored as ``func`` and returns an exit code. Keeping the
commands beside the code they drive keeps this file from growing with the project.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from runtime.arguments import ValueParser

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


def build_parser() -> argparse.ArgumentParser:
    parser = ValueParser(
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
