"""``hbh p4 ...``: check a P4_16 program, write its P4Info.

Errors in the program print as ``file:line:col: error: message`` with the source line and
a caret, and the command exits 1; bad usage exits 2 (argparse). Internal failures print
one line (exit 3) unless ``P4SWITCH_TRACEBACK=1``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERRORS, EXIT_INTERNAL = 0, 1, 3


def register(subparsers: Any) -> None:
    """Add the ``p4`` command and its sub-commands to the ``hbh`` dispatcher."""
    p4 = subparsers.add_parser("p4", help="P4_16 front end: check programs, write P4Info")
    sub = p4.add_subparsers(dest="p4_command", metavar="SUBCOMMAND")
    sub.required = True

    check = sub.add_parser("check", help="preprocess, parse and type-check a P4_16 program")
    _add_source_args(check)
    check.set_defaults(func=run_check)

    info = sub.add_parser("info", help="write the P4Info of a P4_16 program")
    _add_source_args(info)
    info.add_argument("-o", "--output", required=True, help="P4Info output file")
    info.add_argument("--format", choices=("text", "binary"), default="text",
                      help="protobuf text format (default) or binary wire format")
    info.set_defaults(func=run_info)


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="P4_16 source file")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the #include search path (before p4src/include)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro")


def _print_diagnostics(err: Any) -> None:
    from p4switch.frontend.errors import format_error

    print(format_error(err), file=sys.stderr)


def _guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn P4Error into printed diagnostics and other failures into one line."""

    def run(args: argparse.Namespace) -> int:
        from p4switch.frontend.errors import P4Error

        try:
            return fn(args)
        except P4Error as err:
            _print_diagnostics(err)
            return EXIT_ERRORS
        except Exception as exc:  # a bug in a pass must not look like a crash of the program
            if os.environ.get("P4SWITCH_TRACEBACK") == "1":
                raise
            print(f"internal error in the P4 front end: {type(exc).__name__}: {exc} "
                  "(set P4SWITCH_TRACEBACK=1 for details)", file=sys.stderr)
            return EXIT_INTERNAL

    return run


def _front_end(args: argparse.Namespace) -> Any:
    """Preprocess, parse and check; returns the ``CheckedProgram`` (warnings printed)."""
    from p4switch.frontend.check import check_program
    from p4switch.frontend.parser import parse_preprocessed
    from p4switch.frontend.preprocess import preprocess_file

    pp = preprocess_file(args.file, args.include_dirs, args.defines)
    for w in pp.warnings:
        _print_diagnostics(w)
    checked = check_program(parse_preprocessed(pp))
    for w in checked.warnings:
        _print_diagnostics(w)
    return checked


@_guarded
def run_check(args: argparse.Namespace) -> int:
    _front_end(args)
    print(f"{args.file}: ok")
    return EXIT_OK


@_guarded
def run_info(args: argparse.Namespace) -> int:
    from p4switch.frontend.p4info import build_p4info

    p4info = build_p4info(_front_end(args))
    data = _serialize(p4info, args.format)
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERRORS
    return EXIT_OK


def _serialize(message: Any, fmt: str) -> bytes:
    if fmt == "binary":
        return message.SerializeToString()
    from google.protobuf import text_format

    return text_format.MessageToString(message).encode()
